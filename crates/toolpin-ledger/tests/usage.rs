//! The usage store on both backends: merged writes equal one pass,
//! filtered reads, a damaged row is an error that changes nothing,
//! compaction keeps every total, concurrent writers lose no count.

mod common;

use std::borrow::Cow;

use common::Db;
use toolpin_ledger::usage::UsageFilter;
use toolpin_usage::{Aggregates, ArgValue, Call, EventKey, Key, Limits};

const HOUR: u64 = 3_600_000_000_000;
/// A day boundary (unix hour divisible by 24).
const H0: u64 = 490_008;

/// Calls in hours `H0 + hours`, alternating two environments and tools,
/// with arguments, errors and spread latencies; `salt` varies the values.
fn traffic(hours: std::ops::Range<u64>, per_hour: u64, salt: u64) -> Aggregates {
    let mut agg = Aggregates::new(Limits::default());
    let statuses = ["open", "shipped", "returned"];
    for h in hours {
        for i in 0..per_hour {
            let status = statuses[((i + salt) % 3) as usize];
            let args = [
                (
                    Cow::Borrowed("status"),
                    ArgValue::Str(Cow::Borrowed(status)),
                ),
                (Cow::Borrowed("page"), ArgValue::Other),
            ];
            agg.record_call(&Call {
                start_nanos: (H0 + h) * HOUR + i,
                duration_nanos: 1_000_000 + (i * 7_919 + salt * 104_729) % 50_000_000,
                environment: if i % 2 == 0 { "prod" } else { "staging" },
                tenant: "acme",
                agent: "support",
                catalog: "c1",
                tool: if i % 3 == 0 { "search" } else { "lookup" },
                tool_fingerprint: "f",
                error: (i % 11 == 0).then_some("timeout"),
                arguments: (i % 4 != 0).then_some(&args[..]),
            });
        }
        agg.add_events(
            EventKey {
                hour: H0 + h,
                environment: "prod".into(),
                event: "refused".into(),
                server: "shop".into(),
                tool: "x".into(),
                rule: "unknown-tool-called".into(),
                catalog: "c1".into(),
            },
            2,
        );
    }
    agg
}

fn all() -> UsageFilter {
    UsageFilter {
        from_hour: 0,
        until_hour: u64::MAX / 2,
        environment: None,
    }
}

fn two_merged_writes_equal_one_pass(db: &Db) {
    let mut ledger = db.open();
    let (a, b) = (traffic(0..3, 40, 1), traffic(2..5, 40, 2));
    let first = ledger.usage_merge(&a).unwrap();
    assert_eq!((first.keys, first.merged), (a.len() as u64, 0));
    let second = ledger.usage_merge(&b).unwrap();
    // Hour 2 was in both: its keys were merged into.
    assert!(
        second.merged > 0 && second.merged < second.keys,
        "{second:?}"
    );
    let mut one_pass = a.clone();
    one_pass.merge(&b);
    let stored = ledger.usage_read(&all()).unwrap();
    assert_eq!(stored, one_pass);
    assert_eq!(stored.total_calls(), 40 * 6);
    assert_eq!(ledger.usage_span().unwrap(), Some((H0, H0 + 5)));
}

fn reads_filter_by_hours_and_environment(db: &Db) {
    let mut ledger = db.open();
    let agg = traffic(0..6, 20, 0);
    ledger.usage_merge(&agg).unwrap();
    let prod = ledger
        .usage_read(&UsageFilter {
            from_hour: H0 + 1,
            until_hour: H0 + 3,
            environment: Some("prod".into()),
        })
        .unwrap();
    assert_eq!(
        prod,
        agg.within(H0 + 1, H0 + 3, Some("prod"))
            .clone_with_events(&agg, H0 + 1, H0 + 3)
    );
    let keys: Vec<&Key> = prod.calls().into_iter().map(|(k, _)| k).collect();
    assert!(keys
        .iter()
        .all(|k| &*k.environment == "prod" && (H0 + 1..H0 + 3).contains(&k.hour)));
    assert_eq!(prod.total_calls(), 2 * 10);
    assert_eq!(prod.events().len(), 2);
}

/// `within` keeps no events; the store's read keeps those in range.
trait WithEvents {
    fn clone_with_events(self, from: &Aggregates, from_hour: u64, until_hour: u64) -> Aggregates;
}

impl WithEvents for Aggregates {
    fn clone_with_events(
        mut self,
        from: &Aggregates,
        from_hour: u64,
        until_hour: u64,
    ) -> Aggregates {
        for (k, n) in from.events() {
            if k.hour >= from_hour && k.hour < until_hour && k.environment == "prod" {
                self.add_events(k.clone(), *n);
            }
        }
        self
    }
}

