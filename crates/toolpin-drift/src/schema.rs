//! The schema-aware diff: two JSON Schemas compared keyword by keyword at
//! any depth, each difference judged by direction.
//!
//! - inputSchema: the agent produces arguments; narrowing breaks calls.
//! - outputSchema: the agent consumes results; widening is the danger.
//!
//! Before comparing, local `$ref`s (`#/$defs/…`, `#/definitions/…`, any
//! `#/…` pointer, percent-encoded or not; `#name` for an `$anchor`; the
//! root's own `$id` as base) are resolved by the shared schema model
//! (`toolpin_manifest::schema`, as the proxy reads them) with a cycle guard,
//! so moving a subschema into `$defs` is no finding; a `type` array is a union; `const` is a one-value
//! enum; OpenAPI 3.0 `nullable: true` adds `null`; Gemini's uppercase types
//! are read in lower case. What the engine cannot judge is reported as
//! `schema-unanalyzable`, never passed silently; a keyword it has no rule
//! for is `field-changed`.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value};
use toolpin_manifest::jcs;
use toolpin_manifest::pointer::escape_token;
use toolpin_manifest::schema::{RefError, Resolver};

use crate::budget::{Budget, Exceeded, MAX_BRANCH_PAIRS, MAX_RENAME_PAIRS};
use crate::finding::Finding;
use crate::rule::{self, Rule, Severity};

/// Which way values flow through the schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// The agent produces these values (inputSchema).
    Input,
    /// The agent consumes these values (outputSchema).
    Output,
}

/// What the walk knows about the tool.
pub struct Context<'a> {
    pub server: &'a str,
    pub tool: &'a str,
    /// The tool can write, delete or execute: raises some severities.
    pub writes: bool,
    /// The catalog's tool names, for steering cues in prose.
    pub names: &'a crate::prose::ToolNames,
}

/// Deepest schema nesting walked; deeper differences are unanalyzable.
const MAX_DEPTH: usize = 64;

/// Compares two schemas rooted at `pointer` (`/inputSchema`, `/outputSchema`)
/// and appends the findings, spending from the tool's `budget`. Once the
/// budget is exceeded the walk stops; the caller drops what it appended and
/// reports the tool as unanalyzable.
pub fn diff(
    ctx: &Context,
    direction: Direction,
    pointer: &str,
    before: &Value,
    after: &Value,
    budget: &mut Budget,
    out: &mut Vec<Finding>,
) {
    let mut walker = Walker {
        ctx,
        dir: direction,
        refs_b: Resolver::new(before),
        refs_a: Resolver::new(after),
        has_refs: holds_ref(before) || holds_ref(after),
        on_path: Vec::new(),
        clean: HashSet::new(),
        unwrapped_after: None,
        budget,
        out,
    };
    walker.walk(pointer, before, after, None, 0);
}

struct Walker<'a, 'o> {
    ctx: &'a Context<'a>,
    dir: Direction,
    refs_b: Resolver<'a>,
    refs_a: Resolver<'a>,
    /// Whether either side holds a `$ref` anywhere: when neither does, a
    /// subschema whose text is unchanged is unchanged.
    has_refs: bool,
    /// The `$ref` pairs (before, after) being compared on the current path:
    /// the cycle guard. A pair reached again by another path (two
    /// properties referencing one definition) is compared again: each
    /// reference is a place the model reads.
    on_path: Vec<(String, String)>,
    /// `$ref` pairs compared already and found to hold no change: not
    /// walked again.
    clean: HashSet<(String, String)>,
    /// Where the after side is a plain schema compared as a one-branch
    /// union (an unwrapping): findings in its branch point at the schema.
    unwrapped_after: Option<String>,
    budget: &'o mut Budget,
    out: &'o mut Vec<Finding>,
}

/// Keywords compared by following references, not as text.
const CONTAINERS: [&str; 2] = ["$defs", "definitions"];
/// Keywords the engine does not judge; a change in them is unanalyzable.
const UNANALYZABLE: [&str; 16] = [
    "if",
    "then",
    "else",
    "not",
    "dependentSchemas",
    "dependentRequired",
    "dependencies",
    "patternProperties",
    "propertyNames",
    "contains",
    "minContains",
    "maxContains",
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$recursiveRef",
];
/// The tool family's generic rules the schema walk falls back to: a keyword
/// no rule claims, text that changed without changing meaning.
const SCHEMA_FALLBACKS: [&Rule; 2] = [&rule::FIELD_CHANGED, &rule::EQUIVALENT_REWRITE];
/// Prose the model reads inside a schema.
const PROSE: [&str; 4] = ["description", "title", "examples", "$comment"];

fn same(a: &Value, b: &Value) -> bool {
    a == b || jcs::to_canonical_vec(a) == jcs::to_canonical_vec(b)
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        s.chars().take(77).collect::<String>() + "…"
    } else {
        s
    }
}

fn join_values<'v>(vals: impl Iterator<Item = &'v Value>) -> String {
    vals.map(short).collect::<Vec<_>>().join(", ")
}

/// The effective schema of a value: objects as they are, `true` as `{}`,
/// `false` as "nothing", anything else unusable.
fn as_schema(v: &Value) -> Option<Cow<'_, Map<String, Value>>> {
    match v {
        Value::Object(m) => Some(Cow::Borrowed(m)),
        Value::Bool(true) => Some(Cow::Owned(Map::new())),
        Value::Bool(false) => {
            let mut m = Map::new();
            m.insert("not".into(), Value::Object(Map::new()));
            Some(Cow::Owned(m))
        }
        _ => None,
    }
}

/// References followed one after another before the chain is refused.
const MAX_REF_CHAIN: usize = 32;

/// Resolves a `$ref` chain with the shared resolver
/// ([`toolpin_manifest::schema::Resolver`]); `Ok` holds the schema reached
/// and the last reference followed, `Err` the reference that cannot be
/// followed (remote, or naming nothing) or why the chain was refused.
fn resolve<'v>(
    refs: &Resolver<'v>,
    schema: &'v Value,
) -> Result<(&'v Value, Option<String>), String> {
    match refs.resolve(schema, MAX_REF_CHAIN) {
        Ok(r) => Ok((r.value, r.via.map(str::to_string))),
        Err(RefError::Cycle(_) | RefError::TooLong(_)) => {
            Err(format!("a $ref chain longer than {MAX_REF_CHAIN}"))
        }
        Err(RefError::Encoding(r) | RefError::NotFound(r) | RefError::Remote(r)) => Err(r),
    }
}

/// `plain` as a one-branch union shaped like `union` (`anyOf` or `oneOf`),
/// when `union` is a union of branches and `plain` is not: the members
/// `union` keeps beside its branches (prose, `default`) stay outside, the
/// rest becomes the branch. `None` when there is no such wrapping.
fn wrapped_as_union(
    plain: &Map<String, Value>,
    union: &Map<String, Value>,
) -> Option<Map<String, Value>> {
    const UNIONS: [&str; 3] = ["anyOf", "oneOf", "allOf"];
    if UNIONS.iter().any(|k| plain.contains_key(*k)) {
        return None;
    }
    let key = ["anyOf", "oneOf"].into_iter().find(|k| {
        union
            .get(*k)
            .and_then(Value::as_array)
            .is_some_and(|b| !b.is_empty())
    })?;
    // Only a union of branches: keywords beside it that constrain values
    // make it something else.
    let outside = |k: &str| PROSE.contains(&k) || matches!(k, "default" | "deprecated" | "$schema");
    if union.keys().any(|k| k != key && !outside(k)) {
        return None;
    }
    let (kept, branch): (Map<String, Value>, Map<String, Value>) = plain
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .partition(|(k, _)| outside(k));
    if branch.is_empty() {
        return None;
    }
    let mut wrapped = kept;
    wrapped.insert(key.to_string(), Value::Array(vec![Value::Object(branch)]));
    Some(wrapped)
}

