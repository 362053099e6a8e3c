//! Normalization: the comparable form of a tool, specified in
//! docs/fingerprint.md so another language can reproduce it.
//!
//! 1. the schema member is unified: `inputSchema`, `input_schema`,
//!    `parameters`, `parametersJsonSchema` or `parameters_json_schema`
//!    becomes `inputSchema`;
//! 2. the `prefix` is prepended to `name` (namespacing as the runtime does);
//! 3. a string `description` is trimmed of leading and trailing white space;
//! 4. every `required` keyword at a schema position inside `inputSchema` /
//!    `outputSchema` (the root and what the subschema keywords listed below
//!    lead to) that is an array of strings becomes a sorted set (code point
//!    order, duplicates dropped);
//! 5. the configured `ignore` pointers are removed (after step 4, so a
//!    pointer into `required` names the same entry whatever order the server
//!    sent).
//!
//! Nothing else changes: unknown members, `_meta`, annotations, Gemini's
//! uppercase types all stay as given.

use serde_json::{Map, Value};

use crate::glob::Glob;
use crate::pointer::Pointer;

/// Members that hold a tool's input schema in the formats toolpin reads.
pub const SCHEMA_MEMBERS: [&str; 5] = [
    "inputSchema",
    "input_schema",
    "parameters",
    "parametersJsonSchema",
    // google-genai sends the JSON Schema of a Python function under the
    // protobuf field's own name, which the Gemini API accepts as well.
    "parameters_json_schema",
];

/// Deepest nesting a normalized tool may have. Chosen so that a lockfile,
/// which nests tools five levels down, always parses again.
pub const MAX_TOOL_DEPTH: usize = 100;

/// What the runtime does to a server's tools before the model sees them.
#[derive(Clone, Debug, Default)]
pub struct Transform {
    pub prefix: String,
    pub include: Vec<Glob>,
    pub exclude: Vec<Glob>,
    pub ignore: Vec<Pointer>,
}

/// Why a tool cannot be pinned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("tool #{index} is {found}, expected an object")]
    NotAnObject { index: usize, found: &'static str },
    #[error("tool #{index} has no \"name\"")]
    NoName { index: usize },
    #[error("tool #{index} has a \"name\" that is {found}, expected a string")]
    NameNotString { index: usize, found: &'static str },
    #[error("tool #{index} has an empty \"name\"")]
    EmptyName { index: usize },
    #[error("tool {name:?} has more than one schema member ({members}); keep one")]
    SchemaConflict { name: String, members: String },
    #[error("tool {name:?} is nested deeper than {MAX_TOOL_DEPTH} levels")]
    TooDeep { name: String },
    #[error("tool #{index} lost its \"name\" to an `ignore` pointer")]
    NameIgnored { index: usize },
    #[error("duplicate tool name {name:?} (tools #{first} and #{second})")]
    Duplicate {
        name: String,
        first: usize,
        second: usize,
    },
}

/// The JSON type name used in messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Reads the name of raw tool #`index` (checking it is an object with a
/// non-empty string name).
pub fn tool_name(tool: &Value, index: usize) -> Result<&str, ToolError> {
    let Value::Object(map) = tool else {
        return Err(ToolError::NotAnObject {
            index,
            found: type_name(tool),
        });
    };
    match map.get("name") {
        None => Err(ToolError::NoName { index }),
        Some(Value::String(s)) if s.is_empty() => Err(ToolError::EmptyName { index }),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(ToolError::NameNotString {
            index,
            found: type_name(other),
        }),
    }
}

impl Transform {
    /// Whether the runtime keeps the tool with this (server-side) name.
    pub fn keeps(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|g| g.is_match(name)))
            && !self.exclude.iter().any(|g| g.is_match(name))
    }

    /// Filters, namespaces and normalizes a server's raw tools, in the order
    /// given. Duplicate names among the kept tools are an error.
    pub fn apply(&self, raw: Vec<Value>) -> Result<Vec<Value>, ToolError> {
        self.apply_map(raw, |tool| tool)
    }

    /// [`Transform::apply`], handing each normalized tool to `f` as soon as
    /// it is ready, while it is still in cache (what
    /// [`crate::ServerPin::from_raw`] fingerprints it with).
    pub fn apply_map<T>(
        &self,
        raw: Vec<Value>,
        mut f: impl FnMut(Value) -> T,
    ) -> Result<Vec<T>, ToolError> {
        let mut seen: std::collections::HashMap<String, usize> =
            std::collections::HashMap::with_capacity(raw.len());
        let mut out = Vec::with_capacity(raw.len());
        for (index, tool) in raw.into_iter().enumerate() {
            let name = tool_name(&tool, index)?;
            if !self.keeps(name) {
                continue;
            }
            if let Some(&first) = seen.get(name) {
                return Err(ToolError::Duplicate {
                    name: name.to_string(),
                    first,
                    second: index,
                });
            }
            seen.insert(name.to_string(), index);
            out.push(f(self.normalize(tool, index)?));
        }
        Ok(out)
    }

    /// Normalizes one raw tool (steps 1–5 of the module docs).
    pub fn normalize(&self, tool: Value, index: usize) -> Result<Value, ToolError> {
        tool_name(&tool, index)?;
        let Value::Object(mut map) = tool else {
            unreachable!("tool_name checked the tool is an object")
        };
        unify_schema_member(&mut map)?;
        if !self.prefix.is_empty() {
            if let Some(Value::String(name)) = map.get_mut("name") {
                name.insert_str(0, &self.prefix);
            }
        }
        if let Some(Value::String(d)) = map.get_mut("description") {
            let trimmed = d.trim();
            if trimmed.len() != d.len() {
                *d = trimmed.to_string();
            }
        }
        for member in ["inputSchema", "outputSchema"] {
            if let Some(schema) = map.get_mut(member) {
                normalize_schema(schema);
            }
        }
        let mut tool = Value::Object(map);
        for pointer in &self.ignore {
            pointer.remove(&mut tool);
        }
        if !tool.get("name").is_some_and(Value::is_string) {
            return Err(ToolError::NameIgnored { index });
        }
        if depth_exceeds(&tool, MAX_TOOL_DEPTH) {
            return Err(ToolError::TooDeep {
                name: name_of(&tool),
            });
        }
        Ok(tool)
    }
}

