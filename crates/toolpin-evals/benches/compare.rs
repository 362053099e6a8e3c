//! `toolpin compare` at the scale: 10,000 cases × 5 repeats per
//! side with tool calls, turns and cost (about 100 MB of case records in
//! all). Measured: reading one side's records, and the comparison itself
//! (the join, 10,000-resample bootstraps of the pass rate and of four
//! medians). The whole-process figures (wall time and peak RSS of
//! `toolpin compare` on the files) come from scripts/bench-compare.
//! Run with `cargo bench -p toolpin-evals --bench compare`.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use toolpin_evals::compare::{self, Context, Options};
use toolpin_evals::results::{read_as, Format, Names, Repeat};

#[path = "support/records.rs"]
mod records;

fn side(text: &[u8], names: &mut Names) -> Vec<Repeat> {
    let runs = read_as(Path::new("bench.jsonl"), text, Format::Records, names).expect("records");
    let mut repeats: Vec<Repeat> = (0..records::REPEATS).map(|_| Repeat::default()).collect();
    for run in runs {
        repeats[run.repeat.unwrap_or(0) as usize].cases.push(run);
    }
    repeats
}

fn bench(c: &mut Criterion) {
    let before = records::generate(false);
    let after = records::generate(true);
    eprintln!(
        "records: {:.1} MB before, {:.1} MB after",
        before.len() as f64 / 1e6,
        after.len() as f64 / 1e6
    );
    let mut g = c.benchmark_group("compare");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("read one side (10,000 cases × 5)", |b| {
        b.iter(|| {
            let mut names = Names::default();
            black_box(side(black_box(&before), &mut names))
        })
    });
    // The reference for reading: every line into a serde_json::Value, the
    // obvious way to read JSON lines, which builds every argument too.
    g.bench_function("reference: one side into serde_json::Value", |b| {
        b.iter(|| {
            let text = std::str::from_utf8(&before).expect("utf-8");
            let values: Vec<serde_json::Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).expect("json"))
                .collect();
            black_box(values)
        })
    });
    let mut names = Names::default();
    let b = side(&before, &mut names);
    let a = side(&after, &mut names);
    g.bench_function(
        "statistics (join, permutation test, bootstrap, exact medians)",
        |bench| {
            bench.iter(|| {
                black_box(compare::compare(
                    &b,
                    &a,
                    None,
                    names.clone(),
                    &Context::default(),
                    Options::default(),
                ))
            })
        },
    );
    // The reference for the statistics: one 10,000-resample bootstrap of a
    // mean over 10,000 cases, the least any resampling report does.
    let deltas: Vec<f64> = (0..records::CASES)
        .map(|i| if i % 10 == 0 { -0.4 } else { 0.0 })
        .collect();
    g.bench_function("reference: one bootstrap of a mean", |bench| {
        bench.iter(|| {
            black_box(toolpin_evals::compare::stats::bootstrap(
                black_box(&deltas),
                toolpin_evals::compare::stats::Statistic::Mean,
                10_000,
                1,
            ))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
