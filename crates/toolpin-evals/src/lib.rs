//! Evals (docs/evals.md). Eval routing: from the re-run tags of the failing
//! findings to the evals configured in `[evals]` and `[routing]`. This is
//! `check --plan`, `diff --plan` and `evals list`; running the evals against
//! both catalogs is in `run.rs`.

pub mod compare;
pub mod results;
pub mod run;
pub mod verdict;

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::{json, Value};
use toolpin_drift::policy::Verdict;
use toolpin_drift::{Comparison, Finding};

use toolpin_manifest::text::plural_of;
use toolpin_report::style::printable;
use toolpin_report::Style;

use toolpin_config::{Evals, Route};

/// An eval that could not be run: one line for the user (in a results
/// file: `PATH: message` or `PATH:LINE: message`).
pub use toolpin_manifest::diagnostic::Error;

/// The evals the failing findings route to.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// By eval name.
    pub evals: BTreeMap<String, Planned>,
    /// Tags that route to no eval, each with its findings (indices).
    pub unrouted: BTreeMap<&'static str, Vec<usize>>,
}

/// One eval of a plan.
#[derive(Debug, Default, PartialEq)]
pub struct Planned {
    /// The re-run tags that route to it, sorted.
    pub tags: Vec<&'static str>,
    /// The findings that pull it in (indices into the comparison's
    /// findings), each once, in findings order.
    pub findings: Vec<usize>,
}

impl Plan {
    /// Routes the verdict's tag-level plan through `[routing]`.
    pub fn new(verdict: &Verdict, evals: &Evals) -> Self {
        let mut plan = Plan::default();
        for (tag, findings) in &verdict.plan {
            let names = evals.route(tag).evals();
            if names.is_empty() {
                plan.unrouted.insert(tag, findings.clone());
            }
            for name in names {
                let entry = plan.evals.entry(name.to_string()).or_default();
                entry.tags.push(tag);
                entry.findings.extend(findings);
            }
        }
        for entry in plan.evals.values_mut() {
            entry.tags.sort_unstable();
            entry.tags.dedup();
            entry.findings.sort_unstable();
            entry.findings.dedup();
        }
        plan
    }

    /// How many distinct findings the plan holds, routed or not.
    fn finding_count(&self) -> usize {
        let mut all: Vec<usize> = self
            .evals
            .values()
            .flat_map(|p| p.findings.iter().copied())
            .chain(self.unrouted.values().flatten().copied())
            .collect();
        all.sort_unstable();
        all.dedup();
        all.len()
    }
}

/// Why a tag routes nowhere, for people.
fn unrouted_reason(evals: &Evals, tag: &str) -> String {
    match evals.route(tag) {
        Route::Listed(_) => "[routing] lists no eval for it".to_string(),
        _ => format!("no [routing] entry and no eval named {tag}"),
    }
}

/// The plan for people (`check --plan`).
pub fn render_text(
    plan: &Plan,
    evals: &Evals,
    c: &Comparison,
    verdict: &Verdict,
    s: Style,
) -> String {
    let mut out = String::new();
    if verdict.plan.is_empty() {
        let why = if c.findings.is_empty() {
            "no drift".to_string()
        } else if verdict.failing.is_empty() {
            format!(
                "{}, none failing the policy",
                plural_of(c.findings.len(), "finding", "findings")
            )
        } else {
            "the failing findings ask for no re-run".to_string()
        };
        let _ = writeln!(out, "no evals to run: {why}");
        return out;
    }
    let count = match plan.evals.len() {
        0 => "no eval".to_string(),
        n => plural_of(n, "eval", "evals"),
    };
    let _ = writeln!(
        out,
        "{} {count} for {}",
        s.bold("plan:"),
        plural_of(plan.finding_count(), "failing finding", "failing findings"),
    );
    for (name, planned) in &plan.evals {
        let _ = writeln!(out, "\n{}", s.bold(&format!("eval {name}")));
        if let Some(eval) = evals.evals.get(name) {
            let _ = writeln!(out, "  run   {}", printable(&eval.run, false));
        }
        let _ = writeln!(out, "  tags  {}", planned.tags.join(", "));
        for &i in &planned.findings {
            push_finding(&mut out, c.findings.get(i), s);
        }
    }
    for (tag, findings) in &plan.unrouted {
        let _ = writeln!(
            out,
            "\n{} {tag} ({})",
            s.bold(&s.yellow("not routed:")),
            unrouted_reason(evals, tag)
        );
        for &i in findings {
            push_finding(&mut out, c.findings.get(i), s);
        }
    }
    out
}

