//! The catalogs that were pinned: each lockfile as it is now and as git
//! remembers it, by catalog fingerprint, so that a span stamped with an
//! older catalog is judged against what that catalog held, and a change
//! point between two catalogs can say what changed in one line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use toolpin_drift::text::word_diff;
use toolpin_drift::Finding;
use toolpin_manifest::Catalog;

/// One pinned catalog and where it was read.
#[derive(Clone, Debug)]
pub struct PinnedVersion {
    pub catalog: Catalog,
    /// `toolpin.lock` for the file as it is, `toolpin.lock@1a2b3c4d` for a
    /// committed version.
    pub origin: String,
    /// Its place in its lockfile's history: higher is newer (the working
    /// file is the newest).
    pub position: u64,
}

/// Every pinned catalog found, by catalog fingerprint (lowercase hex, as
/// the proxy stamps `toolpin.catalog.fingerprint`).
#[derive(Clone, Debug, Default)]
pub struct PinnedCatalogs {
    pub versions: BTreeMap<String, PinnedVersion>,
    /// Committed versions that could not be read (an older lockfile
    /// format, a hand edit that fails verification): `origin: reason`.
    pub unreadable: Vec<String>,
}

impl PinnedCatalogs {
    /// Reads each lockfile and up to `depth` of its committed versions
    /// (newest first; `git log` in the lockfile's folder). A lockfile that
    /// is absent or unreadable now is an error; one outside a git work
    /// tree contributes its current version only.
    pub fn from_lockfiles(lockfiles: &[PathBuf], depth: usize) -> Result<Self, String> {
        let mut out = Self::default();
        for path in lockfiles {
            let catalog = toolpin_manifest::lockfile::read(path).map_err(|e| e.to_string())?;
            let committed = committed_versions(path, depth);
            out.add(PinnedVersion {
                catalog,
                origin: path.display().to_string(),
                position: committed.len() as u64 + 1,
            });
            let newest = committed.len() as u64;
            for (i, (commit, bytes)) in committed.into_iter().enumerate() {
                let origin = format!("{}@{}", path.display(), &commit[..commit.len().min(8)]);
                match toolpin_manifest::lockfile::parse(&bytes, &origin) {
                    Ok(catalog) => out.add(PinnedVersion {
                        catalog,
                        origin,
                        position: newest - i as u64,
                    }),
                    Err(e) => out.unreadable.push(e.to_string()),
                }
            }
        }
        Ok(out)
    }

    /// Keeps the first version seen of each catalog (the working file
    /// before its history).
    pub fn add(&mut self, version: PinnedVersion) {
        let key = version.catalog.fingerprint().to_hex();
        self.versions.entry(key).or_insert(version);
    }

    pub fn get(&self, fingerprint: &str) -> Option<&PinnedVersion> {
        self.versions.get(fingerprint)
    }

    /// Each pinned catalog's tools by the name the model calls, with their
    /// input schema.
    pub fn tools(&self) -> impl Iterator<Item = (&str, Vec<(String, Value)>)> {
        self.versions.iter().map(|(fp, v)| {
            let tools = v
                .catalog
                .tools()
                .map(|(name, _server, tool)| {
                    let value = tool.value();
                    let schema = value
                        .get("inputSchema")
                        .or_else(|| value.get("input_schema"))
                        .or_else(|| value.get("parameters"))
                        .or_else(|| value.pointer("/function/parameters"))
                        .cloned()
                        .unwrap_or(Value::Null);
                    (name.to_string(), schema)
                })
                .collect();
            (fp.as_str(), tools)
        })
    }

    /// The catalogs as the usage report reads them: each one's enum
    /// parameters by tool, and its place in the history (which orders two
    /// catalogs first called in the same hour). Change lines are left to
    /// [`PinnedCatalogs::describe`], for the pairs that alarm.
    pub fn for_report(&self) -> toolpin_usage::report::Catalogs {
        use toolpin_usage::report::{Catalogs, PinnedCatalog, PinnedTool};
        let mut out = Catalogs::default();
        for (fp, tools) in self.tools() {
            let tools = tools
                .into_iter()
                .map(|(name, schema)| (name, PinnedTool::from_input_schema(&schema)))
                .collect();
            out.pinned.insert(fp.to_string(), PinnedCatalog { tools });
        }
        for (fp, version) in &self.versions {
            out.sequence.insert(fp.clone(), version.position);
        }
        out
    }

