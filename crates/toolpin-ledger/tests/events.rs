//! Events: deduplication, counts, severity, resolution, approvals.

mod common;

use common::{finding, refund, Db, LIVE, LIVE2, PINNED};
use toolpin_ledger::{
    EventFilter, EventKind, Notice, RecordOutcome, Resolution, Severity, Sighting,
};

fn tool_filter() -> EventFilter {
    EventFilter::tool("staging", "orders", "orders__lookup_order")
}

fn a_new_ledger_is_at_the_current_schema_version(db: &Db) {
    let mut ledger = db.open();
    assert_eq!(
        ledger.schema_version().unwrap(),
        toolpin_ledger::migrate::CURRENT
    );
    drop(ledger);
    // Reopening applies nothing twice.
    let mut ledger = db.open();
    assert_eq!(
        ledger.schema_version().unwrap(),
        toolpin_ledger::migrate::CURRENT
    );
}

fn a_version_1_ledger_is_migrated_and_keeps_its_events(db: &Db) {
    // A ledger as the first release wrote it: only migration 1.
    db.batch(toolpin_ledger::migrate::MIGRATIONS_TABLE);
    db.batch(db.migration(0));
    db.batch(
        "INSERT INTO migrations (version, name) VALUES (1, 'events and outbox'); \
         INSERT INTO events (environment, server, tool, pinned, live, kind, severity, \
         findings, first_seen, last_seen, count) VALUES ('staging', 'orders', 't', 'a', 'b', \
         'drift', 'high', '[]', 10, 20, 3)",
    );
    let mut ledger = db.open();
    assert_eq!(
        ledger.schema_version().unwrap(),
        toolpin_ledger::migrate::CURRENT
    );
    let events = ledger.events(&EventFilter::default()).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!((events[0].count, events[0].reruns), (3, 0));
    assert_eq!(events[0].pinned_version, None);
    assert_eq!(events[0].unchanged_at, None);
}

fn an_event_keeps_the_last_clean_check_before_it_and_the_review_cost(db: &Db) {
    let mut ledger = db.open();
    ledger
        .record_clean("staging", &["orders", "billing"], 1_000)
        .unwrap();
    ledger.record_clean("staging", &["orders"], 4_600).unwrap();
    // An older clean check never moves the mark back.
    ledger.record_clean("staging", &["orders"], 2_000).unwrap();
    let r = ledger
        .record_drift(
            &refund(8_200, Severity::High)
                .pinned_version("1.4.0")
                .reruns(3),
        )
        .unwrap();
    let event = ledger.event(r.event).unwrap().unwrap();
    assert_eq!(event.unchanged_at, Some(4_600));
    assert_eq!(event.pinned_version.as_deref(), Some("1.4.0"));
    assert_eq!(event.server_version.as_deref(), Some("1.4.0"));
    assert_eq!(event.reruns, 3);
    // A server never seen clean has no mark.
    let other = ledger
        .record_drift(&Sighting::drift(
            "prod",
            "orders",
            "t",
            Some(PINNED),
            Some(LIVE),
            9_000,
        ))
        .unwrap();
    assert_eq!(
        ledger.event(other.event).unwrap().unwrap().unchanged_at,
        None
    );
}

fn a_sink_reference_is_kept_per_sink_and_event(db: &Db) {
    let mut ledger = db.open();
    let r = ledger.record_drift(&refund(100, Severity::High)).unwrap();
    assert_eq!(ledger.sink_ref("github", r.event).unwrap(), None);
    ledger.set_sink_ref("github", r.event, "41").unwrap();
    ledger.set_sink_ref("github", r.event, "42").unwrap();
    assert_eq!(
        ledger.sink_ref("github", r.event).unwrap().as_deref(),
        Some("42")
    );
    assert_eq!(ledger.sink_ref("slack", r.event).unwrap(), None);
}

fn a_finding_detail_is_kept_and_capped(db: &Db) {
    let mut ledger = db.open();
    let mut f = finding(
        "description-changed",
        Severity::High,
        "t: description changed",
    );
    f.detail = Some(format!("{}é", "x".repeat(toolpin_ledger::MAX_DETAIL)));
    let r = ledger
        .record_drift(&refund(100, Severity::High).findings(vec![f]))
        .unwrap();
    let kept = ledger.event(r.event).unwrap().unwrap().findings[0]
        .detail
        .clone()
        .unwrap();
    assert!(kept.len() <= toolpin_ledger::MAX_DETAIL, "{}", kept.len());
    assert!(kept.ends_with('…'));
}

