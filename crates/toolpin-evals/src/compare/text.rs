//! The comparison for a terminal: the verdict first, then the flipped cases
//! grouped by tool, then tool calls, turns and cost, then new tool names.

use std::fmt::Write;

use toolpin_report::style::printable;
use toolpin_report::Style;

use super::{Case, Flip, Method, PassChange, Report, ToolGroup, Verdict};
use crate::verdict::Outcome;

/// Percent with one decimal.
pub(crate) fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// A change in percentage points, signed.
pub(crate) fn points(x: f64) -> String {
    let v = x * 100.0;
    let v = if v.abs() < 0.05 { 0.0 } else { v };
    format!("{}{:.1}", sign(v), v.abs())
}

fn sign(v: f64) -> &'static str {
    if v > 0.0 {
        "+"
    } else if v < 0.0 {
        "−"
    } else {
        "±"
    }
}

/// A number as short as it reads: integers without decimals, else up to
/// three significant decimals.
pub(crate) fn num(x: f64) -> String {
    let a = x.abs();
    if (x == x.round() && a < 1e12) || a >= 100.0 {
        format!("{}", x.round() as i64)
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        // Three significant digits: 0.0063, 0.0201.
        let digits = (2 - a.log10().floor() as i32).clamp(3, 12) as usize;
        format!("{x:.digits$}")
    }
}

pub(crate) fn signed(x: f64) -> String {
    let n = num(x.abs());
    if n == "0" {
        return "±0".into();
    }
    format!("{}{n}", sign(x))
}

