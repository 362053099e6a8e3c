//! The rename matcher against hand-labelled real releases
//! (tests/fixtures/renames/labels.json): every true rename is found, except
//! the recorded misses, and nothing else is paired.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use toolpin_manifest::{Catalog, ServerPin, Transform};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/renames")
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A capture as a one-server catalog, normalized as `toolpin lock` would.
fn catalog(path: &Path) -> Catalog {
    let tools = read(path)["tools"].as_array().cloned().unwrap_or_default();
    let tools = Transform::default().apply(tools).expect("tools normalize");
    let pin = ServerPin::new("server", json!({}), "mcp", tools).expect("pin");
    Catalog::new("default", BTreeMap::from([("server".to_string(), pin)])).expect("catalog")
}

type Pairs = BTreeSet<(String, String)>;

fn pairs(list: &Value) -> Pairs {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_string(),
                p[1].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The (old, new) pairs the engine reports as tool-renamed.
fn found(before: &Catalog, after: &Catalog) -> Pairs {
    let comparison = toolpin_drift::compare(before, after);
    comparison
        .findings
        .iter()
        .filter(|f| f.rule == "tool-renamed")
        .map(|f| {
            let name = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).unwrap().to_string();
            (name(&f.before), name(&f.after))
        })
        .collect()
}

#[test]
fn labelled_releases_pair_exactly_the_true_renames() {
    let labels = read(&fixtures().join("labels.json"));
    let (mut expected_total, mut missed_total, mut false_total) = (0, 0, 0);
    let mut failures = Vec::new();
    for case in labels["pairs"].as_array().unwrap() {
        let (b, a) = (
            case["before"].as_str().unwrap(),
            case["after"].as_str().unwrap(),
        );
        let before = catalog(&fixtures().join(b));
        let after = catalog(&fixtures().join(a));
        let renames = pairs(&case["renames"]);
        let missed = pairs(&case["missed"]);
        assert!(
            renames.is_disjoint(&missed),
            "{b}: a pair both found and missed"
        );
        let got = found(&before, &after);
        expected_total += renames.len();
        missed_total += missed.len();
        false_total += got.difference(&renames).count();
        if got != renames {
            failures.push(format!(
                "{b} -> {a}\n  expected {renames:?}\n  found    {got:?}"
            ));
        }
    }
    eprintln!(
        "renames: {} of {} true renames found ({} recorded misses), {} false",
        expected_total,
        expected_total + missed_total,
        missed_total,
        false_total
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
