//! From what a command saw to ledger sightings: a check's failing tools,
//! the servers it saw clean, and the open events it shows resolved.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use toolpin_drift::policy::Verdict;
use toolpin_drift::text::{word_diff, Op};
use toolpin_drift::{Comparison, Finding};
use toolpin_evals::Plan;
use toolpin_ledger::{
    EventFilter, EventKind, FindingRecord, Ledger, Recorded, Resolution, Sighting,
};
use toolpin_manifest::Catalog;

/// What one check saw, ready to record.
#[derive(Debug, Default)]
pub struct CheckSightings {
    /// One drift sighting per tool with failing findings (and one with
    /// tool `""` for a server whose own members changed).
    pub drift: Vec<Sighting>,
    /// Servers captured with no failing finding.
    pub clean: Vec<String>,
}

/// What recording a check's or a contract run's sightings did.
#[derive(Debug, Default)]
pub struct SightingsRecorded {
    pub recorded: Vec<(Sighting, Recorded)>,
    /// Events the run showed resolved (upstream went back, the lockfile
    /// now pins the live tool, or the tool behaved as recorded again).
    pub resolved: Vec<i64>,
}

/// Who makes a server: its configured `vendor`, else the `serverInfo.name`
/// it reported (live, else pinned), else nothing.
pub fn vendor_of(
    server: &str,
    vendors: &BTreeMap<String, String>,
    pinned: &Catalog,
    live: &Catalog,
) -> Option<String> {
    if let Some(v) = vendors.get(server) {
        return Some(v.clone());
    }
    server_info(live, server, "name").or_else(|| server_info(pinned, server, "name"))
}

/// A member of a server's reported `serverInfo` (`name`, `version`). The
/// catalog's session record keeps it as `server_info` (the lockfile's
/// spelling); `serverInfo`, the wire's, is read too.
pub fn server_info(catalog: &Catalog, server: &str, member: &str) -> Option<String> {
    let session = catalog.servers.get(server)?.session.as_ref()?;
    session
        .get("server_info")
        .or_else(|| session.get("serverInfo"))?
        .get(member)?
        .as_str()
        .map(str::to_string)
}

/// The failing findings (indices into `comparison.findings`) by
/// (server, tool), in that order.
pub(crate) fn failing_by_tool<'a>(
    comparison: &'a Comparison,
    verdict: &Verdict,
) -> BTreeMap<(&'a str, &'a str), Vec<usize>> {
    let mut by_tool: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
    for &i in &verdict.failing {
        if let Some(f) = comparison.findings.get(i) {
            by_tool
                .entry((f.server.as_str(), f.tool.as_str()))
                .or_default()
                .push(i);
        }
    }
    by_tool
}

/// A tool's fingerprints before and after, by (server, tool).
type Changes<'a> = BTreeMap<(&'a str, &'a str), (Option<&'a str>, Option<&'a str>)>;

/// What one check of an environment saw and made of it: the parts its
/// sightings are made from.
pub struct Seen<'a> {
    pub environment: &'a str,
    pub pinned: &'a Catalog,
    pub live: &'a Catalog,
    pub comparison: &'a Comparison,
    pub verdict: &'a Verdict,
    pub plan: &'a Plan,
    /// Configured vendors by server.
    pub vendors: &'a BTreeMap<String, String>,
}

/// The sightings of one check at `at`: the failing findings grouped by
/// tool, each with its fingerprints, vendor, server versions and the
/// number of evals the plan asks to re-run for it.
pub fn sightings(seen: &Seen, at: i64) -> CheckSightings {
    let Seen {
        environment,
        pinned,
        live,
        comparison,
        verdict,
        plan,
        vendors,
    } = *seen;
    let by_tool = failing_by_tool(comparison, verdict);
    let changes: Changes = comparison
        .tools
        .iter()
        .map(|c| {
            (
                (c.server.as_str(), c.tool.as_str()),
                (c.before.as_deref(), c.after.as_deref()),
            )
        })
        .collect();
    let mut drift = Vec::with_capacity(by_tool.len());
    for ((server, tool), indices) in &by_tool {
        let (before, after) = if tool.is_empty() {
            (
                pinned
                    .servers
                    .get(*server)
                    .map(|s| s.fingerprint().to_string()),
                live.servers
                    .get(*server)
                    .map(|s| s.fingerprint().to_string()),
            )
        } else {
            match changes.get(&(*server, *tool)) {
                Some((b, a)) => (b.map(str::to_string), a.map(str::to_string)),
                None => (
                    tool_fingerprint(pinned, server, tool),
                    tool_fingerprint(live, server, tool),
                ),
            }
        };
        let reruns = plan
            .evals
            .values()
            .filter(|p| p.findings.iter().any(|i| indices.contains(i)))
            .count() as i64;
        let findings = indices
            .iter()
            .filter_map(|&i| comparison.findings.get(i))
            .map(finding_record)
            .collect();
        let mut s = Sighting::drift(
            environment,
            server,
            tool,
            before.as_deref(),
            after.as_deref(),
            at,
        )
        .findings(findings)
        .reruns(reruns);
        if let Some(v) = vendor_of(server, vendors, pinned, live) {
            s = s.vendor(&v);
        }
        if let Some(v) = server_info(live, server, "version") {
            s = s.server_version(&v);
        }
        if let Some(v) = server_info(pinned, server, "version") {
            s = s.pinned_version(&v);
        }
        drift.push(s);
    }
    let failing: BTreeSet<&str> = by_tool.keys().map(|(s, _)| *s).collect();
    let clean = live
        .servers
        .keys()
        .filter(|s| !failing.contains(s.as_str()))
        .cloned()
        .collect();
    CheckSightings { drift, clean }
}