fn the_same_drift_seen_by_fifty_runs_is_one_event_with_a_count(db: &Db) {
    let mut ledger = db.open();
    let first = ledger.record_drift(&refund(1_000, Severity::High)).unwrap();
    assert_eq!(first.outcome, RecordOutcome::New);
    for run in 1..50 {
        let r = ledger
            .record_drift(&refund(1_000 + run * 3600, Severity::High))
            .unwrap();
        assert_eq!(r.outcome, RecordOutcome::Seen);
        assert_eq!(r.event, first.event);
    }
    let events = ledger.open_events(&tool_filter()).unwrap();
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!(e.count, 50);
    assert_eq!(e.first_seen, 1_000);
    assert_eq!(e.last_seen, 1_000 + 49 * 3600);
    assert_eq!(e.kind, EventKind::Drift);
    assert_eq!(e.severity, Some(Severity::High));
    assert_eq!(e.pinned.as_deref(), Some(PINNED));
    assert_eq!(e.live.as_deref(), Some(LIVE));
    assert_eq!(e.vendor.as_deref(), Some("acme"));
    assert_eq!(e.server_version.as_deref(), Some("1.4.0"));
    assert_eq!(e.findings.len(), 1);
    assert_eq!(e.findings[0].rule, "description-changed");
    assert!(e.resolved.is_none());
}

fn an_out_of_order_sighting_widens_first_and_last_seen(db: &Db) {
    let mut ledger = db.open();
    ledger.record_drift(&refund(5_000, Severity::High)).unwrap();
    ledger.record_drift(&refund(4_000, Severity::High)).unwrap();
    ledger.record_drift(&refund(6_000, Severity::High)).unwrap();
    let e = &ledger.open_events(&tool_filter()).unwrap()[0];
    assert_eq!((e.first_seen, e.last_seen, e.count), (4_000, 6_000, 3));
}

fn a_different_live_fingerprint_or_environment_is_another_event(db: &Db) {
    let mut ledger = db.open();
    let a = ledger.record_drift(&refund(1, Severity::High)).unwrap();
    let mut other_live = refund(2, Severity::High);
    other_live.live = Some(LIVE2.to_string());
    let b = ledger.record_drift(&other_live).unwrap();
    let mut prod = refund(3, Severity::High);
    prod.environment = "production".to_string();
    let c = ledger.record_drift(&prod).unwrap();
    // A tool removed upstream: no live fingerprint.
    let removed = Sighting::drift("staging", "orders", "orders__refund", Some(PINNED), None, 4);
    let d = ledger.record_drift(&removed).unwrap();
    let d2 = ledger.record_drift(&removed).unwrap();
    for r in [a, b, c, d] {
        assert_eq!(r.outcome, RecordOutcome::New);
    }
    assert_eq!(d2.outcome, RecordOutcome::Seen);
    assert_eq!(d2.event, d.event);
    let all = ledger.events(&EventFilter::default()).unwrap();
    assert_eq!(all.len(), 4);
    let gone = ledger.event(d.event).unwrap().unwrap();
    assert_eq!(gone.live, None);
    assert_eq!(gone.severity, None);
    assert_eq!(gone.count, 2);
}

fn a_sighting_more_severe_than_the_event_is_reported_once(db: &Db) {
    let mut ledger = db.open();
    let a = ledger.record_drift(&refund(1, Severity::Medium)).unwrap();
    assert_eq!(a.outcome, RecordOutcome::New);
    // Less or equally severe: seen.
    assert_eq!(
        ledger
            .record_drift(&refund(2, Severity::Low))
            .unwrap()
            .outcome,
        RecordOutcome::Seen
    );
    assert_eq!(
        ledger
            .record_drift(&refund(3, Severity::Medium))
            .unwrap()
            .outcome,
        RecordOutcome::Seen
    );
    // More severe (a stricter policy, a finding added): more severe, once.
    let worse = refund(4, Severity::Medium).findings(vec![
        finding("description-changed", Severity::Medium, "one"),
        finding("steering-text-added", Severity::Critical, "two"),
    ]);
    let b = ledger.record_drift(&worse).unwrap();
    assert_eq!(b.outcome, RecordOutcome::MoreSevere);
    assert_eq!(b.event, a.event);
    assert_eq!(
        ledger.record_drift(&worse).unwrap().outcome,
        RecordOutcome::Seen
    );
    assert_eq!(
        ledger
            .record_drift(&refund(6, Severity::High))
            .unwrap()
            .outcome,
        RecordOutcome::Seen
    );
    let e = ledger.event(a.event).unwrap().unwrap();
    assert_eq!(e.severity, Some(Severity::Critical));
    assert_eq!(e.count, 6);
    // The findings of the most severe sighting are kept.
    assert_eq!(e.findings.len(), 2);
    assert_eq!(e.findings[1].rule, "steering-text-added");
}

