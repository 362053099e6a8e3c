//! The proxy's argument check on a typical call: toolpin's validator (the
//! `jsonschema` crate plus toolpin's layer, src/validate.rs) beside the bare
//! crate, i.e. the layer's overhead (issue 14, point 6): the same schema (the
//! shape zod-to-json-schema gives a typical MCP tool) and the same arguments.
//! The figures of the hand-written evaluator this replaced are in
//! docs/performance.md.
//!
//! `cargo bench -p toolpin-proxy --bench validate`

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use serde_json::json;
use toolpin_proxy::validate::Validator;

fn typical_call(c: &mut Criterion) {
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "owner": {"type": "string", "minLength": 1},
            "repo": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$"},
            "state": {"type": "string", "enum": ["open", "closed", "all"], "default": "open"},
            "labels": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
            "per_page": {"type": "integer", "minimum": 1, "maximum": 100},
            "since": {"type": "string", "format": "date-time"},
            "assignee": {"anyOf": [{"type": "string"}, {"type": "null"}]}
        },
        "required": ["owner", "repo"],
        "additionalProperties": false
    });
    let valid = json!({"owner": "o", "repo": "r.js", "state": "all", "labels": ["a", "b"],
        "per_page": 30, "since": "2024-01-01T00:00:00Z", "assignee": null});
    let invalid = json!({"owner": "", "repo": "r/x", "state": "draft", "labels": ["a", "a"],
        "per_page": 0, "since": "yesterday", "assignee": 3, "extra": true});

    let ours = Validator::new(&schema);
    let theirs = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("jsonschema compiles the schema");
    assert!(ours.validate(&valid).is_empty());
    assert!(theirs.is_valid(&valid));
    assert_eq!(ours.validate(&invalid).len(), 8);
    assert_eq!(theirs.iter_errors(&invalid).count(), 8);

    let mut g = c.benchmark_group("typical call, valid arguments");
    // What the proxy calls: every violation, as a Vec (empty here).
    g.bench_function("toolpin validate", |b| {
        b.iter(|| ours.validate(black_box(&valid)))
    });
    g.bench_function("bare jsonschema iter_errors", |b| {
        b.iter(|| theirs.iter_errors(black_box(&valid)).count())
    });
    g.bench_function("toolpin is_valid", |b| {
        b.iter(|| ours.is_valid(black_box(&valid)))
    });
    g.bench_function("bare jsonschema is_valid", |b| {
        b.iter(|| theirs.is_valid(black_box(&valid)))
    });
    g.finish();

    let mut g = c.benchmark_group("typical call, 8 violations");
    g.bench_function("toolpin validate", |b| {
        b.iter(|| ours.validate(black_box(&invalid)))
    });
    g.bench_function("bare jsonschema iter_errors", |b| {
        b.iter(|| theirs.iter_errors(black_box(&invalid)).count())
    });
    g.finish();

    let mut g = c.benchmark_group("compile the schema");
    g.bench_function("toolpin", |b| b.iter(|| Validator::new(black_box(&schema))));
    g.bench_function("bare jsonschema", |b| {
        b.iter(|| {
            jsonschema::options()
                .should_validate_formats(true)
                .build(black_box(&schema))
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = typical_call
}
criterion_main!(benches);
