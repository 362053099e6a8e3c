//! OpenTelemetry traces: a span per relayed `tools/call`, carrying the
//! catalog and tool fingerprints, so every trace says which pinned catalog
//! the agent was handed.
//!
//! Export is OTLP over HTTP with the JSON encoding (`POST …/v1/traces`),
//! which every OpenTelemetry Collector accepts; it is off unless an
//! endpoint is configured (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
//! `OTEL_EXPORTER_OTLP_ENDPOINT`, or `[proxy] otlp_endpoint`), and compiled
//! only with the `otlp` cargo feature (on by default).
//!
//! Attributes follow the MCP server span of the OpenTelemetry MCP and GenAI
//! semantic conventions (`mcp.method.name`, `mcp.protocol.version`,
//! `mcp.session.id`, `jsonrpc.request.id`, `network.*`,
//! `gen_ai.operation.name`, `gen_ai.tool.name`, `error.type`,
//! `rpc.response.status_code`; the list is kept in
//! `docs/otel/mcp-semconv.json`), plus `toolpin.catalog.fingerprint`,
//! `toolpin.tool.fingerprint`, `toolpin.server`, `toolpin.upstream.tool`
//! and `toolpin.error.class`. Refused calls get a span too.
//! A W3C `traceparent` in the request's `params._meta` is honoured (the
//! span joins the agent's trace), and the relayed request carries the
//! proxy's span as its `traceparent`, so the upstream can continue it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::mpsc;
use toolpin_manifest::text::hex;
use toolpin_manifest::time::Timestamp;
use toolpin_manifest::wire::{event, resource, span};

/// Spans sent per export request.
const BATCH: usize = 512;
/// Longest a finished span waits for export.
const INTERVAL: Duration = Duration::from_secs(1);

/// How often at most a failed export is logged; every failure is counted.
pub const FAILURE_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// The exporter, or nothing.
#[derive(Default)]
pub struct Telemetry {
    tx: Option<mpsc::UnboundedSender<Export>>,
    health: Arc<Health>,
}

/// Failed exports: counted (`toolpin_otlp_export_failures_total`) and
/// logged as an `otlp-export-failed` event at most once per
/// [`FAILURE_LOG_INTERVAL`], with the number of failures since the last.
#[derive(Default)]
pub struct Health {
    failures: AtomicU64,
    /// Failures not yet logged.
    unlogged: AtomicU64,
    last_logged: Mutex<Option<Instant>>,
    log: OnceLock<Arc<crate::events::Log>>,
}

impl Health {
    /// Exports that failed since start.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    #[cfg_attr(not(feature = "otlp"), allow(dead_code))]
    fn failed(&self, spans: usize, why: &str) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        let unlogged = self.unlogged.fetch_add(1, Ordering::Relaxed) + 1;
        let due = match self.last_logged.lock() {
            Ok(mut last) => {
                let due = last.is_none_or(|t| t.elapsed() >= FAILURE_LOG_INTERVAL);
                if due {
                    *last = Some(Instant::now());
                }
                due
            }
            Err(_) => false,
        };
        if !due {
            return;
        }
        self.unlogged.fetch_sub(unlogged, Ordering::Relaxed);
        let fields = json!({
            "message": why,
            "spans": spans,
            "failures": unlogged,
            "failures_total": self.failures(),
        });
        match self.log.get() {
            Some(log) => log.emit(event::OTLP_EXPORT_FAILED, fields),
            None => eprintln!("toolpin proxy: OTLP export failed: {why}"),
        }
    }
}

