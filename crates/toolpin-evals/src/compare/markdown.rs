//! The comparison for the pull request that moves the pin: the numbers a
//! review needs, within GitHub's comment budget.

use std::fmt::Write;

use super::text::{
    group_title, method_line, num, pct, points, record, repeats, signed, verdict_reason,
};
use super::{Flip, PassChange, Report, ToolGroup, Verdict};
use crate::verdict::Outcome;

/// GitHub refuses comments past 65,536 characters; leave room for a
/// wrapper around ours.
pub const BUDGET: usize = 60_000;

/// Markdown table cells: no pipes, no newlines, no HTML.
fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '`' => out.push('\''),
            '\n' | '\r' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The comment, with the outcome [`crate::verdict::decide`] gave the
/// comparison.
pub fn render(r: &Report, outcome: &Outcome) -> String {
    // Case lists shrink until the whole fits the budget.
    for per_group in [50usize, 20, 8, 3, 0] {
        let text = render_with(r, outcome, per_group);
        if text.len() <= BUDGET {
            return text;
        }
    }
    let mut text = render_with(r, outcome, 0);
    let mut cut = BUDGET.saturating_sub(200);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(
        "\n\n… cut to fit a comment; the JSON report (`--format json`) has everything.\n",
    );
    text
}

fn render_with(r: &Report, outcome: &Outcome, per_group: usize) -> String {
    let mut t = String::new();
    summary(&mut t, r, outcome);
    new_names(&mut t, r);
    flips(&mut t, r, per_group);
    one_sided(&mut t, r, per_group);
    moved_tools(&mut t, r);
    t
}

/// The headline, the reason and the table of pass rate and metrics.
fn summary(t: &mut String, r: &Report, outcome: &Outcome) {
    let p = &r.pass;
    let (icon, headline) = match r.verdict {
        _ if outcome.regressed() => ("🔴", "regression"),
        Verdict::Improvement => ("🟢", r.verdict.label()),
        _ => ("⚪", r.verdict.label()),
    };
    let _ = writeln!(t, "### {icon} toolpin compare: {headline}\n");
    let reason = format!("{}. The test: {}", outcome.reason, verdict_reason(r));
    let mut chars = reason.chars();
    let reason: String = chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default();
    let _ = writeln!(t, "{reason}.\n");
    let _ = writeln!(t, "| | before | after | change | 95% interval |");
    let _ = writeln!(t, "|---|---:|---:|---:|---|");
    rate_row(t, "pass rate", p);
    if let Some(aa) = &r.aa {
        rate_row(t, "A/A (no change)", aa);
    }
    for m in &r.metrics {
        let _ = writeln!(
            t,
            "| {} (median) | {} | {} | {} | {} to {} |",
            m.metric.label(),
            num(m.before_median),
            num(m.after_median),
            signed(m.change.estimate),
            signed(m.change.low),
            signed(m.change.high)
        );
    }
    let _ = writeln!(
        t,
        "\n{} cases ({} paired), {} before and {} after; {}. Detectable with this many: {} points. Seed {}, {} resamples.\n",
        r.cases.len(),
        p.paired,
        repeats(r.repeats[0]),
        repeats(r.repeats[1]),
        method_line(p),
        points(r.detectable).trim_start_matches('+'),
        r.options.seed,
        r.options.resamples,
    );
}

/// The tool names never seen before.
fn new_names(t: &mut String, r: &Report) {
    if !r.new_names.is_empty() {
        let _ = writeln!(t, "**New tool names** (the check fails until each is acknowledged with `toolpin accept --seen-tool NAME --reason …`):\n");
        for n in &r.new_names {
            let what = match n.hallucinated {
                Some(true) => " — in neither catalog: made up",
                _ => "",
            };
            let _ = writeln!(t, "- `{}`{what}, in {} cases", cell(&n.name), n.cases.len());
        }
        let _ = writeln!(t);
    }
}

/// A pass-rate row of the table.
fn rate_row(t: &mut String, label: &str, p: &PassChange) {
    let _ = writeln!(
        t,
        "| {label} | {} | {} | {} pts | {} to {} |",
        pct(p.before),
        pct(p.after),
        points(p.delta.estimate),
        points(p.delta.low),
        points(p.delta.high)
    );
}

/// The new failures and new passes, each group with at most
/// `per_group` cases.
fn flips(t: &mut String, r: &Report, per_group: usize) {
    for (flip, groups, what) in [
        (Flip::NewFailure, &r.failures, "new failures"),
        (Flip::NewPass, &r.passes, "new passes"),
    ] {
        let total = r.case_ids(flip).len();
        if total == 0 {
            continue;
        }
        let _ = writeln!(
            t,
            "<details{}><summary><b>{total} {what}</b></summary>\n",
            if flip == Flip::NewFailure {
                " open"
            } else {
                ""
            }
        );
        for g in groups.iter() {
            group(t, r, g, total, what, per_group);
        }
        let _ = writeln!(t, "</details>\n");
    }
}

/// The cases that ran on one side only.
fn one_sided(t: &mut String, r: &Report, per_group: usize) {
    for (flip, what) in [
        (Flip::OnlyBefore, "only before"),
        (Flip::OnlyAfter, "only after"),
    ] {
        let ids = r.case_ids(flip);
        if ids.is_empty() {
            continue;
        }
        let shown: Vec<String> = ids
            .iter()
            .take(per_group.max(10))
            .map(|i| format!("`{}`", cell(&r.cases[*i].id)))
            .collect();
        let more = ids.len() - shown.len();
        let _ = writeln!(
            t,
            "**{} cases {what}**: {}{}\n",
            ids.len(),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        );
    }
}

/// The tools whose calls per run moved most.
fn moved_tools(t: &mut String, r: &Report) {
    let moved = r.moved_most();
    if !moved.is_empty() {
        let _ = writeln!(t, "| tool | calls per run before | after | change |");
        let _ = writeln!(t, "|---|---:|---:|---:|");
        for m in moved {
            let _ = writeln!(
                t,
                "| `{}` | {} | {} | {} |",
                cell(r.names.name(m.tool)),
                num(m.before),
                num(m.after),
                signed(m.delta())
            );
        }
        let _ = writeln!(t);
    }
}

fn group(t: &mut String, r: &Report, g: &ToolGroup, total: usize, what: &str, per_group: usize) {
    let listed = if g.cases.is_empty() {
        " (each listed above)"
    } else {
        ""
    };
    let _ = writeln!(t, "**{}**{listed}\n", cell(&group_title(r, g, total, what)));
    if per_group == 0 || g.cases.is_empty() {
        return;
    }
    let _ = writeln!(t, "| case | before | after | calls before → after |");
    let _ = writeln!(t, "|---|---:|---:|---|");
    for i in g.cases.iter().take(per_group) {
        let c = &r.cases[*i];
        let calls = match (super::text::calls(c, false), super::text::calls(c, true)) {
            (Some(b), Some(a)) => format!("{b} → {a}"),
            _ => String::new(),
        };
        let _ = writeln!(
            t,
            "| `{}` | {} | {} | {calls} |",
            cell(&c.id),
            record(c, false),
            record(c, true)
        );
    }
    if g.cases.len() > per_group {
        let _ = writeln!(
            t,
            "\n… and {} more under this tool.",
            g.cases.len() - per_group
        );
    }
    let _ = writeln!(t);
}
