//! The outbox: enqueued with the event, never twice, delivered or retried
//! with backoff.

mod common;

use common::{finding, refund, Db, LIVE};
use toolpin_ledger::{
    backoff, DeliveryState, Notice, RecordOutcome, Resolution, Severity, LEASE, MAX_ATTEMPTS,
};

fn a_new_event_enqueues_one_trigger_per_sink_and_a_retry_never_enqueues_twice(db: &Db) {
    let mut ledger = db.open();
    let sinks = ["orders-oncall", "audit"];
    let first = ledger
        .record_and_enqueue(&refund(100, Severity::High), &sinks)
        .unwrap();
    assert_eq!(first.outcome, RecordOutcome::New);
    // Fifty more runs see the same drift: nothing more is enqueued.
    for run in 1..=50 {
        let r = ledger
            .record_and_enqueue(&refund(100 + run, Severity::High), &sinks)
            .unwrap();
        assert_eq!(r.outcome, RecordOutcome::Seen);
    }
    let deliveries = ledger.deliveries(first.event).unwrap();
    let got: Vec<_> = deliveries
        .iter()
        .map(|d| (d.sink.as_str(), d.notice, d.state))
        .collect();
    assert_eq!(
        got,
        vec![
            ("orders-oncall", Notice::Trigger, DeliveryState::Pending),
            ("audit", Notice::Trigger, DeliveryState::Pending),
        ]
    );
    // Enqueuing the same notice again by hand is refused, not duplicated.
    assert!(!ledger
        .enqueue("audit", first.event, Notice::Trigger, 500)
        .unwrap());
    assert!(ledger
        .enqueue("slack", first.event, Notice::Trigger, 500)
        .unwrap());
    assert!(!ledger
        .enqueue("slack", first.event, Notice::Trigger, 501)
        .unwrap());
    assert_eq!(ledger.deliveries(first.event).unwrap().len(), 3);
}

fn an_escalation_is_enqueued_once_per_severity_and_a_resolution_follows_each_trigger(db: &Db) {
    let mut ledger = db.open();
    let sinks = ["pd"];
    let e = ledger
        .record_and_enqueue(&refund(1, Severity::Medium), &sinks)
        .unwrap()
        .event;
    ledger
        .record_and_enqueue(&refund(2, Severity::High), &sinks)
        .unwrap();
    ledger
        .record_and_enqueue(&refund(3, Severity::High), &sinks)
        .unwrap();
    ledger
        .record_and_enqueue(&refund(4, Severity::Critical), &sinks)
        .unwrap();
    // A sink that only ever saw an escalation gets no resolve: resolves
    // follow triggers.
    ledger
        .enqueue("late", e, Notice::Escalate(Severity::Critical), 4)
        .unwrap();
    let resolved = ledger
        .resolve(
            "staging",
            "orders",
            "orders__lookup_order",
            &Resolution::Accepted {
                live: LIVE.to_string(),
            },
            9,
        )
        .unwrap();
    assert_eq!(resolved, vec![e]);
    // Resolving again (a retried acceptance) enqueues nothing more.
    ledger
        .resolve(
            "staging",
            "orders",
            "orders__lookup_order",
            &Resolution::Reverted,
            10,
        )
        .unwrap();
    let got: Vec<_> = ledger
        .deliveries(e)
        .unwrap()
        .into_iter()
        .map(|d| (d.sink, d.notice))
        .collect();
    assert_eq!(
        got,
        vec![
            ("pd".to_string(), Notice::Trigger),
            ("pd".to_string(), Notice::Escalate(Severity::High)),
            ("pd".to_string(), Notice::Escalate(Severity::Critical)),
            ("late".to_string(), Notice::Escalate(Severity::Critical)),
            ("pd".to_string(), Notice::Resolve),
        ]
    );
}