fn a_damaged_row_is_an_error_naming_it_and_changes_nothing(db: &Db) {
    let mut ledger = db.open();
    ledger.usage_merge(&traffic(0..1, 10, 0)).unwrap();
    db.batch(
        "UPDATE usage_calls SET stats = '{\"v\":1,\"calls\":3}' WHERE environment = 'prod' AND tool = 'search'",
    );
    let before = db.int("SELECT COUNT(*) FROM usage_calls");
    let e = ledger.usage_read(&all()).unwrap_err().to_string();
    assert!(e.contains("the usage row of hour"), "{e}");
    assert!(
        e.contains("tool \"search\"") && e.contains("environment \"prod\""),
        "{e}"
    );
    assert!(e.contains(&db.shown()), "{e}");
    // A write over the damaged row is refused too, and rolls back whole.
    let e = ledger
        .usage_merge(&traffic(0..1, 10, 0))
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot be read"), "{e}");
    assert_eq!(db.int("SELECT COUNT(*) FROM usage_calls"), before);
    let e = ledger
        .usage_compact(H0 + 100, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot be read"), "{e}");
    assert_eq!(
        db.int("SELECT COUNT(*) FROM usage_calls WHERE hours = 1"),
        before
    );
}

fn compaction_keeps_every_total_and_is_idempotent(db: &Db) {
    let mut ledger = db.open();
    // Two days of hours, and a third day that stays hourly.
    let agg = traffic(0..72, 12, 3);
    ledger.usage_merge(&agg).unwrap();
    let hourly = db.int("SELECT COUNT(*) FROM usage_calls");
    let done = ledger.usage_compact(H0 + 48, None).unwrap();
    assert_eq!(done.hours_rolled as i64, hourly * 2 / 3);
    assert_eq!(
        db.int("SELECT COUNT(*) FROM usage_calls WHERE hours = 24"),
        done.days_written as i64
    );
    let again = ledger.usage_compact(H0 + 48, None).unwrap();
    assert_eq!((again.hours_rolled, again.days_written), (0, 0));
    let stored = ledger.usage_read(&all()).unwrap();
    // Per (environment, tool), every total is what was written.
    let totals = |a: &Aggregates| {
        let mut t = std::collections::BTreeMap::new();
        for (k, s) in a.calls() {
            let e = t.entry((k.environment.clone(), k.tool.clone())).or_insert((
                0,
                0,
                0,
                0,
                u64::MAX,
                0,
            ));
            e.0 += s.calls;
            e.1 += s.errors_total();
            e.2 += s.with_arguments;
            e.3 += s.params.get("status").map_or(0, |p| p.supplied);
            e.4 = e.4.min(s.latency.min().unwrap_or(u64::MAX));
            e.5 = e.5.max(s.latency.max().unwrap_or(0));
        }
        t
    };
    assert_eq!(totals(&stored), totals(&agg));
    // Rolled-up keys sit on their day's first hour.
    let hours: std::collections::BTreeSet<u64> =
        stored.calls().iter().map(|(k, _)| k.hour).collect();
    assert!(hours.contains(&H0) && hours.contains(&(H0 + 24)) && !hours.contains(&(H0 + 1)));
    assert!(hours.contains(&(H0 + 50)));
    // Retention drops what ends before the cut, calls and events.
    let done = ledger.usage_compact(H0 + 48, Some(H0 + 24)).unwrap();
    assert!(done.deleted > 0);
    let kept = ledger.usage_read(&all()).unwrap();
    assert!(kept.calls().iter().all(|(k, _)| k.hour >= H0 + 24));
    assert!(kept.events().keys().all(|k| k.hour >= H0 + 24));
}

fn concurrent_writers_lose_no_count(db: &Db) {
    db.open();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let location = db.location();
            std::thread::spawn(move || {
                let mut ledger =
                    toolpin_ledger::Ledger::open_location(&location, &Default::default())
                        .expect("open");
                for round in 0..5 {
                    ledger
                        .usage_merge(&traffic(0..2, 10, t + round))
                        .expect("merge");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("writer");
    }
    let stored = db.open().usage_read(&all()).unwrap();
    assert_eq!(stored.total_calls(), 4 * 5 * 2 * 10);
    let events: u64 = stored.events().values().sum();
    assert_eq!(events, 4 * 5 * 2 * 2);
}

both! {
    two_merged_writes_equal_one_pass,
    reads_filter_by_hours_and_environment,
    a_damaged_row_is_an_error_naming_it_and_changes_nothing,
    compaction_keeps_every_total_and_is_idempotent,
    concurrent_writers_lose_no_count,
}
