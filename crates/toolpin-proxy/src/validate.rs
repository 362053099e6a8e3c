//! JSON Schema validation of tool arguments and results.
//!
//! The evaluation is the [`jsonschema`] crate's (JSON Schema 2020-12, with
//! drafts 4, 6, 7 and 2019-09 when `$schema` names them; every `format` it
//! knows is asserted, `pattern` is ECMA 262 with look-around). This module is
//! the layer toolpin puts around it, for schemas as MCP servers really emit
//! them and for a proxy that must never fail or stall on one:
//!
//! * **Normalising** (on a copy): Gemini-style type names are lower-cased
//!   (`"OBJECT"`, `"String"`); OpenAPI 3.0 `nullable: true` adds `null` to
//!   `type` and `enum` (a `const` becomes a two-value `enum`, reported as the
//!   `const` still); in a schema without a draft-07-or-older `$schema`, the
//!   draft-07 forms still found in the wild are rewritten to their 2020-12
//!   equivalents (`items` as an array with `additionalItems`, draft-04 boolean
//!   `exclusiveMinimum`/`exclusiveMaximum`, `"$id": "#name"`). Pointers in
//!   violations always refer to the schema as given.
//! * **Permissive compilation**: [`Validator::new`] never fails. What the crate
//!   would reject or that cannot be judged — a remote `$ref` (nothing is ever
//!   fetched), one that does not resolve, an unknown type name, a keyword with
//!   a malformed value, a `pattern` that does not compile, a cycle of `$ref`s
//!   that never descends into the value — is removed from the copy, listed by
//!   [`Validator::unsupported`], and accepts everything.
//! * **Findings, not error strings**: each crate error becomes a [`Violation`]
//!   with toolpin's own one-line message, instance values excerpted (the
//!   crate's `Display` quotes whole instances). An `enum` or `const` mismatch
//!   is a [`ViolationKind::UnknownEnumValue`] when the value has a type the
//!   schema accepts and the enum holds other values of that JSON type: a value
//!   that was never pinned. A value of another type altogether (`5` where the
//!   enum lists strings) is [`ViolationKind::Nonconformant`], and no `enum`
//!   violation is reported where `type` failed. When no alternative of an
//!   `anyOf`/`oneOf` matches and the closest ones fail only on unknown enum
//!   values, those are reported rather than a generic `anyOf`/`oneOf`
//!   violation, so an optional enum written as `anyOf: [{"enum": [..]},
//!   {"type": "null"}]` still reports the unknown value where it is.
//!
//! # Bounds
//!
//! The crate has no evaluation budget and recurses freely, so the layer adds
//! the guards the proxy needs (measured on 0.61.2):
//!
//! * `anyOf`/`allOf`/`$ref` chains can make evaluation exponential: 24
//!   `$defs` each applying the next one twice took 220 ms for the value `5`,
//!   each further level doubling it. [`Validator::new`] computes a static
//!   worst case over the schema graph (evaluations at one value location:
//!   in-place applicators add up, keywords descending into the value take
//!   the largest child, saturating, per level of value nesting); above
//!   [`MAX_STEPS`] the schema is not evaluated at all, it is listed by
//!   [`Validator::unsupported`] and every [`Validator::validate`] reports
//!   one [`ViolationKind::LimitExceeded`] violation (which the proxy does
//!   not hold against a call).
//! * Compiling a schema nested 10,000 levels deep overflows the stack and
//!   aborts the process. Schema parts nested deeper than
//!   [`MAX_SCHEMA_DEPTH`] JSON levels are unsupported (always valid), the
//!   copy is made with recursion bounded by that, and a schema nested more
//!   than a few levels is compiled on a thread of its own with a large
//!   stack (the crate's compiler takes several KiB per level unoptimised).
//! * Values nested deeper than [`MAX_DEPTH`] levels are not handed to the
//!   crate when the schema could follow them (a `$ref`, or `uniqueItems`,
//!   which compares whole items): validation then reports one
//!   [`ViolationKind::LimitExceeded`] violation.
//!
//! Nothing panics, whatever the schema and the value; at most
//! [`MAX_VIOLATIONS`] violations are returned.

use std::cmp::Ordering;
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::io;
use std::sync::Arc;

use jsonschema::error::{ValidationError, ValidationErrorKind};
use serde::Serialize;
use serde_json::{Map, Number, Value};
use toolpin_manifest::schema::{self, escape_token, lookup, unescape_token};

/// At most this many violations are returned by one [`Validator::validate`].
pub const MAX_VIOLATIONS: usize = 100;
/// Nesting levels of a value that are validated under a schema that can
/// follow them.
pub const MAX_DEPTH: u32 = 128;
/// JSON nesting levels of a schema that are compiled.
pub const MAX_SCHEMA_DEPTH: u32 = 64;
/// Budget of the static worst case: subschema evaluations at one value
/// location, over all levels of nesting.
pub const MAX_STEPS: u64 = 1_000_000;

/// Entries kept in [`Validator::unsupported`] (one more says how many were
/// left out).
const MAX_UNSUPPORTED: usize = 100;
/// Bytes of compact JSON quoted for a value in a message.
const MESSAGE_EXCERPT: usize = 80;
/// Bytes of compact JSON quoted for a list of allowed values.
const LIST_EXCERPT: usize = 120;
/// Bytes of compact JSON kept in [`ViolationKind::UnknownEnumValue`].
const VALUE_EXCERPT: usize = 200;
/// Compile attempts, each after removing what the crate rejected.
const MAX_ATTEMPTS: usize = 32;
/// Schemas nested deeper than this are compiled on a thread of their own,
/// with a stack of [`COMPILE_STACK`] bytes.
const INLINE_DEPTH: u32 = 24;
const COMPILE_STACK: usize = 64 << 20;

/// One way an instance fails its schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// RFC 6901 pointer to the failing value in the instance (`""` is the
    /// whole instance).
    pub pointer: String,
    /// RFC 6901 pointer to the failing keyword in the schema (for a `$ref`
    /// target, its location in the schema document).
    pub schema_pointer: String,
    /// The keyword that failed: `type`, `enum`, `required`, ...; `false` for
    /// a false schema, `limit` for [`ViolationKind::LimitExceeded`].
    pub keyword: &'static str,
    /// One line for a human; quoted instance values are excerpted.
    pub message: String,
    /// What the failure means for the proxy.
    pub kind: ViolationKind,
}

/// The classes of [`Violation`] the proxy raises different findings for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ViolationKind {
    /// An `enum` or `const` mismatch: a value of a pinned type that was never
    /// pinned. `value` is its compact JSON, excerpted past 200 bytes (ending
    /// with `…`).
    UnknownEnumValue { value: String },
    /// Any other failure.
    Nonconformant,
    /// Not judged: the value nests deeper than [`MAX_DEPTH`], the schema's
    /// worst case exceeds [`MAX_STEPS`], or a `pattern` hit its backtracking
    /// limit.
    LimitExceeded,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "(root)"
        } else {
            &self.pointer
        };
        write!(f, "{at}: {}", self.message)
    }
}

/// A schema compiled once, to validate any number of instances.
#[derive(Debug, Clone)]
pub struct Validator {
    /// `None`: nothing is judged (see `over_budget`).
    inner: Option<Arc<jsonschema::Validator>>,
    /// The normalised schema the crate compiled, for messages.
    schema: Arc<Value>,
    /// Keyword locations renamed by normalising (normalised pointer -> the
    /// keyword as given).
    renames: Arc<HashMap<String, &'static str>>,
    /// Values are checked for depth first.
    guard_depth: bool,
    /// The worst case exceeds [`MAX_STEPS`]: every call reports it.
    over_budget: Option<u64>,
    unsupported: Vec<String>,
}

