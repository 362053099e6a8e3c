//! JSON Schema validation of tool arguments and results.
//!
//! [`Validator::new`] compiles a tool's `inputSchema` or `outputSchema` once;
//! [`Validator::validate`] then checks values against it, without cloning
//! them, and returns every [`Violation`] (at most [`MAX_VIOLATIONS`]);
//! [`Validator::is_valid`] answers the same question without building
//! messages.
//!
//! # Dialect
//!
//! JSON Schema 2020-12, plus what real MCP servers also emit: draft-07 forms
//! (`definitions`, `items` as an array with `additionalItems`, `dependencies`,
//! draft-04 boolean `exclusiveMinimum`/`exclusiveMaximum`, and `$ref`
//! siblings ignored when `$schema` names draft-07 or older), OpenAPI 3.0
//! `nullable: true` (null is then accepted whatever `type`, `enum` and
//! `const` say), and Gemini-style type names, which are matched
//! case-insensitively (`"OBJECT"`, `"String"`).
//!
//! Keywords: `type`, `enum`, `const`, `required`, `properties`,
//! `patternProperties`, `additionalProperties`, `propertyNames`,
//! `minProperties`, `maxProperties`, `dependentRequired`, `dependentSchemas`,
//! `dependencies`, `prefixItems`, `items`, `additionalItems`, `contains`,
//! `minContains`, `maxContains`, `minItems`, `maxItems`, `uniqueItems`,
//! `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`
//! (exact on the shortest decimal form, so `0.3` is a multiple of `0.1`),
//! `minLength`, `maxLength` (Unicode code points), `pattern` (the `regex`
//! crate's syntax, close to ECMA 262 without look-around and
//! backreferences), `format` (only `date-time`, `date`, `email`, `uuid`,
//! `ipv4`, `ipv6` and `uri`, each checked in a basic way; other formats are
//! annotations), `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`,
//! boolean schemas, and local `$ref`: `#`, `#/$defs/...`,
//! `#/definitions/...`, any JSON pointer (with `~0`/`~1` escapes and
//! percent-encoding), `#name` for a `$anchor` (or a draft-07 `"$id":
//! "#name"`), and the root's own `$id` followed by a fragment. Fragments
//! resolve against the root document.
//!
//! # Permissive where it cannot judge
//!
//! Compiling never fails. What cannot be judged — a remote `$ref`, one that
//! does not resolve, a `pattern` the regex crate cannot compile,
//! `unevaluatedProperties`/`unevaluatedItems`, `$dynamicRef`,
//! `$recursiveRef`, a keyword with a malformed value, a cycle of `$ref`s (or
//! `allOf`/`anyOf`/...) that never descends into the value — is listed by
//! [`Validator::unsupported`] and treated as always valid. An uncompilable
//! `patternProperties` entry also switches `additionalProperties` off for
//! that object, since which names it would have matched is unknown.
//!
//! # Unknown enum values
//!
//! An `enum` or `const` mismatch is a [`ViolationKind::UnknownEnumValue`]
//! when the value has a type the schema accepts and the enum holds other
//! values of that JSON type: a value that was never pinned. A value of
//! another type altogether (`5` where the enum lists strings) is a
//! [`ViolationKind::Nonconformant`] `type` or `enum` violation, and an `enum`
//! is not checked at all once `type` has failed. When no alternative of an
//! `anyOf` or `oneOf` matches and the closest ones fail only on unknown enum
//! values, those are reported rather than a generic `anyOf`/`oneOf`
//! violation, so an optional enum written as `anyOf: [{"enum": [..]},
//! {"type": "null"}]` still reports the unknown value where it is.
//!
//! # Bounds
//!
//! Nothing panics, whatever the schema and the value. Compiling does not
//! recurse, however deep the schema. Evaluation nests at most [`MAX_DEPTH`]
//! subschema applications (each level of nesting in the value costs one to
//! three, so values nested up to serde_json's parse limit of 128 validate
//! fully; a level takes about 1 KiB of stack optimized, 1.5 KiB not) and
//! spends at most [`MAX_STEPS`] of them per call; past either bound
//! validation stops and reports one [`ViolationKind::LimitExceeded`]
//! violation, at the end of the list. Instance values quoted in messages are
//! excerpted, so a huge value never makes a huge message.

use std::cmp::Ordering;
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};

use regex::{Regex, RegexBuilder};
use serde::Serialize;
use serde_json::{Map, Number, Value};

/// At most this many violations are returned by one [`Validator::validate`].
pub const MAX_VIOLATIONS: usize = 100;
/// Nested subschema applications one evaluation may go through.
pub const MAX_DEPTH: u32 = 512;
/// Subschema applications one [`Validator::validate`] call may spend.
pub const MAX_STEPS: u64 = 10_000_000;

/// Entries kept in [`Validator::unsupported`] (one more says how many were
/// left out).
const MAX_UNSUPPORTED: usize = 100;
/// Nesting of `enum` and `const` values kept (serde_json's parse limit).
const MAX_VALUE_DEPTH: usize = 128;
/// Bytes of compact JSON quoted for a value in a message.
const MESSAGE_EXCERPT: usize = 80;
/// Bytes of compact JSON quoted for a list of allowed values.
const LIST_EXCERPT: usize = 120;
/// Bytes of compact JSON kept in [`ViolationKind::UnknownEnumValue`].
const VALUE_EXCERPT: usize = 200;
/// Compiled size limit of one `pattern`.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

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
    /// Validation stopped at [`MAX_DEPTH`] or [`MAX_STEPS`]; what lies beyond
    /// was not judged.
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
    nodes: Vec<Node>,
    ptrs: Vec<String>,
    root: usize,
    unsupported: Vec<String>,
}

impl Validator {
    /// Compile `schema`. Never fails: parts that cannot be judged are listed
    /// by [`Validator::unsupported`] and accept everything.
    pub fn new(schema: &Value) -> Validator {
        let legacy_ref = match schema.get("$schema") {
            Some(Value::String(s)) => ["draft-03", "draft-04", "draft-06", "draft-07"]
                .iter()
                .any(|d| s.contains(d)),
            _ => false,
        };
        let base_id = match schema.get("$id") {
            Some(Value::String(id)) => {
                let base = id.split_once('#').map_or(id.as_str(), |(b, _)| b);
                (!base.is_empty()).then(|| base.to_string())
            }
            _ => None,
        };
        let mut c = Compiler {
            root: schema,
            nodes: Vec::new(),
            ptrs: Vec::new(),
            memo: HashMap::new(),
            work: VecDeque::new(),
            notes: Vec::new(),
            dropped_notes: 0,
            legacy_ref,
            base_id,
            anchors: None,
        };
        let root = c.compile(schema, String::new());
        while let Some((id, value)) = c.work.pop_front() {
            c.fill(id, value);
        }
        c.break_cycles();
        let mut unsupported = c.notes;
        if c.dropped_notes > 0 {
            unsupported.push(format!("... and {} more", c.dropped_notes));
        }
        Validator {
            nodes: c.nodes,
            ptrs: c.ptrs,
            root,
            unsupported,
        }
    }

    /// Parts of the schema that were ignored (each `"#<pointer>: why"`), so
    /// validation accepts whatever they would have judged.
    pub fn unsupported(&self) -> &[String] {
        &self.unsupported
    }

    /// Every violation of `instance` (at most [`MAX_VIOLATIONS`], in schema
    /// order); empty when it is valid.
    pub fn validate(&self, instance: &Value) -> Vec<Violation> {
        let mut cx = Ctx::default();
        let root = Path::ROOT;
        self.eval(self.root, instance, &root, &mut cx, Mode::COLLECT);
        if let Some(limit) = cx.limit.take() {
            cx.out.truncate(MAX_VIOLATIONS - 1);
            cx.out.push(limit);
        }
        cx.out
    }

