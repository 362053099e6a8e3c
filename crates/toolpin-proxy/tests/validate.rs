//! The JSON Schema validator for tool arguments and results: each keyword
//! passing and failing, pointers and messages, unknown enum values told
//! apart from other failures, recursive schemas, `$ref` cycles, Gemini
//! and draft-07 dialects, bounded messages and limits, and generated
//! schemas and values that must never panic.

use std::time::{Duration, Instant};

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Value};
use toolpin_manifest::schema::{RefError, Resolver, Target};
use toolpin_proxy::validate::{Validator, Violation, ViolationKind, MAX_VIOLATIONS};

// ---------------------------------------------------------------------------
// Helpers

/// Violations of `instance`, checking that `is_valid` agrees and that every
/// pointer resolves in the instance and every schema pointer in the schema.
fn check(schema: &Value, instance: &Value) -> Vec<Violation> {
    let v = Validator::new(schema);
    let out = v.validate(instance);
    assert_eq!(
        v.is_valid(instance),
        out.is_empty(),
        "is_valid disagrees with validate for {instance} against {schema}: {out:?}"
    );
    assert!(out.len() <= MAX_VIOLATIONS);
    for x in &out {
        assert!(
            instance.pointer(&x.pointer).is_some(),
            "pointer {:?} does not resolve in {instance}",
            x.pointer
        );
        assert!(
            schema.pointer(&x.schema_pointer).is_some(),
            "schema pointer {:?} does not resolve in {schema}",
            x.schema_pointer
        );
        assert!(!x.message.contains('\n'), "multi-line message {x:?}");
        assert!(x.message.len() <= 600, "long message {x:?}");
    }
    out
}

fn ok(schema: Value, instance: Value) {
    let out = check(&schema, &instance);
    assert!(
        out.is_empty(),
        "{instance} should be valid against {schema}: {out:#?}"
    );
}

fn bad(schema: Value, instance: Value) -> Vec<Violation> {
    let out = check(&schema, &instance);
    assert!(
        !out.is_empty(),
        "{instance} should be invalid against {schema}"
    );
    out
}

/// The one violation of `instance`.
fn one(schema: Value, instance: Value) -> Violation {
    let mut out = bad(schema, instance);
    assert_eq!(out.len(), 1, "{out:#?}");
    out.remove(0)
}

fn keywords(out: &[Violation]) -> Vec<&'static str> {
    out.iter().map(|v| v.keyword).collect()
}

fn is_unknown_enum(v: &Violation) -> bool {
    matches!(v.kind, ViolationKind::UnknownEnumValue { .. })
}

/// Table of instances and whether each is valid against `schema`.
fn table(schema: Value, cases: &[(Value, bool)]) {
    for (instance, valid) in cases {
        if *valid {
            ok(schema.clone(), instance.clone());
        } else {
            bad(schema.clone(), instance.clone());
        }
    }
}

/// Drop a deeply nested value without recursing.
fn drop_deep(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(a) => stack.extend(a),
            Value::Object(m) => stack.extend(m.into_iter().map(|(_, x)| x)),
            _ => {}
        }
    }
}

fn nested_arrays(depth: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..depth {
        v = Value::Array(vec![v]);
    }
    v
}

// ---------------------------------------------------------------------------
// type

#[test]
fn type_names_and_arrays() {
    table(
        json!({"type": "string"}),
        &[(json!("a"), true), (json!(1), false), (json!(null), false)],
    );
    table(
        json!({"type": "integer"}),
        &[
            (json!(1), true),
            (json!(-7), true),
            (json!(1.0), true),
            (json!(1e3), true),
            (json!(1.5), false),
            (json!("1"), false),
        ],
    );
    table(
        json!({"type": "number"}),
        &[(json!(1), true), (json!(1.5), true), (json!(true), false)],
    );
    table(
        json!({"type": "boolean"}),
        &[(json!(false), true), (json!(0), false)],
    );
    table(
        json!({"type": "null"}),
        &[(json!(null), true), (json!(0), false), (json!(""), false)],
    );
    table(
        json!({"type": "object"}),
        &[(json!({}), true), (json!([]), false)],
    );
    table(
        json!({"type": "array"}),
        &[(json!([]), true), (json!({}), false)],
    );
    table(
        json!({"type": ["string", "null"]}),
        &[(json!("a"), true), (json!(null), true), (json!(1), false)],
    );
}

#[test]
fn type_message_and_pointers() {
    let v = one(json!({"type": ["string", "null"]}), json!(3));
    assert_eq!(v.keyword, "type");
    assert_eq!(v.pointer, "");
    assert_eq!(v.schema_pointer, "/type");
    assert_eq!(v.message, "expected string or null, got integer");
    assert_eq!(v.kind, ViolationKind::Nonconformant);
    assert_eq!(
        v.to_string(),
        "(root): expected string or null, got integer"
    );
    let v = one(json!({"type": "integer"}), json!(2.5));
    assert_eq!(v.message, "expected integer, got number");
}

#[test]
fn gemini_uppercase_types() {
    let schema = json!({
        "type": "OBJECT",
        "properties": {
            "city": {"type": "STRING"},
            "days": {"type": "Integer"},
            "units": {"type": "STRING", "format": "enum", "enum": ["C", "F"]},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}},
            "note": {"type": "STRING", "nullable": true}
        },
        "required": ["city"]
    });
    ok(
        schema.clone(),
        json!({"city": "Oslo", "days": 3, "units": "C", "tags": ["a"], "note": null}),
    );
    let out = bad(
        schema.clone(),
        json!({"city": 1, "days": 1.5, "tags": [2], "units": "K"}),
    );
    assert_eq!(keywords(&out), ["type", "type", "type", "enum"]);
    assert_eq!(out[0].pointer, "/city");
    assert_eq!(out[2].pointer, "/tags/0");
    assert!(is_unknown_enum(&out[3]));
    assert!(Validator::new(&schema).unsupported().is_empty());
}

#[test]
fn unknown_type_name_is_unsupported_and_permissive() {
    let v = Validator::new(&json!({"type": ["string", "TYPE_UNSPECIFIED"]}));
    assert!(v.is_valid(&json!(3)));
    assert_eq!(v.unsupported().len(), 1);
    assert!(v.unsupported()[0].starts_with("#/type: unknown type"));
}

// ---------------------------------------------------------------------------
// enum and const

#[test]
fn enum_matches_by_json_value() {
    table(
        json!({"enum": ["a", 1, null, {"k": [1, 2]}]}),
        &[
            (json!("a"), true),
            (json!(1.0), true),
            (json!(null), true),
            (json!({"k": [1.0, 2]}), true),
            (json!("b"), false),
            (json!({"k": [2, 1]}), false),
            (json!(true), false),
        ],
    );
    table(
        json!({"const": {"a": 1, "b": [true]}}),
        &[
            (json!({"b": [true], "a": 1}), true),
            (json!({"a": 1}), false),
        ],
    );
}