/// `s` with a length lookahead at the start of its `pattern`
/// (`^(?=.{m,n}$)rest`, `{m,}`, `{n}`) moved into `minLength`/`maxLength`
/// (the tighter of the two where both are set), and the pattern left as
/// `^rest` (none when nothing is left); `None` without such a lookahead.
fn lookahead_as_bounds(s: &Map<String, Value>) -> Option<Map<String, Value>> {
    let pattern = s.get("pattern")?.as_str()?;
    let inner = pattern.strip_prefix("^(?=.{")?;
    let (counts, rest) = inner.split_once("}$)")?;
    let (min, max) = match counts.split_once(',') {
        Some((lo, "")) => (lo.parse::<u64>().ok()?, None),
        Some((lo, hi)) => (lo.parse::<u64>().ok()?, Some(hi.parse::<u64>().ok()?)),
        None => {
            let n = counts.parse::<u64>().ok()?;
            (n, Some(n))
        }
    };
    let mut out = s.clone();
    if matches!(rest, "" | ".*" | ".*$") {
        out.remove("pattern");
    } else {
        out.insert("pattern".into(), Value::String(format!("^{rest}")));
    }
    let existing = |key: &str| s.get(key).and_then(Value::as_u64);
    if min > 0 {
        let v = existing("minLength").map_or(min, |e| e.max(min));
        out.insert("minLength".into(), Value::from(v));
    }
    if let Some(max) = max {
        let v = existing("maxLength").map_or(max, |e| e.min(max));
        out.insert("maxLength".into(), Value::from(v));
    }
    Some(out)
}

/// A `propertyNames` that allows every name (absent, `true`, `{}`, or
/// `{"type": "string"}`: names are strings anyway).
fn names_any(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Bool(true)) => true,
        Some(Value::Object(o)) => {
            o.is_empty() || (o.len() == 1 && o.get("type") == Some(&Value::String("string".into())))
        }
        _ => false,
    }
}

/// Whether a schema's values can be arrays (no `type`, or one naming it).
fn can_be_array(s: &Map<String, Value>) -> bool {
    types(s).is_none_or(|t| t.contains("array"))
}

/// `{"$ref": …}` and nothing else.
fn bare_ref(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|o| o.len() == 1 && o.contains_key("$ref"))
}

/// Whether `v` holds a `$ref` anywhere.
fn holds_ref(v: &Value) -> bool {
    match v {
        Value::Object(o) => {
            o.get("$ref").is_some_and(Value::is_string) || o.values().any(holds_ref)
        }
        Value::Array(items) => items.iter().any(holds_ref),
        _ => false,
    }
}

type Types = Option<BTreeSet<String>>;

/// The type set (shared with the proxy: `toolpin_manifest::schema::type_set`).
fn types(s: &Map<String, Value>) -> Types {
    toolpin_manifest::schema::type_set(s)
}

/// Whether type `t` is accepted by `set` (`None` accepts all).
fn covers(set: &Types, t: &str) -> bool {
    match set {
        None => true,
        Some(s) => s.contains(t) || (t == "integer" && s.contains("number")),
    }
}

fn enum_values(s: &Map<String, Value>) -> Option<Vec<Value>> {
    if let Some(c) = s.get("const") {
        return Some(vec![c.clone()]);
    }
    s.get("enum").and_then(Value::as_array).cloned()
}

/// A numeric bound: the value and whether it is exclusive.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Bound {
    value: f64,
    exclusive: bool,
}

/// Which end of a numeric range.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Lower,
    Upper,
}

/// The effective bound at one end: `minimum`/`maximum` and the exclusive
/// keyword (a number, or draft 4's boolean beside the inclusive one),
/// whichever is tighter; on an integer schema rounded to the inclusive
/// integer bound, so `exclusiveMaximum: 1000000` equals `maximum: 999999`.
fn numeric_bound(s: &Map<String, Value>, integer: bool, end: End) -> Option<Bound> {
    let (inclusive_key, exclusive_key) = match end {
        End::Lower => ("minimum", "exclusiveMinimum"),
        End::Upper => ("maximum", "exclusiveMaximum"),
    };
    // `a` is at least as tight as `b` at this end.
    let tighter = |a: f64, b: f64| if end == End::Lower { a > b } else { a < b };
    let inclusive = s.get(inclusive_key).and_then(Value::as_f64);
    let bound = match s.get(exclusive_key) {
        Some(Value::Number(n)) => {
            let x = n.as_f64()?;
            match inclusive {
                Some(m) if tighter(m, x) => Bound {
                    value: m,
                    exclusive: false,
                },
                _ => Bound {
                    value: x,
                    exclusive: true,
                },
            }
        }
        Some(Value::Bool(true)) => Bound {
            value: inclusive?,
            exclusive: true,
        },
        _ => Bound {
            value: inclusive?,
            exclusive: false,
        },
    };
    if !integer {
        return Some(bound);
    }
    let value = match (end, bound.exclusive) {
        (End::Lower, true) => bound.value.floor() + 1.0,
        (End::Lower, false) => bound.value.ceil(),
        (End::Upper, true) => bound.value.ceil() - 1.0,
        (End::Upper, false) => bound.value.floor(),
    };
    Some(Bound {
        value,
        exclusive: false,
    })
}

/// How a bound moved: `Some(true)` tighter, `Some(false)` looser.
fn lower_moved(b: Option<Bound>, a: Option<Bound>) -> Option<(bool, bool)> {
    match (b, a) {
        (None, None) => None,
        (None, Some(_)) => Some((true, true)),
        (Some(_), None) => Some((false, false)),
        (Some(x), Some(y)) if x == y => None,
        (Some(x), Some(y)) => {
            let tighter = y.value > x.value || (y.value == x.value && y.exclusive);
            Some((tighter, false))
        }
    }
}

fn upper_moved(b: Option<Bound>, a: Option<Bound>) -> Option<(bool, bool)> {
    match (b, a) {
        (None, None) => None,
        (None, Some(_)) => Some((true, true)),
        (Some(_), None) => Some((false, false)),
        (Some(x), Some(y)) if x == y => None,
        (Some(x), Some(y)) => {
            let tighter = y.value < x.value || (y.value == x.value && y.exclusive);
            Some((tighter, false))
        }
    }
}

/// A bound keyword that moved: (keyword, tighter, newly set, before, after).
type BoundMove = (String, bool, bool, Option<Value>, Option<Value>);

/// `format` pairs where the first is contained in the second.
const FORMAT_CONTAINMENT: [(&str, &str); 3] = [
    ("int32", "int64"),
    ("float", "double"),
    ("date", "date-time"),
];

