//! Arguments derived from a pinned `inputSchema`, for the starter
//! contracts: a value per argument, the enum parameters and the defaulted
//! ones. Works on any `Value`: a schema it cannot read gives no arguments,
//! never a panic.

use serde_json::{Map, Value};

/// At most this many calls per enum parameter (the first values in the
/// pinned order); the rest are named in a comment.
pub const MAX_ENUM_CALLS: usize = 20;

/// `$ref` hops followed from one schema before giving up (a cycle, or a
/// chain too long to be meant).
pub const MAX_REF_HOPS: usize = 16;

/// How a placeholder argument starts; `run` refuses a call holding one.
pub const PLACEHOLDER_PREFIX: &str = "<FILL IN: ";

/// What the schema gives for one tool.
#[derive(Debug, Default, PartialEq)]
pub struct Derived {
    /// The arguments every call starts from: each argument's `default`,
    /// else its first `examples` entry, else its first `enum` value, else
    /// its `const`; a required argument with none of these gets a
    /// placeholder; an optional one is left out.
    pub base: Map<String, Value>,
    /// The enum parameters, in name order.
    pub enums: Vec<EnumParam>,
    /// The optional parameters with a pinned `default`, in name order.
    pub defaults: Vec<(String, Value)>,
    /// The required arguments that got a placeholder.
    pub placeholders: Vec<String>,
    /// What was left out and why, for comments in the file.
    pub notes: Vec<String>,
}

/// One enum parameter's values, as far as they are called.
#[derive(Debug, PartialEq)]
pub struct EnumParam {
    pub name: String,
    /// The values called: at most [`MAX_ENUM_CALLS`], each writable as TOML.
    pub values: Vec<Value>,
    /// How many values the pinned enum has.
    pub total: usize,
}

/// The placeholder for a required argument: `<FILL IN: order_id (string)>`.
pub fn placeholder(name: &str, ty: &str) -> String {
    format!("{PLACEHOLDER_PREFIX}{name} ({ty})>")
}

/// Whether `value` is a placeholder that `init` wrote.
pub fn is_placeholder(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| s.starts_with(PLACEHOLDER_PREFIX) && s.ends_with('>'))
}

/// Whether TOML can hold `value`: no `null` anywhere, integers within i64.
pub fn toml_writable(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(_) | Value::String(_) => true,
        Value::Number(n) => n.is_i64() || (n.is_f64() && n.as_f64().is_some_and(f64::is_finite)),
        Value::Array(items) => items.iter().all(toml_writable),
        Value::Object(map) => map.values().all(toml_writable),
    }
}

/// The schemas `schema` stands for: itself, then each `$ref` target in
/// turn (local references only: `#`, `#/$defs/…`, `#/definitions/…`, any
/// JSON pointer into `root`). Stops at a reference it cannot follow.
pub fn chain<'a>(root: &'a Value, schema: &'a Value) -> Vec<&'a Value> {
    let mut out = vec![schema];
    let mut current = schema;
    for _ in 0..MAX_REF_HOPS {
        let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let Some(pointer) = reference.strip_prefix('#') else {
            break;
        };
        let Some(next) = root.pointer(pointer) else {
            break;
        };
        if out.iter().any(|seen| std::ptr::eq(*seen, next)) {
            break;
        }
        out.push(next);
        current = next;
    }
    out
}

/// The first writable value of `key` along the chain.
fn first_of(chain: &[&Value], key: &str) -> Option<Value> {
    chain.iter().find_map(|s| match key {
        "examples" | "enum" => s
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find(|v| toml_writable(v)))
            .cloned(),
        _ => s.get(key).filter(|v| toml_writable(v)).cloned(),
    })
}

/// The JSON type(s) a schema names, for a placeholder: `string`,
/// `integer|null`, or `any`.
fn type_name(chain: &[&Value]) -> String {
    for s in chain {
        match s.get("type") {
            Some(Value::String(t)) => return t.clone(),
            Some(Value::Array(ts)) => {
                let names: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
                if !names.is_empty() {
                    return names.join("|");
                }
            }
            _ => {}
        }
    }
    "any".into()
}

