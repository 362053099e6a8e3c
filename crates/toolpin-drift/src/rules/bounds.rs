//! Bound, format and pattern rules: numeric and length bounds compared by
//! their effect, `format` (a contained format is a bound) and `pattern`.
//! The checks are [`Walker::format_and_pattern`] and [`Walker::bounds`];
//! [`Walker::input_bound_relaxed`] is how other families report that an
//! input accepts more.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::finding::Finding;
use crate::rule::{Family, Rule, Severity};
use crate::rules::tool;
use crate::schema::{short, types, Direction, Site, Walker};

crate::rules! {
    family BOUNDS_RULES, BOUNDS_FAMILY: "bounds", "Bound, format and pattern rules";
    intro: "Numeric and length bounds (`minimum`/`maximum` and their exclusive forms, `multipleOf`, `minLength`/`maxLength`, `minItems`/`maxItems`, `minProperties`/`maxProperties`), `format` and `pattern`. Bounds are compared by their effect, so an exclusive bound spelled as an inclusive one is a rewrite, not a change, and a format contained in another (int32 in int64) counts as a bound. Inputs break when a bound tightens; outputs grow when one relaxes. Other families report a relaxation of what an input accepts (an object opened, an `allOf` condition dropped) through this family.";
    INPUT_BOUND_TIGHTENED {
        id: "input-bound-tightened",
        since: "0.1.0",
        summary: "a minimum rose, a maximum fell, a bound was newly set, or multipleOf no longer divides the old one",
        breaks: "Arguments in the cut range are rejected (medium when the bound is new).",
        kind: Structural, severity: High,
        rerun: ["assertions"],
        example: "`page_size` maximum 100 → 50",
    }
    INPUT_BOUND_RELAXED {
        id: "input-bound-relaxed",
        since: "0.1.0",
        summary: "a bound was loosened or removed",
        breaks: "Nothing breaks; larger or looser values become possible.",
        kind: Semantic, severity: Info,
        rerun: [],
        example: "`page_size` maximum 50 → 100",
    }
    INPUT_FORMAT_CHANGED {
        id: "input-format-changed",
        since: "0.1.0",
        summary: "`format` added, removed or changed (containment such as int32 → int64 is a relaxation instead)",
        breaks: "Values the agent formats one way are now expected another way (date vs date-time, email).",
        kind: Semantic, severity: Medium,
        rerun: ["assertions"],
        example: "`since` changes from `format: date-time` to `format: date`",
    }
    INPUT_PATTERN_CHANGED {
        id: "input-pattern-changed",
        since: "0.1.0",
        summary: "`pattern` added or changed",
        breaks: "Arguments that matched the old pattern may be rejected.",
        kind: Structural, severity: Medium,
        rerun: ["assertions"],
        example: "`order_id` gains `pattern: \"^ORD-[0-9]+$\"`",
    }
    OUTPUT_BOUND_RELAXED {
        id: "output-bound-relaxed",
        since: "0.1.0",
        summary: "larger or unbounded results",
        breaks: "More tokens reach the context window; budgets may no longer hold.",
        kind: Semantic, severity: Medium,
        rerun: ["consumers", "budget"],
        example: "`items` maxItems 50 → unbounded",
    }
    OUTPUT_FORMAT_CHANGED {
        id: "output-format-changed",
        since: "0.1.0",
        summary: "`format` or `pattern` of a result value changed",
        breaks: "The same field now means something else (a country name becomes an ISO code).",
        kind: Semantic, severity: High,
        rerun: ["consumers", "trajectory"],
        example: "`created` changes from `date` to `date-time`",
    }
}

// The checks, the only code that emits this family's rules (and the tool
// family's fallbacks: a bound rewritten with the same effect, an output
// that got narrower).

/// The family this file's pushes are attributed to.
const FAMILY: &Family = &BOUNDS_FAMILY;

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

