//! outputSchema rules: the agent consumes results, so a change that widens
//! what may come back is the dangerous one: the model meets values it has
//! never seen.

crate::rules! {
    family OUTPUT_RULES, OUTPUT_FAMILY: "output", "outputSchema rules";
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
    OUTPUT_FORMAT_CHANGED {
        id: "output-format-changed",
        since: "0.1.0",
        summary: "`format` or `pattern` of a result value changed",
        breaks: "The same field now means something else (a country name becomes an ISO code).",
        kind: Semantic, severity: High,
        rerun: ["consumers", "trajectory"],
        example: "`created` changes from `date` to `date-time`",
    }
    OUTPUT_BOUND_RELAXED {
        id: "output-bound-relaxed",
        since: "0.1.0",
        summary: "larger or unbounded results",
        breaks: "More tokens reach the context window; budgets may no longer hold.",
        kind: Semantic, severity: Medium,
        rerun: ["consumers", "budget"],
        example: "`items` maxItems 50 → unbounded",
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
