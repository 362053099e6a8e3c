//! Operation pickers: which operations become tools, by `operationId`, tag
//! or path, as a connector platform's operation picker chooses them.

use serde_json::{json, Map, Value};
use toolpin_manifest::Glob;

/// A path pattern: a glob over the path template (`/repos/*/issues`),
/// optionally after an HTTP method (`GET /repos/*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathPattern {
    text: String,
    /// Upper case, when the pattern names one.
    method: Option<String>,
    glob: Glob,
}

impl PathPattern {
    pub fn parse(text: &str) -> Result<Self, String> {
        let (method, path) = match text.split_once(' ') {
            Some((m, rest)) if is_method(m) => (Some(m.to_ascii_uppercase()), rest.trim_start()),
            _ => (None, text),
        };
        if !path.starts_with('/') && !path.starts_with('*') {
            return Err(format!(
                "path pattern {text:?} must start with '/' (optionally after a method: \"GET /repos/*\")"
            ));
        }
        Ok(Self {
            text: text.to_string(),
            method,
            glob: Glob::new(path)?,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the operation `method` (any case) `path` matches.
    pub fn is_match(&self, method: &str, path: &str) -> bool {
        self.method
            .as_deref()
            .is_none_or(|m| m.eq_ignore_ascii_case(method))
            && self.glob.is_match(path)
    }
}

fn is_method(word: &str) -> bool {
    crate::METHODS.iter().any(|m| m.eq_ignore_ascii_case(word))
}

/// Include and exclude lists over operations. An operation is kept when no
/// include list is given or it matches an entry of any include list, and
/// it matches no entry of any exclude list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// Globs over `operationId` (or the generated name of an operation
    /// that has none).
    pub include_operations: Vec<Glob>,
    pub exclude_operations: Vec<Glob>,
    /// Globs over tag names; an operation matches if any of its tags does.
    pub include_tags: Vec<Glob>,
    pub exclude_tags: Vec<Glob>,
    pub include_paths: Vec<PathPattern>,
    pub exclude_paths: Vec<PathPattern>,
}

/// What the pickers look at in one operation.
pub struct Candidate<'a> {
    pub id: &'a str,
    pub tags: &'a [&'a str],
    pub method: &'a str,
    pub path: &'a str,
}

impl Selection {
    fn has_include(&self) -> bool {
        !(self.include_operations.is_empty()
            && self.include_tags.is_empty()
            && self.include_paths.is_empty())
    }

    fn matches(ops: &[Glob], tags: &[Glob], paths: &[PathPattern], c: &Candidate) -> bool {
        ops.iter().any(|g| g.is_match(c.id))
            || tags.iter().any(|g| c.tags.iter().any(|t| g.is_match(t)))
            || paths.iter().any(|p| p.is_match(c.method, c.path))
    }

    pub fn keeps(&self, c: &Candidate) -> bool {
        (!self.has_include()
            || Self::matches(
                &self.include_operations,
                &self.include_tags,
                &self.include_paths,
                c,
            ))
            && !Self::matches(
                &self.exclude_operations,
                &self.exclude_tags,
                &self.exclude_paths,
                c,
            )
    }

    /// The non-empty lists, as written, for the lockfile.
    pub fn record(&self, out: &mut Map<String, Value>) {
        let globs = |list: &[Glob]| json!(list.iter().map(Glob::as_str).collect::<Vec<_>>());
        let paths =
            |list: &[PathPattern]| json!(list.iter().map(PathPattern::as_str).collect::<Vec<_>>());
        for (key, list) in [
            ("include_operations", &self.include_operations),
            ("exclude_operations", &self.exclude_operations),
            ("include_tags", &self.include_tags),
            ("exclude_tags", &self.exclude_tags),
        ] {
            if !list.is_empty() {
                out.insert(key.into(), globs(list));
            }
        }
        for (key, list) in [
            ("include_paths", &self.include_paths),
            ("exclude_paths", &self.exclude_paths),
        ] {
            if !list.is_empty() {
                out.insert(key.into(), paths(list));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(list: &[&str]) -> Vec<Glob> {
        list.iter().map(|g| Glob::new(g).expect("glob")).collect()
    }

    fn cand<'a>(id: &'a str, tags: &'a [&'a str], method: &'a str, path: &'a str) -> Candidate<'a> {
        Candidate {
            id,
            tags,
            method,
            path,
        }
    }

    #[test]
    fn path_patterns_with_and_without_method() {
        let p = PathPattern::parse("GET /repos/*").expect("valid");
        assert!(p.is_match("get", "/repos/{owner}/{repo}"));
        assert!(!p.is_match("post", "/repos/{owner}/{repo}"));
        let p = PathPattern::parse("/users/{id}").expect("valid");
        assert!(p.is_match("delete", "/users/{id}"));
        assert!(!p.is_match("delete", "/users/{id}/keys"));
        let err = PathPattern::parse("repos/*").expect_err("no slash");
        assert!(err.contains("must start with '/'"), "{err}");
        assert!(PathPattern::parse("GET /[a").is_err());
    }

    #[test]
    fn include_lists_are_a_union_and_exclude_wins() {
        let sel = Selection {
            include_operations: globs(&["repos/get"]),
            include_tags: globs(&["issues"]),
            exclude_paths: vec![PathPattern::parse("DELETE /*").expect("valid")],
            ..Selection::default()
        };
        assert!(sel.keeps(&cand("repos/get", &[], "get", "/repos/x")));
        assert!(sel.keeps(&cand("issues/list", &["issues"], "get", "/issues")));
        assert!(!sel.keeps(&cand("issues/delete", &["issues"], "delete", "/issues/1")));
        assert!(!sel.keeps(&cand("users/get", &["users"], "get", "/users")));
        // No include list: everything not excluded.
        let sel = Selection {
            exclude_tags: globs(&["admin*"]),
            ..Selection::default()
        };
        assert!(sel.keeps(&cand("a", &["users"], "get", "/a")));
        assert!(!sel.keeps(&cand("b", &["users", "admin-tools"], "get", "/b")));
    }
}
