//! The human report: a summary when there is much to read, each repeated
//! change once (a cluster, with its tools collapsed), then the findings
//! grouped by tool, most severe first, with before/after values shown like
//! a diff. A large report shows only its most severe details unless `-v`.

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::Value;
use toolpin_drift::cluster::{clusters, membership, Cluster};
use toolpin_drift::policy::Verdict;
use toolpin_drift::{Comparison, Finding, Severity};

use toolpin_manifest::text::plural;

use crate::style::{printable, Style};
use crate::summary;

/// What the two sides of the comparison are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sides {
    /// `toolpin check`: the lockfile against a fresh capture.
    LockfileAndLive,
    /// `toolpin diff`: any two catalogs.
    TwoCatalogs,
    /// `toolpin contract run`: the behaviour snapshot against fresh calls.
    SnapshotAndLive,
}

impl Sides {
    /// What the comparison is of, for a report's title: `tool` drift (the
    /// declarations) or `behaviour` drift (what the calls did).
    pub fn drift_of(self) -> &'static str {
        match self {
            Sides::SnapshotAndLive => "behaviour",
            _ => "tool",
        }
    }

    /// What the fingerprints in [`Comparison::fingerprints`] are of.
    pub fn fingerprinted(self) -> &'static str {
        match self {
            Sides::SnapshotAndLive => "behaviour",
            _ => "catalog",
        }
    }
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

/// Longest value shown without `-v` in a report past [`MAX_DETAILED`]
/// findings, where many values are shown.
const MAX_LINES_LARGE: usize = 6;

/// Findings shown in detail without `-v`; past this, the least severe are
/// counted instead (a cluster counts once).
pub const MAX_DETAILED: usize = 200;

/// Findings from which the report opens with a summary.
const SUMMARY_FROM: usize = 20;

/// Tools named in a cluster before the rest are counted.
const CLUSTER_TOOLS: usize = 5;

/// Tools listed as most at risk in the summary.
const AT_RISK: usize = 5;

pub fn render(c: &Comparison, verdict: &Verdict, opts: TextOptions) -> String {
    let s = opts.style;
    let mut out = String::new();
    if !verdict.fails {
        let (what, fingerprinted) = match opts.sides {
            Sides::LockfileAndLive => ("catalog matches the lockfile", "tools"),
            Sides::TwoCatalogs => ("the two catalogs match", "tools"),
            Sides::SnapshotAndLive => ("the live tools behave as recorded", "behaviour"),
        };
        let sm = &c.summary;
        let tools = sm.tools_unchanged + sm.tools_changed + sm.tools_added;
        let _ = writeln!(
            out,
            "{} {what} ({tools} tool{}, {fingerprinted} {})",
            s.green("ok:"),
            if tools == 1 { "" } else { "s" },
            c.fingerprints
                .after
                .get(..12)
                .unwrap_or(&c.fingerprints.after)
        );
        if c.is_clean() {
            return out;
        }
    } else {
        push_drift_header(&mut out, c, s, opts.sides);
    }
    let clusters = clusters(&c.findings);
    let member = membership(c.findings.len(), &clusters);
    let shown = Shown::choose(c, &clusters, &member, opts.verbose);
    if c.findings.len() >= SUMMARY_FROM || !clusters.is_empty() {
        push_summary(&mut out, c, &clusters, s);
    }
    push_clusters(&mut out, c, &clusters, &shown, opts);
    push_groups_with(&mut out, c, verdict, opts, &clusters, &member, Some(&shown));
    push_left_out(&mut out, c, &shown, s);
    push_plan(&mut out, c, verdict, s, opts.verbose);
    out
}

/// Which findings and clusters are shown in detail. With `-v`, all;
/// otherwise items (a cluster counting once) most severe first, clusters
/// before single findings of the same severity, until [`MAX_DETAILED`], and
/// every critical one whatever the count.
struct Shown {
    findings: Vec<bool>,
    clusters: Vec<bool>,
}

impl Shown {
    fn choose(
        c: &Comparison,
        clusters: &[Cluster],
        member: &[Option<usize>],
        verbose: bool,
    ) -> Self {
        let mut shown = Shown {
            findings: vec![verbose; c.findings.len()],
            clusters: vec![verbose; clusters.len()],
        };
        if verbose {
            return shown;
        }
        // (severity, single finding after clusters, position) for each item.
        let mut items: Vec<(Severity, bool, usize)> = clusters
            .iter()
            .enumerate()
            .map(|(k, cluster)| (cluster.severity, false, k))
            .chain(
                c.findings
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| member[*i].is_none())
                    .map(|(i, f)| (f.severity, true, i)),
            )
            .collect();
        items.sort_unstable();
        for (n, (severity, single, at)) in items.into_iter().enumerate() {
            if n >= MAX_DETAILED && severity != Severity::Critical {
                break;
            }
            if single {
                shown.findings[at] = true;
            } else {
                shown.clusters[at] = true;
                for &i in &clusters[at].findings {
                    shown.findings[i] = true;
                }
            }
        }
        shown
    }
}

