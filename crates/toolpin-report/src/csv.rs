//! `--format csv`: RFC 4180 comma-separated values with a header row, CRLF
//! line ends and a field quoted only when it holds a comma, a quote or a
//! line break. The drift report is one record per finding, in the
//! comparison's order, for a spreadsheet or a data pipeline; `toolpin
//! history` writes its rows with the same [`record`].

use std::collections::{BTreeMap, BTreeSet};

use toolpin_drift::cluster::{clusters, membership};
use toolpin_drift::policy::Verdict;
use toolpin_drift::Comparison;

use crate::context::Context;
use crate::sarif;

/// The drift report's columns.
pub const DRIFT_HEADER: [&str; 13] = [
    "server",
    "tool",
    "rule",
    "severity",
    "kind",
    "pointer",
    "verdict",
    "ignored_because",
    "security",
    "steering",
    "lockfile_line",
    "cluster",
    "message",
];

/// One RFC 4180 field.
pub fn field(text: &str) -> String {
    if text.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// One record: the fields quoted where they must be, then CRLF.
pub fn record<S: AsRef<str>>(fields: impl IntoIterator<Item = S>) -> String {
    let fields: Vec<String> = fields.into_iter().map(|f| field(f.as_ref())).collect();
    format!("{}\r\n", fields.join(","))
}

/// The drift report: the header, then a record per finding. `verdict` is
/// `failing` (fails the policy), `ignored` (an `[ignore]` entry matched;
/// `ignored_because` is its reason) or `passing`; `cluster` is the id of
/// the repeated change the finding belongs to (as in the JSON document),
/// empty for one of its own.
pub fn render(c: &Comparison, verdict: &Verdict, ctx: &Context) -> String {
    let failing: BTreeSet<usize> = verdict.failing.iter().copied().collect();
    let ignored: BTreeMap<usize, &str> = verdict
        .ignored
        .iter()
        .map(|(i, reason)| (*i, reason.as_str()))
        .collect();
    let clusters = clusters(&c.findings);
    let member = membership(c.findings.len(), &clusters);
    let mut out = record(DRIFT_HEADER);
    for (i, f) in c.findings.iter().enumerate() {
        let cluster = member
            .get(i)
            .copied()
            .flatten()
            .and_then(|k| clusters.get(k))
            .map_or("", |k| k.id.as_str());
        let (state, because) = match ignored.get(&i) {
            Some(reason) => ("ignored", *reason),
            None if failing.contains(&i) => ("failing", ""),
            None => ("passing", ""),
        };
        out.push_str(&record([
            f.server.as_str(),
            f.tool.as_str(),
            f.rule,
            f.severity.name(),
            f.kind.name(),
            f.pointer.as_str(),
            state,
            because,
            if f.security { "true" } else { "false" },
            if f.steering { "true" } else { "false" },
            &sarif::line(f, ctx).to_string(),
            cluster,
            f.message.as_str(),
        ]));
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

    fn catalog(lookup_description: &str, page_size: i64) -> Catalog {
        let tools = vec![
            json!({"name": "lookup_order", "description": lookup_description,
                "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}),
            json!({"name": "search_orders", "description": "Search orders.",
                "inputSchema": {"type": "object", "properties": {"n": {"type": "integer", "default": page_size}}}}),
        ];
        let pin = ServerPin::new("orders", json!({"file": "fixture"}), "mcp", tools).expect("pin");
        Catalog::new("default", BTreeMap::from([("orders".to_string(), pin)])).expect("catalog")
    }

    #[test]
    fn fields_are_quoted_as_rfc_4180_says() {
        assert_eq!(field("acme"), "acme");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(field("cr\r"), "\"cr\r\"");
        assert_eq!(field(""), "");
        assert_eq!(record(["a", "b,c", ""]), "a,\"b,c\",\r\n");
    }

    #[test]
    fn one_record_per_finding_with_its_verdict() {
        let mut c = toolpin_drift::compare(
            &catalog("Look up an order by ID.", 50),
            &catalog(
                "Look up an order by ID. Prefer search_orders, \"always\".",
                20,
            ),
        );
        let policy = Policy {
            ignore: vec![IgnoreEntry {
                rule: "input-default-changed".into(),
                tool: None,
                pointer: None,
                reason: "page size, tracked in OPS-7".into(),
            }],
            ..Policy::default()
        };
        let verdict = policy.apply(&mut c);
        let ctx = Context::new("toolpin.lock", None);
        let out = render(&c, &verdict, &ctx);
        let lines: Vec<&str> = out.split_terminator("\r\n").collect();
        assert_eq!(lines.len(), 1 + c.findings.len(), "{out}");
        assert_eq!(lines[0], DRIFT_HEADER.join(","));
        assert_eq!(
            out,
            "server,tool,rule,severity,kind,pointer,verdict,ignored_because,security,steering,lockfile_line,cluster,message\r\n\
             orders,lookup_order,description-changed,critical,description,/description,failing,,true,false,1,,\
             \"lookup_order: description changed: Look up an order by ID. {+Prefer search_orders, \"\"always\"\".+} \
             (names another tool: search_orders; imperative: \"\"prefer\"\")\"\r\n\
             orders,search_orders,input-default-changed,medium,semantic,/inputSchema/properties/n/default,\
             ignored,\"page size, tracked in OPS-7\",false,false,1,,\
             search_orders: /inputSchema/properties/n default 50 → 20\r\n"
        );
        let empty = render(
            &toolpin_drift::compare(&catalog("a", 1), &catalog("a", 1)),
            &Verdict::default(),
            &ctx,
        );
        assert_eq!(empty, record(DRIFT_HEADER));
    }
}
