//! Several processes writing one ledger at once lose and duplicate nothing,
//! on one SQLite file and on one PostgreSQL database. Each thread opens its
//! own connection, as a separate watcher would.

mod common;

use std::sync::{Arc, Barrier};

use common::{finding, Db, LIVE, PINNED};
use toolpin_ledger::{EventFilter, Ledger, Location, Options, RecordOutcome, Severity, Sighting};

fn open(location: &Location) -> Ledger {
    Ledger::open_location(location, &Options::default()).unwrap()
}

const WRITERS: usize = 8;
const SHARED_TOOLS: usize = 10;
const OWN_TOOLS: usize = 5;
const ROUNDS: usize = 4;

fn sighting(tool: &str, at: i64) -> Sighting {
    Sighting::drift("staging", "orders", tool, Some(PINNED), Some(LIVE), at).findings(vec![
        finding("description-changed", Severity::High, "changed"),
    ])
}

fn concurrent_writers_lose_and_duplicate_nothing(db: &Db) {
    let path = db.location();
    let barrier = Arc::new(Barrier::new(WRITERS));
    let handles: Vec<_> = (0..WRITERS)
        .map(|w| {
            let path = path.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                // Opening (and migrating a new file) races too.
                let mut ledger = open(&path);
                let mut new = 0;
                for round in 0..ROUNDS {
                    let at = (round * 100 + w) as i64;
                    for t in 0..SHARED_TOOLS {
                        let r = ledger
                            .record_and_enqueue(&sighting(&format!("shared_{t}"), at), &["pd"])
                            .unwrap();
                        if r.outcome == RecordOutcome::New {
                            new += 1;
                        }
                    }
                    for t in 0..OWN_TOOLS {
                        let r = ledger
                            .record_and_enqueue(&sighting(&format!("own_{w}_{t}"), at), &["pd"])
                            .unwrap();
                        assert_eq!(
                            r.outcome,
                            if round == 0 {
                                RecordOutcome::New
                            } else {
                                RecordOutcome::Seen
                            }
                        );
                    }
                }
                new
            })
        })
        .collect();
    let new_shared: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    // Each shared drift was new to exactly one writer.
    assert_eq!(new_shared, SHARED_TOOLS);

    let mut ledger = open(&path);
    let events = ledger.events(&EventFilter::default()).unwrap();
    assert_eq!(events.len(), SHARED_TOOLS + WRITERS * OWN_TOOLS);
    for e in &events {
        let expected = if e.tool.starts_with("shared_") {
            WRITERS * ROUNDS
        } else {
            ROUNDS
        };
        assert_eq!(e.count, expected as i64, "{}", e.tool);
        // One trigger per event, whoever recorded it first.
        assert_eq!(ledger.deliveries(e.id).unwrap().len(), 1, "{}", e.tool);
    }
    let total: i64 = events.iter().map(|e| e.count).sum();
    assert_eq!(
        total as usize,
        WRITERS * ROUNDS * (SHARED_TOOLS + OWN_TOOLS)
    );
    let shared = events.iter().find(|e| e.tool == "shared_0").unwrap();
    assert_eq!(shared.first_seen, 0);
    assert_eq!(shared.last_seen, ((ROUNDS - 1) * 100 + WRITERS - 1) as i64);
}

fn concurrent_watchers_never_take_the_same_delivery(db: &Db) {
    let path = db.location();
    {
        let mut ledger = open(&path);
        for t in 0..50 {
            ledger
                .record_and_enqueue(&sighting(&format!("tool_{t}"), 1), &["slack", "pd"])
                .unwrap();
        }
    }
    let barrier = Arc::new(Barrier::new(WRITERS));
    let handles: Vec<_> = (0..WRITERS)
        .map(|_| {
            let path = path.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut ledger = open(&path);
                barrier.wait();
                let mut ids = Vec::new();
                loop {
                    let taken = ledger.take_due(10, 3).unwrap();
                    if taken.is_empty() {
                        break;
                    }
                    for d in taken {
                        ledger.mark_delivered(d.id, 11).unwrap();
                        ids.push(d.id);
                    }
                }
                ids
            })
        })
        .collect();
    let mut all: Vec<i64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let taken = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(taken, 100, "every delivery taken once");
    assert_eq!(all.len(), 100, "none taken twice");
}

/// Whole checks recorded at once by several watchers, the same tools in
/// opposite orders (so their row locks cross): every sighting is counted,
/// each tool is one event with one trigger.
fn concurrent_batches_in_opposite_orders_lose_nothing(db: &Db) {
    const TOOLS: usize = 20;
    let path = db.location();
    drop(open(&path));
    let barrier = Arc::new(Barrier::new(WRITERS));
    let handles: Vec<_> = (0..WRITERS)
        .map(|w| {
            let path = path.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut ledger = open(&path);
                barrier.wait();
                for round in 0..ROUNDS {
                    let mut batch: Vec<Sighting> = (0..TOOLS)
                        .map(|t| sighting(&format!("tool_{t}"), (round * 10 + w) as i64))
                        .collect();
                    if w % 2 == 1 {
                        batch.reverse();
                    }
                    ledger
                        .record_batch(&batch, |_| vec!["pd".to_string()])
                        .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let mut ledger = open(&path);
    let events = ledger.events(&EventFilter::default()).unwrap();
    assert_eq!(events.len(), TOOLS);
    for e in &events {
        assert_eq!(e.count, (WRITERS * ROUNDS) as i64, "{}", e.tool);
        assert_eq!(ledger.deliveries(e.id).unwrap().len(), 1, "{}", e.tool);
    }
}

both! {
    concurrent_batches_in_opposite_orders_lose_nothing,
    concurrent_writers_lose_and_duplicate_nothing,
    concurrent_watchers_never_take_the_same_delivery,
}
