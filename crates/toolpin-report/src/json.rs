//! The findings document (docs/findings.schema.json): the comparison, the
//! policy's verdict, the re-run plan, and the clusters (one change repeated
//! across findings), each finding naming its cluster.

use serde_json::{json, Value};
use toolpin_drift::cluster::{clusters, Cluster};
use toolpin_drift::policy::Verdict;
use toolpin_drift::Comparison;

pub fn render(c: &Comparison, verdict: &Verdict) -> String {
    let mut doc = serde_json::to_value(c).unwrap_or(Value::Null);
    doc["verdict"] = json!({
        "fails": verdict.fails,
        "preset": verdict.preset,
        "fail_on": verdict.fail_on,
        "failing": verdict.failing,
        "ignored": verdict.ignored.iter().map(|(i, reason)| json!({"finding": i, "reason": reason})).collect::<Vec<_>>(),
    });
    doc["plan"] = json!(verdict
        .plan
        .iter()
        .map(|(tag, findings)| json!({"rerun": tag, "findings": findings}))
        .collect::<Vec<_>>());
    let found = clusters(&c.findings);
    if let Some(findings) = doc.get_mut("findings").and_then(Value::as_array_mut) {
        for cluster in &found {
            for &i in &cluster.findings {
                if let Some(f) = findings.get_mut(i) {
                    f["cluster"] = json!(cluster.id);
                }
            }
        }
    }
    doc["clusters"] = json!(found.iter().map(|k| cluster(c, k)).collect::<Vec<_>>());
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

fn cluster(c: &Comparison, k: &Cluster) -> Value {
    let mut tools: Vec<(&str, &str)> = k
        .findings
        .iter()
        .map(|&i| (c.findings[i].server.as_str(), c.findings[i].tool.as_str()))
        .collect();
    tools.sort_unstable();
    tools.dedup();
    json!({
        "id": k.id,
        "rule": k.rule,
        "pointer": k.pointer,
        "severity": k.severity,
        "before": k.before,
        "after": k.after,
        "findings": k.findings,
        "tools": tools
            .iter()
            .map(|(server, tool)| json!({"server": server, "tool": tool}))
            .collect::<Vec<_>>(),
    })
}