/// Argument names whose default decides what a call does.
const DECISIVE_DEFAULT_NAMES: [&str; 7] = [
    "limit", "page", "size", "confirm", "force", "dryrun", "count",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Openness {
    Open,
    Closed,
    Schema,
}

fn openness(v: Option<&Value>) -> Openness {
    match v {
        None | Some(Value::Bool(true)) => Openness::Open,
        Some(Value::Bool(false)) => Openness::Closed,
        Some(Value::Object(m)) if m.is_empty() => Openness::Open,
        Some(_) => Openness::Schema,
    }
}

fn string_set(v: Option<&Value>) -> BTreeSet<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl Walker<'_, '_> {
    fn push(
        &mut self,
        rule: &'static Rule,
        pointer: &str,
        message: String,
        b: Option<&Value>,
        a: Option<&Value>,
    ) -> &mut Finding {
        debug_assert!(
            self.may_emit(rule),
            "the {:?} schema walk emitted {}, which no family it speaks for lists",
            self.dir,
            rule.id
        );
        // Past the budget the finding is kept without its values (the walk
        // stops and the caller drops it), so the values are never cloned.
        let (b, a) = if self.budget.take_finding(b, a) {
            (b, a)
        } else {
            (None, None)
        };
        let message = match self.on_path.last() {
            // Said where the change is, since the pointer is the place
            // that refers to it.
            Some((rb, ra)) if rb == ra => format!("{message} (in definition {rb})"),
            Some((rb, ra)) if ra.is_empty() => {
                format!("{message} (in definition {rb}, inlined now)")
            }
            Some((rb, ra)) if rb.is_empty() => format!("{message} (now in definition {ra})"),
            Some((rb, ra)) => format!("{message} (in definition {rb}, now {ra})"),
            None => message,
        };
        let f = Finding::new(rule, self.ctx.server, self.ctx.tool, pointer.to_string())
            .message(format!("{}: {message}", self.ctx.tool))
            .values(b, a);
        self.out.push(f);
        let last = self.out.len() - 1;
        &mut self.out[last]
    }

    fn input(&self) -> bool {
        self.dir == Direction::Input
    }

    /// The rules this walk may emit: its direction's family (input or
    /// output), the schema-prose family, and the tool family's generic
    /// fallbacks. Checked in debug builds at every push, so every fixture
    /// run asserts that an inputSchema never yields an output rule.
    fn may_emit(&self, rule: &Rule) -> bool {
        let own = match self.dir {
            Direction::Input => &crate::rules::INPUT_FAMILY,
            Direction::Output => &crate::rules::OUTPUT_FAMILY,
        };
        own.has(rule.id)
            || crate::rules::PROPERTY_FAMILY.has(rule.id)
            || SCHEMA_FALLBACKS.iter().any(|r| r.id == rule.id)
    }

    fn walk(&mut self, ptr: &str, b: &Value, a: &Value, prop: Option<&str>, depth: usize) {
        if self.budget.is_exceeded() {
            return;
        }
        // The same text can hold a `$ref` whose definition changed: it is
        // unchanged only when it refers to nothing.
        if same(b, a) && !(self.has_refs && holds_ref(b)) {
            return;
        }
        let (rb, ra) = match (resolve(&self.refs_b, b), resolve(&self.refs_a, a)) {
            (Ok(rb), Ok(ra)) => (rb, ra),
            // The same text pointing nowhere on both sides: nothing moved.
            (Err(_), Err(_)) if same(b, a) => return,
            (Err(r), _) | (_, Err(r)) => {
                self.push(
                    &rule::SCHEMA_UNANALYZABLE,
                    ptr,
                    format!("{ptr} changed and holds a reference that cannot be followed: {r}"),
                    Some(b),
                    Some(a),
                );
                return;
            }
        };
        let key = (rb.1.is_some() || ra.1.is_some()).then(|| {
            (
                rb.1.clone().unwrap_or_default(),
                ra.1.clone().unwrap_or_default(),
            )
        });
        let Some(key) = key else {
            return self.walk_resolved(ptr, b, a, rb.0, ra.0, prop, depth);
        };
        // Siblings beside a `$ref` change what it means at that place only,
        // so only a bare reference is remembered as clean.
        let bare = bare_ref(b) && bare_ref(a);
        if self.on_path.contains(&key) || (bare && self.clean.contains(&key)) {
            return;
        }
        self.on_path.push(key);
        let found = self.out.len();
        self.walk_resolved(ptr, b, a, rb.0, ra.0, prop, depth);
        if let Some(key) = self.on_path.pop() {
            if bare && self.out.len() == found && !self.budget.is_exceeded() {
                self.clean.insert(key);
            }
        }
    }

    /// [`Self::walk`] once references are resolved: `rb`/`ra` are what `b`
    /// and `a` refer to (themselves without a `$ref`).
    #[allow(clippy::too_many_arguments)]
    fn walk_resolved(
        &mut self,
        ptr: &str,
        b: &Value,
        a: &Value,
        rb: &Value,
        ra: &Value,
        prop: Option<&str>,
        depth: usize,
    ) {
        if depth > MAX_DEPTH {
            self.push(
                &rule::SCHEMA_UNANALYZABLE,
                ptr,
                format!("{ptr} changed deeper than {MAX_DEPTH} schema levels"),
                Some(b),
                Some(a),
            );
            return;
        }
        let (Some(sb), Some(sa)) = (as_schema(rb), as_schema(ra)) else {
            if !same(rb, ra) {
                self.push(
                    &rule::SCHEMA_UNANALYZABLE,
                    ptr,
                    format!("{ptr} is not a schema and changed"),
                    Some(b),
                    Some(a),
                );
            }
            return;
        };
        // Siblings of a `$ref` (2019-09 and later) count alongside its target.
        let sb = merge_siblings(b, sb);
        let sa = merge_siblings(a, sa);
        // A schema wrapped into a union (or unwrapped from one) is compared
        // as the one-branch union it was: its branch is paired with the
        // matching one, so what it accepts is compared across branches
        // rather than read as its keywords deleted.
        if let Some(wrapped) = wrapped_as_union(&sb, &sa) {
            return self.compare(ptr, &wrapped, &sa, prop, depth);
        }
        if let Some(wrapped) = wrapped_as_union(&sa, &sb) {
            // The after side has no union: its branch is the schema at
            // `ptr` itself.
            self.unwrapped_after = Some(ptr.to_string());
            self.compare(ptr, &sb, &wrapped, prop, depth);
            self.unwrapped_after = None;
            return;
        }
        self.compare(ptr, &sb, &sa, prop, depth);
    }

    fn compare(
        &mut self,
        ptr: &str,
        sb: &Map<String, Value>,
        sa: &Map<String, Value>,
        prop: Option<&str>,
        depth: usize,
    ) {
        // A length lookahead at the start of a pattern (`^(?=.{1,253}$)…`)
        // is a length bound: compared as `minLength`/`maxLength`, so moving
        // it into those keywords is a rewrite, not a tightening.
        let (lb, la) = (lookahead_as_bounds(sb), lookahead_as_bounds(sa));
        if lb.is_some() || la.is_some() {
            let nb = lb.unwrap_or_else(|| sb.clone());
            let na = la.unwrap_or_else(|| sa.clone());
            let length = |s: &Map<String, Value>| {
                ["pattern", "minLength", "maxLength"].map(|k| s.get(k).cloned())
            };
            if length(&nb) == length(&na) && length(sb) != length(sa) {
                let at = format!("{ptr}/pattern");
                self.push(
                    &rule::EQUIVALENT_REWRITE,
                    &at,
                    format!("{ptr} length bound moved between its pattern and minLength/maxLength"),
                    sb.get("pattern"),
                    sa.get("pattern"),
                );
            }
            return self.compare(ptr, &nb, &na, prop, depth);
        }
        let mut handled: BTreeSet<&str> = BTreeSet::new();
        self.prose(ptr, sb, sa, &mut handled);
        self.deprecated(ptr, sb, sa, &mut handled);
        self.types(ptr, sb, sa, &mut handled);
        self.enums(ptr, sb, sa, &mut handled);
        self.format_and_pattern(ptr, sb, sa, &mut handled);
        self.bounds(ptr, sb, sa, &mut handled);
        self.default(ptr, sb, sa, prop, &mut handled);
        self.object(ptr, sb, sa, depth, &mut handled);
        self.arrays(ptr, sb, sa, depth, &mut handled);
        self.unions(ptr, sb, sa, depth, &mut handled);
        // Everything else, member by member.
        let keys: BTreeSet<&String> = sb.keys().chain(sa.keys()).collect();
        for key in keys {
            let k = key.as_str();
            if handled.contains(k) || CONTAINERS.contains(&k) || k == "$ref" {
                continue;
            }
            let (vb, va) = (sb.get(k), sa.get(k));
            if vb.zip(va).is_some_and(|(x, y)| same(x, y)) || (vb.is_none() && va.is_none()) {
                continue;
            }
            let at = format!("{ptr}/{}", escape_token(k));
            if k == "propertyNames" && names_any(vb) && names_any(va) {
                self.push(
                    &rule::EQUIVALENT_REWRITE,
                    &at,
                    format!("`propertyNames` at {ptr} rewritten; it allows every name either way"),
                    vb,
                    va,
                );
            } else if UNANALYZABLE.contains(&k) {
                self.push(
                    &rule::SCHEMA_UNANALYZABLE,
                    &at,
                    format!("`{k}` changed at {ptr}; toolpin cannot judge what it accepts"),
                    vb,
                    va,
                );
            } else if k == "$schema" {
                self.push(
                    &rule::EQUIVALENT_REWRITE,
                    &at,
                    format!("$schema dialect changed at {ptr}"),
                    vb,
                    va,
                );
            } else {
                self.push(&rule::FIELD_CHANGED, &at, format!("{at} changed"), vb, va);
            }
        }
    }

    fn prose(
        &mut self,
        ptr: &str,
        sb: &Map<String, Value>,
        sa: &Map<String, Value>,
        handled: &mut BTreeSet<&'static str>,
    ) {
        for key in PROSE {
            handled.insert(key);
            let (vb, va) = (sb.get(key), sa.get(key));
            if vb == va {
                continue;
            }
            let at = format!("{ptr}/{key}");
            let what = if vb.is_none() {
                "added"
            } else if va.is_none() {
                "removed"
            } else {
                "changed"
            };
            let cues = crate::prose::cues_for(vb, va, self.ctx.names, self.ctx.tool);
            let message = match crate::prose::inline_diff(vb, va) {
                Some(inline) => format!("{at} {inline}"),
                None => format!("{at} {what}"),
            };
            let f = self.push(&rule::PROPERTY_DESCRIPTION_CHANGED, &at, message, vb, va);
            if crate::prose::whitespace_only(vb, va) {
                f.severity = Severity::Low;
            }
            if !cues.is_empty() {
                f.severity = Severity::Critical;
                f.security = true;
                f.message = format!("{} ({})", f.message, cues.join("; "));
            }
        }
    }

    fn deprecated(
        &mut self,
        ptr: &str,
        sb: &Map<String, Value>,
        sa: &Map<String, Value>,
        handled: &mut BTreeSet<&'static str>,
    ) {
        handled.insert("deprecated");
        let on = |s: &Map<String, Value>| s.get("deprecated") == Some(&Value::Bool(true));
        let (vb, va) = (sb.get("deprecated"), sa.get("deprecated"));
        if vb == va {
            return;
        }
        let at = format!("{ptr}/deprecated");
        if !on(sb) && on(sa) {
            self.push(
                &rule::PROPERTY_DEPRECATED,
                &at,
                format!("{ptr} is now deprecated"),
                vb,
                va,
            );
        } else if on(sb) != on(sa) {
            self.push(
                &rule::FIELD_CHANGED,
                &at,
                format!("{ptr} is no longer deprecated"),
                vb,
                va,
            );
        }
        // Otherwise `deprecated: false` spelled out or dropped: no change.
    }

    fn types(
        &mut self,
        ptr: &str,
        sb: &Map<String, Value>,
        sa: &Map<String, Value>,
        handled: &mut BTreeSet<&'static str>,
    ) {
        handled.insert("type");
        handled.insert("nullable");
        let (tb, ta) = (types(sb), types(sa));
        if tb == ta {
            return;
        }
        let at = format!("{ptr}/type");
        let show = |t: &Types| match t {
            None => "any type".to_string(),
            Some(s) => s.iter().cloned().collect::<Vec<_>>().join(" | "),
        };
        let message = format!("{ptr} type {} → {}", show(&tb), show(&ta));
        let (vb, va) = (sb.get("type"), sa.get("type"));
        let removed = match &tb {
            None => ta.is_some(),
            Some(s) => s.iter().any(|t| !covers(&ta, t)),
        };
        let added = match &ta {
            None => tb.is_some(),
            Some(s) => s.iter().any(|t| !covers(&tb, t)),
        };
        let disjoint = match (&tb, &ta) {
            (Some(x), Some(y)) => {
                !x.iter().any(|t| covers(&ta, t)) && !y.iter().any(|t| covers(&tb, t))
            }
            _ => false,
        };
        let rule: &'static Rule = match (self.dir, disjoint, removed, added) {
            (Direction::Input, true, _, _) => &rule::INPUT_TYPE_CHANGED,
            (Direction::Input, false, true, _) => &rule::INPUT_TYPE_NARROWED,
            (Direction::Input, false, false, _) => &rule::INPUT_TYPE_WIDENED,
            (Direction::Output, true, _, _) => &rule::OUTPUT_TYPE_CHANGED,
            (Direction::Output, false, _, true) => &rule::OUTPUT_TYPE_WIDENED,
            // Fewer types may come back: safe, but not the same text.
            (Direction::Output, false, _, false) => &rule::FIELD_CHANGED,
        };
        self.push(rule, &at, message, vb, va);
    }

    fn enums(
        &mut self,
        ptr: &str,
        sb: &Map<String, Value>,
        sa: &Map<String, Value>,
        handled: &mut BTreeSet<&'static str>,
    ) {
        handled.insert("enum");
        handled.insert("const");
        let (eb, ea) = (enum_values(sb), enum_values(sa));
        let at = format!(
            "{ptr}/{}",
            if sa.contains_key("const") || sb.contains_key("const") {
                "const"
            } else {
                "enum"
            }
        );
        let canon = |v: &Value| jcs::to_canonical_vec(v);
        match (&eb, &ea) {
            (None, None) => {}
            (None, Some(a)) => {
                let (rule, msg): (&'static Rule, String) = match self.dir {
                    Direction::Input => (
                        &rule::INPUT_ENUM_VALUE_REMOVED,
                        format!("{ptr} now accepts only {}", join_values(a.iter())),
                    ),
                    Direction::Output => (
                        &rule::FIELD_CHANGED,
                        format!("{ptr} now returns only {}", join_values(a.iter())),
                    ),
                };
                let va = Value::Array(a.clone());
                self.push(rule, &at, msg, None, Some(&va));
            }
            (Some(b), None) => {
                let rule: &'static Rule = match self.dir {
                    Direction::Input => &rule::INPUT_ENUM_VALUE_ADDED,
                    Direction::Output => &rule::OUTPUT_ENUM_VALUE_ADDED,
                };
                let vb = Value::Array(b.clone());
                let writes = self.ctx.writes && self.input();
                self.push(
                    rule,
                    &at,
                    format!("{ptr} is no longer limited to {}", join_values(b.iter())),
                    Some(&vb),
                    None,
                )
                .security = writes;
            }
            (Some(b), Some(a)) => {
                let setb: BTreeMap<Vec<u8>, &Value> = b.iter().map(|v| (canon(v), v)).collect();
                let seta: BTreeMap<Vec<u8>, &Value> = a.iter().map(|v| (canon(v), v)).collect();
                let removed: Vec<&Value> = setb
                    .iter()
                    .filter(|(k, _)| !seta.contains_key(*k))
                    .map(|(_, v)| *v)
                    .collect();
                let added: Vec<&Value> = seta
                    .iter()
                    .filter(|(k, _)| !setb.contains_key(*k))
                    .map(|(_, v)| *v)
                    .collect();
                let (vb, va) = (Value::Array(b.clone()), Value::Array(a.clone()));
                if !removed.is_empty() {
                    let rule: &'static Rule = match self.dir {
                        Direction::Input => &rule::INPUT_ENUM_VALUE_REMOVED,
                        Direction::Output => &rule::OUTPUT_ENUM_VALUE_REMOVED,
                    };
                    self.push(
                        rule,
                        &at,
                        format!("{ptr} loses {}", join_values(removed.into_iter())),
                        Some(&vb),
                        Some(&va),
                    );
                }
                if !added.is_empty() {
                    let rule: &'static Rule = match self.dir {
                        Direction::Input => &rule::INPUT_ENUM_VALUE_ADDED,
                        Direction::Output => &rule::OUTPUT_ENUM_VALUE_ADDED,
                    };
                    let writes = self.ctx.writes && self.input();
                    self.push(
                        rule,
                        &at,
                        format!("{ptr} gains {}", join_values(added.into_iter())),
                        Some(&vb),
                        Some(&va),
                    )
                    .security = writes;
                }
            }
        }
    }

    fn format_and_pattern(
        &mut self,
        ptr: &str,
        sb: &Map<String, Value>,
        sa: &Map<String, Value>,
        handled: &mut BTreeSet<&'static str>,
    ) {
        handled.insert("format");
        handled.insert("pattern");
        let (fb, fa) = (sb.get("format"), sa.get("format"));
        if fb != fa {
            let at = format!("{ptr}/format");
            let (sb_, sa_) = (fb.and_then(Value::as_str), fa.and_then(Value::as_str));
            let widening =
                matches!((sb_, sa_), (Some(x), Some(y)) if FORMAT_CONTAINMENT.contains(&(x, y)));
            let narrowing =
                matches!((sb_, sa_), (Some(x), Some(y)) if FORMAT_CONTAINMENT.contains(&(y, x)));
            let rule: &'static Rule = match (self.dir, widening, narrowing) {
                (Direction::Input, true, _) => &rule::INPUT_BOUND_RELAXED,
                (Direction::Input, _, true) => &rule::INPUT_BOUND_TIGHTENED,
                (Direction::Input, _, _) => &rule::INPUT_FORMAT_CHANGED,
                (Direction::Output, true, _) => &rule::OUTPUT_BOUND_RELAXED,
                (Direction::Output, _, true) => &rule::FIELD_CHANGED,
                (Direction::Output, _, _) => &rule::OUTPUT_FORMAT_CHANGED,
            };
            let show = |v: Option<&Value>| v.map(short).unwrap_or_else(|| "none".into());
            self.push(
                rule,
                &at,
                format!("{ptr} format {} → {}", show(fb), show(fa)),
                fb,
                fa,
            );
        }
        let (pb, pa) = (sb.get("pattern"), sa.get("pattern"));
        if pb != pa {
            let at = format!("{ptr}/pattern");
            let rule: &'static Rule = match (self.dir, pa.is_none()) {
                (Direction::Input, true) => &rule::INPUT_BOUND_RELAXED,
                (Direction::Input, false) => &rule::INPUT_PATTERN_CHANGED,
                (Direction::Output, true) => &rule::OUTPUT_BOUND_RELAXED,
                (Direction::Output, false) => &rule::OUTPUT_FORMAT_CHANGED,
            };
            let show = |v: Option<&Value>| v.map(short).unwrap_or_else(|| "none".into());
            self.push(
                rule,
                &at,
                format!("{ptr} pattern {} → {}", show(pb), show(pa)),
                pb,
                pa,
            );
        }
    }

    fn bounds(
        &mut self,
        ptr: &str,
        sb: &Map<String, Value>,
        sa: &Map<String, Value>,
        handled: &mut BTreeSet<&'static str>,
    ) {
        for k in [
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
        ] {
            handled.insert(k);
        }
        let integer = |s: &Map<String, Value>| {
            types(s).is_some_and(|t| t.len() == 1 && t.contains("integer"))
        };
        let (ib, ia) = (integer(sb), integer(sa));
        let mut moves: Vec<BoundMove> = Vec::new();
        // The bound as written: the keyword that holds it (`minimum`, or
        // OpenAPI 3.1's numeric `exclusiveMinimum`) and its value; both
        // members when a schema spells it with two (draft 4's boolean
        // `exclusiveMinimum` beside `minimum`).
        let numeric = |s: &Map<String, Value>, lo: bool| -> (Option<&'static str>, Option<Value>) {
            let (plain, exclusive) = if lo {
                ("minimum", "exclusiveMinimum")
            } else {
                ("maximum", "exclusiveMaximum")
            };
            match (s.get(plain), s.get(exclusive)) {
                (None, None) => (None, None),
                (Some(v), None) => (Some(plain), Some(v.clone())),
                (None, Some(v)) => (Some(exclusive), Some(v.clone())),
                (Some(p), Some(e)) => (
                    Some(plain),
                    Some(serde_json::json!({ plain: p.clone(), exclusive: e.clone() })),
                ),
            }
        };
        // Reported at the keyword the after side uses (the before side's
        // when the bound is gone): a pointer into one of the two tools.
        let moved = |lo: bool, tighter: bool, new: bool| -> BoundMove {
            let ((kb, vb), (ka, va)) = (numeric(sb, lo), numeric(sa, lo));
            let fallback = if lo { "minimum" } else { "maximum" };
            let keyword = ka.or(kb).unwrap_or(fallback);
            (keyword.to_string(), tighter, new, vb, va)
        };
        if let Some((tighter, new)) = lower_moved(
            numeric_bound(sb, ib, End::Lower),
            numeric_bound(sa, ia, End::Lower),
        ) {
            moves.push(moved(true, tighter, new));
        }
        if let Some((tighter, new)) = upper_moved(
            numeric_bound(sb, ib, End::Upper),
            numeric_bound(sa, ia, End::Upper),
        ) {
            moves.push(moved(false, tighter, new));
        }
        for (lo, hi) in [
            ("minLength", "maxLength"),
            ("minItems", "maxItems"),
            ("minProperties", "maxProperties"),
        ] {
            handled.insert(lo);
            handled.insert(hi);
            let get = |s: &Map<String, Value>, k: &str| {
                s.get(k).and_then(Value::as_f64).map(|v| Bound {
                    value: v,
                    exclusive: false,
                })
            };
            if let Some((t, n)) = lower_moved(get(sb, lo), get(sa, lo)) {
                moves.push((
                    lo.to_string(),
                    t,
                    n,
                    sb.get(lo).cloned(),
                    sa.get(lo).cloned(),
                ));
            }
            if let Some((t, n)) = upper_moved(get(sb, hi), get(sa, hi)) {
                moves.push((
                    hi.to_string(),
                    t,
                    n,
                    sb.get(hi).cloned(),
                    sa.get(hi).cloned(),
                ));
            }
        }
        let (mb, ma) = (
            sb.get("multipleOf").and_then(Value::as_f64),
            sa.get("multipleOf").and_then(Value::as_f64),
        );
        if mb != ma {
            let tighter = match (mb, ma) {
                (None, Some(_)) => Some((true, true)),
                (Some(_), None) => Some((false, false)),
                (Some(x), Some(y)) if y != 0.0 => Some(((x / y).fract() != 0.0, false)),
                _ => None,
            };
            if let Some((t, n)) = tighter {
                moves.push((
                    "multipleOf".into(),
                    t,
                    n,
                    sb.get("multipleOf").cloned(),
                    sa.get("multipleOf").cloned(),
                ));
            }
        }
        // Bounds spelled differently with the same effect (exclusiveMaximum
        // 1000000 for maximum 999999 on an integer).
        let numeric_keys = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];
        let spelled_differently = numeric_keys.iter().any(|k| sb.get(*k) != sa.get(*k));
        let moved_numeric = moves.iter().any(|m| numeric_keys.contains(&m.0.as_str()));
        if spelled_differently && !moved_numeric {
            let pick = |s: &Map<String, Value>| -> Value {
                Value::Object(
                    numeric_keys
                        .iter()
                        .filter_map(|k| s.get(*k).map(|v| (k.to_string(), v.clone())))
                        .collect(),
                )
            };
            let (vb, va) = (pick(sb), pick(sa));
            self.push(
                &rule::EQUIVALENT_REWRITE,
                ptr,
                format!("{ptr} bounds rewritten with the same effect"),
                Some(&vb),
                Some(&va),
            );
        }
        for (keyword, tighter, newly_set, vb, va) in moves {
            let at = format!("{ptr}/{keyword}");
            let show = |v: &Option<Value>| v.as_ref().map(short).unwrap_or_else(|| "none".into());
            let message = format!("{ptr} {keyword} {} → {}", show(&vb), show(&va));
            let upper = keyword.starts_with("max") || keyword == "exclusiveMaximum";
            match (self.dir, tighter) {
                (Direction::Input, true) => {
                    let sev = if newly_set {
                        Severity::Medium
                    } else {
                        Severity::High
                    };
                    self.push(
                        &rule::INPUT_BOUND_TIGHTENED,
                        &at,
                        message,
                        vb.as_ref(),
                        va.as_ref(),
                    )
                    .severity = sev;
                }
                (Direction::Input, false) => {
                    self.push(
                        &rule::INPUT_BOUND_RELAXED,
                        &at,
                        message,
                        vb.as_ref(),
                        va.as_ref(),
                    );
                }
                // Results may be larger (an upper bound loosened) or smaller.
                (Direction::Output, false)
                    if upper
                        || keyword == "multipleOf"
                        || keyword == "minimum"
                        || keyword == "exclusiveMinimum" =>
                {
                    self.push(
                        &rule::OUTPUT_BOUND_RELAXED,
                        &at,
                        message,
                        vb.as_ref(),
                        va.as_ref(),
                    );
                }
                (Direction::Output, _) => {
                    if !tighter {
                        self.push(
                            &rule::OUTPUT_BOUND_RELAXED,
                            &at,
                            message,
                            vb.as_ref(),
                            va.as_ref(),
                        );
                    } else {
                        self.push(&rule::FIELD_CHANGED, &at, message, vb.as_ref(), va.as_ref());
                    }
                }
            }
        }
        // Bounds spelled differently with the same effect (exclusiveMaximum
        // 1000000 for maximum 999999 on an integer): the catch-all at the
        // tool level reports the rewrite.
    }

    fn default(
        &mut self,
        ptr: &str,
        sb: &Map<String, Value>,
        sa: &Map<String, Value>,
        prop: Option<&str>,
        handled: &mut BTreeSet<&'static str>,
    ) {
        handled.insert("default");
        let (db, da) = (sb.get("default"), sa.get("default"));
        if db.zip(da).is_some_and(|(x, y)| same(x, y)) || (db.is_none() && da.is_none()) {
            return;
        }
        let at = format!("{ptr}/default");
        let show = |v: Option<&Value>| v.map(short).unwrap_or_else(|| "none".into());
        let message = format!("{ptr} default {} → {}", show(db), show(da));
        if self.input() {
            let boolean = db.is_some_and(Value::is_boolean) || da.is_some_and(Value::is_boolean);
            let name = prop
                .unwrap_or("")
                .to_ascii_lowercase()
                .replace(['_', '-'], "");
            let decisive = DECISIVE_DEFAULT_NAMES.iter().any(|n| name.contains(n));
            let sev = if boolean || decisive {
                Severity::High
            } else {
                Severity::Medium
            };
            self.push(&rule::INPUT_DEFAULT_CHANGED, &at, message, db, da)
                .severity = sev;
        } else {
            self.push(&rule::FIELD_CHANGED, &at, message, db, da);
        }
    }

    fn object(
        &mut self,
        ptr: &str,
        sb: &Map<String, Value>,
        sa: &Map<String, Value>,
        depth: usize,
        handled: &mut BTreeSet<&'static str>,
    ) {
        handled.insert("properties");
        handled.insert("required");
        handled.insert("additionalProperties");
        let empty = Map::new();
        let pb = sb
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let pa = sa
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let (rb, ra) = (
            string_set(sb.get("required")),
            string_set(sa.get("required")),
        );
        let closed_after = openness(sa.get("additionalProperties")) == Openness::Closed;
        let first_finding = self.out.len();
        let renames = match property_renames(pb, pa) {
            Ok(renames) => renames,
            Err((removed, added)) => {
                self.budget.exceed(Exceeded::RenamePairs {
                    at: ptr.to_string(),
                    removed,
                    added,
                });
                return;
            }
        };
        let keys: BTreeSet<&String> = pb
            .keys()
            .chain(pa.keys())
            .chain(rb.iter())
            .chain(ra.iter())
            .collect();
        for key in keys {
            if self.budget.is_exceeded() {
                return;
            }
            let at = format!("{ptr}/properties/{}", escape_token(key));
            let (vb, va) = (pb.get(key.as_str()), pa.get(key.as_str()));
            let (req_b, req_a) = (rb.contains(key.as_str()), ra.contains(key.as_str()));
            match (vb, va) {
                (Some(x), None) => {
                    if self.input() {
                        if closed_after {
                            let deprecated = x.get("deprecated") == Some(&Value::Bool(true));
                            let f = self.push(&rule::INPUT_PROPERTY_REMOVED, &at, format!("argument `{key}` removed (the object is closed: calls passing it are rejected)"), Some(x), None);
                            if deprecated {
                                f.severity = Severity::Medium;
                            }
                        } else {
                            self.push(&rule::INPUT_PROPERTY_SILENTLY_IGNORED, &at, format!("argument `{key}` removed from an open object: calls passing it are accepted and it is ignored"), Some(x), None);
                        }
                    } else if req_b {
                        self.push(
                            &rule::OUTPUT_REQUIRED_PROPERTY_REMOVED,
                            &at,
                            format!("result field `{key}` removed (it was guaranteed)"),
                            Some(x),
                            None,
                        );
                    } else {
                        self.push(
                            &rule::OUTPUT_OPTIONAL_PROPERTY_REMOVED,
                            &at,
                            format!("result field `{key}` removed"),
                            Some(x),
                            None,
                        );
                    }
                    continue;
                }
                (None, Some(y)) => {
                    if self.input() {
                        if req_a {
                            let has_default = y.get("default").is_some();
                            let f = self.push(
                                &rule::INPUT_REQUIRED_PROPERTY_ADDED,
                                &at,
                                format!("new required argument `{key}`"),
                                None,
                                Some(y),
                            );
                            if has_default {
                                f.severity = Severity::Medium;
                            }
                        } else {
                            let writes = self.ctx.writes;
                            let f = self.push(
                                &rule::INPUT_OPTIONAL_PROPERTY_ADDED,
                                &at,
                                format!("new optional argument `{key}`"),
                                None,
                                Some(y),
                            );
                            if writes {
                                f.severity = Severity::Medium;
                            }
                        }
                    } else {
                        self.push(
                            &rule::OUTPUT_PROPERTY_ADDED,
                            &at,
                            format!("new result field `{key}`"),
                            None,
                            Some(y),
                        );
                    }
                    continue;
                }
                (Some(x), Some(y)) => self.walk(&at, x, y, Some(key), depth + 1),
                (None, None) => {}
            }
            let req_at = format!("{ptr}/required");
            match (self.dir, req_b, req_a) {
                (Direction::Input, false, true) => {
                    let has_default = va.and_then(|v| v.get("default")).is_some();
                    let f = self.push(
                        &rule::INPUT_REQUIRED_PROPERTY_ADDED,
                        &req_at,
                        format!("argument `{key}` became required"),
                        sb.get("required"),
                        sa.get("required"),
                    );
                    if has_default {
                        f.severity = Severity::Medium;
                    }
                }
                (Direction::Input, true, false) => {
                    self.push(
                        &rule::INPUT_PROPERTY_BECAME_OPTIONAL,
                        &req_at,
                        format!(
                            "argument `{key}` is no longer required: the agent may stop passing it"
                        ),
                        sb.get("required"),
                        sa.get("required"),
                    );
                }
                (Direction::Output, true, false) => {
                    self.push(
                        &rule::OUTPUT_REQUIRED_PROPERTY_REMOVED,
                        &req_at,
                        format!("result field `{key}` is no longer guaranteed"),
                        sb.get("required"),
                        sa.get("required"),
                    );
                }
                (Direction::Output, false, true) => {
                    self.push(
                        &rule::FIELD_CHANGED,
                        &req_at,
                        format!("result field `{key}` is now guaranteed"),
                        sb.get("required"),
                        sa.get("required"),
                    );
                }
                _ => {}
            }
        }
        // A removed and an added property that match closely are reported
        // as they are (the call still breaks or changes), with the likely
        // rename named. Looked up by pointer: one pass over the findings,
        // not one per rename. A removed name and an added one are never the
        // same key, so a finding gets at most one note.
        if !renames.is_empty() {
            let mut notes: HashMap<String, String> = HashMap::with_capacity(2 * renames.len());
            for (old, new) in &renames {
                let property = |name: &str| format!("{ptr}/properties/{}", escape_token(name));
                notes.insert(property(old), format!(" (looks renamed to `{new}`)"));
                notes.insert(property(new), format!(" (looks renamed from `{old}`)"));
            }
            for f in &mut self.out[first_finding..] {
                if let Some(note) = notes.get(&f.pointer) {
                    f.message.push_str(note);
                }
            }
        }
        // The same set of required keys written differently (an empty
        // `required` dropped).
        if rb == ra && sb.get("required") != sa.get("required") {
            let at = format!("{ptr}/required");
            self.push(
                &rule::EQUIVALENT_REWRITE,
                &at,
                format!("{at} rewritten with the same keys"),
                sb.get("required"),
                sa.get("required"),
            );
        }
        // additionalProperties
        let (ab, aa) = (
            sb.get("additionalProperties"),
            sa.get("additionalProperties"),
        );
        let (ob, oa) = (openness(ab), openness(aa));
        let at = format!("{ptr}/additionalProperties");
        match (ob, oa) {
            (Openness::Schema, Openness::Schema) => {
                if let (Some(x), Some(y)) = (ab, aa) {
                    self.walk(&at, x, y, None, depth + 1);
                }
            }
            (x, y) if x == y => {}
            (Openness::Open, _) | (Openness::Schema, Openness::Closed) => {
                let rule: &'static Rule = if self.input() {
                    &rule::INPUT_ADDITIONAL_PROPERTIES_CLOSED
                } else {
                    &rule::FIELD_CHANGED
                };
                self.push(
                    rule,
                    &at,
                    format!("{ptr} no longer accepts undeclared keys"),
                    ab,
                    aa,
                );
            }
            (Openness::Closed, _) | (Openness::Schema, Openness::Open) => {
                let rule: &'static Rule = if self.input() {
                    &rule::INPUT_BOUND_RELAXED
                } else {
                    &rule::OUTPUT_ADDITIONAL_PROPERTIES_OPENED
                };
                self.push(
                    rule,
                    &at,
                    format!("{ptr} now allows undeclared keys"),
                    ab,
                    aa,
                );
            }
        }
    }

    fn arrays(
        &mut self,
        ptr: &str,
        sb: &Map<String, Value>,
        sa: &Map<String, Value>,
        depth: usize,
        handled: &mut BTreeSet<&'static str>,
    ) {
        handled.insert("items");
        handled.insert("prefixItems");
        handled.insert("additionalItems");
        // `items` as one schema.
        match (sb.get("items"), sa.get("items")) {
            (
                Some(x @ (Value::Object(_) | Value::Bool(_))),
                Some(y @ (Value::Object(_) | Value::Bool(_))),
            ) => {
                self.walk(&format!("{ptr}/items"), x, y, None, depth + 1);
            }
            // `items` appearing or going with the type (a scalar parameter
            // that became an array): the type change says it all; there
            // were no items to compare on the side that cannot be an array.
            (x, y)
                if x != y
                    && !(x.is_some_and(Value::is_array) || y.is_some_and(Value::is_array))
                    && can_be_array(sb)
                    && can_be_array(sa) =>
            {
                let at = format!("{ptr}/items");
                let (x, y) = (
                    x.unwrap_or(&Value::Bool(true)),
                    y.unwrap_or(&Value::Bool(true)),
                );
                self.walk(&at, x, y, None, depth + 1);
            }
            _ => {}
        }
        // Tuples: `prefixItems`, or the old array form of `items`.
        for key in ["prefixItems", "items"] {
            let (tb, ta) = (
                sb.get(key).and_then(Value::as_array),
                sa.get(key).and_then(Value::as_array),
            );
            if tb.is_none() && ta.is_none() {
                continue;
            }
            let (tb, ta) = (
                tb.cloned().unwrap_or_default(),
                ta.cloned().unwrap_or_default(),
            );
            for i in 0..tb.len().max(ta.len()) {
                let at = format!("{ptr}/{key}/{i}");
                let t = Value::Bool(true);
                self.walk(
                    &at,
                    tb.get(i).unwrap_or(&t),
                    ta.get(i).unwrap_or(&t),
                    None,
                    depth + 1,
                );
            }
        }
        if sb.get("additionalItems") != sa.get("additionalItems")
            || (self.has_refs && sb.get("additionalItems").is_some_and(holds_ref))
        {
            let t = Value::Bool(true);
            let (x, y) = (
                sb.get("additionalItems").unwrap_or(&t),
                sa.get("additionalItems").unwrap_or(&t),
            );
            self.walk(&format!("{ptr}/additionalItems"), x, y, None, depth + 1);
        }
    }

    fn unions(
        &mut self,
        ptr: &str,
        sb: &Map<String, Value>,
        sa: &Map<String, Value>,
        depth: usize,
        handled: &mut BTreeSet<&'static str>,
    ) {
        for key in ["anyOf", "oneOf", "allOf"] {
            handled.insert(key);
            let (bb, ba) = (
                sb.get(key).and_then(Value::as_array),
                sa.get(key).and_then(Value::as_array),
            );
            // Branches that read the same can still refer to a definition
            // that changed.
            if bb == ba && !(self.has_refs && bb.is_some_and(|v| v.iter().any(holds_ref))) {
                continue;
            }
            let (bb, ba) = (
                bb.cloned().unwrap_or_default(),
                ba.cloned().unwrap_or_default(),
            );
            // Paired by what each branch means: a branch behind a `$ref`
            // and the same branch written inline are one branch.
            let Some(pairs) = pair_branches(
                &resolved_branches(&self.refs_b, &bb),
                &resolved_branches(&self.refs_a, &ba),
            ) else {
                self.budget.exceed(Exceeded::BranchPairs {
                    at: format!("{ptr}/{key}"),
                    before: bb.len(),
                    after: ba.len(),
                });
                return;
            };
            let mut matched_b = vec![false; bb.len()];
            let mut matched_a = vec![false; ba.len()];
            let unwrapped = self.unwrapped_after.take().is_some_and(|at| at == ptr);
            for (i, j) in &pairs {
                matched_b[*i] = true;
                matched_a[*j] = true;
                let at = if unwrapped {
                    ptr.to_string()
                } else {
                    format!("{ptr}/{key}/{j}")
                };
                self.walk(&at, &bb[*i], &ba[*j], None, depth + 1);
            }
            let conjunction = key == "allOf";
            for (i, m) in matched_b.iter().enumerate() {
                if *m {
                    continue;
                }
                let at = format!("{ptr}/{key}/{i}");
                let rule: &'static Rule = match (self.dir, conjunction) {
                    (Direction::Input, false) => &rule::INPUT_UNION_BRANCH_REMOVED,
                    (Direction::Input, true) => &rule::INPUT_BOUND_RELAXED,
                    (Direction::Output, false) => &rule::FIELD_CHANGED,
                    (Direction::Output, true) => &rule::OUTPUT_UNION_BRANCH_ADDED,
                };
                let what = if conjunction { "condition" } else { "branch" };
                self.push(
                    rule,
                    &at,
                    format!("{key} {what} #{i} removed at {ptr}"),
                    Some(&bb[i]),
                    None,
                );
            }
            for (j, m) in matched_a.iter().enumerate() {
                if *m {
                    continue;
                }
                let at = format!("{ptr}/{key}/{j}");
                let rule: &'static Rule = match (self.dir, conjunction) {
                    (Direction::Input, false) => &rule::INPUT_UNION_BRANCH_ADDED,
                    (Direction::Input, true) => &rule::INPUT_UNION_BRANCH_REMOVED,
                    (Direction::Output, false) => &rule::OUTPUT_UNION_BRANCH_ADDED,
                    (Direction::Output, true) => &rule::FIELD_CHANGED,
                };
                let what = if conjunction { "condition" } else { "branch" };
                self.push(
                    rule,
                    &at,
                    format!("{key} {what} #{j} added at {ptr}"),
                    None,
                    Some(&ba[j]),
                );
            }
        }
    }
}