#[test]
fn enum_mismatch_is_an_unknown_enum_value() {
    let v = one(
        json!({"type": "string", "enum": ["low", "high"]}),
        json!("medium"),
    );
    assert_eq!(v.keyword, "enum");
    assert_eq!(v.schema_pointer, "/enum");
    assert_eq!(
        v.kind,
        ViolationKind::UnknownEnumValue {
            value: "\"medium\"".into()
        }
    );
    assert_eq!(
        v.message,
        r#"value "medium" is not one of the pinned values ["low","high"]"#
    );
    let v = one(json!({"const": 3}), json!(4.5));
    assert_eq!(v.keyword, "const");
    assert!(is_unknown_enum(&v));
    assert_eq!(v.message, "value 4.5 is not the pinned constant 3");
}

#[test]
fn enum_of_another_type_is_not_an_unknown_enum_value() {
    // The type check fails; the enum is not checked on top of it.
    let out = bad(json!({"type": "string", "enum": ["a"]}), json!(5));
    assert_eq!(keywords(&out), ["type"]);
    // No type keyword: a value of a type the enum never holds.
    let v = one(json!({"enum": ["a", "b"]}), json!(5));
    assert_eq!(v.keyword, "enum");
    assert_eq!(v.kind, ViolationKind::Nonconformant);
    let v = one(json!({"const": "auto"}), json!({"mode": "x"}));
    assert_eq!(v.kind, ViolationKind::Nonconformant);
}

#[test]
fn unknown_enum_in_nested_properties_and_items() {
    let schema = json!({
        "type": "object",
        "properties": {
            "filter": {
                "type": "object",
                "properties": {
                    "status": {"type": "string", "enum": ["open", "closed"]}
                }
            },
            "sort": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"dir": {"enum": ["asc", "desc"]}}
                }
            },
            "limit": {"type": "integer"}
        }
    });
    let out = bad(
        schema,
        json!({
            "filter": {"status": "archived"},
            "sort": [{"dir": "asc"}, {"dir": "random"}],
            "limit": "ten"
        }),
    );
    assert_eq!(out.len(), 3, "{out:#?}");
    let enums: Vec<_> = out.iter().filter(|v| is_unknown_enum(v)).collect();
    assert_eq!(enums.len(), 2);
    assert_eq!(enums[0].pointer, "/filter/status");
    assert_eq!(
        enums[0].schema_pointer,
        "/properties/filter/properties/status/enum"
    );
    assert_eq!(enums[1].pointer, "/sort/1/dir");
    assert_eq!(
        enums[1].schema_pointer,
        "/properties/sort/items/properties/dir/enum"
    );
    assert_eq!(
        enums[1].kind,
        ViolationKind::UnknownEnumValue {
            value: "\"random\"".into()
        }
    );
    let rest: Vec<_> = out.iter().filter(|v| !is_unknown_enum(v)).collect();
    assert_eq!(rest[0].pointer, "/limit");
    assert_eq!(rest[0].keyword, "type");
}

#[test]
fn unknown_enum_through_optional_any_of() {
    // pydantic's Optional[Literal["a", "b"]]
    let schema = json!({
        "type": "object",
        "properties": {
            "mode": {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]},
            "level": {"oneOf": [{"const": 1}, {"const": 2}, {"type": "null"}]}
        }
    });
    ok(schema.clone(), json!({"mode": null, "level": 2}));
    let out = bad(schema.clone(), json!({"mode": "c", "level": 3}));
    assert_eq!(out.len(), 2, "{out:#?}");
    assert!(out.iter().all(is_unknown_enum));
    assert_eq!(out[0].pointer, "/level");
    assert_eq!(out[0].schema_pointer, "/properties/level/oneOf/0/const");
    assert_eq!(out[1].pointer, "/mode");
    assert_eq!(out[1].schema_pointer, "/properties/mode/anyOf/0/enum");
    // A value of another type is a plain anyOf failure.
    let v = one(schema, json!({"mode": 7}));
    assert_eq!(v.keyword, "anyOf");
    assert_eq!(v.kind, ViolationKind::Nonconformant);
    assert_eq!(v.schema_pointer, "/properties/mode/anyOf");
    assert!(
        v.message
            .starts_with("value matches none of the 2 alternatives of anyOf; alternative"),
        "{}",
        v.message
    );
}

#[test]
fn unknown_enum_in_output_schema_structured_content() {
    // An outputSchema as a server pins it, checked against structuredContent.
    let schema = json!({
        "type": "object",
        "properties": {
            "results": {
                "type": "array",
                "items": {"$ref": "#/$defs/hit"}
            }
        },
        "required": ["results"],
        "$defs": {
            "hit": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ["file", "dir"]},
                    "path": {"type": "string"}
                },
                "required": ["kind", "path"],
                "additionalProperties": false
            }
        }
    });
    let out = bad(
        schema,
        json!({"results": [
            {"kind": "file", "path": "/a"},
            {"kind": "symlink", "path": "/b"},
            {"kind": "dir", "path": "/c", "size": 3}
        ]}),
    );
    assert_eq!(out.len(), 2);
    assert!(is_unknown_enum(&out[0]));
    assert_eq!(out[0].pointer, "/results/1/kind");
    assert_eq!(out[0].schema_pointer, "/$defs/hit/properties/kind/enum");
    assert_eq!(out[1].keyword, "additionalProperties");
    assert_eq!(out[1].pointer, "/results/2/size");
    assert_eq!(out[1].schema_pointer, "/$defs/hit/additionalProperties");
    assert_eq!(
        out[1].message,
        r#"property "size" is not allowed (additionalProperties is false)"#
    );
}

#[test]
fn nullable_allows_null() {
    let schema = json!({"type": "string", "enum": ["a"], "nullable": true});
    ok(schema.clone(), json!(null));
    ok(schema.clone(), json!("a"));
    bad(schema, json!("b"));
    bad(json!({"type": "string", "nullable": false}), json!(null));
}

// ---------------------------------------------------------------------------
// Objects

