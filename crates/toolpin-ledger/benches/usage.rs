//! The usage store at the scale (issue 19): 90 days × 50 tools ×
//! 20 tenants as day rows (90,000 rows, each with a few hundred latency
//! buckets, an enum parameter and two error classes; two catalog changes)
//! read back from SQLite and reported on, as `toolpin usage report` does
//! over a compacted store; beside the floor of reading the same rows'
//! blobs without decoding them. And one flush: merging an hour of 5,000
//! keys into a store that already holds a day of them.
//! Run with `cargo bench -p toolpin-ledger --bench usage`; not part of the
//! test suite. Figures are in docs/performance.md.
//!
//! On a loaded machine criterion's wall times say little; the thread's CPU
//! time does. `TOOLPIN_BENCH_CPU_RUNS=7` measures that instead of running
//! criterion: the CPU time (`/proc/thread-self/schedstat`, Linux) of
//! `usage_read` and of `usage_read` + report, each including dropping
//! what was read, and prints the medians. With
//! `TOOLPIN_BENCH_STORE=/tmp/usage.db` the store is kept there (written
//! first if absent), so that two builds can read the same store in turn.

use std::borrow::Cow;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, BatchSize, Criterion};
use toolpin_ledger::usage::UsageFilter;
use toolpin_ledger::Ledger;
use toolpin_usage::report::{report, Catalogs, Thresholds};
use toolpin_usage::{Aggregates, ArgValue, Call, Limits};

const DAYS: u64 = 90;
const TOOLS: usize = 50;
const TENANTS: usize = 20;
/// A day boundary, in unix hours.
const START_HOUR: u64 = 490_008;
const HOUR: u64 = 3_600_000_000_000;
/// Calls recorded per row (spread over a day's latencies), and the calls
/// the row stands for (its counts are scaled up to that).
const CALLS_PER_ROW: u64 = 40;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn catalog(day: u64) -> &'static str {
    match day {
        0..=29 => "a1",
        30..=59 => "b2",
        _ => "c3",
    }
}

/// The 90,000 day keys, one `Aggregates` per day (so merging a day into
/// the store stays one transaction of 1,000 keys).
fn days() -> Vec<Aggregates> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let tools: Vec<String> = (0..TOOLS).map(|t| format!("tool_{t:02}")).collect();
    let tenants: Vec<String> = (0..TENANTS).map(|t| format!("tenant-{t:02}")).collect();
    let statuses = ["open", "shipped", "returned", "cancelled"];
    (0..DAYS)
        .map(|day| {
            let mut agg = Aggregates::new(Limits::default());
            for tenant in &tenants {
                for tool in &tools {
                    for i in 0..CALLS_PER_ROW {
                        let status = statuses[(rng.next() % 4) as usize];
                        let args = [(
                            Cow::Borrowed("status"),
                            ArgValue::Str(Cow::Borrowed(status)),
                        )];
                        let error = match rng.next() % 50 {
                            0 => Some("timeout"),
                            1 => Some("upstream"),
                            _ => None,
                        };
                        agg.record_call(&Call {
                            start_nanos: (START_HOUR + day * 24) * HOUR + i,
                            // 5 ms to 5 s, log-spread: a few hundred buckets.
                            duration_nanos: 5_000_000u64 << (rng.next() % 10),
                            environment: "prod",
                            tenant,
                            agent: "support",
                            catalog: catalog(day),
                            tool,
                            tool_fingerprint: "",
                            error,
                            arguments: Some(&args),
                        });
                    }
                }
            }
            agg
        })
        .collect()
}

/// The store at `path`, written first if absent.
fn store(path: &std::path::Path) -> Ledger {
    let fresh = !path.exists();
    let mut ledger = Ledger::open(path).expect("open");
    if fresh {
        let started = std::time::Instant::now();
        for day in &days() {
            ledger.usage_merge(day).expect("merge");
        }
        eprintln!(
            "store: {} day rows written in {:.1} s",
            DAYS as usize * TOOLS * TENANTS,
            started.elapsed().as_secs_f64()
        );
    }
    ledger
}

/// The CPU time this thread has run, in nanoseconds.
fn cpu_nanos() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .expect("/proc/thread-self/schedstat")
}

