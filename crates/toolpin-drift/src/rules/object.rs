//! Object property rules: `properties`, `required` and
//! `additionalProperties`, judged by direction, with likely renames among
//! the properties named. The check is [`Walker::object`]; it walks on into
//! the properties both sides have.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};
use toolpin_manifest::pointer::escape_token;

use crate::budget::{Exceeded, MAX_RENAME_PAIRS};
use crate::rule::{Family, Rule, Severity};
use crate::rules::tool;
use crate::schema::{Direction, Site, Walker};

crate::rules! {
    family OBJECT_RULES, OBJECT_FAMILY: "object", "Object property rules";
    intro: "The members of an object schema: which properties exist, which are required, and whether undeclared keys are allowed (`additionalProperties`). A removed and an added property that look alike are reported as they are, with the likely rename named in both messages. For arguments, a property gone from a closed object is rejected loudly, while one gone from an open object is silently ignored: the call still succeeds and does less.";
    INPUT_REQUIRED_PROPERTY_ADDED {
        id: "input-required-property-added",
        since: "0.1.0",
        summary: "a new required key, or an existing key became required",
        breaks: "Every call that does not pass it now fails (medium when it has a default the server fills in).",
        kind: Structural, severity: High,
        rerun: ["fault-injection", "trajectory"],
        example: "`refund_order` requires a new `reason_code`",
    }
    INPUT_OPTIONAL_PROPERTY_ADDED {
        id: "input-optional-property-added",
        since: "0.1.0",
        summary: "a new optional key",
        breaks: "The model may start passing it, changing what the call does (medium on a tool that writes).",
        kind: Semantic, severity: Low,
        rerun: ["assertions"],
        example: "`search_orders` gains an optional `include_archived`",
    }
    INPUT_PROPERTY_BECAME_OPTIONAL {
        id: "input-property-became-optional",
        since: "0.1.0",
        summary: "a key dropped from `required`",
        breaks: "The agent may stop passing it and silently get the server's default behaviour.",
        kind: Semantic, severity: Medium,
        rerun: ["tool-cases"],
        example: "`order_id` is no longer required",
    }
    INPUT_PROPERTY_REMOVED {
        id: "input-property-removed",
        since: "0.1.0",
        summary: "a key gone from a closed object (`additionalProperties: false`)",
        breaks: "Calls that still pass it are rejected (medium if it was deprecated first).",
        kind: Structural, severity: High,
        rerun: ["assertions", "tool-cases"],
        example: "`legacy_id` removed from a closed input object",
    }
    INPUT_PROPERTY_SILENTLY_IGNORED {
        id: "input-property-silently-ignored",
        since: "0.1.0",
        summary: "a key gone from an open object",
        breaks: "The argument is now dropped without an error: the agent thinks it filtered, sorted or confirmed and did not.",
        kind: Semantic, severity: High,
        rerun: ["tool-cases", "fault-injection"],
        example: "`dry_run` disappears from an open input object",
    }
    INPUT_ADDITIONAL_PROPERTIES_CLOSED {
        id: "input-additional-properties-closed",
        since: "0.1.0",
        summary: "`additionalProperties` true/absent → false, or its schema narrows",
        breaks: "Calls passing keys that used to be tolerated are rejected.",
        kind: Structural, severity: High,
        rerun: ["assertions"],
        example: "an input object adds `additionalProperties: false`",
    }
    OUTPUT_PROPERTY_ADDED {
        id: "output-property-added",
        since: "0.1.0",
        summary: "a new key in results",
        breaks: "Its content reaches the context window: more tokens, and text the agent was not evaluated with.",
        kind: Semantic, severity: Low,
        rerun: ["consumers"],
        example: "results gain `internal_notes`",
    }
    OUTPUT_REQUIRED_PROPERTY_REMOVED {
        id: "output-required-property-removed",
        since: "0.1.0",
        summary: "a guaranteed key is gone or no longer required",
        breaks: "Consumers that read it break or read nothing.",
        kind: Structural, severity: High,
        rerun: ["consumers", "tool-cases"],
        example: "`total` disappears from results",
    }
    OUTPUT_OPTIONAL_PROPERTY_REMOVED {
        id: "output-optional-property-removed",
        since: "0.1.0",
        summary: "a key that was not guaranteed is gone",
        breaks: "Consumers that used it when present lose it.",
        kind: Structural, severity: Medium,
        rerun: ["consumers"],
        example: "optional `tracking_url` disappears",
    }
    OUTPUT_ADDITIONAL_PROPERTIES_OPENED {
        id: "output-additional-properties-opened",
        since: "0.1.0",
        summary: "`additionalProperties` false → true or wider",
        breaks: "Results may carry keys no one declared, and their text.",
        kind: Semantic, severity: Medium,
        rerun: ["consumers"],
        example: "a result object drops `additionalProperties: false`",
    }
}

