//! The pull-request comment (`--format markdown`): a verdict title, a
//! severity table, one collapsible section per tool (most severe first),
//! the re-run plan and the catalog fingerprints. Renders on GitHub.
//!
//! Everything that comes from a server (tool names, pointers, messages,
//! values) is neutralized: inline text has HTML and markdown punctuation
//! escaped and `@` mentions broken; values go in fenced blocks whose fence
//! is longer than any backtick run inside them.

use std::fmt::Write;

use serde_json::Value;
use toolpin_drift::policy::Verdict;
use toolpin_drift::{Comparison, Finding, Severity};

use crate::style::printable;

/// Where rule ids link to, relative to the repository root.
pub const RULES_DOC: &str = "docs/rules.md";

/// Longest value shown, in lines, before it is cut with a note.
const MAX_LINES: usize = 40;

/// The comment, rule ids linking to [`RULES_DOC`].
pub fn render(c: &Comparison, verdict: &Verdict) -> String {
    render_with(c, verdict, RULES_DOC)
}

/// The comment, rule ids linking to `<rules_doc>#<id>` (e.g. an absolute
/// `https://github.com/…/blob/main/docs/rules.md`, since relative links in
/// PR comments resolve against the PR page).
pub fn render_with(c: &Comparison, verdict: &Verdict, rules_doc: &str) -> String {
    let mut out = String::new();
    push_title(&mut out, c, verdict);
    push_table(&mut out, c);
    push_groups(&mut out, c, verdict, rules_doc);
    push_plan(&mut out, c, verdict);
    let fp = |s: &str| s.get(..16).unwrap_or(s).to_string();
    let _ = writeln!(
        out,
        "\nCatalog fingerprint `{}` → `{}`",
        fp(&c.fingerprints.before),
        fp(&c.fingerprints.after)
    );
    out
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

fn push_title(out: &mut String, c: &Comparison, verdict: &Verdict) {
    let sm = &c.summary;
    let title = if verdict.fails {
        "❌ toolpin: tool drift fails the check"
    } else if c.is_clean() {
        "✅ toolpin: no tool drift"
    } else {
        "✅ toolpin: tool drift found, check passes"
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

fn push_groups(out: &mut String, c: &Comparison, verdict: &Verdict, rules_doc: &str) {
    for (server, tool, idx) in groups(c) {
        let worst = c.findings[idx[0]].severity;
        let failing = idx.iter().filter(|&&i| verdict.is_failing(i)).count();
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
            plural(idx.len(), "finding"),
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
        for i in idx {
            push_finding(out, &c.findings[i], i, verdict, rules_doc);
        }
        let _ = writeln!(out, "</details>");
    }
}

fn push_finding(out: &mut String, f: &Finding, i: usize, verdict: &Verdict, rules_doc: &str) {
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
    match verdict.ignored.iter().find(|(j, _)| *j == i) {
        Some((_, reason)) => {
            let _ = write!(line, " · *ignored: {}*", inline(reason));
        }
        None if !verdict.is_failing(i) => line.push_str(" · *does not fail*"),
        None => {}
    }
    let _ = writeln!(out, "{line}\n");
    if !f.message.is_empty() {
        let _ = writeln!(out, "{}\n", inline(&f.message));
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
        push_block(out, "diff", &body);
    } else {
        for (label, v) in [("Before", &f.before), ("After", &f.after)] {
            if let Some(v) = v {
                let text = serde_json::to_string_pretty(v).unwrap_or_default();
                let _ = writeln!(out, "{label}:\n");
                push_block(out, "json", &printable(&text, true));
            }
        }
    }
}

/// A fenced block, cut at [`MAX_LINES`] with a note after it.
fn push_block(out: &mut String, lang: &str, body: &str) {
    let lines: Vec<&str> = body.lines().collect();
    let shown = lines.len().min(MAX_LINES);
    let shown_text = lines[..shown].join("\n");
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
        let tools: Vec<String> = tools
            .iter()
            .map(|t| format!("<code>{}</code>", inline(t)))
            .collect();
        let _ = writeln!(out, "- `{tag}`: {}", tools.join(", "));
    }
}

/// Text for a raw HTML line (e.g. `<summary>`): controls made visible,
/// HTML special characters as entities, `@` mentions broken.
fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in printable(text, false).chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '@' => out.push_str("@\u{2060}"),
            c => out.push(c),
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
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '@' => out.push_str("@\u{2060}"),
            c if c.is_ascii_punctuation() => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
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
        push_block(&mut out, "diff", "- has ``` and ````` runs\n");
        assert!(
            out.starts_with("``````diff\n- has ``` and ````` runs\n``````\n"),
            "{out}"
        );

        let long: String = (0..100).map(|i| format!("{i}\n")).collect();
        let mut out = String::new();
        push_block(&mut out, "json", &long);
        assert!(out.contains("\n39\n```\n"), "{out}");
        assert!(out.contains("… 60 more lines not shown"), "{out}");
    }
}
