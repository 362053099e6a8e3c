//! Ingesting OTLP/JSON span files at the issue's scale (issue 19, point 2):
//! 1,000,000 `execute_tool` spans, written as the Collector's file
//! exporter writes them (one request of 500 spans per line), over 2
//! environments × 5 tenants × 2 agents × 2 catalogs × 10 tools and 24
//! hours (9,600 keys), each with arguments, one in ten failed. Target: at most 5 s on
//! one core, memory bounded by the keys, not the spans.
//! Run with `cargo bench -p toolpin-usage --bench ingest`; not part of the
//! test suite. Before criterion's samples it ingests once and prints the
//! time, the spans per second, and the resident memory before and after
//! (from /proc/self/status, on Linux), then ingests the file three times
//! over and prints the resident memory again: it does not grow.
//! `TOOLPIN_BENCH_SPANS=/tmp/spans.jsonl` keeps the generated file for the
//! next run. `TOOLPIN_BENCH_CPU_RUNS=5` measures the thread's CPU time of
//! that many ingests instead of running criterion (Linux,
//! `/proc/thread-self/schedstat`), and prints the median: on a shared
//! machine, a figure the other processes move less than wall time.

use std::fmt::Write as _;
use std::hint::black_box;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use toolpin_usage::{ingest, Format, Input, Options};

const SPANS: usize = 1_000_000;
const PER_LINE: usize = 500;
/// 2026-11-01T00:00:00Z: in the past, or the spans would be reported as
/// from the future.
const START: u64 = 1_793_491_200;

/// A small deterministic generator (xorshift64*), so every run writes the
/// same file.
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

fn path() -> PathBuf {
    match std::env::var_os("TOOLPIN_BENCH_SPANS") {
        Some(p) => PathBuf::from(p),
        None => {
            std::env::temp_dir().join(format!("toolpin-usage-bench-{}.jsonl", std::process::id()))
        }
    }
}