    /// Whether `instance` is valid, i.e. [`Validator::validate`] would return
    /// nothing; stops at the first failure and builds no message.
    pub fn is_valid(&self, instance: &Value) -> bool {
        let mut cx = Ctx::default();
        let root = Path::ROOT;
        self.eval(self.root, instance, &root, &mut cx, Mode::CHECK) && cx.limit.is_none()
    }
}

// ---------------------------------------------------------------------------
// Compiled form

#[derive(Debug, Clone)]
enum Node {
    Bool(bool),
    Schema(Box<Schema>),
}

#[derive(Debug, Clone, Default)]
struct Schema {
    reference: Option<usize>,
    types: Option<Types>,
    nullable: bool,
    enumeration: Option<Vec<Value>>,
    constant: Option<Value>,

    required: Vec<String>,
    /// Sorted by name.
    properties: Vec<(String, usize)>,
    pattern_properties: Vec<(Regex, usize)>,
    additional_properties: Option<usize>,
    property_names: Option<usize>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    /// A property, the ones it requires, and the keyword saying so.
    dependent_required: Vec<(String, Vec<String>, &'static str)>,
    dependent_schemas: Vec<(String, usize)>,

    prefix_items: Vec<usize>,
    /// The schema for items past `prefix_items`, and its keyword.
    items: Option<(usize, &'static str)>,
    contains: Option<usize>,
    min_contains: Option<u64>,
    max_contains: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    unique_items: bool,

    minimum: Option<Number>,
    maximum: Option<Number>,
    /// Draft-04 `exclusiveMinimum: true`.
    minimum_exclusive: bool,
    maximum_exclusive: bool,
    exclusive_minimum: Option<Number>,
    exclusive_maximum: Option<Number>,
    multiple_of: Option<Number>,

    min_length: Option<u64>,
    max_length: Option<u64>,
    pattern: Option<Regex>,
    format: Option<Format>,

    all_of: Vec<usize>,
    any_of: Vec<usize>,
    one_of: Vec<usize>,
    not: Option<usize>,
    condition: Option<(usize, Option<usize>, Option<usize>)>,

    has_object: bool,
    has_array: bool,
    has_string: bool,
    has_number: bool,
    has_applicators: bool,
}

impl Schema {
    /// The subschemas applied to the same instance location.
    fn in_place(&mut self) -> Vec<&mut usize> {
        let mut v: Vec<&mut usize> = Vec::new();
        v.extend(self.reference.as_mut());
        v.extend(self.all_of.iter_mut());
        v.extend(self.any_of.iter_mut());
        v.extend(self.one_of.iter_mut());
        v.extend(self.not.as_mut());
        if let Some((i, t, e)) = self.condition.as_mut() {
            v.push(i);
            v.extend(t.as_mut());
            v.extend(e.as_mut());
        }
        v.extend(self.dependent_schemas.iter_mut().map(|(_, id)| id));
        v
    }
}

const T_NULL: u8 = 1;
const T_BOOLEAN: u8 = 2;
const T_OBJECT: u8 = 4;
const T_ARRAY: u8 = 8;
const T_NUMBER: u8 = 16;
const T_STRING: u8 = 32;
const T_INTEGER: u8 = 64;
const TYPE_NAMES: [(u8, &str); 7] = [
    (T_OBJECT, "object"),
    (T_ARRAY, "array"),
    (T_STRING, "string"),
    (T_NUMBER, "number"),
    (T_INTEGER, "integer"),
    (T_BOOLEAN, "boolean"),
    (T_NULL, "null"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Types(u8);

impl Types {
    fn matches(self, v: &Value) -> bool {
        let bit = match v {
            Value::Null => T_NULL,
            Value::Bool(_) => T_BOOLEAN,
            Value::Object(_) => T_OBJECT,
            Value::Array(_) => T_ARRAY,
            Value::String(_) => T_STRING,
            Value::Number(n) => {
                return self.0 & T_NUMBER != 0 || (self.0 & T_INTEGER != 0 && is_integer(n))
            }
        };
        self.0 & bit != 0
    }
}

impl fmt::Display for Types {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (bit, name) in TYPE_NAMES {
            if self.0 & bit != 0 {
                if !first {
                    f.write_str(" or ")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        Ok(())
    }
}

fn type_bit(name: &str) -> Option<u8> {
    Some(match name.to_ascii_lowercase().as_str() {
        "null" => T_NULL,
        "boolean" => T_BOOLEAN,
        "object" => T_OBJECT,
        "array" => T_ARRAY,
        "number" => T_NUMBER,
        "string" => T_STRING,
        "integer" => T_INTEGER,
        _ => return None,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    DateTime,
    Date,
    Email,
    Uuid,
    Ipv4,
    Ipv6,
    Uri,
}

impl Format {
    fn parse(name: &str) -> Option<Format> {
        Some(match name {
            "date-time" => Format::DateTime,
            "date" => Format::Date,
            "email" => Format::Email,
            "uuid" => Format::Uuid,
            "ipv4" => Format::Ipv4,
            "ipv6" => Format::Ipv6,
            "uri" => Format::Uri,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Format::DateTime => "date-time",
            Format::Date => "date",
            Format::Email => "email",
            Format::Uuid => "uuid",
            Format::Ipv4 => "ipv4",
            Format::Ipv6 => "ipv6",
            Format::Uri => "uri",
        }
    }

    fn check(self, s: &str) -> bool {
        match self {
            Format::DateTime => is_date_time(s),
            Format::Date => parse_date(s).is_some(),
            Format::Email => is_email(s),
            Format::Uuid => is_uuid(s),
            Format::Ipv4 => s.parse::<Ipv4Addr>().is_ok(),
            Format::Ipv6 => s.parse::<Ipv6Addr>().is_ok(),
            Format::Uri => is_uri(s),
        }
    }
}

// ---------------------------------------------------------------------------
// Compiling

struct Compiler<'s> {
    root: &'s Value,
    nodes: Vec<Node>,
    ptrs: Vec<String>,
    /// Schema pointer -> node, for `$ref`s and their targets.
    memo: HashMap<String, usize>,
    /// Nodes allocated but not compiled yet, and their schemas: compiling
    /// takes no recursion, however deep the schema.
    work: VecDeque<(usize, &'s Value)>,
    notes: Vec<String>,
    dropped_notes: usize,
    /// Draft-07 and older: keywords next to `$ref` are ignored.
    legacy_ref: bool,
    /// The root's `$id` without fragment: `$ref`s to it are local.
    base_id: Option<String>,
    /// `$anchor` name -> pointer, collected on the first `#name` `$ref`.
    anchors: Option<HashMap<String, String>>,
}

impl<'s> Compiler<'s> {
    fn note(&mut self, ptr: &str, why: impl fmt::Display) {
        if self.notes.len() < MAX_UNSUPPORTED {
            self.notes.push(format!("#{ptr}: {why}"));
        } else {
            self.dropped_notes += 1;
        }
    }

    fn alloc(&mut self, ptr: String) -> usize {
        self.nodes.push(Node::Bool(true));
        self.ptrs.push(ptr);
        self.nodes.len() - 1
    }

    /// The node for the schema `value` at `ptr`, compiled later.
    fn compile(&mut self, value: &'s Value, ptr: String) -> usize {
        if let Some(&id) = self.memo.get(&ptr) {
            return id;
        }
        let id = self.alloc(ptr.clone());
        self.memo.insert(ptr, id);
        self.work.push_back((id, value));
        id
    }

    fn fill(&mut self, id: usize, value: &'s Value) {
        let node = match value {
            Value::Bool(b) => Node::Bool(*b),
            Value::Object(m) => Node::Schema(Box::new(self.schema(id, m))),
            _ => {
                let ptr = self.ptr(id);
                self.note(
                    &ptr,
                    "not a schema (an object or a boolean); treated as always valid",
                );
                Node::Bool(true)
            }
        };
        if let Some(slot) = self.nodes.get_mut(id) {
            *slot = node;
        }
    }

    fn ptr(&self, id: usize) -> String {
        self.ptrs.get(id).cloned().unwrap_or_default()
    }

    fn schema(&mut self, id: usize, m: &'s Map<String, Value>) -> Schema {
        let ptr = self.ptr(id);
        let at = |kw: &str| format!("{ptr}/{}", escape(kw));
        let mut s = Schema::default();

        if let Some(r) = m.get("$ref") {
            match r {
                Value::String(r) => s.reference = self.resolve_ref(&at("$ref"), r),
                _ => self.note(&at("$ref"), "not a string; ignored"),
            }
            if self.legacy_ref {
                return s;
            }
        }
        for kw in [
            "$dynamicRef",
            "$recursiveRef",
            "unevaluatedProperties",
            "unevaluatedItems",
        ] {
            if m.contains_key(kw) {
                self.note(&at(kw), "keyword not supported; ignored");
            }
        }

        // Any type
        if let Some(v) = m.get("type") {
            s.types = self.types(&at("type"), v);
        }
        s.nullable = m.get("nullable") == Some(&Value::Bool(true));
        if let Some(v) = m.get("enum") {
            match v {
                Value::Array(a) if depth_within(v, MAX_VALUE_DEPTH) => {
                    s.enumeration = Some(a.clone())
                }
                Value::Array(_) => self.note(&at("enum"), "values nested too deep; ignored"),
                _ => self.note(&at("enum"), "not an array; ignored"),
            }
        }
        if let Some(v) = m.get("const") {
            if depth_within(v, MAX_VALUE_DEPTH) {
                s.constant = Some(v.clone());
            } else {
                self.note(&at("const"), "value nested too deep; ignored");
            }
        }

        // Objects
        if let Some(v) = m.get("required") {
            match v {
                Value::Array(a) => {
                    for x in a {
                        match x {
                            Value::String(n) => s.required.push(n.clone()),
                            _ => self.note(&at("required"), "a non-string entry; ignored"),
                        }
                    }
                }
                _ => self.note(&at("required"), "not an array; ignored"),
            }
        }
        if let Some(v) = m.get("properties") {
            match v {
                Value::Object(p) => {
                    let base = at("properties");
                    for (name, sub) in p {
                        let sid = self.compile(sub, format!("{base}/{}", escape(name)));
                        s.properties.push((name.clone(), sid));
                    }
                    s.properties.sort_by(|a, b| a.0.cmp(&b.0));
                }
                _ => self.note(&at("properties"), "not an object; ignored"),
            }
        }
        let mut additional_judgeable = true;
        if let Some(v) = m.get("patternProperties") {
            match v {
                Value::Object(p) => {
                    let base = at("patternProperties");
                    for (pat, sub) in p {
                        let sub_ptr = format!("{base}/{}", escape(pat));
                        match self.regex(&sub_ptr, pat) {
                            Some(re) => {
                                let sid = self.compile(sub, sub_ptr);
                                s.pattern_properties.push((re, sid));
                            }
                            None => additional_judgeable = false,
                        }
                    }
                }
                _ => self.note(&at("patternProperties"), "not an object; ignored"),
            }
        }
        if let Some(v) = m.get("additionalProperties") {
            if additional_judgeable {
                s.additional_properties = Some(self.compile(v, at("additionalProperties")));
            } else {
                self.note(
                    &at("additionalProperties"),
                    "ignored: a patternProperties pattern is not supported",
                );
            }
        }
        if let Some(v) = m.get("propertyNames") {
            s.property_names = Some(self.compile(v, at("propertyNames")));
        }
        s.min_properties = self.count(m, "minProperties", &at);
        s.max_properties = self.count(m, "maxProperties", &at);
        if let Some(v) = m.get("dependentRequired") {
            self.dependent_required(&mut s, &at("dependentRequired"), "dependentRequired", v);
        }
        if let Some(v) = m.get("dependentSchemas") {
            match v {
                Value::Object(o) => {
                    let base = at("dependentSchemas");
                    for (name, sub) in o {
                        let sid = self.compile(sub, format!("{base}/{}", escape(name)));
                        s.dependent_schemas.push((name.clone(), sid));
                    }
                }
                _ => self.note(&at("dependentSchemas"), "not an object; ignored"),
            }
        }
        if let Some(v) = m.get("dependencies") {
            match v {
                Value::Object(o) => {
                    let base = at("dependencies");
                    for (name, sub) in o {
                        let sub_ptr = format!("{base}/{}", escape(name));
                        match sub {
                            Value::Array(_) => {
                                let single =
                                    Value::Object(Map::from_iter([(name.clone(), sub.clone())]));
                                self.dependent_required(&mut s, &base, "dependencies", &single);
                            }
                            _ => {
                                let sid = self.compile(sub, sub_ptr);
                                s.dependent_schemas.push((name.clone(), sid));
                            }
                        }
                    }
                }
                _ => self.note(&at("dependencies"), "not an object; ignored"),
            }
        }

        // Arrays
        let prefix = m.get("prefixItems");
        if let Some(v) = prefix {
            match v {
                Value::Array(a) => {
                    let base = at("prefixItems");
                    for (i, sub) in a.iter().enumerate() {
                        s.prefix_items
                            .push(self.compile(sub, format!("{base}/{i}")));
                    }
                }
                _ => self.note(&at("prefixItems"), "not an array; ignored"),
            }
        }
        match m.get("items") {
            Some(Value::Array(a)) => {
                if prefix.is_some() {
                    self.note(&at("items"), "an array next to prefixItems; ignored");
                } else {
                    let base = at("items");
                    for (i, sub) in a.iter().enumerate() {
                        s.prefix_items
                            .push(self.compile(sub, format!("{base}/{i}")));
                    }
                    if let Some(v) = m.get("additionalItems") {
                        let sid = self.compile(v, at("additionalItems"));
                        s.items = Some((sid, "additionalItems"));
                    }
                }
            }
            Some(v) => s.items = Some((self.compile(v, at("items")), "items")),
            None => {}
        }
        if let Some(v) = m.get("contains") {
            s.contains = Some(self.compile(v, at("contains")));
        }
        s.min_contains = self.count(m, "minContains", &at);
        s.max_contains = self.count(m, "maxContains", &at);
        s.min_items = self.count(m, "minItems", &at);
        s.max_items = self.count(m, "maxItems", &at);
        s.unique_items = m.get("uniqueItems") == Some(&Value::Bool(true));

        // Numbers
        s.minimum = self.number(m, "minimum", &at);
        s.maximum = self.number(m, "maximum", &at);
        match m.get("exclusiveMinimum") {
            Some(Value::Bool(b)) => s.minimum_exclusive = *b,
            Some(_) => s.exclusive_minimum = self.number(m, "exclusiveMinimum", &at),
            None => {}
        }
        match m.get("exclusiveMaximum") {
            Some(Value::Bool(b)) => s.maximum_exclusive = *b,
            Some(_) => s.exclusive_maximum = self.number(m, "exclusiveMaximum", &at),
            None => {}
        }
        if let Some(n) = self.number(m, "multipleOf", &at) {
            if n.as_f64().is_some_and(|f| f > 0.0 && f.is_finite()) {
                s.multiple_of = Some(n);
            } else {
                self.note(&at("multipleOf"), "not a positive number; ignored");
            }
        }

        // Strings
        s.min_length = self.count(m, "minLength", &at);
        s.max_length = self.count(m, "maxLength", &at);
        if let Some(v) = m.get("pattern") {
            match v {
                Value::String(p) => s.pattern = self.regex(&at("pattern"), p),
                _ => self.note(&at("pattern"), "not a string; ignored"),
            }
        }
        if let Some(Value::String(f)) = m.get("format") {
            s.format = Format::parse(f);
        }

        // Applicators in place
        s.all_of = self.list(m, "allOf", &at);
        s.any_of = self.list(m, "anyOf", &at);
        s.one_of = self.list(m, "oneOf", &at);
        if let Some(v) = m.get("not") {
            s.not = Some(self.compile(v, at("not")));
        }
        if let Some(v) = m.get("if") {
            let i = self.compile(v, at("if"));
            let t = m.get("then").map(|v| self.compile(v, at("then")));
            let e = m.get("else").map(|v| self.compile(v, at("else")));
            s.condition = Some((i, t, e));
        }

        s.has_object = !s.required.is_empty()
            || !s.properties.is_empty()
            || !s.pattern_properties.is_empty()
            || s.additional_properties.is_some()
            || s.property_names.is_some()
            || s.min_properties.is_some()
            || s.max_properties.is_some()
            || !s.dependent_required.is_empty();
        s.has_array = !s.prefix_items.is_empty()
            || s.items.is_some()
            || s.contains.is_some()
            || s.min_items.is_some()
            || s.max_items.is_some()
            || s.unique_items;
        s.has_string = s.min_length.is_some()
            || s.max_length.is_some()
            || s.pattern.is_some()
            || s.format.is_some();
        s.has_applicators = !s.dependent_schemas.is_empty()
            || !s.all_of.is_empty()
            || !s.any_of.is_empty()
            || !s.one_of.is_empty()
            || s.not.is_some()
            || s.condition.is_some();
        s.has_number = s.minimum.is_some()
            || s.maximum.is_some()
            || s.exclusive_minimum.is_some()
            || s.exclusive_maximum.is_some()
            || s.multiple_of.is_some();
        s
    }

    fn types(&mut self, ptr: &str, v: &Value) -> Option<Types> {
        let names: Vec<&Value> = match v {
            Value::Array(a) if !a.is_empty() => a.iter().collect(),
            Value::String(_) => vec![v],
            _ => {
                self.note(ptr, "neither a type name nor a non-empty array; ignored");
                return None;
            }
        };
        let mut mask = 0;
        for name in names {
            match name.as_str().and_then(type_bit) {
                Some(bit) => mask |= bit,
                None => {
                    self.note(
                        ptr,
                        format_args!("unknown type {}; any type accepted", excerpt(name, 40)),
                    );
                    return None;
                }
            }
        }
        Some(Types(mask))
    }

    fn count(
        &mut self,
        m: &Map<String, Value>,
        kw: &str,
        at: &dyn Fn(&str) -> String,
    ) -> Option<u64> {
        let v = m.get(kw)?;
        let n = match v {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1.8e19)
                    .map(|f| f as u64)
            }),
            _ => None,
        };
        if n.is_none() {
            self.note(&at(kw), "not a non-negative integer; ignored");
        }
        n
    }

    fn number(
        &mut self,
        m: &Map<String, Value>,
        kw: &str,
        at: &dyn Fn(&str) -> String,
    ) -> Option<Number> {
        match m.get(kw)? {
            Value::Number(n) => Some(n.clone()),
            _ => {
                self.note(&at(kw), "not a number; ignored");
                None
            }
        }
    }

    fn list(
        &mut self,
        m: &'s Map<String, Value>,
        kw: &str,
        at: &dyn Fn(&str) -> String,
    ) -> Vec<usize> {
        match m.get(kw) {
            None => Vec::new(),
            Some(Value::Array(a)) if !a.is_empty() => {
                let base = at(kw);
                a.iter()
                    .enumerate()
                    .map(|(i, sub)| self.compile(sub, format!("{base}/{i}")))
                    .collect()
            }
            Some(_) => {
                self.note(&at(kw), "not a non-empty array; ignored");
                Vec::new()
            }
        }
    }

    fn dependent_required(&mut self, s: &mut Schema, ptr: &str, keyword: &'static str, v: &Value) {
        let Value::Object(o) = v else {
            self.note(ptr, "not an object; ignored");
            return;
        };
        for (name, reqs) in o {
            let Value::Array(reqs) = reqs else {
                self.note(ptr, "an entry is not an array; ignored");
                continue;
            };
            let names = reqs
                .iter()
                .filter_map(|r| r.as_str().map(str::to_string))
                .collect();
            s.dependent_required.push((name.clone(), names, keyword));
        }
    }

    fn regex(&mut self, ptr: &str, pattern: &str) -> Option<Regex> {
        match RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
        {
            Ok(re) => Some(re),
            Err(e) => {
                let text = e.to_string();
                let last = text.lines().last().unwrap_or("").trim();
                let why = last.strip_prefix("error: ").unwrap_or(last).to_string();
                self.note(
                    ptr,
                    format_args!(
                        "pattern {} is not supported ({}); ignored",
                        excerpt(pattern, MESSAGE_EXCERPT),
                        clip(why, 120)
                    ),
                );
                None
            }
        }
    }

    fn resolve_ref(&mut self, at: &str, r: &str) -> Option<usize> {
        let (base, fragment) = r.split_once('#').unwrap_or((r, ""));
        if !base.is_empty() && self.base_id.as_deref() != Some(base) {
            self.note(
                at,
                format_args!(
                    "remote $ref {} is not resolved; treated as always valid",
                    excerpt(r, MESSAGE_EXCERPT)
                ),
            );
            return None;
        }
        let root = self.root;
        let target = match percent_decode(fragment) {
            None => None,
            Some(f) if f.is_empty() => Some(String::new()),
            Some(f) if f.starts_with('/') => Some(f),
            Some(f) => self.anchor(&f),
        };
        let Some((ptr, value)) = target.and_then(|p| lookup(root, &p).map(|v| (p, v))) else {
            self.note(
                at,
                format_args!(
                    "$ref {} does not resolve; treated as always valid",
                    excerpt(r, MESSAGE_EXCERPT)
                ),
            );
            return None;
        };
        Some(self.compile(value, ptr))
    }

    fn anchor(&mut self, name: &str) -> Option<String> {
        let root = self.root;
        self.anchors
            .get_or_insert_with(|| collect_anchors(root))
            .get(name)
            .cloned()
    }

    /// Cut every cycle of in-place applications (`$ref`, `allOf`, `anyOf`,
    /// ...): evaluating one would loop without ever descending into the
    /// value. The edge that closes a cycle is pointed at an always-valid
    /// node instead.
    fn break_cycles(&mut self) {
        let n = self.nodes.len();
        let adj: Vec<Vec<usize>> = self
            .nodes
            .iter_mut()
            .map(|node| match node {
                Node::Schema(s) => s.in_place().into_iter().map(|id| *id).collect(),
                Node::Bool(_) => Vec::new(),
            })
            .collect();
        let mut color = vec![0u8; n];
        let mut cuts: Vec<(usize, usize)> = Vec::new();
        for start in 0..n {
            if color[start] != 0 {
                continue;
            }
            color[start] = 1;
            let mut stack = vec![(start, 0usize)];
            while let Some(top) = stack.last_mut() {
                let (u, k) = *top;
                match adj[u].get(k) {
                    Some(&v) => {
                        top.1 += 1;
                        match color.get(v) {
                            Some(0) => {
                                color[v] = 1;
                                stack.push((v, 0));
                            }
                            Some(1) => cuts.push((u, k)),
                            _ => {}
                        }
                    }
                    None => {
                        color[u] = 2;
                        stack.pop();
                    }
                }
            }
        }
        if cuts.is_empty() {
            return;
        }
        let always = self.alloc(String::new());
        for (u, k) in cuts {
            if let Some(Node::Schema(s)) = self.nodes.get_mut(u) {
                if let Some(slot) = s.in_place().into_iter().nth(k) {
                    *slot = always;
                }
            }
            let ptr = self.ptr(u);
            self.note(
                &ptr,
                "a cycle of $ref/allOf/anyOf/... that never descends into the value; cut, treated as always valid",
            );
        }
    }
}

/// `$anchor` names (and draft-07 `"$id": "#name"`) to canonical pointers.
fn collect_anchors(root: &Value) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut stack = vec![(root, String::new())];
    let mut visited = 0usize;
    while let Some((v, ptr)) = stack.pop() {
        visited += 1;
        if visited > 1_000_000 {
            break;
        }
        match v {
            Value::Object(m) => {
                if let Some(Value::String(a)) = m.get("$anchor") {
                    out.entry(a.clone()).or_insert_with(|| ptr.clone());
                }
                if let Some(Value::String(id)) = m.get("$id") {
                    if let Some(a) = id.strip_prefix('#') {
                        out.entry(a.to_string()).or_insert_with(|| ptr.clone());
                    }
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
    out
}

/// The value at an (escaped) JSON pointer, if any.
fn lookup<'v>(root: &'v Value, ptr: &str) -> Option<&'v Value> {
    if ptr.is_empty() {
        return Some(root);
    }
    let rest = ptr.strip_prefix('/')?;
    let mut v = root;
    for raw in rest.split('/') {
        let token = unescape(raw)?;
        v = match v {
            Value::Object(m) => m.get(&token)?,
            Value::Array(a) => {
                if token.is_empty()
                    || (token.len() > 1 && token.starts_with('0'))
                    || !token.bytes().all(|b| b.is_ascii_digit())
                {
                    return None;
                }
                a.get(token.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(v)
}

fn escape(token: &str) -> String {
    if token.contains(['~', '/']) {
        token.replace('~', "~0").replace('/', "~1")
    } else {
        token.to_string()
    }
}

fn unescape(token: &str) -> Option<String> {
    if !token.contains('~') {
        return Some(token.to_string());
    }
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// A `$ref` fragment, percent-decoded; `None` for a malformed escape (a `%`
/// without two hex digits) or bytes that are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_string());
    }
    // The crate passes a malformed escape through as it is; a `$ref` that
    // has one points nowhere.
    let b = s.as_bytes();
    let malformed = b.iter().enumerate().any(|(i, c)| {
        *c == b'%'
            && !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    });
    if malformed {
        return None;
    }
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(|d| d.into_owned())
}

/// Whether `v` nests at most `max` levels (checked without recursion).
fn depth_within(v: &Value, max: usize) -> bool {
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        if d > max {
            return false;
        }
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|x| (x, d + 1))),
            Value::Object(m) => stack.extend(m.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    true
}

// ---------------------------------------------------------------------------
// Evaluating

/// Where the evaluation is in the instance: a linked list on the stack,
/// turned into a pointer only when a violation is reported.
#[derive(Clone, Copy)]
struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    seg: Seg<'a>,
}

#[derive(Clone, Copy)]
enum Seg<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

impl Path<'_> {
    const ROOT: Path<'static> = Path {
        parent: None,
        seg: Seg::Root,
    };

    fn pointer(&self) -> String {
        let mut segs = Vec::new();
        let mut p = Some(self);
        while let Some(x) = p {
            segs.push(x.seg);
            p = x.parent;
        }
        let mut out = String::new();
        for seg in segs.iter().rev() {
            match seg {
                Seg::Root => {}
                Seg::Key(k) => {
                    out.push('/');
                    out.push_str(&escape(k));
                }
                Seg::Index(i) => {
                    out.push('/');
                    out.push_str(&i.to_string());
                }
            }
        }
        out
    }
}

#[derive(Default)]
struct Ctx {
    out: Vec<Violation>,
    steps: u64,
    limit: Option<Violation>,
}

impl Ctx {
    /// Record `v`; false once no more can be recorded.
    fn push(&mut self, v: Violation) -> bool {
        if self.limit.is_none() && self.out.len() < MAX_VIOLATIONS {
            self.out.push(v);
        }
        !self.is_full()
    }

    /// [`Ctx::push`] of a violation built only now, in a frame of its own:
    /// the frames of the recursive evaluation stay small even unoptimized.
    #[inline(never)]
    fn push_with(&mut self, make: impl FnOnce() -> Violation) -> bool {
        let v = make();
        self.push(v)
    }

    fn is_full(&self) -> bool {
        self.out.len() >= MAX_VIOLATIONS || self.limit.is_some()
    }
}

/// Collect violations, or only check (stop at the first failure, record
/// nothing); and how deep the evaluation is.
#[derive(Clone, Copy)]
struct Mode {
    collect: bool,
    frames: u32,
}

impl Mode {
    const COLLECT: Mode = Mode {
        collect: true,
        frames: 0,
    };
    const CHECK: Mode = Mode {
        collect: false,
        frames: 0,
    };

    fn deeper(self) -> Mode {
        Mode {
            frames: self.frames + 1,
            ..self
        }
    }

    fn check(self) -> Mode {
        Mode {
            collect: false,
            frames: self.frames + 1,
        }
    }
}

/// A failure: in check mode return false at once; in collect mode record
/// the violation `$make` builds (evaluated only then) and go on unless the
/// list is full.
macro_rules! fail {
    ($cx:expr, $mode:expr, $valid:ident, $make:expr) => {{
        if !$mode.collect {
            return false;
        }
        $valid = false;
        if !$cx.push_with(|| $make) {
            return false;
        }
    }};
}

/// The outcome of a nested evaluation (already recorded in collect mode).
macro_rules! merge {
    ($ok:expr, $cx:expr, $mode:expr, $valid:ident) => {{
        if !$ok {
            if !$mode.collect {
                return false;
            }
            $valid = false;
            if $cx.is_full() {
                return false;
            }
        }
    }};
}

impl Validator {
    fn ptr(&self, id: usize) -> &str {
        self.ptrs.get(id).map_or("", String::as_str)
    }

    fn violation(
        &self,
        id: usize,
        keyword: &'static str,
        path: &Path<'_>,
        message: String,
    ) -> Violation {
        Violation {
            pointer: path.pointer(),
            schema_pointer: format!("{}/{keyword}", self.ptr(id)),
            keyword,
            message,
            kind: ViolationKind::Nonconformant,
        }
    }

    fn eval(&self, id: usize, inst: &Value, path: &Path<'_>, cx: &mut Ctx, mode: Mode) -> bool {
        if cx.limit.is_some() {
            return true;
        }
        cx.steps += 1;
        if cx.steps > MAX_STEPS || mode.frames > MAX_DEPTH {
            self.stop(id, path, cx, mode);
            return true;
        }
        match self.nodes.get(id) {
            Some(Node::Schema(s)) => self.eval_schema(id, s, inst, path, cx, mode),
            Some(Node::Bool(false)) => {
                if mode.collect {
                    cx.push_with(|| Violation {
                        pointer: path.pointer(),
                        schema_pointer: self.ptr(id).to_string(),
                        keyword: "false",
                        message: "no value is allowed here (the schema is false)".to_string(),
                        kind: ViolationKind::Nonconformant,
                    });
                }
                false
            }
            _ => true,
        }
    }

    /// A limit is reached: record it; evaluation then accepts everything.
    #[cold]
    #[inline(never)]
    fn stop(&self, id: usize, path: &Path<'_>, cx: &mut Ctx, mode: Mode) {
        let message = if mode.frames > MAX_DEPTH {
            format!("nested deeper than {MAX_DEPTH} schema applications; not validated further")
        } else {
            format!("more than {MAX_STEPS} schema applications; validation stopped")
        };
        cx.limit = Some(Violation {
            pointer: path.pointer(),
            schema_pointer: self.ptr(id).to_string(),
            keyword: "limit",
            message,
            kind: ViolationKind::LimitExceeded,
        });
    }

    fn eval_schema(
        &self,
        id: usize,
        s: &Schema,
        inst: &Value,
        path: &Path<'_>,
        cx: &mut Ctx,
        mode: Mode,
    ) -> bool {
        let mut valid = true;
        if let Some(r) = s.reference {
            merge!(self.eval(r, inst, path, cx, mode.deeper()), cx, mode, valid);
        }
        if s.types.is_some() || s.enumeration.is_some() || s.constant.is_some() {
            merge!(
                self.eval_value(id, s, inst, path, cx, mode),
                cx,
                mode,
                valid
            );
        }
        match inst {
            Value::Object(m) if s.has_object => {
                merge!(self.eval_object(id, s, m, path, cx, mode), cx, mode, valid)
            }
            Value::Array(a) if s.has_array => {
                merge!(self.eval_array(id, s, a, path, cx, mode), cx, mode, valid)
            }
            Value::String(text) if s.has_string => {
                merge!(
                    self.eval_string(id, s, text, path, cx, mode),
                    cx,
                    mode,
                    valid
                )
            }
            Value::Number(n) if s.has_number => {
                merge!(self.eval_number(id, s, n, path, cx, mode), cx, mode, valid)
            }
            _ => {}
        }

        if s.has_applicators {
            merge!(
                self.eval_applicators(id, s, inst, path, cx, mode),
                cx,
                mode,
                valid
            );
        }
        valid
    }

    /// `type`, `enum` and `const`.
    fn eval_value(
        &self,
        id: usize,
        s: &Schema,
        inst: &Value,
        path: &Path<'_>,
        cx: &mut Ctx,
        mode: Mode,
    ) -> bool {
        let mut valid = true;
        let null_ok = s.nullable && inst.is_null();
        let mut type_ok = true;
        if let Some(types) = s.types {
            if !null_ok && !types.matches(inst) {
                type_ok = false;
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(
                        id,
                        "type",
                        path,
                        format!("expected {types}, got {}", type_name(inst)),
                    )
                );
            }
        }
        if type_ok && !null_ok {
            if let Some(values) = &s.enumeration {
                if !values.iter().any(|v| json_eq(v, inst)) {
                    fail!(cx, mode, valid, {
                        let mut v = self.violation(
                            id,
                            "enum",
                            path,
                            format!(
                                "value {} is not one of the pinned values {}",
                                excerpt(inst, MESSAGE_EXCERPT),
                                excerpt(values, LIST_EXCERPT)
                            ),
                        );
                        if values.iter().any(|v| same_kind(v, inst)) {
                            v.kind = ViolationKind::UnknownEnumValue {
                                value: excerpt(inst, VALUE_EXCERPT),
                            };
                        }
                        v
                    });
                }
            }
            if let Some(c) = &s.constant {
                if !json_eq(c, inst) {
                    fail!(cx, mode, valid, {
                        let mut v = self.violation(
                            id,
                            "const",
                            path,
                            format!(
                                "value {} is not the pinned constant {}",
                                excerpt(inst, MESSAGE_EXCERPT),
                                excerpt(c, MESSAGE_EXCERPT)
                            ),
                        );
                        if same_kind(c, inst) {
                            v.kind = ViolationKind::UnknownEnumValue {
                                value: excerpt(inst, VALUE_EXCERPT),
                            };
                        }
                        v
                    });
                }
            }
        }
        valid
    }

    /// `dependentSchemas`, `allOf`, `anyOf`, `oneOf`, `not`, `if`.
    fn eval_applicators(
        &self,
        id: usize,
        s: &Schema,
        inst: &Value,
        path: &Path<'_>,
        cx: &mut Ctx,
        mode: Mode,
    ) -> bool {
        let mut valid = true;
        if let Value::Object(m) = inst {
            for (name, sid) in &s.dependent_schemas {
                if m.contains_key(name) {
                    merge!(
                        self.eval(*sid, inst, path, cx, mode.deeper()),
                        cx,
                        mode,
                        valid
                    );
                }
            }
        }
        for &b in &s.all_of {
            merge!(self.eval(b, inst, path, cx, mode.deeper()), cx, mode, valid);
        }
        if !s.any_of.is_empty() {
            let ok = s
                .any_of
                .iter()
                .any(|&b| self.eval(b, inst, path, cx, mode.check()));
            if !ok {
                if !mode.collect {
                    return false;
                }
                valid = false;
                self.report_alternatives(id, "anyOf", &s.any_of, inst, path, cx, mode);
                if cx.is_full() {
                    return false;
                }
            }
        }
        if !s.one_of.is_empty() {
            let mut matched = Vec::with_capacity(2);
            for (i, &b) in s.one_of.iter().enumerate() {
                if self.eval(b, inst, path, cx, mode.check()) {
                    matched.push(i);
                    if matched.len() == 2 {
                        break;
                    }
                }
            }
            match matched[..] {
                [] => {
                    if !mode.collect {
                        return false;
                    }
                    valid = false;
                    self.report_alternatives(id, "oneOf", &s.one_of, inst, path, cx, mode);
                    if cx.is_full() {
                        return false;
                    }
                }
                [a, b, ..] => fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(
                        id,
                        "oneOf",
                        path,
                        format!(
                            "value matches alternatives {a} and {b} of oneOf; exactly one must match"
                        ),
                    )
                ),
                [_] => {}
            }
        }
        if let Some(n) = s.not {
            if self.eval(n, inst, path, cx, mode.check()) {
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(
                        id,
                        "not",
                        path,
                        "value matches the schema under not".to_string()
                    )
                );
            }
        }
        if let Some((i, t, e)) = s.condition {
            let branch = if self.eval(i, inst, path, cx, mode.check()) {
                t
            } else {
                e
            };
            if let Some(b) = branch {
                merge!(self.eval(b, inst, path, cx, mode.deeper()), cx, mode, valid);
            }
        }
        valid
    }

    /// No alternative of an `anyOf`/`oneOf` matched (collect mode): report the
    /// unknown enum values of the closest alternative failing only on those,
    /// or else one violation naming the closest failure.
    #[allow(clippy::too_many_arguments)]
    fn report_alternatives(
        &self,
        id: usize,
        keyword: &'static str,
        branches: &[usize],
        inst: &Value,
        path: &Path<'_>,
        cx: &mut Ctx,
        mode: Mode,
    ) {
        let mut enum_only: Option<Vec<Violation>> = None;
        let mut closest: Option<(usize, Violation, usize)> = None;
        for (i, &b) in branches.iter().enumerate() {
            let mut sub = Ctx {
                out: Vec::new(),
                steps: cx.steps,
                limit: None,
            };
            self.eval(b, inst, path, &mut sub, mode.deeper());
            cx.steps = sub.steps;
            if sub.limit.is_some() {
                cx.limit = sub.limit;
                return;
            }
            let n = sub.out.len();
            if n == 0 {
                continue;
            }
            let only_enums = sub
                .out
                .iter()
                .all(|v| matches!(v.kind, ViolationKind::UnknownEnumValue { .. }));
            if only_enums {
                if enum_only.as_ref().is_none_or(|e| n < e.len()) {
                    enum_only = Some(sub.out);
                }
            } else if closest.as_ref().is_none_or(|c| n < c.2) {
                closest = sub.out.into_iter().next().map(|v| (i, v, n));
            }
        }
        if let Some(vs) = enum_only {
            for v in vs {
                if !cx.push(v) {
                    break;
                }
            }
            return;
        }
        let hint = match closest {
            Some((i, v, _)) => {
                let at = if v.pointer.is_empty() {
                    "(root)".to_string()
                } else {
                    excerpt(&v.pointer, MESSAGE_EXCERPT)
                };
                clip(
                    format!("; alternative {i} fails at {at}: {}", v.message),
                    240,
                )
            }
            None => String::new(),
        };
        cx.push(self.violation(
            id,
            keyword,
            path,
            format!(
                "value matches none of the {} alternatives of {keyword}{hint}",
                branches.len()
            ),
        ));
    }

    fn eval_object(
        &self,
        id: usize,
        s: &Schema,
        m: &Map<String, Value>,
        path: &Path<'_>,
        cx: &mut Ctx,
        mode: Mode,
    ) -> bool {
        let mut valid = true;
        let len = m.len() as u64;
        if let Some(min) = s.min_properties {
            if len < min {
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(
                        id,
                        "minProperties",
                        path,
                        format!("object has {len} properties, at least {min} required"),
                    )
                );
            }
        }
        if let Some(max) = s.max_properties {
            if len > max {
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(
                        id,
                        "maxProperties",
                        path,
                        format!("object has {len} properties, at most {max} allowed"),
                    )
                );
            }
        }
        for name in &s.required {
            if !m.contains_key(name) {
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(
                        id,
                        "required",
                        path,
                        format!(
                            "missing required property {}",
                            excerpt(name, MESSAGE_EXCERPT)
                        ),
                    )
                );
            }
        }
        for (name, needs, keyword) in &s.dependent_required {
            if m.contains_key(name) {
                for need in needs {
                    if !m.contains_key(need) {
                        fail!(
                            cx,
                            mode,
                            valid,
                            self.violation(
                                id,
                                keyword,
                                path,
                                format!(
                                    "property {} requires property {}, which is missing",
                                    excerpt(name, MESSAGE_EXCERPT),
                                    excerpt(need, MESSAGE_EXCERPT)
                                ),
                            )
                        );
                    }
                }
            }
        }
        let per_member = !s.properties.is_empty()
            || !s.pattern_properties.is_empty()
            || s.additional_properties.is_some()
            || s.property_names.is_some();
        if per_member {
            for (key, value) in m {
                let child = Path {
                    parent: Some(path),
                    seg: Seg::Key(key),
                };
                let mut matched = false;
                if let Ok(i) = s
                    .properties
                    .binary_search_by(|(k, _)| k.as_str().cmp(key.as_str()))
                {
                    matched = true;
                    if let Some(&(_, sid)) = s.properties.get(i) {
                        merge!(
                            self.eval(sid, value, &child, cx, mode.deeper()),
                            cx,
                            mode,
                            valid
                        );
                    }
                }
                for (re, sid) in &s.pattern_properties {
                    if re.is_match(key) {
                        matched = true;
                        merge!(
                            self.eval(*sid, value, &child, cx, mode.deeper()),
                            cx,
                            mode,
                            valid
                        );
                    }
                }
                if !matched {
                    if let Some(a) = s.additional_properties {
                        if matches!(self.nodes.get(a), Some(Node::Bool(false))) {
                            fail!(
                                cx,
                                mode,
                                valid,
                                Violation {
                                    pointer: child.pointer(),
                                    schema_pointer: self.ptr(a).to_string(),
                                    keyword: "additionalProperties",
                                    message: format!(
                                        "property {} is not allowed (additionalProperties is false)",
                                        excerpt(key, MESSAGE_EXCERPT)
                                    ),
                                    kind: ViolationKind::Nonconformant,
                                }
                            );
                        } else {
                            merge!(
                                self.eval(a, value, &child, cx, mode.deeper()),
                                cx,
                                mode,
                                valid
                            );
                        }
                    }
                }
                if let Some(pn) = s.property_names {
                    let name = Value::String(key.clone());
                    merge!(
                        self.eval(pn, &name, path, cx, mode.deeper()),
                        cx,
                        mode,
                        valid
                    );
                }
            }
        }
        valid
    }