impl Validator {
    /// Compile `schema`. Never fails: parts that cannot be judged are listed
    /// by [`Validator::unsupported`] and accept everything.
    pub fn new(schema: &Value) -> Validator {
        let mut n = Normaliser::new(schema);
        let mut copy = n.schema(schema, String::new(), 0);
        let guard_depth = n.has_ref || n.has_unique;
        let mut notes = std::mem::take(&mut n.notes);
        let renames = std::mem::take(&mut n.renames);
        let cost = worst_case(&mut copy, &mut notes, n.base_id.as_deref());
        let over_budget = (cost > MAX_STEPS).then_some(cost);
        let mut inner = None;
        if let Some(cost) = over_budget {
            notes.note(
                "",
                format_args!(
                    "worst case of {} subschema evaluations exceeds {MAX_STEPS}; not validated",
                    cost_text(cost)
                ),
            );
        } else if n.max_depth <= INLINE_DEPTH {
            inner = build(&mut copy, &mut notes);
        } else {
            // The crate's compiler recurses deeply per level (over 3 MiB at
            // 128 levels unoptimised): a thread with room for it.
            let built = std::thread::scope(|s| {
                std::thread::Builder::new()
                    .name("toolpin-schema-compile".into())
                    .stack_size(COMPILE_STACK)
                    .spawn_scoped(s, || {
                        let r = build(&mut copy, &mut notes);
                        (r, ())
                    })
                    .ok()
                    .and_then(|h| h.join().ok())
            });
            match built {
                Some((r, ())) => inner = r,
                None => notes.note(
                    "",
                    "the schema could not be compiled; treated as always valid",
                ),
            }
        }
        Validator {
            inner: inner.map(Arc::new),
            schema: Arc::new(copy),
            renames: Arc::new(renames),
            guard_depth,
            over_budget,
            unsupported: notes.finish(),
        }
    }

    /// Parts of the schema that were ignored (each `"#<pointer>: why"`), so
    /// validation accepts whatever they would have judged.
    pub fn unsupported(&self) -> &[String] {
        &self.unsupported
    }

    /// Every violation of `instance` (at most [`MAX_VIOLATIONS`]); empty when
    /// it is valid.
    pub fn validate(&self, instance: &Value) -> Vec<Violation> {
        if let Some(limit) = self.limit(instance) {
            return vec![limit];
        }
        let Some(inner) = &self.inner else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut errors = inner.iter_errors(instance);
        let mut batch = Vec::new();
        while out.len() < MAX_VIOLATIONS {
            let Some(e) = errors.next() else { break };
            batch.clear();
            self.map(&e, instance, &mut batch);
            out.append(&mut batch);
        }
        drop_enums_under_type_failures(&mut out);
        out.truncate(MAX_VIOLATIONS);
        // By location in the value (stable: schema order within one).
        out.sort_by(|a, b| cmp_pointers(&a.pointer, &b.pointer));
        out
    }

    /// Whether `instance` is valid, i.e. [`Validator::validate`] would return
    /// nothing; stops at the first failure and builds no message.
    pub fn is_valid(&self, instance: &Value) -> bool {
        if self.over_budget.is_some() || (self.guard_depth && too_deep(instance)) {
            return false;
        }
        self.inner.as_ref().is_none_or(|v| v.is_valid(instance))
    }

    /// The one violation when the call is not judged.
    fn limit(&self, instance: &Value) -> Option<Violation> {
        let message = if let Some(cost) = self.over_budget {
            format!(
                "the schema's worst case of {} subschema evaluations exceeds {MAX_STEPS}; not validated",
                cost_text(cost)
            )
        } else if self.guard_depth && too_deep(instance) {
            format!("value nested deeper than {MAX_DEPTH} levels; not validated")
        } else {
            return None;
        };
        Some(Violation {
            pointer: String::new(),
            schema_pointer: String::new(),
            keyword: "limit",
            message,
            kind: ViolationKind::LimitExceeded,
        })
    }
}

fn cost_text(cost: u64) -> String {
    if cost == u64::MAX {
        "more than 2^64".to_string()
    } else {
        cost.to_string()
    }
}

/// Whether `v` nests more than [`MAX_DEPTH`] containers (recursing at most
/// that deep, without allocating).
fn too_deep(v: &Value) -> bool {
    fn deeper(v: &Value, depth: u32) -> bool {
        let inner = |x: &&Value| is_container(x);
        match v {
            Value::Array(a) => a
                .iter()
                .filter(inner)
                .any(|x| depth >= MAX_DEPTH || deeper(x, depth + 1)),
            Value::Object(m) => m
                .values()
                .filter(inner)
                .any(|x| depth >= MAX_DEPTH || deeper(x, depth + 1)),
            _ => false,
        }
    }
    deeper(v, 1)
}

fn is_container(v: &Value) -> bool {
    matches!(v, Value::Array(_) | Value::Object(_))
}

// ---------------------------------------------------------------------------
// Notes

#[derive(Default)]
struct Notes {
    list: Vec<String>,
    dropped: usize,
}

impl Notes {
    fn note(&mut self, ptr: &str, why: impl fmt::Display) {
        if self.list.len() < MAX_UNSUPPORTED {
            self.list.push(format!("#{ptr}: {why}"));
        } else {
            self.dropped += 1;
        }
    }

    fn finish(mut self) -> Vec<String> {
        if self.dropped > 0 {
            self.list.push(format!("... and {} more", self.dropped));
        }
        self.list
    }
}

// ---------------------------------------------------------------------------
// Normalising

/// How a keyword holds subschemas.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Holds {
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

fn holds(keyword: &str) -> Holds {
    match keyword {
        "additionalProperties"
        | "propertyNames"
        | "additionalItems"
        | "contains"
        | "not"
        | "if"
        | "then"
        | "else"
        | "unevaluatedProperties"
        | "unevaluatedItems"
        | "contentSchema" => Holds::One,
        "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
            Holds::Named
        }
        "allOf" | "anyOf" | "oneOf" | "prefixItems" => Holds::List,
        "items" => Holds::OneOrList,
        "dependencies" => Holds::Dependencies,
        _ => Holds::Value,
    }
}

/// The keyword names a rename can give back (`&'static` for [`Violation`]).
fn static_keyword(k: &str) -> Option<&'static str> {
    Some(match k {
        "items" => "items",
        "additionalItems" => "additionalItems",
        "const" => "const",
        _ => return None,
    })
}

struct Normaliser {
    notes: Notes,
    renames: HashMap<String, &'static str>,
    /// Draft-07 or older `$schema`: the crate handles its forms natively.
    legacy: bool,
    base_id: Option<String>,
    has_ref: bool,
    has_unique: bool,
    max_depth: u32,
}

impl Normaliser {
    fn new(root: &Value) -> Normaliser {
        let legacy = match root.get("$schema") {
            Some(Value::String(s)) => {
                known_dialect(s)
                    && ["draft-04", "draft-06", "draft-07"]
                        .iter()
                        .any(|d| s.contains(d))
            }
            _ => false,
        };
        let base_id = match root.get("$id") {
            Some(Value::String(id)) => {
                let base = id.split_once('#').map_or(id.as_str(), |(b, _)| b);
                (!base.is_empty()).then(|| base.to_string())
            }
            _ => None,
        };
        Normaliser {
            notes: Notes::default(),
            renames: HashMap::new(),
            legacy,
            base_id,
            has_ref: false,
            has_unique: false,
            max_depth: 0,
        }
    }

