//! Normalising: the copy of a schema the crate compiles, with the forms
//! found in the wild rewritten and what cannot be judged noted.

use super::*;

/// How a keyword holds subschemas.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Holds {
    /// One schema.
    One,
    /// An object of schemas.
    Named,
    /// An array of schemas.
    List,
    /// A schema or an array of schemas (`items`).
    OneOrList,
    /// An object of schemas or arrays of names (`dependencies`).
    Dependencies,
    /// Not a schema.
    Value,
}

/// How a keyword's subschemas apply at a value location (for the budget).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Applies {
    /// At the same location.
    InPlace,
    /// To different members of an object of type `.0`: the largest counts.
    Group(usize),
    /// Each to members or items of a value of type `.0`: they add up.
    Each(usize),
    /// To array items by index (with the other `Index` keywords, the
    /// largest counts).
    Index,
    /// Never (`$defs`), or the keyword holds no subschema.
    Nowhere,
}

/// What `keyword` holds, and how its subschemas apply: the one list of
/// subschema keywords the normaliser, the budget and compiling walk by.
pub(super) fn holds(keyword: &str) -> (Holds, Applies) {
    use Applies::*;
    use Holds::*;
    match keyword {
        "not" | "if" | "then" | "else" => (One, InPlace),
        "allOf" | "anyOf" | "oneOf" => (List, InPlace),
        "dependentSchemas" => (Named, InPlace),
        "dependencies" => (Dependencies, InPlace),
        "properties" => (Named, Group(T_OBJECT)),
        "patternProperties" => (Named, Each(T_OBJECT)),
        "additionalProperties" | "unevaluatedProperties" | "propertyNames" => (One, Each(T_OBJECT)),
        "prefixItems" => (List, Index),
        "items" => (OneOrList, Index),
        "additionalItems" => (One, Index),
        "contains" | "unevaluatedItems" => (One, Each(T_ARRAY)),
        "contentSchema" => (One, Each(T_STRING)),
        "$defs" | "definitions" => (Named, Nowhere),
        _ => (Value, Nowhere),
    }
}

/// The pointers (under the keyword's) of the subschemas `keyword` holds in
/// `v`.
pub(super) fn subschemas(keyword: &str, v: &Value) -> Vec<String> {
    match (holds(keyword).0, v) {
        (Holds::Named | Holds::Dependencies, Value::Object(o)) => o
            .iter()
            .filter(|(_, s)| !s.is_array())
            .map(|(name, _)| format!("/{}", escape_token(name)))
            .collect(),
        (Holds::List | Holds::OneOrList, Value::Array(a)) => {
            (0..a.len()).map(|i| format!("/{i}")).collect()
        }
        (Holds::One | Holds::OneOrList, _) => vec![String::new()],
        _ => Vec::new(),
    }
}

pub(super) struct Normaliser {
    pub(super) notes: Notes,
    pub(super) renames: HashMap<String, &'static str>,
    /// Draft-07 or older `$schema`: the crate handles its forms natively.
    pub(super) legacy: bool,
    pub(super) has_ref: bool,
    pub(super) has_unique: bool,
    pub(super) max_depth: u32,
}

impl Normaliser {
    pub(super) fn new(root: &Value) -> Normaliser {
        let legacy = matches!(
            Draft::Draft202012.detect(root),
            Draft::Draft4 | Draft::Draft6 | Draft::Draft7
        );
        Normaliser {
            notes: Notes::default(),
            renames: HashMap::new(),
            legacy,
            has_ref: false,
            has_unique: false,
            max_depth: 0,
        }
    }

