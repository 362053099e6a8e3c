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
//!
//! This file is the walk only: the context, [`Walker::push`], the
//! recursion (properties, items, branches), `$ref` resolution, union
//! pairing ([`pair`]) and the helpers several families share. What each
//! keyword's change means is decided in its family's file under
//! `src/rules/` (types, enums, bounds, default, object, unions, property,
//! unanalyzable), as `impl Walker` blocks beside the rule records; the
//! walk calls them in [`Walker::compare`].

mod pair;

pub(crate) use pair::pair_branches;

use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet};

use serde_json::{Map, Value};
use toolpin_manifest::jcs;
use toolpin_manifest::pointer::escape_token;
use toolpin_manifest::schema::{RefError, Resolver};

use crate::budget::Budget;
use crate::finding::Finding;
use crate::rule::{Family, Rule};
use crate::rules::tool::{self, TOOL_FAMILY};
use crate::rules::unanalyzable;

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
pub(crate) const MAX_DEPTH: usize = 64;

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

/// The place a schema pair is compared at, handed to each family's
/// keyword check: the pointer, the two schemas, the property they describe
/// (for `default`) and the nesting depth (for recursion).
#[derive(Clone, Copy)]
pub(crate) struct Site<'s> {
    pub(crate) ptr: &'s str,
    pub(crate) sb: &'s Map<String, Value>,
    pub(crate) sa: &'s Map<String, Value>,
    pub(crate) prop: Option<&'s str>,
    pub(crate) depth: usize,
}

/// One schema comparison in progress. The family files under `src/rules/`
/// extend it with their keyword checks.
pub(crate) struct Walker<'a, 'o> {
    pub(crate) ctx: &'a Context<'a>,
    pub(crate) dir: Direction,
    pub(crate) refs_b: Resolver<'a>,
    pub(crate) refs_a: Resolver<'a>,
    /// Whether either side holds a `$ref` anywhere: when neither does, a
    /// subschema whose text is unchanged is unchanged.
    pub(crate) has_refs: bool,
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
    pub(crate) unwrapped_after: Option<String>,
    pub(crate) budget: &'o mut Budget,
    pub(crate) out: &'o mut Vec<Finding>,
}

/// Keywords compared by following references, not as text.
const CONTAINERS: [&str; 2] = ["$defs", "definitions"];
/// Prose the model reads inside a schema. `example` is OpenAPI 3.0's
/// singular form, kept by the conversion and read like `examples`.
pub(crate) const PROSE: [&str; 5] = ["description", "title", "examples", "example", "$comment"];

pub(crate) fn same(a: &Value, b: &Value) -> bool {
    a == b || jcs::to_canonical_vec(a) == jcs::to_canonical_vec(b)
}

pub(crate) fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        s.chars().take(77).collect::<String>() + "…"
    } else {
        s
    }
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
    let outside = |k: &str| {
        PROSE.contains(&k) || matches!(k, "default" | "deprecated" | "$schema" | "nullable")
    };
    if union.keys().any(|k| k != key && !outside(k)) {
        return None;
    }
    // A member stays outside only where `union` has it outside too: a
    // description or `example` the union's branch holds is compared with
    // the branch's, not reported added at the union and removed inside it.
    let (kept, branch): (Map<String, Value>, Map<String, Value>) = plain
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .partition(|(k, _)| outside(k) && union.contains_key(k));
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
pub(crate) fn holds_ref(v: &Value) -> bool {
    match v {
        Value::Object(o) => {
            o.get("$ref").is_some_and(Value::is_string) || o.values().any(holds_ref)
        }
        Value::Array(items) => items.iter().any(holds_ref),
        _ => false,
    }
}

pub(crate) type Types = Option<BTreeSet<String>>;

/// The type set (shared with the proxy: `toolpin_manifest::schema::type_set`).
pub(crate) fn types(s: &Map<String, Value>) -> Types {
    toolpin_manifest::schema::type_set(s)
}

