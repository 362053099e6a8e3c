//! Drift between published versions of real MCP servers
//! (tests/fixtures/real, provenance and hand-checked differences in its
//! README): each consecutive pair's findings are an insta snapshot, so a
//! change in how real drift is classified is a reviewed change.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use toolpin_drift::compare;
use toolpin_manifest::{Catalog, ServerPin, Transform};

fn catalog(path: &Path) -> Catalog {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value = serde_json::from_str(&text).expect("fixture JSON");
    let tools = Transform::default()
        .apply(doc["tools"].as_array().cloned().unwrap_or_default())
        .expect("fixture tools normalize");
    let pin = ServerPin::new("server", json!({}), "mcp", tools).expect("pin");
    Catalog::new("default", BTreeMap::from([("server".to_string(), pin)])).expect("catalog")
}

/// Versions of one server in release order (numeric by dotted parts).
fn versions(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("server dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    let key = |p: &PathBuf| -> Vec<u64> {
        p.file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("")
            .split('.')
            .map(|n| n.parse().unwrap_or(0))
            .collect()
    };
    files.sort_by_key(key);
    files
}

fn render(old: &Path, new: &Path) -> String {
    let c = compare(&catalog(old), &catalog(new));
    let mut out = format!(
        "{} → {}: {} added, {} removed, {} changed, {} unchanged\n",
        old.file_stem().and_then(|s| s.to_str()).unwrap_or(""),
        new.file_stem().and_then(|s| s.to_str()).unwrap_or(""),
        c.summary.tools_added,
        c.summary.tools_removed,
        c.summary.tools_changed,
        c.summary.tools_unchanged
    );
    for f in &c.findings {
        out += &format!(
            "{:<8} {} {} {}{}\n",
            f.severity.name(),
            f.rule,
            f.tool,
            f.pointer,
            if f.security { " [security]" } else { "" }
        );
    }
    out
}

#[test]
fn real_server_versions() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real");
    let mut servers: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("real fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    servers.sort();
    assert!(servers.len() >= 7, "{servers:?}");
    for server in servers {
        let name = server
            .file_name()
            .and_then(|s| s.to_str())
            .unwrap_or("")
            .to_string();
        let files = versions(&server);
        for pair in files.windows(2) {
            let (old, new) = (&pair[0], &pair[1]);
            let suffix = format!(
                "{name}-{}-{}",
                old.file_stem().and_then(|s| s.to_str()).unwrap_or(""),
                new.file_stem().and_then(|s| s.to_str()).unwrap_or("")
            );
            insta::with_settings!({snapshot_suffix => suffix, prepend_module_to_snapshot => false}, {
                insta::assert_snapshot!("real", render(old, new));
            });
        }
        // Nothing is reported between a version and itself.
        for file in &files {
            assert!(
                compare(&catalog(file), &catalog(file)).findings.is_empty(),
                "{}",
                file.display()
            );
        }
    }
}