enum Export {
    Span(Value),
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// How the agent is connected, for the spans' `network.*` and
/// `mcp.session.id` attributes; fixed for a session's life.
#[derive(Clone, Default)]
pub struct Link {
    /// `network.transport`: `pipe` for stdio, `tcp` for HTTP.
    pub transport: &'static str,
    /// `network.protocol.name` and `.version` (`http`, `1.1`), when the
    /// transport has one.
    pub protocol: Option<(&'static str, &'static str)>,
    /// The HTTP `Mcp-Session-Id`; none on stdio or for stateless clients.
    pub session_id: Option<String>,
    /// The agent's own id for a request the HTTP front renumbered (see
    /// `http::Streams::register`), for `jsonrpc.request.id`.
    pub agent_id: Option<Arc<AgentIds>>,
}

/// Looks up the id the agent gave a request, by the front's id for it.
pub type AgentIds = dyn Fn(&Value) -> Option<Value> + Send + Sync;

impl Link {
    /// An agent on standard input and output.
    pub fn stdio() -> Self {
        Self {
            transport: "pipe",
            ..Self::default()
        }
    }
}

/// What a span is about.
pub struct CallInfo<'a> {
    /// The name the model called.
    pub tool: &'a str,
    /// The served tool: its server, the name the upstream knows, its
    /// fingerprint. `None` for a tool the catalog does not serve.
    pub route: Option<RouteInfo<'a>>,
    pub catalog_fingerprint: &'a str,
    /// The request's `params._meta` (W3C trace context: `traceparent`).
    pub meta: Option<&'a Value>,
    /// The request's id as the session saw it (`null`: not recorded).
    pub request_id: &'a Value,
    /// The negotiated MCP revision, if known.
    pub protocol_version: Option<&'a str>,
    pub link: &'a Link,
}

/// The served tool a span is about.
pub struct RouteInfo<'a> {
    pub server: &'a str,
    pub upstream_tool: &'a str,
    pub tool_fingerprint: &'a str,
}

/// How a call failed, for the span.
pub struct Failure<'a> {
    /// `error.type`: the JSON-RPC error code an upstream answered with,
    /// `tool_error` for a result with `isError`, a refusal's rule id, or
    /// the proxy's class (`timeout`, `upstream`, `cancelled`).
    pub error_type: &'a str,
    /// `rpc.response.status_code`: the JSON-RPC error code of the answer
    /// the agent got, if it got one.
    pub status_code: Option<i64>,
    /// `toolpin.error.class`: the class the metrics count it under.
    pub class: &'a str,
    /// The span status description.
    pub message: &'a str,
}

/// One call's span, ended with [`CallSpan::finish`].
pub struct CallSpan {
    tx: mpsc::UnboundedSender<Export>,
    trace_id: String,
    span_id: String,
    parent: Option<String>,
    flags: String,
    name: String,
    start: Timestamp,
    attributes: Vec<Value>,
}

/// Where traces go: the traces endpoint as given, or `/v1/traces` under
/// the base endpoint.
pub fn endpoint_from_env(configured: Option<&str>) -> Option<String> {
    if let Ok(e) = std::env::var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        if !e.trim().is_empty() {
            return Some(e.trim().to_string());
        }
    }
    let base = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT")
        .ok()
        .filter(|e| !e.trim().is_empty())
        .or_else(|| configured.map(str::to_string))?;
    let base = base.trim().trim_end_matches('/');
    Some(if base.ends_with("/v1/traces") {
        base.to_string()
    } else {
        format!("{base}/v1/traces")
    })
}

impl Telemetry {
    /// No export.
    pub fn disabled() -> Self {
        Self::default()
    }

