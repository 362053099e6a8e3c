//! Source rules: the settings that turn a server's source into tools,
//! recorded in the lockfile's `source`, changed between the two sides.

crate::rules! {
    family SOURCE_RULES, SOURCE_FAMILY: "source", "Source rules";
    CONVERSION_CHANGED {
        id: "conversion-changed",
        since: "0.1.0",
        summary: "a conversion setting of an OpenAPI source changed (its `source.conversion` in the lockfile: body layout, outputSchema, operation pickers, remote references, converter version)",
        breaks: "Every tool of the server can change at once for a reason no upstream edit explains: merging the body moves every argument, dropping outputSchema takes away what consumers validate against, a picker adds or removes whole groups of operations. The tool findings beside it say what moved; this one says why, so the change is reviewed as a change to the catalog.",
        kind: Semantic, severity: Medium,
        rerun: ["trajectory", "tool-cases"],
        example: "`body` \"property\" → \"merge\", or `include_tags` [\"repos\"] → [\"repos\", \"issues\"], on an openapi server",
    }
}