fn name_of(tool: &Value) -> String {
    tool.get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn unify_schema_member(map: &mut Map<String, Value>) -> Result<(), ToolError> {
    let present: Vec<&str> = SCHEMA_MEMBERS
        .iter()
        .copied()
        .filter(|m| map.contains_key(*m))
        .collect();
    match present.as_slice() {
        [] | ["inputSchema"] => Ok(()),
        [one] => {
            if let Some(schema) = map.remove(*one) {
                map.insert("inputSchema".to_string(), schema);
            }
            Ok(())
        }
        many => Err(ToolError::SchemaConflict {
            name: map
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            members: many.join(", "),
        }),
    }
}

/// What a schema keyword's value holds, as far as the walk is concerned.
enum Keyword {
    Required,
    /// One subschema (`items` may also be an array: the old tuple form).
    Subschema,
    /// An array of subschemas.
    Subschemas,
    /// A map from names to subschemas.
    SubschemaMap,
    Other,
}

/// Classifies a key with one `match`, which compiles to a length switch:
/// much cheaper than searching keyword lists for every member of every
/// schema of a large catalog.
fn keyword(key: &str) -> Keyword {
    match key {
        "required" => Keyword::Required,
        "additionalProperties"
        | "additionalItems"
        | "unevaluatedProperties"
        | "unevaluatedItems"
        | "contains"
        | "propertyNames"
        | "not"
        | "if"
        | "then"
        | "else"
        | "items" => Keyword::Subschema,
        "anyOf" | "oneOf" | "allOf" | "prefixItems" => Keyword::Subschemas,
        "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
        | "dependencies" => Keyword::SubschemaMap,
        _ => Keyword::Other,
    }
}

/// Makes `required` a sorted set at every schema position below `schema`,
/// in one pass over each schema's members.
fn normalize_schema(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    for (key, sub) in map.iter_mut() {
        match (keyword(key), sub) {
            (Keyword::Required, Value::Array(req)) => sort_required(req),
            (Keyword::Subschema, sub @ Value::Object(_)) => normalize_schema(sub),
            (Keyword::Subschema | Keyword::Subschemas, Value::Array(subs)) => {
                subs.iter_mut().for_each(normalize_schema);
            }
            (Keyword::SubschemaMap, Value::Object(subs)) => {
                subs.values_mut().for_each(normalize_schema);
            }
            _ => {}
        }
    }
}

/// An array of strings becomes a sorted set (code point order); any other
/// array is left as it is.
fn sort_required(req: &mut Vec<Value>) {
    if req.iter().all(Value::is_string) {
        req.sort_unstable_by(|a, b| a.as_str().cmp(&b.as_str()));
        req.dedup();
    }
}

/// Whether `v` nests more than `limit` arrays/objects deep.
pub fn depth_exceeds(v: &Value, limit: usize) -> bool {
    match v {
        Value::Array(items) => limit == 0 || items.iter().any(|i| depth_exceeds(i, limit - 1)),
        Value::Object(map) => limit == 0 || map.values().any(|i| depth_exceeds(i, limit - 1)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t() -> Transform {
        Transform::default()
    }

    #[test]
    fn unifies_trims_and_sets() {
        let raw = json!({
            "name": "lookup",
            "description": "  Look up an order.\n",
            "parameters": {
                "type": "object",
                "required": ["b", "a", "b"],
                "properties": {
                    "required": {"type": "object", "required": ["z", "y"]},
                    "list": {"type": "array", "items": {"required": ["q", "p"]}}
                }
            },
            "x-vendor": {"required": ["keep", "order"]}
        });
        let out = t().normalize(raw, 0).expect("normalizes");
        assert_eq!(
            out,
            json!({
                "name": "lookup",
                "description": "Look up an order.",
                "inputSchema": {
                    "type": "object",
                    "required": ["a", "b"],
                    "properties": {
                        "required": {"type": "object", "required": ["y", "z"]},
                        "list": {"type": "array", "items": {"required": ["p", "q"]}}
                    }
                },
                "x-vendor": {"required": ["keep", "order"]}
            })
        );
    }

    #[test]
    fn prefix_filters_and_ignore() {
        let tr = Transform {
            prefix: "orders__".into(),
            include: vec![Glob::new("*order*").expect("glob")],
            exclude: vec![Glob::new("delete_*").expect("glob")],
            ignore: vec![Pointer::parse("/_meta/generatedAt").expect("pointer")],
        };
        let out = tr
            .apply(vec![
                json!({"name": "lookup_order", "_meta": {"generatedAt": "now", "k": 1}}),
                json!({"name": "delete_order"}),
                json!({"name": "ping"}),
            ])
            .expect("applies");
        assert_eq!(
            out,
            vec![json!({"name": "orders__lookup_order", "_meta": {"k": 1}})]
        );
    }

    #[test]
    fn rejects_bad_tools() {
        assert_eq!(
            t().apply(vec![json!(3)]),
            Err(ToolError::NotAnObject {
                index: 0,
                found: "a number"
            })
        );
        assert_eq!(
            t().apply(vec![json!({"description": "x"})]),
            Err(ToolError::NoName { index: 0 })
        );
        assert_eq!(
            t().apply(vec![json!({"name": ""})]),
            Err(ToolError::EmptyName { index: 0 })
        );
        assert_eq!(
            t().apply(vec![json!({"name": 5})]),
            Err(ToolError::NameNotString {
                index: 0,
                found: "a number"
            })
        );
        assert_eq!(
            t().apply(vec![
                json!({"name": "a"}),
                json!({"name": "b"}),
                json!({"name": "a"})
            ]),
            Err(ToolError::Duplicate {
                name: "a".into(),
                first: 0,
                second: 2
            })
        );
        assert!(matches!(
            t().apply(vec![
                json!({"name": "a", "parameters": {}, "inputSchema": {}})
            ]),
            Err(ToolError::SchemaConflict { .. })
        ));
    }

    #[test]
    fn ignore_sees_required_sorted_and_keeps_the_name() {
        let tr = Transform {
            ignore: vec![Pointer::parse("/inputSchema/required/0").expect("pointer")],
            ..Transform::default()
        };
        let a = tr.normalize(
            json!({"name": "t", "inputSchema": {"required": ["b", "a"]}}),
            0,
        );
        let b = tr.normalize(
            json!({"name": "t", "inputSchema": {"required": ["a", "b"]}}),
            0,
        );
        assert_eq!(a, b);
        assert_eq!(a.expect("ok")["inputSchema"]["required"], json!(["b"]));
        let tr = Transform {
            ignore: vec![Pointer::parse("/name").expect("pointer")],
            ..Transform::default()
        };
        assert_eq!(
            tr.normalize(json!({"name": "t"}), 4),
            Err(ToolError::NameIgnored { index: 4 })
        );
    }

    #[test]
    fn depth_limit() {
        let mut v = json!({});
        for _ in 0..MAX_TOOL_DEPTH {
            v = json!({ "p": v });
        }
        assert!(matches!(
            t().normalize(json!({"name": "deep", "inputSchema": v}), 0),
            Err(ToolError::TooDeep { .. })
        ));
    }
}