#[test]
fn required_and_properties() {
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["c"]}},
        "required": ["a", "x/y"]
    });
    let out = bad(schema.clone(), json!({"a": {"b": "no"}}));
    assert_eq!(keywords(&out), ["required", "required", "type"]);
    assert_eq!(out[0].pointer, "");
    assert_eq!(out[0].message, r#"missing required property "x/y""#);
    assert_eq!(out[0].schema_pointer, "/required");
    assert_eq!(out[1].pointer, "/a");
    assert_eq!(out[1].message, r#"missing required property "c""#);
    assert_eq!(out[2].pointer, "/a/b");
    assert_eq!(out[2].schema_pointer, "/properties/a/properties/b/type");
    ok(schema, json!({"a": {"b": 1, "c": 0}, "x/y": 1}));
    // Properties apply only to objects.
    ok(
        json!({"properties": {"a": false}, "required": ["a"]}),
        json!([1]),
    );
}

#[test]
fn pointer_escapes_in_instance_paths() {
    let v = one(
        json!({"properties": {"a/b": {"properties": {"m~n": {"type": "string"}}}}}),
        json!({"a/b": {"m~n": 1}}),
    );
    assert_eq!(v.pointer, "/a~1b/m~0n");
    assert_eq!(v.schema_pointer, "/properties/a~1b/properties/m~0n/type");
}

#[test]
fn additional_and_pattern_properties() {
    let schema = json!({
        "properties": {"name": {"type": "string"}},
        "patternProperties": {"^x-": {"type": "integer"}},
        "additionalProperties": false
    });
    ok(schema.clone(), json!({"name": "n", "x-a": 1}));
    let out = bad(schema.clone(), json!({"name": "n", "x-a": "s", "other": 1}));
    assert_eq!(keywords(&out), ["additionalProperties", "type"]);
    assert_eq!(out[0].pointer, "/other");
    assert_eq!(out[1].pointer, "/x-a");
    assert_eq!(out[1].schema_pointer, "/patternProperties/^x-/type");
    let schema = json!({"properties": {"a": true}, "additionalProperties": {"type": "boolean"}});
    ok(schema.clone(), json!({"a": 1, "b": true}));
    let v = one(schema, json!({"a": 1, "b": 2}));
    assert_eq!(v.pointer, "/b");
    assert_eq!(v.schema_pointer, "/additionalProperties/type");
}

#[test]
fn property_names_and_counts() {
    let schema = json!({"propertyNames": {"pattern": "^[a-z]+$", "maxLength": 3}});
    ok(schema.clone(), json!({"ab": 1}));
    let v = one(schema, json!({"abcd": 1}));
    assert_eq!(v.keyword, "maxLength");
    assert_eq!(v.pointer, "");
    assert_eq!(v.schema_pointer, "/propertyNames/maxLength");
    table(
        json!({"minProperties": 1, "maxProperties": 2}),
        &[
            (json!({}), false),
            (json!({"a": 1}), true),
            (json!({"a": 1, "b": 2, "c": 3}), false),
            (json!("not an object"), true),
        ],
    );
}

#[test]
fn dependent_required_and_schemas() {
    let schema = json!({
        "dependentRequired": {"card": ["cvv", "expiry"]},
        "dependentSchemas": {"ship": {"required": ["address"]}}
    });
    ok(schema.clone(), json!({}));
    ok(schema.clone(), json!({"card": 1, "cvv": 1, "expiry": 1}));
    let out = bad(schema.clone(), json!({"card": 1, "ship": true}));
    assert_eq!(
        keywords(&out),
        ["dependentRequired", "dependentRequired", "required"]
    );
    assert_eq!(
        out[0].message,
        r#"property "card" requires property "cvv", which is missing"#
    );
    assert_eq!(out[2].schema_pointer, "/dependentSchemas/ship/required");
    // Draft-07 dependencies, both forms.
    let schema = json!({
        "dependencies": {"a": ["b"], "c": {"properties": {"d": {"type": "string"}}}}
    });
    ok(schema.clone(), json!({"a": 1, "b": 2, "c": 0, "d": "s"}));
    let out = bad(schema, json!({"a": 1, "c": 0, "d": 5}));
    assert_eq!(keywords(&out), ["dependencies", "type"]);
    assert_eq!(out[0].schema_pointer, "/dependencies");
}

// ---------------------------------------------------------------------------
// Arrays

#[test]
fn items_prefix_items_and_counts() {
    let schema =
        json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3});
    ok(schema.clone(), json!([1, 2, 3]));
    let out = bad(schema.clone(), json!([1, "b", 3, 4.5]));
    assert_eq!(keywords(&out), ["maxItems", "type", "type"]);
    assert_eq!(out[0].message, "array has 4 items, at most 3 allowed");
    assert_eq!(out[1].pointer, "/1");
    assert_eq!(out[2].pointer, "/3");
    assert_eq!(keywords(&bad(schema, json!([]))), ["minItems"]);

    let schema = json!({"prefixItems": [{"type": "string"}, {"type": "number"}], "items": false});
    ok(schema.clone(), json!(["a", 1]));
    ok(schema.clone(), json!(["a"]));
    let v = one(schema.clone(), json!(["a", 1, null]));
    assert_eq!(v.keyword, "items");
    assert_eq!(v.schema_pointer, "/items");
    assert_eq!(
        v.message,
        "array has 3 items, at most 2 allowed (items is false)"
    );
    let v = one(schema, json!([1]));
    assert_eq!(v.pointer, "/0");
    assert_eq!(v.schema_pointer, "/prefixItems/0/type");
}

#[test]
fn draft_07_tuple_items() {
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "items": [{"type": "string"}, {"type": "integer"}],
        "additionalItems": false
    });
    ok(schema.clone(), json!(["a", 1]));
    let v = one(schema.clone(), json!(["a", 1, 2]));
    assert_eq!(v.keyword, "additionalItems");
    assert_eq!(v.schema_pointer, "/additionalItems");
    let v = one(schema, json!(["a", "b"]));
    assert_eq!(v.schema_pointer, "/items/1/type");
    let schema = json!({"items": [true], "additionalItems": {"type": "boolean"}});
    ok(schema.clone(), json!([1, true]));
    assert_eq!(one(schema, json!([1, 2])).pointer, "/1");
    // Without the array form, additionalItems is ignored (2020-12).
    ok(
        json!({"items": {"type": "integer"}, "additionalItems": false}),
        json!([1, 2]),
    );
}

#[test]
fn contains_min_and_max() {
    let schema = json!({"contains": {"type": "integer"}});
    ok(schema.clone(), json!(["a", 1]));
    let v = one(schema, json!(["a"]));
    assert_eq!(v.keyword, "contains");
    assert_eq!(
        v.message,
        "array has 0 items matching contains, at least 1 required"
    );
    let schema = json!({"contains": {"const": 1}, "minContains": 2, "maxContains": 3});
    table(
        schema.clone(),
        &[
            (json!([1, 1]), true),
            (json!([1, 2, 1, 1]), true),
            (json!([1]), false),
            (json!([1, 1, 1, 1]), false),
        ],
    );
    assert_eq!(one(schema.clone(), json!([1])).keyword, "minContains");
    assert_eq!(one(schema, json!([1, 1, 1, 1])).keyword, "maxContains");
    ok(json!({"contains": false, "minContains": 0}), json!([]));
}

#[test]
fn unique_items() {
    let schema = json!({"uniqueItems": true});
    table(
        schema.clone(),
        &[
            (json!([1, 2, "1"]), true),
            (json!([{"a": 1, "b": 2}, {"a": 1}]), true),
            (json!([[1], [true]]), true),
            (json!([1, 1.0]), false),
            (json!([{"a": 1, "b": 2}, {"b": 2, "a": 1}]), false),
            (json!([false, 0]), true),
        ],
    );
    let v = one(schema.clone(), json!(["x", "y", "x"]));
    assert_eq!(v.message, "items 0 and 2 are equal; items must be unique");
    // The hashed path for long arrays.
    let mut items: Vec<Value> = (0..200)
        .map(|i| json!({"id": i, "tags": [i % 7]}))
        .collect();
    ok(schema.clone(), Value::Array(items.clone()));
    items.push(json!({"tags": [150 % 7], "id": 150.0}));
    let v = one(schema, Value::Array(items));
    assert_eq!(
        v.message,
        "items 150 and 200 are equal; items must be unique"
    );
}

// ---------------------------------------------------------------------------
// Numbers