fn push_finding(out: &mut String, f: Option<&Finding>, s: Style) {
    let Some(f) = f else { return };
    let sev = format!("{:<8}", f.severity.name());
    let sev = match f.severity {
        toolpin_drift::Severity::Critical | toolpin_drift::Severity::High => s.red(&sev),
        toolpin_drift::Severity::Medium => s.yellow(&sev),
        _ => s.dim(&sev),
    };
    let pointer = if f.pointer.is_empty() {
        String::new()
    } else {
        format!("  {}", s.dim(&printable(&f.pointer, false)))
    };
    let _ = writeln!(
        out,
        "  {sev}  {}  {}{pointer}",
        f.rule,
        printable(&finding_place(f), false)
    );
}

/// `server/tool`, or `server` for a finding about the server itself.
fn finding_place(f: &Finding) -> String {
    if f.tool.is_empty() {
        f.server.clone()
    } else {
        format!("{}/{}", f.server, f.tool)
    }
}

fn finding_json(c: &Comparison, i: usize) -> Value {
    match c.findings.get(i) {
        Some(f) => json!({
            "finding": i,
            "rule": f.rule,
            "server": f.server,
            "tool": f.tool,
            "pointer": f.pointer,
            "severity": f.severity,
            "message": f.message,
            "rerun": f.rerun,
        }),
        None => json!({ "finding": i }),
    }
}

