//! The wire names of `toolpin_manifest::wire` are the ones the docs name:
//! docs/otel/mcp-semconv.json (the conventions the proxy follows),
//! docs/proxy.md (what the proxy writes) and docs/usage.md (what usage
//! reads). A name added, renamed or dropped on one side fails here.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;
use toolpin_manifest::wire::{event, resource, span};

fn doc(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text from the heading `start` to the next heading of its level.
fn section<'d>(doc: &'d str, start: &str) -> &'d str {
    let level = start.split(' ').next().unwrap_or_default();
    let rest = doc
        .split_once(&format!("\n{start}\n"))
        .unwrap_or_else(|| panic!("no section {start:?}"))
        .1;
    let end = rest.find(&format!("\n{level} ")).unwrap_or(rest.len());
    &rest[..end]
}

/// The `code` spans of `text`.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The code spans in the first column of the table rows of `text`.
fn first_column(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with("| `"))
        .flat_map(|l| code_spans(l.split('|').nth(1).unwrap_or_default()))
        .map(str::to_string)
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn dotted(name: &str) -> bool {
    name.contains('.')
        && name
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
}

#[test]
fn the_proxy_writes_the_conventions_names() {
    let semconv: Value = serde_json::from_str(&doc("otel/mcp-semconv.json")).unwrap();
    let listed = |v: &Value| -> BTreeSet<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap().to_string())
            .collect()
    };
    let attributes = listed(&semconv["span"]["attributes"]);
    let written = set(span::WRITTEN);
    let conventions: BTreeSet<String> = written
        .iter()
        .filter(|n| !n.starts_with("toolpin."))
        .cloned()
        .collect();
    let unknown: Vec<_> = conventions.difference(&attributes).collect();
    assert!(unknown.is_empty(), "not in the conventions: {unknown:?}");
    // Every attribute a tools/call span must carry (or carries on failure).
    for a in semconv["span"]["attributes"].as_array().unwrap() {
        let name = a["name"].as_str().unwrap();
        if matches!(
            a["tools_call"].as_str(),
            Some("always" | "on_failure" | "on_error_code")
        ) {
            assert!(written.contains(name), "{name} is required and not written");
        }
    }
    assert_eq!(
        semconv["resource_attributes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect::<BTreeSet<_>>(),
        set(resource::WRITTEN)
    );
}

#[test]
fn docs_proxy_names_exactly_the_span_attributes_and_event_kinds() {
    let proxy = doc("proxy.md");
    let spans = section(&proxy, "## Traces (OpenTelemetry)");
    assert_eq!(
        first_column(spans),
        set(span::WRITTEN),
        "docs/proxy.md span table"
    );
    let events = section(&proxy, "## Events (JSON lines)");
    assert_eq!(
        first_column(events),
        set(event::KINDS),
        "docs/proxy.md events table"
    );
}

#[test]
fn docs_usage_names_exactly_the_attributes_usage_reads() {
    let usage = doc("usage.md");
    let spans = section(&usage, "### Which spans count");
    let named: BTreeSet<String> = code_spans(spans)
        .into_iter()
        .filter(|n| dotted(n))
        // The span's status, an OTLP field, not an attribute.
        .filter(|n| *n != "status.code")
        .map(str::to_string)
        .collect();
    let read: BTreeSet<String> = set(span::READ)
        .union(&set(resource::READ))
        .cloned()
        .collect();
    assert_eq!(named, read, "docs/usage.md \"Which spans count\"");
    assert!(spans.contains(&format!("`{}`", span::OPERATION_EXECUTE_TOOL)));
    assert!(spans.contains(&format!("`{}`", span::METHOD_TOOLS_CALL)));
    // The event kinds docs/usage.md gives as examples are the proxy's.
    let log = section(&usage, "### Inputs");
    let log = &log[log.find("The proxy's event log").expect("the event log")..];
    let kinds = set(event::KINDS);
    let examples: Vec<&str> = code_spans(log)
        .into_iter()
        .filter(|n| n.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'))
        .collect();
    assert!(examples.len() >= 4, "{examples:?}");
    for kind in examples {
        assert!(kinds.contains(kind), "docs/usage.md names event {kind:?}");
    }
}
