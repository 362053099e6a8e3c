//! Property tests for `convert`: generated OpenAPI documents whose
//! schemas, parameters, bodies and responses refer to each other at random
//! (recursion, alias cycles, references to nothing, remote references,
//! malformed pointers, values of the wrong type), and arbitrary JSON.
//!
//! 1. converting never panics and either succeeds or returns a one-line
//!    error;
//! 2. converting is deterministic;
//! 3. every tool has a unique name of at most 64 characters from
//!    `[A-Za-z0-9_-]`, an object inputSchema, and any outputSchema is an
//!    object schema;
//! 4. every `$ref` left in a tool points into its own `$defs` (or, with
//!    `allow_remote_refs`, out of the document).

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Map, Value};
use toolpin_openapi::{convert_all, BodyMode, Options, MAX_NAME_LEN};

/// References that resolve (when the generator made the schema).
const GOOD_REFS: [&str; 5] = [
    "#/components/schemas/S0",
    "#/components/schemas/S1",
    "#/components/schemas/S2",
    "#/components/schemas/S3",
    "#/components/schemas/A~1lias",
];

/// Every kind of reference, bad ones included.
const REFS: [&str; 12] = [
    "#/components/schemas/S0",
    "#/components/schemas/S1",
    "#/components/schemas/S2",
    "#/components/schemas/S3",
    "#/components/schemas/Missing",
    "#/components/parameters/P0",
    "#/components/schemas/S%zz",
    "#/paths",
    "#anchor",
    "other.yaml#/components/schemas/S0",
    "https://example.com/s.json",
    "#/components/schemas/A~1lias",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z/{} ]{0,6}".prop_map(Value::String),
    ]
}

fn reference() -> impl Strategy<Value = &'static str> {
    prop_oneof![8 => select(GOOD_REFS.to_vec()), 1 => select(REFS.to_vec())]
}

fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        4 => select(vec!["string", "integer", "object", "array", "boolean"]).prop_map(|t| json!({"type": t})),
        4 => reference().prop_map(|r| json!({"$ref": r})),
        2 => reference().prop_map(|r| json!({"$ref": r, "description": "beside"})),
        1 => scalar(),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            btree_map("[a-z$]{1,4}", inner.clone(), 0..4)
                .prop_map(|p| json!({"type": "object", "properties": p.into_iter().collect::<Map<_, _>>(), "required": ["a", "b"]})),
            inner.clone().prop_map(|i| json!({"type": "array", "items": i})),
            vec(inner.clone(), 0..3).prop_map(|v| json!({"allOf": v})),
            inner.prop_map(|i| json!({"default": i, "enum": [i], "x-ext": {"$ref": "#/nowhere"}})),
        ]
    })
}

fn parameter() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => (
            "[a-z]{1,3}",
            select(vec!["path", "query", "header", "cookie", "body", "formData", "nowhere"]),
            schema(),
            any::<bool>()
        )
            .prop_map(|(name, location, schema, required)| {
                json!({"name": name, "in": location, "schema": schema, "required": required, "type": "string"})
            }),
        1 => Just(json!({"$ref": "#/components/parameters/P0"})),
        1 => prop_oneof![select(REFS.to_vec()).prop_map(|r| json!({"$ref": r})), scalar()],
    ]
}

fn operation() -> impl Strategy<Value = Value> {
    (
        proptest::option::of("[a-zA-Z/ .]{1,80}"),
        vec(parameter(), 0..3),
        proptest::option::of(schema()),
        btree_map(select(vec!["200", "201", "2XX", "204", "default", "404"]), schema(), 0..3),
        vec(select(vec!["a", "b", "c"]), 0..2),
    )
        .prop_map(|(id, params, body, responses, tags)| {
            let mut op = Map::new();
            if let Some(id) = id {
                op.insert("operationId".into(), json!(id));
            }
            op.insert("parameters".into(), Value::Array(params));
            op.insert("tags".into(), json!(tags));
            if let Some(b) = body {
                op.insert(
                    "requestBody".into(),
                    json!({"required": true, "content": {"application/json": {"schema": b}}}),
                );
            }
            let responses: Map<String, Value> = responses
                .into_iter()
                .map(|(code, s)| (code.to_string(), json!({"description": "r", "content": {"application/json": {"schema": s}}, "schema": s})))
                .collect();
            op.insert("responses".into(), Value::Object(responses));
            Value::Object(op)
        })
}

