//! Bound, format and pattern rules: numeric and length bounds compared by
//! their effect, `format` (a contained format is a bound) and `pattern`.
//! The checks are [`Walker::format_and_pattern`] and [`Walker::bounds`];
//! [`Walker::input_bound_relaxed`] is how other families report that an
//! input accepts more.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::rule::{Family, Rule, Severity};
use crate::rules::tool;
use crate::schema::{short, types, Direction, Walker};

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
    pub(crate) fn format_and_pattern(
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
                (Direction::Input, true, _) => &INPUT_BOUND_RELAXED,
                (Direction::Input, _, true) => &INPUT_BOUND_TIGHTENED,
                (Direction::Input, _, _) => &INPUT_FORMAT_CHANGED,
                (Direction::Output, true, _) => &OUTPUT_BOUND_RELAXED,
                (Direction::Output, _, true) => &tool::FIELD_CHANGED,
                (Direction::Output, _, _) => &OUTPUT_FORMAT_CHANGED,
            };
            let show = |v: Option<&Value>| v.map(short).unwrap_or_else(|| "none".into());
            self.push(
                FAMILY,
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
                (Direction::Input, true) => &INPUT_BOUND_RELAXED,
                (Direction::Input, false) => &INPUT_PATTERN_CHANGED,
                (Direction::Output, true) => &OUTPUT_BOUND_RELAXED,
                (Direction::Output, false) => &OUTPUT_FORMAT_CHANGED,
            };
            let show = |v: Option<&Value>| v.map(short).unwrap_or_else(|| "none".into());
            self.push(
                FAMILY,
                rule,
                &at,
                format!("{ptr} pattern {} → {}", show(pb), show(pa)),
                pb,
                pa,
            );
        }
    }

    /// The numeric bounds by effect at each end, the length, item and
    /// property counts, and `multipleOf`; a newly set input bound is medium.
    pub(crate) fn bounds(
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
                FAMILY,
                &tool::EQUIVALENT_REWRITE,
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
                        FAMILY,
                        &INPUT_BOUND_TIGHTENED,
                        &at,
                        message,
                        vb.as_ref(),
                        va.as_ref(),
                    )
                    .severity = sev;
                }
                (Direction::Input, false) => {
                    self.push(
                        FAMILY,
                        &INPUT_BOUND_RELAXED,
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
                        FAMILY,
                        &OUTPUT_BOUND_RELAXED,
                        &at,
                        message,
                        vb.as_ref(),
                        va.as_ref(),
                    );
                }
                (Direction::Output, _) => {
                    if !tighter {
                        self.push(
                            FAMILY,
                            &OUTPUT_BOUND_RELAXED,
                            &at,
                            message,
                            vb.as_ref(),
                            va.as_ref(),
                        );
                    } else {
                        self.push(
                            FAMILY,
                            &tool::FIELD_CHANGED,
                            &at,
                            message,
                            vb.as_ref(),
                            va.as_ref(),
                        );
                    }
                }
            }
        }
        // Bounds spelled differently with the same effect (exclusiveMaximum
        // 1000000 for maximum 999999 on an integer): the catch-all at the
        // tool level reports the rewrite.
    }
}