/// The plan document (`check --plan --format json`, and `plan` in
/// `summary.json`); its shape is in docs/evals.md.
pub fn plan_json(plan: &Plan, evals: &Evals, c: &Comparison, verdict: &Verdict) -> Value {
    let planned: Vec<Value> = plan
        .evals
        .iter()
        .map(|(name, p)| {
            let eval = evals.evals.get(name);
            json!({
                "eval": name,
                "run": eval.map(|e| e.run.as_str()),
                "manifest": eval.map(|e| e.manifest.manifest_name()),
                "tags": p.tags,
                "findings": p.findings.iter().map(|&i| finding_json(c, i)).collect::<Vec<_>>(),
            })
        })
        .collect();
    let unrouted: Vec<Value> = plan
        .unrouted
        .iter()
        .map(|(tag, findings)| {
            json!({
                "rerun": tag,
                "findings": findings.iter().map(|&i| finding_json(c, i)).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "fails": verdict.fails,
        "fingerprints": c.fingerprints,
        "evals": planned,
        "unrouted": unrouted,
    })
}

/// `evals list`: the configured evals and where every re-run tag goes.
pub fn render_list(evals: &Evals, s: Style) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", s.bold("evals:"));
    if evals.evals.is_empty() {
        let _ = writeln!(
            out,
            "  none; add an [evals.NAME] table with `run = \"…\"` (docs/evals.md)"
        );
    }
    let width = evals.evals.keys().map(String::len).max().unwrap_or(0);
    for (name, eval) in &evals.evals {
        let mut extra = Vec::new();
        if let Some(t) = eval.timeout {
            extra.push(format!("timeout {t:?}"));
        }
        if !eval.env.is_empty() {
            extra.push(format!(
                "env {}",
                eval.env.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        let extra = if extra.is_empty() {
            String::new()
        } else {
            format!("  {}", s.dim(&format!("({})", extra.join("; "))))
        };
        let _ = writeln!(
            out,
            "  {name:<width$}  {:<9}  {}{extra}",
            eval.manifest.manifest_name(),
            printable(&eval.run, false)
        );
    }
    let _ = writeln!(out, "\n{}", s.bold("routing:"));
    let tags = toolpin_drift::policy::known_tags();
    let width = tags.iter().map(|t| t.len()).max().unwrap_or(0);
    for tag in tags {
        let route = evals.route(tag);
        let names = route.evals().join(", ");
        let line = match route {
            Route::Listed(_) if names.is_empty() => {
                format!("{}  {}", s.yellow("not routed"), s.dim("([routing])"))
            }
            Route::Listed(_) => format!("{names}  {}", s.dim("([routing])")),
            Route::SameName(_) => format!("{names}  {}", s.dim("(same name)")),
            Route::Unrouted => s.yellow("not routed"),
        };
        let _ = writeln!(out, "  {tag:<width$}  {line}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use toolpin_config::Eval;
    use toolpin_manifest::ToolFormat;

    fn evals(names: &[&str], routing: &[(&str, &[&str])]) -> Evals {
        Evals {
            evals: names
                .iter()
                .map(|n| {
                    (
                        n.to_string(),
                        Eval {
                            name: n.to_string(),
                            run: format!("run-{n}"),
                            manifest: ToolFormat::Mcp,
                            cwd: PathBuf::from("."),
                            timeout: None,
                            env: BTreeMap::new(),
                        },
                    )
                })
                .collect(),
            routing: routing
                .iter()
                .map(|(t, ns)| (t.to_string(), ns.iter().map(|n| n.to_string()).collect()))
                .collect(),
        }
    }

    fn verdict(plan: &[(&'static str, &[usize])]) -> Verdict {
        Verdict {
            fails: true,
            plan: plan.iter().map(|(t, f)| (*t, f.to_vec())).collect(),
            ..Verdict::default()
        }
    }

    #[test]
    fn default_routing_is_the_same_name_and_the_rest_is_unrouted() {
        let v = verdict(&[("trajectory", &[0, 2]), ("tool-cases", &[1])]);
        let plan = Plan::new(&v, &evals(&["trajectory"], &[]));
        assert_eq!(plan.evals.keys().collect::<Vec<_>>(), vec!["trajectory"]);
        assert_eq!(plan.evals["trajectory"].findings, vec![0, 2]);
        assert_eq!(plan.unrouted, BTreeMap::from([("tool-cases", vec![1])]));
    }

    #[test]
    fn explicit_routing_merges_tags_and_counts_each_finding_once() {
        let v = verdict(&[
            ("budget", &[0]),
            ("selection", &[0, 3]),
            ("trajectory", &[0, 1]),
            ("red-team", &[3]),
        ]);
        let e = evals(
            &["trajectory", "redteam", "selection"],
            &[
                ("budget", &["trajectory"]),
                ("selection", &["trajectory", "selection"]),
                ("red-team", &["redteam"]),
                // Listed as empty: routed nowhere, though an eval has the name.
                ("trajectory", &[]),
            ],
        );
        let plan = Plan::new(&v, &e);
        assert_eq!(
            plan.evals["trajectory"],
            Planned {
                tags: vec!["budget", "selection"],
                findings: vec![0, 3]
            }
        );
        assert_eq!(
            plan.evals["selection"],
            Planned {
                tags: vec!["selection"],
                findings: vec![0, 3]
            }
        );
        assert_eq!(
            plan.evals["redteam"],
            Planned {
                tags: vec!["red-team"],
                findings: vec![3]
            }
        );
        assert_eq!(plan.unrouted, BTreeMap::from([("trajectory", vec![0, 1])]));
        assert_eq!(plan.finding_count(), 3);
        assert_eq!(
            unrouted_reason(&e, "trajectory"),
            "[routing] lists no eval for it"
        );
        assert_eq!(
            unrouted_reason(&e, "authz"),
            "no [routing] entry and no eval named authz"
        );
    }
}
