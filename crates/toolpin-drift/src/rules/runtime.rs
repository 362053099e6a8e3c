//! Run-time and contract rules: seen by the proxy or by contract tests, not
//! by comparing manifests (except `server-version-changed`). Registered so
//! their ids are reserved.

use serde_json::Value;
use toolpin_manifest::Catalog;

use crate::finding::Finding;

crate::rules! {
    family RUNTIME_RULES, RUNTIME_FAMILY: "runtime", "Run-time and contract rules";
    intro: "The server behind a declaration that did not change. `server-version-changed` is read from the session recorded in the pin; the other ids are reserved for what only real calls show (the proxy, contract tests) and are never produced by comparing manifests.";
    SERVER_VERSION_CHANGED {
        id: "server-version-changed",
        since: "0.1.0",
        summary: "the server's serverInfo.version moved",
        breaks: "The declaration may be unchanged while the service behind it changed: results, latency, validation. Reported, never failed: it asks for contract tests, not a re-pin.",
        kind: Behavioural, severity: Info,
        rerun: ["tool-cases"],
        example: "serverInfo.version 2.0.0 → 2.1.0 with identical tools",
    }
    RESULT_NONCONFORMANT {
        id: "result-nonconformant",
        since: "0.1.0",
        summary: "a real result fails the pinned outputSchema",
        breaks: "The service returns what its declaration does not allow.",
        kind: Behavioural, severity: High, runtime: true,
        rerun: ["consumers", "tool-cases"],
        example: "a result lacks the required `total`",
    }
    RESULT_UNKNOWN_ENUM_VALUE {
        id: "result-unknown-enum-value",
        since: "0.1.0",
        summary: "a result or an argument carries an enum value never pinned",
        breaks: "The model meets, or produced, a value outside the evaluated set.",
        kind: Semantic, severity: High, runtime: true,
        rerun: ["consumers", "tool-cases"],
        example: "`status: \"on_hold\"` comes back",
    }
    UNKNOWN_TOOL_CALLED {
        id: "unknown-tool-called",
        since: "0.1.0",
        summary: "the model called a tool name that is not in the pin",
        breaks: "A call the pin does not allow: refused, never forwarded.",
        kind: Behavioural, severity: Critical, security: true, runtime: true,
        rerun: ["red-team"],
        example: "a call to `shell_exec` through the facade",
    }
    CONTRACT_FAILED {
        id: "contract-failed",
        since: "0.1.0",
        summary: "a golden call's assertion failed (field present, enum set, default, latency budget)",
        breaks: "The service no longer behaves as the agent was evaluated against.",
        kind: Behavioural, severity: High, runtime: true,
        rerun: ["tool-cases"],
        example: "`search_orders` without `page_size` returns 20 rows, not 50",
    }
    RESULT_FIELD_MISSING {
        id: "result-field-missing",
        since: "0.2.0",
        summary: "a field the recorded result had is gone, or holds another JSON type (contract run)",
        breaks: "An agent that reads the field gets nothing, or a value of a type it never handled.",
        kind: Behavioural, severity: High, runtime: true,
        rerun: ["consumers", "tool-cases"],
        example: "`/rows/*/status` (string) is no longer in the result",
    }
    RESULT_VALUE_SET_CHANGED {
        id: "result-value-set-changed",
        since: "0.2.0",
        summary: "the string values seen at a pointer differ from the recorded set (contract run)",
        breaks: "An agent branching on the values meets one it was never evaluated on, or misses one it relied on.",
        kind: Behavioural, severity: High, runtime: true,
        rerun: ["consumers", "tool-cases"],
        example: "`/rows/*/status` gains `refunded` besides open, pending, closed",
    }
    RESULT_COUNT_CHANGED {
        id: "result-count-changed",
        since: "0.2.0",
        summary: "an array in the result holds another number of items than recorded (contract run)",
        breaks: "The page size or result size the agent silently relies on moved, with the schema unchanged.",
        kind: Behavioural, severity: High, runtime: true,
        rerun: ["tool-cases"],
        example: "`/rows` held 50 items when recorded, 20 now",
    }
    LATENCY_REGRESSED {
        id: "latency-regressed",
        since: "0.2.0",
        summary: "a call's p95 latency is more than twice the recorded p95 and over 100 ms, or over the contract's budget (contract run)",
        breaks: "Timeouts and budgets the agent was tuned for no longer hold.",
        kind: Behavioural, severity: Medium, runtime: true,
        rerun: ["tool-cases"],
        example: "p95 305 ms, recorded 4 ms",
    }
    ERROR_CLASS_CHANGED {
        id: "error-class-changed",
        since: "0.2.0",
        summary: "a call answers with another class than recorded: ok, validation, rate-limit, auth, timeout, other (contract run)",
        breaks: "Retry and recovery logic written for one failure meets another.",
        kind: Behavioural, severity: High, runtime: true,
        rerun: ["tool-cases"],
        example: "a bad call that failed validation now answers rate-limit",
    }
    RESULT_FORMAT_CHANGED {
        id: "result-format-changed",
        since: "0.2.0",
        summary: "the strings at a pointer have another format than recorded: country name → ISO 3166 code, RFC 3339 with → without offset (contract run)",
        breaks: "The field still holds a string, but one the agent parses, shows or passes on differently.",
        kind: Behavioural, severity: High, runtime: true,
        rerun: ["consumers", "tool-cases"],
        example: "`/orders/*/country` held country names when recorded, ISO 3166 alpha-2 codes now",
    }
    DEFAULT_BEHAVIOUR_CHANGED {
        id: "default-behaviour-changed",
        since: "0.2.0",
        summary: "a call without a defaulted parameter and the same call with the pinned default passed differ in shape or size (contract run, default probe)",
        breaks: "The service's real default moved while the schema's `default` kept saying the old one: the agent that leaves the parameter out gets something else.",
        kind: Behavioural, severity: High, runtime: true,
        rerun: ["tool-cases"],
        example: "without `page_size`, 20 rows; with `page_size = 50`, 50 rows",
    }
    RESULT_ORDER_CHANGED {
        id: "result-order-changed",
        since: "0.2.0",
        summary: "an array that was sorted by a key when recorded is not sorted by it now, or sorted the other way (contract run)",
        breaks: "An agent that takes the first item as the newest, cheapest or best takes another one.",
        kind: Behavioural, severity: Medium, runtime: true,
        rerun: ["tool-cases"],
        example: "`/orders` was sorted by `created` descending, is ascending now",
    }
    CONTRACT_CALL_REFUSED {
        id: "contract-call-refused",
        since: "0.2.0",
        summary: "a contract's calls were not made: the session no longer lists the tool, or lists a definition that is not the pinned one and not read-only (contract record and run)",
        breaks: "The tool the contract was written for is gone or may now change or destroy data; calling it to see how it behaves could do exactly that. Fails the run whatever the policy.",
        kind: Behavioural, severity: Critical, security: true, runtime: true,
        rerun: ["authz", "tool-cases"],
        example: "`search_orders` now says `readOnlyHint: false`, `destructiveHint: true`, \"Deletes every order.\"",
    }
}

// The check: the only code that emits this family's rules.

/// The pointer of a server's version inside its lockfile entry.
pub const SERVER_VERSION_POINTER: &str = "/session/server_info/version";

/// A server present on both sides whose serverInfo.version moved.
pub(crate) fn check_server_versions(old: &Catalog, new: &Catalog, out: &mut Vec<Finding>) {
    for (name, before) in &old.servers {
        let Some(after) = new.servers.get(name) else {
            continue;
        };
        let version = |pin: &toolpin_manifest::ServerPin| {
            pin.session
                .as_ref()
                .and_then(|s| s.pointer("/server_info/version"))
                .cloned()
        };
        let (b, a) = (version(before), version(after));
        if b.is_some() && a.is_some() && b != a {
            let mut f = Finding::new(
                &SERVER_VERSION_CHANGED,
                name,
                "",
                SERVER_VERSION_POINTER.into(),
            );
            f.message = format!(
                "server {name}: version {} → {}",
                b.as_ref().map(Value::to_string).unwrap_or_default(),
                a.as_ref().map(Value::to_string).unwrap_or_default()
            );
            f.before = b;
            f.after = a;
            RUNTIME_FAMILY.push(out, f);
        }
    }
}