// The check, the only code that emits this family's rules (and the tool
// family's fallbacks). It walks on into the properties both sides have and
// into a schema-valued `additionalProperties`.

/// The family this file's pushes are attributed to.
const FAMILY: &Family = &OBJECT_FAMILY;

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

/// One property's `required` membership on each side.
#[derive(Clone, Copy)]
struct Required {
    before: bool,
    after: bool,
}

impl Walker<'_, '_> {
    /// `properties`, `required` and `additionalProperties`: each property
    /// in turn (removed, added, or walked into and its `required` change
    /// judged), the likely renames named, then `additionalProperties`.
    pub(crate) fn object(&mut self, site: &Site, handled: &mut BTreeSet<&'static str>) {
        let Site {
            ptr, sb, sa, depth, ..
        } = *site;
        handled.extend(["properties", "required", "additionalProperties"]);
        // A schema that can no longer be an object (an item schema
        // replaced by a string) has no members to lose: its type change
        // says it all, and each member reported gone would be false.
        let may_be_object =
            |s: &Map<String, Value>| crate::schema::types(s).is_none_or(|t| t.contains("object"));
        if may_be_object(sb) && !may_be_object(sa) {
            return;
        }
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
            let req = Required {
                before: rb.contains(key.as_str()),
                after: ra.contains(key.as_str()),
            };
            match (vb, va) {
                (Some(x), None) => {
                    self.property_removed(&at, key, x, req, closed_after);
                    continue;
                }
                (None, Some(y)) => {
                    self.property_added(&at, key, y, req);
                    continue;
                }
                (Some(x), Some(y)) => self.walk(&at, x, y, Some(key), depth + 1),
                (None, None) => {}
            }
            self.required_changed(ptr, key, req, va, sb, sa);
        }
        self.note_renames(ptr, &renames, first_finding);
        self.note_moves(ptr, pb, pa, first_finding);
        // The same set of required keys written differently (an empty
        // `required` dropped).
        if rb == ra && sb.get("required") != sa.get("required") {
            let at = format!("{ptr}/required");
            self.push(
                FAMILY,
                &tool::EQUIVALENT_REWRITE,
                &at,
                format!("{at} rewritten with the same keys"),
                sb.get("required"),
                sa.get("required"),
            );
        }
        self.additional_properties(ptr, sb, sa, depth);
    }

    /// A property only the before side declares: rejected by a closed
    /// input object, silently ignored by an open one; a result field gone.
    fn property_removed(
        &mut self,
        at: &str,
        key: &str,
        x: &Value,
        req: Required,
        closed_after: bool,
    ) {
        if self.input() {
            if closed_after {
                let deprecated = x.get("deprecated") == Some(&Value::Bool(true));
                let f = self.push(FAMILY, &INPUT_PROPERTY_REMOVED, at, format!("argument `{key}` removed (the object is closed: calls passing it are rejected)"), Some(x), None);
                if deprecated {
                    f.severity = Severity::Medium;
                }
            } else {
                self.push(FAMILY, &INPUT_PROPERTY_SILENTLY_IGNORED, at, format!("argument `{key}` removed from an open object: calls passing it are accepted and it is ignored"), Some(x), None);
            }
        } else if req.before {
            self.push(
                FAMILY,
                &OUTPUT_REQUIRED_PROPERTY_REMOVED,
                at,
                format!("result field `{key}` removed (it was guaranteed)"),
                Some(x),
                None,
            );
        } else {
            self.push(
                FAMILY,
                &OUTPUT_OPTIONAL_PROPERTY_REMOVED,
                at,
                format!("result field `{key}` removed"),
                Some(x),
                None,
            );
        }
    }

    /// A property only the after side declares: a new argument (required
    /// or optional) or a new result field.
    fn property_added(&mut self, at: &str, key: &str, y: &Value, req: Required) {
        if !self.input() {
            self.push(
                FAMILY,
                &OUTPUT_PROPERTY_ADDED,
                at,
                format!("new result field `{key}`"),
                None,
                Some(y),
            );
            return;
        }
        // A default softens a new required argument; a new optional one
        // matters more on a tool that writes.
        let (rule, message, medium): (&'static Rule, _, _) = if req.after {
            let message = format!("new required argument `{key}`");
            (
                &INPUT_REQUIRED_PROPERTY_ADDED,
                message,
                y.get("default").is_some(),
            )
        } else {
            let message = format!("new optional argument `{key}`");
            (&INPUT_OPTIONAL_PROPERTY_ADDED, message, self.ctx.writes)
        };
        let f = self.push(FAMILY, rule, at, message, None, Some(y));
        if medium {
            f.severity = Severity::Medium;
        }
    }

    /// A property both sides declare whose `required` membership changed,
    /// judged by direction at `{ptr}/required`.
    fn required_changed(
        &mut self,
        ptr: &str,
        key: &str,
        req: Required,
        va: Option<&Value>,
        sb: &Map<String, Value>,
        sa: &Map<String, Value>,
    ) {
        // A default softens an argument that became required.
        let (rule, message, medium): (&'static Rule, String, bool) =
            match (self.dir, req.before, req.after) {
                (Direction::Input, false, true) => (
                    &INPUT_REQUIRED_PROPERTY_ADDED,
                    format!("argument `{key}` became required"),
                    va.and_then(|v| v.get("default")).is_some(),
                ),
                (Direction::Input, true, false) => (
                    &INPUT_PROPERTY_BECAME_OPTIONAL,
                    format!(
                        "argument `{key}` is no longer required: the agent may stop passing it"
                    ),
                    false,
                ),
                (Direction::Output, true, false) => (
                    &OUTPUT_REQUIRED_PROPERTY_REMOVED,
                    format!("result field `{key}` is no longer guaranteed"),
                    false,
                ),
                (Direction::Output, false, true) => (
                    &tool::FIELD_CHANGED,
                    format!("result field `{key}` is now guaranteed"),
                    false,
                ),
                _ => return,
            };
        let req_at = format!("{ptr}/required");
        let f = self.push(
            FAMILY,
            rule,
            &req_at,
            message,
            sb.get("required"),
            sa.get("required"),
        );
        if medium {
            f.severity = Severity::Medium;
        }
    }

    /// A removed and an added property that match closely are reported as
    /// they are (the call still breaks or changes), with the likely rename
    /// named. Looked up by pointer: one pass over the findings since
    /// `first_finding`, not one per rename. A removed name and an added one
    /// are never the same key, so a finding gets at most one note.
    fn note_renames(&mut self, ptr: &str, renames: &[(String, String)], first_finding: usize) {
        if renames.is_empty() {
            return;
        }
        let mut notes: HashMap<String, String> = HashMap::with_capacity(2 * renames.len());
        for (old, new) in renames {
            let property = |name: &str| format!("{ptr}/properties/{}", escape_token(name));
            notes.insert(property(old), format!(" (looks renamed to `{new}`)"));
            notes.insert(property(new), format!(" (looks renamed from `{old}`)"));
        }
        self.append_notes(&notes, first_finding);
    }

    /// Appends each note to the message of the findings since
    /// `first_finding` at its pointer.
    fn append_notes(&mut self, notes: &HashMap<String, String>, first_finding: usize) {
        for f in &mut self.out[first_finding..] {
            if let Some(note) = notes.get(&f.pointer) {
                f.message.push_str(note);
            }
        }
    }

    /// Members that moved under a new wrapper (`filters.status` now
    /// `filters.criteria.status`, the same schema): each is still reported
    /// as it is (gone from here, an argument passed here is dropped or
    /// rejected), and both findings name the move, as renames are named.
    fn note_moves(
        &mut self,
        ptr: &str,
        pb: &Map<String, Value>,
        pa: &Map<String, Value>,
        first_finding: usize,
    ) {
        let mut notes: HashMap<String, String> = HashMap::new();
        let property = |name: &str| format!("{ptr}/properties/{}", escape_token(name));
        for (wrapper, schema) in pa.iter().filter(|(k, _)| !pb.contains_key(*k)) {
            let Some(inner) = schema.get("properties").and_then(Value::as_object) else {
                continue;
            };
            let moved: Vec<&String> = pb
                .iter()
                .filter(|(k, v)| {
                    !pa.contains_key(*k) && inner.get(*k).is_some_and(|w| crate::schema::same(v, w))
                })
                .map(|(k, _)| k)
                .collect();
            if moved.is_empty() {
                continue;
            }
            for name in &moved {
                notes.insert(
                    property(name),
                    format!(" (moved under `{wrapper}`: now `{wrapper}.{name}`)"),
                );
            }
            let names: Vec<String> = moved.iter().map(|n| format!("`{n}`")).collect();
            notes.insert(
                property(wrapper),
                format!(" (holds {} moved from here)", names.join(", ")),
            );
        }
        if !notes.is_empty() {
            self.append_notes(&notes, first_finding);
        }
    }

    /// `additionalProperties`: walked into when both sides are schemas,
    /// otherwise judged as the object closing or opening.
    fn additional_properties(
        &mut self,
        ptr: &str,
        sb: &Map<String, Value>,
        sa: &Map<String, Value>,
        depth: usize,
    ) {
        let (ab, aa) = (
            sb.get("additionalProperties"),
            sa.get("additionalProperties"),
        );
        let at = format!("{ptr}/additionalProperties");
        match (openness(ab), openness(aa)) {
            (Openness::Schema, Openness::Schema) => {
                if let (Some(x), Some(y)) = (ab, aa) {
                    self.walk(&at, x, y, None, depth + 1);
                }
            }
            (x, y) if x == y => {}
            (Openness::Open, _) | (Openness::Schema, Openness::Closed) => {
                let rule: &'static Rule = if self.input() {
                    &INPUT_ADDITIONAL_PROPERTIES_CLOSED
                } else {
                    &tool::FIELD_CHANGED
                };
                self.push(
                    FAMILY,
                    rule,
                    &at,
                    format!("{ptr} no longer accepts undeclared keys"),
                    ab,
                    aa,
                );
            }
            (Openness::Closed, _) | (Openness::Schema, Openness::Open) => {
                let message = format!("{ptr} now allows undeclared keys");
                if self.input() {
                    // An input that accepts more: a relaxation, reported
                    // through the bounds family.
                    self.input_bound_relaxed(&at, message, ab, aa);
                } else {
                    let rule = &OUTPUT_ADDITIONAL_PROPERTIES_OPENED;
                    self.push(FAMILY, rule, &at, message, ab, aa);
                }
            }
        }
    }
}
