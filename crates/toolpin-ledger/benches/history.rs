//! `toolpin history` and recording at the scale (issue 18, point
//! 4): a SQLite ledger of 1,000,000 events (20 vendors × 5 servers × 10
//! tools, first sightings spread over two years) answers history by
//! quarter for one vendor (target ≤ 100 ms), beside the floor of a plain
//! `SELECT count(*)` over the same vendor's rows; and `record_batch` of
//! 10,000 new sightings into a fresh ledger (target ≤ 1 s).
//! Run with `cargo bench -p toolpin-ledger --bench history`; not part of
//! the test suite. Figures are in docs/performance.md.
//! `TOOLPIN_BENCH_LEDGER=/tmp/bench.db` keeps the million-event ledger for
//! the next run.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use toolpin_ledger::{
    Event, EventKind, FindingRecord, HistoryGroup, HistoryPeriod, HistoryQuery, Ledger, Resolution,
    Severity, Sighting,
};

const EVENTS: usize = 1_000_000;
const VENDORS: usize = 20;
const SERVERS_PER_VENDOR: usize = 5;
const TOOLS_PER_SERVER: usize = 10;
/// 2025-01-01T00:00:00Z.
const START: i64 = 1_735_689_600;
const TWO_YEARS: i64 = 2 * 365 * 86_400;

/// A small deterministic generator (xorshift64*), so every run builds the
/// same ledger.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const KINDS: [&str; 4] = ["structural", "semantic", "description", "behavioural"];

