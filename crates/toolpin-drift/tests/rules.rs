//! Every rule fixture pair (tests/fixtures/rules/<case>/{before,after}.json)
//! yields exactly its expected rule ids, and its findings match the insta
//! snapshot (`cargo insta review` to accept a deliberate change).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use toolpin_drift::{compare, Comparison, Severity};
use toolpin_manifest::{Catalog, ServerPin, Transform};

/// A fixture side: an MCP `tools/list` result; a `source` member beside
/// `tools`, when present, is the server's lockfile `source` (for the
/// rules about how a source became tools).
fn catalog(path: &Path) -> Catalog {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value = serde_json::from_str(&text).expect("fixture JSON");
    let tools = doc["tools"].as_array().cloned().unwrap_or_default();
    let tools = Transform::default()
        .apply(tools)
        .expect("fixture tools normalize");
    let source = doc
        .get("source")
        .cloned()
        .unwrap_or_else(|| json!({"file": "fixture"}));
    let pin = ServerPin::new("orders", source, "mcp", tools).expect("pin");
    Catalog::new("default", BTreeMap::from([("orders".to_string(), pin)])).expect("catalog")
}

fn run(case: &str) -> Comparison {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rules")
        .join(case);
    compare(
        &catalog(&dir.join("before.json")),
        &catalog(&dir.join("after.json")),
    )
}

fn ids(c: &Comparison) -> Vec<&'static str> {
    let mut ids: Vec<&str> = c.findings.iter().map(|f| f.rule).collect();
    ids.sort_unstable();
    ids
}

