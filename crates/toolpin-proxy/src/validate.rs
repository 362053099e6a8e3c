//! JSON Schema validation of tool arguments and results: the layer around
//! the crate, in parts: normalising (`normalise.rs`), the budget
//! (`budget.rs`), compiling (`compile.rs`) and mapping errors to
//! violations (`violations.rs`).
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
//! * **One reading of `$ref`**: the budget's schema graph follows a
//!   reference where the shared resolver (`toolpin_manifest::schema`, the
//!   drift engine's) leads: the first `$anchor` of a name in document order,
//!   never one inside data (`const`, `enum`, `examples`, ...).
//! * **Permissive compilation**: [`Validator::new`] never fails. What the crate
//!   would reject or that cannot be judged — a remote `$ref` (nothing is ever
//!   fetched), one that does not resolve, an unknown type name, a keyword with
//!   a malformed value, a `pattern` that does not compile, a cycle of `$ref`s
//!   that never descends into the value — is removed from the copy, listed by
//!   [`Validator::unsupported`], and accepts everything. A `$ref` the crate
//!   cannot follow is found by its error's kind (`ValidationErrorKind::
//!   Referencing` and the pointer, anchor or document it names), never by
//!   the error's text.
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
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io;
use std::sync::Arc;

use jsonschema::error::{TypeKind, ValidationError, ValidationErrorKind};
use jsonschema::json::cmp::equal;
use jsonschema::{Draft, JsonType, ReferencingError};
use serde::Serialize;
use serde_json::{Map, Value};
use toolpin_manifest::jcs::to_canonical_vec;
use toolpin_manifest::schema::{
    self, escape_token, lookup, lookup_mut, unescape_token, Resolver, Target,
};

mod budget;
mod compile;
mod json;
mod normalise;
mod violations;

use budget::*;
use compile::*;
use json::*;
use normalise::*;
use violations::*;

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
/// The keywords that apply another subschema by reference.
const REFS: [&str; 3] = ["$ref", "$dynamicRef", "$recursiveRef"];

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
        write!(f, "{}: {}", shown_pointer(&self.pointer), self.message)
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
        let mut copy = n.schema(schema, "", 0);
        let mut notes = std::mem::take(&mut n.notes);
        let cost = worst_case(&mut copy, &mut notes);
        let over_budget = (cost > MAX_STEPS).then_some(cost);
        let inner = if over_budget.is_some() {
            notes.note("", over_budget_text(cost));
            None
        } else if n.max_depth <= INLINE_DEPTH {
            build(&mut copy, &mut notes)
        } else {
            // The crate's compiler recurses deeply per level (over 3 MiB at
            // 128 levels unoptimised): a thread with room for it.
            let thread = std::thread::Builder::new()
                .name("toolpin-schema-compile".into())
                .stack_size(COMPILE_STACK);
            let built = std::thread::scope(|s| {
                let h = thread.spawn_scoped(s, || build(&mut copy, &mut notes));
                h.ok().and_then(|h| h.join().ok())
            });
            built.unwrap_or_else(|| {
                let why = "the schema could not be compiled; treated as always valid";
                notes.note("", why);
                None
            })
        };
        Validator {
            inner: inner.map(Arc::new),
            schema: Arc::new(copy),
            renames: Arc::new(n.renames),
            guard_depth: n.has_ref || n.has_unique,
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
        let (mut out, mut batch) = (Vec::new(), Vec::new());
        for e in inner.iter_errors(instance) {
            // Each error's own violations, in `batch`, are mapped alone.
            self.map(&e, instance, &mut batch);
            out.append(&mut batch);
            if out.len() >= MAX_VIOLATIONS {
                break;
            }
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
        self.limit(instance).is_none() && self.inner.as_ref().is_none_or(|v| v.is_valid(instance))
    }

    /// The one violation when the call is not judged.
    fn limit(&self, instance: &Value) -> Option<Violation> {
        let message = match self.over_budget {
            Some(cost) => format!("the schema's {}", over_budget_text(cost)),
            None if self.guard_depth && too_deep(instance, 1) => {
                format!("value nested deeper than {MAX_DEPTH} levels; not validated")
            }
            None => return None,
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

fn over_budget_text(cost: u64) -> String {
    let cost = match cost {
        u64::MAX => "more than 2^64".to_string(),
        _ => cost.to_string(),
    };
    format!("worst case of {cost} subschema evaluations exceeds {MAX_STEPS}; not validated")
}

/// The note for a `$ref` that leads nowhere.
fn unresolved(reference: &str) -> String {
    let r = excerpt(reference, MESSAGE_EXCERPT);
    format!("$ref {r} does not resolve; treated as always valid")
}

/// Whether `v` (at nesting level `depth`) nests more than [`MAX_DEPTH`]
/// containers, recursing at most that deep, without allocating. The same
/// reading as `toolpin_manifest::normalize::depth_exceeds`, but scalars are
/// never entered: this runs on every call (docs/performance.md).
fn too_deep(v: &Value, depth: u32) -> bool {
    let over = |x: &Value| {
        (x.is_array() || x.is_object()) && (depth >= MAX_DEPTH || too_deep(x, depth + 1))
    };
    match v {
        Value::Array(a) => a.iter().any(over),
        Value::Object(m) => m.values().any(over),
        _ => false,
    }
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