/// `TOOLPIN_BENCH_CPU_RUNS`: the medians of `runs` reads and reads +
/// reports, in CPU time.
fn cpu(runs: usize) {
    let dir = std::env::temp_dir().join(format!("toolpin-usage-bench-{}", std::process::id()));
    let kept = std::env::var_os("TOOLPIN_BENCH_STORE").map(std::path::PathBuf::from);
    let path = kept.clone().unwrap_or_else(|| {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        dir.join("usage.db")
    });
    let mut ledger = store(&path);
    let all = UsageFilter {
        from_hour: START_HOUR,
        until_hour: START_HOUR + DAYS * 24,
        environment: None,
    };
    let until = START_HOUR + DAYS * 24;
    let (catalogs, thresholds) = (Catalogs::default(), Thresholds::default());
    {
        let stored = ledger.usage_read(&all).expect("read");
        let r = report(&stored, &catalogs, &thresholds, until);
        println!(
            "{} keys, {} calls, {} comparisons, {} tests, {} alarms",
            stored.len(),
            stored.total_calls(),
            r.comparisons.len(),
            r.tests,
            r.alarms.len(),
        );
    }
    for with_report in [false, true] {
        let mut took: Vec<f64> = (0..runs.max(1))
            .map(|_| {
                let started = cpu_nanos();
                let stored = ledger.usage_read(&all).expect("read");
                let n = if with_report {
                    report(&stored, &catalogs, &thresholds, until).tests
                } else {
                    stored.len() as u64
                };
                black_box(n);
                drop(stored);
                (cpu_nanos() - started) as f64 / 1e6
            })
            .collect();
        took.sort_by(f64::total_cmp);
        println!(
            "{}: CPU median {:.1} ms (min {:.1}, max {:.1}) of {}",
            if with_report {
                "usage_read + report"
            } else {
                "usage_read"
            },
            took[took.len() / 2],
            took[0],
            took[took.len() - 1],
            took.len()
        );
    }
    if kept.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("toolpin-usage-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("usage.db");
    let mut ledger = store(&path);
    // Stored as day rows: hour = the day's first hour.
    let all = UsageFilter {
        from_hour: START_HOUR,
        until_hour: START_HOUR + DAYS * 24,
        environment: None,
    };
    let stored = ledger.usage_read(&all).expect("read");
    assert_eq!(stored.len(), DAYS as usize * TOOLS * TENANTS);
    let catalogs = Catalogs::default();
    let thresholds = Thresholds::default();
    let until = START_HOUR + DAYS * 24;
    let r = report(&stored, &catalogs, &thresholds, until);
    eprintln!(
        "report: {} comparisons, {} tests, {} alarms",
        r.comparisons.len(),
        r.tests,
        r.alarms.len()
    );

    let mut group = c.benchmark_group("usage store, 90 days x 50 tools x 20 tenants");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("reference: read the 90,000 blobs without decoding", |b| {
        let conn = rusqlite::Connection::open(&path).expect("open");
        b.iter(|| {
            let mut stmt = conn
                .prepare("SELECT hour, environment, tenant, agent, catalog, tool, stats FROM usage_calls WHERE hour >= ?1 AND hour < ?2")
                .expect("prepare");
            let mut rows = stmt
                .query([START_HOUR as i64, until as i64])
                .expect("query");
            let mut bytes = 0usize;
            while let Some(r) = rows.next().expect("row") {
                bytes += r.get_ref(6).expect("stats").as_bytes().map_or(0, <[u8]>::len);
            }
            black_box(bytes)
        })
    });
    group.bench_function("usage_read (decode into aggregates)", |b| {
        b.iter(|| black_box(ledger.usage_read(&all).expect("read").len()))
    });
    group.bench_function("report over the aggregates read", |b| {
        b.iter(|| black_box(report(&stored, &catalogs, &thresholds, until).tests))
    });
    group.bench_function("usage_read + report (toolpin usage report)", |b| {
        b.iter(|| {
            let stored = ledger.usage_read(&all).expect("read");
            black_box(report(&stored, &catalogs, &thresholds, until).tests)
        })
    });
    group.finish();

    // One flush: an hour of 5,000 keys into a store holding a day of them.
    let mut group = c.benchmark_group("usage flush");
    group.sample_size(10);
    let hour = |h: u64| {
        let mut agg = Aggregates::new(Limits::default());
        let tools: Vec<String> = (0..TOOLS).map(|t| format!("tool_{t:02}")).collect();
        let tenants: Vec<String> = (0..100).map(|t| format!("t{t:03}")).collect();
        for tenant in &tenants {
            for tool in &tools {
                agg.record_call(&Call {
                    start_nanos: (START_HOUR + 24 * 200 + h) * HOUR,
                    duration_nanos: 10_000_000,
                    environment: "prod",
                    tenant,
                    agent: "support",
                    catalog: "c3",
                    tool,
                    tool_fingerprint: "",
                    error: None,
                    arguments: None,
                });
            }
        }
        agg
    };
    for h in 0..24 {
        ledger.usage_merge(&hour(h)).expect("merge");
    }
    group.bench_function("merge 5,000 new keys", |b| {
        let mut next = 100;
        b.iter_batched(
            || {
                next += 1;
                hour(next)
            },
            |agg| ledger.usage_merge(&agg).expect("merge"),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("merge 5,000 keys into stored ones", |b| {
        b.iter_batched(
            || hour(23),
            |agg| ledger.usage_merge(&agg).expect("merge"),
            BatchSize::LargeInput,
        )
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);

fn main() {
    match std::env::var("TOOLPIN_BENCH_CPU_RUNS") {
        Ok(runs) => cpu(runs
            .parse()
            .expect("TOOLPIN_BENCH_CPU_RUNS: a number of runs")),
        Err(_) => {
            benches();
            Criterion::default().configure_from_args().final_summary();
        }
    }
}
