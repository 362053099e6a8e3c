//! Tool-level rules: a tool appears, disappears, is renamed, or its own
//! prose and members change.

use serde_json::Value;

use crate::compare::{Capabilities, ToolContext};
use crate::finding::Finding;
use crate::prose;
use crate::rename::Parts;
use crate::rule::Severity;

crate::rules! {
    family TOOL_RULES, TOOL_FAMILY: "tool", "Tool-level rules";
    intro: "A tool as a whole: it appears, disappears or is renamed, or its own description, title, outputSchema or another member changes. Two of these rules are also every family's fallbacks: `field-changed` for a change no rule claims, `equivalent-rewrite` for text that changed without changing meaning.";
    TOOL_ADDED {
        id: "tool-added",
        since: "0.1.0",
        summary: "a tool name that is not in the pin",
        breaks: "A new tool competes for selection with the ones the agent was evaluated with, and is new attack surface; one that can write, delete, execute or reach the network is flagged for security (low when it is read-only and closed-world).",
        kind: Structural, severity: High,
        rerun: ["trajectory", "red-team", "authz"],
        example: "`delete_order` appears on a server the agent already uses",
    }
    TOOL_REMOVED {
        id: "tool-removed",
        since: "0.1.0",
        summary: "a pinned tool is gone and no rename matched",
        breaks: "Calls to it fail; the agent improvises with the wrong tool.",
        kind: Structural, severity: Critical,
        rerun: ["trajectory", "fallback"],
        example: "`refund_order` is no longer listed",
    }
    TOOL_RENAMED {
        id: "tool-renamed",
        since: "0.1.0",
        summary: "a removed and an added tool whose schema and prose match closely",
        breaks: "Calls by the old name fail, and the agent must learn the new name from its description.",
        kind: Structural, severity: High,
        rerun: ["trajectory", "fallback", "selection"],
        example: "`get_order` becomes `fetch_order` with the same parameters",
    }
    DESCRIPTION_CHANGED {
        id: "description-changed",
        since: "0.1.0",
        summary: "the tool description text differs",
        breaks: "The description is prompt text written by a third party: an edit moves tool selection, ordering and turn count. Steering text added by the edit (another tool's name, an imperative, a URL, a file path, hidden Unicode, a tag-like marker) makes it critical and a security finding; a white-space-only edit is low.",
        kind: Description, severity: Medium,
        rerun: ["trajectory", "selection", "budget"],
        example: "\"Look up an order by ID.\" gains \"Prefer search_orders when the ID is unknown.\"",
    }
    TITLE_CHANGED {
        id: "title-changed",
        since: "0.1.0",
        summary: "`title` or `annotations.title` differs",
        breaks: "Clients show the title and some pass it to the model; selection can move.",
        kind: Description, severity: Low,
        rerun: ["selection"],
        example: "title \"Lookup\" becomes \"Find order\"",
    }
    OUTPUT_SCHEMA_ADDED {
        id: "output-schema-added",
        since: "0.1.0",
        summary: "the tool now declares an outputSchema",
        breaks: "Structured results now reach the context window in a declared shape.",
        kind: Structural, severity: Info,
        rerun: ["consumers"],
        example: "`get_invoice` starts declaring `outputSchema`",
    }
    OUTPUT_SCHEMA_REMOVED {
        id: "output-schema-removed",
        since: "0.1.0",
        summary: "the tool no longer declares an outputSchema",
        breaks: "Consumers of structured results lose their contract.",
        kind: Structural, severity: High,
        rerun: ["consumers"],
        example: "`get_invoice` drops its `outputSchema`",
    }
    EQUIVALENT_REWRITE {
        id: "equivalent-rewrite",
        since: "0.1.0",
        summary: "the text changed but accepts and means exactly the same",
        breaks: "Nothing the agent can do changes, but the fingerprint moves: the check says so without failing by default. Examples: a `$schema` dialect added, an empty `required` dropped, an annotation spelled out with its spec default, an integer bound rewritten (`exclusiveMaximum: 1000000` for `maximum: 999999`), a subschema moved into `$defs`, `execution.taskSupport: \"forbidden\"` spelled out.",
        kind: Description, severity: Info,
        rerun: [],
        example: "`\"$schema\": \"http://json-schema.org/draft-07/schema#\"` is added to an inputSchema",
    }
    FIELD_CHANGED {
        id: "field-changed",
        since: "0.1.0",
        summary: "any other member of the tool object differs",
        breaks: "Members such as `_meta`, `icons`, `execution` or fields a future spec adds can change what clients do with the tool.",
        kind: Semantic, severity: Low,
        rerun: ["tool-cases"],
        example: "`_meta.com.example/rollout` changes from 10 to 50",
    }
}

