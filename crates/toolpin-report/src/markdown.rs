//! The pull-request comment (`--format markdown`): a verdict title, a
//! severity table, on a large change a summary and each repeated change
//! once (a cluster), one collapsible section per tool (most severe first),
//! the re-run plan and the catalog fingerprints. Renders on GitHub.
//!
//! It always fits a comment: GitHub takes 65,536 characters in a comment
//! and 1 MiB in a job summary, so the report is cut to [`MAX_CHARS`] by
//! leaving out the least severe details first, and says what it left out
//! and where everything is.
//!
//! Everything that comes from a server (tool names, pointers, messages,
//! values) is neutralized: inline text has HTML and markdown punctuation
//! escaped and `@` mentions broken; values go in fenced blocks whose fence
//! is longer than any backtick run inside them.

use std::fmt::Write;

use serde_json::Value;
use toolpin_drift::cluster::{clusters, membership, Cluster};
use toolpin_drift::policy::Verdict;
use toolpin_drift::{Comparison, Finding, Severity};

use toolpin_manifest::text::plural;

use crate::style::printable;
use crate::summary;
use crate::text::Sides;

/// Where rule ids link to, relative to the repository root.
pub const RULES_DOC: &str = "docs/rules.md";

/// Longest value shown, in lines, before it is cut with a note.
const MAX_LINES: usize = 40;

/// Longest fenced value, in bytes.
const MAX_BLOCK: usize = 4_000;

/// How much of a value is shown: [`Limits::FULL`] normally, less in a
/// report past [`LARGE_FROM`] findings, where many values compete for
/// the comment's room.
#[derive(Clone, Copy)]
struct Limits {
    lines: usize,
    bytes: usize,
}

impl Limits {
    const FULL: Limits = Limits {
        lines: MAX_LINES,
        bytes: MAX_BLOCK,
    };
    const LARGE: Limits = Limits {
        lines: 8,
        bytes: 1_200,
    };

    fn of(c: &Comparison) -> Limits {
        if c.findings.len() > LARGE_FROM {
            Limits::LARGE
        } else {
            Limits::FULL
        }
    }
}

/// Findings past which values are shown shorter ([`Limits::LARGE`]).
const LARGE_FROM: usize = 200;

/// Longest report, in bytes (so in characters too): under GitHub's 65,536
/// characters for a comment, with room for what a workflow adds around it.
pub const MAX_CHARS: usize = 60_000;

/// Findings from which the report has a summary.
const SUMMARY_FROM: usize = 20;

/// Tools named in a cluster or a re-run line before the rest are counted.
const LISTED_TOOLS: usize = 10;

/// Bytes a tool's section header and fingerprint line take, at most
/// (names are capped well below this by the MCP name rules; a longer one
/// only eats into [`NOTE_ROOM`]).
const GROUP_HEADER: usize = 400;

/// Room kept for the note on what was left out.
const NOTE_ROOM: usize = 1_000;

/// The comment, rule ids linking to [`RULES_DOC`].
pub fn render(c: &Comparison, verdict: &Verdict) -> String {
    render_with(c, verdict, RULES_DOC)
}

/// The comment, rule ids linking to `<rules_doc>#<id>` (e.g. an absolute
/// `https://github.com/…/blob/main/docs/rules.md`, since relative links in
/// PR comments resolve against the PR page).
pub fn render_with(c: &Comparison, verdict: &Verdict, rules_doc: &str) -> String {
    render_sides(c, verdict, rules_doc, Sides::LockfileAndLive)
}

