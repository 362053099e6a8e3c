//! `Ledger::history`: counts per vendor, server and tool by UTC month and
//! quarter, silent drift, durations, review cost; the same on both
//! backends; and migration 3's backfill of a version-2 ledger.

mod common;

use common::{finding, Db, LIVE, LIVE2, PINNED};
use toolpin_ledger::history::days_from_civil;
use toolpin_ledger::{
    EventKind, FindingRecord, HistoryGroup, HistoryPeriod, HistoryQuery, HistoryRow, Ledger,
    Resolution, Severity, Sighting,
};

/// Unix seconds of a UTC date and time.
fn at(y: i64, m: u32, d: u32, h: i64, min: i64, s: i64) -> i64 {
    days_from_civil(y, m, d).expect("a real day") * 86_400 + h * 3600 + min * 60 + s
}

fn kinded(kind: &str, severity: Severity) -> FindingRecord {
    let mut f = finding("rule", severity, "m");
    f.kind = kind.to_string();
    f
}

fn drift(server: &str, tool: &str, live: &str, when: i64) -> Sighting {
    Sighting::drift("prod", server, tool, Some(PINNED), Some(live), when)
}

fn query(group: HistoryGroup, period: HistoryPeriod) -> HistoryQuery {
    HistoryQuery::new(group, period)
}

fn row<'a>(rows: &'a [HistoryRow], key: &str, period: &str) -> &'a HistoryRow {
    rows.iter()
        .find(|r| r.key == key && r.period == period)
        .unwrap_or_else(|| panic!("no row {key} {period} in {rows:#?}"))
}

/// Two vendors; acme's orders server drifts twice in September (one
/// silent), once a second past the end of September UTC, and is resolved;
/// an approval and a rejection; globex drifts in November.
fn story(ledger: &mut Ledger) {
    let sep_1 = at(2026, 9, 1, 0, 0, 0);
    ledger.record_clean("prod", &["orders"], sep_1).unwrap();
    // Silent: the server says 1.4.0 live and in the lockfile.
    ledger
        .record_drift(
            &drift("orders", "orders__lookup", LIVE, sep_1 + 3 * 3600)
                .findings(vec![
                    kinded("description", Severity::High),
                    kinded("structural", Severity::Medium),
                    kinded("structural", Severity::Low),
                ])
                .vendor("acme")
                .server_version("1.4.0")
                .pinned_version("1.4.0")
                .reruns(2),
        )
        .unwrap();
    // Not silent: the version moved.
    ledger
        .record_drift(
            &drift("orders", "orders__refund", LIVE, sep_1 + 5 * 3600)
                .findings(vec![kinded("semantic", Severity::Critical)])
                .vendor("acme")
                .server_version("1.5.0")
                .pinned_version("1.4.0")
                .reruns(1),
        )
        .unwrap();
    // 2026-09-30T23:59:59Z is Q3; this one is 2026-10-01T00:00:00Z, Q4.
    let oct_1 = at(2026, 10, 1, 0, 0, 0);
    ledger
        .record_drift(
            &drift("orders", "orders__lookup", LIVE2, oct_1)
                .findings(vec![kinded("behavioural", Severity::Info)])
                .vendor("acme"),
        )
        .unwrap();
    ledger
        .record_drift(
            &drift("orders", "orders__cancel", LIVE, oct_1 - 1)
                .findings(vec![kinded("description", Severity::Low)])
                .vendor("acme"),
        )
        .unwrap();
    // Accepted two days after it was first seen.
    ledger
        .record_approval(
            "prod",
            "orders",
            "orders__lookup",
            Some(PINNED),
            LIVE,
            Some("acme"),
            sep_1 + 3 * 3600 + 2 * 86_400,
        )
        .unwrap();
    ledger
        .record_drift(
            &Sighting::new(
                EventKind::Rejected,
                "prod",
                "orders",
                "orders__refund",
                sep_1 + 6 * 3600,
            )
            .vendor("acme"),
        )
        .unwrap();
    ledger
        .record_drift(
            &Sighting::drift(
                "staging",
                "billing",
                "billing__charge",
                Some(PINNED),
                None,
                at(2026, 11, 15, 12, 0, 0),
            )
            .findings(vec![kinded("structural", Severity::High)])
            .vendor("globex"),
        )
        .unwrap();
}