    /// Exports to `endpoint` (a full `…/v1/traces` URL) from a background
    /// task; must be called inside a tokio runtime. `headers` are sent with
    /// every export (`OTEL_EXPORTER_OTLP_HEADERS` style, already parsed).
    #[cfg(feature = "otlp")]
    pub fn otlp(endpoint: String, headers: Vec<(String, String)>) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("OTLP exporter: {e}"))?;
        let (tx, rx) = mpsc::unbounded_channel();
        let health = Arc::new(Health::default());
        tokio::spawn(export_loop(
            client,
            endpoint,
            headers,
            rx,
            Arc::clone(&health),
            resource_from_env(),
        ));
        Ok(Self {
            tx: Some(tx),
            health,
        })
    }

    /// The exporter's failures.
    pub fn health(&self) -> &Arc<Health> {
        &self.health
    }

    /// Where failed exports are logged (else standard error).
    pub fn log_failures_to(&self, log: Arc<crate::events::Log>) {
        let _ = self.health.log.set(log);
    }

    /// Whether spans are exported.
    pub fn enabled(&self) -> bool {
        self.tx.is_some()
    }

    /// Starts the span for one call (relayed, or refused: then finished
    /// at once). `None` unless spans are exported, so nothing is built
    /// per call otherwise.
    pub fn start_call(&self, info: CallInfo) -> Option<CallSpan> {
        let tx = self.tx.clone()?;
        let context = info
            .meta
            .and_then(|m| m.get("traceparent"))
            .and_then(Value::as_str)
            .and_then(parse_traceparent);
        let (trace_id, parent, flags) = match context {
            Some((t, p, f)) => (t, Some(p), f),
            None => (hex(&random_bytes::<16>()), None, "01".to_string()),
        };
        let s = |k: &str, v: &str| json!({"key": k, "value": {"stringValue": v}});
        // The MCP server span's attributes (semantic-conventions-genai,
        // docs/gen-ai/mcp.md; the list kept in docs/otel/mcp-semconv.json).
        let mut attributes = Vec::with_capacity(14);
        attributes.push(s(span::MCP_METHOD_NAME, span::METHOD_TOOLS_CALL));
        attributes.push(s(span::GEN_AI_OPERATION_NAME, span::OPERATION_EXECUTE_TOOL));
        attributes.push(s(span::GEN_AI_TOOL_NAME, info.tool));
        attributes.push(s(span::NETWORK_TRANSPORT, info.link.transport));
        if let Some((name, version)) = info.link.protocol {
            attributes.push(s(span::NETWORK_PROTOCOL_NAME, name));
            attributes.push(s(span::NETWORK_PROTOCOL_VERSION, version));
        }
        if let Some(id) = &info.link.session_id {
            attributes.push(s(span::MCP_SESSION_ID, id));
        }
        if let Some(v) = info.protocol_version {
            attributes.push(s(span::MCP_PROTOCOL_VERSION, v));
        }
        // The agent's id, not the one the HTTP front gave the request; a
        // `null` id is not recorded (the convention says so).
        let agent_id = info.link.agent_id.as_ref().and_then(|f| f(info.request_id));
        match agent_id.as_ref().unwrap_or(info.request_id) {
            Value::Null => {}
            Value::String(id) => attributes.push(s(span::JSONRPC_REQUEST_ID, id)),
            other => attributes.push(s(span::JSONRPC_REQUEST_ID, &other.to_string())),
        }
        if let Some(r) = &info.route {
            attributes.push(s(span::TOOLPIN_SERVER, r.server));
            attributes.push(s(span::TOOLPIN_UPSTREAM_TOOL, r.upstream_tool));
            attributes.push(s(span::TOOLPIN_TOOL_FINGERPRINT, r.tool_fingerprint));
        }
        attributes.push(s(
            span::TOOLPIN_CATALOG_FINGERPRINT,
            info.catalog_fingerprint,
        ));
        Some(CallSpan {
            tx,
            trace_id,
            span_id: hex(&random_bytes::<8>()),
            parent,
            flags,
            name: format!("tools/call {}", info.tool),
            start: Timestamp::now(),
            attributes,
        })
    }

    /// Waits until every finished span has been sent (at shutdown).
    pub async fn flush(&self) {
        let Some(tx) = &self.tx else { return };
        let (done, wait) = tokio::sync::oneshot::channel();
        if tx.send(Export::Flush(done)).is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(5), wait).await;
        }
    }
}