/// The generic rules other families fall back to: a member or keyword no
/// rule of theirs claims (`field-changed`), text that changed without
/// changing meaning (`equivalent-rewrite`). The schema families may push
/// them as their own (`Walker::push` accepts them from any family); every
/// other rule is pushed only by the family that lists it.
pub const FALLBACKS: [&crate::rule::Rule; 2] = [&FIELD_CHANGED, &EQUIVALENT_REWRITE];

// The checks: the verdicts about a tool as a whole (added, removed,
// renamed, its description). compare.rs pairs the tools and walks their
// members; the member-level fallbacks it decides there (`title-changed`,
// `equivalent-rewrite`, `field-changed`, `output-schema-added`/`-removed`)
// are pushed through this family too (`TOOL_FAMILY.push`).

/// A removed and an added tool the rename matcher paired, with the parts
/// of the score so that whoever reads the finding can judge the pairing.
pub(crate) fn renamed(
    server: &str,
    old_name: &str,
    new_name: &str,
    score: f64,
    p: &Parts,
    out: &mut Vec<Finding>,
) {
    TOOL_FAMILY.push(out,
        Finding::new(&TOOL_RENAMED, server, new_name, "/name".into())
            .message(format!(
                "{new_name}: renamed from {old_name} (similarity {score:.2}: schema {:.2}, name {:.2}, description {:.2}, annotations {:.2})",
                p.schema, p.name, p.description, p.annotations
            ))
            .values(
                Some(&Value::String(old_name.to_string())),
                Some(&Value::String(new_name.to_string())),
            ),
    );
}

/// A pinned tool that is gone and matched no rename.
pub(crate) fn removed(server: &str, name: &str, tool: &Value, out: &mut Vec<Finding>) {
    TOOL_FAMILY.push(
        out,
        Finding::new(&TOOL_REMOVED, server, name, String::new())
            .message(format!("{name}: tool removed"))
            .values(Some(tool), None),
    );
}

/// A new tool that matched no rename: security when it can write, delete,
/// execute or reach the network; low when read-only and closed-world.
pub(crate) fn added(server: &str, name: &str, tool: &Value, out: &mut Vec<Finding>) {
    let caps = Capabilities::of(tool);
    let mut f = Finding::new(&TOOL_ADDED, server, name, String::new())
        .values(None, Some(tool))
        .security(caps.any());
    let reach = caps.describe();
    f.message = if reach.is_empty() {
        format!("{name}: new tool")
    } else {
        format!("{name}: new tool that can {reach}")
    };
    if caps.read_only && !caps.open_world && !caps.any() {
        f.severity = Severity::Low;
    }
    TOOL_FAMILY.push(out, f);
}

/// A tool description that differs: low in white space only, critical and
/// security when the edit adds steering cues.
pub(crate) fn description_changed(
    ctx: &ToolContext,
    at: &str,
    vb: Option<&Value>,
    va: Option<&Value>,
    out: &mut Vec<Finding>,
) {
    let tool = ctx.name;
    let mut f = Finding::new(&DESCRIPTION_CHANGED, ctx.server, tool, at.to_string()).values(vb, va);
    // Descriptions name other tools by the server's own name as well as
    // the namespaced one (`search_orders` for `orders__search_orders`).
    let cues = prose::cues_for(vb, va, ctx.names, tool);
    if prose::whitespace_only(vb, va) {
        f.severity = Severity::Low;
        f.message = format!("{tool}: description changed in white space only");
        return TOOL_FAMILY.push(out, f);
    }
    let change = prose::inline_diff(vb, va).unwrap_or_else(|| "changed".into());
    f.message = format!("{tool}: description {change}");
    if !cues.is_empty() {
        f.severity = Severity::Critical;
        f.security = true;
        f.message = format!("{} ({})", f.message, cues.join("; "));
    }
    TOOL_FAMILY.push(out, f);
}