pub(crate) fn p_value(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

pub(crate) fn method_line(c: &PassChange) -> String {
    match c.method {
        Method::McNemar {
            to_failing,
            to_passing,
        } => format!(
            "exact McNemar on {to_failing} new failures vs {to_passing} new passes, {}",
            p_value(c.p_value)
        ),
        Method::Permutation => format!(
            "paired permutation test over {} cases, {}; interval by paired bootstrap",
            c.paired,
            p_value(c.p_value)
        ),
    }
}

/// "3/5" passes over runs.
pub(crate) fn record(case: &Case, after: bool) -> String {
    let side = if after { &case.after } else { &case.before };
    match side {
        Some(t) => format!("{}/{}", t.passes, t.runs),
        None => "—".into(),
    }
}

pub(crate) fn calls(case: &Case, after: bool) -> Option<String> {
    let side = if after { &case.after } else { &case.before };
    side.as_ref()
        .and_then(|t| t.per_run(super::Metric::ToolCalls))
        .map(num)
}

pub(crate) fn group_title(r: &Report, g: &ToolGroup, of: usize, what: &str) -> String {
    match g.tool {
        None => format!("{} of {of} {what} recorded no tool calls", g.touched),
        Some(t) => {
            let mut line = format!("{} of {of} {what} called {}", g.touched, r.names.name(t));
            if let Some(d) = &g.drift {
                let _ = write!(
                    line,
                    ", which drifted: {} ({})",
                    d.rules.join(", "),
                    d.severity.name()
                );
            } else if r.catalogs {
                line.push_str(" (no drift)");
            }
            line
        }
    }
}

/// The verdict and the numbers behind it, shared by text and Markdown.
pub(crate) fn verdict_reason(r: &Report) -> String {
    let p = &r.pass;
    match r.verdict {
        Verdict::Regression | Verdict::Improvement => {
            let test = match p.method {
                Method::McNemar { .. } => "the exact McNemar test",
                Method::Permutation => "the paired permutation test",
            };
            let beyond = if r.aa.is_some() {
                " and the change is beyond the A/A spread"
            } else {
                ""
            };
            format!(
                "{test} rejects no change at 5% ({}){beyond}",
                p_value(p.p_value)
            )
        }
        Verdict::Untested => format!(
            "{} changed, and a test at 5% needs {} or more ({} at best)",
            if p.changed == 1 {
                "1 case".to_string()
            } else {
                format!("{} cases", p.changed)
            },
            super::stats::MIN_FLIPS,
            p_value((2.0 * 0.5f64.powi(p.changed as i32)).min(1.0))
        ),
        Verdict::Noise => {
            if p.significant {
                "the change is within the A/A spread".into()
            } else {
                format!(
                    "no change cannot be ruled out at 5% ({})",
                    p_value(p.p_value)
                )
            }
        }
    }
}

/// The outcome line: what decided, and what was seen.
pub(crate) fn outcome_line(o: &Outcome) -> String {
    format!(
        "{}: {}",
        if o.regressed() {
            "regression"
        } else {
            "no regression"
        },
        o.reason
    )
}

/// The comparison, with the outcome [`crate::verdict::decide`] gave it.
pub fn render(r: &Report, outcome: &Outcome, s: Style) -> String {
    let mut t = String::new();
    summary(&mut t, r, outcome, s);
    flips(&mut t, r, s);
    one_sided(&mut t, r, s);
    metrics(&mut t, r);
    moved_tools(&mut t, r, s);
    new_names(&mut t, r, s);
    t
}

/// The header: pass rate, A/A spread, verdict, outcome, what is detectable.
fn summary(t: &mut String, r: &Report, outcome: &Outcome, s: Style) {
    let p = &r.pass;
    let _ = writeln!(
        t,
        "{} {} cases ({} paired), {} before, {} after; seed {}, {} resamples",
        s.bold("compare:"),
        r.cases.len(),
        p.paired,
        repeats(r.repeats[0]),
        repeats(r.repeats[1]),
        r.options.seed,
        r.options.resamples
    );
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "pass rate   {} → {}  change {} points  [95% {}, {}]",
        pct(p.before),
        pct(p.after),
        points(p.delta.estimate),
        points(p.delta.low),
        points(p.delta.high)
    );
    let _ = writeln!(t, "            {}", method_line(p));
    if let Some(aa) = &r.aa {
        let _ = writeln!(
            t,
            "A/A spread  {} points  [95% {}, {}]  {}, {}; {} before vs {} more of the same catalog",
            points(aa.delta.estimate),
            points(aa.delta.low),
            points(aa.delta.high),
            p_value(aa.p_value),
            if aa.significant {
                "significant: the harness moves with no change at all"
            } else {
                "not significant"
            },
            repeats(r.repeats[0]),
            r.aa_repeats
        );
    }
    let verdict = match r.verdict {
        Verdict::Regression => s.bold(&s.red(r.verdict.label())),
        Verdict::Improvement => s.green(r.verdict.label()),
        Verdict::Noise | Verdict::Untested => r.verdict.label().to_string(),
    };
    let _ = writeln!(t, "verdict     {verdict}: {}", verdict_reason(r));
    let line = outcome_line(outcome);
    let line = if outcome.regressed() {
        s.bold(&s.red(&line))
    } else {
        line
    };
    let _ = writeln!(t, "outcome     {line}");
    let _ = writeln!(
        t,
        "detectable  a change of {} points or more, with {} cases × {}",
        points(r.detectable).trim_start_matches('+'),
        p.paired,
        repeats(r.repeats[0].min(r.repeats[1]))
    );
}

/// The new failures and new passes, grouped.
fn flips(t: &mut String, r: &Report, s: Style) {
    for (flip, groups, what) in [
        (Flip::NewFailure, &r.failures, "new failures"),
        (Flip::NewPass, &r.passes, "new passes"),
    ] {
        let total = r.case_ids(flip).len();
        let _ = writeln!(t);
        if total == 0 {
            let _ = writeln!(t, "{}: none", s.bold(what));
            continue;
        }
        let _ = writeln!(
            t,
            "{}: {total} ({})",
            s.bold(what),
            if flip == Flip::NewFailure {
                "passed before, fail after"
            } else {
                "failed before, pass after"
            }
        );
        for g in groups.iter() {
            let title = group_title(r, g, total, what);
            let listed = if g.cases.is_empty() {
                " (each listed above)"
            } else {
                ""
            };
            let _ = writeln!(t, "  {}{listed}", printable(&title, false));
            for i in &g.cases {
                let _ = writeln!(t, "    {}", case_line(&r.cases[*i]));
            }
        }
    }
}

