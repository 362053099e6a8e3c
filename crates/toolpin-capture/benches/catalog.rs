//! Throughput of pinning a very large catalog: 12,000 realistic MCP tools,
//! about 17 MB of JSON (see `support/gen.rs`).
//!
//! - `parse_value`: serde_json parsing the bytes into one `Value` tree, the
//!   floor a tree-building reader cannot go under (toolpin does not do this);
//! - `pipeline`: what `toolpin lock` does for one file source: the streaming
//!   reader (format detection, one tool at a time), normalization, every
//!   tool fingerprint, the server and catalog fingerprints;
//! - `lockfile_render`: writing the lockfile text of the built catalog.
//!
//! Every throughput is bytes of input JSON per second (criterion prints
//! MiB/s; `scripts/bench-catalog` adds MB/s). Run with
//! `scripts/bench-catalog` or `cargo bench -p toolpin-capture --bench catalog`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde_json::{json, Value};
use toolpin_capture::source;
use toolpin_manifest::{lockfile, Catalog, PinBuilder, Transform};

#[path = "support/gen.rs"]
mod gen;

/// A `tools/list` document → a one-server catalog, as `toolpin lock` does.
fn pipeline(bytes: &[u8]) -> Catalog {
    let mut builder = PinBuilder::new(Transform::default());
    let format =
        source::parse_tools(bytes, "bench.json", None, &mut builder).expect("generated tools pin");
    let pin = builder.finish(json!({"file": "bench.json"}), format.name(), None);
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

    group.bench_function("parse_value", |b| {
        b.iter_batched(
            || (),
            |()| serde_json::from_slice::<Value>(black_box(&bytes)).expect("parses"),
            BatchSize::PerIteration,
        )
    });
    // End to end, freeing included: what a process pays.
    group.bench_function("pipeline", |b| b.iter(|| drop(pipeline(black_box(&bytes)))));

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
