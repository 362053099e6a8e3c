//! Union rules: branches of `anyOf`/`oneOf` (and conjuncts of `allOf`)
//! added or removed. The check is [`Walker::unions`]: it pairs the
//! branches (schema/pair.rs), walks each pair, and judges the rest.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::budget::Exceeded;
use crate::rule::{Family, Rule};
use crate::rules::tool;
use crate::schema::{holds_ref, pair_branches, pairing_views, regrouped, Direction, Site, Walker};

crate::rules! {
    family UNIONS_RULES, UNIONS_FAMILY: "unions", "Union rules";
    intro: "The branches of `anyOf`, `oneOf` and `allOf`, paired by what each branch means (a discriminator, a title, then structure), not by position, so reordering them or moving one behind a `$ref` is no finding. An input branch gone rejects the arguments that matched only it; an output branch added is a shape consumers never saw. An `allOf` works the other way round: each conjunct constrains, so one added narrows.";
    INPUT_UNION_BRANCH_REMOVED {
        id: "input-union-branch-removed",
        since: "0.1.0",
        summary: "an anyOf/oneOf branch dropped, or an allOf conjunct added",
        breaks: "Arguments that matched only the dropped branch are rejected.",
        kind: Structural, severity: High,
        rerun: ["assertions"],
        example: "`target` no longer accepts the `{\"email\": …}` branch",
    }
    INPUT_UNION_BRANCH_ADDED {
        id: "input-union-branch-added",
        since: "0.1.0",
        summary: "an anyOf/oneOf branch added",
        breaks: "Compatible; the model may start using the new shape.",
        kind: Semantic, severity: Low,
        rerun: ["assertions"],
        example: "`target` also accepts `{\"phone\": …}`",
    }
    OUTPUT_UNION_BRANCH_ADDED {
        id: "output-union-branch-added",
        since: "0.1.0",
        summary: "a new anyOf/oneOf branch may come back",
        breaks: "Consumers meet a shape they never handled.",
        kind: Structural, severity: High,
        rerun: ["consumers"],
        example: "results may also be `{\"error\": …}`",
    }
}

// The check, the only code that emits this family's rules (and the tool
// family's `field-changed` fallback for an output that got narrower).

/// The family this file's pushes are attributed to.
const FAMILY: &Family = &UNIONS_FAMILY;

impl Walker<'_, '_> {
    /// `anyOf`, `oneOf` and `allOf`: paired branches are walked, the rest
    /// judged (an `allOf` conjunct narrows, so its verdicts are reversed).
    pub(crate) fn unions(&mut self, site: &Site, handled: &mut BTreeSet<&'static str>) {
        let Site {
            ptr, sb, sa, depth, ..
        } = *site;
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
                regrouped(&self.refs_b, key, bb.map_or(&[], Vec::as_slice)),
                regrouped(&self.refs_a, key, ba.map_or(&[], Vec::as_slice)),
            );
            // Paired by what each branch means: a branch behind a `$ref`
            // and the same branch written inline are one branch, and a
            // branch composed with `allOf` is read as its parts together.
            let (views_b, views_a) = (
                pairing_views(&self.refs_b, &bb),
                pairing_views(&self.refs_a, &ba),
            );
            let Some(pairs) = pair_branches(
                &views_b.iter().map(AsRef::as_ref).collect::<Vec<_>>(),
                &views_a.iter().map(AsRef::as_ref).collect::<Vec<_>>(),
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
                    format!("{ptr}/{key}/{}", ba[*j].0)
                };
                self.walk(&at, &bb[*i].1, &ba[*j].1, None, depth + 1);
            }
            let conjunction = key == "allOf";
            for (i, m) in matched_b.iter().enumerate() {
                if *m {
                    continue;
                }
                let place = &bb[i].0;
                let at = format!("{ptr}/{key}/{place}");
                let what = if conjunction { "condition" } else { "branch" };
                let message = format!("{key} {what} #{place} removed at {ptr}");
                let rule: &'static Rule = match (self.dir, conjunction) {
                    (Direction::Input, false) => &INPUT_UNION_BRANCH_REMOVED,
                    // An input condition dropped: it accepts more, a
                    // relaxation reported through the bounds family.
                    (Direction::Input, true) => {
                        self.input_bound_relaxed(&at, message, Some(&bb[i].1), None);
                        continue;
                    }
                    (Direction::Output, false) => &tool::FIELD_CHANGED,
                    (Direction::Output, true) => &OUTPUT_UNION_BRANCH_ADDED,
                };
                self.push(FAMILY, rule, &at, message, Some(&bb[i].1), None);
            }
            for (j, m) in matched_a.iter().enumerate() {
                if *m {
                    continue;
                }
                let place = &ba[j].0;
                let at = format!("{ptr}/{key}/{place}");
                let rule: &'static Rule = match (self.dir, conjunction) {
                    (Direction::Input, false) => &INPUT_UNION_BRANCH_ADDED,
                    (Direction::Input, true) => &INPUT_UNION_BRANCH_REMOVED,
                    (Direction::Output, false) => &OUTPUT_UNION_BRANCH_ADDED,
                    (Direction::Output, true) => &tool::FIELD_CHANGED,
                };
                let what = if conjunction { "condition" } else { "branch" };
                self.push(
                    FAMILY,
                    rule,
                    &at,
                    format!("{key} {what} #{place} added at {ptr}"),
                    None,
                    Some(&ba[j].1),
                );
            }
        }
    }
}
