//! The counts a large report opens with, shared by the text, Markdown and
//! GitHub renderers: findings per rule family, the tools most at risk, and
//! per-severity counts written as words.

use std::collections::HashMap;

use toolpin_drift::cluster::Cluster;
use toolpin_drift::rule::Family;
use toolpin_drift::{Comparison, Finding, Severity};

/// Findings per severity, in [`Severity::ALL`] order.
pub type Counts = [usize; 5];

/// The families that have findings, with how many: most first, then by
/// name.
pub fn by_family(c: &Comparison) -> Vec<(&'static Family, usize)> {
    let mut families: Vec<(&'static Family, usize)> = toolpin_drift::rules::FAMILIES
        .iter()
        .map(|family| {
            (
                *family,
                c.findings.iter().filter(|f| family.has(f.rule)).count(),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    families.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.name.cmp(b.0.name)));
    families
}

/// Tools (server, name) with their findings' counts, most at risk first:
/// the most critical findings, then high, and so on, then by name.
/// Server-level findings (no tool) are not counted.
pub fn at_risk(c: &Comparison) -> Vec<((&str, &str), Counts)> {
    let mut per_tool: HashMap<(&str, &str), Counts> = HashMap::new();
    for f in c.findings.iter().filter(|f| !f.tool.is_empty()) {
        per_tool.entry((&f.server, &f.tool)).or_default()[f.severity as usize] += 1;
    }
    let mut ranked: Vec<((&str, &str), Counts)> = per_tool.into_iter().collect();
    ranked.sort_by(|a, b| {
        let key = |n: &Counts| n.map(std::cmp::Reverse);
        key(&a.1).cmp(&key(&b.1)).then(a.0.cmp(&b.0))
    });
    ranked
}

/// The names of the tools a cluster's findings are in, sorted, once each.
pub fn tools_of<'c>(c: &'c Comparison, cluster: &Cluster<'_>) -> Vec<&'c str> {
    let mut tools: Vec<&str> = cluster
        .findings
        .iter()
        .map(|&i| c.findings[i].tool.as_str())
        .collect();
    tools.sort_unstable();
    tools.dedup();
    tools
}

/// `findings` counted per severity.
pub fn counts<'f>(findings: impl IntoIterator<Item = &'f Finding>) -> Counts {
    let mut n = Counts::default();
    for f in findings {
        n[f.severity as usize] += 1;
    }
    n
}

/// The findings a report left out (`shown[i]` false), counted per
/// severity, and how many in all.
pub fn left_out(c: &Comparison, shown: &[bool]) -> (Counts, usize) {
    let left = counts(
        c.findings
            .iter()
            .zip(shown)
            .filter(|(_, shown)| !**shown)
            .map(|(f, _)| f),
    );
    (left, left.iter().sum())
}

/// `3 critical, 12 high`: the non-zero counts, most severe first, at most
/// `limit` of them.
pub fn words(n: &Counts, limit: usize) -> Vec<String> {
    Severity::ALL
        .iter()
        .filter(|sev| n[**sev as usize] > 0)
        .take(limit)
        .map(|sev| format!("{} {}", n[*sev as usize], sev.name()))
        .collect()
}