fn due_deliveries_are_taken_leased_delivered_or_retried_with_backoff(db: &Db) {
    let mut ledger = db.open();
    let e = ledger
        .record_and_enqueue(&refund(1_000, Severity::High), &["slack", "pd"])
        .unwrap()
        .event;

    assert!(ledger.take_due(999, 10).unwrap().is_empty(), "not due yet");
    let taken = ledger.take_due(1_000, 10).unwrap();
    assert_eq!(taken.len(), 2);
    assert_eq!(taken[0].sink, "slack");
    assert_eq!(taken[0].attempts, 1);
    assert_eq!(taken[0].next_attempt_at, 1_000 + LEASE);
    assert_eq!(taken[0].event.id, e);
    assert_eq!(taken[0].event.findings[0].rule, "description-changed");
    // Leased: another watcher does not take them meanwhile.
    assert!(ledger.take_due(1_001, 10).unwrap().is_empty());

    ledger.mark_delivered(taken[0].id, 1_002).unwrap();
    let state = ledger
        .mark_failed(taken[1].id, "pagerduty: HTTP 503", 1_003)
        .unwrap();
    assert_eq!(state, DeliveryState::Pending);

    let all = ledger.deliveries(e).unwrap();
    assert_eq!(all[0].state, DeliveryState::Delivered);
    assert_eq!(all[0].delivered_at, Some(1_002));
    assert_eq!(all[1].state, DeliveryState::Pending);
    assert_eq!(all[1].last_error.as_deref(), Some("pagerduty: HTTP 503"));
    assert_eq!(all[1].next_attempt_at, 1_003 + backoff(1));
    assert_eq!(backoff(1), 60);

    // Not due until the backoff has passed; then retried, with a longer
    // backoff after each failure, and failed for good after MAX_ATTEMPTS.
    assert!(ledger.take_due(1_003 + 59, 10).unwrap().is_empty());
    let mut now = 1_003 + 60;
    let mut state = DeliveryState::Pending;
    for attempt in 2..=MAX_ATTEMPTS {
        let taken = ledger.take_due(now, 10).unwrap();
        assert_eq!(taken.len(), 1, "attempt {attempt}");
        assert_eq!(taken[0].attempts, attempt);
        state = ledger.mark_failed(taken[0].id, "HTTP 503", now).unwrap();
        let d = &ledger.deliveries(e).unwrap()[1];
        if state == DeliveryState::Pending {
            assert_eq!(d.next_attempt_at, now + backoff(attempt));
        }
        now += backoff(attempt);
    }
    assert_eq!(state, DeliveryState::Failed);
    assert!(ledger.take_due(now + 1_000_000, 10).unwrap().is_empty());
    assert_eq!(
        ledger.deliveries(e).unwrap()[1].state,
        DeliveryState::Failed
    );
}

fn a_delivery_given_up_is_never_taken_again(db: &Db) {
    let mut ledger = db.open();
    let e = ledger
        .record_and_enqueue(&refund(1_000, Severity::High), &["github", "pd"])
        .unwrap()
        .event;
    let taken = ledger.take_due(1_000, 10).unwrap();
    assert_eq!(taken.len(), 2);
    // A 401 from GitHub: no retry changes it.
    ledger
        .give_up(
            taken[0].id,
            "notify.github: HTTP 401 Bad credentials",
            1_001,
        )
        .unwrap();
    ledger.mark_failed(taken[1].id, "HTTP 503", 1_001).unwrap();
    let all = ledger.deliveries(e).unwrap();
    assert_eq!(all[0].state, DeliveryState::Failed);
    assert_eq!(all[0].attempts, 1);
    assert_eq!(
        all[0].last_error.as_deref(),
        Some("notify.github: HTTP 401 Bad credentials")
    );
    assert_eq!(all[1].state, DeliveryState::Pending);
    let later = ledger.take_due(1_001 + 1_000_000, 10).unwrap();
    assert_eq!(
        later.iter().map(|d| d.sink.as_str()).collect::<Vec<_>>(),
        vec!["pd"]
    );
    // Only a pending delivery can be given up.
    assert!(ledger.give_up(taken[0].id, "again", 1_002).is_err());
}

