//! Normalising: the copy of a schema the crate compiles, with the forms
//! found in the wild rewritten and what cannot be judged noted.

use super::*;

/// How a keyword holds subschemas.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Holds {
    /// One schema.
    One,
    /// An object of schemas (for `dependencies`, or arrays of names).
    Named,
    /// An array of schemas.
    List,
    /// A schema or an array of schemas (`items`).
    OneOrList,
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
        "dependentSchemas" | "dependencies" => (Named, InPlace),
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
        (Holds::Named, Value::Object(o)) => o
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

#[derive(Default)]
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
            legacy,
            ..Normaliser::default()
        }
    }

    /// The copy of the schema `v` at `ptr`, `depth` JSON levels down.
    pub(super) fn schema(&mut self, v: &Value, ptr: &str, depth: u32) -> Value {
        self.max_depth = self.max_depth.max(depth);
        let why = match v {
            Value::Bool(_) => return v.clone(),
            _ if depth >= MAX_SCHEMA_DEPTH => {
                format!("nested deeper than {MAX_SCHEMA_DEPTH} levels; treated as always valid")
            }
            Value::Object(m) => return self.object(m, ptr, depth),
            _ => "not a schema (an object or a boolean); treated as always valid".to_string(),
        };
        self.notes.note(ptr, why);
        Value::Bool(true)
    }

    /// The copy of the schema object `m` (see [`Normaliser::schema`]).
    fn object(&mut self, m: &Map<String, Value>, ptr: &str, depth: u32) -> Value {
        let mut out = Map::new();
        for (k, sub) in m {
            let kp = format!("{ptr}/{}", escape_token(k));
            let copy = match (holds(k).0, sub) {
                (Holds::One, _) => Ok(self.schema(sub, &kp, depth + 1)),
                (Holds::List | Holds::OneOrList, Value::Array(a)) => {
                    let items = a.iter().enumerate();
                    let list = items.map(|(i, s)| self.schema(s, &format!("{kp}/{i}"), depth + 2));
                    Ok(Value::Array(list.collect()))
                }
                (Holds::OneOrList, _) => Ok(self.schema(sub, &kp, depth + 1)),
                (Holds::Named, Value::Object(o)) => {
                    Ok(self.named(k == "dependencies", o, &kp, depth))
                }
                (Holds::Named, _) => Err("not an object; ignored"),
                (Holds::List, _) => Err("not an array; ignored"),
                (Holds::Value, _) => {
                    bounded_copy(sub, depth + 1).ok_or("value nested too deep; ignored")
                }
            };
            match copy {
                Ok(c) => {
                    out.insert(k.clone(), c);
                }
                Err(why) => self.notes.note(&kp, why),
            }
        }
        self.keywords(&mut out, ptr, depth == 0);
        Value::Object(out)
    }

    /// The copy of an object of schemas at `ptr` (or, for `dependencies`,
    /// of schemas and arrays of names).
    fn named(&mut self, deps: bool, o: &Map<String, Value>, ptr: &str, depth: u32) -> Value {
        let mut out = Map::new();
        for (name, s) in o {
            let np = format!("{ptr}/{}", escape_token(name));
            let copy = match s {
                Value::Array(_) if deps => bounded_copy(s, depth + 2),
                _ => Some(self.schema(s, &np, depth + 2)),
            };
            match copy {
                Some(c) => {
                    out.insert(name.clone(), c);
                }
                None => self.notes.note(&np, "nested too deep; ignored"),
            }
        }
        Value::Object(out)
    }

    /// The rewrites of one schema object (its subschemas are done).
    fn keywords(&mut self, m: &mut Map<String, Value>, ptr: &str, root: bool) {
        self.has_ref |= REFS.iter().any(|k| m.contains_key(*k));
        self.has_unique |= m.get("uniqueItems") == Some(&Value::Bool(true));
        let t = m.remove("type");
        if let Some(t) = t.and_then(|t| self.types(&format!("{ptr}/type"), t)) {
            m.insert("type".into(), t);
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
    fn nullable(&mut self, m: &mut Map<String, Value>, ptr: &str) {
        match m.get_mut("type") {
            Some(Value::Array(names)) if !names.iter().any(|n| n == "null") => {
                names.push(Value::from("null"));
            }
            Some(t) if t.is_string() && *t != "null" => {
                *t = Value::Array(vec![t.take(), Value::from("null")]);
            }
            _ => {}
        }
        if let Some(Value::Array(values)) = m.get_mut("enum") {
            if !values.contains(&Value::Null) {
                values.push(Value::Null);
            }
        }
        if !m.contains_key("enum") {
            if let Some(c) = m.remove("const") {
                m.insert("enum".into(), Value::Array(vec![c, Value::Null]));
                self.renames.insert(format!("{ptr}/enum"), "const");
            }
        }
    }

    /// An unknown `$schema` at the root is dropped; a nested `$id` naming
    /// a resource is dropped (references resolve against the root).
    fn ids(&mut self, m: &mut Map<String, Value>, ptr: &str, root: bool) {
        let dialect = m.get("$schema").and_then(Value::as_str).filter(|_| root);
        if let Some(uri) = dialect.filter(|uri| Draft::from_schema_uri(uri) == Draft::Unknown) {
            let uri = excerpt(uri, MESSAGE_EXCERPT);
            let why = format!("unknown dialect {uri}; validated as 2020-12");
            self.notes.note(&format!("{ptr}/$schema"), why);
            m.remove("$schema");
        }
        let id = m.get("$id").and_then(Value::as_str);
        if !root && id.is_some_and(|id| !id.starts_with('#')) {
            let why = "nested $id ignored; $refs resolve against the root";
            self.notes.note(&format!("{ptr}/$id"), why);
            m.remove("$id");
        }
    }

    /// The draft-07 forms found in 2020-12 schemas, rewritten: `"$id":
    /// "#name"`, `items` as an array (with `additionalItems`), boolean
    /// `exclusiveMinimum`/`exclusiveMaximum`.
    fn draft_07_forms(&mut self, m: &mut Map<String, Value>, ptr: &str) {
        let id = m.get("$id").and_then(Value::as_str);
        if let Some(name) = id.and_then(|id| id.strip_prefix('#')).map(str::to_string) {
            m.remove("$id");
            if !name.is_empty() && !m.contains_key("$anchor") {
                m.insert("$anchor".into(), Value::String(name));
            }
        }
        if m.get("items").is_some_and(Value::is_array) {
            let items = m.remove("items");
            if m.contains_key("prefixItems") {
                let why = "an array next to prefixItems; ignored";
                self.notes.note(&format!("{ptr}/items"), why);
            } else if let Some(items) = items {
                m.insert("prefixItems".into(), items);
                self.renames.insert(format!("{ptr}/prefixItems"), "items");
                if let Some(extra) = m.remove("additionalItems") {
                    m.insert("items".into(), extra);
                    self.renames
                        .insert(format!("{ptr}/items"), "additionalItems");
                }
            }
        }
        for (exclusive, bound) in [
            ("exclusiveMinimum", "minimum"),
            ("exclusiveMaximum", "maximum"),
        ] {
            if let Some(&Value::Bool(b)) = m.get(exclusive) {
                m.remove(exclusive);
                if let Some(limit) = if b { m.remove(bound) } else { None } {
                    m.insert(exclusive.into(), limit);
                }
            }
        }
    }

    /// A `type` lower-cased, without repeats; `None` (noted) when it names
    /// an unknown type or is neither a name nor a non-empty array.
    fn types(&mut self, ptr: &str, t: Value) -> Option<Value> {
        let names: Vec<Value> = match t {
            Value::Array(a) if !a.is_empty() => a,
            Value::String(_) => vec![t],
            _ => {
                let why = "neither a type name nor a non-empty array; ignored";
                self.notes.note(ptr, why);
                return None;
            }
        };
        let mut out: Vec<Value> = Vec::with_capacity(names.len());
        for name in &names {
            let lower = name.as_str().map(str::to_ascii_lowercase);
            let Some(l) = lower.filter(|l| l.parse::<JsonType>().is_ok()) else {
                let why = format!("unknown type {}; any type accepted", excerpt(name, 40));
                self.notes.note(ptr, why);
                return None;
            };
            if !out.iter().any(|x| *x == *l) {
                out.push(Value::String(l));
            }
        }
        match <[Value; 1]>::try_from(out) {
            Ok([one]) => Some(one),
            Err(out) => Some(Value::Array(out)),
        }
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