impl Walker<'_, '_> {
    /// Appends a finding that `family`'s check decided: every push names
    /// the family whose file holds it. In debug builds (every test run,
    /// over every fixture) it asserts that the rule is the family's own or
    /// one of the tool family's fallbacks ([`tool::FALLBACKS`]), and that
    /// it fits the walk's direction ([`Self::may_emit`]).
    #[inline]
    pub(crate) fn push(
        &mut self,
        family: &'static Family,
        rule: &'static Rule,
        pointer: &str,
        message: String,
        b: Option<&Value>,
        a: Option<&Value>,
    ) -> &mut Finding {
        debug_assert!(
            family.has(rule.id) || tool::FALLBACKS.iter().any(|r| r.id == rule.id),
            "family {} emitted {}, which is neither in its list nor a fallback",
            family.name,
            rule.id
        );
        debug_assert!(
            self.may_emit(rule),
            "the {:?} schema walk emitted {}, a rule of the other direction",
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

    pub(crate) fn input(&self) -> bool {
        self.dir == Direction::Input
    }

    /// Whether this walk may emit `rule`: the schema families hold rules of
    /// both directions, and their ids say which (`input-…` is an
    /// inputSchema verdict, `output-…` an outputSchema one; the others,
    /// prose and the unanalyzable, fit both). Checked in debug builds at
    /// every push, so every fixture run asserts that an inputSchema never
    /// yields an output rule.
    fn may_emit(&self, rule: &Rule) -> bool {
        let other = match self.dir {
            Direction::Input => "output-",
            Direction::Output => "input-",
        };
        !rule.id.starts_with(other)
    }

    pub(crate) fn walk(
        &mut self,
        ptr: &str,
        b: &Value,
        a: &Value,
        prop: Option<&str>,
        depth: usize,
    ) {
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
            (Err(r), _) | (_, Err(r)) => return self.unfollowable_ref(ptr, &r, b, a),
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
            return self.too_deep(ptr, b, a);
        }
        let (Some(sb), Some(sa)) = (as_schema(rb), as_schema(ra)) else {
            if !same(rb, ra) {
                self.not_a_schema(ptr, b, a);
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

    /// One schema against the other, keyword by keyword: each family's
    /// check in turn (the order of the findings), then whatever no family
    /// claimed.
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
                    &TOOL_FAMILY,
                    &tool::EQUIVALENT_REWRITE,
                    &at,
                    format!("{ptr} length bound moved between its pattern and minLength/maxLength"),
                    sb.get("pattern"),
                    sa.get("pattern"),
                );
            }
            return self.compare(ptr, &nb, &na, prop, depth);
        }
        // Each family's checks (rules/<family>.rs), in the order their
        // findings come; each marks the keywords it claims as handled.
        let site = Site {
            ptr,
            sb,
            sa,
            prop,
            depth,
        };
        let mut handled: BTreeSet<&str> = BTreeSet::new();
        self.prose(&site, &mut handled); // property
        self.deprecated(&site, &mut handled); // property
        self.types(&site, &mut handled); // types
        self.enums(&site, &mut handled); // enums
        self.format_and_pattern(&site, &mut handled); // bounds
        self.bounds(&site, &mut handled); // bounds
        self.default(&site, &mut handled); // default
        self.object(&site, &mut handled); // object
        self.arrays(&site, &mut handled); // the walk: recursion only
        self.unions(&site, &mut handled); // unions
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
            // Pushed through the tool family: its generic rules are the
            // walk's own fallbacks.
            if k == "propertyNames" && names_any(vb) && names_any(va) {
                self.push(
                    &TOOL_FAMILY,
                    &tool::EQUIVALENT_REWRITE,
                    &at,
                    format!("`propertyNames` at {ptr} rewritten; it allows every name either way"),
                    vb,
                    va,
                );
            } else if unanalyzable::unjudged(k) {
                self.unjudged_keyword_changed(ptr, &at, k, vb, va);
            } else if k == "$schema" {
                self.push(
                    &TOOL_FAMILY,
                    &tool::EQUIVALENT_REWRITE,
                    &at,
                    format!("$schema dialect changed at {ptr}"),
                    vb,
                    va,
                );
            } else {
                let message = format!("{at} changed");
                self.push(&TOOL_FAMILY, &tool::FIELD_CHANGED, &at, message, vb, va);
            }
        }
    }

    /// `items`, `prefixItems` and `additionalItems`: recursion only, no
    /// rule of its own; what changed inside an item schema is judged there.
    fn arrays(&mut self, site: &Site, handled: &mut BTreeSet<&'static str>) {
        let Site {
            ptr, sb, sa, depth, ..
        } = *site;
        handled.extend(["items", "prefixItems", "additionalItems"]);
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

/// A union's branches, with a nested union that means the same as its
/// branches spliced in (`anyOf` in `anyOf`, `allOf` in `allOf`, a `oneOf`
/// that is a `oneOf`'s only branch, a union of one branch), also behind a
/// `$ref`: each with its place below the union's keyword (`"1"`, or
/// `"0/oneOf/1"` when spliced). Regrouping branches is then no change.
/// Only a nested union with nothing beside it (but a `discriminator`) is
/// spliced: a title or a constraint there would be lost.
pub(crate) fn regrouped(
    refs: &Resolver<'_>,
    key: &str,
    branches: &[Value],
) -> Vec<(String, Value)> {
    const MAX_DEPTH: usize = 8;
    let mut out = Vec::new();
    let mut stack: Vec<(String, &Value, usize)> = branches
        .iter()
        .enumerate()
        .rev()
        .map(|(i, b)| (i.to_string(), b, 0))
        .collect();
    let only = branches.len() == 1;
    while let Some((at, branch, depth)) = stack.pop() {
        let target = resolve(refs, branch).map_or(branch, |(t, _)| t);
        let nested = target.as_object().and_then(|o| {
            let mut keys = o.keys().filter(|k| *k != "discriminator");
            let inner = keys.next()?;
            if keys.next().is_some() || !matches!(inner.as_str(), "anyOf" | "oneOf" | "allOf") {
                return None;
            }
            let inner_branches = o[inner].as_array().filter(|b| !b.is_empty())?;
            let same_meaning = inner_branches.len() == 1
                || (inner == key && (key != "oneOf" || (only && depth == 0)));
            same_meaning.then_some((inner.as_str(), inner_branches))
        });
        match nested {
            Some((inner, inner_branches)) if depth < MAX_DEPTH => {
                for (k, b) in inner_branches.iter().enumerate().rev() {
                    stack.push((format!("{at}/{inner}/{k}"), b, depth + 1));
                }
            }
            _ => out.push((at, branch.clone())),
        }
    }
    out
}

/// What each branch is for pairing: its `$ref` followed (a reference that
/// cannot be followed stands for itself), and an `allOf` of parts (a base
/// schema beside the branch's own members, as OpenAPI and Pydantic compose
/// them) read as one object, so that a composed branch's discriminator and
/// members are seen. The walk still compares the branches as written.
pub(crate) fn pairing_views<'v>(
    refs: &Resolver<'v>,
    branches: &'v [(String, Value)],
) -> Vec<Cow<'v, Value>> {
    branches
        .iter()
        .map(|(_, x)| composed(refs, resolve(refs, x).map_or(x, |(target, _)| target), 0))
        .collect()
}