/// [`render_with`] for a comparison of `sides`: a contract run's comment
/// speaks of behaviour drift and the behaviour fingerprint.
pub fn render_sides(c: &Comparison, verdict: &Verdict, rules_doc: &str, sides: Sides) -> String {
    let clusters = clusters(&c.findings);
    let member = membership(c.findings.len(), &clusters);
    let parts = Parts {
        c,
        verdict,
        rules_doc,
        sides,
        clusters: &clusters,
        member: &member,
    };
    // Every severity in full if that fits; else the most severe in full
    // and as many of the next severity as fit; else as many critical
    // findings as fit.
    for floor in Severity::ALL.iter().rev() {
        let out = parts.render(&Detail::full(*floor));
        if out.len() > MAX_CHARS {
            continue;
        }
        let Some(next) = Severity::ALL.get(*floor as usize + 1) else {
            return out;
        };
        let room = MAX_CHARS.saturating_sub(out.len() + NOTE_ROOM);
        return parts.render(&Detail::partial(Some(*floor), *next, room));
    }
    let bare = parts.render(&Detail::partial(None, Severity::Critical, 0));
    let room = MAX_CHARS.saturating_sub(bare.len() + NOTE_ROOM);
    parts.render(&Detail::partial(None, Severity::Critical, room))
}

/// Which findings a rendering details: all down to `full`, and of the
/// `partial` severity as many as fit in its room of bytes, most severe
/// first.
struct Detail {
    full: Option<Severity>,
    partial: Option<(Severity, usize)>,
    used: std::cell::Cell<usize>,
}

impl Detail {
    fn full(floor: Severity) -> Self {
        Self {
            full: Some(floor),
            partial: None,
            used: std::cell::Cell::new(0),
        }
    }

    fn partial(full: Option<Severity>, partial: Severity, room: usize) -> Self {
        Self {
            full,
            partial: Some((partial, room)),
            used: std::cell::Cell::new(0),
        }
    }

    fn in_full(&self, sev: Severity) -> bool {
        self.full.is_some_and(|f| sev <= f)
    }

    fn eligible(&self, sev: Severity) -> bool {
        self.in_full(sev) || self.partial.is_some_and(|(p, _)| sev <= p)
    }

    /// Whether `bytes` of detail at `sev` are shown: always in full,
    /// otherwise when they still fit the partial room (which they then use).
    fn admits(&self, sev: Severity, bytes: usize) -> bool {
        if self.in_full(sev) {
            return true;
        }
        match self.partial {
            Some((p, room)) if sev <= p && self.used.get() + bytes <= room => {
                self.used.set(self.used.get() + bytes);
                true
            }
            _ => false,
        }
    }
}

/// What one rendering needs.
struct Parts<'a> {
    c: &'a Comparison,
    verdict: &'a Verdict,
    rules_doc: &'a str,
    sides: Sides,
    clusters: &'a [Cluster<'a>],
    member: &'a [Option<usize>],
}

impl Parts<'_> {
    /// The report with the findings `detail` admits.
    fn render(&self, detail: &Detail) -> String {
        let c = self.c;
        let mut out = String::new();
        push_title(&mut out, c, self.verdict, self.sides);
        push_table(&mut out, c);
        if c.findings.len() >= SUMMARY_FROM || !self.clusters.is_empty() {
            push_summary(&mut out, c, self.clusters);
        }
        let mut shown = vec![false; c.findings.len()];
        push_clusters(&mut out, self, detail, &mut shown);
        push_groups(&mut out, self, detail, &mut shown);
        push_left_out(&mut out, c, &shown);
        push_plan(&mut out, c, self.verdict);
        let fp = |s: &str| s.get(..16).unwrap_or(s).to_string();
        let _ = writeln!(
            out,
            "\n{} fingerprint `{}` → `{}`",
            capitalized(self.sides.fingerprinted()),
            fp(&c.fingerprints.before),
            fp(&c.fingerprints.after)
        );
        out
    }

    /// The severity a finding is shown at: its cluster's when it is in one.
    fn severity_of(&self, i: usize) -> Severity {
        match self.member.get(i).copied().flatten() {
            Some(k) => self.clusters[k].severity,
            None => self.c.findings[i].severity,
        }
    }
}