fn an_acceptance_resolves_the_event_of_the_accepted_fingerprint_only(db: &Db) {
    let mut ledger = db.open();
    let a = ledger.record_drift(&refund(1, Severity::High)).unwrap();
    let mut other = refund(2, Severity::High);
    other.live = Some(LIVE2.to_string());
    let b = ledger.record_drift(&other).unwrap();

    let resolved = ledger
        .resolve(
            "staging",
            "orders",
            "orders__lookup_order",
            &Resolution::Accepted {
                live: LIVE.to_string(),
            },
            100,
        )
        .unwrap();
    assert_eq!(resolved, vec![a.event]);
    let e = ledger.event(a.event).unwrap().unwrap();
    assert_eq!(
        e.resolved,
        Some((
            100,
            Resolution::Accepted {
                live: LIVE.to_string()
            }
        ))
    );
    let open = ledger.open_events(&tool_filter()).unwrap();
    assert_eq!(open.iter().map(|e| e.id).collect::<Vec<_>>(), vec![b.event]);

    // The same drift seen again after it was resolved is a new event.
    let again = ledger.record_drift(&refund(200, Severity::High)).unwrap();
    assert_eq!(again.outcome, RecordOutcome::New);
    assert_ne!(again.event, a.event);
}

fn upstream_going_back_resolves_every_open_drift_event_of_the_tool(db: &Db) {
    let mut ledger = db.open();
    let a = ledger.record_drift(&refund(1, Severity::High)).unwrap();
    let mut other = refund(2, Severity::High);
    other.live = Some(LIVE2.to_string());
    let b = ledger.record_drift(&other).unwrap();
    let mut proxy = refund(3, Severity::High);
    proxy.kind = EventKind::ProxyDrift;
    let c = ledger.record_drift(&proxy).unwrap();
    // Another tool and another environment are untouched.
    let mut elsewhere = refund(4, Severity::High);
    elsewhere.environment = "production".to_string();
    let d = ledger.record_drift(&elsewhere).unwrap();
    let mut rejected = refund(5, Severity::High);
    rejected.kind = EventKind::Rejected;
    let r = ledger.record_drift(&rejected).unwrap();

    let resolved = ledger
        .resolve(
            "staging",
            "orders",
            "orders__lookup_order",
            &Resolution::Reverted,
            50,
        )
        .unwrap();
    assert_eq!(resolved, vec![a.event, b.event, c.event]);
    for id in [a.event, b.event, c.event] {
        let e = ledger.event(id).unwrap().unwrap();
        assert_eq!(e.resolved, Some((50, Resolution::Reverted)));
    }
    assert!(ledger.event(d.event).unwrap().unwrap().resolved.is_none());
    // A rejection is a record of a decision, never open, never resolved.
    assert!(ledger.event(r.event).unwrap().unwrap().resolved.is_none());
    assert!(ledger.open_events(&tool_filter()).unwrap().is_empty());
    // Resolving again resolves nothing.
    assert!(ledger
        .resolve(
            "staging",
            "orders",
            "orders__lookup_order",
            &Resolution::Reverted,
            60
        )
        .unwrap()
        .is_empty());
}

fn an_approval_is_recorded_and_resolves_the_drift_it_accepts(db: &Db) {
    let mut ledger = db.open();
    let drift = ledger.record_drift(&refund(1, Severity::High)).unwrap();
    let (approval, resolved) = ledger
        .record_approval(
            "staging",
            "orders",
            "orders__lookup_order",
            Some(PINNED),
            LIVE,
            Some("acme"),
            10,
        )
        .unwrap();
    assert_eq!(approval.outcome, RecordOutcome::New);
    assert_eq!(resolved, vec![drift.event]);
    let a = ledger.event(approval.event).unwrap().unwrap();
    assert_eq!(a.kind, EventKind::Approved);
    assert_eq!(a.live.as_deref(), Some(LIVE));
    assert_eq!(a.vendor.as_deref(), Some("acme"));
    assert!(a.findings.is_empty());
    let d = ledger.event(drift.event).unwrap().unwrap();
    assert_eq!(
        d.resolved.map(|(at, r)| (at, r.reason())),
        Some((10, "accepted"))
    );
    assert!(ledger
        .open_events(&EventFilter::default())
        .unwrap()
        .is_empty());
    assert_eq!(ledger.events(&EventFilter::default()).unwrap().len(), 2);
}

