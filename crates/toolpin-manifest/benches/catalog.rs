//! Throughput of pinning a very large catalog: 12,000 realistic MCP tools,
//! about 17 MB of JSON (see `support/gen.rs`).
//!
//! - `parse`: `json::parse` of the bytes;
//! - `pipeline`: parse, take `tools`, `Transform::apply`, `ServerPin::new`
//!   (every tool fingerprint) and `Catalog::new` — what `toolpin lock` does
//!   for one server;
//! - `pipeline_and_drop`: the same, and freeing the catalog;
//! - `lockfile_render`: `lockfile::to_string` of the built catalog.
//!
//! Every throughput is bytes of input JSON per second (criterion prints
//! MiB/s; `scripts/bench-catalog` adds MB/s). Run with
//! `scripts/bench-catalog` or `cargo bench -p toolpin-manifest --bench catalog`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde_json::{json, Value};
use toolpin_manifest::{json as tjson, lockfile, Catalog, ServerPin, Transform};

#[path = "support/gen.rs"]
mod gen;

/// The whole `tools/list` document → a one-server catalog.
fn pipeline(bytes: &[u8]) -> Catalog {
    let doc = tjson::parse(bytes, "bench.json").expect("generated JSON parses");
    let Value::Object(mut doc) = doc else {
        panic!("generated document is not an object")
    };
    let Some(Value::Array(tools)) = doc.remove("tools") else {
        panic!("generated document has no tools array")
    };
    let tools = Transform::default().apply(tools).expect("tools normalize");
    let pin = ServerPin::new("bench", json!({"file": "bench.json"}), "mcp", tools)
        .expect("tool names are unique");
    Catalog::new("default", BTreeMap::from([("bench".to_string(), pin)]))
        .expect("one server cannot collide")
}

fn catalog(c: &mut Criterion) {
    let bytes = gen::tools_list_json(gen::DEFAULT_TOOLS);
    let len = bytes.len() as u64;
    eprintln!(
        "catalog bench input: {} tools, {len} bytes ({:.1} MB)",
        gen::DEFAULT_TOOLS,
        len as f64 / 1e6
    );

    let mut group = c.benchmark_group("catalog");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Bytes(len));

    // The named steps only: each result is dropped outside the timed part
    // (freeing a 12,000-tool tree is measured on its own below).
    group.bench_function("parse", |b| {
        b.iter_batched(
            || (),
            |()| tjson::parse(black_box(&bytes), "bench.json").expect("parses"),
            BatchSize::PerIteration,
        )
    });
    group.bench_function("pipeline", |b| {
        b.iter_batched(
            || (),
            |()| pipeline(black_box(&bytes)),
            BatchSize::PerIteration,
        )
    });
    // What a process that frees its catalog pays end to end.
    group.bench_function("pipeline_and_drop", |b| {
        b.iter(|| drop(pipeline(black_box(&bytes))))
    });

    let built = pipeline(&bytes);
    assert_eq!(built.tool_count(), gen::DEFAULT_TOOLS);
    group.bench_function("lockfile_render", |b| {
        b.iter_batched(
            || (),
            |()| lockfile::to_string(black_box(&built)),
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, catalog);
criterion_main!(benches);
