//! Exhaustive comparison of two catalogs: every tool added, removed or
//! changed, and for a changed tool every member that differs, down to the
//! deepest JSON pointer where the two sides part.

use serde_json::Value;
use toolpin_manifest::pointer::escape_token;
use toolpin_manifest::{Catalog, PinnedTool};

use crate::finding::{Comparison, Finding, Fingerprints, Summary};
use crate::rule::{self, Severity};

/// Compares the pinned catalog `old` with `new`. Tools are matched by the
/// namespaced name the model sees, whichever server offers them.
pub fn compare(old: &Catalog, new: &Catalog) -> Comparison {
    let mut findings = Vec::new();
    let mut summary = Summary::default();
    let mut old_tools = old.tools().peekable();
    let mut new_tools = new.tools().peekable();
    loop {
        let order = match (old_tools.peek(), new_tools.peek()) {
            (None, None) => break,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(o), Some(n)) => o.0.cmp(n.0),
        };
        match order {
            std::cmp::Ordering::Less => {
                let Some((name, server, tool)) = old_tools.next() else {
                    break;
                };
                summary.tools_removed += 1;
                let mut f = Finding::new(&rule::TOOL_REMOVED, server, name, String::new());
                f.message = format!("{name}: tool removed");
                f.before = Some(tool.value());
                findings.push(f);
            }
            std::cmp::Ordering::Greater => {
                let Some((name, server, tool)) = new_tools.next() else {
                    break;
                };
                summary.tools_added += 1;
                let mut f = Finding::new(&rule::TOOL_ADDED, server, name, String::new());
                f.message = format!("{name}: new tool");
                f.after = Some(tool.value());
                findings.push(f);
            }
            std::cmp::Ordering::Equal => {
                let (Some((name, _, before)), Some((_, server, after))) =
                    (old_tools.next(), new_tools.next())
                else {
                    break;
                };
                if before.fingerprint == after.fingerprint {
                    summary.tools_unchanged += 1;
                } else {
                    summary.tools_changed += 1;
                    compare_tool(server, name, before, after, &mut findings);
                }
            }
        }
    }
    compare_server_versions(old, new, &mut findings);
    summary.findings = findings.len();
    for sev in Severity::ALL {
        summary.by_severity.insert(
            sev.name(),
            findings.iter().filter(|f| f.severity == sev).count(),
        );
    }
    Comparison {
        findings,
        summary,
        fingerprints: Fingerprints {
            before: old.fingerprint.to_hex(),
            after: new.fingerprint.to_hex(),
        },
    }
}

/// The pointer of a server's version inside its lockfile entry.
pub const SERVER_VERSION_POINTER: &str = "/session/server_info/version";

/// A server present on both sides whose serverInfo.version moved.
fn compare_server_versions(old: &Catalog, new: &Catalog, out: &mut Vec<Finding>) {
    for (name, before) in &old.servers {
        let Some(after) = new.servers.get(name) else {
            continue;
        };
        let version = |pin: &toolpin_manifest::ServerPin| {
            pin.session
                .as_ref()
                .and_then(|s| s.pointer("/server_info/version"))
                .cloned()
        };
        let (b, a) = (version(before), version(after));
        if b.is_some() && a.is_some() && b != a {
            let mut f = Finding::new(
                &rule::SERVER_VERSION_CHANGED,
                name,
                "",
                SERVER_VERSION_POINTER.into(),
            );
            f.message = format!(
                "server {name}: version {} → {}",
                b.as_ref().map(Value::to_string).unwrap_or_default(),
                a.as_ref().map(Value::to_string).unwrap_or_default()
            );
            f.before = b;
            f.after = a;
            out.push(f);
        }
    }
}

fn compare_tool(
    server: &str,
    name: &str,
    before: &PinnedTool,
    after: &PinnedTool,
    out: &mut Vec<Finding>,
) {
    let (before, after) = (before.value(), after.value());
    let mut diffs = Vec::new();
    diff_values(&mut String::new(), Some(&before), Some(&after), &mut diffs);
    for (pointer, b, a) in diffs {
        out.push(classify(server, name, pointer, b, a));
    }
}

type Diff<'a> = (String, Option<&'a Value>, Option<&'a Value>);

