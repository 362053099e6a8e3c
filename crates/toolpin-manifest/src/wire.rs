//! The names on the wire between `toolpin proxy` and `toolpin usage`: the
//! attributes of the proxy's `tools/call` spans and of their resource
//! (OpenTelemetry's MCP and GenAI semantic conventions, kept in
//! docs/otel/mcp-semconv.json, and toolpin's own `toolpin.*`), and the
//! kinds and fields of the proxy's event log. The proxy writes them and
//! toolpin-usage reads them from these constants only; the tests in
//! `tests/wire.rs` hold docs/otel/mcp-semconv.json, docs/proxy.md and
//! docs/usage.md to exactly these names.

/// Span attributes.
pub mod span {
    /// `tools/call` on a tool call's span ([`METHOD_TOOLS_CALL`]).
    pub const MCP_METHOD_NAME: &str = "mcp.method.name";
    /// `execute_tool` on a tool call's span ([`OPERATION_EXECUTE_TOOL`]).
    pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
    pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
    pub const NETWORK_TRANSPORT: &str = "network.transport";
    pub const NETWORK_PROTOCOL_NAME: &str = "network.protocol.name";
    pub const NETWORK_PROTOCOL_VERSION: &str = "network.protocol.version";
    pub const MCP_SESSION_ID: &str = "mcp.session.id";
    pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
    pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
    pub const ERROR_TYPE: &str = "error.type";
    pub const RPC_RESPONSE_STATUS_CODE: &str = "rpc.response.status_code";
    /// Read, never written by the proxy: other agents' spans carry them.
    pub const GEN_AI_AGENT_NAME: &str = "gen_ai.agent.name";
    pub const GEN_AI_TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";

    pub const TOOLPIN_SERVER: &str = "toolpin.server";
    pub const TOOLPIN_UPSTREAM_TOOL: &str = "toolpin.upstream.tool";
    pub const TOOLPIN_TOOL_FINGERPRINT: &str = "toolpin.tool.fingerprint";
    pub const TOOLPIN_CATALOG_FINGERPRINT: &str = "toolpin.catalog.fingerprint";
    pub const TOOLPIN_ERROR_CLASS: &str = "toolpin.error.class";

    /// The value of [`MCP_METHOD_NAME`] that makes a span a tool call.
    pub const METHOD_TOOLS_CALL: &str = "tools/call";
    /// The value of [`GEN_AI_OPERATION_NAME`] that makes a span a tool call.
    pub const OPERATION_EXECUTE_TOOL: &str = "execute_tool";

    /// Every attribute the proxy writes on a `tools/call` span.
    pub const WRITTEN: &[&str] = &[
        MCP_METHOD_NAME,
        GEN_AI_OPERATION_NAME,
        GEN_AI_TOOL_NAME,
        NETWORK_TRANSPORT,
        NETWORK_PROTOCOL_NAME,
        NETWORK_PROTOCOL_VERSION,
        MCP_SESSION_ID,
        MCP_PROTOCOL_VERSION,
        JSONRPC_REQUEST_ID,
        ERROR_TYPE,
        RPC_RESPONSE_STATUS_CODE,
        TOOLPIN_SERVER,
        TOOLPIN_UPSTREAM_TOOL,
        TOOLPIN_TOOL_FINGERPRINT,
        TOOLPIN_CATALOG_FINGERPRINT,
        TOOLPIN_ERROR_CLASS,
    ];

    /// Every span attribute toolpin-usage reads (besides the tenant key,
    /// which its caller names, and [`super::resource`]'s environment).
    pub const READ: &[&str] = &[
        MCP_METHOD_NAME,
        GEN_AI_OPERATION_NAME,
        GEN_AI_TOOL_NAME,
        ERROR_TYPE,
        TOOLPIN_CATALOG_FINGERPRINT,
        TOOLPIN_TOOL_FINGERPRINT,
        GEN_AI_AGENT_NAME,
        GEN_AI_TOOL_CALL_ARGUMENTS,
    ];
}

/// Resource attributes.
pub mod resource {
    pub const SERVICE_NAME: &str = "service.name";
    pub const SERVICE_VERSION: &str = "service.version";
    pub const DEPLOYMENT_ENVIRONMENT_NAME: &str = "deployment.environment.name";
    /// The name before semantic conventions 1.27, still read.
    pub const DEPLOYMENT_ENVIRONMENT: &str = "deployment.environment";
    /// The tenant attribute toolpin-usage reads unless told another.
    pub const TENANT_ID: &str = "tenant.id";

    /// What the proxy sets on its resource (before `OTEL_RESOURCE_ATTRIBUTES`
    /// and `OTEL_SERVICE_NAME`).
    pub const WRITTEN: &[&str] = &[SERVICE_NAME, SERVICE_VERSION];

    /// What toolpin-usage reads, on the resource (and, but for
    /// `service.name`, on the span first).
    pub const READ: &[&str] = &[
        DEPLOYMENT_ENVIRONMENT_NAME,
        DEPLOYMENT_ENVIRONMENT,
        SERVICE_NAME,
        TENANT_ID,
    ];
}

/// The proxy's event log: one JSON object per line.
pub mod event {
    /// RFC 3339 UTC, to the millisecond.
    pub const TIME: &str = "time";
    /// The kind: one of [`KINDS`].
    pub const EVENT: &str = "event";
    /// The fields toolpin-usage keys its counts by.
    pub const SERVER: &str = "server";
    pub const TOOL: &str = "tool";
    pub const RULE: &str = "rule";
    pub const CATALOG: &str = "catalog";

    pub const DRIFT: &str = "drift";
    pub const DRIFT_FAIL: &str = "drift-fail";
    pub const REFUSED: &str = "refused";
    pub const INVALID_ARGUMENTS: &str = "invalid-arguments";
    pub const FINDING: &str = "finding";
    pub const TOOL_WITHDRAWN: &str = "tool-withdrawn";
    pub const TOOL_RESTORED: &str = "tool-restored";
    pub const FLAGS_ERROR: &str = "flags-error";
    pub const FACADE_ERROR: &str = "facade-error";
    pub const UPSTREAM_CLOSED: &str = "upstream-closed";
    pub const UPSTREAM_RESTARTED: &str = "upstream-restarted";
    pub const UPSTREAM_WEDGED: &str = "upstream-wedged";
    pub const RECAPTURE_FAILED: &str = "recapture-failed";
    pub const REFUSED_HOST: &str = "refused-host";
    pub const LISTENING: &str = "listening";
    pub const SESSION_EXPIRED: &str = "session-expired";
    pub const SESSION_REFUSED: &str = "session-refused";
    pub const ACCEPT_FAILED: &str = "accept-failed";
    pub const OTLP_EXPORT_FAILED: &str = "otlp-export-failed";

    /// Every kind the proxy writes.
    pub const KINDS: &[&str] = &[
        DRIFT,
        DRIFT_FAIL,
        REFUSED,
        INVALID_ARGUMENTS,
        FINDING,
        TOOL_WITHDRAWN,
        TOOL_RESTORED,
        FLAGS_ERROR,
        FACADE_ERROR,
        UPSTREAM_CLOSED,
        UPSTREAM_RESTARTED,
        UPSTREAM_WEDGED,
        RECAPTURE_FAILED,
        REFUSED_HOST,
        LISTENING,
        SESSION_EXPIRED,
        SESSION_REFUSED,
        ACCEPT_FAILED,
        OTLP_EXPORT_FAILED,
    ];
}
