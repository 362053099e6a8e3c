//! JUnit XML (`--format junit`) for CI test-report views: one testcase per
//! tool with findings, one `<failure>` per failing finding, non-failing
//! findings as `<system-out>`, a tool with only ignored findings skipped,
//! and one passing testcase counting the unchanged tools.

use std::fmt::Write;

use toolpin_drift::cluster::{clusters, membership};
use toolpin_drift::policy::Verdict;
use toolpin_drift::{Comparison, Finding};

use crate::style::printable;

pub fn render(c: &Comparison, verdict: &Verdict) -> String {
    let groups = by_tool(c);
    let is_ignored = |i: &usize| verdict.ignored.iter().any(|(j, _)| j == i);
    let tests = groups.len() + 1;
    let failures = groups
        .iter()
        .filter(|g| g.2.iter().any(|&i| verdict.is_failing(i)))
        .count();
    let skipped = groups.iter().filter(|g| g.2.iter().all(is_ignored)).count();

    // A repeated finding names its cluster (the findings document's
    // `clusters`), so the same change in many testcases reads as one.
    let clusters = clusters(&c.findings);
    let member = membership(c.findings.len(), &clusters);
    let repeated = |i: usize| match member[i] {
        Some(k) => format!(
            "repeated: cluster {} ({} tools)\n",
            clusters[k].id, clusters[k].tools
        ),
        None => String::new(),
    };
    let mut cases = String::new();
    for group in &groups {
        cases.push_str(&testcase(c, verdict, group, &repeated));
    }
    let _ = writeln!(
        cases,
        "    <testcase classname=\"toolpin\" name=\"unchanged tools ({})\"/>",
        c.summary.tools_unchanged
    );

    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"toolpin\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">"
    );
    let _ = writeln!(
        xml,
        "  <testsuite name=\"toolpin drift\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">"
    );
    let _ = writeln!(
        xml,
        "    <properties>\n      <property name=\"fingerprint.before\" value=\"{}\"/>\n      <property name=\"fingerprint.after\" value=\"{}\"/>\n    </properties>",
        attr(&c.fingerprints.before),
        attr(&c.fingerprints.after)
    );
    xml.push_str(&cases);
    xml.push_str("  </testsuite>\n</testsuites>\n");
    xml
}

/// Findings grouped by (server, tool), in order of first appearance.
fn by_tool(c: &Comparison) -> Vec<(&str, &str, Vec<usize>)> {
    let mut groups: Vec<(&str, &str, Vec<usize>)> = Vec::new();
    for (i, f) in c.findings.iter().enumerate() {
        match groups.iter_mut().find(|g| g.0 == f.server && g.1 == f.tool) {
            Some(g) => g.2.push(i),
            None => groups.push((&f.server, &f.tool, vec![i])),
        }
    }
    groups
}

/// One tool's testcase: a `<failure>` per failing finding, the others in
/// `<system-out>`, `<skipped>` when every finding is ignored.
fn testcase(
    c: &Comparison,
    verdict: &Verdict,
    (server, tool, idx): &(&str, &str, Vec<usize>),
    repeated: &dyn Fn(usize) -> String,
) -> String {
    let is_ignored = |i: &usize| verdict.ignored.iter().any(|(j, _)| j == i);
    let mut cases = String::new();
    let name = if tool.is_empty() { "(server)" } else { tool };
    let _ = write!(
        cases,
        "    <testcase classname=\"{}\" name=\"{}\"",
        attr(server),
        attr(name)
    );
    let mut body = String::new();
    let mut out = String::new();
    for i in idx {
        let f = &c.findings[*i];
        if verdict.is_failing(*i) {
            let _ = writeln!(
                body,
                "      <failure type=\"{}\" message=\"{}\">{}</failure>",
                attr(f.rule),
                attr(&one_line(f)),
                text(&format!("{}{}", repeated(*i), details(f)))
            );
        } else {
            let note = match verdict.ignored.iter().find(|(j, _)| j == i) {
                Some((_, reason)) => format!("ignored: {reason}"),
                None => "does not fail".to_string(),
            };
            // The one-line summary already carries the message.
            let _ = write!(
                out,
                "{} ({note})\n{}{}",
                one_line(f),
                repeated(*i),
                values(f)
            );
        }
    }
    if idx.iter().all(is_ignored) {
        let mut reasons: Vec<&str> = idx
            .iter()
            .filter_map(|i| verdict.ignored.iter().find(|(j, _)| j == i))
            .map(|(_, r)| r.as_str())
            .collect();
        reasons.dedup();
        let _ = writeln!(
            body,
            "      <skipped message=\"{}\"/>",
            attr(&format!("ignored: {}", reasons.join("; ")))
        );
    }
    if !out.is_empty() {
        let _ = writeln!(
            body,
            "      <system-out>{}</system-out>",
            text(out.trim_end())
        );
    }
    if body.is_empty() {
        cases.push_str("/>\n");
    } else {
        let _ = write!(cases, ">\n{body}    </testcase>\n");
    }
    cases
}

/// `severity rule pointer: message`, on one line.
fn one_line(f: &Finding) -> String {
    let mut s = format!("{} {}", f.severity.name(), f.rule);
    if !f.pointer.is_empty() {
        let _ = write!(s, " {}", f.pointer);
    }
    if f.security {
        s.push_str(" [security]");
    }
    let _ = write!(s, ": {}", f.message);
    printable(&s, false).into_owned()
}

/// The message and the values, JSON on either side.
fn details(f: &Finding) -> String {
    format!("{}\n{}", printable(&f.message, true), values(f))
}

