//! Annotation rules. Absent hints take their spec defaults before comparing
//! (readOnlyHint false, destructiveHint true, idempotentHint false,
//! openWorldHint true), so only a change of the effective value is a flip.

use serde_json::{Map, Value};
use toolpin_manifest::pointer::escape_token;

use crate::compare::{effective_hints, scalar_change, ToolContext, HINT_DEFAULTS};
use crate::finding::Finding;
use crate::rule::Rule;
use crate::rules::tool::{self, TOOL_FAMILY};

crate::rules! {
    family ANNOTATION_RULES, ANNOTATION_FAMILY: "annotation", "Annotation rules";
    intro: "The MCP annotations, compared by effective value: an absent hint takes its spec default, so only a change of what the client will believe is a flip. Most flips widen what an agent or a client's auto-approval will do without asking, so they are security findings.";
    ANNOTATION_READONLY_REVOKED {
        id: "annotation-readonly-revoked",
        since: "0.1.0",
        summary: "effective readOnlyHint true → false",
        breaks: "A tool the agent (and the client's auto-approval) treated as safe to call now may write.",
        kind: Semantic, severity: High, security: true,
        rerun: ["authz", "red-team", "tool-cases"],
        example: "`search_orders` drops `readOnlyHint: true`",
    }
    ANNOTATION_READONLY_ASSERTED {
        id: "annotation-readonly-asserted",
        since: "0.1.0",
        summary: "effective readOnlyHint false → true",
        breaks: "Clients may now call it without asking: the claim needs checking.",
        kind: Semantic, severity: High, security: true,
        rerun: ["authz"],
        example: "`update_order` starts claiming `readOnlyHint: true`",
    }
    ANNOTATION_DESTRUCTIVE_ASSERTED {
        id: "annotation-destructive-asserted",
        since: "0.1.0",
        summary: "effective destructiveHint false → true",
        breaks: "The tool says it may now destroy data.",
        kind: Semantic, severity: High, security: true,
        rerun: ["authz", "tool-cases"],
        example: "`archive_order` sets `destructiveHint: true`",
    }
    ANNOTATION_DESTRUCTIVE_REVOKED {
        id: "annotation-destructive-revoked",
        since: "0.1.0",
        summary: "effective destructiveHint true → false",
        breaks: "Clients may stop asking for confirmation before calling it.",
        kind: Semantic, severity: High, security: true,
        rerun: ["authz", "tool-cases"],
        example: "`delete_order` sets `destructiveHint: false`",
    }
    ANNOTATION_OPENWORLD_ASSERTED {
        id: "annotation-openworld-asserted",
        since: "0.1.0",
        summary: "effective openWorldHint false → true",
        breaks: "The tool now reaches outside systems: new exfiltration and injection surface.",
        kind: Semantic, severity: High, security: true,
        rerun: ["red-team", "authz"],
        example: "`lookup_order` drops `openWorldHint: false`",
    }
    ANNOTATION_OPENWORLD_REVOKED {
        id: "annotation-openworld-revoked",
        since: "0.1.0",
        summary: "effective openWorldHint true → false",
        breaks: "The tool claims a closed world; checks that relied on it reaching out may change.",
        kind: Semantic, severity: Medium,
        rerun: ["red-team", "authz"],
        example: "`fetch` sets `openWorldHint: false`",
    }
    ANNOTATION_IDEMPOTENT_ASSERTED {
        id: "annotation-idempotent-asserted",
        since: "0.1.0",
        summary: "effective idempotentHint false → true",
        breaks: "Retry logic may now repeat calls that were not safe to repeat.",
        kind: Semantic, severity: Medium,
        rerun: ["fault-injection"],
        example: "`charge_card` sets `idempotentHint: true`",
    }
    ANNOTATION_IDEMPOTENT_REVOKED {
        id: "annotation-idempotent-revoked",
        since: "0.1.0",
        summary: "effective idempotentHint true → false",
        breaks: "Retries of this tool are no longer safe.",
        kind: Semantic, severity: Medium,
        rerun: ["fault-injection"],
        example: "`set_status` drops `idempotentHint: true`",
    }
    ANNOTATION_CHANGED {
        id: "annotation-changed",
        since: "0.2.0",
        summary: "an annotation the MCP specification does not define (a vendor hint such as `category`) was added, removed or changed, or a hint holds something other than a boolean",
        breaks: "Clients may show, filter or route tools on it; nothing the spec lets a client believe changed.",
        kind: Semantic, severity: Low,
        rerun: ["tool-cases"],
        example: "`annotations.category` \"orders\" → \"billing\"",
    }
}

// The check: the only code that emits this family's rules. A change it has
// no annotation rule for is the tool family's generic fallback
// (`equivalent-rewrite`, `title-changed`, `field-changed`), pushed through
// that family.

