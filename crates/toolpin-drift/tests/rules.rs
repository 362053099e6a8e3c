//! Every rule fixture pair (tests/fixtures/rules/<case>/) yields exactly its
//! expected rule ids, and its findings match the insta snapshot
//! (`cargo insta review` to accept a deliberate change).
//!
//! A case is a minimal pair: its before side is `before.json`, or the
//! shared `tests/fixtures/rules/_base.json` when it has none; its after side
//! is `after.json`, or its `patch.json` (an RFC 6902 JSON Patch) applied to
//! the before side, so the change is the patch.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use toolpin_drift::{compare, Comparison, Severity};
use toolpin_manifest::{Catalog, ServerPin, Transform};

/// A fixture side: an MCP `tools/list` result; a `source` member beside
/// `tools`, when present, is the server's lockfile `source` (for the
/// rules about how a source became tools), and an `instructions` member
/// the server's instructions.
fn catalog(doc: &Value) -> Catalog {
    let tools = doc["tools"].as_array().cloned().unwrap_or_default();
    let tools = Transform::default()
        .apply(tools)
        .expect("fixture tools normalize");
    let source = doc
        .get("source")
        .cloned()
        .unwrap_or_else(|| json!({"file": "fixture"}));
    let instructions = doc["instructions"].as_str().map(str::to_string);
    let pin = ServerPin::new("orders", source, "mcp", tools)
        .expect("pin")
        .with_instructions(instructions);
    Catalog::new("default", BTreeMap::from([("orders".to_string(), pin)])).expect("catalog")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The (before, after) documents of a case.
fn sides(case: &str) -> (Value, Value) {
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rules");
    let dir = rules.join(case);
    let before = if dir.join("before.json").is_file() {
        read_json(&dir.join("before.json"))
    } else {
        read_json(&rules.join("_base.json"))
    };
    let after = if dir.join("after.json").is_file() {
        read_json(&dir.join("after.json"))
    } else {
        let patch = read_json(&dir.join("patch.json"));
        json_patch::apply(&before, &patch).unwrap_or_else(|e| panic!("{case}/patch.json: {e}"))
    };
    (before, after)
}

fn run(case: &str) -> Comparison {
    let (before, after) = sides(case);
    compare(&catalog(&before), &catalog(&after))
}

/// RFC 6902 JSON Patch (add, remove, replace, move, copy, test), enough
/// for fixtures.
mod json_patch {
    use serde_json::Value;
    use toolpin_manifest::schema::{lookup, unescape_token};

    pub fn apply(doc: &Value, patch: &Value) -> Result<Value, String> {
        let mut doc = doc.clone();
        let ops = patch.as_array().ok_or("a JSON Patch is an array")?;
        for (i, op) in ops.iter().enumerate() {
            step(&mut doc, op).map_err(|e| format!("operation {i}: {e}"))?;
        }
        Ok(doc)
    }

    fn member<'o>(op: &'o Value, key: &str) -> Result<&'o Value, String> {
        op.get(key).ok_or_else(|| format!("no {key:?}"))
    }

    fn path<'o>(op: &'o Value, key: &str) -> Result<&'o str, String> {
        member(op, key)?
            .as_str()
            .ok_or_else(|| format!("{key:?} is not a string"))
    }

    fn step(doc: &mut Value, op: &Value) -> Result<(), String> {
        let at = path(op, "path")?;
        match path(op, "op")? {
            "add" => add(doc, at, member(op, "value")?.clone()),
            "remove" => remove(doc, at).map(drop),
            "replace" => {
                remove(doc, at)?;
                add(doc, at, member(op, "value")?.clone())
            }
            "move" => {
                let v = remove(doc, path(op, "from")?)?;
                add(doc, at, v)
            }
            "copy" => {
                let v = lookup(doc, path(op, "from")?).ok_or("\"from\" names nothing")?;
                add(doc, at, v.clone())
            }
            "test" => (lookup(doc, at) == Some(member(op, "value")?))
                .then_some(())
                .ok_or_else(|| format!("test failed at {at}")),
            other => Err(format!("unknown op {other:?}")),
        }
    }

    /// The parent of `at` and its last token (unescaped).
    fn parent<'d>(doc: &'d mut Value, at: &str) -> Result<(&'d mut Value, String), String> {
        let (head, last) = at
            .rsplit_once('/')
            .ok_or("the path names the whole document")?;
        let last = unescape_token(last).ok_or("malformed path")?.into_owned();
        let mut cur = doc;
        for raw in head.split('/').skip(1) {
            let token = unescape_token(raw).ok_or("malformed path")?;
            cur = match cur {
                Value::Object(m) => m.get_mut(token.as_ref()),
                Value::Array(a) => token.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
                _ => None,
            }
            .ok_or_else(|| format!("{at}: {head} names nothing"))?;
        }
        Ok((cur, last))
    }

    fn add(doc: &mut Value, at: &str, value: Value) -> Result<(), String> {
        if at.is_empty() {
            *doc = value;
            return Ok(());
        }
        match parent(doc, at)? {
            (Value::Object(m), key) => {
                m.insert(key, value);
                Ok(())
            }
            (Value::Array(a), key) => {
                let i = if key == "-" {
                    a.len()
                } else {
                    key.parse().map_err(|_| format!("{at}: not an index"))?
                };
                if i > a.len() {
                    return Err(format!("{at}: index out of range"));
                }
                a.insert(i, value);
                Ok(())
            }
            _ => Err(format!("{at}: the parent is not a container")),
        }
    }

    fn remove(doc: &mut Value, at: &str) -> Result<Value, String> {
        if at.is_empty() {
            return Ok(std::mem::take(doc));
        }
        match parent(doc, at)? {
            (Value::Object(m), key) => m.remove(&key),
            (Value::Array(a), key) => key
                .parse::<usize>()
                .ok()
                .filter(|i| *i < a.len())
                .map(|i| a.remove(i)),
            _ => None,
        }
        .ok_or_else(|| format!("{at} names nothing"))
    }
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
    (
        "server-instructions-changed",
        &["server-instructions-changed"],
    ),
    (
        "server-instructions-reworded",
        &["server-instructions-changed"],
    ),
    // Issue 34, class 6: `example` and `examples` are prose the model
    // reads; an outputSchema's prose is low.
    ("example-changed", &["property-description-changed"]),
    ("example-gains-steering", &["property-description-changed"]),
    (
        "output-description-added",
        &["property-description-changed"],
    ),
    (
        "defs-example-and-output-prose-changed",
        &[
            "property-description-changed",
            "property-description-changed",
        ],
    ),
    // Issue 34, class 5: every annotation is the annotation family's.
    ("annotation-category-changed", &["annotation-changed"]),
    ("annotation-hint-not-boolean", &["annotation-changed"]),
    (
        "item-object-became-string",
        &["input-type-changed", "output-type-changed"],
    ),
    // Issue 34, class 3: enum values through restructured items.
    (
        "items-enum-into-union-with-object",
        &[
            "input-enum-value-added",
            "input-enum-value-removed",
            "input-union-branch-added",
        ],
    ),
    (
        "items-enum-into-defs-union",
        &[
            "input-enum-value-added",
            "input-enum-value-removed",
            "input-union-branch-added",
        ],
    ),
    // Issue 34, class 4: branches behind `$ref` pair by content.
    (
        "defs-allof-branches-reordered",
        &[
            "input-optional-property-added",
            "input-optional-property-added",
        ],
    ),
    ("defs-union-regrouped", &["equivalent-rewrite"]),
    (
        "members-moved-under-wrapper",
        &[
            "input-optional-property-added",
            "input-property-silently-ignored",
            "input-property-silently-ignored",
        ],
    ),
    ("union-of-one-unwrapped-with-prose", &["equivalent-rewrite"]),
    (
        "output-wrapped-in-oneof-with-prose",
        &["output-union-branch-added"],
    ),
    (
        "output-nullable-object-became-union-branch",
        &[
            "field-changed",
            "output-property-added",
            "output-union-branch-added",
        ],
    ),
    // Issue 34, class 1: union <-> object rewraps, both directions.
    (
        "union-collapsed-to-object",
        &[
            "field-changed",
            "field-changed",
            "input-enum-value-added",
            "input-required-property-added",
            "input-required-property-added",
            "input-union-branch-removed",
            "output-enum-value-added",
            "output-type-changed",
        ],
    ),
    (
        "object-rewrapped-as-union",
        &[
            "input-enum-value-removed",
            "input-property-became-optional",
            "input-property-became-optional",
            "input-union-branch-added",
            "output-enum-value-removed",
            "output-required-property-removed",
            "output-type-changed",
            "output-union-branch-added",
        ],
    ),
    (
        "items-enum-into-nullable-union",
        &[
            "input-enum-value-added",
            "input-enum-value-removed",
            "input-union-branch-added",
        ],
    ),
    // Issue 34, class 2
    (
        "tool-renamed-and-changed",
        &[
            "description-changed",
            "input-optional-property-added",
            "input-optional-property-added",
            "input-property-became-optional",
            "title-changed",
            "tool-renamed",
        ],
    ),
    (
        "unrelated-shared-arguments-required-dropped",
        &["tool-added", "tool-removed"],
    ),
    (
        "unrelated-shared-arguments-not-unique",
        &["tool-added", "tool-added", "tool-removed"],
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
    "result-field-missing",
    "result-value-set-changed",
    "result-count-changed",
    "latency-regressed",
    "error-class-changed",
    "result-format-changed",
    "default-behaviour-changed",
    "result-order-changed",
    "contract-call-refused",
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

/// Over every fixture, each finding's rule is registered and listed by
/// exactly one family (debug builds also assert, at each push, that the
/// family whose code decided it lists it: `Family::push`).
#[test]
fn every_finding_comes_from_exactly_one_family() {
    for (case, _) in CASES {
        for f in run(case).findings {
            let owners: Vec<&str> = toolpin_drift::rules::FAMILIES
                .iter()
                .filter(|fam| fam.has(f.rule))
                .map(|fam| fam.name)
                .collect();
            assert_eq!(
                owners.len(),
                1,
                "{case}: {} is listed by {owners:?}",
                f.rule
            );
        }
    }
}

/// Each case has exactly one after side (`after.json` or `patch.json`), and
/// a `before.json` only when it differs from the shared `_base.json`: a
/// copy of the base is a patch in disguise.
#[test]
fn every_case_is_a_minimal_pair() {
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rules");
    let base = read_json(&rules.join("_base.json"));
    for (case, _) in CASES {
        let dir = rules.join(case);
        let after = dir.join("after.json").is_file();
        let patch = dir.join("patch.json").is_file();
        assert!(
            after != patch,
            "{case}: needs exactly one of after.json and patch.json"
        );
        assert!(dir.join("README.md").is_file(), "{case}: no README.md");
        if dir.join("before.json").is_file() {
            assert!(
                read_json(&dir.join("before.json")) != base,
                "{case}/before.json is a copy of _base.json: delete it"
            );
        }
    }
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