fn every_event_kind_is_stored_and_read_back(db: &Db) {
    let mut ledger = db.open();
    for (i, kind) in EventKind::ALL.into_iter().enumerate() {
        let mut s = refund(i as i64, Severity::Low);
        s.kind = kind;
        let r = ledger.record_drift(&s).unwrap();
        assert_eq!(r.outcome, RecordOutcome::New, "{}", kind.name());
        assert_eq!(ledger.event(r.event).unwrap().unwrap().kind, kind);
        assert_eq!(EventKind::parse(kind.name()), Some(kind));
    }
    let open: Vec<_> = ledger
        .open_events(&EventFilter::default())
        .unwrap()
        .into_iter()
        .map(|e| e.kind.name())
        .collect();
    assert_eq!(
        open,
        vec!["drift", "proxy-drift", "proxy-refusal", "contract-failed"]
    );
}

fn a_contract_failure_is_resolved_by_a_passing_run_or_a_re_recording_only(db: &Db) {
    let mut ledger = db.open();
    let failed = |at, live: &str| {
        Sighting::new(
            EventKind::ContractFailed,
            "staging",
            "orders",
            "orders__lookup_order",
            at,
        )
        .fingerprints(Some(PINNED), Some(live))
        .findings(vec![finding(
            "result-shape-changed",
            Severity::High,
            "orders__lookup_order: the result lost `total`",
        )])
    };
    let a = ledger
        .record_and_enqueue(&failed(10, "aa"), &["pd"])
        .unwrap();
    assert_eq!(
        ledger.record_drift(&failed(20, "aa")).unwrap().event,
        a.event
    );
    let b = ledger.record_drift(&failed(30, "bb")).unwrap();
    assert_ne!(a.event, b.event);
    let drift = ledger.record_drift(&refund(30, Severity::High)).unwrap();

    // A definition's revert or acceptance leaves behaviour failures open.
    let tool = ("staging", "orders", "orders__lookup_order");
    let reverted = ledger
        .resolve(tool.0, tool.1, tool.2, &Resolution::Reverted, 40)
        .unwrap();
    assert_eq!(reverted, vec![drift.event]);
    // Re-recording the behaviour that failed as `aa` resolves that one.
    let accepted = ledger
        .resolve_contract(
            tool.0,
            tool.1,
            tool.2,
            &Resolution::Accepted { live: "aa".into() },
            50,
        )
        .unwrap();
    assert_eq!(accepted, vec![a.event]);
    // The sink sent the trigger gets a resolve.
    let notices: Vec<_> = ledger
        .deliveries(a.event)
        .unwrap()
        .into_iter()
        .map(|d| d.notice)
        .collect();
    assert_eq!(notices, vec![Notice::Trigger, Notice::Resolve]);
    // A run that passes resolves every other open one.
    let passed = ledger
        .resolve_contract(tool.0, tool.1, tool.2, &Resolution::Reverted, 60)
        .unwrap();
    assert_eq!(passed, vec![b.event]);
    let event = ledger.event(b.event).unwrap().unwrap();
    assert_eq!(event.resolved, Some((60, Resolution::Reverted)));
    assert!(ledger
        .resolve_contract(tool.0, tool.1, tool.2, &Resolution::Reverted, 70)
        .unwrap()
        .is_empty());
}

both! {
    a_contract_failure_is_resolved_by_a_passing_run_or_a_re_recording_only,
    a_new_ledger_is_at_the_current_schema_version,
    a_version_1_ledger_is_migrated_and_keeps_its_events,
    an_event_keeps_the_last_clean_check_before_it_and_the_review_cost,
    a_sink_reference_is_kept_per_sink_and_event,
    a_finding_detail_is_kept_and_capped,
    the_same_drift_seen_by_fifty_runs_is_one_event_with_a_count,
    an_out_of_order_sighting_widens_first_and_last_seen,
    a_different_live_fingerprint_or_environment_is_another_event,
    a_sighting_more_severe_than_the_event_is_reported_once,
    an_acceptance_resolves_the_event_of_the_accepted_fingerprint_only,
    upstream_going_back_resolves_every_open_drift_event_of_the_tool,
    an_approval_is_recorded_and_resolves_the_drift_it_accepts,
    every_event_kind_is_stored_and_read_back,
}
