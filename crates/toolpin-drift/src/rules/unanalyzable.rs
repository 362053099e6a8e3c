//! What the engine cannot judge. A change it cannot compare is reported,
//! never passed silently: a `$ref` that cannot be followed, a schema nested
//! too deep or not a schema at all, a keyword whose meaning toolpin does
//! not model, and a tool whose comparison exceeds the budget (budget.rs).

use serde_json::Value;

use crate::finding::Finding;
use crate::rule::{Family, Severity};
use crate::schema::{Walker, MAX_DEPTH};

crate::rules! {
    family UNANALYZABLE_RULES, UNANALYZABLE_FAMILY: "unanalyzable", "Unanalyzable schemas";
    intro: "A change toolpin cannot compare is never passed silently: it is reported as unanalyzable, at the place where it is (at the tool, for the budget). That covers a `$ref` that cannot be followed (remote, or naming nothing), a schema nested deeper than the walk goes, a value that is not a schema, a keyword whose meaning the engine does not model (`if`/`then`/`else`, `not`, `dependentSchemas`, `patternProperties` and the like), and a tool whose comparison exceeds the engine's budget.";
    SCHEMA_UNANALYZABLE {
        id: "schema-unanalyzable",
        since: "0.1.0",
        summary: "a change the engine cannot judge: a remote or unresolvable `$ref`, keywords such as `if`/`then`, `not`, `dependentSchemas`, or a tool whose change exceeds the engine's budget",
        breaks: "Anything: it is reported so that it never passes silently. The budget, per tool: at most 100,000 findings; at most 1,000,000 JSON values held by the findings' before and after together (a `required` list of n keys dropped at once makes n findings that each hold the list); at most 1,000,000 removed × added property pairs for rename matching in one object; at most 1,000,000 pairs of changed branches to pair in one `anyOf`/`oneOf`/`allOf`. A tool past any of them gets this finding once, at the tool (empty pointer), naming the budget, in place of all its findings, and critical and flagged security, since it may hide anything, steering text included.",
        kind: Structural, severity: Medium,
        rerun: ["tool-cases"],
        example: "an `if`/`then` pair inside an inputSchema changes",
    }
}

// The check: the only code that emits this family's rule. The walk
// (schema.rs) calls it where it cannot go on; compare.rs calls
// [`over_budget`] for a tool past the budget.

/// The family this file's pushes are attributed to.
const FAMILY: &Family = &UNANALYZABLE_FAMILY;

/// Keywords the engine does not judge; a change in them is unanalyzable.
const UNJUDGED: [&str; 16] = [
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

/// Whether `keyword` is one the engine does not judge.
pub(crate) fn unjudged(keyword: &str) -> bool {
    UNJUDGED.contains(&keyword)
}

/// A tool whose comparison exceeded the budget: one finding at the tool in
/// place of all of its findings, critical and security, since the findings
/// it replaces may have been anything, steering text included (a hostile
/// upstream cannot lower a finding's severity by padding the schema).
pub(crate) fn over_budget(server: &str, tool: &str, why: String, out: &mut Vec<Finding>) {
    FAMILY.push(
        out,
        Finding::new(&SCHEMA_UNANALYZABLE, server, tool, String::new())
            .message(format!("{tool}: {why}"))
            .severity(Severity::Critical)
            .security(true),
    );
}

impl Walker<'_, '_> {
    /// A change behind a `$ref` that cannot be followed (`why` names it).
    pub(crate) fn unfollowable_ref(&mut self, ptr: &str, why: &str, b: &Value, a: &Value) {
        let message = format!("{ptr} changed and holds a reference that cannot be followed: {why}");
        self.push(FAMILY, &SCHEMA_UNANALYZABLE, ptr, message, Some(b), Some(a));
    }

    /// A change nested deeper than the walk goes.
    pub(crate) fn too_deep(&mut self, ptr: &str, b: &Value, a: &Value) {
        let message = format!("{ptr} changed deeper than {MAX_DEPTH} schema levels");
        self.push(FAMILY, &SCHEMA_UNANALYZABLE, ptr, message, Some(b), Some(a));
    }

    /// A value that is not a schema (neither an object nor a boolean)
    /// changed.
    pub(crate) fn not_a_schema(&mut self, ptr: &str, b: &Value, a: &Value) {
        let message = format!("{ptr} is not a schema and changed");
        self.push(FAMILY, &SCHEMA_UNANALYZABLE, ptr, message, Some(b), Some(a));
    }

    /// An [`unjudged`] keyword changed.
    pub(crate) fn unjudged_keyword_changed(
        &mut self,
        ptr: &str,
        at: &str,
        keyword: &str,
        vb: Option<&Value>,
        va: Option<&Value>,
    ) {
        let message = format!("`{keyword}` changed at {ptr}; toolpin cannot judge what it accepts");
        self.push(FAMILY, &SCHEMA_UNANALYZABLE, at, message, vb, va);
    }
}