impl CallSpan {
    /// The W3C `traceparent` naming this span, for the relayed request.
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-{}", self.trace_id, self.span_id, self.flags)
    }

    /// Ends the span: `error` says how the call failed, if it did.
    pub fn finish(mut self, error: Option<Failure>) {
        let status = match error {
            Some(f) => {
                let s = |k: &str, v: &str| json!({"key": k, "value": {"stringValue": v}});
                self.attributes.push(s(span::ERROR_TYPE, f.error_type));
                if let Some(code) = f.status_code {
                    self.attributes
                        .push(s(span::RPC_RESPONSE_STATUS_CODE, &code.to_string()));
                }
                self.attributes.push(s(span::TOOLPIN_ERROR_CLASS, f.class));
                json!({"code": 2, "message": f.message})
            }
            None => json!({"code": 1}),
        };
        let mut span = json!({
            "traceId": self.trace_id,
            "spanId": self.span_id,
            "name": self.name,
            "kind": 2,
            "startTimeUnixNano": self.start.unix_nanos().to_string(),
            "endTimeUnixNano": Timestamp::now().unix_nanos().to_string(),
            "attributes": self.attributes,
            "status": status,
        });
        if let Some(p) = &self.parent {
            span["parentSpanId"] = json!(p);
        }
        let _ = self.tx.send(Export::Span(span));
    }
}

#[cfg(feature = "otlp")]
async fn export_loop(
    client: reqwest::Client,
    endpoint: String,
    headers: Vec<(String, String)>,
    mut rx: mpsc::UnboundedReceiver<Export>,
    health: Arc<Health>,
    resource: Value,
) {
    let flush = |batch: &mut Vec<Value>| {
        send(
            &client,
            &endpoint,
            &headers,
            &resource,
            std::mem::take(batch),
            &health,
        )
    };
    let mut batch: Vec<Value> = Vec::new();
    // A span waits at most INTERVAL from when its batch started.
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        let next = match deadline {
            Some(d) => match tokio::time::timeout_at(d, rx.recv()).await {
                Ok(m) => m,
                Err(_) => {
                    flush(&mut batch).await;
                    deadline = None;
                    continue;
                }
            },
            None => rx.recv().await,
        };
        match next {
            Some(Export::Span(s)) => {
                if batch.is_empty() {
                    deadline = Some(tokio::time::Instant::now() + INTERVAL);
                }
                batch.push(s);
                if batch.len() >= BATCH {
                    flush(&mut batch).await;
                    deadline = None;
                }
            }
            Some(Export::Flush(done)) => {
                flush(&mut batch).await;
                deadline = None;
                let _ = done.send(());
            }
            None => {
                flush(&mut batch).await;
                return;
            }
        }
    }
}

/// One OTLP/JSON export request. Telemetry never blocks or fails a call: a
/// failure is counted in `health` and logged at most once a minute.
#[cfg(feature = "otlp")]
async fn send(
    client: &reqwest::Client,
    endpoint: &str,
    headers: &[(String, String)],
    resource: &Value,
    spans: Vec<Value>,
    health: &Health,
) {
    if spans.is_empty() {
        return;
    }
    let count = spans.len();
    let body = json!({
        "resourceSpans": [{
            "resource": resource,
            "scopeSpans": [{
                "scope": {"name": "toolpin-proxy", "version": env!("CARGO_PKG_VERSION")},
                "spans": spans,
            }],
        }],
    });
    let mut req = client
        .post(endpoint)
        .header("content-type", "application/json")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    match req.send().await {
        Ok(r) if r.status().is_success() => {}
        Ok(r) => health.failed(count, &format!("{endpoint}: HTTP {}", r.status())),
        Err(e) => health.failed(count, &format!("{endpoint}: {e}")),
    }
}

/// The exported resource: `service.name` (`OTEL_SERVICE_NAME`, else the
/// same key in `OTEL_RESOURCE_ATTRIBUTES`, else `toolpin-proxy`),
/// `service.version` and every other `OTEL_RESOURCE_ATTRIBUTES` entry. This
/// is how a deployment names its environment and tenant
/// (`deployment.environment.name`, `tenant.id`) for `toolpin usage`.
#[cfg(feature = "otlp")]
fn resource_from_env() -> Value {
    let listed = std::env::var("OTEL_RESOURCE_ATTRIBUTES").unwrap_or_default();
    let listed = parse_resource_attributes(&listed).unwrap_or_else(|e| {
        // The SDK specification: a malformed value is discarded whole.
        eprintln!("toolpin proxy: OTEL_RESOURCE_ATTRIBUTES ignored: {e}");
        Vec::new()
    });
    resource(std::env::var("OTEL_SERVICE_NAME").ok(), listed)
}