#[test]
fn bounds() {
    table(
        json!({"minimum": 1, "maximum": 10}),
        &[
            (json!(1), true),
            (json!(10.0), true),
            (json!(0.999), false),
            (json!(11), false),
            (json!("100"), true),
        ],
    );
    table(
        json!({"exclusiveMinimum": 1, "exclusiveMaximum": 10.5}),
        &[
            (json!(1), false),
            (json!(1.0001), true),
            (json!(10.5), false),
            (json!(10), true),
        ],
    );
    // Draft-04 boolean forms.
    table(
        json!({"minimum": 0, "exclusiveMinimum": true, "maximum": 5, "exclusiveMaximum": true}),
        &[(json!(0), false), (json!(5), false), (json!(2.5), true)],
    );
    let v = one(json!({"minimum": 0, "exclusiveMinimum": true}), json!(0));
    assert_eq!(v.keyword, "exclusiveMinimum");
    assert_eq!(v.message, "0 is not greater than 0");
    let v = one(json!({"maximum": 3}), json!(3.5));
    assert_eq!(v.message, "3.5 is not at most 3");
    // Large integers compare exactly.
    table(
        json!({"maximum": 9007199254740992u64}),
        &[
            (json!(9007199254740992u64), true),
            (json!(9007199254740993u64), false),
            (json!(-9223372036854775808i64), true),
            (json!(18446744073709551615u64), false),
        ],
    );
}

#[test]
fn multiple_of_is_float_safe() {
    table(
        json!({"multipleOf": 0.1}),
        &[
            (json!(0.3), true),
            (json!(0.7), true),
            (json!(12), true),
            (json!(-4.2), true),
            (json!(0.35), false),
            (json!(0), true),
        ],
    );
    table(
        json!({"multipleOf": 0.01}),
        &[(json!(19.99), true), (json!(1.005), false)],
    );
    table(
        json!({"multipleOf": 3}),
        &[
            (json!(9), true),
            (json!(-9), true),
            (json!(10), false),
            (json!(9.0), true),
            (json!(4.5), false),
        ],
    );
    table(
        json!({"multipleOf": 1.5}),
        &[(json!(4.5), true), (json!(6), true), (json!(5), false)],
    );
    table(json!({"multipleOf": 0.123456789}), &[(json!(1e308), false)]);
    table(json!({"multipleOf": 1e-8}), &[(json!(0.00000012), true)]);
    let v = one(json!({"multipleOf": 0.1}), json!(0.35));
    assert_eq!(v.message, "0.35 is not a multiple of 0.1");
    // A non-positive multipleOf is unsupported, not a failure.
    let v = Validator::new(&json!({"multipleOf": 0}));
    assert!(v.is_valid(&json!(3)));
    assert_eq!(v.unsupported().len(), 1);
}

// ---------------------------------------------------------------------------
// Strings

#[test]
fn lengths_count_code_points() {
    let schema = json!({"minLength": 2, "maxLength": 4});
    table(
        schema.clone(),
        &[
            (json!("ab"), true),
            (json!("héllo"), false),
            (json!("héll"), true),
            (json!("😀😀😀😀"), true),
            (json!("😀"), false),
            (json!("a"), false),
            (json!(12345), true),
        ],
    );
    let v = one(json!({"maxLength": 2}), json!("日本語"));
    assert_eq!(
        v.message,
        r#"string of 3 characters is longer than 2: "日本語""#
    );
    assert_eq!(
        one(json!({"minLength": 3}), json!("ab")).message,
        r#"string "ab" is shorter than 3 characters"#
    );
}

#[test]
fn pattern() {
    let schema = json!({"pattern": "[0-9]{3}"});
    table(
        schema.clone(),
        &[
            (json!("ab123"), true),
            (json!("ab12"), false),
            (json!(123), true),
        ],
    );
    let v = one(json!({"pattern": "^a+$"}), json!("b"));
    assert_eq!(v.message, r#"string "b" does not match pattern "^a+$""#);
    ok(json!({"pattern": "^\\p{L}+$"}), json!("héllo"));
    ok(json!({"pattern": "^https?:\\/\\/"}), json!("https://x"));
    ok(
        json!({"pattern": "^(?<year>\\d{4})-\\d\\d$"}),
        json!("2024-01"),
    );
}

#[test]
fn uncompilable_pattern_is_unsupported() {
    // Look-around (ECMA 262) is judged now.
    let v = Validator::new(&json!({"properties": {"p": {"pattern": "^(?!admin).*$"}}}));
    assert!(v.unsupported().is_empty(), "{:?}", v.unsupported());
    assert!(!v.is_valid(&json!({"p": "admin"})));
    assert!(v.is_valid(&json!({"p": "alice"})));
    let schema = json!({
        "properties": {"p": {"type": "string", "pattern": "^(a"}},
        "patternProperties": {"[x": {"type": "integer"}},
        "additionalProperties": false
    });
    let v = Validator::new(&schema);
    assert!(v.is_valid(&json!({"p": "admin", "zzz": 1})));
    assert_eq!(v.unsupported().len(), 3, "{:#?}", v.unsupported());
    let notes = v.unsupported().join("\n");
    assert!(
        notes.contains("#/properties/p/pattern: pattern \"^(a\" is not supported ("),
        "{notes}"
    );
    assert!(notes.contains("#/patternProperties/[x: pattern"), "{notes}");
    assert!(
        notes.contains(
            "#/additionalProperties: ignored: a patternProperties pattern is not supported"
        ),
        "{notes}"
    );
    assert!(!v.is_valid(&json!({"p": 1})));
}

#[test]
fn formats() {
    let cases: &[(&str, &[(&str, bool)])] = &[
        (
            "date-time",
            &[
                ("2024-02-29T12:30:00Z", true),
                ("2024-02-29t12:30:00.123+05:30", true),
                ("1998-12-31T23:59:60Z", true),
                ("1998-12-31T15:59:60-08:00", true),
                ("1998-12-31T22:59:60Z", false),
                ("2023-02-29T12:30:00Z", false),
                ("2024-01-01 12:30:00Z", false),
                ("2024-01-01T12:30:00", false),
                ("2024-01-01T24:00:00Z", false),
                ("2024-01-01T12:30:00.Z", false),
                ("2024-01-01T12:30:00+5:30", false),
            ],
        ),
        (
            "date",
            &[
                ("2024-12-31", true),
                ("2000-02-29", true),
                ("1900-02-29", false),
                ("2024-13-01", false),
                ("2024-1-01", false),
                ("２０２４-01-01", false),
            ],
        ),
        (
            "email",
            &[
                ("joe@example.com", true),
                ("first.last+tag@sub.example.org", true),
                ("\"odd local\"@example.com", true),
                ("joe@[192.168.0.1]", true),
                ("joe", false),
                ("@example.com", false),
                ("joe@", false),
                ("jo e@example.com", false),
                (".joe@example.com", false),
                ("jo..e@example.com", false),
                ("joe@exa..mple.com", false),
                ("joe@-example.com", false),
            ],
        ),
        (
            "uuid",
            &[
                ("123e4567-e89b-12d3-a456-426614174000", true),
                ("123E4567-E89B-12D3-A456-426614174000", true),
                ("123e4567e89b12d3a456426614174000", false),
                ("123e4567-e89b-12d3-a456-42661417400g", false),
            ],
        ),
        (
            "ipv4",
            &[
                ("192.168.0.1", true),
                ("256.1.1.1", false),
                ("1.2.3", false),
                ("01.2.3.4", false),
            ],
        ),
        (
            "ipv6",
            &[
                ("::1", true),
                ("2001:db8::8a2e:370:7334", true),
                ("::ffff:192.168.0.1", true),
                ("2001:db8:::1", false),
                ("12345::", false),
            ],
        ),
        (
            "uri",
            &[
                ("https://example.com/a?b=c#d", true),
                ("urn:isbn:0451450523", true),
                ("mailto:joe@example.com", true),
                ("https://example.com/%20x", true),
                ("//example.com/a", false),
                ("/relative/path", false),
                ("https://exa mple.com", false),
                ("https://example.com/%zz", false),
                ("1http://x", false),
            ],
        ),
    ];
    for (format, strings) in cases {
        let schema = json!({"format": format});
        for (s, valid) in *strings {
            let out = check(&schema, &json!(s));
            assert_eq!(out.is_empty(), *valid, "{s:?} as {format}: {out:?}");
            if !valid {
                assert_eq!(out[0].keyword, "format");
                assert!(out[0]
                    .message
                    .ends_with(&format!("is not a valid {format}")));
            }
        }
        ok(schema, json!(12));
    }
    // jsonschema checks more formats; unknown ones are annotations.
    bad(json!({"format": "hostname"}), json!("not a host!"));
    bad(json!({"format": "time"}), json!("whenever"));
    ok(json!({"format": "x-custom"}), json!("whatever"));
}

// ---------------------------------------------------------------------------
// Applicators in place

#[test]
fn all_any_one_not() {
    table(
        json!({"allOf": [{"type": "integer"}, {"minimum": 2}]}),
        &[(json!(3), true), (json!(1), false), (json!(2.5), false)],
    );
    let out = bad(
        json!({"allOf": [{"type": "integer"}, {"minimum": 2}]}),
        json!(1.5),
    );
    assert_eq!(keywords(&out), ["type", "minimum"]);
    assert_eq!(out[0].schema_pointer, "/allOf/0/type");
    table(
        json!({"anyOf": [{"type": "string"}, {"minimum": 2}]}),
        &[(json!("a"), true), (json!(3), true), (json!(1), false)],
    );
    table(
        json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]}),
        &[
            (json!(1), true),
            (json!(2.5), true),
            (json!(3), false),
            (json!(1.5), false),
        ],
    );
    let v = one(
        json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]}),
        json!(3),
    );
    assert_eq!(
        v.message,
        "value matches alternatives 0 and 1 of oneOf; exactly one must match"
    );
    let v = one(
        json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]}),
        json!(1.5),
    );
    assert_eq!(
        v.message,
        "value matches none of the 2 alternatives of oneOf; alternative 0 fails at (root): expected integer, got number"
    );
    table(
        json!({"not": {"type": "null"}}),
        &[(json!(0), true), (json!(null), false)],
    );
    assert_eq!(
        one(json!({"not": {"type": "null"}}), json!(null)).message,
        "value matches the schema under not"
    );
}