fn a_watcher_takes_only_the_deliveries_of_its_own_sinks(db: &Db) {
    let mut ledger = db.open();
    ledger
        .record_and_enqueue(
            &refund(1_000, Severity::High),
            &["orders-oncall", "audit", "chat"],
        )
        .unwrap();
    let mine = ["audit".to_string(), "chat".to_string()];
    let taken = ledger.take_due_for(1_000, 10, Some(&mine)).unwrap();
    assert_eq!(
        taken.iter().map(|d| d.sink.as_str()).collect::<Vec<_>>(),
        vec!["audit", "chat"]
    );
    assert!(ledger
        .take_due_for(1_000, 10, Some(&[]))
        .unwrap()
        .is_empty());
    let rest = ledger.take_due(1_000, 10).unwrap();
    assert_eq!(
        rest.iter().map(|d| d.sink.as_str()).collect::<Vec<_>>(),
        vec!["orders-oncall"]
    );
}

#[test]
fn the_backoff_doubles_and_is_capped() {
    assert_eq!(
        (1..=6).map(backoff).collect::<Vec<_>>(),
        vec![60, 120, 240, 480, 960, 1920]
    );
    assert_eq!(backoff(30), 6 * 3600);
    assert_eq!(backoff(0), 60);
}

fn an_event_s_notifications_are_committed_with_it(db: &Db) {
    // The event and its notifications are one transaction: once
    // record_and_enqueue returns, another connection sees both.
    let mut ledger = db.open();
    let s = refund(1, Severity::High).findings(vec![finding(
        "description-changed",
        Severity::High,
        "x",
    )]);
    let r = ledger.record_and_enqueue(&s, &["a", "b", "c"]).unwrap();
    drop(ledger);
    // A new connection (another process) sees the event and its outbox.
    let mut ledger = db.open();
    assert_eq!(ledger.deliveries(r.event).unwrap().len(), 3);
}

fn a_batch_is_recorded_and_routed_in_one_transaction(db: &Db) {
    let mut ledger = db.open();
    let mut other = refund(1, Severity::Low);
    other.server = "billing".to_string();
    other.tool = "billing__charge".to_string();
    let batch = vec![
        refund(1, Severity::High),
        other,
        refund(2, Severity::Critical),
    ];
    // Routing by server: the orders on-call gets the orders server only.
    let route = |s: &toolpin_ledger::Sighting| {
        let mut sinks = vec!["audit".to_string()];
        if s.server == "orders" {
            sinks.push("orders-oncall".to_string());
        }
        sinks
    };
    let recorded = ledger.record_batch(&batch, route).unwrap();
    let outcomes: Vec<_> = recorded.iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        vec![
            RecordOutcome::New,
            RecordOutcome::New,
            RecordOutcome::MoreSevere
        ]
    );
    let orders: Vec<_> = ledger
        .deliveries(recorded[0].event)
        .unwrap()
        .into_iter()
        .map(|d| (d.sink, d.notice))
        .collect();
    assert_eq!(
        orders,
        vec![
            ("audit".to_string(), Notice::Trigger),
            ("orders-oncall".to_string(), Notice::Trigger),
            ("audit".to_string(), Notice::Escalate(Severity::Critical)),
            (
                "orders-oncall".to_string(),
                Notice::Escalate(Severity::Critical)
            ),
        ]
    );
    let billing: Vec<_> = ledger
        .deliveries(recorded[1].event)
        .unwrap()
        .into_iter()
        .map(|d| d.sink)
        .collect();
    assert_eq!(billing, vec!["audit".to_string()]);
}

both! {
    an_event_s_notifications_are_committed_with_it,
    a_new_event_enqueues_one_trigger_per_sink_and_a_retry_never_enqueues_twice,
    an_escalation_is_enqueued_once_per_severity_and_a_resolution_follows_each_trigger,
    due_deliveries_are_taken_leased_delivered_or_retried_with_backoff,
    a_delivery_given_up_is_never_taken_again,
    a_watcher_takes_only_the_deliveries_of_its_own_sinks,
    a_batch_is_recorded_and_routed_in_one_transaction,
}
