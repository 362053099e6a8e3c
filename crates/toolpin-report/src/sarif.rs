//! SARIF 2.1.0 (`--format sarif`), for code scanning: one result per
//! finding, located at the tool's entry in the lockfile, with the rules
//! that fired as the driver's rules.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use toolpin_drift::cluster::{clusters, membership};
use toolpin_drift::policy::Verdict;
use toolpin_drift::{Comparison, Finding, Severity};

use crate::context::Context;

pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
pub const INFORMATION_URI: &str = "https://github.com/toolpin/toolpin";

/// The SARIF level for a severity.
pub fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical | Severity::High => "error",
        Severity::Medium => "warning",
        Severity::Low | Severity::Info => "note",
    }
}

/// A result's level: `error` when the finding fails the policy (as the
/// `github` format's `::error`), so that code scanning and the gate agree;
/// otherwise the severity's level, at most `warning`.
pub fn result_level(severity: Severity, failing: bool) -> &'static str {
    match (failing, level(severity)) {
        (true, _) => "error",
        (false, "error") => "warning",
        (false, other) => other,
    }
}

/// A stable fingerprint of where a finding is: (rule, server, tool,
/// pointer), 64-bit FNV-1a in hex. Stable across runs, versions and
/// platforms, so code scanning tracks a finding from one run to the next.
/// A contract finding adds its call, after the rest, so that declaration
/// findings keep the fingerprints they always had.
pub fn fingerprint(f: &Finding) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let call = f.call.as_deref().into_iter();
    for part in [f.rule, &f.server, &f.tool, &f.pointer]
        .into_iter()
        .chain(call)
    {
        for b in part.bytes().chain([0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// The line a finding points at: the tool's entry; a renamed tool's old
/// entry; an added tool's server.
pub fn line(f: &Finding, ctx: &Context) -> usize {
    if let Some(n) = ctx.find_tool(&f.server, &f.tool) {
        return n;
    }
    if f.rule == "tool-renamed" {
        if let Some(n) = f
            .before
            .as_ref()
            .and_then(Value::as_str)
            .and_then(|old| ctx.find_tool(&f.server, old))
        {
            return n;
        }
    }
    ctx.tool_line(&f.server, &f.tool)
}

pub fn render(c: &Comparison, verdict: &Verdict, ctx: &Context) -> String {
    let mut text = serde_json::to_string_pretty(&document(c, verdict, ctx)).unwrap_or_default();
    text.push('\n');
    text
}

/// The SARIF log as JSON.
pub fn document(c: &Comparison, verdict: &Verdict, ctx: &Context) -> Value {
    // Rules in order of first appearance; ruleIndex points into this.
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut rules = Vec::new();
    for f in &c.findings {
        if index.contains_key(f.rule) {
            continue;
        }
        index.insert(f.rule, rules.len());
        rules.push(rule_descriptor(f));
    }
    let ignored: BTreeMap<usize, &str> = verdict
        .ignored
        .iter()
        .map(|(i, reason)| (*i, reason.as_str()))
        .collect();
    // One result per finding; a repeated one names its cluster (the
    // findings document's `clusters`) in its properties.
    let clusters = clusters(&c.findings);
    let member = membership(c.findings.len(), &clusters);
    let results: Vec<Value> = c
        .findings
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut r = result(f, index[f.rule], ignored.get(&i).copied(), verdict, i, ctx);
            if let Some(k) = member[i] {
                r["properties"]["cluster"] = json!(clusters[k].id);
            }
            r
        })
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "toolpin",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }},
            "originalUriBaseIds": {
                "SRCROOT": {"description": {"text": "The repository root."}}
            },
            "results": results,
            "properties": {
                "fails": verdict.fails,
                "preset": verdict.preset,
                "failOn": verdict.fail_on,
                "fingerprints": {"before": c.fingerprints.before, "after": c.fingerprints.after},
            },
        }],
    })
}