#[test]
fn if_then_else() {
    let schema = json!({
        "if": {"properties": {"kind": {"const": "file"}}, "required": ["kind"]},
        "then": {"required": ["path"]},
        "else": {"required": ["url"]}
    });
    table(
        schema.clone(),
        &[
            (json!({"kind": "file", "path": "/a"}), true),
            (json!({"kind": "web", "url": "x"}), true),
            (json!({"kind": "file", "url": "x"}), false),
            (json!({"kind": "web", "path": "/a"}), false),
        ],
    );
    assert_eq!(
        one(schema, json!({"kind": "file"})).schema_pointer,
        "/then/required"
    );
    ok(json!({"then": false}), json!(1));
    ok(json!({"if": true, "else": false}), json!(1));
    bad(json!({"if": true, "then": false}), json!(1));
}

#[test]
fn boolean_schemas() {
    ok(json!(true), json!({"anything": [1]}));
    let v = one(json!(false), json!(1));
    assert_eq!(v.keyword, "false");
    assert_eq!(v.schema_pointer, "");
    let v = one(json!({"properties": {"a": false}}), json!({"a": 1}));
    assert_eq!(v.pointer, "/a");
    assert_eq!(v.schema_pointer, "/properties/a");
    assert_eq!(v.message, "no value is allowed here (the schema is false)");
}

// ---------------------------------------------------------------------------
// $ref

#[test]
fn local_refs() {
    let schema = json!({
        "$defs": {"pos": {"type": "integer", "minimum": 1}, "a/b": {"type": "string"}, "m~n": {"const": 1}, "sp ace": {"type": "boolean"}},
        "definitions": {"old": {"type": "null"}},
        "properties": {
            "p": {"$ref": "#/$defs/pos"},
            "q": {"$ref": "#/definitions/old"},
            "r": {"$ref": "#/$defs/a~1b"},
            "s": {"$ref": "#/$defs/m~0n"},
            "t": {"$ref": "#/$defs/sp%20ace"},
            "u": {"$ref": "#/properties/p"},
            "v": {"$ref": "#/%24defs/pos"}
        }
    });
    ok(
        schema.clone(),
        json!({"p": 1, "q": null, "r": "x", "s": 1, "t": true, "u": 2, "v": 3}),
    );
    let out = bad(
        schema.clone(),
        json!({"p": 0, "q": 1, "r": 1, "s": 2, "t": 1, "u": "x", "v": 0}),
    );
    assert_eq!(out.len(), 7, "{out:#?}");
    assert_eq!(out[0].pointer, "/p");
    assert_eq!(out[0].schema_pointer, "/$defs/pos/minimum");
    assert_eq!(out[2].schema_pointer, "/$defs/a~1b/type");
    assert_eq!(out[3].schema_pointer, "/$defs/m~0n/const");
    assert!(Validator::new(&schema).unsupported().is_empty());
}

#[test]
fn anchors_and_own_id() {
    let schema = json!({
        "$id": "https://example.com/tool.json",
        "$defs": {"n": {"$anchor": "num", "type": "number"}, "old": {"$id": "#str", "type": "string"}},
        "properties": {
            "a": {"$ref": "#num"},
            "b": {"$ref": "#str"},
            "c": {"$ref": "https://example.com/tool.json#/$defs/n"}
        }
    });
    ok(schema.clone(), json!({"a": 1, "b": "x", "c": 2}));
    assert_eq!(
        bad(schema.clone(), json!({"a": "x", "b": 1, "c": "y"})).len(),
        3
    );
    assert!(Validator::new(&schema).unsupported().is_empty());
}

