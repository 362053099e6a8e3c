//! Large schemas (issue 12, point 3): one tool with thousands of
//! parameters. A large change that is fine gives exactly its findings; a
//! change whose findings or rename matching would exceed the engine's
//! budget (src/budget.rs) gives that tool one `schema-unanalyzable`
//! finding naming the budget, and every other tool keeps its findings.
//! Time and memory are measured by the benchmarks (benches/large_schema.rs,
//! scripts/bench-large-schema), not here.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use toolpin_drift::{compare, Comparison, Severity};
use toolpin_manifest::{Catalog, ServerPin, Transform};

fn catalog(tools: Vec<Value>) -> Catalog {
    let tools = Transform::default().apply(tools).expect("tools normalize");
    let pin = ServerPin::new("s", json!({}), "mcp", tools).expect("pin");
    Catalog::new("default", BTreeMap::from([("s".to_string(), pin)])).expect("catalog")
}

/// Tool `t` with these properties and required keys.
fn big(props: Map<String, Value>, required: Vec<String>) -> Value {
    json!({
        "name": "t",
        "description": "d",
        "inputSchema": {"type": "object", "properties": props, "required": required},
    })
}

/// `n` properties `{prefix}{i}` of type `ty`.
fn props(prefix: &str, n: usize, ty: &str) -> Map<String, Value> {
    (0..n)
        .map(|i| (format!("{prefix}{i}"), json!({"type": ty})))
        .collect()
}

/// A small tool beside the big one, whose default moves: its finding must
/// survive whatever happens to `t`.
fn bystander(default: u64) -> Value {
    json!({
        "name": "u",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "integer", "default": default}}},
    })
}

fn by_rule(c: &Comparison) -> BTreeMap<&'static str, usize> {
    let mut counts = BTreeMap::new();
    for f in &c.findings {
        *counts.entry(f.rule).or_default() += 1;
    }
    counts
}

fn run(before: Value, after: Value) -> Comparison {
    compare(
        &catalog(vec![before, bystander(1)]),
        &catalog(vec![after, bystander(2)]),
    )
}

#[test]
fn twenty_thousand_type_changes_are_twenty_thousand_findings() {
    let n = 20_000;
    let c = run(
        big(props("p", n, "string"), vec![]),
        big(props("p", n, "integer"), vec![]),
    );
    assert_eq!(
        by_rule(&c),
        BTreeMap::from([("input-default-changed", 1), ("input-type-changed", n)])
    );
    let first = c
        .findings
        .iter()
        .find(|f| f.tool == "t")
        .expect("a finding");
    assert_eq!(first.pointer, "/inputSchema/properties/p0/type");
    assert_eq!(
        first.message,
        "t: /inputSchema/properties/p0 type string → integer"
    );
    assert_eq!(
        (first.before.clone(), first.after.clone()),
        (Some(json!("string")), Some(json!("integer")))
    );
}

#[test]
fn required_emptied_within_the_budget_is_one_finding_per_key() {
    // 500 findings, each holding the 500-key list before and the empty one
    // after: 500 × 502 values, inside the 1,000,000 budget.
    let n = 500;
    let keys: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
    let c = run(
        big(props("p", n, "string"), keys.clone()),
        big(props("p", n, "string"), vec![]),
    );
    assert_eq!(
        by_rule(&c),
        BTreeMap::from([
            ("input-default-changed", 1),
            ("input-property-became-optional", n)
        ])
    );
    let f = &c.findings[0];
    assert_eq!(f.pointer, "/inputSchema/required");
    // Normalization sorts `required` (it is a set).
    let mut sorted = keys;
    sorted.sort();
    assert_eq!(f.before, Some(json!(sorted)));
    assert_eq!(f.after, Some(json!([])));
}

