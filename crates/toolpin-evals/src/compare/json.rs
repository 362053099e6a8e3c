//! The comparison as a JSON document (docs/compare.md has its schema).

use serde_json::{json, Map, Value};

use super::stats::Interval;
use super::{Flip, Metric, PassChange, Report, Tally, ToolGroup};

pub const VERSION: u64 = 1;

fn interval(i: &Interval) -> Value {
    json!({"estimate": i.estimate, "low": i.low, "high": i.high})
}

fn change(c: &PassChange) -> Value {
    json!({
        "paired": c.paired,
        "before": c.before,
        "after": c.after,
        "change": interval(&c.delta),
        "method": c.method.key(),
        "p_value": c.p_value,
        "significant": c.significant,
    })
}

pub fn flip_key(f: Flip) -> &'static str {
    match f {
        Flip::NewFailure => "new-failure",
        Flip::NewPass => "new-pass",
        Flip::StillPassing => "still-passing",
        Flip::StillFailing => "still-failing",
        Flip::OnlyBefore => "only-before",
        Flip::OnlyAfter => "only-after",
    }
}

fn groups(r: &Report, groups: &[ToolGroup]) -> Value {
    groups
        .iter()
        .map(|g| {
            json!({
                "tool": g.tool.map(|t| r.names.name(t)),
                "touched": g.touched,
                "cases": g.cases.iter().map(|i| r.cases[*i].id.as_str()).collect::<Vec<_>>(),
                "drift": g.drift.as_ref().map(|d| json!({
                    "severity": d.severity.name(),
                    "rules": d.rules,
                })),
            })
        })
        .collect()
}

fn tally(r: &Report, t: &Tally) -> Value {
    let mut tools = Map::new();
    let mut by_name: Vec<(&str, u32)> = t
        .tools
        .iter()
        .map(|(id, n)| (r.names.name(*id), *n))
        .collect();
    by_name.sort_unstable();
    for (name, n) in by_name {
        tools.insert(name.to_string(), json!(n));
    }
    let mut doc = json!({
        "runs": t.runs,
        "passes": t.passes,
        "pass_rate": t.pass_rate(),
    });
    for m in Metric::ALL {
        if let Some(v) = t.per_run(m) {
            doc[m.key()] = json!(v);
        }
    }
    if t.call_runs > 0 {
        doc["tools"] = Value::Object(tools);
    }
    if let Some(e) = &t.error {
        doc["error"] = json!(e);
    }
    doc
}

/// The document, with the outcome [`crate::verdict::decide`] gave the
/// comparison (in `evals run`, from the exit codes too).
pub fn render(r: &Report, outcome: &crate::verdict::Outcome) -> Value {
    let count = |f: Flip| r.case_ids(f).len();
    json!({
        "version": VERSION,
        "verdict": r.verdict.key(),
        "fails": outcome.regressed(),
        "outcome": crate::verdict::json(outcome),
        "seed": r.options.seed,
        "resamples": r.options.resamples,
        "repeats": {"before": r.repeats[0], "after": r.repeats[1], "aa": r.aa_repeats},
        "cases": {
            "total": r.cases.len(),
            "paired": r.pass.paired,
            "new_failures": count(Flip::NewFailure),
            "new_passes": count(Flip::NewPass),
            "changed": r.pass.changed,
            "failed_every_run": r.failed_every_run.len(),
            "still_passing": count(Flip::StillPassing),
            "still_failing": count(Flip::StillFailing),
            "only_before": count(Flip::OnlyBefore),
            "only_after": count(Flip::OnlyAfter),
        },
        "pass_rate": change(&r.pass),
        "aa": r.aa.as_ref().map(change),
        "detectable": r.detectable,
        "catalogs": r.catalogs,
        "groups": {
            "new_failures": groups(r, &r.failures),
            "new_passes": groups(r, &r.passes),
        },
        "metrics": r.metrics.iter().map(|m| json!({
            "metric": m.metric.key(),
            "cases": m.cases,
            "before_median": m.before_median,
            "after_median": m.after_median,
            "change": interval(&m.change),
        })).collect::<Vec<_>>(),
        "tool_moves": r.tool_moves.iter().map(|m| json!({
            "tool": r.names.name(m.tool),
            "before": m.before,
            "after": m.after,
            "change": m.delta(),
        })).collect::<Vec<_>>(),
        "new_tool_names": r.new_names.iter().map(|n| json!({
            "name": n.name,
            "cases": n.cases.iter().map(|i| r.cases[*i].id.as_str()).collect::<Vec<_>>(),
            "hallucinated": n.hallucinated,
        })).collect::<Vec<_>>(),
        "case_results": r.cases.iter().map(|c| json!({
            "case": c.id,
            "flip": flip_key(c.flip()),
            "before": c.before.as_ref().map(|t| tally(r, t)),
            "after": c.after.as_ref().map(|t| tally(r, t)),
        })).collect::<Vec<_>>(),
    })
}
