//! One agent connection: the relay between the agent and its upstream
//! sessions.
//!
//! - `tools/list` is answered from the served catalog, never upstream.
//! - `tools/call` is checked (known, not withdrawn, not blocked by drift,
//!   arguments valid), reshaped by the facade, relayed, and its result
//!   checked against the pinned outputSchema.
//! - Everything else is relayed with ids mapped both ways: the agent's
//!   requests to the upstream that serves them, the servers' requests
//!   (sampling, elicitation, roots, ping) to the agent, notifications
//!   (progress, logging, cancellation) in both directions. A message the
//!   proxy does not understand goes through untouched.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use toolpin_manifest::wire::event;

use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use toolpin_capture::mcp::{VersionChoice, HANDSHAKE_VERSIONS, STATELESS_VERSION};
use toolpin_manifest::PinBuilder;

use crate::metrics::ErrorClass;
use crate::served::Route;
use crate::upstream::{Event, Events, FrontCall, Upstream, UpstreamSpec, Waiter};
use crate::validate::ViolationKind;
use crate::wire::{Call, Outgoing, Reply};
use crate::Proxy;

/// How often deadlines are checked while calls are in flight.
const TICK: std::time::Duration = std::time::Duration::from_millis(100);

use crate::jsonrpc::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, REQUEST_TIMEOUT,
};

mod calls;
mod merge;
mod results;

/// What the agent declared about itself.
#[derive(Clone, Debug)]
struct ClientInit {
    protocol_version: Option<String>,
    capabilities: Value,
    client_info: Option<Value>,
    stateless: bool,
}

/// A request on its way upstream.
enum Outbound {
    Tree(Value),
    /// A `tools/call` as the agent wrote it, with its arguments in the
    /// upstream's shape (for when it has to be parsed: see [`relay_path`]).
    Call(Call, Value),
}

/// How a `tools/call` goes upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RelayPath {
    /// As the text the agent wrote: a new id, the server's name for the
    /// tool, and the proxy's span in `_meta` when traces are exported.
    Text,
    /// Parsed into a tree, changed, and printed again.
    Parsed,
}

/// The one place that decides whether a `tools/call` is relayed as text or
/// parsed. It is parsed only when the text cannot say what the upstream
/// must get: the facade reshapes the arguments (renames, fixed values),
/// `null` arguments go up as `{}`, the stateless revision adds its own
/// `_meta`, or the agent's `_meta` names a protocol version (the upstream
/// gets the one it negotiated). A trace context does not parse the call:
/// it is spliced into `_meta` ([`Call::to_upstream_traced`]).
fn relay_path(call: &Call, route: &Route, upstream: &Upstream) -> RelayPath {
    if route.reshapes()
        || call.arguments() == Some("null")
        || upstream.adds_meta()
        || call.names_protocol_version()
    {
        RelayPath::Parsed
    } else {
        RelayPath::Text
    }
}

impl Outbound {
    /// As a tree; a call gets the server's name for the tool.
    fn into_tree(self, tool: Option<&(String, Arc<Route>)>) -> Value {
        match self {
            Outbound::Tree(message) => message,
            Outbound::Call(call, upstream_args) => {
                let mut message = call.into_value();
                let params = message.get_mut("params").and_then(Value::as_object_mut);
                if let (Some(params), Some((_, route))) = (params, tool) {
                    params.insert("name".into(), json!(route.upstream_name));
                    params.insert("arguments".into(), upstream_args);
                }
                message
            }
        }
    }
}

/// One agent connection.
pub struct Session {
    proxy: Arc<Proxy>,
    to_client: mpsc::UnboundedSender<Outgoing>,
    upstreams: tokio::sync::Mutex<BTreeMap<String, Arc<Upstream>>>,
    init: Mutex<Option<ClientInit>>,
    initialized: AtomicBool,
    /// The servers' requests awaiting the agent's answer: the id the agent
    /// saw → (server, the server's id).
    client_requests: Mutex<HashMap<String, (String, Value)>>,
    next_client_request: AtomicU64,
    /// Multi-upstream routing learned from list results: resource URI or
    /// prompt name → server.
    resource_owner: Mutex<HashMap<String, String>>,
    prompt_owner: Mutex<HashMap<String, String>>,
    /// Servers being listed again after `tools/list_changed` → whether
    /// another notification came meanwhile (one more round then).
    recapturing: Mutex<HashMap<String, bool>>,
    /// Wakes the deadline ticker when a call is relayed (and when the
    /// session ends, so that it stops).
    ticking: Arc<tokio::sync::Notify>,
    /// How the agent is connected (for the spans).
    link: crate::telemetry::Link,
    /// The MCP revision answered to `initialize` (for the spans).
    negotiated: Mutex<Option<String>>,
}

