//! One tool with 20,000 string parameters (issue 12, point 3), compared
//! with four drifts of it: every type changed (20,000 findings), the
//! 20,000-key `required` list emptied, every parameter renamed, and every
//! parameter replaced by another. The last three exceed the engine's budget
//! (src/budget.rs) and end in one `schema-unanalyzable` finding; what is
//! measured is that they get there fast. The whole-process figures (time
//! and peak RSS of `toolpin diff`) come from scripts/bench-large-schema.
//! Run with `cargo bench -p toolpin-drift --bench large_schema`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Map, Value};
use toolpin_manifest::{Catalog, ServerPin, Transform};

const N: usize = 20_000;

fn catalog(props: Map<String, Value>, required: Vec<String>) -> Catalog {
    let tool = json!({
        "name": "t",
        "description": "d",
        "inputSchema": {"type": "object", "properties": props, "required": required},
    });
    let tools = Transform::default()
        .apply(vec![tool])
        .expect("generated tool normalizes");
    let pin = ServerPin::new("bench", json!({}), "mcp", tools).expect("one tool");
    Catalog::new("default", BTreeMap::from([("bench".to_string(), pin)])).expect("catalog")
}

/// `{prefix}{i}` for i in 0..N, each schema made by `schema(i)`.
fn props(prefix: &str, schema: impl Fn(usize) -> Value) -> Map<String, Value> {
    (0..N)
        .map(|i| (format!("{prefix}{i}"), schema(i)))
        .collect()
}

fn bench(c: &mut Criterion) {
    let string = |_| json!({"type": "string"});
    let keys: Vec<String> = (0..N).map(|i| format!("p{i}")).collect();
    let base = catalog(props("p", string), vec![]);
    let kinds = ["integer", "boolean", "number", "array", "object", "null"];
    let cases = [
        (
            "types_changed",
            base.clone(),
            catalog(props("p", |_| json!({"type": "integer"})), vec![]),
        ),
        (
            "required_emptied",
            catalog(props("p", string), keys),
            base.clone(),
        ),
        ("renamed", base.clone(), catalog(props("q", string), vec![])),
        (
            "replaced",
            base.clone(),
            catalog(
                props(
                    "r",
                    |i| json!({"type": kinds[i % kinds.len()], "minimum": i}),
                ),
                vec![],
            ),
        ),
    ];
    let mut group = c.benchmark_group("large_schema");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for (name, old, new) in &cases {
        let found = toolpin_drift::compare(old, new);
        let mut by_rule: BTreeMap<&str, usize> = BTreeMap::new();
        for f in &found.findings {
            *by_rule.entry(f.rule).or_default() += 1;
        }
        eprintln!("large_schema/{name}: {N} parameters, findings {by_rule:?}");
        group.bench_function(format!("{N}_params_{name}"), |b| {
            b.iter(|| toolpin_drift::compare(black_box(old), black_box(new)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