/// Counts by severity and by rule family, the clusters, and the tools most
/// at risk.
fn push_summary(out: &mut String, c: &Comparison, clusters: &[Cluster], s: Style) {
    let _ = writeln!(out, "\n{}", s.bold("summary:"));
    let by_severity = summary::words(&summary::counts(&c.findings), Severity::ALL.len());
    let _ = writeln!(out, "  by severity   {}", by_severity.join(", "));
    let families: Vec<String> = summary::by_family(c)
        .iter()
        .map(|(family, n)| format!("{n} {}", family.name))
        .collect();
    let _ = writeln!(out, "  by family     {}", families.join(", "));
    if let Some(largest) = clusters.iter().max_by_key(|k| (k.tools, k.findings.len())) {
        let held: usize = clusters.iter().map(|k| k.findings.len()).sum();
        let _ = writeln!(
            out,
            "  repeated      {} in {} (largest: {} {} in {})",
            plural(held, "finding"),
            plural(clusters.len(), "cluster"),
            largest.rule,
            printable(&largest.pointer, false),
            plural(largest.tools, "tool"),
        );
    }
    let ranked = summary::at_risk(c);
    if ranked.len() > 1 {
        let at_risk: Vec<String> = ranked
            .iter()
            .take(AT_RISK)
            .map(|((_, tool), n)| {
                format!(
                    "{} ({})",
                    printable(tool, false),
                    summary::words(n, 2).join(", ")
                )
            })
            .collect();
        let _ = writeln!(out, "  most at risk  {}", at_risk.join(", "));
    }
}

/// Each cluster `shown` holds, once: the change, one member's message
/// and values, and its tools collapsed.
fn push_clusters(
    out: &mut String,
    c: &Comparison,
    clusters: &[Cluster],
    shown: &Shown,
    opts: TextOptions,
) {
    let s = opts.style;
    let listed: Vec<&Cluster> = clusters
        .iter()
        .zip(&shown.clusters)
        .filter(|(_, shown)| **shown)
        .map(|(k, _)| k)
        .collect();
    if listed.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{}", s.bold("repeated changes:"));
    for k in listed {
        let first = &c.findings[k.findings[0]];
        let _ = writeln!(
            out,
            "  {}  {}  {}  {}",
            severity_label(k.severity, s),
            k.rule,
            s.dim(&printable(&k.pointer, false)),
            s.bold(&format!(
                "× {} ({})",
                plural(k.tools, "tool"),
                plural(k.findings.len(), "finding")
            )),
        );
        let _ = writeln!(out, "    {}", printable(&first.message, false));
        push_values(out, first, opts, value_lines(c));
        let tools = summary::tools_of(c, k);
        let names = if opts.verbose || tools.len() <= CLUSTER_TOOLS {
            tools.join(", ")
        } else {
            format!(
                "{} and {} more",
                tools[..CLUSTER_TOOLS].join(", "),
                tools.len() - CLUSTER_TOOLS
            )
        };
        let _ = writeln!(
            out,
            "    {} {}",
            s.dim(&format!("{}:", k.id)),
            printable(&names, false)
        );
    }
}

/// What was left out, and how to see it.
fn push_left_out(out: &mut String, c: &Comparison, shown: &Shown, s: Style) {
    let (left, total) = summary::left_out(c, &shown.findings);
    if total == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "\n{}",
        s.dim(&format!(
            "… {} not shown ({}): -v shows all, --format json writes every finding",
            plural(total, "finding"),
            summary::words(&left, Severity::ALL.len()).join(", ")
        ))
    );
}

/// Only the findings, grouped by tool as in [`render`], without the
/// summary header or the re-run plan: for showing one change at a time
/// (`toolpin review`).
pub fn render_findings(c: &Comparison, verdict: &Verdict, opts: TextOptions) -> String {
    let mut out = String::new();
    push_groups_with(&mut out, c, verdict, opts, &[], &[], None);
    out
}

/// The evals to re-run: the union of the routing of failing findings, each
/// with the tools that pull it in.
/// Tools named per eval tag without `-v`; past this, a count.
const PLAN_TOOLS: usize = 8;

fn push_plan(out: &mut String, c: &Comparison, verdict: &Verdict, s: Style, verbose: bool) {
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
        let names = if verbose || tools.len() <= PLAN_TOOLS {
            tools.join(", ")
        } else {
            format!(
                "{} and {} more",
                tools[..PLAN_TOOLS].join(", "),
                tools.len() - PLAN_TOOLS
            )
        };
        let _ = writeln!(out, "  {:<16} {}", tag, printable(&names, false));
    }
}