fn history_counts_per_vendor_and_quarter(db: &Db) {
    let mut ledger = db.open();
    story(&mut ledger);
    let rows = ledger
        .history(&query(HistoryGroup::Vendor, HistoryPeriod::Quarter))
        .unwrap();
    let keys: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.key.as_str(), r.period.as_str()))
        .collect();
    assert_eq!(
        keys,
        [
            ("acme", "2026-Q3"),
            ("acme", "2026-Q4"),
            ("globex", "2026-Q4")
        ]
    );
    let q3 = row(&rows, "acme", "2026-Q3");
    assert_eq!(q3.changes, 3, "{q3:#?}");
    assert_eq!(
        (
            q3.severity.critical,
            q3.severity.high,
            q3.severity.medium,
            q3.severity.low,
            q3.severity.info
        ),
        (1, 1, 0, 1, 0)
    );
    // The lookup event has two structural findings: counted once.
    assert_eq!(
        (
            q3.kinds.structural,
            q3.kinds.semantic,
            q3.kinds.description,
            q3.kinds.behavioural
        ),
        (1, 1, 2, 0)
    );
    assert_eq!(q3.silent, 1);
    assert_eq!((q3.approvals, q3.rejections, q3.reruns), (1, 1, 3));
    // Every September event is 3 h and 5 h and ~30 d after the clean check.
    assert_eq!(q3.to_first_sighting.count, 3);
    assert_eq!(q3.to_first_sighting.median, Some(5 * 3600));
    assert_eq!(
        q3.to_first_sighting.max,
        Some(at(2026, 10, 1, 0, 0, 0) - 1 - at(2026, 9, 1, 0, 0, 0))
    );
    assert_eq!(q3.to_resolution.count, 1);
    assert_eq!(q3.to_resolution.median, Some(2 * 86_400));
    assert_eq!(q3.to_resolution.max, Some(2 * 86_400));
    assert_eq!(q3.open, 2);
    let q4 = row(&rows, "acme", "2026-Q4");
    assert_eq!((q4.changes, q4.kinds.behavioural, q4.open), (1, 1, 1));
    assert_eq!(q4.to_resolution.median, None);
    let globex = row(&rows, "globex", "2026-Q4");
    assert_eq!(
        (globex.changes, globex.severity.high, globex.silent),
        (1, 1, 0)
    );
    assert_eq!(globex.to_first_sighting.count, 0, "no clean check before");
}

fn history_by_month_puts_the_last_second_of_september_in_september(db: &Db) {
    let mut ledger = db.open();
    story(&mut ledger);
    let rows = ledger
        .history(&query(HistoryGroup::Server, HistoryPeriod::Month))
        .unwrap();
    let keys: Vec<(&str, &str, i64)> = rows
        .iter()
        .map(|r| (r.key.as_str(), r.period.as_str(), r.changes))
        .collect();
    assert_eq!(
        keys,
        [
            ("billing", "2026-11", 1),
            ("orders", "2026-09", 3),
            ("orders", "2026-10", 1)
        ]
    );
    assert!(rows.iter().all(|r| r.server.is_none()));
}

fn history_per_tool_names_the_server_and_filters_apply(db: &Db) {
    let mut ledger = db.open();
    story(&mut ledger);
    let mut q = query(HistoryGroup::Tool, HistoryPeriod::Month);
    q.vendor = Some("acme".into());
    q.since = Some(at(2026, 9, 1, 4, 0, 0));
    q.until = Some(at(2026, 10, 1, 0, 0, 0));
    let rows = ledger.history(&q).unwrap();
    let keys: Vec<(&str, Option<&str>, &str)> = rows
        .iter()
        .map(|r| (r.key.as_str(), r.server.as_deref(), r.period.as_str()))
        .collect();
    // lookup's drift (03:00) is before `since`, its approval is not.
    assert_eq!(
        keys,
        [
            ("orders__cancel", Some("orders"), "2026-09"),
            ("orders__lookup", Some("orders"), "2026-09"),
            ("orders__refund", Some("orders"), "2026-09"),
        ]
    );
    assert_eq!(row(&rows, "orders__lookup", "2026-09").changes, 0);
    assert_eq!(row(&rows, "orders__lookup", "2026-09").approvals, 1);
    let mut q = query(HistoryGroup::Vendor, HistoryPeriod::Month);
    q.environment = Some("staging".into());
    let rows = ledger.history(&q).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].key, "globex");
    let mut q = query(HistoryGroup::Vendor, HistoryPeriod::Month);
    q.server = Some("orders".into());
    q.tool = Some("orders__refund".into());
    let rows = ledger.history(&q).unwrap();
    assert_eq!((rows.len(), rows[0].rejections, rows[0].changes), (1, 1, 1));
}