fn tool_fingerprint(catalog: &Catalog, server: &str, tool: &str) -> Option<String> {
    catalog
        .servers
        .get(server)?
        .tools
        .get(tool)
        .map(|t| t.fingerprint.to_string())
}

/// A finding as the ledger keeps it: the message, and as detail the word
/// diff of a changed text or the before and after values in short.
pub fn finding_record(f: &Finding) -> FindingRecord {
    let mut record = FindingRecord::from(f);
    record.detail = detail(f.before.as_ref(), f.after.as_ref());
    record
}

/// Longest value shown on each side of a non-text detail.
const VALUE_CHARS: usize = 600;

fn detail(before: Option<&Value>, after: Option<&Value>) -> Option<String> {
    match (before, after) {
        (Some(Value::String(b)), Some(Value::String(a))) => {
            let diff = word_diff(b, a);
            let mut out = String::new();
            for op in &diff.ops {
                match op {
                    Op::Equal(t) => out.push_str(t),
                    Op::Insert(t) => {
                        out.push_str("{+");
                        out.push_str(t);
                        out.push_str("+}");
                    }
                    Op::Delete(t) => {
                        out.push_str("[-");
                        out.push_str(t);
                        out.push_str("-]");
                    }
                }
            }
            Some(out)
        }
        (None, None) => None,
        (b, a) => {
            let side = |v: Option<&Value>| match v {
                None => "(absent)".to_string(),
                Some(v) => short(&v.to_string()),
            };
            Some(format!("before: {}\nafter:  {}", side(b), side(a)))
        }
    }
}

fn short(text: &str) -> String {
    if text.chars().count() <= VALUE_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(VALUE_CHARS).collect();
    format!("{cut}…")
}

/// Records a check: its drift (each sighting with the sinks `route` gives
/// it), the servers it saw clean, and resolves the open drift events of the
/// clean tools: reverted when the live tool is back at the event's pinned
/// fingerprint, accepted when the lockfile now pins the event's live one.
/// Only servers that were captured (`live`) are judged.
pub fn record_check<F>(
    ledger: &mut Ledger,
    environment: &str,
    pinned: &Catalog,
    live: &Catalog,
    seen: CheckSightings,
    route: F,
    at: i64,
) -> Result<SightingsRecorded, toolpin_ledger::Error>
where
    F: Fn(&Sighting) -> Vec<String>,
{
    let recorded = ledger.record_batch(&seen.drift, route)?;
    let clean: Vec<&str> = seen.clean.iter().map(String::as_str).collect();
    if !clean.is_empty() {
        ledger.record_clean(environment, &clean, at)?;
    }
    let drifting: BTreeSet<(&str, &str)> = seen
        .drift
        .iter()
        .map(|s| (s.server.as_str(), s.tool.as_str()))
        .collect();
    let open = ledger.open_events(&EventFilter {
        environment: Some(environment.to_string()),
        ..EventFilter::default()
    })?;
    let mut resolved = Vec::new();
    for event in open {
        // The proxy's sightings of a change are resolved with the check's.
        let by_definition = matches!(
            event.kind,
            EventKind::Drift | EventKind::ProxyDrift | EventKind::ProxyRefusal
        );
        if !by_definition
            || !live.servers.contains_key(&event.server)
            || drifting.contains(&(event.server.as_str(), event.tool.as_str()))
        {
            continue;
        }
        let now_live = current(live, &event.server, &event.tool);
        let now_pinned = current(pinned, &event.server, &event.tool);
        // The tool matches its pin now (it is not drifting): decide how.
        // Back at the pin, including a tool added upstream that is gone
        // again (absent at the pin and now).
        let resolution = if now_live == event.pinned {
            Resolution::Reverted
        } else if let (Some(p), Some(l)) = (&now_pinned, &event.live) {
            if p == l {
                Resolution::Accepted { live: l.clone() }
            } else {
                continue;
            }
        } else if event.live.is_none() && now_live.is_none() && now_pinned.is_none() {
            // A removal, and the lockfile no longer pins the tool.
            Resolution::Accepted {
                live: String::new(),
            }
        } else {
            continue;
        };
        resolved.extend(ledger.resolve(
            environment,
            &event.server,
            &event.tool,
            &resolution,
            at,
        )?);
    }
    Ok(SightingsRecorded {
        recorded: seen.drift.into_iter().zip(recorded).collect(),
        resolved,
    })
}

/// The fingerprint of a tool (or, for `""`, of the server) in `catalog`.
fn current(catalog: &Catalog, server: &str, tool: &str) -> Option<String> {
    if tool.is_empty() {
        catalog
            .servers
            .get(server)
            .map(|s| s.fingerprint().to_string())
    } else {
        tool_fingerprint(catalog, server, tool)
    }
}