/// `schema` with its `allOf` parts (each `$ref` followed, nested `allOf`
/// too, to a small depth) merged into one object: properties and
/// `required` united, any other keyword taken from the first that has it.
fn composed<'v>(refs: &Resolver<'v>, schema: &'v Value, depth: usize) -> Cow<'v, Value> {
    const MAX_DEPTH: usize = 8;
    let (Some(own), Some(parts)) = (
        schema.as_object(),
        schema.get("allOf").and_then(Value::as_array),
    ) else {
        return Cow::Borrowed(schema);
    };
    if depth >= MAX_DEPTH {
        return Cow::Borrowed(schema);
    }
    let mut merged = Map::new();
    merge_part(&mut merged, own);
    for part in parts {
        let part = composed(
            refs,
            resolve(refs, part).map_or(part, |(t, _)| t),
            depth + 1,
        );
        if let Some(members) = part.as_object() {
            merge_part(&mut merged, members);
        }
    }
    Cow::Owned(Value::Object(merged))
}

fn merge_part(merged: &mut Map<String, Value>, part: &Map<String, Value>) {
    for (key, value) in part.iter().filter(|(k, _)| *k != "allOf") {
        match (merged.get_mut(key), value) {
            (Some(Value::Object(have)), Value::Object(more)) if key == "properties" => {
                for (name, schema) in more {
                    have.entry(name.clone()).or_insert_with(|| schema.clone());
                }
            }
            (Some(Value::Array(have)), Value::Array(more)) if key == "required" => {
                for name in more {
                    if !have.contains(name) {
                        have.push(name.clone());
                    }
                }
            }
            (Some(_), _) => {}
            (None, _) => {
                merged.insert(key.clone(), value.clone());
            }
        }
    }
}