/// Similarity a removed and an added property need to be named a rename:
/// higher than for tools, since two small undocumented properties already
/// share their empty descriptions.
const PROPERTY_RENAME_THRESHOLD: f64 = 0.8;

/// Likely renames among an object's properties: (old name, new name).
/// `Err((removed, added))` when matching them would score more than
/// [`MAX_RENAME_PAIRS`] pairs: the matcher's work grows with their product.
fn property_renames(
    pb: &Map<String, Value>,
    pa: &Map<String, Value>,
) -> Result<Vec<(String, String)>, (usize, usize)> {
    use crate::rename::{match_renames, Candidate};
    let removed: Vec<Candidate> = pb
        .iter()
        .filter(|(k, _)| !pa.contains_key(*k))
        .map(|(k, v)| Candidate { name: k, value: v })
        .collect();
    let added: Vec<Candidate> = pa
        .iter()
        .filter(|(k, _)| !pb.contains_key(*k))
        .map(|(k, v)| Candidate { name: k, value: v })
        .collect();
    if removed.is_empty() || added.is_empty() {
        return Ok(Vec::new());
    }
    if removed.len().saturating_mul(added.len()) > MAX_RENAME_PAIRS {
        return Err((removed.len(), added.len()));
    }
    Ok(match_renames(&removed, &added, PROPERTY_RENAME_THRESHOLD)
        .into_iter()
        .map(|(i, j, _)| (removed[i].name.to_string(), added[j].name.to_string()))
        .collect())
}

