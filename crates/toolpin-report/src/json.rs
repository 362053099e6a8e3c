//! The findings document (docs/findings.schema.json): the comparison, the
//! policy's verdict and the re-run plan.

use serde_json::{json, Value};
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
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}