    /// The copy of the schema `v` at `ptr`, `depth` JSON levels down.
    pub(super) fn schema(&mut self, v: &Value, ptr: String, depth: u32) -> Value {
        self.max_depth = self.max_depth.max(depth);
        if depth >= MAX_SCHEMA_DEPTH && !matches!(v, Value::Bool(_)) {
            self.notes.note(
                &ptr,
                format_args!(
                    "nested deeper than {MAX_SCHEMA_DEPTH} levels; treated as always valid"
                ),
            );
            return Value::Bool(true);
        }
        let m = match v {
            Value::Bool(_) => return v.clone(),
            Value::Object(m) => m,
            _ => {
                self.notes.note(
                    &ptr,
                    "not a schema (an object or a boolean); treated as always valid",
                );
                return Value::Bool(true);
            }
        };
        let at = |kw: &str| format!("{ptr}/{}", escape_token(kw));
        let mut out = Map::new();
        for (k, sub) in m {
            let kp = at(k);
            let copy = match holds(k).0 {
                Holds::One => Some(self.schema(sub, kp, depth + 1)),
                Holds::Named | Holds::Dependencies => match sub {
                    Value::Object(o) => {
                        let mut c = Map::new();
                        for (name, s) in o {
                            let np = format!("{kp}/{}", escape_token(name));
                            let x = if k == "dependencies" && s.is_array() {
                                bounded_copy(s, depth + 2)
                            } else {
                                Some(self.schema(s, np.clone(), depth + 2))
                            };
                            match x {
                                Some(x) => {
                                    c.insert(name.clone(), x);
                                }
                                None => self.notes.note(&np, "nested too deep; ignored"),
                            }
                        }
                        Some(Value::Object(c))
                    }
                    _ => {
                        self.notes.note(&kp, "not an object; ignored");
                        None
                    }
                },
                Holds::List => match sub {
                    Value::Array(a) => Some(self.list(a, &kp, depth)),
                    _ => {
                        self.notes.note(&kp, "not an array; ignored");
                        None
                    }
                },
                Holds::OneOrList => match sub {
                    Value::Array(a) => Some(self.list(a, &kp, depth)),
                    _ => Some(self.schema(sub, kp, depth + 1)),
                },
                Holds::Value => {
                    let c = bounded_copy(sub, depth + 1);
                    if c.is_none() {
                        self.notes.note(&kp, "value nested too deep; ignored");
                    }
                    c
                }
            };
            if let Some(c) = copy {
                out.insert(k.clone(), c);
            }
        }
        self.keywords(&mut out, &ptr, depth == 0);
        Value::Object(out)
    }

