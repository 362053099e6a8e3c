//! Tool-level rules: a tool appears, disappears, is renamed, or its own
//! prose and members change.

crate::rules! {
    family TOOL_RULES, TOOL_FAMILY: "tool", "Tool-level rules";
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
