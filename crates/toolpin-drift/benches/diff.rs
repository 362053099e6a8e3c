//! Diff of two 12,000-tool catalogs (the generator of the capture bench)
//! where 10% of the tools changed: descriptions edited, defaults moved, enum
//! values added, parameters added. Identical tools short-circuit on their
//! fingerprints. Run with `cargo bench -p toolpin-drift --bench diff`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use toolpin_manifest::{Catalog, ServerPin, Transform};

#[path = "../../toolpin-capture/benches/support/gen.rs"]
mod gen;

fn catalog(tools: Vec<Value>) -> Catalog {
    let tools = Transform::default()
        .apply(tools)
        .expect("generated tools normalize");
    let pin = ServerPin::new("bench", json!({}), "mcp", tools).expect("unique names");
    Catalog::new("default", BTreeMap::from([("bench".to_string(), pin)])).expect("catalog")
}

/// Changes every tenth tool, cycling through four kinds of edit.
fn drift(tools: &[Value]) -> Vec<Value> {
    let mut out = tools.to_vec();
    for (n, tool) in out.iter_mut().enumerate().filter(|(i, _)| i % 10 == 0) {
        match (n / 10) % 4 {
            0 => {
                let d = tool["description"].as_str().unwrap_or("").to_string();
                tool["description"] = json!(format!(
                    "{d} Prefer the batch variant when several IDs are known."
                ));
            }
            1 => {
                if let Some(props) = tool
                    .pointer_mut("/inputSchema/properties")
                    .and_then(Value::as_object_mut)
                {
                    if let Some((_, p)) = props.iter_mut().next() {
                        p["default"] = json!(20);
                    }
                }
            }
            2 => {
                if let Some(props) = tool
                    .pointer_mut("/inputSchema/properties")
                    .and_then(Value::as_object_mut)
                {
                    props.insert(
                        "added_flag".into(),
                        json!({"type": "boolean", "description": "New."}),
                    );
                }
            }
            _ => {
                tool["annotations"] = json!({"readOnlyHint": false, "destructiveHint": true});
            }
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let doc: Value =
        serde_json::from_slice(&gen::tools_list_json(gen::DEFAULT_TOOLS)).expect("generated JSON");
    let tools = doc["tools"].as_array().cloned().expect("tools");
    let old = catalog(tools.clone());
    let new = catalog(drift(&tools));
    let changed = toolpin_drift::compare(&old, &new);
    eprintln!(
        "diff bench: {} tools, {} changed, {} findings",
        old.tool_count(),
        changed.summary.tools_changed,
        changed.findings.len()
    );
    eprintln!(
        "diff bench: {} clusters",
        toolpin_drift::cluster::clusters(&changed.findings).len()
    );
    let mut group = c.benchmark_group("diff");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    group.bench_function("12000_tools_10pct_changed", |b| {
        b.iter(|| toolpin_drift::compare(black_box(&old), black_box(&new)))
    });
    // What every report renders on top of the diff (issue 15: at most 20%
    // over the diff alone).
    group.bench_function("12000_tools_10pct_changed_and_clustered", |b| {
        b.iter(|| {
            let c = toolpin_drift::compare(black_box(&old), black_box(&new));
            let clusters = toolpin_drift::cluster::clusters(&c.findings).len();
            (c, clusters)
        })
    });
    group.bench_function("12000_tools_identical", |b| {
        b.iter(|| toolpin_drift::compare(black_box(&old), black_box(&old)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