fn event(i: usize, rng: &mut Rng) -> Event {
    let vendor = i % VENDORS;
    let server = vendor * SERVERS_PER_VENDOR + (i / VENDORS) % SERVERS_PER_VENDOR;
    let tool = rng.below(TOOLS_PER_SERVER as u64);
    let first_seen = START + rng.below(TWO_YEARS as u64) as i64;
    let kind = match rng.below(100) {
        0..=79 => EventKind::Drift,
        80..=84 => EventKind::ProxyDrift,
        85..=86 => EventKind::ContractFailed,
        87..=95 => EventKind::Approved,
        _ => EventKind::Rejected,
    };
    let severity = Severity::ALL[rng.below(5) as usize];
    let resolved = (kind.is_resolvable() && rng.below(10) < 8).then(|| {
        let reason = if rng.below(2) == 0 {
            Resolution::Reverted
        } else {
            Resolution::Accepted {
                live: String::new(),
            }
        };
        (first_seen + rng.below(14 * 86_400) as i64, reason)
    });
    let version = format!("1.{}.0", rng.below(3));
    Event {
        id: 0,
        environment: "prod".to_string(),
        server: format!("server-{server:03}"),
        tool: format!("server-{server:03}__tool_{tool}"),
        pinned: Some(format!("{:064x}", i)),
        // Unique, so that open events never share a key.
        live: Some(format!("{:064x}", i + EVENTS)),
        kind,
        severity: Some(severity),
        findings: vec![FindingRecord {
            rule: "description-changed".to_string(),
            pointer: "/description".to_string(),
            severity,
            kind: KINDS[rng.below(4) as usize].to_string(),
            message: "the description changed".to_string(),
            detail: None,
        }],
        vendor: Some(format!("vendor-{vendor:02}")),
        server_version: Some(version),
        pinned_version: Some("1.0.0".to_string()),
        reruns: rng.below(4) as i64,
        unchanged_at: (rng.below(10) < 7).then(|| first_seen - rng.below(86_400) as i64),
        first_seen,
        last_seen: first_seen,
        count: 1,
        resolved,
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolpin-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn fill(path: &std::path::Path) {
    let mut ledger = Ledger::open(path).expect("ledger");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let started = Instant::now();
    // In chunks, to keep memory flat; each chunk is one transaction.
    let chunk = 100_000;
    for base in (0..EVENTS).step_by(chunk) {
        let events: Vec<Event> = (base..base + chunk).map(|i| event(i, &mut rng)).collect();
        ledger.insert_events_unchecked(&events).expect("insert");
    }
    eprintln!(
        "filled {EVENTS} events in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

fn sightings(n: usize) -> Vec<Sighting> {
    (0..n)
        .map(|i| {
            let live = format!("{:064x}", i);
            Sighting::drift(
                "prod",
                &format!("server-{:03}", i % 100),
                &format!("server-{:03}__tool_{i}", i % 100),
                Some("4ee55e610c4090f00097543b9b1b8f40a2c5f140a4a4838d194ad1be72464bef"),
                Some(&live),
                START + i as i64,
            )
            .findings(vec![FindingRecord {
                rule: "description-changed".to_string(),
                pointer: "/description".to_string(),
                severity: Severity::High,
                kind: "description".to_string(),
                message: "the description changed".to_string(),
                detail: Some("Look up an order by ID.{+ Prefer search.+}".to_string()),
            }])
            .vendor("acme")
            .server_version("1.4.0")
            .pinned_version("1.4.0")
            .reruns(2)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    // TOOLPIN_BENCH_LEDGER=PATH keeps the filled ledger there (and reuses
    // it when it exists), to spare the fill between runs.
    let dir = temp_dir("history");
    let kept = std::env::var_os("TOOLPIN_BENCH_LEDGER").map(PathBuf::from);
    let path = kept
        .clone()
        .unwrap_or_else(|| dir.join("toolpin.ledger.db"));
    if kept.is_none() || !path.exists() {
        fill(&path);
    }
    let mut ledger = Ledger::open(&path).expect("ledger");
    let mut one_vendor = HistoryQuery::new(HistoryGroup::Vendor, HistoryPeriod::Quarter);
    one_vendor.vendor = Some("vendor-07".to_string());
    let rows = ledger.history(&one_vendor).expect("history");
    eprintln!(
        "one vendor by quarter: {} rows, {} changes",
        rows.len(),
        rows.iter().map(|r| r.changes).sum::<i64>()
    );
    let mut g = c.benchmark_group("history");
    g.sample_size(20).measurement_time(Duration::from_secs(10));
    g.bench_function(
        "history by quarter, one vendor of 20 (1,000,000 events)",
        |b| b.iter(|| black_box(ledger.history(black_box(&one_vendor)).expect("history"))),
    );
    let conn = rusqlite::Connection::open(&path).expect("sqlite");
    g.bench_function(
        "reference: SELECT count(*) over the same vendor's rows",
        |b| {
            b.iter(|| {
                let n: i64 = conn
                    .query_row(
                        "SELECT count(*) FROM events WHERE vendor = ?1",
                        ["vendor-07"],
                        |r| r.get(0),
                    )
                    .expect("count");
                black_box(n)
            })
        },
    );
    g.bench_function("reference: SELECT count(*) over all 1,000,000 rows", |b| {
        b.iter(|| {
            let n: i64 = conn
                .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
                .expect("count");
            black_box(n)
        })
    });
    let all = HistoryQuery::new(HistoryGroup::Vendor, HistoryPeriod::Quarter);
    g.sample_size(10);
    g.bench_function(
        "history by quarter, all 20 vendors (1,000,000 events)",
        |b| b.iter(|| black_box(ledger.history(black_box(&all)).expect("history"))),
    );
    g.finish();

    let batch = sightings(10_000);
    let mut g = c.benchmark_group("record");
    g.sample_size(10).measurement_time(Duration::from_secs(15));
    let fresh = temp_dir("record");
    let mut n = 0;
    g.bench_function("record_batch of 10,000 new sightings (fresh ledger)", |b| {
        b.iter_batched(
            || {
                n += 1;
                Ledger::open(&fresh.join(format!("ledger-{n}.db"))).expect("ledger")
            },
            |mut ledger| black_box(ledger.record_batch(&batch, |_| Vec::new()).expect("batch")),
            BatchSize::PerIteration,
        )
    });
    // The same batch again: every sighting is one more of an open event.
    let mut seen = Ledger::open(&fresh.join("seen.db")).expect("ledger");
    seen.record_batch(&batch, |_| Vec::new()).expect("batch");
    g.bench_function("record_batch of 10,000 sightings seen before", |b| {
        b.iter(|| black_box(seen.record_batch(&batch, |_| Vec::new()).expect("batch")))
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&fresh);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