/// `$defs` `d0` .. `d21`, each applying the next one twice: a worst case
/// of about 2^22 evaluations, over the validator's budget.
fn doubling_chain(defs: &mut serde_json::Map<String, Value>) {
    for i in 0..22 {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(
            format!("d{i}"),
            json!({"allOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert("d22".into(), json!({"type": "string"}));
}

#[test]
fn duplicate_anchor_follows_the_shared_resolver() {
    // Two subschemas name themselves `n`: the shared resolver (the one the
    // drift engine reads a `$ref` with) takes the first in document order,
    // a cheap string schema; the other applies the doubling chain. The
    // proxy must follow the same one: its cost graph followed the last,
    // and refused the whole schema as over budget; the crate, left to
    // itself, evaluates the last one too.
    let mut defs = serde_json::Map::new();
    defs.insert("cheap".into(), json!({"$anchor": "n", "type": "string"}));
    defs.insert(
        "costly".into(),
        json!({"$anchor": "n", "$ref": "#/$defs/d0"}),
    );
    doubling_chain(&mut defs);
    let schema = json!({"$defs": defs, "properties": {"a": {"$ref": "#n"}}});
    let shared = Resolver::new(&schema);
    match shared.target("#n") {
        Ok(Target::Local { pointer, .. }) => assert_eq!(pointer, "/$defs/cheap"),
        other => panic!("the shared resolver does not follow #n: {other:?}"),
    }
    let v = Validator::new(&schema);
    assert!(v.unsupported().is_empty(), "{:?}", v.unsupported());
    ok(schema.clone(), json!({"a": "x"}));
    let x = one(schema, json!({"a": 5}));
    assert_eq!(
        (x.keyword, x.schema_pointer.as_str()),
        ("type", "/$defs/cheap/type")
    );
}

#[test]
fn anchor_inside_data_is_not_followed() {
    // An `$anchor` inside `examples` (or `const`) is data: the shared
    // resolver does not find it, so the `$ref` to it does not resolve and
    // is dropped alone. The proxy's cost graph followed it into the
    // doubling chain and refused the whole schema as over budget.
    for data in ["examples", "const"] {
        let mut defs = serde_json::Map::new();
        doubling_chain(&mut defs);
        let held = json!({"$anchor": "x", "$ref": "#/$defs/d0"});
        let held = if data == "examples" {
            json!([held])
        } else {
            held
        };
        defs.insert("holder".into(), json!({ data: held }));
        let schema = json!({
            "$defs": defs,
            "properties": {"a": {"$ref": "#x"}, "b": {"type": "integer"}}
        });
        assert_eq!(
            Resolver::new(&schema).target("#x"),
            Err(RefError::NotFound("#x".into())),
            "{data}"
        );
        let v = Validator::new(&schema);
        assert_eq!(
            v.unsupported(),
            ["#/properties/a/$ref: $ref \"#x\" does not resolve; treated as always valid"],
            "{data}"
        );
        let x = one(schema, json!({"a": 1, "b": "no"}));
        assert_eq!((x.keyword, x.pointer.as_str()), ("type", "/b"), "{data}");
    }
}

#[test]
fn ref_the_crate_cannot_follow_is_dropped_alone() {
    // `#a%20b` names the anchor `a b` (a `$ref` is a URI reference); the
    // meta-schema refuses that name, and the crate then looks `a%20b` up
    // undecoded and answers NoSuchAnchor. That reference alone is dropped,
    // by the error's kind and the anchor it names, and the rest of the
    // schema is still judged (matching the crate's error text missed it
    // and gave up on the whole schema).
    let schema = json!({
        "$defs": {"s": {"$dynamicAnchor": "a b", "type": "string"}},
        "properties": {"a": {"$dynamicRef": "#a%20b"}, "b": {"type": "integer"}}
    });
    let v = Validator::new(&schema);
    let notes = v.unsupported();
    assert!(
        notes.iter().any(|n| n
            == "#/properties/a/$dynamicRef: $ref \"#a%20b\" does not resolve; treated as always valid"),
        "{notes:?}"
    );
    assert!(
        !notes.iter().any(|n| n.contains("does not compile")),
        "{notes:?}"
    );
    let x = one(schema, json!({"a": 1, "b": "no"}));
    assert_eq!((x.keyword, x.pointer.as_str()), ("type", "/b"));
}

#[test]
fn ref_inside_enum_data_is_left_alone() {
    // The crate cannot follow `#a%20b` (see above): that `$dynamicRef` is
    // dropped, and only that one. An enum value spelling the same member
    // is data: removing it too turned the pinned value into `{}`.
    let schema = json!({
        "$defs": {"s": {"$dynamicAnchor": "a b", "type": "string"}},
        "properties": {
            "a": {"$dynamicRef": "#a%20b"},
            "c": {"enum": [{"$dynamicRef": "#a%20b"}]}
        }
    });
    let v = Validator::new(&schema);
    let notes = v.unsupported();
    assert!(
        notes.iter().all(|n| !n.starts_with("#/properties/c")),
        "{notes:?}"
    );
    ok(schema.clone(), json!({"c": {"$dynamicRef": "#a%20b"}}));
    let x = one(schema, json!({"c": {}}));
    assert_eq!((x.keyword, x.pointer.as_str()), ("enum", "/c"));
}

#[test]
fn ref_siblings_by_dialect() {
    let defs = json!({"s": {"type": "string"}});
    // 2020-12: siblings apply.
    let schema = json!({"$defs": defs, "properties": {"a": {"$ref": "#/$defs/s", "maxLength": 2}}});
    bad(schema, json!({"a": "long"}));
    // Draft-07: siblings ignored.
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": defs,
        "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 2}}
    });
    ok(schema.clone(), json!({"a": "long"}));
    bad(schema, json!({"a": 1}));
}

#[test]
fn remote_and_broken_refs_are_unsupported_and_permissive() {
    let schema = json!({
        "properties": {
            "a": {"$ref": "https://example.com/other.json#/x"},
            "b": {"$ref": "#/$defs/missing"},
            "c": {"$ref": "#/$defs/bad~2escape"},
            "d": {"$ref": "#nowhere"},
            "e": {"$ref": 5},
            "f": {"$ref": "#/$defs/%zz"},
            "g": {"$dynamicRef": "#meta"}
        },
        "unevaluatedProperties": false
    });
    let v = Validator::new(&schema);
    assert!(v.is_valid(&json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7})));
    // unevaluatedProperties is judged (jsonschema).
    assert!(!v.is_valid(&json!({"a": 1, "zz": 8})));
    let notes = v.unsupported();
    assert_eq!(notes.len(), 7, "{notes:#?}");
    assert!(notes.iter().any(|n| n
        == "#/properties/a/$ref: remote $ref \"https://example.com/other.json#/x\" is not resolved; treated as always valid"));
    assert!(notes.iter().any(|n| {
        n
        == "#/properties/b/$ref: $ref \"#/$defs/missing\" does not resolve; treated as always valid"
    }));
    assert!(!notes.iter().any(|n| n.contains("unevaluatedProperties")));
}

#[test]
fn recursive_schema_validates_recursive_data() {
    let schema = json!({
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "kind": {"enum": ["leaf", "branch"]},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
                },
                "required": ["name"]
            }
        },
        "$ref": "#/$defs/node"
    });
    fn tree(depth: usize, bad_at: usize) -> Value {
        let mut node = json!({"name": "leaf", "kind": if bad_at == 0 { "twig" } else { "leaf" }});
        for d in 1..=depth {
            node = json!({"name": format!("n{d}"), "kind": "branch", "children": [{"name": "x"}, node]});
            if d == bad_at {
                node["kind"] = json!("twig");
            }
        }
        node
    }
    ok(schema.clone(), tree(40, usize::MAX));
    let out = bad(schema.clone(), tree(40, 0));
    assert_eq!(out.len(), 1);
    assert!(is_unknown_enum(&out[0]));
    assert_eq!(out[0].pointer, "/children/1".repeat(40) + "/kind");
    assert_eq!(out[0].schema_pointer, "/$defs/node/properties/kind/enum");
    let out = bad(
        schema.clone(),
        json!({"name": "a", "children": [{"children": []}]}),
    );
    assert_eq!(out[0].keyword, "required");
    assert_eq!(out[0].pointer, "/children/0");
    // Recursion through the root.
    let schema = json!({"type": ["integer", "array"], "items": {"$ref": "#"}});
    ok(schema.clone(), json!([1, [2, [3, []]]]));
    assert_eq!(one(schema, json!([1, [2, ["x"]]])).pointer, "/1/1/0");
}