/// The findings as the snapshot holds them: one line each.
fn render(c: &Comparison) -> String {
    c.findings
        .iter()
        .map(|f| {
            format!(
                "{} {} {}{} {} :: {}",
                f.severity.name(),
                f.rule,
                f.tool,
                if f.pointer.is_empty() {
                    String::new()
                } else {
                    format!(" {}", f.pointer)
                },
                if f.security { "[security]" } else { "" },
                f.message
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// (case, the exact rule ids it must produce)
const CASES: &[(&str, &[&str])] = &[
    ("refund-story", &["description-changed"]),
    ("reworded-description", &["description-changed"]),
    (
        "required-parameter-added",
        &["input-required-property-added"],
    ),
    ("enum-value-added", &["input-enum-value-added"]),
    ("enum-value-removed", &["input-enum-value-removed"]),
    ("required-relaxed", &["input-property-became-optional"]),
    ("tool-removed", &["tool-removed"]),
    ("destructive-tool-added", &["tool-added"]),
    ("default-50-to-20", &["input-default-changed"]),
    (
        "readonly-revoked-destructive-asserted",
        &[
            "annotation-destructive-asserted",
            "annotation-readonly-revoked",
        ],
    ),
    (
        "output-field-removed",
        &["output-required-property-removed"],
    ),
    ("output-enum-value-added", &["output-enum-value-added"]),
    ("integer-to-string", &["input-type-changed"]),
    ("hidden-instruction", &["description-changed"]),
    ("whitespace-only", &["description-changed"]),
    (
        "parameter-description-edit",
        &["property-description-changed"],
    ),
    (
        "optional-parameter-removed-open",
        &["input-property-silently-ignored"],
    ),
    (
        "additional-properties-closed",
        &["input-additional-properties-closed"],
    ),
    ("bound-tightened", &["input-bound-tightened"]),
    ("tool-renamed", &["tool-renamed"]),
    (
        "tool-renamed-suffix-unsafe",
        &["description-changed", "tool-renamed"],
    ),
    (
        "tool-renamed-suffix-wait-for",
        &["description-changed", "tool-renamed"],
    ),
    (
        "unrelated-similar-rest-descriptions",
        &["tool-added", "tool-removed"],
    ),
    (
        "unrelated-same-small-schema",
        &["tool-added", "tool-removed"],
    ),
    (
        "unrelated-new-required-arguments",
        &["tool-added", "tool-removed"],
    ),
    (
        "tool-renamed-arguments-extended",
        &[
            "description-changed",
            "input-optional-property-added",
            "input-optional-property-added",
            "input-property-became-optional",
            "title-changed",
            "tool-renamed",
        ],
    ),
    ("moved-into-defs", &[]),
    (
        "defs-length-lookahead-moved-to-bounds",
        &["equivalent-rewrite"],
    ),
    (
        "output-length-lookahead-moved-to-bounds",
        &["equivalent-rewrite"],
    ),
    (
        "output-property-names-unconstrained",
        &["equivalent-rewrite"],
    ),
    (
        "defs-exclusive-maximum-tightened",
        &["input-bound-tightened"],
    ),
    ("nested-scalar-became-array", &["input-type-changed"]),
    ("defs-leaf-type-changed", &["input-type-changed"]),
    (
        "defs-shared-by-two-properties",
        &["input-type-changed", "input-type-changed"],
    ),
    ("defs-output-enum-value-added", &["output-enum-value-added"]),
    ("defs-const-in-union-branch", &["input-enum-value-removed"]),
    ("defs-nested-reference", &["input-type-narrowed"]),
    ("exclusive-minimum-tightened", &["input-bound-tightened"]),
    ("scalar-became-array", &["input-type-changed"]),
    ("generated-description-changed", &["description-changed"]),
    ("wrapped-in-anyof", &["input-union-branch-added"]),
    (
        "enum-moved-into-union-branch",
        &[
            "input-enum-value-added",
            "input-enum-value-removed",
            "input-union-branch-added",
        ],
    ),
    (
        "enum-moved-out-of-union-branch",
        &[
            "input-enum-value-added",
            "input-enum-value-removed",
            "input-union-branch-removed",
        ],
    ),
    ("output-wrapped-in-oneof", &["output-union-branch-added"]),
    ("length-lookahead-moved-to-bounds", &["equivalent-rewrite"]),
    (
        "length-lookahead-moved-and-tightened",
        &["input-bound-tightened"],
    ),
    ("property-names-unconstrained", &["equivalent-rewrite"]),
    (
        "union-branch-replaced-by-discriminator",
        &["input-union-branch-added", "input-union-branch-removed"],
    ),
    (
        "output-union-branch-replaced-by-discriminator",
        &["field-changed", "output-union-branch-added"],
    ),
    (
        "union-branch-replaced-by-title",
        &["input-union-branch-added", "input-union-branch-removed"],
    ),
    (
        "output-exclusive-maximum-relaxed",
        &["output-bound-relaxed"],
    ),
    ("reordered", &[]),
    ("equivalent-rewrite", &["equivalent-rewrite"]),
    ("title-changed", &["title-changed"]),
    ("output-schema-added", &["output-schema-added"]),
    ("output-schema-removed", &["output-schema-removed"]),
    ("field-changed", &["field-changed"]),
    ("readonly-asserted", &["annotation-readonly-asserted"]),
    ("destructive-revoked", &["annotation-destructive-revoked"]),
    ("openworld-asserted", &["annotation-openworld-asserted"]),
    ("openworld-revoked", &["annotation-openworld-revoked"]),
    ("idempotent-asserted", &["annotation-idempotent-asserted"]),
    ("idempotent-revoked", &["annotation-idempotent-revoked"]),
    (
        "optional-parameter-added",
        &["input-optional-property-added"],
    ),
    (
        "closed-object-parameter-removed",
        &["input-property-removed"],
    ),
    ("type-narrowed", &["input-type-narrowed"]),
    ("type-widened", &["input-type-widened"]),
    ("format-changed", &["input-format-changed"]),
    ("pattern-changed", &["input-pattern-changed"]),
    ("bound-relaxed", &["input-bound-relaxed"]),
    ("union-branch-removed", &["input-union-branch-removed"]),
    ("union-branch-added", &["input-union-branch-added"]),
    ("output-property-added", &["output-property-added"]),
    (
        "output-optional-property-removed",
        &["output-optional-property-removed"],
    ),
    ("output-type-widened", &["output-type-widened"]),
    ("output-type-changed", &["output-type-changed"]),
    ("output-enum-value-removed", &["output-enum-value-removed"]),
    ("output-format-changed", &["output-format-changed"]),
    ("output-bound-relaxed", &["output-bound-relaxed"]),
    (
        "output-additional-properties-opened",
        &["output-additional-properties-opened"],
    ),
    ("output-union-branch-added", &["output-union-branch-added"]),
    ("property-deprecated", &["property-deprecated"]),
    ("schema-unanalyzable", &["schema-unanalyzable"]),
    (
        "parameter-renamed",
        &[
            "input-optional-property-added",
            "input-property-silently-ignored",
        ],
    ),
    (
        "openapi-conversion-changed",
        &["conversion-changed", "conversion-changed"],
    ),
];

/// Rules no fixture pair can produce: seen at run time (the proxy, contract
/// tests) or from the session record rather than the tools.
const NOT_FROM_TOOL_PAIRS: &[&str] = &[
    "server-version-changed",
    "result-nonconformant",
    "result-unknown-enum-value",
    "unknown-tool-called",
    "contract-failed",
];

#[test]
fn every_rule_has_a_fixture_pair() {
    let covered: std::collections::BTreeSet<&str> = CASES
        .iter()
        .flat_map(|(_, ids)| ids.iter().copied())
        .collect();
    let missing: Vec<&str> = toolpin_drift::rule::all()
        .map(|r| r.id)
        .filter(|id| !covered.contains(id) && !NOT_FROM_TOOL_PAIRS.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "rules without a fixture pair: {missing:?}"
    );
}

#[test]
fn every_case_yields_exactly_its_rules() {
    let mut failures = Vec::new();
    for (case, want) in CASES {
        let c = run(case);
        if ids(&c) != *want {
            failures.push(format!(
                "{case}: want {want:?}, got {:?}\n{}",
                ids(&c),
                render(&c)
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

#[test]
fn every_fixture_directory_is_a_case() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rules");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = CASES.iter().map(|(c, _)| c.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
fn snapshots() {
    for (case, _) in CASES {
        insta::with_settings!({snapshot_suffix => *case, prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!("rules", render(&run(case)));
        });
    }
}

#[test]
fn refund_story_is_critical_security_and_names_the_tool() {
    let c = run("refund-story");
    let f = &c.findings[0];
    assert_eq!(f.severity, Severity::Critical);
    assert!(f.security);
    assert!(
        f.message.contains("names another tool: search_orders"),
        "{}",
        f.message
    );
    assert!(
        f.message
            .contains("Prefer search_orders when the ID is unknown."),
        "{}",
        f.message
    );
}

#[test]
fn severities_follow_the_taxonomy() {
    let sev = |case: &str| run(case).findings[0].severity;
    assert_eq!(sev("whitespace-only"), Severity::Low);
    assert_eq!(sev("reworded-description"), Severity::Medium);
    assert_eq!(sev("hidden-instruction"), Severity::Critical);
    assert_eq!(sev("default-50-to-20"), Severity::High);
    assert_eq!(sev("bound-tightened"), Severity::High);
    assert_eq!(sev("integer-to-string"), Severity::Critical);
    assert_eq!(sev("equivalent-rewrite"), Severity::Info);
    let added = run("destructive-tool-added");
    assert!(added.findings[0].security, "{}", render(&added));
    let enum_added = run("enum-value-added");
    assert!(
        enum_added.findings[0].security,
        "a new action on a tool that writes"
    );
}
