//! CONTRIBUTING.md stays true to the workspace: its crate table (under
//! "Workspace layout") names every workspace crate and nothing else, as
//! `cargo metadata` sees them; its dependency graph draws exactly the edges
//! between workspace crates that the manifests declare; and every `crates/…`
//! path it names exists. All are read generically, so adding a crate means
//! adding its row and its line in the graph.

use std::collections::{BTreeMap, BTreeSet};
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

fn metadata() -> Value {
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
    serde_json::from_slice(&out.stdout).expect("metadata JSON")
}

/// Workspace packages: directory relative to the root → package name.
fn workspace_packages() -> BTreeMap<String, String> {
    let meta = metadata();
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

/// The graph under "Dependencies point one way only:": each line names a
/// crate and, after `→`, the workspace crates it depends on (short names,
/// without `toolpin-`); "depends on no toolpin crate" is no edge.
fn drawn_edges(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let block = doc
        .split("Dependencies point one way only:\n\n```\n")
        .nth(1)
        .expect("a graph block after \"Dependencies point one way only:\"");
    let block = block.split("\n```").next().unwrap_or(block);
    let mut edges = BTreeMap::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let name_start = line
            .find("toolpin")
            .unwrap_or_else(|| panic!("a graph line names a crate: {line}"));
        let rest = &line[name_start..];
        let name = rest.split_whitespace().next().unwrap_or(rest);
        let name = if rest.starts_with("toolpin (CLI)") {
            "toolpin"
        } else {
            name
        };
        let deps: BTreeSet<String> = match rest.split_once('→') {
            Some((_, list)) => list
                .split(',')
                .map(|d| format!("toolpin-{}", d.trim()))
                .collect(),
            None => BTreeSet::new(),
        };
        assert!(
            edges.insert(name.to_string(), deps).is_none(),
            "{name} is drawn twice in the graph"
        );
    }
    edges
}

/// Normal (not dev, not build) dependencies between workspace crates.
fn declared_edges() -> BTreeMap<String, BTreeSet<String>> {
    let meta = metadata();
    let members: Vec<&str> = meta["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let packages: Vec<&Value> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| members.contains(&p["id"].as_str().unwrap_or_default()))
        .collect();
    let names: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| d["name"].as_str())
                .filter(|d| names.contains(d))
                .map(str::to_string)
                .collect();
            (p["name"].as_str().expect("name").to_string(), deps)
        })
        .collect()
}

#[test]
fn dependency_graph_matches_the_manifests() {
    let drawn = drawn_edges(&contributing());
    let declared = declared_edges();
    let mut wrong = Vec::new();
    for (name, deps) in &declared {
        match drawn.get(name) {
            None => wrong.push(format!("{name} is not drawn")),
            Some(drawn_deps) if drawn_deps != deps => wrong.push(format!(
                "{name}: drawn → {drawn_deps:?}, declared → {deps:?}"
            )),
            Some(_) => {}
        }
    }
    for name in drawn.keys().filter(|n| !declared.contains_key(*n)) {
        wrong.push(format!("{name} is drawn but is no workspace crate"));
    }
    assert!(
        wrong.is_empty(),
        "CONTRIBUTING.md's dependency graph and the Cargo.toml files differ:\n{}",
        wrong.join("\n")
    );
}
