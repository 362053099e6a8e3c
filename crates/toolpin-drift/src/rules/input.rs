//! inputSchema rules: the agent produces arguments, so a change that narrows
//! what is accepted breaks calls loudly, and one that widens may move meaning.

crate::rules! {
    family INPUT_RULES, INPUT_FAMILY: "input", "inputSchema rules";
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
    INPUT_DEFAULT_CHANGED {
        id: "input-default-changed",
        since: "0.1.0",
        summary: "`default` added, removed or changed",
        breaks: "Calls that omit the argument behave differently with nothing in the call changing: page size 50 → 20 and the agent sees less data; dry_run true → false and it acts. High for booleans and limit/page/size/confirm/force/dry-run names.",
        kind: Semantic, severity: Medium,
        rerun: ["tool-cases"],
        example: "`page_size` default 50 → 20",
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
}