    fn eval_array(
        &self,
        id: usize,
        s: &Schema,
        a: &[Value],
        path: &Path<'_>,
        cx: &mut Ctx,
        mode: Mode,
    ) -> bool {
        let mut valid = true;
        let len = a.len() as u64;
        if let Some(min) = s.min_items {
            if len < min {
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(
                        id,
                        "minItems",
                        path,
                        format!("array has {len} items, at least {min} required"),
                    )
                );
            }
        }
        if let Some(max) = s.max_items {
            if len > max {
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(
                        id,
                        "maxItems",
                        path,
                        format!("array has {len} items, at most {max} allowed"),
                    )
                );
            }
        }
        if s.unique_items {
            if let Some((i, j)) = first_duplicate(a) {
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(
                        id,
                        "uniqueItems",
                        path,
                        format!("items {i} and {j} are equal; items must be unique"),
                    )
                );
            }
        }
        for (i, (item, &sid)) in a.iter().zip(&s.prefix_items).enumerate() {
            let child = Path {
                parent: Some(path),
                seg: Seg::Index(i),
            };
            merge!(
                self.eval(sid, item, &child, cx, mode.deeper()),
                cx,
                mode,
                valid
            );
        }
        if let Some((sid, keyword)) = s.items {
            let start = s.prefix_items.len();
            if a.len() > start {
                if matches!(self.nodes.get(sid), Some(Node::Bool(false))) {
                    fail!(
                        cx,
                        mode,
                        valid,
                        Violation {
                            pointer: path.pointer(),
                            schema_pointer: self.ptr(sid).to_string(),
                            keyword,
                            message: format!(
                                "array has {} items, at most {start} allowed ({keyword} is false)",
                                a.len()
                            ),
                            kind: ViolationKind::Nonconformant,
                        }
                    );
                } else {
                    for (i, item) in a.iter().enumerate().skip(start) {
                        let child = Path {
                            parent: Some(path),
                            seg: Seg::Index(i),
                        };
                        merge!(
                            self.eval(sid, item, &child, cx, mode.deeper()),
                            cx,
                            mode,
                            valid
                        );
                    }
                }
            }
        }
        if let Some(c) = s.contains {
            let min = s.min_contains.unwrap_or(1);
            let mut count = 0u64;
            for (i, item) in a.iter().enumerate() {
                let child = Path {
                    parent: Some(path),
                    seg: Seg::Index(i),
                };
                if self.eval(c, item, &child, cx, mode.check()) {
                    count += 1;
                    if count >= min && s.max_contains.is_none() {
                        break;
                    }
                }
            }
            if count < min {
                let keyword = if s.min_contains.is_some() {
                    "minContains"
                } else {
                    "contains"
                };
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(
                        id,
                        keyword,
                        path,
                        format!(
                            "array has {count} items matching contains, at least {min} required"
                        ),
                    )
                );
            }
            if let Some(max) = s.max_contains {
                if count > max {
                    fail!(
                        cx,
                        mode,
                        valid,
                        self.violation(
                            id,
                            "maxContains",
                            path,
                            format!(
                                "array has {count} items matching contains, at most {max} allowed"
                            ),
                        )
                    );
                }
            }
        }
        valid
    }

    fn eval_string(
        &self,
        id: usize,
        s: &Schema,
        text: &str,
        path: &Path<'_>,
        cx: &mut Ctx,
        mode: Mode,
    ) -> bool {
        let mut valid = true;
        if s.min_length.is_some() || s.max_length.is_some() {
            // Code points never outnumber bytes.
            let bytes = text.len() as u64;
            let fits_max = s.max_length.is_none_or(|max| bytes <= max);
            let short_of_min = s.min_length.is_some_and(|min| bytes < min);
            let chars = if fits_max && short_of_min {
                bytes
            } else if fits_max && s.min_length.is_none() {
                0
            } else {
                text.chars().count() as u64
            };
            if let Some(min) = s.min_length {
                if chars < min {
                    fail!(
                        cx,
                        mode,
                        valid,
                        self.violation(
                            id,
                            "minLength",
                            path,
                            format!(
                                "string {} is shorter than {min} characters",
                                excerpt(text, MESSAGE_EXCERPT)
                            ),
                        )
                    );
                }
            }
            if let Some(max) = s.max_length {
                if !fits_max && chars > max {
                    fail!(
                        cx,
                        mode,
                        valid,
                        self.violation(
                            id,
                            "maxLength",
                            path,
                            format!(
                                "string of {chars} characters is longer than {max}: {}",
                                excerpt(text, MESSAGE_EXCERPT)
                            ),
                        )
                    );
                }
            }
        }
        if let Some(re) = &s.pattern {
            if !re.is_match(text) {
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(
                        id,
                        "pattern",
                        path,
                        format!(
                            "string {} does not match pattern {}",
                            excerpt(text, MESSAGE_EXCERPT),
                            excerpt(re.as_str(), MESSAGE_EXCERPT)
                        ),
                    )
                );
            }
        }
        if let Some(f) = s.format {
            if !f.check(text) {
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(
                        id,
                        "format",
                        path,
                        format!(
                            "string {} is not a valid {}",
                            excerpt(text, MESSAGE_EXCERPT),
                            f.name()
                        ),
                    )
                );
            }
        }
        valid
    }

    fn eval_number(
        &self,
        id: usize,
        s: &Schema,
        n: &Number,
        path: &Path<'_>,
        cx: &mut Ctx,
        mode: Mode,
    ) -> bool {
        let mut valid = true;
        if let Some(min) = &s.minimum {
            let ord = cmp_num(n, min);
            let bad = if s.minimum_exclusive {
                matches!(ord, Some(Ordering::Less | Ordering::Equal))
            } else {
                ord == Some(Ordering::Less)
            };
            if bad {
                let (keyword, rel) = if s.minimum_exclusive {
                    ("exclusiveMinimum", "greater than")
                } else {
                    ("minimum", "at least")
                };
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(id, keyword, path, format!("{n} is not {rel} {min}"))
                );
            }
        }
        if let Some(max) = &s.maximum {
            let ord = cmp_num(n, max);
            let bad = if s.maximum_exclusive {
                matches!(ord, Some(Ordering::Greater | Ordering::Equal))
            } else {
                ord == Some(Ordering::Greater)
            };
            if bad {
                let (keyword, rel) = if s.maximum_exclusive {
                    ("exclusiveMaximum", "less than")
                } else {
                    ("maximum", "at most")
                };
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(id, keyword, path, format!("{n} is not {rel} {max}"))
                );
            }
        }
        if let Some(min) = &s.exclusive_minimum {
            if matches!(cmp_num(n, min), Some(Ordering::Less | Ordering::Equal)) {
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(
                        id,
                        "exclusiveMinimum",
                        path,
                        format!("{n} is not greater than {min}")
                    )
                );
            }
        }
        if let Some(max) = &s.exclusive_maximum {
            if matches!(cmp_num(n, max), Some(Ordering::Greater | Ordering::Equal)) {
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(
                        id,
                        "exclusiveMaximum",
                        path,
                        format!("{n} is not less than {max}")
                    )
                );
            }
        }
        if let Some(m) = &s.multiple_of {
            if !is_multiple(n, m) {
                fail!(
                    cx,
                    mode,
                    valid,
                    self.violation(
                        id,
                        "multipleOf",
                        path,
                        format!("{n} is not a multiple of {m}")
                    )
                );
            }
        }
        valid
    }
}