/// Collects the pointers where `a` and `b` differ: objects member by member,
/// arrays of equal length element by element, anything else as a whole.
fn diff_values<'a>(
    path: &mut String,
    a: Option<&'a Value>,
    b: Option<&'a Value>,
    out: &mut Vec<Diff<'a>>,
) {
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort_unstable();
            keys.dedup();
            for key in keys {
                let len = path.len();
                path.push('/');
                path.push_str(&escape_token(key));
                diff_values(path, x.get(key), y.get(key), out);
                path.truncate(len);
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) if x.len() == y.len() => {
            for (i, (xi, yi)) in x.iter().zip(y).enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                diff_values(path, Some(xi), Some(yi), out);
                path.truncate(len);
            }
        }
        // Numbers compare as the doubles canonical JSON prints, so `1.0`
        // and `1` are the same value here as in the fingerprint.
        (Some(Value::Number(x)), Some(Value::Number(y))) if same_number(x, y) => {}
        (x, y) if x != y => out.push((path.clone(), x, y)),
        _ => {}
    }
}

fn same_number(x: &serde_json::Number, y: &serde_json::Number) -> bool {
    x == y || matches!((x.as_f64(), y.as_f64()), (Some(a), Some(b)) if a == b)
}

fn classify(
    server: &str,
    tool: &str,
    pointer: String,
    before: Option<&Value>,
    after: Option<&Value>,
) -> Finding {
    let what = match (before, after) {
        (None, _) => "added",
        (_, None) => "removed",
        _ => "changed",
    };
    let mut finding = match pointer.as_str() {
        "/description" => {
            let mut f = Finding::new(&rule::DESCRIPTION_CHANGED, server, tool, pointer.clone());
            if whitespace_only(before, after) {
                f.severity = Severity::Low;
                f.message = format!("{tool}: description changed in white space only");
            } else {
                f.message = format!("{tool}: description {what}");
            }
            f
        }
        "/title" | "/annotations/title" => {
            let mut f = Finding::new(&rule::TITLE_CHANGED, server, tool, pointer.clone());
            f.message = format!(
                "{tool}: {} {what}{}",
                &pointer[1..],
                scalar_change(before, after)
            );
            f
        }
        "/outputSchema" if before.is_none() => {
            let mut f = Finding::new(&rule::OUTPUT_SCHEMA_ADDED, server, tool, pointer.clone());
            f.message = format!("{tool}: outputSchema added");
            f
        }
        "/outputSchema" if after.is_none() => {
            let mut f = Finding::new(&rule::OUTPUT_SCHEMA_REMOVED, server, tool, pointer.clone());
            f.message = format!("{tool}: outputSchema removed");
            f
        }
        _ => {
            let mut f = Finding::new(&rule::FIELD_CHANGED, server, tool, pointer.clone());
            f.message = format!("{tool}: {pointer} {what}{}", scalar_change(before, after));
            f
        }
    };
    finding.before = before.cloned();
    finding.after = after.cloned();
    finding
}

fn whitespace_only(before: Option<&Value>, after: Option<&Value>) -> bool {
    match (
        before.and_then(Value::as_str),
        after.and_then(Value::as_str),
    ) {
        (Some(a), Some(b)) => a.split_whitespace().eq(b.split_whitespace()),
        _ => false,
    }
}