/// A `$ref` with siblings: the target's keywords, overridden by the
/// siblings (2019-09 semantics, close enough for comparing). Without a
/// `$ref` the schema is used as it is, not copied: a copy at every level
/// costs the size of the schema times its depth.
fn merge_siblings<'m>(
    orig: &Value,
    resolved: Cow<'m, Map<String, Value>>,
) -> Cow<'m, Map<String, Value>> {
    let Some(o) = orig.as_object().filter(|o| o.contains_key("$ref")) else {
        return resolved;
    };
    let mut merged = resolved.into_owned();
    for (k, v) in o {
        if k != "$ref" {
            merged.insert(k.clone(), v.clone());
        }
    }
    Cow::Owned(merged)
}

/// What each branch is, once a `$ref` is followed (a reference that cannot
/// be followed stands for itself).
fn resolved_branches<'v>(refs: &Resolver<'v>, branches: &'v [Value]) -> Vec<&'v Value> {
    branches
        .iter()
        .map(|x| resolve(refs, x).map_or(x, |(target, _)| target))
        .collect()
}

/// Pairs union branches by best match, not by index: identical branches
/// first (each with the first unused identical one after), then by a
/// structural distance, greedily in a deterministic order. `None` when the
/// branches left unpaired are too many to compare pairwise
/// ([`MAX_BRANCH_PAIRS`]).
fn pair_branches(b: &[&Value], a: &[&Value]) -> Option<Vec<(usize, usize)>> {
    let mut pairs = Vec::new();
    let mut used_a = vec![false; a.len()];
    let mut used_b = vec![false; b.len()];
    // Identical means the same canonical text (what `same` compares), so
    // they are found through a map, not by comparing every pair.
    let mut identical: HashMap<Vec<u8>, std::collections::VecDeque<usize>> = HashMap::new();
    for (j, y) in a.iter().enumerate() {
        identical
            .entry(jcs::to_canonical_vec(y))
            .or_default()
            .push_back(j);
    }
    for (i, x) in b.iter().enumerate() {
        if let Some(j) = identical
            .get_mut(&jcs::to_canonical_vec(x))
            .and_then(|js| js.pop_front())
        {
            used_a[j] = true;
            used_b[i] = true;
            pairs.push((i, j));
        }
    }
    let left_b = used_b.iter().filter(|u| !**u).count();
    let left_a = used_a.iter().filter(|u| !**u).count();
    if left_b.saturating_mul(left_a) > MAX_BRANCH_PAIRS {
        return None;
    }
    // By discriminator first (a property whose one allowed value names
    // the branch: `type: {const: "merge_queue"}`), then by title, then by
    // structure; branches whose discriminators or titles differ are not
    // the same branch, whatever else they share.
    let (disc_b, disc_a): (Vec<_>, Vec<_>) = (
        b.iter().map(|x| discriminators(x)).collect(),
        a.iter().map(|y| discriminators(y)).collect(),
    );
    let mut candidates: Vec<(u8, usize, usize, usize)> = Vec::new();
    for (i, x) in b.iter().enumerate().filter(|(i, _)| !used_b[*i]) {
        for (j, y) in a.iter().enumerate().filter(|(j, _)| !used_a[*j]) {
            let (db, da) = (&disc_b[i], &disc_a[j]);
            let shared: Vec<&String> = db.keys().filter(|k| da.contains_key(*k)).collect();
            let rank = if !shared.is_empty() {
                if shared.iter().any(|k| db[*k] != da[*k]) {
                    continue;
                }
                0
            } else {
                match (title(x), title(y)) {
                    (Some(tx), Some(ty)) if tx != ty => continue,
                    (Some(_), Some(_)) => 1,
                    _ => 2,
                }
            };
            if let Some(d) = distance(x, y) {
                candidates.push((rank, d, i, j));
            }
        }
    }
    candidates.sort();
    for (_, _, i, j) in candidates {
        if !used_b[i] && !used_a[j] {
            used_b[i] = true;
            used_a[j] = true;
            pairs.push((i, j));
        }
    }
    pairs.sort();
    Some(pairs)
}