// ---------------------------------------------------------------------------
// Values

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

/// The number as `digits × 10^exponent` (sign dropped), from its shortest
/// decimal form.
fn decimal(n: &Number) -> Option<(u128, i32)> {
    if let Some(i) = as_i128(n) {
        return Some((i.unsigned_abs(), 0));
    }
    let f = n.as_f64()?;
    if !f.is_finite() {
        return None;
    }
    let text = format!("{:e}", f.abs());
    let (mantissa, exp) = text.split_once('e')?;
    let exp: i32 = exp.parse().ok()?;
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: u128 = format!("{int}{frac}").parse().ok()?;
    Some((digits, exp - i32::try_from(frac.len()).ok()?))
}

/// Whether `n` is an integer multiple of `m` (> 0), exactly on their shortest
/// decimal forms; true where it cannot be judged.
fn is_multiple(n: &Number, m: &Number) -> bool {
    if let (Some(a), Some(b)) = (as_i128(n), as_i128(m)) {
        return b == 0 || a % b == 0;
    }
    let (Some((dx, ex)), Some((dm, em))) = (decimal(n), decimal(m)) else {
        return true;
    };
    if dx == 0 || dm == 0 {
        return true;
    }
    if ex >= em {
        // dx·10^k mod dm, with k = ex - em.
        let mut k = ex.abs_diff(em);
        let mut pow = 1 % dm;
        let mut base = 10 % dm;
        while k > 0 {
            if k & 1 == 1 {
                pow = pow * base % dm;
            }
            base = base * base % dm;
            k >>= 1;
        }
        (dx % dm) * pow % dm == 0
    } else {
        match 10u128
            .checked_pow(em.abs_diff(ex))
            .and_then(|p| p.checked_mul(dm))
        {
            Some(step) => dx % step == 0,
            None => false,
        }
    }
}