/// Derives the arguments for one tool from its `inputSchema`.
pub fn derive(input_schema: Option<&Value>) -> Derived {
    let mut out = Derived::default();
    let Some(root) = input_schema else {
        out.notes
            .push("the pinned tool has no inputSchema: called without arguments".into());
        return out;
    };
    let top = chain(root, root);
    let properties = top
        .iter()
        .find_map(|s| s.get("properties").and_then(Value::as_object));
    let mut required: Vec<String> = top
        .iter()
        .find_map(|s| s.get("required").and_then(Value::as_array))
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    required.sort();
    required.dedup();
    let empty = Map::new();
    let properties = properties.unwrap_or(&empty);
    if properties.is_empty() && required.is_empty() && !root.is_object() {
        out.notes
            .push("the pinned inputSchema is not an object schema: no arguments derived".into());
    }
    for (name, schema) in properties {
        let chain = chain(root, schema);
        let default = first_of(&chain, "default");
        match &default {
            // Without a required argument the call is invalid: no probe.
            Some(_) if required.contains(name) => out.notes.push(format!(
                "{name}: required with a default; no default probe (a call without it is invalid)"
            )),
            Some(d) => out.defaults.push((name.clone(), d.clone())),
            None => {}
        }
        let value = default
            .or_else(|| first_of(&chain, "examples"))
            .or_else(|| first_of(&chain, "enum"))
            .or_else(|| first_of(&chain, "const"));
        match value {
            Some(v) => {
                out.base.insert(name.clone(), v);
            }
            None if required.contains(name) => {
                out.base.insert(
                    name.clone(),
                    Value::String(placeholder(name, &type_name(&chain))),
                );
                out.placeholders.push(name.clone());
            }
            None => {}
        }
        if let Some(values) = chain
            .iter()
            .find_map(|s| s.get("enum").and_then(Value::as_array))
        {
            let writable: Vec<&Value> = values.iter().filter(|v| toml_writable(v)).collect();
            if writable.len() < values.len() {
                out.notes.push(format!(
                    "{name}: {} enum value(s) cannot be written in TOML (null) and get no call",
                    values.len() - writable.len()
                ));
            }
            if writable.len() > MAX_ENUM_CALLS {
                out.notes.push(format!(
                    "{name}: {} enum values, calls for the first {MAX_ENUM_CALLS} only",
                    values.len()
                ));
            }
            if !writable.is_empty() {
                out.enums.push(EnumParam {
                    name: name.clone(),
                    values: writable.into_iter().take(MAX_ENUM_CALLS).cloned().collect(),
                    total: values.len(),
                });
            }
        }
    }
    // Required arguments the schema does not describe.
    for name in &required {
        if !properties.contains_key(name) {
            out.base
                .insert(name.clone(), Value::String(placeholder(name, "any")));
            out.placeholders.push(name.clone());
        }
    }
    out.placeholders.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base(schema: Value) -> Value {
        Value::Object(derive(Some(&schema)).base)
    }

    #[test]
    fn default_then_examples_then_enum_then_placeholder() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "default": 5, "examples": [7], "enum": [1, 5, 7]},
                "b": {"type": "string", "examples": ["ex", "other"], "enum": ["x"]},
                "c": {"type": "string", "enum": ["first", "second"]},
                "d": {"type": "string"},
                "e": {"type": "boolean"},
                "f": {"const": "fixed"}
            },
            "required": ["d", "c"]
        });
        assert_eq!(
            base(schema),
            json!({
                "a": 5,
                "b": "ex",
                "c": "first",
                "d": "<FILL IN: d (string)>",
                "f": "fixed"
            })
        );
    }

    #[test]
    fn refs_are_followed_within_the_schema() {
        let schema = json!({
            "type": "object",
            "$defs": {
                "Status": {"$ref": "#/definitions/Inner"},
                "Id": {"type": "string"}
            },
            "definitions": {"Inner": {"type": "string", "enum": ["open", "closed"]}},
            "properties": {
                "status": {"$ref": "#/$defs/Status"},
                "id": {"$ref": "#/$defs/Id"},
                "size": {"$ref": "#/$defs/Missing"},
                "local": {"$ref": "#/$defs/Id", "default": "beside-the-ref"}
            },
            "required": ["id", "size"]
        });
        let d = derive(Some(&schema));
        assert_eq!(
            Value::Object(d.base),
            json!({
                "status": "open",
                "id": "<FILL IN: id (string)>",
                "size": "<FILL IN: size (any)>",
                "local": "beside-the-ref"
            })
        );
        assert_eq!(
            d.enums,
            vec![EnumParam {
                name: "status".into(),
                values: vec![json!("open"), json!("closed")],
                total: 2
            }]
        );
        assert_eq!(d.placeholders, vec!["id", "size"]);
    }

    #[test]
    fn a_top_level_ref_and_cycles() {
        let schema = json!({
            "$ref": "#/$defs/Args",
            "$defs": {
                "Args": {"type": "object", "properties": {"loop": {"$ref": "#/$defs/Loop"}}, "required": ["loop"]},
                "Loop": {"$ref": "#/$defs/Loop2"},
                "Loop2": {"$ref": "#/$defs/Loop"}
            }
        });
        assert_eq!(base(schema), json!({"loop": "<FILL IN: loop (any)>"}));
    }

    #[test]
    fn enums_are_bounded_and_nulls_skipped() {
        let values: Vec<Value> = (0..30).map(|i| json!(format!("v{i}"))).collect();
        let schema = json!({
            "type": "object",
            "properties": {
                "many": {"enum": values},
                "nullable": {"enum": [null, "x"], "default": null}
            }
        });
        let d = derive(Some(&schema));
        assert_eq!(d.enums.len(), 2);
        assert_eq!(d.enums[0].name, "many");
        assert_eq!(d.enums[0].values.len(), MAX_ENUM_CALLS);
        assert_eq!(d.enums[0].total, 30);
        assert_eq!(d.enums[1].values, vec![json!("x")]);
        // A null default is no default (TOML has no null).
        assert_eq!(d.defaults, vec![]);
        assert_eq!(
            Value::Object(d.base),
            json!({"many": "v0", "nullable": "x"})
        );
        assert_eq!(
            d.notes,
            vec![
                "many: 30 enum values, calls for the first 20 only".to_string(),
                "nullable: 1 enum value(s) cannot be written in TOML (null) and get no call"
                    .to_string()
            ]
        );
    }

    #[test]
    fn defaults_are_listed() {
        let schema = json!({
            "type": "object",
            "properties": {
                "page_size": {"type": "integer", "default": 50},
                "sort": {"type": "string", "default": "asc", "enum": ["asc", "desc"]}
            }
        });
        let d = derive(Some(&schema));
        assert_eq!(
            d.defaults,
            vec![
                ("page_size".into(), json!(50)),
                ("sort".into(), json!("asc"))
            ]
        );
    }

    #[test]
    fn no_default_probe_for_a_required_parameter() {
        let d = derive(Some(&json!({
            "properties": {"mode": {"type": "string", "default": "fast"}},
            "required": ["mode"]
        })));
        assert_eq!(d.defaults, vec![]);
        assert_eq!(Value::Object(d.base), json!({"mode": "fast"}));
        assert_eq!(
            d.notes,
            vec!["mode: required with a default; no default probe (a call without it is invalid)"]
        );
    }

    #[test]
    fn weird_schemas_do_not_panic() {
        for schema in [
            json!(null),
            json!(true),
            json!("string"),
            json!([1, 2]),
            json!({"properties": []}),
            json!({"properties": {"a": 5, "b": null, "c": [], "d": {"$ref": 3}}}),
            json!({"properties": {"a": {"$ref": "other.json#/x"}}, "required": "a"}),
            json!({"required": [1, null, "x", "x"]}),
            json!({"properties": {"a": {"type": [1, "string"], "enum": "no"}}, "required": ["a"]}),
            json!({"properties": {"a": {"$ref": "#/properties/a"}}, "required": ["a"]}),
            json!({"properties": {"a": {"default": 18446744073709551615u64}}}),
        ] {
            let _ = derive(Some(&schema));
        }
        assert_eq!(derive(None).base, Map::new());
        assert_eq!(
            base(json!({"required": [1, null, "x", "x"]})),
            json!({"x": "<FILL IN: x (any)>"})
        );
        assert_eq!(
            base(json!({"properties": {"a": {"type": [1, "string"]}}, "required": ["a"]})),
            json!({"a": "<FILL IN: a (string)>"})
        );
        // u64 past i64 cannot be TOML: no default, and so a placeholder.
        let d = derive(Some(
            &json!({"properties": {"a": {"default": 18446744073709551615u64}}}),
        ));
        assert_eq!(d.defaults, vec![]);
    }

    #[test]
    fn placeholders_are_recognized() {
        assert!(is_placeholder(&json!(placeholder("order_id", "string"))));
        assert!(!is_placeholder(&json!("ORD-1")));
        assert!(!is_placeholder(&json!(5)));
    }
}
