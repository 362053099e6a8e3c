//! Annotation rules. Absent hints take their spec defaults before comparing
//! (readOnlyHint false, destructiveHint true, idempotentHint false,
//! openWorldHint true), so only a change of the effective value is a flip.

crate::rules! {
    family ANNOTATION_RULES, ANNOTATION_FAMILY: "annotation", "Annotation rules";
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
}
