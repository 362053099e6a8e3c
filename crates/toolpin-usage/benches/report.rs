//! `report` at the scale (issue 19, point 3): 90 days × 50 tools ×
//! 20 tenants of daily keys (90,000 keys), every tenant moving through
//! three catalogs (changes on days 30 and 60, staggered by tenant), 20
//! calls per key with arguments, errors and latencies (`tool_07` called
//! six times as often from the second catalog on: a selection-share alarm
//! per tenant), compared a week before and after (`window-hours` 168, so
//! that the per-tool tests have their calls). Target: at most
//! 200 ms. Measured beside a reference that only walks the keys in order
//! and sums calls per (environment, tenant, agent), the floor any report
//! pays. Before criterion's samples it prints both medians over 15 runs
//! and what the report found. Run with
//! `cargo bench -p toolpin-usage --bench report`.
//! (Written by a helper against its own report engine, then moved onto
//! this one: the data and the reference are unchanged.)

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use toolpin_usage::report::{report, Catalogs, PinnedCatalog, PinnedTool, Thresholds};
use toolpin_usage::{Aggregates, ArgValue, Call, Limits};

const DAYS: u64 = 90;
const TOOLS: usize = 50;
const TENANTS: usize = 20;
const CALLS_PER_KEY: u64 = 20;
const HOUR_NANOS: u64 = 3_600_000_000_000;
/// 2026-08-03T00:00Z as a unix hour.
const T0: u64 = 495_240;
const STATUS: [&str; 4] = ["open", "shipped", "cancelled", "returned"];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A fingerprint shaped like a SHA-256 (64 hex digits that differ early):
/// the keys' sort and the catalog lookups compare these.
fn catalog(n: usize) -> String {
    let mut rng = Rng(0x5851_f42d_4c95_7f2d ^ (n as u64 + 1));
    (0..4).map(|_| format!("{:016x}", rng.next())).collect()
}

fn tool(i: usize) -> String {
    format!("tool_{i:02}")
}

fn generate() -> (Aggregates, Catalogs) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut aggregates = Aggregates::new(Limits::default());
    let tools: Vec<String> = (0..TOOLS).map(tool).collect();
    let catalogs: Vec<String> = (0..3).map(catalog).collect();
    let tenants: Vec<String> = (0..TENANTS).map(|t| format!("tenant-{t:02}")).collect();
    for day in 0..DAYS {
        for (t, tenant) in tenants.iter().enumerate() {
            let stagger = (t % 5) as u64;
            let c = if day < 30 + stagger {
                0
            } else if day < 60 + stagger {
                1
            } else {
                2
            };
            for (i, name) in tools.iter().enumerate() {
                let calls = if i == 7 && c > 0 {
                    6 * CALLS_PER_KEY
                } else {
                    CALLS_PER_KEY
                };
                for _ in 0..calls {
                    let status = STATUS[(rng.next() % 4) as usize];
                    let mut arguments = vec![(
                        Cow::Borrowed("status"),
                        ArgValue::Str(Cow::Borrowed(status)),
                    )];
                    if rng.next() % 10 < 8 {
                        arguments.push((Cow::Borrowed("id"), ArgValue::Other));
                    }
                    let error = (rng.next() % 50 == 0).then_some("tool_error");
                    let millis = 20 + i as u64 + rng.next() % 100;
                    aggregates.record_call(&Call {
                        start_nanos: (T0 + day * 24) * HOUR_NANOS + rng.next() % HOUR_NANOS,
                        duration_nanos: millis * 1_000_000,
                        environment: "prod",
                        tenant,
                        agent: "support-bot",
                        catalog: &catalogs[c],
                        tool: name,
                        tool_fingerprint: "",
                        error,
                        arguments: Some(&arguments),
                    });
                }
            }
        }
    }
    let schema = json!({"properties": {"status": {"enum": STATUS}, "id": {"type": "integer"}}});
    let pinned = PinnedCatalog {
        tools: tools
            .iter()
            .map(|t| (t.clone(), PinnedTool::from_input_schema(&schema)))
            .collect(),
    };
    let catalogs = Catalogs {
        sequence: catalogs
            .iter()
            .enumerate()
            .map(|(i, c)| (c.clone(), i as u64))
            .collect(),
        pinned: catalogs
            .iter()
            .map(|c| (c.clone(), pinned.clone()))
            .collect(),
        changes: [
            (
                (catalog(0), catalog(1)),
                "tool_07's description gained a sentence".to_string(),
            ),
            (
                (catalog(1), catalog(2)),
                "tool_31 added the enum value 'returned'".to_string(),
            ),
        ]
        .into(),
    };
    (aggregates, catalogs)
}

/// The floor: every key in order, calls summed per group.
fn reference(aggregates: &Aggregates) -> u64 {
    let mut groups: BTreeMap<(&str, &str, &str), u64> = BTreeMap::new();
    for (key, stats) in aggregates.calls() {
        *groups
            .entry((&*key.environment, &*key.tenant, &*key.agent))
            .or_insert(0) += stats.calls;
    }
    groups.values().sum()
}

fn median(mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..15)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn bench(c: &mut Criterion) {
    let (aggregates, catalogs) = generate();
    let thresholds = Thresholds {
        window_hours: 168,
        ..Thresholds::default()
    };
    let now = T0 + DAYS * 24;
    let r = report(&aggregates, &catalogs, &thresholds, now);
    println!(
        "{} keys, {} calls: {} groups, {} comparisons, {} tests, {} latency checks, {} skipped, {} alarms",
        aggregates.len(),
        r.calls,
        r.groups,
        r.comparisons.len(),
        r.tests,
        r.checks,
        r.skipped,
        r.alarms.len()
    );
    let walk = median(|| {
        black_box(reference(black_box(&aggregates)));
    });
    let full = median(|| {
        black_box(report(black_box(&aggregates), &catalogs, &thresholds, now));
    });
    println!("median of 15: reference (keys in order, groups) {walk:?}; report {full:?} (target ≤ 200 ms)");

    let mut group = c.benchmark_group("usage report, 90 days × 50 tools × 20 tenants");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("reference: keys in order into groups", |b| {
        b.iter(|| black_box(reference(black_box(&aggregates))))
    });
    group.bench_function("report", |b| {
        b.iter(|| black_box(report(black_box(&aggregates), &catalogs, &thresholds, now)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