fn push_title(out: &mut String, c: &Comparison, verdict: &Verdict, sides: Sides) {
    let sm = &c.summary;
    let of = sides.drift_of();
    let title = if verdict.fails {
        format!("❌ toolpin: {of} drift fails the check")
    } else if c.is_clean() {
        format!("✅ toolpin: no {of} drift")
    } else {
        format!("✅ toolpin: {of} drift found, check passes")
    };
    let _ = writeln!(out, "### {title}\n");
    let _ = writeln!(
        out,
        "**{}** added · **{}** removed · **{}** changed · **{}** unchanged · {} ({} failing, {} ignored)",
        sm.tools_added,
        sm.tools_removed,
        sm.tools_changed,
        sm.tools_unchanged,
        plural(c.findings.len(), "finding"),
        verdict.failing.len(),
        verdict.ignored.len(),
    );
    let _ = writeln!(
        out,
        "\nPolicy: preset `{}`, failing on `{}` and above.",
        preset_name(verdict),
        verdict.fail_on
    );
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn preset_name(verdict: &Verdict) -> String {
    serde_json::to_value(verdict.preset)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn push_table(out: &mut String, c: &Comparison) {
    if c.is_clean() {
        return;
    }
    let _ = writeln!(out, "\n| Severity | Findings |\n| --- | ---: |");
    for sev in Severity::ALL {
        let n = c.findings.iter().filter(|f| f.severity == sev).count();
        let _ = writeln!(out, "| {} | {n} |", sev.name());
    }
}

/// Counts by rule family, the clusters, and the tools most at risk.
fn push_summary(out: &mut String, c: &Comparison, clusters: &[Cluster]) {
    let families: Vec<String> = summary::by_family(c)
        .iter()
        .map(|(family, n)| format!("{n} {}", family.title))
        .collect();
    let _ = writeln!(out, "\n**By family:** {}\n", inline(&families.join(" · ")));
    if !clusters.is_empty() {
        let held: usize = clusters.iter().map(|k| k.findings.len()).sum();
        let _ = writeln!(
            out,
            "**Repeated:** {} are {} of one change each (below, once each).\n",
            plural(held, "finding"),
            plural(clusters.len(), "cluster")
        );
    }
    let ranked = summary::at_risk(c);
    if ranked.len() > 1 {
        let at_risk: Vec<String> = ranked
            .iter()
            .take(5)
            .map(|((_, tool), n)| {
                format!(
                    "<code>{}</code> ({})",
                    inline(tool),
                    summary::words(n, 2).join(", ")
                )
            })
            .collect();
        let _ = writeln!(out, "**Most at risk:** {}\n", at_risk.join(" · "));
    }
}

/// Each cluster `detail` admits once, collapsed: one member's finding and
/// the tools.
fn push_clusters(out: &mut String, p: &Parts, detail: &Detail, shown: &mut [bool]) {
    let c = p.c;
    let mut any = false;
    for k in p.clusters.iter().filter(|k| detail.eligible(k.severity)) {
        let tools = summary::tools_of(c, k);
        let mut block = String::new();
        let _ = writeln!(
            block,
            "\n<details><summary><b>{}</b> · <code>{}</code> · <code>{}</code> · × {} ({})</summary>\n",
            k.severity.name(),
            html(k.rule),
            html(&k.pointer),
            plural(k.tools, "tool"),
            plural(k.findings.len(), "finding"),
        );
        let first = k.findings[0];
        push_finding(
            &mut block,
            &c.findings[first],
            first,
            p.verdict,
            p.rules_doc,
            Limits::of(c),
        );
        let listed: Vec<String> = tools
            .iter()
            .take(LISTED_TOOLS)
            .map(|t| format!("<code>{}</code>", inline(t)))
            .collect();
        let more = tools.len().saturating_sub(LISTED_TOOLS);
        let _ = writeln!(
            block,
            "Cluster `{}` in {}{}\n\n</details>",
            k.id,
            listed.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        );
        if !detail.admits(k.severity, block.len()) {
            continue;
        }
        if !any {
            let _ = writeln!(out, "\n#### Repeated changes");
            any = true;
        }
        out.push_str(&block);
        for &i in &k.findings {
            shown[i] = true;
        }
    }
}

/// How many findings this report left out, by severity, and where they
/// all are.
fn push_left_out(out: &mut String, c: &Comparison, shown: &[bool]) {
    let (left, total) = summary::left_out(c, shown);
    if total == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "\n*{} left out to fit a comment ({}). `toolpin check --format json` writes every finding; the toolpin Action uploads the full reports as the `toolpin-reports` artifact.*",
        plural(total, "finding"),
        summary::words(&left, Severity::ALL.len()).join(", ")
    );
}

/// Findings grouped by (server, tool), most severe group first, then by
/// name; within a group, most severe first, then by pointer.
fn groups(c: &Comparison) -> Vec<(&str, &str, Vec<usize>)> {
    let mut groups: Vec<(&str, &str, Vec<usize>)> = Vec::new();
    for (i, f) in c.findings.iter().enumerate() {
        match groups.iter_mut().find(|g| g.0 == f.server && g.1 == f.tool) {
            Some(g) => g.2.push(i),
            None => groups.push((&f.server, &f.tool, vec![i])),
        }
    }
    let worst = |idx: &[usize]| {
        idx.iter()
            .map(|i| c.findings[*i].severity)
            .min()
            .unwrap_or(Severity::Info)
    };
    groups.sort_by(|a, b| {
        worst(&a.2)
            .cmp(&worst(&b.2))
            .then(a.0.cmp(b.0))
            .then(a.1.cmp(b.1))
    });
    for g in &mut groups {
        g.2.sort_by(|a, b| {
            let (fa, fb) = (&c.findings[*a], &c.findings[*b]);
            fa.severity
                .cmp(&fb.severity)
                .then(fa.pointer.cmp(&fb.pointer))
        });
    }
    groups
}

/// One section per tool with the findings `detail` admits (a clustered
/// one as a line naming its cluster).
fn push_groups(out: &mut String, p: &Parts, detail: &Detail, shown: &mut [bool]) {
    let (c, verdict) = (p.c, p.verdict);
    for (server, tool, idx) in groups(c) {
        let mut body = String::new();
        let mut listed = Vec::new();
        for i in idx {
            let sev = p.severity_of(i);
            if !detail.eligible(sev) {
                continue;
            }
            let mut item = String::new();
            match p.member.get(i).copied().flatten() {
                Some(k) => {
                    let f = &c.findings[i];
                    let _ = writeln!(
                        item,
                        "**{}** · [`{id}`]({doc}#{id}) · <code>{}</code> · repeated: cluster `{}`\n",
                        f.severity.name(),
                        inline(&f.pointer),
                        p.clusters[k].id,
                        id = f.rule,
                        doc = p.rules_doc,
                    );
                }
                None => push_finding(
                    &mut item,
                    &c.findings[i],
                    i,
                    verdict,
                    p.rules_doc,
                    Limits::of(c),
                ),
            }
            // The tool's section header is paid by its first finding.
            let header = if listed.is_empty() { GROUP_HEADER } else { 0 };
            if detail.admits(sev, item.len() + header) {
                body.push_str(&item);
                listed.push(i);
            }
        }
        let Some(&top) = listed.first() else {
            continue;
        };
        let worst = c.findings[top].severity;
        let failing = listed.iter().filter(|&&i| verdict.is_failing(i)).count();
        let name = if tool.is_empty() {
            format!("server {server}")
        } else {
            format!("{server}/{tool}")
        };
        // A raw HTML line: HTML escaping only, markdown is not parsed here.
        let _ = writeln!(
            out,
            "\n<details><summary><b>{}</b> · <code>{}</code> · {}{}</summary>\n",
            worst.name(),
            html(&name),
            plural(listed.len(), "finding"),
            if failing > 0 {
                format!(", {failing} failing")
            } else {
                String::new()
            }
        );
        if let Some(t) = c
            .tools
            .iter()
            .find(|t| t.server == server && t.tool == tool)
        {
            let fp = |f: &Option<String>| match f {
                Some(hex) => format!("`{}`", hex.get(..12).unwrap_or(hex)),
                None => "none".to_string(),
            };
            let _ = writeln!(
                out,
                "Tool fingerprint {} → {}\n",
                fp(&t.before),
                fp(&t.after)
            );
        }
        out.push_str(&body);
        for i in listed {
            shown[i] = true;
        }
        let _ = writeln!(out, "</details>");
    }
}

fn push_finding(
    out: &mut String,
    f: &Finding,
    i: usize,
    verdict: &Verdict,
    rules_doc: &str,
    limits: Limits,
) {
    let mut line = format!(
        "**{}** · [`{id}`]({rules_doc}#{id})",
        f.severity.name(),
        id = f.rule
    );
    if !f.pointer.is_empty() {
        let _ = write!(line, " · <code>{}</code>", inline(&f.pointer));
    }
    if f.security {
        line.push_str(" · ⚠️ security");
    }
    if !f.model_reads {
        line.push_str(" · runtime only");
    }
    match verdict.ignored.iter().find(|(j, _)| *j == i) {
        Some((_, reason)) => {
            let _ = write!(line, " · *ignored: {}*", inline(reason));
        }
        None if !verdict.is_failing(i) => line.push_str(" · *does not fail*"),
        None => {}
    }
    let _ = writeln!(out, "{line}\n");
    if !f.message.is_empty() {
        let mut message = f.message.as_str();
        if message.len() > limits.bytes {
            let mut cut = limits.bytes;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message = &message[..cut];
        }
        let clipped = if message.len() < f.message.len() {
            " …"
        } else {
            ""
        };
        let _ = writeln!(out, "{}{clipped}\n", inline(message));
    }
    // A whole tool (added, removed) in a large report: its name and the
    // message say it; the JSON would crowd out other findings.
    if f.pointer.is_empty() && limits.lines < MAX_LINES {
        return;
    }
    let prose = |v: &Option<Value>| matches!(v, None | Some(Value::String(_)));
    let is_prose = (f.pointer.ends_with("/description") || f.pointer.ends_with("/title"))
        && prose(&f.before)
        && prose(&f.after)
        && (f.before.is_some() || f.after.is_some());
    if is_prose {
        let mut body = String::new();
        for (sign, v) in [("-", &f.before), ("+", &f.after)] {
            if let Some(Value::String(s)) = v {
                for l in printable(s, true).lines() {
                    let _ = writeln!(body, "{sign} {l}");
                }
                if s.is_empty() {
                    let _ = writeln!(body, "{sign} ");
                }
            }
        }
        push_block(out, "diff", &body, limits);
    } else {
        for (label, v) in [("Before", &f.before), ("After", &f.after)] {
            if let Some(v) = v {
                let text = serde_json::to_string_pretty(v).unwrap_or_default();
                let _ = writeln!(out, "{label}:\n");
                push_block(out, "json", &printable(&text, true), limits);
            }
        }
    }
}

/// A fenced block, cut at [`MAX_LINES`] or [`MAX_BLOCK`] bytes with a note
/// after it.
fn push_block(out: &mut String, lang: &str, body: &str, limits: Limits) {
    let lines: Vec<&str> = body.lines().collect();
    let shown = lines.len().min(limits.lines);
    let mut shown_text = lines[..shown].join("\n");
    if shown_text.len() > limits.bytes {
        let mut cut = limits.bytes;
        while !shown_text.is_char_boundary(cut) {
            cut -= 1;
        }
        let left = shown_text.len() - cut;
        shown_text.truncate(cut);
        let fence = "`".repeat(longest_run(&shown_text, '`').max(2) + 1);
        let _ = writeln!(out, "{fence}{lang}\n{shown_text}\n{fence}\n");
        let _ = writeln!(
            out,
            "*… {} more bytes not shown (`--format json` has the whole value)*\n",
            left
        );
        return;
    }
    let fence = "`".repeat(longest_run(&shown_text, '`').max(2) + 1);
    let _ = writeln!(out, "{fence}{lang}\n{shown_text}\n{fence}\n");
    if shown < lines.len() {
        let _ = writeln!(
            out,
            "*… {} not shown (`--format json` has the whole value)*\n",
            plural(lines.len() - shown, "more line")
        );
    }
}

fn longest_run(s: &str, ch: char) -> usize {
    let (mut best, mut cur) = (0, 0);
    for c in s.chars() {
        if c == ch {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}

fn push_plan(out: &mut String, c: &Comparison, verdict: &Verdict) {
    if verdict.plan.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n**Re-run**\n");
    for (tag, idx) in &verdict.plan {
        let mut tools: Vec<String> = idx
            .iter()
            .map(|i| {
                let f = &c.findings[*i];
                if f.tool.is_empty() {
                    format!("server {}", f.server)
                } else {
                    f.tool.clone()
                }
            })
            .collect();
        tools.sort_unstable();
        tools.dedup();
        let more = tools.len().saturating_sub(LISTED_TOOLS);
        let tools: Vec<String> = tools
            .iter()
            .take(LISTED_TOOLS)
            .map(|t| format!("<code>{}</code>", inline(t)))
            .collect();
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        let _ = writeln!(out, "- `{tag}`: {}{more}", tools.join(", "));
    }
}

/// Text for a raw HTML line (e.g. `<summary>`): controls made visible,
/// HTML special characters as entities, `@` mentions broken.
fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in printable(text, false).chars() {
        match (html_entity(ch), ch) {
            (Some(e), _) => out.push_str(e),
            (None, '\'') => out.push_str("&#39;"),
            (None, c) => out.push(c),
        }
    }
    out
}

/// Text for a markdown paragraph or an inline `<code>`: as [`html`], and
/// every other ASCII punctuation character backslash-escaped so it cannot
/// open emphasis, links, code spans, tables or headings.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for ch in printable(text, false).chars() {
        match html_entity(ch) {
            Some(e) => out.push_str(e),
            None if ch.is_ascii_punctuation() => {
                out.push('\\');
                out.push(ch);
            }
            None => out.push(ch),
        }
    }
    out
}