#[test]
fn ref_cycles_terminate() {
    let started = Instant::now();
    for schema in [
        json!({"$ref": "#"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
        json!({"anyOf": [{"$ref": "#"}, {"$ref": "#"}]}),
        json!({"allOf": [{"$ref": "#"}], "type": "string"}),
        json!({"$defs": {"a": {"not": {"$ref": "#/$defs/a"}}}, "properties": {"x": {"$ref": "#/$defs/a"}}}),
        json!({"if": {"$ref": "#"}, "then": {"$ref": "#"}, "else": {"$ref": "#"}}),
        json!({"dependentSchemas": {"a": {"$ref": "#"}}}),
    ] {
        let v = Validator::new(&schema);
        assert!(
            v.unsupported().iter().any(|n| n.contains("cycle")),
            "{schema}: {:?}",
            v.unsupported()
        );
        for instance in [json!(1), json!("s"), json!({"a": 1, "x": [1]}), json!(null)] {
            check(&schema, &instance);
        }
    }
    let v = Validator::new(&json!({"allOf": [{"$ref": "#"}], "type": "string"}));
    assert!(v.is_valid(&json!("s")));
    assert!(!v.is_valid(&json!(1)));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn unreferenced_defs_are_not_in_the_cost_graph() {
    // `$defs` apply only through a `$ref`: a cycle among definitions
    // nothing refers to is never evaluated, so nothing is cut or noted.
    let schema = json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "type": "string"});
    let v = Validator::new(&schema);
    assert!(v.unsupported().is_empty(), "{:?}", v.unsupported());
    ok(schema.clone(), json!("s"));
    assert_eq!(one(schema, json!(1)).keyword, "type");
}

#[test]
fn exponential_schema_hits_the_step_limit() {
    // Each level evaluates the next one twice: 2^24 applications unbounded
    // (seconds, and doubling per level; without the static bound this test
    // fails on both assertions).
    let mut defs = serde_json::Map::new();
    for i in 0..24 {
        let next = format!("#/$defs/n{}", i + 1);
        defs.insert(
            format!("n{i}"),
            json!({"anyOf": [{"allOf": [{"$ref": next}, false]}, {"$ref": next}]}),
        );
    }
    defs.insert("n24".into(), json!(false));
    let schema = json!({"$defs": defs, "$ref": "#/$defs/n0"});
    let started = Instant::now();
    let v = Validator::new(&schema);
    let out = v.validate(&json!(1));
    assert!(!v.is_valid(&json!(1)));
    assert!(started.elapsed() < Duration::from_millis(500));
    assert!(v.unsupported().iter().any(|n| n.contains("worst case")));
    let last = out.last().expect("a violation");
    assert_eq!(last.kind, ViolationKind::LimitExceeded);
    assert_eq!(last.keyword, "limit");
}

#[test]
fn realistic_recursive_schemas_are_within_the_budget() {
    // zod's JSON value type: type-discriminated branches, each recursing.
    let json_value = json!({
        "$defs": {"v": {"anyOf": [
            {"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"},
            {"type": "array", "items": {"$ref": "#/$defs/v"}},
            {"type": "object", "additionalProperties": {"$ref": "#/$defs/v"}}
        ]}},
        "type": "object",
        "properties": {"data": {"$ref": "#/$defs/v"}, "meta": {"anyOf": [{"$ref": "#/$defs/v"}, {"type": "null"}]}}
    });
    let v = Validator::new(&json_value);
    assert!(v.unsupported().is_empty(), "{:?}", v.unsupported());
    let mut deep = json!({"k": [1, "a", null]});
    for _ in 0..60 {
        deep = json!({"k": [deep]});
    }
    assert!(v.validate(&json!({"data": deep, "meta": null})).is_empty());
    let out =
        v.validate(&json!({"data": {"a": [1, {"b": {}}]}, "meta": {"x": [1, {}]}, "other": 1}));
    assert!(out.is_empty(), "{out:?}");
    // A GitHub-like tool: nested objects, nullable anyOfs, $defs.
    let github = json!({
        "$defs": {
            "user": {"type": "object", "properties": {"login": {"type": "string"}, "id": {"type": "integer"}}, "required": ["login"]},
            "label": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"name": {"type": "string"}, "color": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}]}
        },
        "type": "object",
        "properties": {
            "owner": {"type": "string"}, "repo": {"type": "string"},
            "issue": {"type": "object", "properties": {
                "title": {"type": "string"},
                "body": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "assignees": {"type": "array", "items": {"$ref": "#/$defs/user"}},
                "labels": {"type": "array", "items": {"$ref": "#/$defs/label"}},
                "milestone": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}
            }}
        },
        "required": ["owner", "repo"]
    });
    let v = Validator::new(&github);
    assert!(v.unsupported().is_empty(), "{:?}", v.unsupported());
    let bad = v.validate(&json!({"owner": "o", "repo": "r", "issue": {"assignees": [{"id": 1}]}}));
    assert_eq!(keywords(&bad), ["required"]);
    assert_eq!(bad[0].pointer, "/issue/assignees/0");
}

// ---------------------------------------------------------------------------
// Bounds

#[test]
fn deep_values_stop_at_the_depth_limit() {
    let schema = json!({"type": ["array", "integer"], "items": {"$ref": "#"}});
    let v = Validator::new(&schema);
    // serde_json's parse limit: validated fully.
    let fine = nested_arrays(127);
    assert!(v.validate(&fine).is_empty());
    drop_deep(fine);
    let deep = nested_arrays(5000);
    let out = v.validate(&deep);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].kind, ViolationKind::LimitExceeded);
    assert!(deep.pointer(&out[0].pointer).is_some());
    assert!(!v.is_valid(&deep));
    // An equally deep value under a shallow schema is no problem.
    assert!(Validator::new(&json!({"type": "array"})).is_valid(&deep));
    // Messages quoting it stay short.
    let out = Validator::new(&json!({"enum": [[1]]})).validate(&deep);
    assert!(out[0].message.len() < 400);
    drop_deep(deep);
}

#[test]
fn deeply_nested_schema_compiles_without_overflow() {
    // (json! would serialize its argument again, recursively.)
    let mut deep = json!({"type": "string"});
    for _ in 0..5000 {
        let mut m = serde_json::Map::new();
        m.insert("items".into(), deep);
        m.insert("properties".into(), json!({"a": {"type": "integer"}}));
        deep = Value::Object(m);
    }
    // Past MAX_SCHEMA_DEPTH levels the schema is not compiled (the crate's
    // compiler would overflow the stack): noted, always valid there.
    let v = Validator::new(&deep);
    assert!(!v.unsupported().is_empty());
    assert!(v
        .unsupported()
        .iter()
        .all(|n| n.contains("nested deeper than 64 levels")));
    let instance = nested_arrays(300);
    assert!(v.validate(&instance).is_empty());
    drop_deep(instance);
    let mut instance = json!("leaf");
    for _ in 0..5000 {
        instance = Value::Array(vec![instance]);
    }
    assert!(v.validate(&instance).is_empty());
    drop_deep(instance);
    drop_deep(deep);
    // Deep enum and const values are not copied.
    let mut schema = serde_json::Map::new();
    schema.insert("enum".into(), Value::Array(vec![nested_arrays(5000)]));
    schema.insert("const".into(), nested_arrays(5000));
    let schema = Value::Object(schema);
    let v = Validator::new(&schema);
    assert_eq!(v.unsupported().len(), 2, "{:?}", v.unsupported());
    assert!(v.is_valid(&json!(1)));
    drop_deep(schema);
}