#[cfg_attr(not(feature = "otlp"), allow(dead_code))]
fn resource(service_name: Option<String>, listed: Vec<(String, String)>) -> Value {
    let mut attributes: Vec<(String, String)> = Vec::new();
    let mut set = |key: &str, value: String| match attributes.iter_mut().find(|(k, _)| k == key) {
        Some(slot) => slot.1 = value,
        None => attributes.push((key.to_string(), value)),
    };
    set(resource::SERVICE_NAME, "toolpin-proxy".to_string());
    set(
        resource::SERVICE_VERSION,
        env!("CARGO_PKG_VERSION").to_string(),
    );
    for (k, v) in listed {
        set(&k, v);
    }
    if let Some(name) = service_name.filter(|n| !n.is_empty()) {
        set(resource::SERVICE_NAME, name);
    }
    let attributes: Vec<Value> = attributes
        .into_iter()
        .map(|(k, v)| json!({"key": k, "value": {"stringValue": v}}))
        .collect();
    json!({ "attributes": attributes })
}

/// `key1=value1,key2=value2` with percent-encoded values, as the SDKs read
/// `OTEL_RESOURCE_ATTRIBUTES`; surrounding blanks are trimmed and empty
/// entries skipped. A later duplicate key wins.
#[cfg_attr(not(feature = "otlp"), allow(dead_code))]
fn parse_resource_attributes(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for entry in text.split(',') {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        let Some((key, value)) = entry.split_once('=') else {
            return Err(format!("{entry:?} is not key=value"));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(format!("{entry:?} has an empty key"));
        }
        let value = percent_encoding::percent_decode_str(value.trim())
            .decode_utf8()
            .map_err(|_| format!("the value of {key:?} is not UTF-8 once percent-decoded"))?;
        out.retain(|(k, _)| k != key);
        out.push((key.to_string(), value.into_owned()));
    }
    Ok(out)
}

