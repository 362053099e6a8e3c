//! Type rules: the `type` set of a schema, judged by direction. The check
//! is [`Walker::types`], called by the schema walk for every schema pair.

use std::collections::BTreeSet;

use crate::rule::{Family, Rule};
use crate::rules::tool;
use crate::schema::{types, Direction, Site, Types, Walker};

crate::rules! {
    family TYPES_RULES, TYPES_FAMILY: "types", "Type rules";
    intro: "The `type` set of a schema (a `type` array is a union, OpenAPI's `nullable: true` adds `null`). In an inputSchema a type leaving the set breaks calls; in an outputSchema a type joining it reaches consumers that never handled it. Sets that do not overlap at all are a change of type, the worst case in either direction.";
    INPUT_TYPE_NARROWED {
        id: "input-type-narrowed",
        since: "0.1.0",
        summary: "a type leaves the accepted set",
        breaks: "Arguments of the dropped type are rejected (number → integer, null no longer accepted).",
        kind: Structural, severity: High,
        rerun: ["assertions"],
        example: "`amount` goes from `number` to `integer`",
    }
    INPUT_TYPE_WIDENED {
        id: "input-type-widened",
        since: "0.1.0",
        summary: "a type is added to the accepted set",
        breaks: "Compatible on the wire; the model may start sending the new type.",
        kind: Semantic, severity: Low,
        rerun: ["assertions"],
        example: "`quantity` goes from `integer` to `number`",
    }
    INPUT_TYPE_CHANGED {
        id: "input-type-changed",
        since: "0.1.0",
        summary: "old and new type sets do not overlap",
        breaks: "Every call that passed this argument now fails validation.",
        kind: Structural, severity: Critical,
        rerun: ["assertions", "tool-cases"],
        example: "`customer_id` goes from `integer` to `string`",
    }
    OUTPUT_TYPE_WIDENED {
        id: "output-type-widened",
        since: "0.1.0",
        summary: "a new type may come back, including null",
        breaks: "Consumers meet a type they never handled.",
        kind: Structural, severity: High,
        rerun: ["consumers"],
        example: "`discount` becomes `[\"number\", \"null\"]`",
    }
    OUTPUT_TYPE_CHANGED {
        id: "output-type-changed",
        since: "0.1.0",
        summary: "old and new type sets do not overlap",
        breaks: "Every consumer of the field reads something else.",
        kind: Structural, severity: Critical,
        rerun: ["consumers", "tool-cases"],
        example: "`quantity` goes from integer to string",
    }
}

// The check, the only code that emits this family's rules (and, for an
// outputSchema that narrows, the tool family's `field-changed` fallback).

/// The family this file's pushes are attributed to.
const FAMILY: &Family = &TYPES_FAMILY;

/// Whether type `t` is accepted by `set` (`None` accepts all).
fn covers(set: &Types, t: &str) -> bool {
    match set {
        None => true,
        Some(s) => s.contains(t) || (t == "integer" && s.contains("number")),
    }
}

impl Walker<'_, '_> {
    /// `type` and `nullable`: how the set of accepted types moved.
    pub(crate) fn types(&mut self, site: &Site, handled: &mut BTreeSet<&'static str>) {
        let Site { ptr, sb, sa, .. } = *site;
        handled.extend(["type", "nullable"]);
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
            (Direction::Input, true, _, _) => &INPUT_TYPE_CHANGED,
            (Direction::Input, false, true, _) => &INPUT_TYPE_NARROWED,
            (Direction::Input, false, false, _) => &INPUT_TYPE_WIDENED,
            (Direction::Output, true, _, _) => &OUTPUT_TYPE_CHANGED,
            (Direction::Output, false, _, true) => &OUTPUT_TYPE_WIDENED,
            // Fewer types may come back: safe, but not the same text.
            (Direction::Output, false, _, false) => &tool::FIELD_CHANGED,
        };
        self.push(FAMILY, rule, &at, message, vb, va);
    }
}