fn rule_descriptor(f: &Finding) -> Value {
    let Some(rule) = toolpin_drift::rule::by_id(f.rule) else {
        return json!({"id": f.rule, "properties": {"kind": f.kind.name()}});
    };
    let mut tags = vec![rule.kind.name()];
    if rule.security {
        tags.push("security");
    }
    json!({
        "id": rule.id,
        "name": rule.id,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.breaks},
        "help": {"text": rule.explain(), "markdown": rule.explain()},
        "defaultConfiguration": {"level": level(rule.severity)},
        "properties": {
            "kind": rule.kind.name(),
            "severity": rule.severity.name(),
            "security": rule.security,
            "rerun": rule.rerun,
            "tags": tags,
        },
    })
}

fn result(
    f: &Finding,
    rule_index: usize,
    ignored: Option<&str>,
    verdict: &Verdict,
    i: usize,
    ctx: &Context,
) -> Value {
    let message = if f.message.is_empty() {
        format!("{}/{}: {}", f.server, f.tool, f.rule)
    } else {
        f.message.clone()
    };
    let mut tags = vec![f.kind.name()];
    if f.security {
        tags.push("security");
    }
    let mut r = json!({
        "ruleId": f.rule,
        "ruleIndex": rule_index,
        "level": result_level(f.severity, verdict.is_failing(i)),
        "message": {"text": message},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": ctx.lockfile_uri, "uriBaseId": "SRCROOT"},
                "region": {"startLine": line(f, ctx)},
            },
            "logicalLocations": [{
                "name": f.tool,
                "fullyQualifiedName": format!("{}/{}{}", f.server, f.tool, f.pointer),
                "kind": "member",
            }],
        }],
        "partialFingerprints": {"toolpinFinding/v1": fingerprint(f)},
        "properties": {
            "server": f.server,
            "tool": f.tool,
            "pointer": f.pointer,
            "severity": f.severity.name(),
            "kind": f.kind.name(),
            "security": f.security,
            "model_reads": f.model_reads,
            "rerun": f.rerun,
            "failing": verdict.is_failing(i),
            "before": f.before,
            "after": f.after,
            "tags": tags,
        },
    });
    if let Some(call) = &f.call {
        r["properties"]["call"] = json!(call);
    }
    if let Some(reason) = ignored {
        r["suppressions"] = json!([{"kind": "external", "justification": reason}]);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use toolpin_drift::policy::{IgnoreEntry, Policy};
    use toolpin_manifest::{Catalog, ServerPin};

    fn catalog(tools: Vec<Value>) -> Catalog {
        let pin = ServerPin::new("orders", json!({"file": "t.json"}), "mcp", tools).expect("pin");
        Catalog::new("default", BTreeMap::from([("orders".to_string(), pin)])).expect("catalog")
    }

    fn case() -> (Comparison, Verdict, Context) {
        let lookup = |desc: &str| {
            json!({"name": "lookup_order", "description": desc,
                   "inputSchema": {"type": "object", "properties": {"n": {"type": "integer", "default": 50}}}})
        };
        let old = catalog(vec![
            lookup("Look an order up."),
            json!({"name": "cancel", "description": "Cancel an order."}),
        ]);
        let mut new_lookup =
            lookup("Look an order up. Prefer search_orders when the ID is unknown.");
        new_lookup["inputSchema"]["properties"]["n"]["default"] = json!(20);
        let new = catalog(vec![
            new_lookup,
            json!({"name": "search_orders", "description": "Search orders by customer email."}),
        ]);
        let mut c = toolpin_drift::compare(&old, &new);
        let policy = Policy {
            ignore: vec![IgnoreEntry {
                rule: "input-default-changed".into(),
                tool: None,
                pointer: None,
                reason: "page size change accepted in #42".into(),
            }],
            ..Policy::default()
        };
        let v = policy.apply(&mut c);
        let ctx = Context::new(
            "toolpin.lock",
            Some(toolpin_manifest::lockfile::to_string(&old)),
        );
        (c, v, ctx)
    }

    #[test]
    fn one_result_per_finding_with_rules_levels_and_lines() {
        let (c, v, ctx) = case();
        assert!(!c.findings.is_empty());
        let doc: Value = serde_json::from_str(&render(&c, &v, &ctx)).expect("json");
        assert_eq!(doc["version"], "2.1.0");
        assert_eq!(doc["$schema"], SCHEMA);
        let run = &doc["runs"][0];
        assert_eq!(run["tool"]["driver"]["name"], "toolpin");
        let results = run["results"].as_array().expect("results");
        assert_eq!(results.len(), c.findings.len());
        let rules = run["tool"]["driver"]["rules"].as_array().expect("rules");
        let lockfile = ctx.lockfile_text.clone().unwrap();
        for (f, r) in c.findings.iter().zip(results) {
            assert_eq!(r["ruleId"], f.rule);
            let rule = &rules[r["ruleIndex"].as_u64().unwrap() as usize];
            assert_eq!(rule["id"], f.rule);
            let i = c.findings.iter().position(|x| x == f).unwrap();
            let failing = v.failing.contains(&i);
            assert_eq!(r["level"], result_level(f.severity, failing));
            let loc = &r["locations"][0]["physicalLocation"];
            assert_eq!(loc["artifactLocation"]["uri"], "toolpin.lock");
            let n = loc["region"]["startLine"].as_u64().unwrap() as usize;
            let text = lockfile.lines().nth(n - 1).unwrap();
            if f.tool == "search_orders" {
                assert_eq!(
                    text, "    \"orders\": {",
                    "an added tool points at its server"
                );
            } else {
                assert!(text.contains(&format!("\"{}\": {{", f.tool)), "{text}");
            }
        }
        // Every rule that fired, once.
        let mut ids: Vec<&str> = c.findings.iter().map(|f| f.rule).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(rules.len(), ids.len());
        for rule in rules {
            let id = rule["id"].as_str().unwrap();
            let r = toolpin_drift::rule::by_id(id).unwrap();
            assert_eq!(rule["shortDescription"]["text"], r.summary);
            assert_eq!(rule["fullDescription"]["text"], r.breaks);
            assert_eq!(rule["help"]["markdown"], r.explain());
            let tags = rule["properties"]["tags"].as_array().unwrap();
            assert_eq!(tags.iter().any(|t| t == "security"), r.security);
        }
    }

    #[test]
    fn ignored_findings_are_suppressed_with_their_reason() {
        let (c, v, ctx) = case();
        assert_eq!(v.ignored.len(), 1);
        let doc = document(&c, &v, &ctx);
        let results = doc["runs"][0]["results"].as_array().unwrap();
        for (i, r) in results.iter().enumerate() {
            if i == v.ignored[0].0 {
                assert_eq!(r["ruleId"], "input-default-changed");
                assert_eq!(
                    r["suppressions"],
                    json!([{"kind": "external", "justification": "page size change accepted in #42"}])
                );
            } else {
                assert!(r.get("suppressions").is_none());
            }
        }
    }

    #[test]
    fn fingerprints_are_stable_and_distinct() {
        let (c, v, ctx) = case();
        let a = document(&c, &v, &ctx);
        let b = document(&c, &v, &ctx);
        assert_eq!(a, b);
        let prints: Vec<String> = c.findings.iter().map(fingerprint).collect();
        let mut unique = prints.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), prints.len());
        // Pinned: a change here re-opens every alert in code scanning.
        let f = &c.findings[0];
        let mut g = f.clone();
        g.message = "another message".into();
        g.severity = Severity::Critical;
        assert_eq!(fingerprint(f), fingerprint(&g));
        g.pointer.push_str("/x");
        assert_ne!(fingerprint(f), fingerprint(&g));
    }

    #[test]
    fn levels() {
        assert_eq!(level(Severity::Critical), "error");
        assert_eq!(level(Severity::High), "error");
        assert_eq!(level(Severity::Medium), "warning");
        assert_eq!(level(Severity::Low), "note");
        assert_eq!(level(Severity::Info), "note");
        assert_eq!(result_level(Severity::Low, true), "error");
        assert_eq!(result_level(Severity::High, false), "warning");
        assert_eq!(result_level(Severity::Medium, false), "warning");
        assert_eq!(result_level(Severity::Info, false), "note");
    }

    #[test]
    fn fnv_is_pinned() {
        let mut g = case().0.findings[0].clone();
        g.rule = "tool-added";
        g.server = "s".into();
        g.tool = "t".into();
        g.pointer = String::new();
        // FNV-1a 64 of "tool-added\0s\0t\0\0": never change it.
        assert_eq!(fingerprint(&g), "0ee9d452dc05b521");
    }
}
