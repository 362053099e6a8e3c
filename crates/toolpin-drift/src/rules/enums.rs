//! Enum and const rules: the literals a value may take (`const` is a
//! one-value enum), judged by direction. The check is [`Walker::enums`].

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
use toolpin_manifest::jcs;

use crate::rule::{Family, Rule};
use crate::rules::tool;
use crate::schema::{short, Direction, Site, Walker};

crate::rules! {
    family ENUMS_RULES, ENUMS_FAMILY: "enums", "Enum and const rules";
    intro: "The literals a value may take, from `enum` or `const` (a one-value enum). A value dropped from an input enum rejects calls; a value added to an output enum is one the agent has no instructions for. A free value that became an enum, or an enum lifted, is judged the same way.";
    INPUT_ENUM_VALUE_REMOVED {
        id: "input-enum-value-removed",
        since: "0.1.0",
        summary: "an allowed literal is gone, or a free value became an enum",
        breaks: "Calls with the dropped value are rejected; paths the agent relied on close.",
        kind: Structural, severity: High,
        rerun: ["assertions", "tool-cases"],
        example: "`status` no longer accepts `\"refunded\"`",
    }
    INPUT_ENUM_VALUE_ADDED {
        id: "input-enum-value-added",
        since: "0.1.0",
        summary: "a new allowed literal (a new mode or action)",
        breaks: "The model meets an option it was never evaluated with; on a tool that writes, a new action is security-relevant.",
        kind: Semantic, severity: Medium,
        rerun: ["tool-cases", "authz"],
        example: "`action` gains `\"delete_all\"`",
    }
    OUTPUT_ENUM_VALUE_ADDED {
        id: "output-enum-value-added",
        since: "0.1.0",
        summary: "a value the model has never seen may come back",
        breaks: "The agent meets a status it has no instructions for and improvises.",
        kind: Semantic, severity: High,
        rerun: ["consumers", "tool-cases"],
        example: "`status` may now be `\"partially_refunded\"`",
    }
    OUTPUT_ENUM_VALUE_REMOVED {
        id: "output-enum-value-removed",
        since: "0.1.0",
        summary: "a value will no longer come back",
        breaks: "Branches for it become dead; nothing breaks.",
        kind: Semantic, severity: Info,
        rerun: ["consumers"],
        example: "`status` no longer returns `\"legacy\"`",
    }
}

// The check, the only code that emits this family's rules (and, for an
// output that became an enum, the tool family's `field-changed` fallback).

/// The family this file's pushes are attributed to.
const FAMILY: &Family = &ENUMS_FAMILY;

fn join_values<'v>(vals: impl Iterator<Item = &'v Value>) -> String {
    vals.map(short).collect::<Vec<_>>().join(", ")
}

fn enum_values(s: &Map<String, Value>) -> Option<Vec<Value>> {
    if let Some(c) = s.get("const") {
        return Some(vec![c.clone()]);
    }
    s.get("enum").and_then(Value::as_array).cloned()
}

impl Walker<'_, '_> {
    /// `enum` and `const`: the literals lost and gained, each set reported
    /// once; a new input literal on a tool that writes is security.
    pub(crate) fn enums(&mut self, site: &Site, handled: &mut BTreeSet<&'static str>) {
        let Site { ptr, sb, sa, .. } = *site;
        handled.extend(["enum", "const"]);
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
                        &INPUT_ENUM_VALUE_REMOVED,
                        format!("{ptr} now accepts only {}", join_values(a.iter())),
                    ),
                    Direction::Output => (
                        &tool::FIELD_CHANGED,
                        format!("{ptr} now returns only {}", join_values(a.iter())),
                    ),
                };
                let va = Value::Array(a.clone());
                self.push(FAMILY, rule, &at, msg, None, Some(&va));
            }
            (Some(b), None) => {
                let rule: &'static Rule = match self.dir {
                    Direction::Input => &INPUT_ENUM_VALUE_ADDED,
                    Direction::Output => &OUTPUT_ENUM_VALUE_ADDED,
                };
                let vb = Value::Array(b.clone());
                let writes = self.ctx.writes && self.input();
                self.push(
                    FAMILY,
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
                        Direction::Input => &INPUT_ENUM_VALUE_REMOVED,
                        Direction::Output => &OUTPUT_ENUM_VALUE_REMOVED,
                    };
                    self.push(
                        FAMILY,
                        rule,
                        &at,
                        format!("{ptr} loses {}", join_values(removed.into_iter())),
                        Some(&vb),
                        Some(&va),
                    );
                }
                if !added.is_empty() {
                    let rule: &'static Rule = match self.dir {
                        Direction::Input => &INPUT_ENUM_VALUE_ADDED,
                        Direction::Output => &OUTPUT_ENUM_VALUE_ADDED,
                    };
                    let writes = self.ctx.writes && self.input();
                    self.push(
                        FAMILY,
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
}
