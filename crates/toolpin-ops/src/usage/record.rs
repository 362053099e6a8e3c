//! A usage report's alarms as ledger sightings: one `usage-shift` event per
//! (environment, tool, catalog pair), each alarm one of its findings
//! (`usage-selection-share`, `usage-unknown-tool`, …), so that the same
//! alarm on the next report is one more sighting of the same event and
//! pages no one twice.

use std::collections::BTreeMap;

use toolpin_ledger::{EventKind, FindingRecord, Severity, Sighting};
use toolpin_usage::report::{Alarm, AlarmKind, UsageReport};

use crate::settings::Config;

use super::pinned::PinnedCatalogs;
use crate::Error;

/// How serious each kind of alarm is (the sinks' `min_severity` reads it).
pub fn severity(kind: AlarmKind) -> Severity {
    match kind {
        // A tool the pin does not have is being called: the catalog the
        // model reads is not the one reviewed.
        AlarmKind::UnknownTool => Severity::High,
        AlarmKind::UnknownEnumValue
        | AlarmKind::SelectionShare
        | AlarmKind::EnumShift
        | AlarmKind::ErrorRate => Severity::Medium,
        AlarmKind::SuppliedRate | AlarmKind::LatencyP95 => Severity::Low,
    }
}

fn finding(alarm: &Alarm) -> FindingRecord {
    let who = format!(
        "[{}/{}] ",
        if alarm.tenant.is_empty() {
            "-"
        } else {
            &alarm.tenant
        },
        if alarm.agent.is_empty() {
            "-"
        } else {
            &alarm.agent
        }
    );
    FindingRecord {
        rule: format!("usage-{}", alarm.kind.name()),
        pointer: alarm
            .parameter
            .as_ref()
            .map(|p| {
                format!(
                    "/inputSchema/properties/{}",
                    p.replace('~', "~0").replace('/', "~1")
                )
            })
            .unwrap_or_default(),
        severity: severity(alarm.kind),
        kind: "behavioural".to_string(),
        message: format!("{who}{}", alarm.message),
        detail: alarm.change.clone(),
    }
}

/// The server that pins `tool` in `catalog`, when one does.
fn server_of(pinned: &PinnedCatalogs, catalog: &str, tool: &str) -> Option<String> {
    let version = pinned.get(catalog)?;
    version
        .catalog
        .tools()
        .find(|(name, _, _)| *name == tool)
        .map(|(_, server, _)| server.to_string())
}

/// The sightings of `report`'s alarms, at `at` (unix seconds). The
/// server is the one pinning the tool in the newer catalog, else
/// `usage` (a tool no pin has).
pub fn sightings(report: &UsageReport, pinned: &PinnedCatalogs, at: i64) -> Vec<Sighting> {
    let mut grouped: BTreeMap<(&str, &str, Option<&str>, &str), Vec<&Alarm>> = BTreeMap::new();
    for alarm in &report.alarms {
        grouped
            .entry((
                alarm.environment.as_str(),
                alarm.tool.as_str(),
                alarm.from_catalog.as_deref(),
                alarm.to_catalog.as_str(),
            ))
            .or_default()
            .push(alarm);
    }
    grouped
        .into_iter()
        .map(|((environment, tool, from, to), alarms)| {
            let server = server_of(pinned, to, tool)
                .or_else(|| from.and_then(|f| server_of(pinned, f, tool)))
                .unwrap_or_else(|| "usage".to_string());
            let environment = if environment.is_empty() {
                "default"
            } else {
                environment
            };
            let mut s = Sighting::new(EventKind::UsageShift, environment, &server, tool, at)
                .fingerprints(Some(from.unwrap_or(to)), Some(to));
            s.findings = alarms.into_iter().map(finding).collect();
            s
        })
        .collect()
}

/// Records the alarms as `usage-shift` events in the ledger, each routed
/// to the `[notify.NAME]` sinks that admit it: their notifications are
/// enqueued with them, and `toolpin watch` delivers them (a report never
/// waits on a sink, nor sends what other commands enqueued). An alarm seen
/// before is one more sighting, and enqueues nothing.
pub fn record_alarms(
    cfg: &Config,
    pinned: &PinnedCatalogs,
    report: &toolpin_usage::report::UsageReport,
    quiet: bool,
) -> Result<(), Error> {
    let at = crate::now();
    let sightings = sightings(report, pinned, at);
    let mut recorder = crate::recorder::Recorder::open(cfg, quiet)?;
    let route = crate::deliver::route(&cfg.notify);
    let recorded = recorder.write(|ledger| ledger.record_batch(&sightings, &route))?;
    let Some(recorded) = recorded else {
        return Ok(());
    };
    if !quiet {
        let new = recorded
            .iter()
            .filter(|r| r.outcome == toolpin_ledger::RecordOutcome::New)
            .count();
        eprintln!(
            "usage: {} usage-shift event{} in the ledger ({new} new)",
            recorded.len(),
            if recorded.len() == 1 { "" } else { "s" }
        );
    }
    Ok(())
}
