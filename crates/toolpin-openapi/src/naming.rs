//! Tool names: from `operationId` (or method and path), sanitized to
//! `[A-Za-z0-9_-]`, shortened to [`MAX_NAME_LEN`] with a hash suffix, and
//! made unique in a fixed order. docs/openapi.md states each rule.

use std::collections::{HashMap, HashSet};

use toolpin_manifest::Fingerprint;

/// The longest tool name OpenAI accepts, and so the longest name produced.
pub const MAX_NAME_LEN: usize = 64;

/// Hex digits of the hash that ends a shortened name.
const HASH_LEN: usize = 8;

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Replaces each run of characters outside `[A-Za-z0-9_-]` with one `_`.
pub fn sanitize(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut in_run = false;
    for c in raw.chars() {
        if allowed(c) {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('_');
            in_run = true;
        }
    }
    out
}

/// The name of an operation without an `operationId`: the method in lower
/// case, `_`, and the sanitized path without leading or trailing `_`
/// (`GET /users/{id}` → `get_users_id`).
pub fn generated(method: &str, path: &str) -> String {
    let sanitized = sanitize(path);
    let path = sanitized.trim_matches('_');
    let method = method.to_ascii_lowercase();
    if path.is_empty() {
        method
    } else {
        format!("{method}_{path}")
    }
}

/// A name longer than [`MAX_NAME_LEN`] keeps its first 55 characters,
/// then `_` and the first 8 hex digits of the SHA-256 of the whole name:
/// two long names that share their first 55 characters still differ.
/// `name` must already be sanitized (ASCII).
pub fn shorten(name: String) -> String {
    if name.len() <= MAX_NAME_LEN {
        return name;
    }
    let hash = Fingerprint::of_bytes(name.as_bytes()).to_hex();
    let keep = MAX_NAME_LEN - HASH_LEN - 1;
    // `name` is ASCII (sanitized) and the hash hex: any index is a boundary.
    format!(
        "{}_{}",
        name.get(..keep).unwrap_or(&name),
        hash.get(..HASH_LEN).unwrap_or(&hash)
    )
}

/// The base name of an operation: its sanitized `operationId`, or the
/// generated one, shortened.
pub fn base_name(operation_id: Option<&str>, method: &str, path: &str) -> String {
    let raw = match operation_id {
        Some(id) if !id.is_empty() => sanitize(id),
        _ => generated(method, path),
    };
    shorten(raw)
}

/// Hands out unique names in the order asked: the first operation keeps
/// its name, later ones get `_2`, `_3`, … (shortening the base so the
/// result still fits [`MAX_NAME_LEN`]).
#[derive(Default)]
pub struct Namer {
    used: HashSet<String>,
    /// The next suffix to try for a base, so that many operations sharing
    /// one name are numbered in linear time.
    next: HashMap<String, u64>,
}

impl Namer {
    /// The unique name for `base`, and whether it had to change.
    pub fn claim(&mut self, base: &str) -> (String, bool) {
        if self.used.insert(base.to_string()) {
            return (base.to_string(), false);
        }
        let mut n = self.next.get(base).copied().unwrap_or(2);
        loop {
            let suffix = format!("_{n}");
            let keep = base.len().min(MAX_NAME_LEN - suffix.len());
            // `base` is ASCII (sanitized), so any byte index is a boundary.
            let candidate = format!("{}{suffix}", base.get(..keep).unwrap_or(base));
            n += 1;
            if self.used.insert(candidate.clone()) {
                self.next.insert(base.to_string(), n);
                return (candidate, true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_runs_to_one_underscore() {
        assert_eq!(sanitize("repos/get-content"), "repos_get-content");
        assert_eq!(sanitize("a//b..c"), "a_b_c");
        assert_eq!(sanitize("héllo wörld"), "h_llo_w_rld");
        assert_eq!(sanitize("ok_name-1"), "ok_name-1");
        assert_eq!(sanitize("/"), "_");
    }

    #[test]
    fn generated_names_from_method_and_path() {
        assert_eq!(generated("GET", "/users/{id}"), "get_users_id");
        assert_eq!(generated("post", "/"), "post");
        assert_eq!(
            generated("delete", "/repos/{owner}/{repo}/check-runs"),
            "delete_repos_owner_repo_check-runs"
        );
    }

    #[test]
    fn long_names_are_shortened_with_a_hash_that_tells_them_apart() {
        let a = "x".repeat(70);
        let b = format!("{}y", "x".repeat(69));
        let sa = shorten(a.clone());
        let sb = shorten(b.clone());
        assert_eq!(sa.len(), MAX_NAME_LEN);
        assert_eq!(sb.len(), MAX_NAME_LEN);
        assert_ne!(sa, sb);
        assert!(sa.starts_with(&"x".repeat(55)));
        assert_eq!(&sa[55..56], "_");
        // Deterministic: the same input gives the same name.
        assert_eq!(shorten(a), sa);
        assert_eq!(shorten("short".into()), "short");
        assert_eq!(shorten("z".repeat(64)), "z".repeat(64));
    }

    #[test]
    fn duplicates_get_numbered_suffixes_within_the_limit() {
        let mut namer = Namer::default();
        assert_eq!(namer.claim("a"), ("a".into(), false));
        assert_eq!(namer.claim("a"), ("a_2".into(), true));
        assert_eq!(namer.claim("a"), ("a_3".into(), true));
        // "a_2" taken as a base now collides with the renamed one.
        assert_eq!(namer.claim("a_2"), ("a_2_2".into(), true));
        let long = "L".repeat(64);
        assert_eq!(namer.claim(&long).0, long);
        let (second, renamed) = namer.claim(&long);
        assert!(renamed);
        assert_eq!(second, format!("{}_2", "L".repeat(62)));
    }
}
