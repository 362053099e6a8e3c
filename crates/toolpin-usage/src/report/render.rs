//! The report as text (a summary line and a line per alarm), JSON
//! (`toolpin.usage-report/v1`, docs/usage-report.schema.json) and a
//! Markdown table. No colour: the caller decides about terminals.

use std::fmt::Write;

use toolpin_manifest::text::plural_of;

use super::{Basis, UsageReport};

fn summary(report: &UsageReport) -> String {
    let changes = report
        .comparisons
        .iter()
        .filter(|c| c.basis == Basis::CatalogChange)
        .count() as u64;
    let daily = report.comparisons.len() as u64 - changes;
    format!(
        "{} in {}: {} and {} compared, {} and {} made, {} left out for too few calls; {}",
        plural_of(report.calls, "call", "calls"),
        plural_of(report.groups, "group", "groups"),
        plural_of(changes, "catalog change", "catalog changes"),
        plural_of(daily, "day-over-day comparison", "day-over-day comparisons"),
        plural_of(report.tests, "test", "tests"),
        plural_of(report.checks, "latency check", "latency checks"),
        report.skipped,
        plural_of(report.alarms.len() as u64, "alarm", "alarms"),
    )
}

fn group_name(environment: &str, tenant: &str, agent: &str) -> String {
    let or = |s: &str, d: &'static str| {
        if s.is_empty() {
            d.to_string()
        } else {
            s.to_string()
        }
    };
    format!(
        "{}/{}/{}",
        or(environment, "(no env)"),
        or(tenant, "(no tenant)"),
        or(agent, "(no agent)")
    )
}

pub fn render_text(report: &UsageReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "usage: {}", summary(report));
    for u in &report.unpinned_catalogs {
        let _ = writeln!(
            out,
            "note: catalog {} is in no lockfile read ({}); its calls were not checked against a pin",
            if u.catalog.is_empty() { "(none)" } else { &u.catalog },
            plural_of(u.calls, "call", "calls")
        );
    }
    for a in &report.alarms {
        let mut line = format!(
            "ALARM {} [{}] {}",
            a.kind.name(),
            group_name(&a.environment, &a.tenant, &a.agent),
            a.message
        );
        if let Some(p) = a.adjusted_p {
            let _ = write!(line, " (adjusted p {p:.2e})");
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

pub fn render_json(report: &UsageReport) -> String {
    // Serializing plain data with string keys cannot fail.
    let mut text = serde_json::to_string_pretty(report).unwrap_or_default();
    text.push('\n');
    text
}

/// A table cell: pipes escaped, one line.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

pub fn render_markdown(report: &UsageReport) -> String {
    let mut out = String::from("## Tool usage\n\n");
    let _ = writeln!(out, "{}\n", summary(report));
    if report.alarms.is_empty() {
        out.push_str("No alarm.\n");
        return out;
    }
    out.push_str("| alarm | environment / tenant / agent | tool | what moved | adjusted p |\n");
    out.push_str("|---|---|---|---|---|\n");
    for a in &report.alarms {
        let _ = writeln!(
            out,
            "| {} | {} | `{}` | {} | {} |",
            a.kind.name(),
            cell(&group_name(&a.environment, &a.tenant, &a.agent)),
            cell(&a.tool),
            cell(&a.message),
            a.adjusted_p.map_or("—".to_string(), |p| format!("{p:.2e}"))
        );
    }
    out
}