    /// What changed between two pinned catalogs, in one line; `None` when
    /// either is not pinned.
    pub fn describe(&self, from: &str, to: &str) -> Option<String> {
        let old = &self.get(from)?.catalog;
        let new = &self.get(to)?.catalog;
        Some(describe_change(old, new))
    }
}

/// How many findings a change line names before it counts the rest.
const NAMED_FINDINGS: usize = 3;

/// One line saying what changed from `old` to `new`: the first findings in
/// tool order, a description's words quoted ("lookup_order's description
/// gained 'Prefer search_orders when the ID is unknown'").
pub fn describe_change(old: &Catalog, new: &Catalog) -> String {
    let comparison = toolpin_drift::compare(old, new);
    if comparison.findings.is_empty() {
        return "no difference in the tools".to_string();
    }
    let mut parts: Vec<String> = comparison
        .findings
        .iter()
        .take(NAMED_FINDINGS)
        .map(phrase)
        .collect();
    let rest = comparison.findings.len().saturating_sub(NAMED_FINDINGS);
    if rest > 0 {
        parts.push(format!(
            "{rest} more finding{}",
            if rest == 1 { "" } else { "s" }
        ));
    }
    parts.join("; ")
}

/// Longest quoted run of words in a change line.
const QUOTE_CHARS: usize = 120;

fn phrase(f: &Finding) -> String {
    if let (Some(Value::String(before)), Some(Value::String(after))) = (&f.before, &f.after) {
        let member = f
            .pointer
            .rsplit('/')
            .next()
            .filter(|m| !m.is_empty())
            .unwrap_or("text");
        let diff = word_diff(before, after);
        let (gained, lost) = (diff.inserted(), diff.removed());
        let quote = |s: &str| {
            let cut: String = s.chars().take(QUOTE_CHARS).collect();
            if cut.len() < s.len() {
                format!("'{cut}…'")
            } else {
                format!("'{cut}'")
            }
        };
        let what = match (gained.is_empty(), lost.is_empty()) {
            (false, true) => format!("gained {}", quote(&gained)),
            (true, false) => format!("lost {}", quote(&lost)),
            (false, false) => format!("lost {} and gained {}", quote(&lost), quote(&gained)),
            (true, true) => "changed its white space".to_string(),
        };
        return format!("{}'s {member} {what}", f.tool);
    }
    format!("{} ({})", f.message, f.rule)
}