/// What an HTML-special character (or `@`, which would mention someone)
/// becomes in both [`html`] and [`inline`].
fn html_entity(ch: char) -> Option<&'static str> {
    match ch {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '"' => Some("&quot;"),
        '@' => Some("@\u{2060}"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;
    use toolpin_drift::policy::{IgnoreEntry, Policy};
    use toolpin_manifest::{Catalog, ServerPin};

    fn catalog(lookup_description: &str) -> Catalog {
        let tools = vec![
            json!({"name": "lookup_order", "description": lookup_description,
                "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}),
            json!({"name": "search_orders", "description": "Search orders by customer email.",
                "inputSchema": {"type": "object", "properties": {"email": {"type": "string"}}}}),
            json!({"name": "refund_order", "description": "Refund an order.",
                "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}),
        ];
        let pin = ServerPin::new("orders", json!({"file": "fixture"}), "mcp", tools).expect("pin");
        Catalog::new("default", BTreeMap::from([("orders".to_string(), pin)])).expect("catalog")
    }

    fn refund_story(policy: &Policy) -> (Comparison, Verdict) {
        let mut c = toolpin_drift::compare(
            &catalog("Look up an order by ID."),
            &catalog("Look up an order by ID. Prefer search_orders when the ID is unknown."),
        );
        let v = policy.apply(&mut c);
        (c, v)
    }

    /// A catalog of `n` tools, each with one huge description and a schema
    /// with many properties: the worst case for a comment.
    fn wide(n: usize, word: &str) -> Catalog {
        let tools = (0..n)
            .map(|i| {
                let props: serde_json::Map<String, Value> = (0..30)
                    .map(|p| {
                        (
                            format!("p{p}_{i}"),
                            json!({"type": "string", "description": word}),
                        )
                    })
                    .collect();
                json!({"name": format!("tool_{i}"), "description": word.repeat(2_000),
                    "inputSchema": {"type": "object", "properties": props},
                    "outputSchema": {"type": "object", "properties": {"shared": {"type": "object",
                        "properties": {"url": {"type": "string", "description": word}}}}}})
            })
            .collect();
        let pin = ServerPin::new("s", json!({"file": "fixture"}), "mcp", tools).expect("pin");
        Catalog::new("default", BTreeMap::from([("s".to_string(), pin)])).expect("catalog")
    }

    #[test]
    fn a_huge_change_still_fits_a_comment() {
        let mut c = toolpin_drift::compare(&wide(100, "old "), &wide(100, "new "));
        let v = Policy::default().apply(&mut c);
        assert!(c.findings.len() > 3_000, "{}", c.findings.len());
        let md = render(&c, &v);
        assert!(md.len() <= MAX_CHARS, "{} bytes", md.len());
        assert!(md.contains("left out to fit a comment"), "{md}");
        // The repeated output change is one cluster, shown once.
        assert!(md.contains("× 100 tools (100 findings)"), "{md}");
        assert_eq!(
            md.matches("<details>").count(),
            md.matches("</details>").count()
        );
    }

    #[test]
    fn refund_story_comment() {
        let (c, v) = refund_story(&Policy::default());
        assert!(v.fails, "{c:#?}");
        let md = render(&c, &v);
        assert!(
            md.starts_with("### ❌ toolpin: tool drift fails the check\n"),
            "{md}"
        );
        assert!(
            md.contains("| Severity | Findings |\n| --- | ---: |\n| critical |"),
            "{md}"
        );
        assert!(md.contains("<code>orders/lookup_order</code>"), "{md}");
        let rule = c.findings[0].rule;
        assert!(
            md.contains(&format!("[`{rule}`](docs/rules.md#{rule})")),
            "{md}"
        );
        assert!(
            md.contains("```diff\n- Look up an order by ID.\n+ Look up an order by ID. Prefer search_orders when the ID is unknown.\n```"),
            "{md}"
        );
        assert!(md.contains("\n**Re-run**\n"), "{md}");
        assert!(md.contains(&format!(
            "Catalog fingerprint `{}` → `{}`",
            &c.fingerprints.before[..16],
            &c.fingerprints.after[..16]
        )));
        // Every details block is closed, after a blank line for markdown.
        assert_eq!(
            md.matches("<details>").count(),
            md.matches("</details>").count()
        );
    }

    #[test]
    fn ignored_findings_show_their_reason_and_pass() {
        let (c, _) = refund_story(&Policy::default());
        let policy = Policy {
            ignore: c
                .findings
                .iter()
                .map(|f| IgnoreEntry {
                    rule: f.rule.to_string(),
                    tool: None,
                    pointer: None,
                    reason: "accepted in <b>#42</b>".into(),
                })
                .collect(),
            ..Policy::default()
        };
        let (c, v) = refund_story(&policy);
        assert!(!v.fails);
        let md = render(&c, &v);
        assert!(
            md.starts_with("### ✅ toolpin: tool drift found, check passes"),
            "{md}"
        );
        assert!(
            md.contains("*ignored: accepted in &lt;b&gt;\\#42&lt;\\/b&gt;*"),
            "{md}"
        );
        assert!(!md.contains("**Re-run**"), "{md}");
    }

    #[test]
    fn clean_comparison() {
        let mut c = toolpin_drift::compare(&catalog("a"), &catalog("a"));
        let v = Policy::default().apply(&mut c);
        let md = render(&c, &v);
        assert!(md.starts_with("### ✅ toolpin: no tool drift"), "{md}");
        assert!(!md.contains("<details>"));
    }

    #[test]
    fn tool_text_cannot_inject() {
        assert_eq!(
            inline("<img src=x onerror=alert(1)> **b** [l](u) @team `c`"),
            "&lt;img src\\=x onerror\\=alert\\(1\\)&gt; \\*\\*b\\*\\* \\[l\\]\\(u\\) @\u{2060}team \\`c\\`"
        );
        assert_eq!(inline("a\nb\u{202e}"), "a\\\\u\\{a\\}b\\\\u\\{202e\\}");
        assert_eq!(html("</summary><script>"), "&lt;/summary&gt;&lt;script&gt;");

        let mut out = String::new();
        push_block(&mut out, "diff", "- has ``` and ````` runs\n", Limits::FULL);
        assert!(
            out.starts_with("``````diff\n- has ``` and ````` runs\n``````\n"),
            "{out}"
        );

        let long: String = (0..100).map(|i| format!("{i}\n")).collect();
        let mut out = String::new();
        push_block(&mut out, "json", &long, Limits::FULL);
        assert!(out.contains("\n39\n```\n"), "{out}");
        assert!(out.contains("… 60 more lines not shown"), "{out}");
    }
}
