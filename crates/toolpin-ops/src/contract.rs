//! `toolpin contract record` and `run` ([`record`], [`run`]: the calls
//! made on a pool of threads), and contract runs in the ledger: a tool whose live behaviour fails its
//! contract is a `contract-failed` event; a run in which it behaves as
//! recorded again resolves it (reverted), and re-recording the behaviour
//! resolves it too (accepted).

use std::collections::{BTreeMap, BTreeSet};

use crate::record::SightingsRecorded;
use toolpin_drift::policy::Verdict;
use toolpin_drift::Comparison;
use toolpin_ledger::{EventFilter, EventKind, Ledger, Resolution, Sighting};
use toolpin_manifest::{Catalog, Fingerprint};

use crate::record::{finding_record, server_info};

mod calls;
mod observe;

pub use calls::{record, run, unavailable, Judged, Loaded, Ran, Recording};

/// One `contract-failed` sighting per tool with failing findings. The
/// event is keyed by the pinned tool and by the failure itself (its rules,
/// calls and pointers, not its messages, which quote values that move):
/// the same failure run after run is one event, a different one another.
pub fn contract_sightings(
    environment: &str,
    pinned: &Catalog,
    comparison: &Comparison,
    verdict: &Verdict,
    vendors: &BTreeMap<String, String>,
    at: i64,
) -> Vec<Sighting> {
    let by_tool = crate::record::failing_by_tool(comparison, verdict);
    by_tool
        .into_iter()
        .map(|((server, tool), indices)| {
            let findings: Vec<_> = indices
                .iter()
                .filter_map(|&i| comparison.findings.get(i))
                .collect();
            let mut key: Vec<String> = findings
                .iter()
                .map(|f| {
                    format!(
                        "{}\u{1f}{}\u{1f}{}",
                        f.rule,
                        f.call.as_deref().unwrap_or(""),
                        f.pointer
                    )
                })
                .collect();
            key.sort_unstable();
            key.dedup();
            let failure = Fingerprint::of_bytes(key.join("\n").as_bytes()).to_hex();
            let pin = pinned
                .servers
                .get(server)
                .and_then(|s| s.tools.get(tool))
                .map(|t| t.fingerprint.to_hex());
            let mut s = Sighting::new(EventKind::ContractFailed, environment, server, tool, at)
                .fingerprints(pin.as_deref(), Some(&failure))
                .findings(findings.into_iter().map(finding_record).collect());
            s.vendor = vendors
                .get(server)
                .cloned()
                .or_else(|| server_info(pinned, server, "name"));
            s.pinned_version = server_info(pinned, server, "version");
            s
        })
        .collect()
}

/// Records a run's failures and resolves, as reverted, the open failures
/// of every tool called (`server/tool`) that did not fail this time.
pub fn record_contract_run<F>(
    ledger: &mut Ledger,
    environment: &str,
    failed: Vec<Sighting>,
    called: &BTreeSet<String>,
    route: F,
    at: i64,
) -> Result<SightingsRecorded, toolpin_ledger::Error>
where
    F: Fn(&Sighting) -> Vec<String>,
{
    let recorded = ledger.record_batch(&failed, route)?;
    let failing: BTreeSet<String> = failed
        .iter()
        .map(|s| format!("{}/{}", s.server, s.tool))
        .collect();
    let passed = |e: &toolpin_ledger::Event| {
        let key = format!("{}/{}", e.server, e.tool);
        called.contains(&key) && !failing.contains(&key)
    };
    let resolved = resolve_open(ledger, environment, passed, |_| Resolution::Reverted, at)?;
    Ok(SightingsRecorded {
        recorded: failed.into_iter().zip(recorded).collect(),
        resolved,
    })
}

/// Resolves, as accepted, the open failures of the tools (`server/tool`)
/// whose behaviour was just re-recorded.
pub fn record_rerecorded(
    ledger: &mut Ledger,
    environment: &str,
    tools: &BTreeSet<String>,
    at: i64,
) -> Result<Vec<i64>, toolpin_ledger::Error> {
    resolve_open(
        ledger,
        environment,
        |e| tools.contains(&format!("{}/{}", e.server, e.tool)),
        |e| Resolution::Accepted {
            live: e.live.clone().unwrap_or_default(),
        },
        at,
    )
}

fn resolve_open(
    ledger: &mut Ledger,
    environment: &str,
    select: impl Fn(&toolpin_ledger::Event) -> bool,
    how: impl Fn(&toolpin_ledger::Event) -> Resolution,
    at: i64,
) -> Result<Vec<i64>, toolpin_ledger::Error> {
    let open = ledger.open_events(&EventFilter {
        environment: Some(environment.to_string()),
        ..EventFilter::default()
    })?;
    let mut resolved = Vec::new();
    for event in open {
        if event.kind != EventKind::ContractFailed || !select(&event) {
            continue;
        }
        resolved.extend(ledger.resolve_contract(
            environment,
            &event.server,
            &event.tool,
            &how(&event),
            at,
        )?);
    }
    Ok(resolved)
}