#[test]
fn huge_values_are_excerpted() {
    let huge = "x".repeat(1_000_000);
    let v = one(json!({"type": "string", "enum": ["a"]}), json!(huge));
    assert!(v.message.len() < 300, "{}", v.message.len());
    assert!(v.message.contains("xxxx…"));
    let ViolationKind::UnknownEnumValue { value } = &v.kind else {
        panic!("{v:?}")
    };
    assert!(value.len() <= 204);
    assert!(value.ends_with('…'));
    // Multi-byte characters are cut at a boundary.
    let v = one(json!({"const": "a"}), json!("é".repeat(100_000)));
    assert!(v.message.len() < 300);
    // A huge enum list, a huge key, a huge array.
    let list: Vec<Value> = (0..100_000).map(|i| json!(format!("value-{i}"))).collect();
    let v = one(json!({"enum": list}), json!("nope"));
    assert!(v.message.len() < 300);
    let key = "k".repeat(100_000);
    let v = one(
        json!({"additionalProperties": false}),
        json!({key.clone(): 1}),
    );
    assert!(v.message.len() < 300);
    assert_eq!(v.pointer.len(), 100_001);
    let v = one(json!({"required": [key]}), json!({}));
    assert!(v.message.len() < 300);
    let v = one(json!({"type": "object"}), json!(vec![1; 1_000_000]));
    assert_eq!(v.message, "expected object, got array");
    let v = one(json!({"const": 1}), json!(vec![1; 1_000_000]));
    assert!(v.message.len() < 300);
}

#[test]
fn violations_are_capped() {
    let v = Validator::new(&json!({"items": {"type": "string"}}));
    let out = v.validate(&json!(vec![1; 10_000]));
    assert_eq!(out.len(), MAX_VIOLATIONS);
    assert_eq!(out[99].pointer, "/99");
}

#[test]
fn validator_is_shareable() {
    fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}
    assert_send_sync::<Validator>();
    let v = std::sync::Arc::new(Validator::new(&json!({"type": "object"})));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let v = v.clone();
            std::thread::spawn(move || v.is_valid(&json!({"i": i})))
        })
        .collect();
    for h in handles {
        assert!(h.join().unwrap());
    }
}

#[test]
fn violations_serialize() {
    let v = one(json!({"enum": ["a"]}), json!("b"));
    assert_eq!(
        serde_json::to_value(&v).unwrap(),
        json!({
            "pointer": "",
            "schema_pointer": "/enum",
            "keyword": "enum",
            "message": "value \"b\" is not one of the pinned values [\"a\"]",
            "kind": {"type": "unknown-enum-value", "value": "\"b\""}
        })
    );
}

#[test]
fn realistic_tool_input_schema() {
    // The shape of a typical MCP tool's inputSchema (zod-to-json-schema).
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
    ok(
        schema.clone(),
        json!({"owner": "o", "repo": "r.js", "state": "all", "labels": ["a", "b"], "per_page": 30,
               "since": "2024-01-01T00:00:00Z", "assignee": null}),
    );
    let out = bad(
        schema,
        json!({"owner": "", "repo": "r/x", "state": "draft", "labels": ["a", "a"], "per_page": 0,
               "since": "yesterday", "assignee": 3, "extra": true}),
    );
    let mut got: Vec<(&str, &str)> = out
        .iter()
        .map(|v| (v.pointer.as_str(), v.keyword))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("/assignee", "anyOf"),
            ("/extra", "additionalProperties"),
            ("/labels", "uniqueItems"),
            ("/owner", "minLength"),
            ("/per_page", "minimum"),
            ("/repo", "pattern"),
            ("/since", "format"),
            ("/state", "enum"),
        ]
    );
    assert_eq!(out.iter().filter(|v| is_unknown_enum(v)).count(), 1);
}

// ---------------------------------------------------------------------------
// Generated schemas and values: never a panic, and the invariants of
// `check` hold.

const KEYS: &[&str] = &[
    "type",
    "enum",
    "const",
    "required",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "items",
    "prefixItems",
    "additionalItems",
    "contains",
    "minContains",
    "maxContains",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "$ref",
    "$defs",
    "definitions",
    "$anchor",
    "$id",
    "$schema",
    "nullable",
    "unevaluatedProperties",
    "a",
    "b",
    "x/y",
    "~",
    "",
];

const STRINGS: &[&str] = &[
    "object",
    "array",
    "string",
    "number",
    "integer",
    "boolean",
    "null",
    "OBJECT",
    "STRING",
    "any",
    "#",
    "#/$defs/a",
    "#/$defs/b",
    "#/definitions/a",
    "#/properties/a",
    "#/items/0",
    "#/allOf/0",
    "#a",
    "#/%24defs/a",
    "#/$defs/x~1y",
    "#/~2",
    "#/%zz",
    "http://example.com/s.json",
    "^a",
    "(?=x)",
    "[",
    "a{2,}",
    "\\d+",
    "date-time",
    "date",
    "email",
    "uuid",
    "ipv4",
    "ipv6",
    "uri",
    "hostname",
    "2024-01-01T00:00:00Z",
    "a@b.c",
    "::1",
    "1.2.3.4",
    "http://draft-07/schema#",
    "a",
    "b",
    "é",
    "",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-5i64..20).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        select(vec![
            0.0,
            -0.0,
            0.1,
            0.5,
            1.5,
            2.0,
            -3.25,
            1e308,
            1e-308,
            0.123456789
        ])
        .prop_map(Value::from),
        select(STRINGS).prop_map(|s| Value::String(s.to_string())),
        "[a-z~/é]{0,4}".prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 80, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..5).prop_map(Value::Array),
            btree_map(select(KEYS).prop_map(str::to_string), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_schemas_and_values_never_panic(schema in json_value(), instance in json_value()) {
        check(&schema, &instance);
        check(&schema, &schema);
        check(&instance, &schema);
    }

    #[test]
    fn arbitrary_values_against_a_realistic_schema(instance in json_value()) {
        let schema = json!({
            "type": "object",
            "properties": {
                "type": {"enum": ["object", "array", "string"]},
                "a": {"$ref": "#/$defs/a"},
                "items": {"type": "array", "items": {"$ref": "#"}, "uniqueItems": true},
                "format": {"type": "string", "format": "date-time"},
                "minimum": {"type": "number", "multipleOf": 0.5, "maximum": 10}
            },
            "patternProperties": {"^\\$": {"type": ["string", "null"]}},
            "additionalProperties": {"anyOf": [{"type": "integer"}, {"const": "a"}]},
            "$defs": {"a": {"oneOf": [{"type": "string", "maxLength": 2}, {"type": "array", "contains": {"const": 1}}]}}
        });
        check(&schema, &instance);
    }
}
