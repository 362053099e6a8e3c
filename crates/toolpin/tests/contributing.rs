//! CONTRIBUTING.md stays true to the workspace: its crate table (under
//! "Workspace layout") names every workspace crate and nothing else, as
//! `cargo metadata` sees them, and every `crates/…` path it names exists.
//! Both are read generically, so adding a crate means adding its row.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

fn contributing() -> String {
    std::fs::read_to_string(root().join("CONTRIBUTING.md")).expect("CONTRIBUTING.md")
}

/// The first column of the crate table: `crates/NAME` → line.
fn table_rows(doc: &str) -> BTreeMap<String, String> {
    let section = doc
        .split("\n## Workspace layout\n")
        .nth(1)
        .expect("a \"## Workspace layout\" section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut rows = BTreeMap::new();
    let mut lines = section.lines().skip_while(|l| !l.starts_with("| crate |"));
    let header = lines.next().expect("a table headed | crate | …");
    assert!(header.starts_with("| crate |"), "{header}");
    for line in lines.skip(1).take_while(|l| l.starts_with('|')) {
        let cell = line.split('|').nth(1).expect("a first cell").trim();
        let path = cell
            .strip_prefix('`')
            .and_then(|c| c.strip_suffix('`'))
            .unwrap_or_else(|| panic!("the first cell is a `crates/…` path: {line}"));
        assert!(
            rows.insert(path.to_string(), line.to_string()).is_none(),
            "{path} has two rows"
        );
    }
    assert!(!rows.is_empty(), "the crate table has no rows");
    rows
}

/// Workspace packages: directory relative to the root → package name.
fn workspace_packages() -> BTreeMap<String, String> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let root = PathBuf::from(meta["workspace_root"].as_str().expect("workspace_root"));
    let members: Vec<&str> = meta["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| members.contains(&p["id"].as_str().unwrap_or_default()))
        .map(|p| {
            let manifest = Path::new(p["manifest_path"].as_str().expect("manifest_path"));
            let dir = manifest.parent().expect("crate directory");
            let rel = dir.strip_prefix(&root).unwrap_or(dir);
            let rel = rel.to_string_lossy().replace('\\', "/");
            (rel, p["name"].as_str().expect("name").to_string())
        })
        .collect()
}

#[test]
fn crate_table_matches_cargo_metadata() {
    let rows = table_rows(&contributing());
    let packages = workspace_packages();
    let in_table: Vec<&String> = rows.keys().collect();
    let in_workspace: Vec<&String> = packages.keys().collect();
    assert_eq!(
        in_table, in_workspace,
        "CONTRIBUTING.md's crate table (left) and the workspace crates from \
         `cargo metadata` (right) differ: add or remove rows"
    );
    for (dir, name) in &packages {
        let base = dir.rsplit('/').next().unwrap_or(dir);
        assert_eq!(
            base, name,
            "crate {name} lives in {dir}; the table names crates by directory"
        );
    }
}

#[test]
fn named_paths_exist() {
    let doc = contributing();
    let root = root();
    let mut missing = Vec::new();
    for span in doc.split('`').skip(1).step_by(2) {
        // Placeholders (`NAME.rs`, `<case>/`) stand for files yet to write.
        let placeholder = span.contains('<') || span.chars().any(|c| c.is_ascii_uppercase());
        if span.starts_with("crates/") && !placeholder && !span.contains(' ') {
            let path = span.split("::").next().unwrap_or(span);
            if !root.join(path).exists() {
                missing.push(span.to_string());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "CONTRIBUTING.md names paths that do not exist: {missing:?}"
    );
}