/// ` from 50 to 20` when both sides are short scalars, else nothing (the
/// report shows full values).
fn scalar_change(before: Option<&Value>, after: Option<&Value>) -> String {
    let short = |v: Option<&Value>| -> Option<String> {
        match v {
            None => Some(String::new()),
            Some(Value::Array(_) | Value::Object(_)) => None,
            Some(v) => {
                let s = v.to_string();
                (s.chars().count() <= 60).then_some(s)
            }
        }
    };
    match (before, after, short(before), short(after)) {
        (Some(_), Some(_), Some(b), Some(a)) => format!(" from {b} to {a}"),
        (None, Some(_), _, Some(a)) => format!(": {a}"),
        (Some(_), None, Some(b), _) => format!(" (was {b})"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;
    use toolpin_manifest::ServerPin;

    fn catalog(tools: Vec<Value>) -> Catalog {
        let pin = ServerPin::new("s", json!({}), "mcp", tools).expect("pin");
        Catalog::new("default", BTreeMap::from([("s".to_string(), pin)])).expect("catalog")
    }

    fn rules(c: &Comparison) -> Vec<(&str, &str, &str)> {
        c.findings
            .iter()
            .map(|f| (f.rule, f.tool.as_str(), f.pointer.as_str()))
            .collect()
    }

    #[test]
    fn identical_catalogs_are_clean() {
        let a = catalog(vec![json!({"name": "a", "description": "x"})]);
        let c = compare(&a, &a.clone());
        assert!(c.is_clean());
        assert_eq!(c.summary.tools_unchanged, 1);
    }

    #[test]
    fn added_removed_changed() {
        let old = catalog(vec![
            json!({"name": "lookup_order", "description": "Look up an order by ID."}),
            json!({"name": "gone"}),
            json!({"name": "list", "inputSchema": {"properties": {"limit": {"default": 50}}}}),
        ]);
        let new = catalog(vec![
            json!({"name": "lookup_order", "description": "Look up an order by ID. Prefer search_orders when the ID is unknown."}),
            json!({"name": "new_one"}),
            json!({"name": "list", "inputSchema": {"properties": {"limit": {"default": 20}}}, "outputSchema": {}}),
        ]);
        let c = compare(&old, &new);
        assert_eq!(
            rules(&c),
            vec![
                ("tool-removed", "gone", ""),
                (
                    "field-changed",
                    "list",
                    "/inputSchema/properties/limit/default"
                ),
                ("output-schema-added", "list", "/outputSchema"),
                ("description-changed", "lookup_order", "/description"),
                ("tool-added", "new_one", ""),
            ]
        );
        assert_eq!(
            c.findings[1].message,
            "list: /inputSchema/properties/limit/default changed from 50 to 20"
        );
        assert_eq!(
            (
                c.summary.tools_added,
                c.summary.tools_removed,
                c.summary.tools_changed
            ),
            (1, 1, 2)
        );
        assert_eq!(c.summary.by_severity["critical"], 1);
    }

    #[test]
    fn whitespace_only_description_is_low() {
        let old = catalog(vec![json!({"name": "a", "description": "one two"})]);
        let new = catalog(vec![json!({"name": "a", "description": "one  two"})]);
        let c = compare(&old, &new);
        assert_eq!(c.findings[0].severity, Severity::Low);
        assert!(c.findings[0].message.contains("white space only"));
    }

    #[test]
    fn arrays_of_different_length_are_one_finding() {
        let old = catalog(vec![
            json!({"name": "a", "inputSchema": {"enum": ["x", "y"]}}),
        ]);
        let new = catalog(vec![
            json!({"name": "a", "inputSchema": {"enum": ["x", "y", "z"]}}),
        ]);
        let c = compare(&old, &new);
        assert_eq!(rules(&c), vec![("field-changed", "a", "/inputSchema/enum")]);
        assert_eq!(c.findings[0].after, Some(json!(["x", "y", "z"])));
    }

    #[test]
    fn equal_numbers_spelled_differently_are_no_finding() {
        let old = catalog(vec![json!({"name": "a", "x": 1, "d": "one"})]);
        let new = catalog(vec![json!({"name": "a", "x": 1.0, "d": "two"})]);
        assert_eq!(
            rules(&compare(&old, &new)),
            vec![("field-changed", "a", "/d")]
        );
    }

    #[test]
    fn server_version_change_is_reported_not_failed() {
        let with_version = |v: &str| {
            let pin = ServerPin::new("s", json!({}), "mcp", vec![json!({"name": "a"})])
                .expect("pin")
                .with_session(Some(json!({"server_info": {"name": "x", "version": v}})));
            Catalog::new("default", BTreeMap::from([("s".to_string(), pin)])).expect("catalog")
        };
        let c = compare(&with_version("1.0.0"), &with_version("1.1.0"));
        assert_eq!(
            rules(&c),
            vec![("server-version-changed", "", SERVER_VERSION_POINTER)]
        );
        assert_eq!(
            c.findings[0].message,
            "server s: version \"1.0.0\" → \"1.1.0\""
        );
        assert!(!c.fails());
        assert!(!compare(&with_version("1.0.0"), &with_version("1.0.0")).fails());
    }

    #[test]
    fn pointer_tokens_are_escaped() {
        let old = catalog(vec![json!({"name": "a", "_meta": {"a/b": 1}})]);
        let new = catalog(vec![json!({"name": "a", "_meta": {"a/b": 2}})]);
        assert_eq!(
            rules(&compare(&old, &new)),
            vec![("field-changed", "a", "/_meta/a~1b")]
        );
    }
}