fn document() -> impl Strategy<Value = Value> {
    (
        select(vec!["2.0", "3.0.3", "3.1.0"]),
        btree_map(
            "/[a-z{}]{0,4}",
            btree_map(
                select(vec!["get", "post", "put", "delete", "x-ext"]),
                operation(),
                1..4,
            ),
            1..5,
        ),
        vec(schema(), 5),
        proptest::option::of(parameter()),
    )
        .prop_map(|(version, paths, schemas, p0)| {
            let paths: Map<String, Value> = paths
                .into_iter()
                .map(|(p, ops)| {
                    (
                        p,
                        Value::Object(ops.into_iter().map(|(m, o)| (m.to_string(), o)).collect()),
                    )
                })
                .collect();
            let schemas: Map<String, Value> = ["S0", "S1", "S2", "S3", "A/lias"]
                .iter()
                .map(|k| k.to_string())
                .zip(schemas)
                .collect();
            let mut doc = json!({
                "info": {"title": "t", "version": "1"},
                "paths": paths,
                "components": {"schemas": schemas, "parameters": {"P0": p0}},
                "definitions": {},
            });
            let key = if version == "2.0" {
                "swagger"
            } else {
                "openapi"
            };
            doc[key] = json!(version);
            doc
        })
}

fn options() -> impl Strategy<Value = Options> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(merge, output, remote)| Options {
        body: if merge {
            BodyMode::Merge
        } else {
            BodyMode::Property
        },
        output_schema: output,
        allow_remote_refs: remote,
        ..Options::default()
    })
}

/// Every `$ref` string in `v`'s schema positions, with the data under
/// `default`, `enum`, `examples` and `x-` members left out.
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref" {
                    if let Value::String(s) = x {
                        out.push(s.clone());
                    }
                } else if !(k.starts_with("x-")
                    || ["default", "enum", "const", "example", "examples"].contains(&k.as_str()))
                {
                    refs(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

fn check(doc: &Value, opts: &Options) -> Result<(), TestCaseError> {
    let first = convert_all(doc, opts);
    let second = convert_all(doc, opts);
    match (&first, &second) {
        (Ok((a, ca)), Ok((b, cb))) => {
            prop_assert_eq!(a, b);
            prop_assert_eq!(ca, cb);
        }
        (Err(a), Err(b)) => {
            prop_assert_eq!(a, b);
            prop_assert!(
                !a.message.is_empty() && !a.message.contains('\n'),
                "{}",
                a.message
            );
            return Ok(());
        }
        _ => prop_assert!(false, "not deterministic"),
    }
    let Ok((tools, _)) = first else {
        return Ok(());
    };
    let mut names = std::collections::BTreeSet::new();
    for tool in &tools {
        let name = tool["name"].as_str().unwrap_or_default();
        prop_assert!(!name.is_empty() && name.len() <= MAX_NAME_LEN, "{}", name);
        prop_assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{}",
            name
        );
        prop_assert!(names.insert(name.to_string()), "duplicate {}", name);
        prop_assert_eq!(&tool["inputSchema"]["type"], "object");
        for side in ["inputSchema", "outputSchema"] {
            let Some(schema) = tool.get(side) else {
                continue;
            };
            prop_assert_eq!(&schema["type"], "object");
            let mut found = Vec::new();
            refs(schema, &mut found);
            for r in found {
                match r.strip_prefix("#/$defs/") {
                    Some(name) => prop_assert!(
                        schema["$defs"]
                            .get(name.replace("~1", "/").replace("~0", "~"))
                            .is_some(),
                        "{side} refers to missing $defs entry {r}: {schema}"
                    ),
                    None => prop_assert!(
                        opts.allow_remote_refs && !r.starts_with('#'),
                        "{side} keeps {r}: {schema}"
                    ),
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn generated_documents_convert_or_fail_cleanly(doc in document(), opts in options()) {
        check(&doc, &opts)?;
    }

    #[test]
    fn arbitrary_json_never_panics(v in any_json(), version in select(vec!["swagger", "openapi"])) {
        let mut doc = json!({"paths": {"/a": {"get": v.clone(), "parameters": v.clone()}}, "components": {"schemas": {"S0": v.clone()}}});
        doc[version] = json!(if version == "swagger" { "2.0" } else { "3.1.0" });
        check(&doc, &Options::default())?;
        check(&v, &Options::default())?;
    }
}

fn any_json() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map(
                select(vec![
                    "$ref",
                    "type",
                    "properties",
                    "items",
                    "parameters",
                    "responses",
                    "requestBody",
                    "content",
                    "schema",
                    "name",
                    "in",
                    "operationId",
                    "200",
                    "application/json"
                ]),
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}