fn history_of_an_empty_ledger_is_empty(db: &Db) {
    let mut ledger = db.open();
    for period in [HistoryPeriod::Month, HistoryPeriod::Quarter] {
        assert!(ledger
            .history(&query(HistoryGroup::Vendor, period))
            .unwrap()
            .is_empty());
    }
}

fn an_event_with_no_vendor_is_grouped_under_the_empty_key(db: &Db) {
    let mut ledger = db.open();
    ledger
        .record_drift(&drift("x", "x__t", LIVE, at(2026, 1, 1, 0, 0, 0)))
        .unwrap();
    ledger
        .resolve(
            "prod",
            "x",
            "x__t",
            &Resolution::Reverted,
            at(2026, 1, 1, 3, 0, 0),
        )
        .unwrap();
    let rows = ledger
        .history(&query(HistoryGroup::Vendor, HistoryPeriod::Quarter))
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].key.as_str(), rows[0].period.as_str()),
        ("", "2026-Q1")
    );
    assert_eq!(
        (rows[0].open, rows[0].to_resolution.median),
        (0, Some(3 * 3600))
    );
}

fn a_version_2_ledger_gets_its_finding_kinds_backfilled(db: &Db) {
    db.batch(toolpin_ledger::migrate::MIGRATIONS_TABLE);
    db.batch(db.migration(0));
    db.batch(db.migration(1));
    // The findings JSON as this crate writes it; a message that mentions
    // a kind in quotes must not count.
    let findings = r#"[{"rule":"r","pointer":"/x","severity":"high","kind":"structural","message":"said \"kind\":\"semantic\" here"},{"rule":"r","pointer":"/d","severity":"low","kind":"description","message":"m"}]"#;
    db.batch(&format!(
        "INSERT INTO migrations (version, name) VALUES (1, 'events and outbox'), \
         (2, 'history and sink references'); \
         INSERT INTO events (environment, server, tool, pinned, live, kind, severity, \
         findings, vendor, first_seen, last_seen, count) VALUES ('prod', 'orders', 't', 'a', \
         'b', 'drift', 'high', '{}', 'acme', 1000, 1000, 1)",
        findings.replace('\'', "''")
    ));
    let mut ledger = db.open();
    // Migrated to the current version (3 backfills the kinds).
    assert_eq!(
        ledger.schema_version().unwrap(),
        toolpin_ledger::migrate::CURRENT
    );
    assert_eq!(db.int("SELECT finding_kinds FROM events"), 1 | 4);
    let rows = ledger
        .history(&query(HistoryGroup::Vendor, HistoryPeriod::Month))
        .unwrap();
    let k = rows[0].kinds;
    assert_eq!(
        (k.structural, k.semantic, k.description, k.behavioural),
        (1, 0, 1, 0)
    );
    // Read back as events too.
    assert_eq!(ledger.event(1).unwrap().unwrap().findings.len(), 2);
}

fn a_more_severe_sighting_rewrites_the_finding_kinds(db: &Db) {
    let mut ledger = db.open();
    let s = drift("orders", "t", LIVE, 100).findings(vec![kinded("description", Severity::Low)]);
    ledger.record_drift(&s).unwrap();
    ledger
        .record_drift(&s.clone().findings(vec![kinded("semantic", Severity::High)]))
        .unwrap();
    assert_eq!(db.int("SELECT finding_kinds FROM events"), 2);
}

both! {
    history_counts_per_vendor_and_quarter,
    history_by_month_puts_the_last_second_of_september_in_september,
    history_per_tool_names_the_server_and_filters_apply,
    history_of_an_empty_ledger_is_empty,
    an_event_with_no_vendor_is_grouped_under_the_empty_key,
    a_version_2_ledger_gets_its_finding_kinds_backfilled,
    a_more_severe_sighting_rewrites_the_finding_kinds,
}