/// The properties of a branch that each allow one value (`const`, or an
/// `enum` of one): what tells the branches of a tagged union apart.
fn discriminators(branch: &Value) -> BTreeMap<String, Value> {
    let Some(props) = branch.get("properties").and_then(Value::as_object) else {
        return BTreeMap::new();
    };
    props
        .iter()
        .filter_map(|(k, v)| {
            let one = v.get("const").cloned().or_else(|| {
                v.get("enum")
                    .and_then(Value::as_array)
                    .filter(|e| e.len() == 1)
                    .map(|e| e[0].clone())
            })?;
            Some((k.clone(), one))
        })
        .collect()
}

fn title(branch: &Value) -> Option<&str> {
    branch.get("title").and_then(Value::as_str)
}

/// Members that differ between two branch schemas; `None` when they cannot
/// be the same branch (different types, or nothing in common).
fn distance(x: &Value, y: &Value) -> Option<usize> {
    let (Some(mx), Some(my)) = (x.as_object(), y.as_object()) else {
        return None;
    };
    if types(mx) != types(my) && types(mx).is_some() && types(my).is_some() {
        return None;
    }
    let keys: BTreeSet<&String> = mx.keys().chain(my.keys()).collect();
    let differing = keys
        .iter()
        .filter(|k| mx.get(k.as_str()) != my.get(k.as_str()))
        .count();
    (differing < keys.len() || keys.is_empty()).then_some(differing)
}
