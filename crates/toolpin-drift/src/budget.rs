//! The work budget of one tool's comparison. A schema from a hostile (or
//! broken) upstream can ask for work out of all proportion to its size: a
//! `required` list of n keys dropped at once makes n findings that each
//! carry both lists (n² values), n removed × n added properties make n²
//! rename candidates, and a union of n changed branches n² branch pairs. Past a budget the tool gets one `schema-unanalyzable`
//! finding naming it, instead of an out-of-memory proxy or a diff that runs
//! for minutes. Every budget is far above what a real schema needs: every
//! fixture and real-server snapshot keeps its findings.

use serde_json::Value;

/// Findings one tool may produce.
pub const MAX_FINDINGS: usize = 100_000;
/// JSON values (every object, array and scalar counts one) the findings of
/// one tool may carry in `before` and `after` together.
pub const MAX_VALUE_NODES: usize = 1_000_000;
/// Removed × added property pairs the rename matcher may score in one
/// object.
pub const MAX_RENAME_PAIRS: usize = 1_000_000;
/// Pairs of changed union branches (`anyOf`, `oneOf`, `allOf`) that may be
/// compared to pair them, in one union.
pub const MAX_BRANCH_PAIRS: usize = 1_000_000;

/// Which budget ran out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exceeded {
    Findings,
    ValueNodes,
    /// At this object (a JSON pointer), with this many removed and added
    /// properties.
    RenamePairs {
        at: String,
        removed: usize,
        added: usize,
    },
    /// At this union (a JSON pointer), with this many branches before and
    /// after.
    BranchPairs {
        at: String,
        before: usize,
        after: usize,
    },
}

impl Exceeded {
    /// The finding's message, after the tool's name.
    pub fn describe(&self) -> String {
        match self {
            Exceeded::Findings => format!(
                "the change needs more than {MAX_FINDINGS} findings (the engine's findings budget for one tool); the tool was not analyzed"
            ),
            Exceeded::ValueNodes => format!(
                "the change's findings would hold more than {MAX_VALUE_NODES} JSON values (the engine's value budget for one tool); the tool was not analyzed"
            ),
            Exceeded::RenamePairs { at, removed, added } => format!(
                "{removed} properties removed and {added} added at {at}: matching renames needs more than {MAX_RENAME_PAIRS} comparisons (the engine's rename budget); the tool was not analyzed"
            ),
            Exceeded::BranchPairs { at, before, after } => format!(
                "{at} changed from {before} to {after} branches: pairing them needs more than {MAX_BRANCH_PAIRS} comparisons (the engine's union budget); the tool was not analyzed"
            ),
        }
    }
}

/// What is left of one tool's budget.
#[derive(Debug)]
pub struct Budget {
    findings: usize,
    value_nodes: usize,
    exceeded: Option<Exceeded>,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            findings: MAX_FINDINGS,
            value_nodes: MAX_VALUE_NODES,
            exceeded: None,
        }
    }
}

impl Budget {
    /// The budget that ran out first, if any.
    pub fn exceeded(&self) -> Option<&Exceeded> {
        self.exceeded.as_ref()
    }

    pub fn is_exceeded(&self) -> bool {
        self.exceeded.is_some()
    }

    /// Records that `why` ran out; the first reason stays.
    pub fn exceed(&mut self, why: Exceeded) {
        self.exceeded.get_or_insert(why);
    }

    /// Takes what one finding holding `before` and `after` costs. `false`
    /// (and the budget marked exceeded) when it does not fit: the caller
    /// then keeps the values out of the finding.
    pub fn take_finding(&mut self, before: Option<&Value>, after: Option<&Value>) -> bool {
        if self.is_exceeded() {
            return false;
        }
        let Some(left) = self.findings.checked_sub(1) else {
            self.exceed(Exceeded::Findings);
            return false;
        };
        self.findings = left;
        let mut nodes = self.value_nodes;
        if !count_down(before, &mut nodes) || !count_down(after, &mut nodes) {
            self.exceed(Exceeded::ValueNodes);
            return false;
        }
        self.value_nodes = nodes;
        true
    }
}

/// Subtracts the values in `v` from `left`, stopping (`false`) as soon as
/// they do not fit, so counting costs no more than the budget.
fn count_down(v: Option<&Value>, left: &mut usize) -> bool {
    let Some(v) = v else { return true };
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        let Some(l) = left.checked_sub(1) else {
            return false;
        };
        *left = l;
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(m) => stack.extend(m.values()),
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_counted_until_they_do_not_fit() {
        let mut b = Budget {
            findings: 3,
            value_nodes: 5,
            exceeded: None,
        };
        // ["a", "b"] is 3 values, {"x": 1} is 2.
        assert!(b.take_finding(Some(&json!(["a", "b"])), Some(&json!({"x": 1}))));
        assert_eq!(b.value_nodes, 0);
        assert!(b.take_finding(None, None));
        assert!(!b.take_finding(Some(&json!(1)), None));
        assert_eq!(b.exceeded(), Some(&Exceeded::ValueNodes));
        // The first reason stays.
        b.exceed(Exceeded::Findings);
        assert_eq!(b.exceeded(), Some(&Exceeded::ValueNodes));
    }

    #[test]
    fn findings_are_counted() {
        let mut b = Budget {
            findings: 1,
            value_nodes: 100,
            exceeded: None,
        };
        assert!(b.take_finding(None, None));
        assert!(!b.take_finding(None, None));
        assert_eq!(b.exceeded(), Some(&Exceeded::Findings));
    }
}