fn push_drift_header(out: &mut String, c: &Comparison, s: Style, sides: Sides) {
    let sm = &c.summary;
    let fp = |f: &str| f.get(..16).unwrap_or(f).to_string();
    if sides == Sides::SnapshotAndLive {
        let _ = writeln!(
            out,
            "{} behaviour moved in {} ({} finding{})",
            s.bold(&s.red("drift:")),
            plural(sm.tools_changed, "tool"),
            sm.findings,
            if sm.findings == 1 { "" } else { "s" }
        );
    } else {
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
    }
    let _ = writeln!(
        out,
        "{} {} → {}",
        sides.fingerprinted(),
        fp(&c.fingerprints.before),
        fp(&c.fingerprints.after)
    );
}

/// A finding and its index in the comparison.
type Indexed<'c> = (usize, &'c Finding);

/// The findings grouped by tool. A finding in one of `clusters` is one
/// line naming its cluster (shown above); a finding `shown` leaves out is
/// not listed, nor a tool left with nothing (`None`: every finding).
fn push_groups_with(
    out: &mut String,
    c: &Comparison,
    verdict: &Verdict,
    opts: TextOptions,
    clusters: &[Cluster],
    member: &[Option<usize>],
    shown: Option<&Shown>,
) {
    let s = opts.style;
    let groups = groups_by_tool(c, shown);
    for (server, tool, mut findings) in groups {
        // Repeated findings were shown once, as their clusters: here the
        // tool names them in one line, and a tool with nothing else is not
        // listed again.
        let mut repeated: Vec<&str> = findings
            .iter()
            .filter_map(|(i, _)| member.get(*i).copied().flatten())
            .map(|k| clusters[k].id.as_str())
            .collect();
        repeated.sort_unstable();
        repeated.dedup();
        findings.retain(|(i, _)| member.get(*i).copied().flatten().is_none());
        if findings.is_empty() {
            continue;
        }
        findings
            .sort_by(|(_, a), (_, b)| a.severity.cmp(&b.severity).then(a.pointer.cmp(&b.pointer)));
        let title = if tool.is_empty() {
            printable(&format!("server {server}"), false).into_owned()
        } else {
            printable(&format!("{server}/{tool}"), false).into_owned()
        };
        let _ = writeln!(out, "\n{}", s.bold(&title));
        for (index, f) in findings {
            push_finding(out, c, verdict, opts, (index, f));
        }
        if !repeated.is_empty() {
            let shown: Vec<&str> = repeated.iter().take(CLUSTER_TOOLS).copied().collect();
            let more = repeated.len() - shown.len();
            let _ = writeln!(
                out,
                "  {}",
                s.dim(&format!(
                    "also in {} above: {}{}",
                    plural(repeated.len(), "repeated change"),
                    shown.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                ))
            );
        }
    }
}

/// The findings `shown` leaves in, grouped by tool (server-level findings
/// have no tool and group by server); the most severe tool first, then by
/// name. Each finding keeps its index, which the verdict refers to.
fn groups_by_tool<'c>(
    c: &'c Comparison,
    shown: Option<&Shown>,
) -> Vec<(&'c str, &'c str, Vec<Indexed<'c>>)> {
    // Groups are found through a map, not a scan per finding: a catalog or
    // a tool can have tens of thousands of findings.
    let mut groups: Vec<(&str, &str, Vec<Indexed>)> = Vec::new();
    let mut group_of: HashMap<(&str, &str), usize> = HashMap::new();
    for (i, f) in c.findings.iter().enumerate() {
        if shown.is_some_and(|shown| !shown.findings[i]) {
            continue;
        }
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
    groups
}

/// One finding: severity, rule, pointer, flags and note, its message and
/// its values.
fn push_finding(
    out: &mut String,
    c: &Comparison,
    verdict: &Verdict,
    opts: TextOptions,
    (index, f): Indexed,
) {
    let s = opts.style;
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
    let mut flag = if f.security {
        format!("  {}", s.red("security"))
    } else {
        String::new()
    };
    if !f.model_reads {
        flag.push_str(&format!("  {}", s.dim("runtime only")));
    }
    let _ = writeln!(out, "  {sev}  {}{where_}{flag}{note}", f.rule);
    let _ = writeln!(out, "    {}", printable(&f.message, false));
    push_values(out, f, opts, value_lines(c));
}

/// Lines of a value shown without `-v`: fewer when there are many to show.
fn value_lines(c: &Comparison) -> usize {
    if c.findings.len() > MAX_DETAILED {
        MAX_LINES_LARGE
    } else {
        MAX_LINES
    }
}

/// A finding's before and after values. Prose is shown as text; any other
/// value as JSON, so that "50" and 50 look different.
fn push_values(out: &mut String, f: &Finding, opts: TextOptions, lines: usize) {
    let s = opts.style;
    let prose = f.pointer.ends_with("/description") || f.pointer.ends_with("/title");
    if let Some(b) = &f.before {
        push_value(out, "-", b, prose, opts, lines, |t| s.red(t));
    }
    if let Some(a) = &f.after {
        push_value(out, "+", a, prose, opts, lines, |t| s.green(t));
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
    max_lines: usize,
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
        lines.len().min(max_lines)
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