/// `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`; all-zero ids
/// are invalid.
fn parse_traceparent(s: &str) -> Option<(String, String, String)> {
    let mut parts = s.trim().split('-');
    let (version, trace, parent, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let is_hex = |x: &str, n: usize| x.len() == n && x.bytes().all(|b| b.is_ascii_hexdigit());
    if !is_hex(version, 2)
        || version == "ff"
        || !is_hex(trace, 32)
        || !is_hex(parent, 16)
        || !is_hex(flags, 2)
    {
        return None;
    }
    if trace.bytes().all(|b| b == b'0') || parent.bytes().all(|b| b == b'0') {
        return None;
    }
    Some((
        trace.to_ascii_lowercase(),
        parent.to_ascii_lowercase(),
        flags.to_ascii_lowercase(),
    ))
}

/// `N` bytes from the system's generator (`getrandom(2)`). There is no
/// fallback: a trace or session id made from the clock could be guessed,
/// and the generator fails only where the kernel has none to offer.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    getrandom::getrandom(&mut out).expect("the system's random number generator");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_attributes_follow_the_sdk_reading() {
        let parsed = parse_resource_attributes(
            " deployment.environment.name = prod ,tenant.id=acme%2Cinc,, service.name=shop,tenant.id=acme%20co",
        )
        .expect("valid");
        assert_eq!(
            parsed,
            vec![
                (
                    "deployment.environment.name".to_string(),
                    "prod".to_string()
                ),
                ("service.name".to_string(), "shop".to_string()),
                ("tenant.id".to_string(), "acme co".to_string()),
            ]
        );
        assert_eq!(parse_resource_attributes("").expect("empty"), vec![]);
        for bad in ["novalue", "=x", "k=%FF%FE"] {
            assert!(parse_resource_attributes(bad).is_err(), "{bad}");
        }
        let keys = |r: &Value| -> Vec<(String, String)> {
            r["attributes"]
                .as_array()
                .expect("array")
                .iter()
                .map(|a| {
                    (
                        a["key"].as_str().expect("key").to_string(),
                        a["value"]["stringValue"]
                            .as_str()
                            .expect("value")
                            .to_string(),
                    )
                })
                .collect()
        };
        // OTEL_SERVICE_NAME wins over the listed service.name, which wins
        // over the default; the rest keep their order.
        let r = resource(Some("agent-gw".into()), parsed.clone());
        assert_eq!(keys(&r)[0], ("service.name".into(), "agent-gw".into()));
        assert_eq!(keys(&r)[2].0, "deployment.environment.name");
        assert_eq!(keys(&r)[3], ("tenant.id".into(), "acme co".into()));
        let r = resource(None, parsed);
        assert_eq!(keys(&r)[0], ("service.name".into(), "shop".into()));
        let r = resource(None, vec![]);
        assert_eq!(
            keys(&r),
            vec![
                ("service.name".into(), "toolpin-proxy".into()),
                ("service.version".into(), env!("CARGO_PKG_VERSION").into())
            ]
        );
    }

    #[test]
    fn traceparent_parsing() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(
            parse_traceparent(tp),
            Some((
                "4bf92f3577b34da6a3ce929d0e0e4736".into(),
                "00f067aa0ba902b7".into(),
                "01".into()
            ))
        );
        for bad in [
            "",
            "00-0000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-xyz",
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad}");
        }
        assert_ne!(random_bytes::<8>(), random_bytes::<8>());
    }

    #[test]
    fn endpoints() {
        // Only the configured value: the env is not set in unit tests
        // (the variables are read first, so skip when a developer set them).
        if std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").is_ok()
            || std::env::var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_ok()
        {
            return;
        }
        assert_eq!(
            endpoint_from_env(Some("http://collector:4318/")),
            Some("http://collector:4318/v1/traces".into())
        );
        assert_eq!(endpoint_from_env(None), None);
    }

    /// A collector that is not there: every failed export is counted, the
    /// first logged, the next within the minute not.
    #[cfg(feature = "otlp")]
    #[test]
    fn failed_exports_are_counted_and_logged_once_a_minute() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let telemetry = Telemetry::otlp(format!("http://127.0.0.1:{port}/v1/traces"), vec![])
                .expect("exporter");
            let log = Arc::new(crate::events::Log::new(
                crate::events::Sink::Memory(Mutex::new(Vec::new())),
                toolpin_manifest::Redactor::default(),
            ));
            telemetry.log_failures_to(Arc::clone(&log));
            for _ in 0..2 {
                let span = telemetry
                    .start_call(CallInfo {
                        tool: "t",
                        route: Some(RouteInfo {
                            server: "s",
                            upstream_tool: "t",
                            tool_fingerprint: "f",
                        }),
                        catalog_fingerprint: "c",
                        meta: None,
                        request_id: &json!(1),
                        protocol_version: None,
                        link: &Link::stdio(),
                    })
                    .expect("a span");
                span.finish(None);
                telemetry.flush().await;
            }
            assert_eq!(telemetry.health().failures(), 2);
            let logged: Vec<Value> = log
                .recorded()
                .into_iter()
                .filter(|e| e["event"] == "otlp-export-failed")
                .collect();
            assert_eq!(logged.len(), 1, "{logged:#?}");
            assert_eq!(logged[0]["failures"], 1);
            let metrics =
                crate::metrics::Metrics::with_export_health(Arc::clone(telemetry.health()));
            assert!(metrics
                .render("abc")
                .contains("\ntoolpin_otlp_export_failures_total 2\n"));
        });
    }
}