impl Drop for Session {
    fn drop(&mut self) {
        // The ticker wakes, finds the session gone, and ends.
        self.ticking.notify_one();
    }
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

/// A JSON-RPC error response.
pub fn error_response(
    id: &Value,
    code: i64,
    message: impl Into<String>,
    data: Option<Value>,
) -> Value {
    let mut error = json!({"code": code, "message": message.into()});
    if let Some(d) = data {
        error["data"] = d;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

fn result_response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

impl Session {
    /// A session whose messages to the agent go to `to_client`; `link`
    /// says how the agent is connected.
    pub fn start(
        proxy: Arc<Proxy>,
        to_client: mpsc::UnboundedSender<Outgoing>,
        link: crate::telemetry::Link,
    ) -> Arc<Self> {
        let session = Arc::new(Self {
            proxy: Arc::clone(&proxy),
            to_client,
            upstreams: tokio::sync::Mutex::new(BTreeMap::new()),
            init: Mutex::new(None),
            initialized: AtomicBool::new(false),
            client_requests: Mutex::new(HashMap::new()),
            next_client_request: AtomicU64::new(1),
            resource_owner: Mutex::new(HashMap::new()),
            prompt_owner: Mutex::new(HashMap::new()),
            recapturing: Mutex::new(HashMap::new()),
            ticking: Arc::new(tokio::sync::Notify::new()),
            link,
            negotiated: Mutex::new(None),
        });
        // Deadlines: checked every tick while calls are in flight, asleep
        // otherwise. A call times out within one tick of its deadline.
        let weak = Arc::downgrade(&session);
        let ticking = Arc::clone(&session.ticking);
        tokio::spawn(async move {
            loop {
                let Some(s) = weak.upgrade() else { return };
                if !s.anything_in_flight().await {
                    drop(s);
                    ticking.notified().await;
                    continue;
                }
                drop(s);
                tokio::time::sleep(TICK).await;
                let Some(s) = weak.upgrade() else { return };
                s.expire().await;
            }
        });
        // The served list changed (withdrawn, restored, drift).
        let weak = Arc::downgrade(&session);
        let mut changes = proxy.subscribe();
        tokio::spawn(async move {
            loop {
                match changes.recv().await {
                    Ok(()) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
                let Some(s) = weak.upgrade() else { return };
                if s.initialized.load(Ordering::Relaxed) {
                    s.send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
                }
            }
        });
        session
    }

    /// Sends a message to the agent, with the upstreams' secrets redacted
    /// (the proxy's own errors quote what a server said).
    fn send(&self, mut message: Value) {
        self.proxy.settings.redactor.redact_value(&mut message);
        let _ = self.to_client.send(Outgoing::Json(message));
    }

    /// Handles one message from the agent.
    pub async fn handle(self: &Arc<Self>, message: Value) {
        match message {
            Value::Array(batch) => {
                for m in batch {
                    Box::pin(self.handle(m)).await;
                }
            }
            Value::Object(_) => {
                let has_method = match message.get("method") {
                    None => false,
                    Some(Value::String(_)) => true,
                    // Neither a request nor an answer: said so, not
                    // mistaken for an answer nobody waits for.
                    Some(_) => {
                        let id = message.get("id").cloned().unwrap_or(Value::Null);
                        return self.send(error_response(
                            &id,
                            INVALID_REQUEST,
                            "invalid request: method is not a string",
                            None,
                        ));
                    }
                };
                let id = message.get("id").cloned();
                match (has_method, id) {
                    (true, Some(id)) => self.on_request(id, message).await,
                    (true, None) => self.on_notification(message).await,
                    (false, Some(id)) => self.on_client_response(id, message).await,
                    (false, None) => {}
                }
            }
            _ => self.send(error_response(
                &Value::Null,
                INVALID_REQUEST,
                "invalid request: not a JSON-RPC object",
                None,
            )),
        }
    }

    /// Handles one message from the agent as it arrived: a `tools/call`
    /// stays text on its way upstream; anything else is parsed.
    pub async fn handle_text(self: &Arc<Self>, text: String) {
        match Call::parse(text) {
            Ok(call) => self.call_tool_text(call).await,
            Err(text) => match serde_json::from_str::<Value>(&text) {
                Ok(message) => self.handle(message).await,
                Err(e) => self.send(error_response(
                    &Value::Null,
                    PARSE_ERROR,
                    format!("parse error: {e}"),
                    None,
                )),
            },
        }
    }

    /// Closes every upstream session.
    pub async fn close(&self) {
        let upstreams: Vec<Arc<Upstream>> = self.upstreams.lock().await.values().cloned().collect();
        // All at once: the agent gives the proxy about 2 s before it
        // signals it.
        let mut closing = tokio::task::JoinSet::new();
        for u in upstreams {
            let proxy = Arc::clone(&self.proxy);
            closing.spawn(async move {
                u.shutdown().await;
                if let Some(pid) = u.process_id() {
                    proxy.untrack(pid);
                }
            });
        }
        while closing.join_next().await.is_some() {}
    }

    // ---- the agent's requests ------------------------------------------

    async fn on_request(self: &Arc<Self>, id: Value, message: Value) {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if method == "tools/call" {
            return self.call_tool(id, message).await;
        }
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        match method.as_str() {
            "initialize" => self.initialize(id, &params).await,
            "server/discover" => self.discover(id, &params).await,
            "ping" => self.send(result_response(&id, json!({}))),
            "tools/list" => self.list_tools(id, &params).await,
            // These may wait on several upstreams: answered from a task of
            // their own, so the agent's other messages keep flowing.
            "logging/setLevel" => {
                let me = Arc::clone(self);
                tokio::spawn(async move { me.broadcast_request(id, message, "logging").await });
            }
            "resources/list" | "resources/templates/list" | "prompts/list" => {
                let me = Arc::clone(self);
                tokio::spawn(async move { me.list_merged(id, message, &method).await });
            }
            _ => {
                let server = self.owner_of(&method, &params).await;
                match server {
                    Some(server) => {
                        self.forward(&server, id, Outbound::Tree(message), None)
                            .await
                    }
                    None => self.send(error_response(
                        &id,
                        METHOD_NOT_FOUND,
                        format!("no upstream serves {method}"),
                        None,
                    )),
                }
            }
        }
    }

    fn client_init(&self, params: &Value, stateless: bool) -> ClientInit {
        let meta = params.get("_meta");
        let pick = |direct: &str, meta_key: &str| {
            params
                .get(direct)
                .or_else(|| meta.and_then(|m| m.get(meta_key)))
                .cloned()
        };
        ClientInit {
            protocol_version: pick("protocolVersion", "io.modelcontextprotocol/protocolVersion")
                .and_then(|v| v.as_str().map(str::to_string)),
            capabilities: pick("capabilities", "io.modelcontextprotocol/clientCapabilities")
                .unwrap_or_else(|| json!({})),
            client_info: pick("clientInfo", "io.modelcontextprotocol/clientInfo"),
            stateless,
        }
    }

    async fn initialize(self: &Arc<Self>, id: Value, params: &Value) {
        let init = self.client_init(params, false);
        let asked = init.protocol_version.clone();
        let Some(mut result) = self.describe(&id, init).await else {
            return;
        };
        let version = asked
            .filter(|v| HANDSHAKE_VERSIONS.contains(&v.as_str()))
            .unwrap_or_else(|| HANDSHAKE_VERSIONS[0].to_string());
        result["protocolVersion"] = json!(version);
        if let Ok(mut n) = self.negotiated.lock() {
            *n = Some(version);
        }
        self.initialized.store(true, Ordering::Relaxed);
        self.send(result_response(&id, result));
    }

    async fn discover(self: &Arc<Self>, id: Value, params: &Value) {
        let init = self.client_init(params, true);
        let Some(mut result) = self.describe(&id, init).await else {
            return;
        };
        let mut versions = vec![json!(STATELESS_VERSION)];
        versions.extend(HANDSHAKE_VERSIONS.iter().map(|v| json!(v)));
        result["supportedVersions"] = Value::Array(versions);
        self.initialized.store(true, Ordering::Relaxed);
        self.send(result_response(&id, result));
    }

    /// Keeps what the agent declared, reaches every upstream and describes
    /// them as one; `None` when the agent was answered with the failure.
    async fn describe(self: &Arc<Self>, id: &Value, init: ClientInit) -> Option<Value> {
        if let Ok(mut i) = self.init.lock() {
            *i = Some(init);
        }
        match self.connect_all().await {
            Ok(upstreams) => Some(self.merged_description(&upstreams)),
            Err(e) => {
                self.send(error_response(id, INTERNAL_ERROR, e, None));
                None
            }
        }
    }

    /// capabilities, serverInfo and instructions for the agent: one
    /// upstream's own, or a union under toolpin's name. The instructions
    /// are the pinned ones, as the tools are: an upstream's new text is
    /// drift for `check` to report, not a prompt edit the agent receives.
    fn merged_description(&self, upstreams: &[Arc<Upstream>]) -> Value {
        let mut capabilities = Map::new();
        let mut instructions = Vec::new();
        for u in upstreams {
            if let Some(Value::Object(caps)) = &u.opened.capabilities {
                for (k, v) in caps {
                    match (capabilities.get_mut(k), v) {
                        (Some(Value::Object(have)), Value::Object(more)) => {
                            for (kk, vv) in more {
                                have.entry(kk.clone()).or_insert_with(|| vv.clone());
                            }
                        }
                        (Some(_), _) => {}
                        (None, _) => {
                            capabilities.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            let pinned = self.proxy.settings.catalog.servers.get(&u.name);
            if let Some(text) = pinned.and_then(|p| p.instructions.as_deref()) {
                instructions.push(text.to_string());
            }
        }
        // The served list changes when tools are withdrawn or restored.
        capabilities.insert("tools".into(), json!({"listChanged": true}));
        let server_info = match upstreams {
            [one] => one.opened.server_info.clone(),
            _ => json!({"name": "toolpin-proxy", "version": env!("CARGO_PKG_VERSION")}),
        };
        let mut result = json!({
            "capabilities": capabilities,
            "serverInfo": server_info,
        });
        if !instructions.is_empty() {
            result["instructions"] = json!(instructions.join("\n\n"));
        }
        result
    }

    /// Opens every upstream that is not open (the first time, or after a
    /// crash).
    async fn connect_all(self: &Arc<Self>) -> Result<Vec<Arc<Upstream>>, String> {
        let mut out = Vec::new();
        for spec in &self.proxy.settings.upstreams {
            out.push(self.upstream(&spec.name).await?);
        }
        Ok(out)
    }

    fn session_options(&self, spec: &UpstreamSpec) -> toolpin_capture::mcp::SessionOptions {
        let mut options = spec.options.clone();
        let init = self.init.lock().ok().and_then(|i| i.clone());
        if let Some(init) = init {
            // Declare what the agent declared (on top of the configured
            // capabilities), so the server offers what it would offer the
            // agent and may ask it for sampling, elicitation or roots.
            if let (Some(mine), Some(theirs)) = (
                options.client_capabilities.as_object_mut(),
                init.capabilities.as_object(),
            ) {
                for (k, v) in theirs {
                    mine.insert(k.clone(), v.clone());
                }
            } else if init.capabilities.is_object() {
                options.client_capabilities = init.capabilities.clone();
            }
            if let Some(info) = init.client_info {
                options.client_info = info;
            }
            if options.version == VersionChoice::Auto {
                options.version = match (init.stateless, init.protocol_version) {
                    (true, _) => VersionChoice::Pinned(STATELESS_VERSION.to_string()),
                    (false, Some(v)) if HANDSHAKE_VERSIONS.contains(&v.as_str()) => {
                        VersionChoice::Prefer(v)
                    }
                    _ => VersionChoice::Auto,
                };
            }
        }
        options
    }

    /// The configured upstream named `server`.
    fn spec(&self, server: &str) -> Option<&UpstreamSpec> {
        self.proxy
            .settings
            .upstreams
            .iter()
            .find(|u| u.name == server)
    }

    /// The session to `server`, opened now if it is not open.
    async fn upstream(self: &Arc<Self>, server: &str) -> Result<Arc<Upstream>, String> {
        let Some(spec) = self.spec(server) else {
            return Err(format!("no upstream {server:?}"));
        };
        let mut map = self.upstreams.lock().await;
        if let Some(u) = map.get(server) {
            if u.closed().is_none() {
                return Ok(Arc::clone(u));
            }
        }
        let restarting = map.remove(server).is_some();
        let options = self.session_options(spec);
        // What the server sends reaches this session, in order, from the
        // task that reads it.
        let weak = Arc::downgrade(self);
        let events: Events = Arc::new(move |event| {
            if let Some(session) = weak.upgrade() {
                session.on_upstream(event);
            }
        });
        let upstream = Upstream::connect(spec, options, events, &self.proxy)
            .await
            .map_err(|e| format!("upstream {server}: {e}"))?;
        if let Some(pid) = upstream.process_id() {
            self.proxy.track(pid);
        }
        if restarting {
            self.proxy
                .events
                .emit(event::UPSTREAM_RESTARTED, json!({"server": server}));
        }
        map.insert(server.to_string(), Arc::clone(&upstream));
        Ok(upstream)
    }

    async fn list_tools(&self, id: Value, params: &Value) {
        let served = self.proxy.served();
        let cursor = params.get("cursor").and_then(Value::as_str);
        match served.page(cursor, self.proxy.settings.page_size.max(1)) {
            Ok((tools, next)) => {
                let mut result = json!({ "tools": tools });
                if let Some(n) = next {
                    result["nextCursor"] = json!(n);
                }
                self.send(result_response(&id, result));
            }
            Err(e) => self.send(error_response(&id, INVALID_PARAMS, e, None)),
        }
    }

    /// Relays a request to `server`; the answer comes back through
    /// `on_upstream`, or a timeout answers it.
    async fn forward(
        self: &Arc<Self>,
        server: &str,
        id: Value,
        outbound: Outbound,
        tool: Option<(String, Arc<Route>)>,
    ) {
        let method = match &outbound {
            Outbound::Tree(message) => message
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            Outbound::Call(..) => "tools/call".to_string(),
        };
        let upstream = match self.upstream(server).await {
            Ok(u) => u,
            Err(e) => {
                self.fail_call(
                    &id,
                    None,
                    tool.as_ref(),
                    Instant::now(),
                    ErrorClass::Upstream,
                    e,
                );
                return;
            }
        };
        let started = Instant::now();
        let message = match (outbound, &tool) {
            (Outbound::Call(call, upstream_args), Some(tool_route)) => {
                match relay_path(&call, &tool_route.1, &upstream) {
                    RelayPath::Text => {
                        let meta = call.meta();
                        let span = self.start_span(&id, tool_route, meta.as_ref());
                        let traceparent = span.as_ref().map(|s| s.traceparent());
                        let name = tool_route.1.upstream_name.as_str();
                        let waiter = Waiter::Front(Box::new(FrontCall {
                            front_id: id.clone(),
                            method,
                            tool: tool.clone(),
                            started,
                            span,
                        }));
                        let sent =
                            upstream.request_call(&call, name, traceparent.as_deref(), waiter);
                        self.relayed(server, &id, tool.as_ref(), started, sent);
                        return;
                    }
                    RelayPath::Parsed => {
                        Outbound::Call(call, upstream_args).into_tree(tool.as_ref())
                    }
                }
            }
            (other, _) => other.into_tree(tool.as_ref()),
        };
        let span = tool
            .as_ref()
            .and_then(|t| self.start_span(&id, t, message.pointer("/params/_meta")));
        // The upstream continues the trace from the proxy's span.
        let mut message = message;
        if let (Some(sp), Some(params)) = (
            &span,
            message.get_mut("params").and_then(Value::as_object_mut),
        ) {
            let meta = params.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("traceparent".into(), json!(sp.traceparent()));
            }
        }
        let call = FrontCall {
            front_id: id.clone(),
            method: method.clone(),
            tool: tool.clone(),
            started,
            span,
        };
        let sent = upstream
            .request(message, Waiter::Front(Box::new(call)))
            .await;
        self.relayed(server, &id, tool.as_ref(), started, sent);
    }

    /// The call's span, when traces are exported.
    fn start_span(
        &self,
        id: &Value,
        (name, route): &(String, Arc<Route>),
        meta: Option<&Value>,
    ) -> Option<crate::telemetry::CallSpan> {
        if !self.proxy.telemetry.enabled() {
            return None;
        }
        let fingerprint = route.fingerprint.to_hex();
        self.span(id, name, Some((route, &fingerprint)), meta)
    }

    /// A call's span: `route` is the served tool and its fingerprint.
    fn span(
        &self,
        id: &Value,
        name: &str,
        route: Option<(&Route, &str)>,
        meta: Option<&Value>,
    ) -> Option<crate::telemetry::CallSpan> {
        let negotiated = self.negotiated.lock().ok().and_then(|n| n.clone());
        // A stateless request names its revision in its own `_meta`.
        let version = negotiated.or_else(|| {
            meta.and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        self.proxy.telemetry.start_call(crate::telemetry::CallInfo {
            tool: name,
            route: route.map(|(r, fingerprint)| crate::telemetry::RouteInfo {
                server: &r.server,
                upstream_tool: &r.upstream_name,
                tool_fingerprint: fingerprint,
            }),
            catalog_fingerprint: &self.proxy.catalog_hex,
            meta,
            request_id: id,
            protocol_version: version.as_deref(),
            link: &self.link,
        })
    }

    /// After a request went upstream (`Ok`) or could not.
    fn relayed(
        &self,
        server: &str,
        id: &Value,
        tool: Option<&(String, Arc<Route>)>,
        started: Instant,
        sent: Result<i64, String>,
    ) {
        match sent {
            // The deadline is kept by the session's ticker (see `expire`).
            Ok(_) => self.ticking.notify_one(),
            Err(e) => self.fail_call(
                id,
                None,
                tool,
                started,
                ErrorClass::Upstream,
                format!("upstream {server}: {e}"),
            ),
        }
    }

    /// Answers every call past its deadline with a timeout error: an
    /// upstream that hangs gets `notifications/cancelled`, the agent an
    /// error, never silence. One ticker per session scans the calls in
    /// flight (few) instead of a timer per call (many, at high rates).
    async fn expire(self: &Arc<Self>) {
        let timeout = self.proxy.settings.call_timeout;
        let upstreams: Vec<Arc<Upstream>> = self.upstreams.lock().await.values().cloned().collect();
        for up in upstreams {
            for (uid, mut call) in up.expire(timeout) {
                let server = up.name.clone();
                // A server stuck that long without reading its input is
                // wedged: kill it; the next request starts it again.
                if up.write_stalled_for().is_some_and(|d| d >= timeout) {
                    self.proxy.events.emit(
                        event::UPSTREAM_WEDGED,
                        json!({"server": server, "message": "the server stopped reading its input; killed"}),
                    );
                    up.kill();
                } else {
                    let _ = up
                        .notify(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": uid, "reason": "toolpin proxy: timed out"}}))
                        .await;
                }
                self.fail_call(
                    &call.front_id,
                    call.span.take(),
                    call.tool.as_ref(),
                    call.started,
                    ErrorClass::Timeout,
                    format!(
                        "upstream {server} did not answer {} within {} s",
                        call.method,
                        timeout.as_secs_f64()
                    ),
                );
            }
        }
    }

    /// Whether any relayed call is waiting.
    async fn anything_in_flight(&self) -> bool {
        self.upstreams
            .lock()
            .await
            .values()
            .any(|u| u.has_calls_in_flight())
    }

    fn fail_call(
        &self,
        id: &Value,
        span: Option<crate::telemetry::CallSpan>,
        tool: Option<&(String, Arc<Route>)>,
        started: Instant,
        class: ErrorClass,
        message: String,
    ) {
        let code = if class == ErrorClass::Timeout {
            REQUEST_TIMEOUT
        } else {
            INTERNAL_ERROR
        };
        if let Some(span) = span {
            let text = self.proxy.settings.redactor.redact(&message);
            // No answer from upstream: the proxy's class is the error type.
            span.finish(Some(crate::telemetry::Failure {
                error_type: class.name(),
                status_code: Some(code),
                class: class.name(),
                message: &text,
            }));
        }
        if let Some((name, route)) = tool {
            self.proxy.metrics.call(
                &route.server,
                name,
                started.elapsed().as_secs_f64(),
                Some(class),
            );
        }
        self.send(error_response(id, code, message, None));
    }

    // ---- the agent's notifications and answers --------------------------

    async fn on_notification(self: &Arc<Self>, message: Value) {
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        match method {
            // Each upstream session was initialized by the proxy itself.
            "notifications/initialized" => {}
            "notifications/cancelled" => {
                let Some(request) = message.pointer("/params/requestId") else {
                    return;
                };
                let upstreams: Vec<Arc<Upstream>> =
                    self.upstreams.lock().await.values().cloned().collect();
                let Some((up, uid, mut call)) = upstreams
                    .into_iter()
                    .find_map(|up| up.take_front(request).map(|(uid, call)| (up, uid, call)))
                else {
                    return;
                };
                // No answer is owed for a cancelled request; it still
                // counts, as a cancelled call.
                let reason = message
                    .pointer("/params/reason")
                    .and_then(Value::as_str)
                    .unwrap_or("cancelled by the agent");
                if let Some(span) = call.span.take() {
                    // No answer is sent: no status code.
                    span.finish(Some(crate::telemetry::Failure {
                        error_type: ErrorClass::Cancelled.name(),
                        status_code: None,
                        class: ErrorClass::Cancelled.name(),
                        message: reason,
                    }));
                }
                if let Some((name, route)) = &call.tool {
                    self.proxy.metrics.call(
                        &route.server,
                        name,
                        call.started.elapsed().as_secs_f64(),
                        Some(ErrorClass::Cancelled),
                    );
                }
                let mut relayed = message.clone();
                relayed["params"]["requestId"] = json!(uid);
                let _ = up.notify(relayed).await;
            }
            _ => {
                let upstreams: Vec<Arc<Upstream>> =
                    self.upstreams.lock().await.values().cloned().collect();
                for up in upstreams {
                    let _ = up.notify(message.clone()).await;
                }
            }
        }
    }

    async fn on_client_response(&self, id: Value, mut message: Value) {
        let entry = self
            .client_requests
            .lock()
            .ok()
            .and_then(|mut m| m.remove(&id_key(&id)));
        let Some((server, original)) = entry else {
            return;
        };
        let upstream = self.upstreams.lock().await.get(&server).cloned();
        if let Some(up) = upstream {
            message["id"] = original;
            let _ = up.send(&message).await;
        }
    }

    // ---- what the upstreams send ----------------------------------------

    fn on_upstream(self: &Arc<Self>, event: Event) {
        match event {
            Event::Response(mut call, reply) => {
                let mut error = None;
                if let Some((name, route)) = &call.tool {
                    error = self.check_result(name, route, &reply, call.started);
                }
                let redactor = &self.proxy.settings.redactor;
                if let Some(span) = call.span.take() {
                    match &error {
                        None => span.finish(None),
                        Some((class, error_type)) => {
                            let (code, text) = match reply.error_code_message() {
                                Some((code, m)) => (code, redactor.redact(&m)),
                                None => (None, String::new()),
                            };
                            span.finish(Some(crate::telemetry::Failure {
                                error_type,
                                status_code: code,
                                class: class.name(),
                                message: &text,
                            }));
                        }
                    }
                }
                let _ = self.to_client.send(Outgoing::Reply {
                    id: call.front_id,
                    reply: reply.redacted(redactor),
                });
            }
            Event::Message(server, message, related) => {
                self.on_upstream_message(server, message, related)
            }
            Event::Closed(server, reason, calls) => {
                self.proxy.events.emit(
                    event::UPSTREAM_CLOSED,
                    json!({"server": server, "reason": reason, "in_flight": calls.len()}),
                );
                if let Ok(mut m) = self.client_requests.lock() {
                    m.retain(|_, (s, _)| *s != server);
                }
                for mut call in calls {
                    self.fail_call(
                        &call.front_id,
                        call.span.take(),
                        call.tool.as_ref(),
                        call.started,
                        ErrorClass::Upstream,
                        format!(
                            "upstream {server} closed while {} was in flight: {reason}",
                            call.method
                        ),
                    );
                }
            }
        }
    }

    /// Sends a server's message to the agent, with the request it belongs
    /// with when one is known.
    fn send_related(&self, mut message: Value, related: Option<Value>) {
        self.proxy.settings.redactor.redact_value(&mut message);
        let out = match related {
            Some(to) => Outgoing::Related { to, message },
            None => Outgoing::Json(message),
        };
        let _ = self.to_client.send(out);
    }
}