impl End {
    /// The inclusive and the exclusive keyword of this end.
    fn keys(self) -> (&'static str, &'static str) {
        match self {
            End::Lower => ("minimum", "exclusiveMinimum"),
            End::Upper => ("maximum", "exclusiveMaximum"),
        }
    }
}

/// The keywords of a numeric range.
const NUMERIC_KEYS: [&str; 4] = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];

/// The count keywords, lower and upper: inclusive bounds on a length, a
/// number of items, a number of properties.
const COUNT_KEYS: [(&str, &str); 3] = [
    ("minLength", "maxLength"),
    ("minItems", "maxItems"),
    ("minProperties", "maxProperties"),
];

/// The effective bound at one end: `minimum`/`maximum` and the exclusive
/// keyword (a number, or draft 4's boolean beside the inclusive one),
/// whichever is tighter; on an integer schema rounded to the inclusive
/// integer bound, so `exclusiveMaximum: 1000000` equals `maximum: 999999`.
fn numeric_bound(s: &Map<String, Value>, integer: bool, end: End) -> Option<Bound> {
    let (inclusive_key, exclusive_key) = end.keys();
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

/// How a bound moved at `end`: `Some((tighter, newly set))`, or `None`
/// when its effect is the same.
fn bound_moved(end: End, b: Option<Bound>, a: Option<Bound>) -> Option<(bool, bool)> {
    match (b, a) {
        (None, None) => None,
        (None, Some(_)) => Some((true, true)),
        (Some(_), None) => Some((false, false)),
        (Some(x), Some(y)) if x == y => None,
        (Some(x), Some(y)) => {
            let further = match end {
                End::Lower => y.value > x.value,
                End::Upper => y.value < x.value,
            };
            Some((further || (y.value == x.value && y.exclusive), false))
        }
    }
}

/// A bound keyword that moved, with the values reported.
struct BoundMove {
    keyword: &'static str,
    tighter: bool,
    newly_set: bool,
    before: Option<Value>,
    after: Option<Value>,
}

impl BoundMove {
    /// A move of `keyword`, reported with its own values on each side.
    fn of(
        keyword: &'static str,
        (tighter, newly_set): (bool, bool),
        sb: &Map<String, Value>,
        sa: &Map<String, Value>,
    ) -> Self {
        BoundMove {
            keyword,
            tighter,
            newly_set,
            before: sb.get(keyword).cloned(),
            after: sa.get(keyword).cloned(),
        }
    }
}

/// The bound as written at one end: the keyword that holds it (`minimum`,
/// or OpenAPI 3.1's numeric `exclusiveMinimum`) and its value; both members
/// when a schema spells it with two (draft 4's boolean `exclusiveMinimum`
/// beside `minimum`).
fn written_bound(s: &Map<String, Value>, end: End) -> (Option<&'static str>, Option<Value>) {
    let (plain, exclusive) = end.keys();
    match (s.get(plain), s.get(exclusive)) {
        (None, None) => (None, None),
        (Some(v), None) => (Some(plain), Some(v.clone())),
        (None, Some(v)) => (Some(exclusive), Some(v.clone())),
        (Some(p), Some(e)) => (
            Some(plain),
            Some(serde_json::json!({ plain: p.clone(), exclusive: e.clone() })),
        ),
    }
}

/// The numeric range's ends that moved by effect, each reported at the
/// keyword the after side uses (the before side's when the bound is gone):
/// a pointer into one of the two tools.
fn numeric_moves(sb: &Map<String, Value>, sa: &Map<String, Value>, moves: &mut Vec<BoundMove>) {
    let integer =
        |s: &Map<String, Value>| types(s).is_some_and(|t| t.len() == 1 && t.contains("integer"));
    let (ib, ia) = (integer(sb), integer(sa));
    for end in [End::Lower, End::Upper] {
        let bounds = (numeric_bound(sb, ib, end), numeric_bound(sa, ia, end));
        let Some((tighter, newly_set)) = bound_moved(end, bounds.0, bounds.1) else {
            continue;
        };
        let ((kb, before), (ka, after)) = (written_bound(sb, end), written_bound(sa, end));
        moves.push(BoundMove {
            keyword: ka.or(kb).unwrap_or(end.keys().0),
            tighter,
            newly_set,
            before,
            after,
        });
    }
}

/// The length, item and property counts that moved, lower then upper.
fn count_moves(sb: &Map<String, Value>, sa: &Map<String, Value>, moves: &mut Vec<BoundMove>) {
    let count = |s: &Map<String, Value>, k: &str| {
        s.get(k).and_then(Value::as_f64).map(|value| Bound {
            value,
            exclusive: false,
        })
    };
    for (lo, hi) in COUNT_KEYS {
        for (end, k) in [(End::Lower, lo), (End::Upper, hi)] {
            if let Some(moved) = bound_moved(end, count(sb, k), count(sa, k)) {
                moves.push(BoundMove::of(k, moved, sb, sa));
            }
        }
    }
}

/// `multipleOf`: tighter when the new step is not a divisor of the old one.
fn multiple_of_move(sb: &Map<String, Value>, sa: &Map<String, Value>) -> Option<BoundMove> {
    let (mb, ma) = (
        sb.get("multipleOf").and_then(Value::as_f64),
        sa.get("multipleOf").and_then(Value::as_f64),
    );
    if mb == ma {
        return None;
    }
    let moved = match (mb, ma) {
        (None, Some(_)) => (true, true),
        (Some(_), None) => (false, false),
        (Some(x), Some(y)) if y != 0.0 => ((x / y).fract() != 0.0, false),
        _ => return None,
    };
    Some(BoundMove::of("multipleOf", moved, sb, sa))
}

/// `format` pairs where the first is contained in the second.
const FORMAT_CONTAINMENT: [(&str, &str); 3] = [
    ("int32", "int64"),
    ("float", "double"),
    ("date", "date-time"),
];

impl Walker<'_, '_> {
    /// An input that accepts more than before, found by another family's
    /// check (an object opened to undeclared keys, an `allOf` condition
    /// dropped): reported through this family, whose rule it is.
    pub(crate) fn input_bound_relaxed(
        &mut self,
        at: &str,
        message: String,
        b: Option<&Value>,
        a: Option<&Value>,
    ) {
        self.push(FAMILY, &INPUT_BOUND_RELAXED, at, message, b, a);
    }

    /// `format` and `pattern`: a contained format (int32 → int64) and a
    /// dropped pattern are relaxations, a containing one a tightening.
    pub(crate) fn format_and_pattern(&mut self, site: &Site, handled: &mut BTreeSet<&'static str>) {
        let Site { ptr, sb, sa, .. } = *site;
        handled.extend(["format", "pattern"]);
        let (fb, fa) = (sb.get("format"), sa.get("format"));
        if fb != fa {
            let (sb_, sa_) = (fb.and_then(Value::as_str), fa.and_then(Value::as_str));
            let widening =
                matches!((sb_, sa_), (Some(x), Some(y)) if FORMAT_CONTAINMENT.contains(&(x, y)));
            let narrowing =
                matches!((sb_, sa_), (Some(x), Some(y)) if FORMAT_CONTAINMENT.contains(&(y, x)));
            let rule: &'static Rule = match (self.dir, widening, narrowing) {
                (Direction::Input, true, _) => &INPUT_BOUND_RELAXED,
                (Direction::Input, _, true) => &INPUT_BOUND_TIGHTENED,
                (Direction::Input, _, _) => &INPUT_FORMAT_CHANGED,
                (Direction::Output, true, _) => &OUTPUT_BOUND_RELAXED,
                (Direction::Output, _, true) => &tool::FIELD_CHANGED,
                (Direction::Output, _, _) => &OUTPUT_FORMAT_CHANGED,
            };
            self.keyword_moved(ptr, "format", rule, fb, fa);
        }
        let (pb, pa) = (sb.get("pattern"), sa.get("pattern"));
        if pb != pa {
            let rule: &'static Rule = match (self.dir, pa.is_none()) {
                (Direction::Input, true) => &INPUT_BOUND_RELAXED,
                (Direction::Input, false) => &INPUT_PATTERN_CHANGED,
                (Direction::Output, true) => &OUTPUT_BOUND_RELAXED,
                (Direction::Output, false) => &OUTPUT_FORMAT_CHANGED,
            };
            self.keyword_moved(ptr, "pattern", rule, pb, pa);
        }
    }

    /// The numeric bounds by effect at each end, the length, item and
    /// property counts, and `multipleOf`; a newly set input bound is medium.
    pub(crate) fn bounds(&mut self, site: &Site, handled: &mut BTreeSet<&'static str>) {
        let Site { ptr, sb, sa, .. } = *site;
        handled.extend(NUMERIC_KEYS);
        handled.insert("multipleOf");
        handled.extend(COUNT_KEYS.iter().flat_map(|(lo, hi)| [*lo, *hi]));
        let mut moves = Vec::new();
        numeric_moves(sb, sa, &mut moves);
        count_moves(sb, sa, &mut moves);
        moves.extend(multiple_of_move(sb, sa));
        self.bounds_rewritten(ptr, sb, sa, &moves);
        for m in moves {
            self.bound_move(ptr, m);
        }
    }

    /// Numeric bounds spelled differently with the same effect
    /// (exclusiveMaximum 1000000 for maximum 999999 on an integer).
    fn bounds_rewritten(
        &mut self,
        ptr: &str,
        sb: &Map<String, Value>,
        sa: &Map<String, Value>,
        moves: &[BoundMove],
    ) {
        let spelled_differently = NUMERIC_KEYS.iter().any(|k| sb.get(*k) != sa.get(*k));
        let moved_numeric = moves.iter().any(|m| NUMERIC_KEYS.contains(&m.keyword));
        if !spelled_differently || moved_numeric {
            return;
        }
        let pick = |s: &Map<String, Value>| -> Value {
            Value::Object(
                NUMERIC_KEYS
                    .iter()
                    .filter_map(|k| s.get(*k).map(|v| (k.to_string(), v.clone())))
                    .collect(),
            )
        };
        let (vb, va) = (pick(sb), pick(sa));
        self.push(
            FAMILY,
            &tool::EQUIVALENT_REWRITE,
            ptr,
            format!("{ptr} bounds rewritten with the same effect"),
            Some(&vb),
            Some(&va),
        );
    }

    /// One moved bound, judged by direction: an input that accepts less
    /// breaks calls (medium when the bound is newly set), one that accepts
    /// more is a relaxation; results that may be larger or smaller are a
    /// relaxation, results held tighter a change.
    fn bound_move(&mut self, ptr: &str, m: BoundMove) {
        let (vb, va) = (m.before.as_ref(), m.after.as_ref());
        let rule: &'static Rule = match (self.dir, m.tighter) {
            (Direction::Input, true) => &INPUT_BOUND_TIGHTENED,
            (Direction::Input, false) => &INPUT_BOUND_RELAXED,
            (Direction::Output, false) => &OUTPUT_BOUND_RELAXED,
            (Direction::Output, true) => &tool::FIELD_CHANGED,
        };
        let f = self.keyword_moved(ptr, m.keyword, rule, vb, va);
        if rule.id == INPUT_BOUND_TIGHTENED.id {
            f.severity = if m.newly_set {
                Severity::Medium
            } else {
                Severity::High
            };
        }
    }

    /// A keyword of this family whose value moved, pushed as `rule` at
    /// `{ptr}/{keyword}` with both values shown.
    fn keyword_moved(
        &mut self,
        ptr: &str,
        keyword: &str,
        rule: &'static Rule,
        b: Option<&Value>,
        a: Option<&Value>,
    ) -> &mut Finding {
        let show = |v: Option<&Value>| v.map(short).unwrap_or_else(|| "none".into());
        let message = format!("{ptr} {keyword} {} → {}", show(b), show(a));
        self.push(FAMILY, rule, &format!("{ptr}/{keyword}"), message, b, a)
    }
}
