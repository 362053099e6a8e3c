//! The human report: grouped by tool, most severe first, with before/after
//! values shown like a diff.

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::Value;
use toolpin_drift::policy::Verdict;
use toolpin_drift::{Comparison, Finding, Severity};

use crate::style::{printable, Style};

/// What the two sides of the comparison are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sides {
    /// `toolpin check`: the lockfile against a fresh capture.
    LockfileAndLive,
    /// `toolpin diff`: any two catalogs.
    TwoCatalogs,
}

/// Options for the text report.
#[derive(Clone, Copy, Debug)]
pub struct TextOptions {
    pub style: Style,
    pub sides: Sides,
    /// Show whole values, however long.
    pub verbose: bool,
}

/// Longest value shown without `-v`, in lines.
const MAX_LINES: usize = 12;

pub fn render(c: &Comparison, verdict: &Verdict, opts: TextOptions) -> String {
    let s = opts.style;
    let mut out = String::new();
    if !verdict.fails {
        let what = match opts.sides {
            Sides::LockfileAndLive => "catalog matches the lockfile",
            Sides::TwoCatalogs => "the two catalogs match",
        };
        let sm = &c.summary;
        let tools = sm.tools_unchanged + sm.tools_changed + sm.tools_added;
        let _ = writeln!(
            out,
            "{} {what} ({tools} tool{}, tools {})",
            s.green("ok:"),
            if tools == 1 { "" } else { "s" },
            &c.fingerprints.after[..12]
        );
        if c.is_clean() {
            return out;
        }
    } else {
        push_drift_header(&mut out, c, s);
    }
    push_groups(&mut out, c, verdict, opts);
    push_plan(&mut out, c, verdict, s);
    out
}

/// Only the findings, grouped by tool as in [`render`], without the
/// summary header or the re-run plan: for showing one change at a time
/// (`toolpin review`).
pub fn render_findings(c: &Comparison, verdict: &Verdict, opts: TextOptions) -> String {
    let mut out = String::new();
    push_groups(&mut out, c, verdict, opts);
    out
}

/// The evals to re-run: the union of the routing of failing findings, each
/// with the tools that pull it in.
fn push_plan(out: &mut String, c: &Comparison, verdict: &Verdict, s: Style) {
    if verdict.plan.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{}", s.bold("re-run:"));
    for (tag, idx) in &verdict.plan {
        let mut tools: Vec<&str> = idx
            .iter()
            .map(|i| c.findings[*i].tool.as_str())
            .filter(|t| !t.is_empty())
            .collect();
        tools.sort_unstable();
        tools.dedup();
        let _ = writeln!(out, "  {:<16} {}", tag, printable(&tools.join(", "), false));
    }
}

fn push_drift_header(out: &mut String, c: &Comparison, s: Style) {
    let sm = &c.summary;
    let _ = writeln!(
        out,
        "{} {} added, {} removed, {} changed ({} finding{})",
        s.bold(&s.red("drift:")),
        sm.tools_added,
        sm.tools_removed,
        sm.tools_changed,
        sm.findings,
        if sm.findings == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        out,
        "catalog {} → {}",
        &c.fingerprints.before[..16],
        &c.fingerprints.after[..16]
    );
}

/// A finding and its index in the comparison.
type Indexed<'c> = (usize, &'c Finding);

fn push_groups(out: &mut String, c: &Comparison, verdict: &Verdict, opts: TextOptions) {
    let s = opts.style;
    // Group findings by tool (server-level findings have no tool and group
    // by server); the most severe tool first, then by name.
    // Each finding keeps its index, which the verdict refers to. Groups are
    // found through a map, not a scan per finding: a catalog or a tool can
    // have tens of thousands of findings.
    let mut groups: Vec<(&str, &str, Vec<Indexed>)> = Vec::new();
    let mut group_of: HashMap<(&str, &str), usize> = HashMap::new();
    for (i, f) in c.findings.iter().enumerate() {
        let g = *group_of
            .entry((f.server.as_str(), f.tool.as_str()))
            .or_insert_with(|| {
                groups.push((&f.server, &f.tool, Vec::new()));
                groups.len() - 1
            });
        groups[g].2.push((i, f));
    }
    let worst = |fs: &[Indexed]| {
        fs.iter()
            .map(|(_, f)| f.severity)
            .min()
            .unwrap_or(Severity::Info)
    };
    groups.sort_by(|a, b| worst(&a.2).cmp(&worst(&b.2)).then(a.1.cmp(b.1)));

    for (server, tool, mut findings) in groups {
        findings
            .sort_by(|(_, a), (_, b)| a.severity.cmp(&b.severity).then(a.pointer.cmp(&b.pointer)));
        let title = if tool.is_empty() {
            printable(&format!("server {server}"), false).into_owned()
        } else {
            printable(&format!("{server}/{tool}"), false).into_owned()
        };
        let _ = writeln!(out, "\n{}", s.bold(&title));
        for (index, f) in findings {
            let sev = severity_label(f.severity, s);
            let where_ = if f.pointer.is_empty() {
                String::new()
            } else {
                format!("  {}", s.dim(&printable(&f.pointer, false)))
            };
            // Both lists are in index order (policy.rs builds them so).
            let ignored = verdict
                .ignored
                .binary_search_by_key(&index, |(i, _)| *i)
                .ok()
                .and_then(|k| verdict.ignored.get(k));
            let note = match ignored {
                Some((_, reason)) => format!(
                    "  {}",
                    s.dim(&printable(&format!("(ignored: {reason})"), false))
                ),
                None if verdict.failing.binary_search(&index).is_err() => {
                    format!("  {}", s.dim("(does not fail)"))
                }
                None => String::new(),
            };
            let flag = if f.security {
                format!("  {}", s.red("security"))
            } else {
                String::new()
            };
            let _ = writeln!(out, "  {sev}  {}{where_}{flag}{note}", f.rule);
            let _ = writeln!(out, "    {}", printable(&f.message, false));
            // Prose is shown as text; any other value as JSON, so that
            // "50" and 50 look different.
            let prose = f.pointer.ends_with("/description") || f.pointer.ends_with("/title");
            if let Some(b) = &f.before {
                push_value(out, "-", b, prose, opts, |t| s.red(t));
            }
            if let Some(a) = &f.after {
                push_value(out, "+", a, prose, opts, |t| s.green(t));
            }
        }
    }
}

fn severity_label(sev: Severity, s: Style) -> String {
    let padded = format!("{:<8}", sev.name());
    match sev {
        Severity::Critical | Severity::High => s.red(&padded),
        Severity::Medium => s.yellow(&padded),
        Severity::Low | Severity::Info => s.dim(&padded),
    }
}

fn push_value(
    out: &mut String,
    sign: &str,
    v: &Value,
    prose: bool,
    opts: TextOptions,
    paint: impl Fn(&str) -> String,
) {
    let text: String = match v {
        Value::String(s) if prose => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    let text = printable(&text, true);
    let lines: Vec<&str> = text.lines().collect();
    let shown = if opts.verbose {
        lines.len()
    } else {
        lines.len().min(MAX_LINES)
    };
    for line in &lines[..shown] {
        let _ = writeln!(out, "    {}", paint(&format!("{sign} {line}")));
    }
    if shown < lines.len() {
        let _ = writeln!(
            out,
            "    {}",
            opts.style.dim(&format!(
                "  … {} more lines (-v shows all)",
                lines.len() - shown
            ))
        );
    }
    if lines.is_empty() {
        let _ = writeln!(out, "    {}", paint(&format!("{sign} \"\"")));
    }
}