#[test]
fn required_emptied_past_the_value_budget_is_one_unanalyzable_finding() {
    // 2,000 findings × the 2,000-key list: 4,000,000 values.
    let n = 2_000;
    let keys: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
    let c = run(
        big(props("p", n, "string"), keys),
        big(props("p", n, "string"), vec![]),
    );
    assert_eq!(
        by_rule(&c),
        BTreeMap::from([("input-default-changed", 1), ("schema-unanalyzable", 1)])
    );
    let f = &c.findings[0];
    assert_eq!(
        (f.rule, f.tool.as_str(), f.pointer.as_str()),
        ("schema-unanalyzable", "t", "")
    );
    assert_eq!(
        f.message,
        "t: the change's findings would hold more than 1000000 JSON values (the engine's value budget for one tool); the tool was not analyzed"
    );
    assert_eq!((f.before.clone(), f.after.clone()), (None, None));
    assert_eq!((f.severity, f.security), (Severity::Critical, true));
    assert_eq!(c.summary.findings, 2);
    assert_eq!(c.summary.tools_changed, 2);
}

#[test]
fn rename_matching_past_its_budget_is_one_unanalyzable_finding() {
    // 1,001 removed × 1,000 added properties: more than 1,000,000 pairs.
    let c = run(
        big(props("p", 1_001, "string"), vec![]),
        big(props("q", 1_000, "string"), vec![]),
    );
    assert_eq!(
        by_rule(&c),
        BTreeMap::from([("input-default-changed", 1), ("schema-unanalyzable", 1)])
    );
    let f = &c.findings[0];
    assert_eq!(
        (f.rule, f.tool.as_str(), f.pointer.as_str()),
        ("schema-unanalyzable", "t", "")
    );
    assert_eq!(
        f.message,
        "t: 1001 properties removed and 1000 added at /inputSchema: matching renames needs more than 1000000 comparisons (the engine's rename budget); the tool was not analyzed"
    );
}

#[test]
fn renames_within_the_budget_are_named() {
    let n = 300;
    let c = run(
        big(props("p", n, "string"), vec![]),
        big(props("q", n, "string"), vec![]),
    );
    assert_eq!(
        by_rule(&c),
        BTreeMap::from([
            ("input-default-changed", 1),
            ("input-optional-property-added", n),
            ("input-property-silently-ignored", n),
        ])
    );
    let note = |ptr: &str| -> String {
        c.findings
            .iter()
            .find(|f| f.pointer == ptr)
            .map(|f| f.message.clone())
            .expect("finding")
    };
    assert_eq!(
        note("/inputSchema/properties/p7"),
        "t: argument `p7` removed from an open object: calls passing it are accepted and it is ignored (looks renamed to `q7`)"
    );
    assert_eq!(
        note("/inputSchema/properties/q7"),
        "t: new optional argument `q7` (looks renamed from `p7`)"
    );
}

#[test]
fn a_union_too_big_to_pair_is_one_unanalyzable_finding() {
    // 1,001 × 1,000 changed branches, no two identical.
    let union = |n: u64, offset: u64| {
        let branches: Vec<Value> = (0..n).map(|i| json!({"const": i + offset})).collect();
        json!({"name": "t", "inputSchema": {"anyOf": branches}})
    };
    let c = run(union(1_001, 0), union(1_000, 100_000));
    assert_eq!(
        by_rule(&c),
        BTreeMap::from([("input-default-changed", 1), ("schema-unanalyzable", 1)])
    );
    let f = &c.findings[0];
    assert_eq!(
        (f.rule, f.tool.as_str(), f.pointer.as_str()),
        ("schema-unanalyzable", "t", "")
    );
    assert_eq!(
        f.message,
        "t: /inputSchema/anyOf changed from 1001 to 1000 branches: pairing them needs more than 1000000 comparisons (the engine's union budget); the tool was not analyzed"
    );
}

#[test]
fn identical_branches_of_a_large_union_pair_without_comparing_every_pair() {
    // 5,000 branches, one changed: the others pair as identical, and the
    // one left pairs by distance.
    let union = |last: &str| {
        let mut branches: Vec<Value> = (0..4_999).map(|i| json!({"const": i})).collect();
        branches.push(json!({"type": "string", "pattern": last}));
        json!({"name": "t", "inputSchema": {"anyOf": branches}})
    };
    let c = run(union("^a"), union("^b"));
    assert_eq!(
        by_rule(&c),
        BTreeMap::from([("input-default-changed", 1), ("input-pattern-changed", 1)])
    );
    assert_eq!(c.findings[0].pointer, "/inputSchema/anyOf/4999/pattern");
}