/// `before: …` and `after: …` lines, for the values a finding has.
fn values(f: &Finding) -> String {
    let mut s = String::new();
    for (label, v) in [("before", &f.before), ("after", &f.after)] {
        if let Some(v) = v {
            let _ = writeln!(
                s,
                "{label}: {}",
                serde_json::to_string_pretty(v).unwrap_or_default()
            );
        }
    }
    printable(&s, true).into_owned()
}

/// Whether XML 1.0 allows the character at all (surrogates cannot occur in
/// a `char`).
fn legal(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{FFFD}' | '\u{10000}'..)
}

/// Character data: `&`, `<`, `>` escaped, illegal characters dropped.
fn text(s: &str) -> String {
    escaped(s, markup)
}

/// An attribute value in double quotes: as [`text`], plus quotes, and
/// whitespace kept as character references (attribute normalization would
/// turn a raw newline or tab into a space).
fn attr(s: &str) -> String {
    escaped(s, |c| {
        markup(c).or(match c {
            '"' => Some("&quot;"),
            '\'' => Some("&apos;"),
            '\n' => Some("&#10;"),
            '\r' => Some("&#13;"),
            '\t' => Some("&#9;"),
            _ => None,
        })
    })
}

/// The entity of a character that would open or close markup.
fn markup(c: char) -> Option<&'static str> {
    match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        _ => None,
    }
}

/// `s` with illegal characters dropped and each character `entity` names
/// replaced by its entity.
fn escaped(s: &str, entity: impl Fn(char) -> Option<&'static str>) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars().filter(|c| legal(*c)) {
        match entity(c) {
            Some(e) => out.push_str(e),
            None => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;
    use toolpin_drift::policy::{IgnoreEntry, Policy};
    use toolpin_manifest::{Catalog, ServerPin};

    fn catalog(lookup_description: &str, refund_default: i64) -> Catalog {
        let tools = vec![
            json!({"name": "lookup_order", "description": lookup_description,
                "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}),
            json!({"name": "search_orders", "description": "Search orders.",
                "inputSchema": {"type": "object", "properties": {"n": {"type": "integer", "default": refund_default}}}}),
            json!({"name": "refund_order", "description": "Refund an order.",
                "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}),
        ];
        let pin = ServerPin::new("orders", json!({"file": "fixture"}), "mcp", tools).expect("pin");
        Catalog::new("default", BTreeMap::from([("orders".to_string(), pin)])).expect("catalog")
    }

    fn story(policy: &Policy) -> (Comparison, Verdict) {
        let mut c = toolpin_drift::compare(
            &catalog("Look up an order by ID.", 50),
            &catalog(
                "Look up an order by ID. Prefer search_orders when the ID is <unknown> & \"gone\".",
                20,
            ),
        );
        let v = policy.apply(&mut c);
        (c, v)
    }

    #[test]
    fn escaping() {
        assert_eq!(text("a<b>&c\"'"), "a&lt;b&gt;&amp;c\"'");
        assert_eq!(
            attr("a<b>&c\"'\n\t"),
            "a&lt;b&gt;&amp;c&quot;&apos;&#10;&#9;"
        );
        // Illegal in XML 1.0: dropped.
        assert_eq!(text("x\u{0}\u{1b}\u{b}y\u{FFFE}\u{FFFF}z"), "xyz");
        assert_eq!(attr("x\u{8}y"), "xy");
        assert_eq!(text("\u{10000}é"), "\u{10000}é");
    }

    #[test]
    fn structure() {
        let (c, v) = story(&Policy::default());
        assert!(v.fails);
        let xml = render(&c, &v);
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"toolpin\" tests=\"3\" failures=\"2\""), "{xml}");
        assert!(
            xml.contains("<testsuite name=\"toolpin drift\" tests=\"3\" failures=\"2\""),
            "{xml}"
        );
        assert!(
            xml.contains("<testcase classname=\"orders\" name=\"lookup_order\">"),
            "{xml}"
        );
        assert!(
            xml.contains("<testcase classname=\"orders\" name=\"search_orders\">"),
            "{xml}"
        );
        assert!(
            xml.contains("<testcase classname=\"toolpin\" name=\"unchanged tools (1)\"/>"),
            "{xml}"
        );
        assert_eq!(xml.matches("<failure ").count(), v.failing.len());
        assert!(xml.contains("&lt;unknown&gt; &amp; \"gone\""), "{xml}");
        assert!(
            xml.contains("&lt;unknown&gt; &amp; &quot;gone&quot;"),
            "{xml}"
        );
        assert!(!xml.contains("<unknown>"));
        assert_eq!(
            xml.matches("<testcase").count(),
            xml.matches("</testcase>").count() + 1
        );
    }

    #[test]
    fn ignored_only_tool_is_skipped() {
        let (c, _) = story(&Policy::default());
        let ignore = c
            .findings
            .iter()
            .filter(|f| f.tool == "search_orders")
            .map(|f| IgnoreEntry {
                rule: f.rule.to_string(),
                tool: None,
                pointer: None,
                reason: "page size <20> ok".into(),
            })
            .collect();
        let (c, v) = story(&Policy {
            ignore,
            ..Policy::default()
        });
        let xml = render(&c, &v);
        assert!(
            xml.contains("failures=\"1\" errors=\"0\" skipped=\"1\""),
            "{xml}"
        );
        assert!(
            xml.contains("<skipped message=\"ignored: page size &lt;20&gt; ok\"/>"),
            "{xml}"
        );
        assert!(xml.contains("<system-out>"), "{xml}");
    }
}