    /// The copy of the schema `v` at `ptr`, `depth` JSON levels down.
    fn schema(&mut self, v: &Value, ptr: String, depth: u32) -> Value {
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
        let at = |kw: &str| format!("{ptr}/{}", escape(kw));
        let mut out = Map::new();
        for (k, sub) in m {
            let kp = at(k);
            let copy = match holds(k) {
                Holds::One => Some(self.schema(sub, kp, depth + 1)),
                Holds::Named | Holds::Dependencies => match sub {
                    Value::Object(o) => {
                        let mut c = Map::new();
                        for (name, s) in o {
                            let np = format!("{kp}/{}", escape(name));
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

    fn list(&mut self, a: &[Value], ptr: &str, depth: u32) -> Value {
        Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, s)| self.schema(s, format!("{ptr}/{i}"), depth + 2))
                .collect(),
        )
    }

    /// The rewrites of one schema object (its subschemas are done).
    fn keywords(&mut self, m: &mut Map<String, Value>, ptr: &str, root: bool) {
        let at = |kw: &str| format!("{ptr}/{}", escape(kw));
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
                    self.renames.insert(at("enum"), "const");
                }
            }
        }
        if root {
            if let Some(Value::String(uri)) = m.get("$schema") {
                if !known_dialect(uri) {
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
        } else {
            if let Some(Value::String(id)) = m.get("$id") {
                if !id.starts_with('#') {
                    self.notes.note(
                        &at("$id"),
                        "nested $id ignored; $refs resolve against the root",
                    );
                    m.remove("$id");
                }
            }
        }
        if self.legacy {
            return;
        }
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

    fn types(&mut self, ptr: &str, t: Value) -> Option<Value> {
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

/// A `$schema` the crate knows.
fn known_dialect(uri: &str) -> bool {
    let uri = uri.trim_end_matches('#');
    let uri = uri
        .strip_prefix("https://")
        .or_else(|| uri.strip_prefix("http://"))
        .unwrap_or("");
    matches!(
        uri,
        "json-schema.org/draft-04/schema"
            | "json-schema.org/draft-06/schema"
            | "json-schema.org/draft-07/schema"
            | "json-schema.org/draft/2019-09/schema"
            | "json-schema.org/draft/2020-12/schema"
    )
}

/// A copy of `v` (at `depth`), or `None` when it nests past [`MAX_SCHEMA_DEPTH`];
/// the recursion is bounded by that.
fn bounded_copy(v: &Value, depth: u32) -> Option<Value> {
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

// ---------------------------------------------------------------------------
// The static worst case

/// Instance types, for the keywords that descend into the value.
const T_ARRAY: usize = 0;
const T_OBJECT: usize = 1;
const T_STRING: usize = 2;
const T_OTHER: usize = 3;
const TYPES: usize = 4;

#[derive(Default)]
struct GNode {
    ptr: String,
    /// Applied at the same value location; `true` for a `$ref`-like edge.
    in_place: Vec<(usize, bool)>,
    /// Per instance type, groups of children: the children of one group
    /// apply to different locations (the largest counts), groups add up.
    descend: [Vec<Vec<usize>>; TYPES],
    /// The `$ref`-like keywords of this node.
    ref_kws: Vec<&'static str>,
    /// They were cut (a cycle).
    refs_cut: bool,
}

/// Plain anchor names -> pointer; dynamic ones -> every pointer.
type Anchors = (HashMap<String, String>, HashMap<String, Vec<String>>);

struct Graph<'s> {
    root: &'s Value,
    base_id: Option<&'s str>,
    nodes: Vec<GNode>,
    ids: HashMap<String, usize>,
    work: Vec<usize>,
    anchors: Option<Anchors>,
    /// `$ref`s that do not resolve locally: (pointer of the keyword, why).
    broken: Vec<(String, String)>,
}

impl<'s> Graph<'s> {
    fn node(&mut self, ptr: String) -> usize {
        if let Some(&id) = self.ids.get(&ptr) {
            return id;
        }
        let id = self.nodes.len();
        self.nodes.push(GNode {
            ptr: ptr.clone(),
            ..GNode::default()
        });
        self.ids.insert(ptr, id);
        self.work.push(id);
        id
    }

    fn anchors(&mut self) -> &Anchors {
        let root = self.root;
        self.anchors.get_or_insert_with(|| collect_anchors(root))
    }

    /// The local targets of a `$ref`-like keyword, or why there are none.
    fn resolve(&mut self, r: &str, dynamic: bool) -> Result<Vec<String>, String> {
        let (base, fragment) = r.split_once('#').unwrap_or((r, ""));
        if !base.is_empty() && self.base_id != Some(base) {
            return Err(format!(
                "remote $ref {} is not resolved; treated as always valid",
                excerpt(r, MESSAGE_EXCERPT)
            ));
        }
        let mut out = Vec::new();
        match percent_decode(fragment) {
            Some(f) if f.is_empty() || f.starts_with('/') => out.push(f),
            Some(f) => {
                let (plain, dyns) = self.anchors();
                if let Some(p) = plain.get(&f) {
                    out.push(p.clone());
                }
                if dynamic || out.is_empty() {
                    if let Some(ps) = dyns.get(&f) {
                        out.extend(ps.iter().cloned());
                    }
                }
            }
            None => {}
        }
        out.retain(|p| lookup(self.root, p).is_some());
        if out.is_empty() {
            return Err(format!(
                "$ref {} does not resolve; treated as always valid",
                excerpt(r, MESSAGE_EXCERPT)
            ));
        }
        Ok(out)
    }

    fn fill(&mut self, id: usize) {
        let ptr = self
            .nodes
            .get(id)
            .map(|n| n.ptr.clone())
            .unwrap_or_default();
        let Some(Value::Object(m)) = lookup(self.root, &ptr) else {
            return;
        };
        let at = |kw: &str| format!("{ptr}/{}", escape(kw));
        let mut in_place = Vec::new();
        let mut ref_kws = Vec::new();
        let mut descend: [Vec<Vec<usize>>; TYPES] = Default::default();
        for (k, v) in m {
            match k.as_str() {
                "$ref" | "$dynamicRef" | "$recursiveRef"
                    if v.is_string() || k == "$recursiveRef" =>
                {
                    ref_kws.push(match k.as_str() {
                        "$ref" => "$ref",
                        "$dynamicRef" => "$dynamicRef",
                        _ => "$recursiveRef",
                    });
                    let r = v.as_str().unwrap_or_default();
                    let r = if k == "$recursiveRef" { "#" } else { r };
                    match self.resolve(r, k != "$ref") {
                        Ok(targets) => {
                            for t in targets {
                                let t = self.node(t);
                                in_place.push((t, true));
                            }
                        }
                        Err(why) => self.broken.push((at(k), why)),
                    }
                }
                "allOf" | "anyOf" | "oneOf" => {
                    for i in 0..v.as_array().map_or(0, Vec::len) {
                        in_place.push((self.node(format!("{}/{i}", at(k))), false));
                    }
                }
                "not" | "if" | "then" | "else" => in_place.push((self.node(at(k)), false)),
                "dependentSchemas" | "dependencies" => {
                    if let Value::Object(o) = v {
                        for (name, s) in o {
                            if !s.is_array() {
                                let c = self.node(format!("{}/{}", at(k), escape(name)));
                                in_place.push((c, false));
                            }
                        }
                    }
                }
                "properties" => {
                    if let Value::Object(o) = v {
                        let group = o
                            .keys()
                            .map(|name| self.node(format!("{}/{}", at(k), escape(name))))
                            .collect();
                        descend[T_OBJECT].push(group);
                    }
                }
                "patternProperties" => {
                    if let Value::Object(o) = v {
                        for name in o.keys() {
                            let c = self.node(format!("{}/{}", at(k), escape(name)));
                            descend[T_OBJECT].push(vec![c]);
                        }
                    }
                }
                "additionalProperties" | "unevaluatedProperties" => {
                    descend[T_OBJECT].push(vec![self.node(at(k))])
                }
                "propertyNames" => descend[T_OBJECT].push(vec![self.node(at(k))]),
                "items" | "prefixItems" | "additionalItems" => {
                    let group = match v {
                        Value::Array(a) => (0..a.len())
                            .map(|i| self.node(format!("{}/{i}", at(k))))
                            .collect(),
                        _ => vec![self.node(at(k))],
                    };
                    // Exclusive per index, like the entries of properties.
                    match descend[T_ARRAY].first_mut() {
                        Some(first) if k != "contains" => first.extend(group),
                        _ => descend[T_ARRAY].insert(0, group),
                    }
                }
                "contains" | "unevaluatedItems" => descend[T_ARRAY].push(vec![self.node(at(k))]),
                "contentSchema" => descend[T_STRING].push(vec![self.node(at(k))]),
                _ => {}
            }
        }
        if let Some(n) = self.nodes.get_mut(id) {
            n.in_place = in_place;
            n.descend = descend;
            n.ref_kws = ref_kws;
        }
    }
}

/// Resolve `$ref`s, cut in-place cycles and compute the worst case of
/// `schema` (edited: broken and cycle-closing `$ref`s are removed).
fn worst_case(schema: &mut Value, notes: &mut Notes, base_id: Option<&str>) -> u64 {
    let mut cuts: Vec<String> = Vec::new();
    let mut cost = 0;
    // A removed `$ref` can only remove edges: a few rounds settle it.
    for _ in 0..4 {
        let mut g = Graph {
            root: schema,
            base_id,
            nodes: Vec::new(),
            ids: HashMap::new(),
            work: Vec::new(),
            anchors: None,
            broken: Vec::new(),
        };
        g.node(String::new());
        while let Some(id) = g.work.pop() {
            g.fill(id);
        }
        let broken = std::mem::take(&mut g.broken);
        let mut nodes = g.nodes;
        let cycles = cut_cycles(&mut nodes);
        cost = dp(&nodes);
        let done = broken.is_empty() && cycles.is_empty();
        for (p, why) in broken {
            notes.note(&p, why);
            cuts.push(p);
        }
        for p in cycles {
            notes.note(
                &p,
                "a cycle of $ref and in-place applicators that never descends into the value; ignored",
            );
            cuts.push(p);
        }
        for p in cuts.drain(..) {
            remove_at(schema, &p);
        }
        if done {
            break;
        }
    }
    cost
}

/// Cut the cycles of in-place edges (each through a `$ref`): the pointers of
/// the `$ref` keywords cut.
fn cut_cycles(nodes: &mut [GNode]) -> Vec<String> {
    let n = nodes.len();
    let mut color = vec![0u8; n];
    let mut out = Vec::new();
    for start in 0..n {
        if color.get(start) != Some(&0) {
            continue;
        }
        color[start] = 1;
        // (node, next edge, entered by a ref edge)
        let mut stack: Vec<(usize, usize, bool)> = vec![(start, 0, false)];
        while let Some(&(u, k, _)) = stack.last() {
            let edge = nodes.get(u).and_then(|x| {
                if x.refs_cut {
                    x.in_place.iter().filter(|e| !e.1).nth(k).copied()
                } else {
                    x.in_place.get(k).copied()
                }
            });
            let Some((v, is_ref)) = edge else {
                color[u] = 2;
                stack.pop();
                continue;
            };
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            match color.get(v) {
                Some(0) => {
                    color[v] = 1;
                    stack.push((v, 0, is_ref));
                }
                Some(1) => {
                    // A cycle: cut the nearest `$ref` on it.
                    let from = if is_ref {
                        Some(u)
                    } else {
                        let pos = stack.iter().rposition(|f| f.0 == v).unwrap_or(0);
                        stack
                            .iter()
                            .enumerate()
                            .skip(pos + 1)
                            .rev()
                            .find(|(_, f)| f.2)
                            .and_then(|(i, _)| stack.get(i.wrapping_sub(1)))
                            .map(|f| f.0)
                    };
                    let mut cut = false;
                    if let Some(x) = from.and_then(|f| nodes.get_mut(f)) {
                        if !x.refs_cut {
                            x.refs_cut = true;
                            for kw in &x.ref_kws {
                                out.push(format!("{}/{kw}", x.ptr));
                            }
                            cut = true;
                        }
                    }
                    // Restart this node's edges with the cut applied.
                    if cut {
                        if let Some(top) = stack.last_mut() {
                            top.1 = 0;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The worst case: evaluations at one value location over all levels of
/// nesting down to [`MAX_DEPTH`], saturating.
fn dp(nodes: &[GNode]) -> u64 {
    let n = nodes.len();
    // In-place edges form a DAG now: children before parents.
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    for start in 0..n {
        if seen[start] {
            continue;
        }
        seen[start] = true;
        let mut stack = vec![(start, 0usize)];
        while let Some(&(u, k)) = stack.last() {
            match live_edges(nodes, u).nth(k) {
                Some(v) => {
                    if let Some(top) = stack.last_mut() {
                        top.1 += 1;
                    }
                    if !seen.get(v).copied().unwrap_or(true) {
                        seen[v] = true;
                        stack.push((v, 0));
                    }
                }
                None => {
                    order.push(u);
                    stack.pop();
                }
            }
        }
    }
    let mut prev = vec![0u64; n];
    let mut cur = vec![[0u64; TYPES]; n];
    for depth in 0..=MAX_DEPTH {
        for &u in &order {
            let Some(node) = nodes.get(u) else { continue };
            let mut c = [1u64; TYPES];
            for (t, slot) in c.iter_mut().enumerate() {
                for v in live_edges(nodes, u) {
                    *slot = slot.saturating_add(cur.get(v).map_or(0, |x| x[t]));
                }
                if depth > 0 {
                    for group in &node.descend[t.min(T_OTHER)] {
                        let worst = group
                            .iter()
                            .map(|&v| prev.get(v).copied().unwrap_or(0))
                            .max()
                            .unwrap_or(0);
                        *slot = slot.saturating_add(worst);
                    }
                }
            }
            cur[u] = c;
        }
        let next: Vec<u64> = cur
            .iter()
            .map(|c| c.iter().copied().max().unwrap_or(0))
            .collect();
        let root = next.first().copied().unwrap_or(0);
        if next == prev || root > MAX_STEPS {
            return root;
        }
        prev = next;
    }
    prev.first().copied().unwrap_or(0)
}

fn live_edges(nodes: &[GNode], u: usize) -> impl Iterator<Item = usize> + '_ {
    let node = nodes.get(u);
    let cut = node.is_some_and(|x| x.refs_cut);
    node.into_iter()
        .flat_map(|x| x.in_place.iter())
        .filter(move |e| !(cut && e.1))
        .map(|e| e.0)
}

/// Remove the keyword at `ptr` (its parent must be an object).
fn remove_at(schema: &mut Value, ptr: &str) -> bool {
    let Some((parent, last)) = ptr.rsplit_once('/') else {
        return false;
    };
    let Some(key) = unescape(last) else {
        return false;
    };
    match lookup_mut(schema, parent) {
        Some(Value::Object(m)) => m.remove(&key).is_some(),
        _ => false,
    }
}

/// Replace the schema at `ptr` with `true`.
fn neutralise_at(schema: &mut Value, ptr: &str) -> bool {
    match lookup_mut(schema, ptr) {
        Some(v) => {
            *v = Value::Bool(true);
            true
        }
        None => false,
    }
}

// ---------------------------------------------------------------------------
// Compiling

/// Compile `schema`, removing what the crate rejects (each noted) until it
/// compiles; `None` (everything accepted) when that does not settle.
fn build(schema: &mut Value, notes: &mut Notes) -> Option<jsonschema::Validator> {
    for _ in 0..MAX_ATTEMPTS {
        // `offline`: a `$ref` the layer missed still never fetches.
        let e = match jsonschema::options()
            .should_validate_formats(true)
            .offline()
            .build(schema)
        {
            Ok(v) => return Some(v),
            Err(e) => e,
        };
        let at = e.instance_path().as_str().to_string();
        let fixed = if let ValidationErrorKind::Referencing(r) = e.kind() {
            remove_refs_named(schema, &r.to_string(), notes)
        } else if at.is_empty() {
            false
        } else {
            neutralise_keyword(schema, &at, e.kind().keyword(), notes)
        };
        if !fixed {
            break;
        }
    }
    notes.note("", "the schema does not compile; treated as always valid");
    None
}

/// Remove the `$ref`s a resolution error names.
fn remove_refs_named(schema: &mut Value, error: &str, notes: &mut Notes) -> bool {
    let mut refs = Vec::new();
    let mut stack = vec![(&*schema, String::new())];
    while let Some((v, ptr)) = stack.pop() {
        match v {
            Value::Object(m) => {
                for (k, c) in m {
                    let p = format!("{ptr}/{}", escape(k));
                    if let (true, Value::String(r)) = (k.starts_with('$') && k.ends_with("Ref"), c)
                    {
                        let (base, frag) = r.split_once('#').unwrap_or((r, ""));
                        let frag = percent_decode(frag).unwrap_or_default();
                        if (!frag.is_empty() && error.contains(frag.as_str()))
                            || (!base.is_empty() && error.contains(base))
                        {
                            refs.push((p.clone(), r.clone()));
                        }
                    }
                    stack.push((c, p));
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    stack.push((c, format!("{ptr}/{i}")));
                }
            }
            _ => {}
        }
    }
    let mut any = false;
    for (p, r) in refs {
        if remove_at(schema, &p) {
            notes.note(
                &p,
                format_args!(
                    "$ref {} does not resolve; treated as always valid",
                    excerpt(&r, MESSAGE_EXCERPT)
                ),
            );
            any = true;
        }
    }
    any
}

/// Remove what an error at `at` (a pointer into the schema, from checking
/// it against its meta-schema) is about: the keyword holding `at`, or the
/// subschema at `at`.
fn neutralise_keyword(schema: &mut Value, at: &str, check: &str, notes: &mut Notes) -> bool {
    let Some(tokens) = at
        .strip_prefix('/')
        .map(|r| r.split('/').map(unescape).collect::<Option<Vec<_>>>())
    else {
        return false;
    };
    let Some(tokens) = tokens else { return false };
    // Walk the schema positions along the tokens.
    let mut ptr = String::new();
    let mut i = 0;
    while let Some(kw) = tokens.get(i) {
        let kw_ptr = format!("{ptr}/{}", escape(kw));
        let next = match holds(kw) {
            Holds::One => 1,
            Holds::Named | Holds::List | Holds::Dependencies => 2,
            Holds::OneOrList => {
                if tokens
                    .get(i + 1)
                    .is_some_and(|t| t.parse::<usize>().is_ok())
                    && lookup(schema, &kw_ptr).is_some_and(Value::is_array)
                {
                    2
                } else {
                    1
                }
            }
            Holds::Value => 0,
        };
        let end = i + next;
        if next == 0 || end > tokens.len() {
            // The keyword's own value is at fault.
            let pattern = (kw == "pattern")
                .then(|| {
                    lookup(schema, &kw_ptr)
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .flatten();
            if !remove_at(schema, &kw_ptr) {
                return false;
            }
            match pattern {
                Some(p) => notes.note(
                    &kw_ptr,
                    format_args!(
                        "pattern {} is not supported (not a valid regular expression); ignored",
                        excerpt(&p, MESSAGE_EXCERPT)
                    ),
                ),
                None => notes.note(
                    &kw_ptr,
                    format_args!("malformed value (fails the meta-schema's {check}); ignored"),
                ),
            }
            if kw_ptr.contains("/patternProperties/") || kw == "patternProperties" {
                additional_off(schema, &ptr, notes);
            }
            return true;
        }
        for t in tokens.get(i..end).unwrap_or_default() {
            ptr.push('/');
            ptr.push_str(&escape(t));
        }
        i = end;
    }
    // The subschema itself is at fault.
    if !neutralise_at(schema, &ptr) {
        return false;
    }
    if let Some((parent, pat)) = ptr.rsplit_once("/patternProperties/") {
        notes.note(
            &ptr,
            format_args!(
                "pattern {} is not supported (not a valid regular expression); ignored",
                excerpt(&unescape(pat).unwrap_or_default(), MESSAGE_EXCERPT)
            ),
        );
        // Which names the entry matched is unknown.
        if let Some(p) = lookup_mut(schema, parent).and_then(Value::as_object_mut) {
            let pat = ptr.rsplit_once('/').map(|x| x.1).and_then(unescape);
            if let (Some(Value::Object(pp)), Some(pat)) = (p.get_mut("patternProperties"), pat) {
                pp.remove(&pat);
            }
        }
        additional_off(schema, parent, notes);
    } else {
        notes.note(
            &ptr,
            format_args!(
                "not a valid schema (fails the meta-schema's {check}); treated as always valid"
            ),
        );
    }
    true
}

/// `additionalProperties` of the schema at `ptr` is not judged (a
/// `patternProperties` entry was dropped).
fn additional_off(schema: &mut Value, ptr: &str, notes: &mut Notes) {
    let kp = format!("{ptr}/additionalProperties");
    if remove_at(schema, &kp) {
        notes.note(&kp, "ignored: a patternProperties pattern is not supported");
    }
}

// ---------------------------------------------------------------------------
// Errors to violations

impl Validator {
    /// The schema pointer as given, for one in the normalised copy.
    fn given_pointer(&self, sp: &str) -> (String, Option<&'static str>) {
        if self.renames.is_empty() {
            return (sp.to_string(), None);
        }
        let mut new = String::new();
        let mut old = String::new();
        let mut renamed = None;
        for tok in sp.split('/').skip(1) {
            new.push('/');
            new.push_str(tok);
            old.push('/');
            match self.renames.get(&new) {
                Some(k) => {
                    old.push_str(k);
                    renamed = Some(*k);
                }
                None => {
                    old.push_str(tok);
                    renamed = None;
                }
            }
        }
        (old, renamed)
    }

    fn at_schema(&self, sp: &str) -> Option<&Value> {
        lookup(&self.schema, sp)
    }

    /// The violations one crate error stands for (appended to `out`).
    fn map(&self, e: &ValidationError<'_>, root: &Value, out: &mut Vec<Violation>) {
        self.map_parts(
            root,
            e.kind(),
            e.instance(),
            e.instance_path().as_str(),
            e.schema_path().as_str(),
            out,
        );
    }

    fn map_parts(
        &self,
        root: &Value,
        kind: &ValidationErrorKind,
        inst: &Value,
        pointer: &str,
        sp: &str,
        out: &mut Vec<Violation>,
    ) {
        use ValidationErrorKind as K;
        let (schema_pointer, renamed) = self.given_pointer(sp);
        let last = schema_pointer.rsplit_once('/').map_or("", |x| x.1);
        let parent_sp = sp.rsplit_once('/').map_or("", |x| x.0);
        let v = |keyword: &'static str, message: String| Violation {
            pointer: pointer.to_string(),
            schema_pointer: schema_pointer.clone(),
            keyword,
            message,
            kind: ViolationKind::Nonconformant,
        };
        let limit = || {
            self.at_schema(sp)
                .map_or_else(String::new, |l| excerpt(l, MESSAGE_EXCERPT))
        };
        let shown = || excerpt(inst, MESSAGE_EXCERPT);
        let len = || match inst {
            Value::Array(a) => a.len(),
            Value::Object(m) => m.len(),
            _ => 0,
        };
        let violation = match kind {
            K::Type { .. } => {
                let types = self.at_schema(sp).map_or_else(String::new, type_list);
                v("type", format!("expected {types}, got {}", type_name(inst)))
            }
            K::Enum { options } if renamed == Some("const") => {
                let c = options
                    .as_array()
                    .and_then(|a| a.first())
                    .unwrap_or(&Value::Null);
                self.enum_violation(
                    v(
                        "const",
                        format!(
                            "value {} is not the pinned constant {}",
                            shown(),
                            excerpt(c, MESSAGE_EXCERPT)
                        ),
                    ),
                    inst,
                    parent_sp,
                    std::slice::from_ref(c),
                )
            }
            K::Enum { options } => {
                let values = options.as_array().map_or(&[][..], Vec::as_slice);
                self.enum_violation(
                    v(
                        "enum",
                        format!(
                            "value {} is not one of the pinned values {}",
                            shown(),
                            excerpt(&**options, LIST_EXCERPT)
                        ),
                    ),
                    inst,
                    parent_sp,
                    values,
                )
            }
            K::Constant { expected_value } => self.enum_violation(
                v(
                    "const",
                    format!(
                        "value {} is not the pinned constant {}",
                        shown(),
                        excerpt(&**expected_value, MESSAGE_EXCERPT)
                    ),
                ),
                inst,
                parent_sp,
                std::slice::from_ref(&**expected_value),
            ),
            K::Required { property } => {
                let name = excerpt(property, MESSAGE_EXCERPT);
                match last {
                    "dependentRequired" | "dependencies" => {
                        let keyword = if last == "dependencies" {
                            "dependencies"
                        } else {
                            "dependentRequired"
                        };
                        let trigger = self
                            .at_schema(sp)
                            .and_then(Value::as_object)
                            .and_then(|deps| {
                                deps.iter().find(|(k, req)| {
                                    inst.get(k.as_str()).is_some()
                                        && req.as_array().is_some_and(|r| r.contains(property))
                                })
                            })
                            .map_or_else(String::new, |(k, _)| excerpt(k, MESSAGE_EXCERPT));
                        v(
                            keyword,
                            format!(
                                "property {trigger} requires property {name}, which is missing"
                            ),
                        )
                    }
                    _ => v("required", format!("missing required property {name}")),
                }
            }
            K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
                let keyword = if matches!(kind, K::AdditionalProperties { .. }) {
                    "additionalProperties"
                } else {
                    "unevaluatedProperties"
                };
                for name in unexpected {
                    if out.len() >= MAX_VIOLATIONS {
                        break;
                    }
                    out.push(Violation {
                        pointer: format!("{pointer}/{}", escape(name)),
                        schema_pointer: schema_pointer.clone(),
                        keyword,
                        message: format!(
                            "property {} is not allowed ({keyword} is false)",
                            excerpt(name, MESSAGE_EXCERPT)
                        ),
                        kind: ViolationKind::Nonconformant,
                    });
                }
                return;
            }
            K::UnevaluatedItems { unexpected } => v(
                "unevaluatedItems",
                format!(
                    "array has {} items not allowed by unevaluatedItems",
                    unexpected.len()
                ),
            ),
            K::FalseSchema => {
                let tuple = matches!(renamed, Some("additionalItems" | "items"))
                    || (last == "items"
                        && self
                            .at_schema(parent_sp)
                            .is_some_and(|p| p.get("prefixItems").is_some()));
                if tuple {
                    // One violation for the array, not one per extra item.
                    let array = pointer.rsplit_once('/').map_or("", |x| x.0);
                    if out
                        .iter()
                        .any(|x| x.pointer == array && x.schema_pointer == schema_pointer)
                    {
                        return;
                    }
                    let allowed = self
                        .at_schema(parent_sp)
                        .and_then(|p| p.get("prefixItems"))
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    let count = pointer
                        .rsplit_once('/')
                        .and_then(|x| x.1.parse::<usize>().ok())
                        .map_or(0, |i| i + 1);
                    let keyword = static_keyword(last).unwrap_or("items");
                    Violation {
                        pointer: array.to_string(),
                        ..v(keyword, format!(
                            "array has {}{count} items, at most {allowed} allowed ({keyword} is false)",
                            if count > allowed + 1 { "at least " } else { "" }
                        ))
                    }
                } else if last == "additionalProperties" {
                    // The crate names no property when the schema has only
                    // additionalProperties (and quotes a property's value).
                    let parent = self.at_schema(parent_sp);
                    let object = root.pointer(pointer).unwrap_or(&Value::Null);
                    let names: Option<Vec<&String>> = match (parent, object) {
                        (Some(p), Value::Object(m)) if p.get("patternProperties").is_none() => {
                            let declared = p.get("properties").and_then(Value::as_object);
                            Some(
                                m.keys()
                                    .filter(|k| !declared.is_some_and(|d| d.contains_key(*k)))
                                    .collect(),
                            )
                        }
                        _ => None,
                    };
                    let Some(names) = names.filter(|n| !n.is_empty()) else {
                        out.push(v(
                            "additionalProperties",
                            "a property is not allowed (additionalProperties is false)".into(),
                        ));
                        return;
                    };
                    for name in names {
                        if out.len() >= MAX_VIOLATIONS {
                            break;
                        }
                        out.push(Violation {
                            pointer: format!("{pointer}/{}", escape(name)),
                            ..v(
                                "additionalProperties",
                                format!(
                                    "property {} is not allowed (additionalProperties is false)",
                                    excerpt(name, MESSAGE_EXCERPT)
                                ),
                            )
                        });
                    }
                    return;
                } else {
                    v(
                        "false",
                        "no value is allowed here (the schema is false)".to_string(),
                    )
                }
            }
            K::AdditionalItems { limit } => v(
                "additionalItems",
                format!(
                    "array has {} items, at most {limit} allowed (additionalItems is false)",
                    len()
                ),
            ),
            K::MinItems { limit } => v(
                "minItems",
                format!("array has {} items, at least {limit} required", len()),
            ),
            K::MaxItems { limit } => v(
                "maxItems",
                format!("array has {} items, at most {limit} allowed", len()),
            ),
            K::MinProperties { limit } => v(
                "minProperties",
                format!("object has {} properties, at least {limit} required", len()),
            ),
            K::MaxProperties { limit } => v(
                "maxProperties",
                format!("object has {} properties, at most {limit} allowed", len()),
            ),
            K::UniqueItems => {
                let pair = inst.as_array().and_then(|a| first_duplicate(a));
                let message = match pair {
                    Some((i, j)) => format!("items {i} and {j} are equal; items must be unique"),
                    None => "items must be unique".to_string(),
                };
                v("uniqueItems", message)
            }
            K::Contains => match last {
                "minContains" => v(
                    "minContains",
                    format!("array has fewer than {} items matching contains", limit()),
                ),
                "maxContains" => v(
                    "maxContains",
                    format!("array has more than {} items matching contains", limit()),
                ),
                _ => v(
                    "contains",
                    "array has 0 items matching contains, at least 1 required".to_string(),
                ),
            },
            K::Minimum { .. } => v(
                "minimum",
                format!("{} is not at least {}", shown(), limit()),
            ),
            K::Maximum { .. } => v("maximum", format!("{} is not at most {}", shown(), limit())),
            K::ExclusiveMinimum { .. } => v(
                "exclusiveMinimum",
                format!("{} is not greater than {}", shown(), limit()),
            ),
            K::ExclusiveMaximum { .. } => v(
                "exclusiveMaximum",
                format!("{} is not less than {}", shown(), limit()),
            ),
            K::MultipleOf { .. } => v(
                "multipleOf",
                format!("{} is not a multiple of {}", shown(), limit()),
            ),
            K::MinLength { .. } => v(
                "minLength",
                format!("string {} is shorter than {} characters", shown(), limit()),
            ),
            K::MaxLength { .. } => {
                let chars = inst.as_str().map_or(0, |s| s.chars().count());
                v(
                    "maxLength",
                    format!(
                        "string of {chars} characters is longer than {}: {}",
                        limit(),
                        shown()
                    ),
                )
            }
            K::Pattern { pattern } => v(
                "pattern",
                format!(
                    "string {} does not match pattern {}",
                    shown(),
                    excerpt(pattern, MESSAGE_EXCERPT)
                ),
            ),
            K::BacktrackLimitExceeded { .. } | K::RegexEngineFailure { .. } => Violation {
                kind: ViolationKind::LimitExceeded,
                ..v(
                    "pattern",
                    format!("pattern {} could not be evaluated on {}", limit(), shown()),
                )
            },
            K::Format { format } => v(
                "format",
                format!(
                    "string {} is not a valid {}",
                    shown(),
                    clip(format.clone(), MESSAGE_EXCERPT)
                ),
            ),
            K::ContentEncoding { .. } | K::FromUtf8 { .. } => v(
                "contentEncoding",
                format!(
                    "string {} does not match contentEncoding {}",
                    shown(),
                    limit()
                ),
            ),
            K::ContentMediaType { .. } => v(
                "contentMediaType",
                format!("string {} is not of contentMediaType {}", shown(), limit()),
            ),
            K::Not { .. } => v("not", "value matches the schema under not".to_string()),
            K::OneOfMultipleValid { context } => {
                let mut valid = context.iter().enumerate().filter(|(_, c)| c.is_empty());
                let a = valid.next().map_or(0, |x| x.0);
                let b = valid.next().map_or(1, |x| x.0);
                v(
                    "oneOf",
                    format!(
                        "value matches alternatives {a} and {b} of oneOf; exactly one must match"
                    ),
                )
            }
            K::AnyOf { context } | K::OneOfNotValid { context } => {
                let keyword = if matches!(kind, K::AnyOf { .. }) {
                    "anyOf"
                } else {
                    "oneOf"
                };
                self.alternatives(keyword, context, v(keyword, String::new()), root, out);
                return;
            }
            K::PropertyNames { error } => {
                let mut inner = Vec::new();
                self.map(error, root, &mut inner);
                for mut x in inner {
                    x.pointer = pointer.to_string();
                    out.push(x);
                }
                return;
            }
            K::Referencing(_) => v("$ref", "a $ref could not be resolved".to_string()),
            K::Custom { message, .. } => v("custom", clip(message.clone(), 200)),
        };
        out.push(violation);
    }

    /// A mismatch with enum `values`: an unknown enum value when the value's
    /// JSON type is accepted (by the schema object at `parent_sp`) and held
    /// by other values.
    fn enum_violation(
        &self,
        mut v: Violation,
        inst: &Value,
        parent_sp: &str,
        values: &[Value],
    ) -> Violation {
        let type_ok = match self.at_schema(parent_sp).and_then(|s| s.get("type")) {
            Some(t) => accepts(t, inst),
            None => true,
        };
        if type_ok && values.iter().any(|x| same_kind(x, inst)) {
            v.kind = ViolationKind::UnknownEnumValue {
                value: excerpt(inst, VALUE_EXCERPT),
            };
        }
        v
    }

    /// No alternative matched: the unknown enum values of the closest one
    /// failing only on those, or else one violation naming the closest
    /// failure.
    fn alternatives(
        &self,
        keyword: &'static str,
        context: &[Vec<ValidationError<'static>>],
        mut base: Violation,
        root: &Value,
        out: &mut Vec<Violation>,
    ) {
        let mut enum_only: Option<Vec<Violation>> = None;
        let mut closest: Option<(usize, Violation, usize)> = None;
        for (i, errors) in context.iter().enumerate() {
            let mut sub = Vec::new();
            for e in errors {
                if sub.len() >= MAX_VIOLATIONS {
                    break;
                }
                self.map(e, root, &mut sub);
            }
            drop_enums_under_type_failures(&mut sub);
            let n = sub.len();
            if n == 0 {
                continue;
            }
            if sub
                .iter()
                .all(|v| matches!(v.kind, ViolationKind::UnknownEnumValue { .. }))
            {
                if enum_only.as_ref().is_none_or(|e| n < e.len()) {
                    enum_only = Some(sub);
                }
            } else if closest.as_ref().is_none_or(|c| n < c.2) {
                closest = sub.into_iter().next().map(|v| (i, v, n));
            }
        }
        if let Some(vs) = enum_only {
            out.extend(vs);
            return;
        }
        let hint = match closest {
            Some((i, v, _)) => {
                let at = if v.pointer.is_empty() {
                    "(root)".to_string()
                } else {
                    clip(v.pointer.clone(), MESSAGE_EXCERPT)
                };
                clip(
                    format!("; alternative {i} fails at {at}: {}", v.message),
                    240,
                )
            }
            None => String::new(),
        };
        base.message = format!(
            "value matches none of the {} alternatives of {keyword}{hint}",
            context.len()
        );
        out.push(base);
    }
}

/// No `enum`/`const` violation where `type` failed on the same value and
/// schema object.
fn drop_enums_under_type_failures(out: &mut Vec<Violation>) {
    if !out.iter().any(|v| v.keyword == "type") || out.len() < 2 {
        return;
    }
    let failed: HashSet<(String, String)> = out
        .iter()
        .filter(|v| v.keyword == "type")
        .map(|v| (v.pointer.clone(), parent(&v.schema_pointer).to_string()))
        .collect();
    out.retain(|v| {
        !(matches!(v.keyword, "enum" | "const")
            && failed.contains(&(v.pointer.clone(), parent(&v.schema_pointer).to_string())))
    });
}

/// RFC 6901 pointers in document order (array indexes numerically).
fn cmp_pointers(a: &str, b: &str) -> Ordering {
    let mut x = a.split('/');
    let mut y = b.split('/');
    loop {
        match (x.next(), y.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(s), Some(t)) => {
                let o = match (s.parse::<u64>(), t.parse::<u64>()) {
                    (Ok(i), Ok(j)) => i.cmp(&j),
                    _ => s.cmp(t),
                };
                if o != Ordering::Equal {
                    return o;
                }
            }
        }
    }
}

fn parent(ptr: &str) -> &str {
    ptr.rsplit_once('/').map_or("", |x| x.0)
}

/// The type names of a `type` value, in a fixed order.
fn type_list(t: &Value) -> String {
    let names: Vec<&str> = match t {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    [
        "object", "array", "string", "number", "integer", "boolean", "null",
    ]
    .into_iter()
    .filter(|n| names.contains(n))
    .collect::<Vec<_>>()
    .join(" or ")
}

/// Whether a (normalised) `type` value accepts `v`.
fn accepts(t: &Value, v: &Value) -> bool {
    let ok = |name: &str| match (name, v) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("object", Value::Object(_))
        | ("array", Value::Array(_))
        | ("string", Value::String(_))
        | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => is_integer(n),
        _ => false,
    };
    match t {
        Value::String(s) => ok(s),
        Value::Array(a) => a.iter().filter_map(Value::as_str).any(ok),
        _ => true,
    }
}

// ---------------------------------------------------------------------------
// Helpers

/// `$anchor` names (and draft-07 `"$id": "#name"`) -> pointer, and
/// `$dynamicAnchor` names -> every pointer holding one.
fn collect_anchors(root: &Value) -> Anchors {
    let mut plain = HashMap::new();
    let mut dynamic: HashMap<String, Vec<String>> = HashMap::new();
    let mut stack = vec![(root, String::new())];
    while let Some((v, ptr)) = stack.pop() {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(a)) = m.get("$anchor") {
                    plain.entry(a.clone()).or_insert_with(|| ptr.clone());
                }
                if let Some(Value::String(id)) = m.get("$id") {
                    if let Some(a) = id.strip_prefix('#') {
                        plain.entry(a.to_string()).or_insert_with(|| ptr.clone());
                    }
                }
                if let Some(Value::String(a)) = m.get("$dynamicAnchor") {
                    dynamic.entry(a.clone()).or_default().push(ptr.clone());
                    plain.entry(a.clone()).or_insert_with(|| ptr.clone());
                }
                for (k, c) in m {
                    if c.is_object() || c.is_array() {
                        stack.push((c, format!("{ptr}/{}", escape(k))));
                    }
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    if c.is_object() || c.is_array() {
                        stack.push((c, format!("{ptr}/{i}")));
                    }
                }
            }
            _ => {}
        }
    }
    (plain, dynamic)
}

// Pointers and `$ref` fragments are read by the shared schema model
// (toolpin_manifest::schema), as the drift engine reads them.

fn escape(token: &str) -> String {
    escape_token(token).into_owned()
}

fn unescape(token: &str) -> Option<String> {
    unescape_token(token).map(std::borrow::Cow::into_owned)
}

fn percent_decode(s: &str) -> Option<String> {
    schema::percent_decode(s).map(std::borrow::Cow::into_owned)
}

fn lookup_mut<'v>(root: &'v mut Value, ptr: &str) -> Option<&'v mut Value> {
    if ptr.is_empty() {
        return Some(root);
    }
    let mut v = root;
    for raw in ptr.strip_prefix('/')?.split('/') {
        let token = unescape(raw)?;
        v = match v {
            Value::Object(m) => m.get_mut(&token)?,
            Value::Array(a) => a.get_mut(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
    }
}

/// Same JSON type (all numbers alike).
fn same_kind(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

fn is_integer(n: &Number) -> bool {
    n.is_i64()
        || n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

fn as_i128(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

fn cmp_num(a: &Number, b: &Number) -> Option<Ordering> {
    match (as_i128(a), as_i128(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => cmp_num(x, y) == Some(Ordering::Equal),
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => {
            let mut stack = vec![(a, b)];
            while let Some((a, b)) = stack.pop() {
                match (a, b) {
                    (Value::Array(x), Value::Array(y)) => {
                        if x.len() != y.len() {
                            return false;
                        }
                        stack.extend(x.iter().zip(y));
                    }
                    (Value::Object(x), Value::Object(y)) => {
                        if x.len() != y.len() {
                            return false;
                        }
                        for (k, xv) in x {
                            match y.get(k) {
                                Some(yv) => stack.push((xv, yv)),
                                None => return false,
                            }
                        }
                    }
                    _ => {
                        if !json_eq(a, b) {
                            return false;
                        }
                    }
                }
            }
            true
        }
        _ => false,
    }
}

/// A hash consistent with [`json_eq`] (below a depth, containers hash their
/// length only).
fn hash_json(v: &Value, h: &mut impl Hasher, depth: u32) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => {
            2u8.hash(h);
            match (as_i128(n), n.as_f64()) {
                (Some(i), _) => i.hash(h),
                (None, Some(f)) if f.fract() == 0.0 && f.abs() < 1e38 => (f as i128).hash(h),
                (None, Some(f)) => f.to_bits().hash(h),
                (None, None) => {}
            }
        }
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(a) => {
            (4u8, a.len()).hash(h);
            if depth < 32 {
                for x in a {
                    hash_json(x, h, depth + 1);
                }
            }
        }
        Value::Object(m) => {
            (5u8, m.len()).hash(h);
            if depth < 32 {
                // Independent of member order.
                let mut sum = 0u64;
                for (k, x) in m {
                    let mut mh = DefaultHasher::new();
                    k.hash(&mut mh);
                    hash_json(x, &mut mh, depth + 1);
                    sum = sum.wrapping_add(mh.finish());
                }
                sum.hash(h);
            }
        }
    }
}

/// The first pair of equal items, by index.
fn first_duplicate(a: &[Value]) -> Option<(usize, usize)> {
    if a.len() <= 16 {
        for (j, y) in a.iter().enumerate() {
            for (i, x) in a.iter().enumerate().take(j) {
                if json_eq(x, y) {
                    return Some((i, j));
                }
            }
        }
        return None;
    }
    let mut hashed: Vec<(u64, usize)> = a
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mut h = DefaultHasher::new();
            hash_json(v, &mut h, 0);
            (h.finish(), i)
        })
        .collect();
    hashed.sort_unstable();
    let mut best: Option<(usize, usize)> = None;
    for run in hashed.chunk_by(|x, y| x.0 == y.0) {
        for (n, &(_, j)) in run.iter().enumerate() {
            for &(_, i) in run.iter().take(n) {
                if best.is_some_and(|(_, bj)| bj <= j) {
                    break;
                }
                if let (Some(x), Some(y)) = (a.get(i), a.get(j)) {
                    if json_eq(x, y) {
                        best = Some((i, j));
                    }
                }
            }
        }
    }
    best
}

/// Compact JSON of `value`, cut after `limit` bytes (at a character
/// boundary, then `…`); serializing stops there, so a huge value costs
/// nothing more.
fn excerpt<T: Serialize + ?Sized>(value: &T, limit: usize) -> String {
    struct Bounded {
        buf: Vec<u8>,
        limit: usize,
        cut: bool,
    }
    impl io::Write for Bounded {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            let room = self.limit.saturating_sub(self.buf.len());
            if data.len() > room {
                self.buf
                    .extend_from_slice(data.get(..room).unwrap_or_default());
                self.cut = true;
                return Err(io::Error::other("excerpt full"));
            }
            self.buf.extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut w = Bounded {
        buf: Vec::new(),
        limit,
        cut: false,
    };
    let _ = serde_json::to_writer(&mut w, value);
    let text = match std::str::from_utf8(&w.buf) {
        Ok(t) => t,
        Err(e) => std::str::from_utf8(w.buf.get(..e.valid_up_to()).unwrap_or_default())
            .unwrap_or_default(),
    };
    let mut out = text.to_string();
    if w.cut {
        out.push('…');
    }
    out
}

/// `s` cut to at most `max` bytes at a character boundary (then `…`).
fn clip(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}