/// Each hint's asserted (false → true) and revoked (true → false) rule, in
/// [`HINT_DEFAULTS`] order.
const FLIPS: [(&Rule, &Rule); 4] = [
    (&ANNOTATION_READONLY_ASSERTED, &ANNOTATION_READONLY_REVOKED),
    (
        &ANNOTATION_DESTRUCTIVE_ASSERTED,
        &ANNOTATION_DESTRUCTIVE_REVOKED,
    ),
    (
        &ANNOTATION_IDEMPOTENT_ASSERTED,
        &ANNOTATION_IDEMPOTENT_REVOKED,
    ),
    (
        &ANNOTATION_OPENWORLD_ASSERTED,
        &ANNOTATION_OPENWORLD_REVOKED,
    ),
];

/// The MCP annotations of one tool, hint by hint (by effective value: an
/// absent hint means its spec default), then every other member, then the
/// `annotations` member itself when either side's is not an object.
pub(crate) fn check_annotations(
    ctx: &ToolContext,
    before: &Value,
    after: &Value,
    out: &mut Vec<Finding>,
) {
    check_hints(ctx, before, after, out);
    check_other_members(ctx, before, after, out);
    let not_object = |tool: &Value| tool.get("annotations").is_some_and(|a| !a.is_object());
    if not_object(before) || not_object(after) {
        let tool = ctx.name;
        ANNOTATION_FAMILY.push(
            out,
            Finding::new(&ANNOTATION_CHANGED, ctx.server, tool, "/annotations".into())
                .message(format!("{tool}: /annotations changed"))
                .values(before.get("annotations"), after.get("annotations")),
        );
    }
}

/// The four hints by effective value: a flip is this family's rule; the
/// same effective value spelled differently an equivalent rewrite; a hint
/// without an effective value (not a boolean) that changed an
/// `annotation-changed`.
fn check_hints(ctx: &ToolContext, before: &Value, after: &Value, out: &mut Vec<Finding>) {
    let (server, tool) = (ctx.server, ctx.name);
    let (eb, ea) = (effective_hints(before), effective_hints(after));
    for (i, (key, _)) in HINT_DEFAULTS.iter().enumerate() {
        // A tool that now says it is read-only destroys nothing: that is
        // the readOnly finding, not a second one. (Any change to
        // destructiveHint is passed over here while the after side is
        // read-only, also when readOnlyHint itself did not change.)
        if *key == "destructiveHint" && ea[0] == Some(true) {
            continue;
        }
        let at = format!("/annotations/{key}");
        let (vb, va) = (before.pointer(&at), after.pointer(&at));
        let (asserted, revoked) = FLIPS[i];
        match (eb[i], ea[i]) {
            (Some(b), Some(a)) if b != a => ANNOTATION_FAMILY.push(out,
                Finding::new(if a { asserted } else { revoked }, server, tool, at)
                    .message(format!("{tool}: {key} {b} → {a} (effective; an absent hint means its spec default)"))
                    .values(vb, va),
            ),
            // The same effective value spelled differently (a hint spelled
            // out with its spec default, or dropped back to it).
            (Some(_), Some(_)) if vb != va => TOOL_FAMILY.push(out,
                Finding::new(&tool::EQUIVALENT_REWRITE, server, tool, at)
                    .message(format!("{tool}: {key}{} (the same effective value)", scalar_change(vb, va)))
                    .values(vb, va),
            ),
            (Some(_), Some(_)) => {}
            _ if vb != va => ANNOTATION_FAMILY.push(out,
                Finding::new(&ANNOTATION_CHANGED, server, tool, at.clone())
                    .message(format!("{tool}: {at} changed{}", scalar_change(vb, va)))
                    .values(vb, va),
            ),
            _ => {}
        }
    }
}

/// The annotations that are not hints, member by member: `title` is the
/// tool's title, anything else (a vendor's `category`, a hint a later spec
/// adds) an `annotation-changed`, so policy and routing treat every
/// annotation alike.
fn check_other_members(ctx: &ToolContext, before: &Value, after: &Value, out: &mut Vec<Finding>) {
    let (server, tool) = (ctx.server, ctx.name);
    let empty = Map::new();
    fn members<'v>(tool: &'v Value, empty: &'v Map<String, Value>) -> &'v Map<String, Value> {
        tool.get("annotations")
            .and_then(Value::as_object)
            .unwrap_or(empty)
    }
    let (ab, aa) = (members(before, &empty), members(after, &empty));
    let keys: std::collections::BTreeSet<&String> = ab.keys().chain(aa.keys()).collect();
    for key in keys {
        if HINT_DEFAULTS.iter().any(|(k, _)| k == key) {
            continue;
        }
        let (vb, va) = (ab.get(key.as_str()), aa.get(key.as_str()));
        if vb == va {
            continue;
        }
        let at = format!("/annotations/{}", escape_token(key));
        let (family, rule): (_, &'static Rule) = if key == "title" {
            (&TOOL_FAMILY, &tool::TITLE_CHANGED)
        } else {
            (&ANNOTATION_FAMILY, &ANNOTATION_CHANGED)
        };
        family.push(
            out,
            Finding::new(rule, server, tool, at.clone())
                .message(format!("{tool}: {at} changed{}", scalar_change(vb, va)))
                .values(vb, va),
        );
    }
}