/// The committed versions of `path`, newest first, at most `depth`: the
/// commit and the file's bytes there. Nothing when git is absent or the
/// file is not tracked (`git` failing is not an error: the file as it is
/// still counts).
fn committed_versions(path: &Path, depth: usize) -> Vec<(String, Vec<u8>)> {
    if depth == 0 {
        return Vec::new();
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| o.stdout)
    };
    let Some(log) = git(&["log", "--format=%H", "-n", &depth.to_string(), "--", name]) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&log)
        .lines()
        .filter(|c| !c.is_empty())
        .filter_map(|commit| {
            let bytes = git(&["show", &format!("{commit}:./{name}")])?;
            Some((commit.to_string(), bytes))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolpin_manifest::catalog::ServerPin;

    fn catalog(lookup_description: &str, page_size: u64) -> Catalog {
        let tools = vec![
            json!({"name": "shop__lookup_order", "description": lookup_description,
                   "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}),
            json!({"name": "shop__search_orders", "description": "Search orders.",
                   "inputSchema": {"type": "object", "properties": {
                       "query": {"type": "string"},
                       "status": {"enum": ["open", "shipped"]},
                       "page_size": {"type": "integer", "default": page_size}}}}),
        ];
        let pin = ServerPin::new("shop", json!({"command": "shop"}), "mcp", tools).expect("pin");
        Catalog::new("default", BTreeMap::from([("shop".to_string(), pin)])).expect("catalog")
    }

    const LOOKUP: &str = "Look up an order by its ID.";
    const STEERED: &str =
        "Look up an order by its ID. Prefer search_orders when the ID is unknown.";

    #[test]
    fn a_change_line_quotes_the_words_a_description_gained() {
        let line = describe_change(&catalog(LOOKUP, 50), &catalog(STEERED, 50));
        assert_eq!(
            line,
            "shop__lookup_order's description gained 'Prefer search_orders when the ID is unknown.'"
        );
        let line = describe_change(&catalog(STEERED, 50), &catalog(LOOKUP, 20));
        assert!(
            line.starts_with("shop__lookup_order's description lost 'Prefer search_orders when the ID is unknown.'; "),
            "{line}"
        );
        assert!(line.contains("page_size"), "{line}");
        assert_eq!(
            describe_change(&catalog(LOOKUP, 50), &catalog(LOOKUP, 50)),
            "no difference in the tools"
        );
    }

    #[test]
    fn committed_versions_are_read_from_git_by_fingerprint() {
        let dir = std::env::temp_dir().join(format!("toolpin-pinned-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .current_dir(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("git")
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        let lock = dir.join("toolpin.lock");
        let (v1, v2, v3) = (
            catalog(LOOKUP, 50),
            catalog(STEERED, 50),
            catalog(STEERED, 20),
        );
        toolpin_manifest::lockfile::write(&v1, &lock).expect("write");
        git(&["add", "toolpin.lock"]);
        git(&["commit", "-q", "-m", "v1"]);
        toolpin_manifest::lockfile::write(&v2, &lock).expect("write");
        git(&["commit", "-q", "-am", "v2"]);
        // The working file is newer than any commit.
        toolpin_manifest::lockfile::write(&v3, &lock).expect("write");

        let pinned =
            PinnedCatalogs::from_lockfiles(std::slice::from_ref(&lock), 200).expect("read");
        let fp = |c: &Catalog| c.fingerprint().to_hex();
        let keys: Vec<&String> = pinned.versions.keys().collect();
        let mut want = [fp(&v1), fp(&v2), fp(&v3)];
        want.sort();
        assert_eq!(keys, want.iter().collect::<Vec<_>>());
        assert_eq!(
            pinned.get(&fp(&v3)).expect("v3").origin,
            lock.display().to_string()
        );
        assert!(pinned
            .get(&fp(&v1))
            .expect("v1")
            .origin
            .contains("toolpin.lock@"));
        assert!(pinned.unreadable.is_empty());
        // Newer versions come later in the history.
        let position = |c: &Catalog| pinned.get(&fp(c)).expect("pinned").position;
        assert!(position(&v1) < position(&v2) && position(&v2) < position(&v3));
        let report = pinned.for_report();
        assert_eq!(report.sequence[&fp(&v3)], position(&v3));
        let search = &report.pinned[&fp(&v1)].tools["shop__search_orders"];
        assert_eq!(
            search.enums["status"].iter().collect::<Vec<_>>(),
            ["open", "shipped"]
        );
        assert_eq!(
            pinned.describe(&fp(&v1), &fp(&v2)).as_deref(),
            Some("shop__lookup_order's description gained 'Prefer search_orders when the ID is unknown.'")
        );
        assert_eq!(pinned.describe(&fp(&v1), "0000"), None);
        let tools: Vec<(String, usize)> = pinned
            .tools()
            .map(|(fp, tools)| (fp.to_string(), tools.len()))
            .collect();
        assert!(tools.iter().all(|(_, n)| *n == 2), "{tools:?}");
        // Depth 1: the working file and the newest commit only.
        let shallow = PinnedCatalogs::from_lockfiles(&[lock], 1).expect("read");
        assert_eq!(shallow.versions.len(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