fn generate(path: &Path) -> std::io::Result<u64> {
    let file = std::fs::File::create(path)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut line = String::new();
    let mut bytes = 0u64;
    for _ in 0..SPANS / PER_LINE {
        line.clear();
        let env = ["prod", "staging"][rng.below(2) as usize];
        let tenant = rng.below(5);
        let agent = rng.below(2);
        let _ = write!(
            line,
            r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"agent-{agent}"}}}},{{"key":"deployment.environment.name","value":{{"stringValue":"{env}"}}}},{{"key":"tenant.id","value":{{"intValue":"{tenant}"}}}},{{"key":"telemetry.sdk.language","value":{{"stringValue":"python"}}}}]}},"scopeSpans":[{{"scope":{{"name":"openinference.instrumentation","version":"0.1.18"}},"spans":["#
        );
        for n in 0..PER_LINE {
            if n > 0 {
                line.push(',');
            }
            let tool = rng.below(10);
            let catalog = rng.below(2);
            let start = (START + rng.below(86_400)) * 1_000_000_000 + rng.below(1_000_000_000);
            let duration = 1_000_000 + rng.below(2_000_000_000);
            let reason = ["damaged", "late", "wrong-item", "duplicate"][rng.below(4) as usize];
            let failed = rng.below(10) == 0;
            let _ = write!(
                line,
                r#"{{"traceId":"{:016x}{:016x}","spanId":"{:016x}","parentSpanId":"{:016x}","flags":769,"name":"execute_tool tool_{tool}","kind":3,"startTimeUnixNano":"{start}","endTimeUnixNano":"{}","attributes":[{{"key":"gen_ai.operation.name","value":{{"stringValue":"execute_tool"}}}},{{"key":"gen_ai.tool.name","value":{{"stringValue":"tool_{tool}"}}}},{{"key":"gen_ai.tool.call.id","value":{{"stringValue":"call_{:012x}"}}}},{{"key":"toolpin.catalog.fingerprint","value":{{"stringValue":"sha256:{catalog:064x}"}}}},{{"key":"toolpin.tool.fingerprint","value":{{"stringValue":"sha256:{tool:064x}"}}}},{{"key":"gen_ai.tool.call.arguments","value":{{"stringValue":"{{\"order_id\":\"ord_{}\",\"reason\":\"{reason}\",\"amount\":{}}}"}}}}"#,
                rng.next(),
                rng.next(),
                rng.next(),
                rng.next(),
                start + duration,
                rng.next() >> 16,
                rng.below(100_000),
                rng.below(500),
            );
            if failed {
                line.push_str(r#",{"key":"error.type","value":{"stringValue":"timeout"}}],"status":{"code":2,"message":"timed out"}}"#);
            } else {
                line.push_str(r#"],"status":{"code":1}}"#);
            }
        }
        line.push_str("]}]}]}\n");
        bytes += line.len() as u64;
        out.write_all(line.as_bytes())?;
    }
    out.flush()?;
    Ok(bytes)
}

/// Resident set size now and at its peak, in MiB (Linux; 0 elsewhere).
fn rss() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(0, |kb| kb / 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn run(path: &Path) -> (u64, u64, usize) {
    run_times(path, 1)
}

/// Ingests the file `times` times over, as that many inputs.
fn run_times(path: &Path, times: usize) -> (u64, u64, usize) {
    let inputs = (0..times).map(|_| match Input::file(path, Format::OtlpJson) {
        Ok(i) => i,
        Err(e) => panic!("{}: {e}", path.display()),
    });
    let (aggregates, report) = ingest(inputs, &Options::default());
    if report.spans_rejected > 0 {
        eprintln!("{report}");
    }
    (report.spans_used, report.spans_rejected, aggregates.len())
}

/// The CPU time this thread has run, in nanoseconds.
fn cpu_nanos() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .expect("/proc/thread-self/schedstat")
}

/// `TOOLPIN_BENCH_CPU_RUNS`: the median CPU time of `runs` ingests.
fn cpu(runs: usize) {
    let path = written();
    let mut took: Vec<f64> = (0..runs.max(1))
        .map(|_| {
            let started = cpu_nanos();
            let (used, _, _) = black_box(run(&path));
            assert_eq!(used as usize, SPANS);
            (cpu_nanos() - started) as f64 / 1e9
        })
        .collect();
    took.sort_by(f64::total_cmp);
    println!(
        "ingest of {SPANS} spans: CPU median {:.2} s (min {:.2}, max {:.2}) of {}",
        took[took.len() / 2],
        took[0],
        took[took.len() - 1],
        took.len()
    );
    if std::env::var_os("TOOLPIN_BENCH_SPANS").is_none() {
        let _ = std::fs::remove_file(&path);
    }
}

/// The spans file, written unless it is kept and there.
fn written() -> PathBuf {
    let path = path();
    let keep = std::env::var_os("TOOLPIN_BENCH_SPANS").is_some();
    if !(keep && path.exists()) {
        let t = Instant::now();
        match generate(&path) {
            Ok(bytes) => eprintln!(
                "wrote {SPANS} spans, {} MB, to {} in {:.1?}",
                bytes / 1_000_000,
                path.display(),
                t.elapsed()
            ),
            Err(e) => panic!("{}: {e}", path.display()),
        }
    }
    path
}

fn bench(c: &mut Criterion) {
    let path = written();
    let keep = std::env::var_os("TOOLPIN_BENCH_SPANS").is_some();
    let (rss_before, _) = rss();
    let t = Instant::now();
    let (used, rejected, keys) = run(&path);
    let took = t.elapsed();
    let (rss_after, peak) = rss();
    assert_eq!(used as usize, SPANS, "every span is a tool call");
    assert_eq!(rejected, 0);
    eprintln!(
        "ingested {used} spans into {keys} keys in {took:.2?} ({:.0} spans/s); RSS {rss_before} MiB before, {rss_after} MiB after, peak {peak} MiB",
        used as f64 / took.as_secs_f64()
    );

    // Memory is bounded by the keys: three times the spans over the same
    // keys end at the same resident size.
    let (used, _, keys) = run_times(&path, 3);
    let (rss_after, peak) = rss();
    eprintln!(
        "ingested {used} spans (the file three times) into {keys} keys; RSS {rss_after} MiB after, peak {peak} MiB"
    );

    let mut group = c.benchmark_group("ingest");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("1M spans from OTLP/JSON", |b| {
        b.iter(|| black_box(run(&path)))
    });
    group.finish();
    if !keep {
        let _ = std::fs::remove_file(&path);
    }
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
