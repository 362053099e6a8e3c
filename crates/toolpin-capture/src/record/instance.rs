//! A minimal value of a JSON Schema, for agents that ask the model for
//! structured output: the recording endpoint's final message must parse as
//! the agent's output type, or the agent fails its turn before it is done.
//!
//! Small on purpose: required members only, the first `enum`/`const`/union
//! branch, the least number, string and array the bounds allow, local
//! `$ref`s. Gemini's upper-case type names read as JSON Schema's.

use serde_json::{json, Map, Value};

/// How deep `$ref`s and nesting are followed before giving `null`.
const MAX_DEPTH: usize = 32;

/// A small value `schema` accepts (as far as the rules above go).
pub fn minimal(schema: &Value) -> Value {
    value(schema, schema, 0)
}

fn value(schema: &Value, root: &Value, depth: usize) -> Value {
    let Some(map) = schema.as_object() else {
        return Value::Null;
    };
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    if let Some(chosen) = chosen(map, root, depth) {
        return chosen;
    }
    let kind = match map.get("type") {
        Some(Value::String(t)) => t.to_ascii_lowercase(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null")
            .to_ascii_lowercase(),
        _ if map.contains_key("properties") => "object".into(),
        _ if map.contains_key("items") => "array".into(),
        _ => return Value::Null,
    };
    of_type(&kind, map, root, depth)
}

/// The value a schema names before its type: what its `$ref` points at,
/// its `const`, its first `enum` value, its first union branch's value, or
/// its `allOf` parts' members merged.
fn chosen(map: &Map<String, Value>, root: &Value, depth: usize) -> Option<Value> {
    if let Some(target) = map.get("$ref").and_then(Value::as_str) {
        let resolved = target
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer));
        return Some(resolved.map_or(Value::Null, |s| value(s, root, depth + 1)));
    }
    if let Some(c) = map.get("const") {
        return Some(c.clone());
    }
    let first = |key: &str| {
        map.get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
    };
    if let Some(first) = first("enum") {
        return Some(first.clone());
    }
    for union in ["anyOf", "oneOf", "any_of", "one_of"] {
        if let Some(first) = first(union) {
            return Some(value(first, root, depth + 1));
        }
    }
    let parts = map.get("allOf").and_then(Value::as_array)?;
    let mut merged = Map::new();
    for part in parts {
        match value(part, root, depth + 1) {
            Value::Object(members) => merged.extend(members),
            other if parts.len() == 1 => return Some(other),
            _ => {}
        }
    }
    Some(Value::Object(merged))
}

/// The least value of JSON type `kind`: the required members, the fewest
/// items, the shortest string, the number nearest zero within the bounds.
fn of_type(kind: &str, map: &Map<String, Value>, root: &Value, depth: usize) -> Value {
    // The least count `key` allows, capped.
    let least = |key: &str, cap: u64| map.get(key).and_then(Value::as_u64).unwrap_or(0).min(cap);
    let number = |key: &str| map.get(key).and_then(Value::as_f64);
    match kind {
        "object" => {
            let mut out = Map::new();
            let properties = map.get("properties").and_then(Value::as_object);
            let required = map.get("required").and_then(Value::as_array);
            for name in required.into_iter().flatten().filter_map(Value::as_str) {
                let member = properties
                    .and_then(|p| p.get(name))
                    .map_or(Value::Null, |s| value(s, root, depth + 1));
                out.insert(name.to_string(), member);
            }
            Value::Object(out)
        }
        "array" => {
            let item = map
                .get("items")
                .map_or(Value::Null, |s| value(s, root, depth + 1));
            Value::Array(vec![item; least("minItems", 16) as usize])
        }
        "string" => json!("x".repeat(least("minLength", 1024) as usize)),
        "integer" | "number" => {
            let low = number("minimum")
                .or_else(|| number("exclusiveMinimum").map(|m| m.floor() + 1.0))
                .unwrap_or(0.0)
                .max(0.0);
            let high =
                number("maximum").or_else(|| number("exclusiveMaximum").map(|m| m.ceil() - 1.0));
            let n = match high {
                Some(h) if h < low => h,
                _ => low,
            };
            if kind == "integer" || n.fract() == 0.0 {
                json!(n as i64)
            } else {
                json!(n)
            }
        }
        "boolean" => json!(false),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_required_members_and_follows_local_refs() {
        let schema = json!({
            "$defs": {"Kind": {"enum": ["refund", "exchange"]}, "Line": {
                "type": "object", "properties": {"sku": {"type": "string", "minLength": 3}},
                "required": ["sku"]}},
            "type": "object",
            "properties": {
                "kind": {"$ref": "#/$defs/Kind"},
                "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}, "minItems": 1},
                "note": {"type": ["string", "null"]},
                "count": {"type": "integer", "exclusiveMinimum": 0},
                "optional": {"type": "string"},
                "either": {"anyOf": [{"type": "boolean"}, {"type": "string"}]},
            },
            "required": ["kind", "lines", "note", "count", "either"],
        });
        assert_eq!(
            minimal(&schema),
            json!({"kind": "refund", "lines": [{"sku": "xxx"}], "note": "", "count": 1, "either": false})
        );
    }

    #[test]
    fn reads_gemini_type_names_and_stops_at_cycles() {
        let schema = json!({"type": "OBJECT", "properties": {"ok": {"type": "BOOLEAN"}}, "required": ["ok"]});
        assert_eq!(minimal(&schema), json!({"ok": false}));
        let cycle = json!({"$defs": {"A": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"});
        assert_eq!(minimal(&cycle), Value::Null);
    }
}