    pub(super) fn list(&mut self, a: &[Value], ptr: &str, depth: u32) -> Value {
        Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, s)| self.schema(s, format!("{ptr}/{i}"), depth + 2))
                .collect(),
        )
    }

    /// The rewrites of one schema object (its subschemas are done).
    pub(super) fn keywords(&mut self, m: &mut Map<String, Value>, ptr: &str, root: bool) {
        let at = |kw: &str| format!("{ptr}/{}", escape_token(kw));
        if m.contains_key("$ref")
            || m.contains_key("$dynamicRef")
            || m.contains_key("$recursiveRef")
        {
            self.has_ref = true;
        }
        if m.get("uniqueItems") == Some(&Value::Bool(true)) {
            self.has_unique = true;
        }
        if let Some(t) = m.remove("type") {
            if let Some(t) = self.types(&at("type"), t) {
                m.insert("type".into(), t);
            }
        }
        if m.get("nullable") == Some(&Value::Bool(true)) {
            m.remove("nullable");
            self.nullable(m, ptr);
        }
        self.ids(m, ptr, root);
        if !self.legacy {
            self.draft_07_forms(m, ptr);
        }
    }

    /// OpenAPI 3.0 `nullable: true`: `null` joins `type` and `enum`, and a
    /// `const` becomes a two-value `enum` (reported as the `const`).
    pub(super) fn nullable(&mut self, m: &mut Map<String, Value>, ptr: &str) {
        if let Some(Value::Array(names)) = m.get_mut("type") {
            if !names.iter().any(|n| n == "null") {
                names.push(Value::from("null"));
            }
        } else if let Some(Value::String(name)) = m.get("type") {
            if name != "null" {
                let name = name.clone();
                m.insert("type".into(), Value::from(vec![name, "null".to_string()]));
            }
        }
        if let Some(Value::Array(values)) = m.get_mut("enum") {
            if !values.contains(&Value::Null) {
                values.push(Value::Null);
            }
        }
        if let Some(c) = m.remove("const") {
            if m.contains_key("enum") {
                m.insert("const".into(), c);
            } else {
                m.insert("enum".into(), Value::Array(vec![c, Value::Null]));
                self.renames.insert(format!("{ptr}/enum"), "const");
            }
        }
    }

    /// An unknown `$schema` at the root is dropped; a nested `$id` naming
    /// a resource is dropped (references resolve against the root).
    pub(super) fn ids(&mut self, m: &mut Map<String, Value>, ptr: &str, root: bool) {
        let at = |kw: &str| format!("{ptr}/{}", escape_token(kw));
        if root {
            if let Some(Value::String(uri)) = m.get("$schema") {
                if Draft::from_schema_uri(uri) == Draft::Unknown {
                    self.notes.note(
                        &at("$schema"),
                        format_args!(
                            "unknown dialect {}; validated as 2020-12",
                            excerpt(uri, MESSAGE_EXCERPT)
                        ),
                    );
                    m.remove("$schema");
                }
            }
        } else if let Some(Value::String(id)) = m.get("$id") {
            if !id.starts_with('#') {
                self.notes.note(
                    &at("$id"),
                    "nested $id ignored; $refs resolve against the root",
                );
                m.remove("$id");
            }
        }
    }

    /// The draft-07 forms found in 2020-12 schemas, rewritten: `"$id":
    /// "#name"`, `items` as an array (with `additionalItems`), boolean
    /// `exclusiveMinimum`/`exclusiveMaximum`.
    pub(super) fn draft_07_forms(&mut self, m: &mut Map<String, Value>, ptr: &str) {
        let at = |kw: &str| format!("{ptr}/{}", escape_token(kw));
        if let Some(Value::String(id)) = m.get("$id") {
            if let Some(name) = id.strip_prefix('#') {
                let name = name.to_string();
                m.remove("$id");
                if !name.is_empty() && !m.contains_key("$anchor") {
                    m.insert("$anchor".into(), Value::String(name));
                }
            }
        }
        if m.get("items").is_some_and(Value::is_array) {
            if m.contains_key("prefixItems") {
                self.notes
                    .note(&at("items"), "an array next to prefixItems; ignored");
                m.remove("items");
            } else if let Some(items) = m.remove("items") {
                m.insert("prefixItems".into(), items);
                self.renames.insert(at("prefixItems"), "items");
                if let Some(extra) = m.remove("additionalItems") {
                    m.insert("items".into(), extra);
                    self.renames.insert(at("items"), "additionalItems");
                }
            }
        }
        for (exclusive, bound) in [
            ("exclusiveMinimum", "minimum"),
            ("exclusiveMaximum", "maximum"),
        ] {
            if let Some(Value::Bool(b)) = m.get(exclusive) {
                let b = *b;
                m.remove(exclusive);
                if b {
                    if let Some(limit) = m.remove(bound) {
                        m.insert(exclusive.into(), limit);
                    }
                }
            }
        }
    }

    pub(super) fn types(&mut self, ptr: &str, t: Value) -> Option<Value> {
        let names: Vec<Value> = match t {
            Value::Array(a) if !a.is_empty() => a,
            Value::String(_) => vec![t],
            _ => {
                self.notes
                    .note(ptr, "neither a type name nor a non-empty array; ignored");
                return None;
            }
        };
        let mut out = Vec::with_capacity(names.len());
        for name in &names {
            let lower = name.as_str().map(str::to_ascii_lowercase);
            match lower.as_deref() {
                Some("null" | "boolean" | "object" | "array" | "number" | "string" | "integer") => {
                    let l = Value::String(lower.unwrap_or_default());
                    if !out.contains(&l) {
                        out.push(l);
                    }
                }
                _ => {
                    self.notes.note(
                        ptr,
                        format_args!("unknown type {}; any type accepted", excerpt(name, 40)),
                    );
                    return None;
                }
            }
        }
        Some(if out.len() == 1 {
            out.remove(0)
        } else {
            Value::Array(out)
        })
    }
}

/// A copy of `v` (at `depth`), or `None` when it nests past [`MAX_SCHEMA_DEPTH`];
/// the recursion is bounded by that.
pub(super) fn bounded_copy(v: &Value, depth: u32) -> Option<Value> {
    if depth > MAX_SCHEMA_DEPTH {
        return None;
    }
    Some(match v {
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| bounded_copy(x, depth + 1))
                .collect::<Option<_>>()?,
        ),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| Some((k.clone(), bounded_copy(x, depth + 1)?)))
                .collect::<Option<_>>()?,
        ),
        _ => v.clone(),
    })
}