/// The cases that ran on one side only.
fn one_sided(t: &mut String, r: &Report, s: Style) {
    for (flip, what) in [
        (Flip::OnlyBefore, "only before"),
        (Flip::OnlyAfter, "only after"),
    ] {
        let ids = r.case_ids(flip);
        if ids.is_empty() {
            continue;
        }
        let _ = writeln!(t);
        let _ = writeln!(
            t,
            "{}: {} cases ran on one side only",
            s.bold(what),
            ids.len()
        );
        for i in ids {
            let _ = writeln!(t, "    {}", case_line(&r.cases[i]));
        }
    }
}

/// The metrics' medians and their change.
fn metrics(t: &mut String, r: &Report) {
    if !r.metrics.is_empty() {
        let _ = writeln!(t);
        let width = r
            .metrics
            .iter()
            .map(|m| m.metric.label().len())
            .max()
            .unwrap_or(0);
        for m in &r.metrics {
            let _ = writeln!(
                t,
                "{:<width$}  median {} → {}  change {} [95% {}, {}] over {} cases",
                m.metric.label(),
                num(m.before_median),
                num(m.after_median),
                signed(m.change.estimate),
                signed(m.change.low),
                signed(m.change.high),
                m.cases,
            );
        }
    }
}

/// The tools whose calls per run moved most.
fn moved_tools(t: &mut String, r: &Report, s: Style) {
    let moved = r.moved_most();
    if !moved.is_empty() {
        let _ = writeln!(t);
        let _ = writeln!(t, "{}", s.bold("calls per run that moved most:"));
        let width = moved
            .iter()
            .map(|m| r.names.name(m.tool).chars().count())
            .max()
            .unwrap_or(0);
        for m in moved {
            let _ = writeln!(
                t,
                "  {:<width$}  {} → {}  ({})",
                printable(r.names.name(m.tool), false),
                num(m.before),
                num(m.after),
                signed(m.delta())
            );
        }
    }
}

/// The tool names never seen before.
fn new_names(t: &mut String, r: &Report, s: Style) {
    let _ = writeln!(t);
    if r.new_names.is_empty() {
        let _ = writeln!(t, "new tool names: none");
    } else {
        let _ = writeln!(
            t,
            "{} {} never seen before (exit 1 until acknowledged)",
            s.bold(&s.red("new tool names:")),
            r.new_names.len()
        );
        for n in &r.new_names {
            let what = match n.hallucinated {
                Some(true) => "in neither catalog: the agent made it up",
                Some(false) => "in the catalog",
                None => "no catalogs given to check it against",
            };
            let _ = writeln!(
                t,
                "  {}  {what}; emitted in {}",
                printable(&n.name, false),
                cases_phrase(r, &n.cases)
            );
        }
        let _ = writeln!(
            t,
            "  acknowledge with: toolpin accept --seen-tool NAME --reason \"…\""
        );
    }
}

fn cases_phrase(r: &Report, cases: &[usize]) -> String {
    let shown: Vec<&str> = cases
        .iter()
        .take(5)
        .map(|i| r.cases[*i].id.as_str())
        .collect();
    let more = cases.len().saturating_sub(5);
    let mut text = printable(&shown.join(", "), false).into_owned();
    if more > 0 {
        let _ = write!(text, " and {more} more");
    }
    text
}

fn case_line(case: &Case) -> String {
    let mut line = format!(
        "{}  {} → {}",
        printable(&case.id, false),
        record(case, false),
        record(case, true)
    );
    match (calls(case, false), calls(case, true)) {
        (Some(b), Some(a)) => {
            let _ = write!(line, "  calls {b} → {a}");
        }
        (Some(b), None) => {
            let _ = write!(line, "  calls {b}");
        }
        (None, Some(a)) => {
            let _ = write!(line, "  calls {a}");
        }
        (None, None) => {}
    }
    let error = case
        .after
        .as_ref()
        .and_then(|t| t.error.as_deref())
        .or_else(|| case.before.as_ref().and_then(|t| t.error.as_deref()));
    if let Some(e) = error {
        let e: String = e.chars().take(120).collect();
        let _ = write!(line, "  ({})", printable(&e, false));
    }
    line
}

pub(crate) fn repeats(n: usize) -> String {
    format!("{n} {}", if n == 1 { "repeat" } else { "repeats" })
}