/// JSON equality (numbers by value, so `1` equals `1.0`), without recursion.
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

// ---------------------------------------------------------------------------
// Formats

fn digits(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `YYYY-MM-DD` (RFC 3339 full-date).
fn parse_date(s: &str) -> Option<(u32, u32, u32)> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let year = digits(s.get(0..4)?)?;
    let month = digits(s.get(5..7)?)?;
    let day = digits(s.get(8..10)?)?;
    ((1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month))
        .then_some((year, month, day))
}

/// RFC 3339 date-time: `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`; a leap second
/// only at 23:59:60 UTC.
fn is_date_time(s: &str) -> bool {
    let Some(date) = s.get(..10) else {
        return false;
    };
    if parse_date(date).is_none() || !matches!(s.as_bytes().get(10), Some(b'T' | b't')) {
        return false;
    }
    let Some(time) = s.get(11..) else {
        return false;
    };
    let b = time.as_bytes();
    if b.len() < 9 || b[2] != b':' || b[5] != b':' {
        return false;
    }
    let (Some(hour), Some(minute), Some(second)) = (
        time.get(0..2).and_then(digits),
        time.get(3..5).and_then(digits),
        time.get(6..8).and_then(digits),
    ) else {
        return false;
    };
    if hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let mut rest = &time[8..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    let offset_minutes: i32 = match rest {
        "Z" | "z" => 0,
        _ => {
            let ob = rest.as_bytes();
            if ob.len() != 6 || !matches!(ob[0], b'+' | b'-') || ob[3] != b':' {
                return false;
            }
            let (Some(oh), Some(om)) = (
                rest.get(1..3).and_then(digits),
                rest.get(4..6).and_then(digits),
            ) else {
                return false;
            };
            if oh > 23 || om > 59 {
                return false;
            }
            let m = (oh * 60 + om) as i32;
            if ob[0] == b'-' {
                -m
            } else {
                m
            }
        }
    };
    if second == 60 {
        let utc = ((hour * 60 + minute) as i32 - offset_minutes).rem_euclid(24 * 60);
        return utc == 23 * 60 + 59;
    }
    true
}

/// `local@domain`, basic: no whitespace or control characters, a dot-atom
/// (or quoted) local part, a domain of dot-separated labels or an
/// `[address literal]`.
fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    if local.is_empty()
        || domain.is_empty()
        || s.chars().any(char::is_control)
        || domain.chars().any(char::is_whitespace)
    {
        return false;
    }
    let local_ok = if local.len() >= 2 && local.starts_with('"') && local.ends_with('"') {
        true
    } else {
        !local.contains('@')
            && !local.contains(char::is_whitespace)
            && !local.starts_with('.')
            && !local.ends_with('.')
            && !local.contains("..")
            && !local.contains(['(', ')', '<', '>', ',', ';', ':', '\\', '"', '[', ']'])
    };
    let domain_ok = if domain.starts_with('[') && domain.ends_with(']') {
        domain.len() > 2
    } else {
        domain.split('.').all(|label| {
            !label.is_empty()
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_alphanumeric() || c == '-')
        })
    };
    local_ok && domain_ok
}

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Basic absolute URI: a scheme, then no whitespace, control characters or
/// characters never allowed in a URI, and well-formed `%` escapes.
fn is_uri(s: &str) -> bool {
    let Some((scheme, _)) = s.split_once(':') else {
        return false;
    };
    let mut sc = scheme.chars();
    if !sc.next().is_some_and(|c| c.is_ascii_alphabetic())
        || !sc.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return false;
    }
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c <= b' '
            || c == 0x7f
            || matches!(
                c,
                b'<' | b'>' | b'"' | b'{' | b'}' | b'|' | b'\\' | b'^' | b'`'
            )
        {
            return false;
        }
        if c == b'%'
            && !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
        {
            return false;
        }
    }
    true
}
