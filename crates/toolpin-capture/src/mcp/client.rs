//! JSON-RPC over any transport: requests matched to responses by id,
//! notifications kept for the caller, server-to-client requests answered.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::http::{HttpMode, HttpSpec, SseTransport, StreamableTransport};
use super::stdio::{StdioSpec, StdioTransport};
use super::{excerpt, McpError, Phase};

/// Why a message could not be sent.
#[derive(Debug)]
pub struct SendError {
    pub message: String,
    /// The HTTP status, when the server refused with one.
    pub http_status: Option<u16>,
    /// The server could not be reached at all.
    pub unreachable: bool,
}

impl SendError {
    pub fn plain(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            http_status: None,
            unreachable: false,
        }
    }
}

/// How long a stdio server that closed its output gets to exit before the
/// error is written without its exit status.
const EXIT_PATIENCE: Duration = Duration::from_millis(500);

/// A message from the server, or the end of the stream and why.
#[derive(Debug)]
pub enum Incoming {
    Message(Value),
    /// One line exactly as a stdio server wrote it, not parsed: what a
    /// relay gets after [`Client::into_relay`], so that it can pass a
    /// response on without printing it again. Text that is not JSON ends
    /// the connection; [`invalid_json`] words why.
    Text(String),
    Closed(String),
}

/// One message for [`Relay::send_all`]: a tree, or a line of JSON already
/// written (a relay passing on what the other side wrote).
#[derive(Debug)]
pub enum Frame {
    Json(Value),
    Text(String),
}

impl Frame {
    /// As a tree (the HTTP transports read headers from it).
    fn to_value(&self) -> Result<std::borrow::Cow<'_, Value>, SendError> {
        match self {
            Frame::Json(v) => Ok(std::borrow::Cow::Borrowed(v)),
            Frame::Text(t) => serde_json::from_str(t)
                .map(std::borrow::Cow::Owned)
                .map_err(|e| SendError::plain(format!("not a JSON message: {e}"))),
        }
    }
}

/// Why a server's line is not a message: the parser's reason and where,
/// and the start of the line.
pub fn invalid_json(text: &[u8], e: &serde_json::Error) -> String {
    let shown = super::excerpt(&String::from_utf8_lossy(&text[..text.len().min(200)]), 120);
    format!(
        "the server sent invalid JSON on stdout ({}): {shown}",
        toolpin_manifest::json::from_serde(e, "line").message
    )
}

/// The `error.data.toolpin` marker of the answer a transport delivers in
/// place of a message it did not read because it was larger than the
/// client's limit ([`Client::limit_messages`]).
const TOO_LARGE: &str = "too-large";

/// What a transport delivers in place of a message over `limit` bytes that
/// answers request `id` (`null` when the id could not be told from what was
/// skipped: the request in flight takes it).
pub(crate) fn too_large(id: Value, limit: usize) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32603,
            "message": format!("the answer is larger than {limit} bytes; it was not read"),
            "data": {"toolpin": TOO_LARGE, "limit": limit},
        },
    })
}

/// The limit of a [`too_large`] answer, when `msg` is one.
fn too_large_limit(msg: &Value) -> Option<usize> {
    let data = msg.pointer("/error/data")?;
    if data.get("toolpin")?.as_str()? != TOO_LARGE {
        return None;
    }
    usize::try_from(data.get("limit")?.as_u64()?).ok()
}

/// The limit shared by a client and its transport's reader: the largest
/// message read, `usize::MAX` for the transport's own cap.
pub(crate) type Limit = Arc<AtomicUsize>;

/// The limit in force, at most `cap`.
pub(crate) fn limit_of(limit: &Limit, cap: usize) -> usize {
    limit.load(Ordering::Relaxed).min(cap)
}

enum Transport {
    Stdio(StdioTransport),
    Streamable(StreamableTransport),
    Sse(SseTransport),
}

/// A connection to one MCP server.
pub struct Client {
    transport: Transport,
    incoming: mpsc::UnboundedReceiver<Incoming>,
    next_id: i64,
    notifications: VecDeque<Value>,
    closed: Option<String>,
    limit: Limit,
}

/// How a request failed.
#[derive(Debug)]
pub enum RequestError {
    /// The server answered with a JSON-RPC error object.
    Rpc {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// No answer before the deadline.
    Timeout(Duration),
    /// The transport failed or the server went away.
    Transport(String),
    /// The HTTP server refused the request.
    Http { status: u16, message: String },
    /// The server could not be reached.
    Unreachable(String),
    /// The answer was larger than the client's limit
    /// ([`Client::limit_messages`]): skipped, not read.
    TooLarge(usize),
}

impl RequestError {
    pub fn describe(&self) -> String {
        match self {
            RequestError::Rpc { code, message, .. } => format!(
                "the server answered error {code}: {}",
                excerpt(message, 200)
            ),
            RequestError::Timeout(d) => format!("no answer within {}", humanize(*d)),
            RequestError::Transport(m) => m.clone(),
            RequestError::Http { message, .. } => message.clone(),
            RequestError::Unreachable(m) => m.clone(),
            RequestError::TooLarge(limit) => {
                format!("the answer is larger than {limit} bytes; it was not read")
            }
        }
    }

    pub fn http_status(&self) -> Option<u16> {
        match self {
            RequestError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }
}

impl From<SendError> for RequestError {
    fn from(e: SendError) -> Self {
        if e.unreachable {
            return RequestError::Unreachable(e.message);
        }
        match e.http_status {
            Some(status) => RequestError::Http {
                status,
                message: e.message,
            },
            None => RequestError::Transport(e.message),
        }
    }
}

pub(crate) fn humanize(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else {
        format!("{} s", d.as_secs_f64())
    }
}

impl Client {
    /// Starts a stdio server.
    pub async fn connect_stdio(spec: &StdioSpec) -> Result<Self, McpError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let limit = Limit::new(AtomicUsize::new(usize::MAX));
        let transport = StdioTransport::spawn(spec, tx, Arc::clone(&limit)).await?;
        Ok(Self::new(Transport::Stdio(transport), rx, limit))
    }

    /// Connects to an HTTP server: Streamable HTTP, or the legacy SSE
    /// transport when `spec.mode` says so (falling back from `Auto` to
    /// legacy SSE is the caller's choice).
    pub async fn connect_http(
        spec: &HttpSpec,
        connect_timeout: Duration,
    ) -> Result<Self, McpError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let limit = Limit::new(AtomicUsize::new(usize::MAX));
        let transport = match spec.mode {
            HttpMode::Auto | HttpMode::Streamable => Transport::Streamable(
                StreamableTransport::new(spec, connect_timeout, tx, Arc::clone(&limit))
                    .map_err(|m| McpError::new(Phase::Connect, m))?,
            ),
            HttpMode::Sse => Transport::Sse(
                SseTransport::connect(spec, connect_timeout, tx, Arc::clone(&limit))
                    .await
                    .map_err(|e| McpError {
                        phase: Phase::Connect,
                        message: e.message,
                        server_said: None,
                        http_status: e.http_status,
                        rpc_code: None,
                    })?,
            ),
        };
        Ok(Self::new(transport, rx, limit))
    }

    /// From now on, a message from the server larger than `bytes` is not
    /// read: it is skipped as it arrives, and the request it answers fails
    /// with [`RequestError::TooLarge`]. Over legacy HTTP+SSE, whose one
    /// stream carries every answer, such a message ends the stream
    /// instead (the request, and any after it, fail as transport errors). Until then a message may be as large as the transport's
    /// own cap (256 MiB: a whole `tools/list` page is one message).
    pub fn limit_messages(&self, bytes: usize) {
        self.limit.store(bytes, Ordering::Relaxed);
    }

    /// Tells the transport the negotiated revision (HTTP sends it as a
    /// header on every later request).
    pub fn set_protocol_version(&mut self, version: &str) {
        if let Transport::Streamable(t) = &mut self.transport {
            t.set_protocol_version(version);
        }
    }

    fn new(
        transport: Transport,
        incoming: mpsc::UnboundedReceiver<Incoming>,
        limit: Limit,
    ) -> Self {
        Self {
            transport,
            incoming,
            next_id: 0,
            notifications: VecDeque::new(),
            closed: None,
            limit,
        }
    }

    /// Sends a request and waits for its response (the `result` member).
    pub async fn request(
        &mut self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Value, RequestError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(p) = params {
            message["params"] = p;
        }
        let deadline = Instant::now() + timeout;
        // Over HTTP the answer may arrive in the POST's own response, so the
        // deadline covers sending too.
        match tokio::time::timeout_at(deadline, self.send(&message)).await {
            Err(_) => return Err(RequestError::Timeout(timeout)),
            Ok(Err(e)) => return Err(e.into()),
            Ok(Ok(())) => {}
        }
        loop {
            let mut msg = match tokio::time::timeout_at(deadline, self.next_message()).await {
                Err(_) => return Err(RequestError::Timeout(timeout)),
                Ok(Err(reason)) => return Err(RequestError::Transport(reason)),
                Ok(Ok(msg)) => msg,
            };
            if msg.get("method").is_some() {
                if msg.get("id").is_some() {
                    self.answer_server_request(&msg).await;
                } else {
                    self.notifications.push_back(msg);
                }
                continue;
            }
            let skipped = too_large_limit(&msg);
            let ours = msg.get("id") == Some(&json!(id))
                // A message skipped unread whose id could not be told: the
                // request in flight is the one waiting for an answer.
                || (skipped.is_some() && msg.get("id").is_none_or(Value::is_null));
            if !ours {
                // A response to something else (a request that timed out).
                continue;
            }
            if let Some(limit) = skipped {
                return Err(RequestError::TooLarge(limit));
            }
            // Moved out, not copied: a large answer (a tools/list page, a
            // tool's result) is held once.
            if let Some(result) = msg.get_mut("result").map(Value::take) {
                return Ok(result);
            }
            if let Some(error) = msg.get("error") {
                return Err(RequestError::Rpc {
                    code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    data: error.get("data").cloned(),
                });
            }
            return Err(RequestError::Transport(format!(
                "response {id} has neither result nor error: {}",
                excerpt(&msg.to_string(), 200)
            )));
        }
    }

    /// Sends a notification.
    pub async fn notify(&mut self, method: &str, params: Option<Value>) -> Result<(), SendError> {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if let Some(p) = params {
            message["params"] = p;
        }
        self.send(&message).await
    }

    /// Notifications received so far, oldest first.
    pub fn take_notifications(&mut self) -> Vec<Value> {
        self.notifications.drain(..).collect()
    }

    async fn send(&mut self, message: &Value) -> Result<(), SendError> {
        if let Some(reason) = &self.closed {
            return Err(SendError::plain(reason.clone()));
        }
        match &mut self.transport {
            Transport::Stdio(t) => match t.send(message).await {
                Ok(()) => Ok(()),
                // A server that cannot be written to has usually exited (a
                // broken pipe): explain it as a close, with the exit status,
                // and let the stderr reader catch up for `error`.
                Err(reason) => {
                    let reason = self.explain_close(reason).await;
                    self.closed = Some(reason.clone());
                    Err(SendError::plain(reason))
                }
            },
            Transport::Streamable(t) => t.send(message).await,
            Transport::Sse(t) => t.send(message).await,
        }
    }

    async fn next_message(&mut self) -> Result<Value, String> {
        if let Some(reason) = &self.closed {
            return Err(reason.clone());
        }
        match self.incoming.recv().await {
            Some(Incoming::Message(v)) => Ok(v),
            Some(Incoming::Text(text)) => match serde_json::from_str(&text) {
                Ok(v) => Ok(v),
                Err(e) => {
                    let reason = self.explain_close(invalid_json(text.as_bytes(), &e)).await;
                    self.closed = Some(reason.clone());
                    Err(reason)
                }
            },
            Some(Incoming::Closed(reason)) => {
                let reason = self.explain_close(reason).await;
                self.closed = Some(reason.clone());
                Err(reason)
            }
            None => {
                let reason = self.explain_close("the connection closed".into()).await;
                self.closed = Some(reason.clone());
                Err(reason)
            }
        }
    }

    async fn explain_close(&mut self, reason: String) -> String {
        match &mut self.transport {
            Transport::Stdio(t) => match t.exit_status(EXIT_PATIENCE).await {
                Some(status) => format!("{reason} (the server {status})"),
                None => reason,
            },
            Transport::Streamable(_) | Transport::Sse(_) => reason,
        }
    }

    /// During capture toolpin offers nothing a server could ask for; it
    /// answers pings and empty roots, and refuses the rest, so the server
    /// never waits on it.
    async fn answer_server_request(&mut self, msg: &Value) {
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        let reply = match msg.get("method").and_then(Value::as_str) {
            Some("ping") => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            Some("roots/list") => json!({"jsonrpc": "2.0", "id": id, "result": {"roots": []}}),
            _ => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "toolpin is capturing tool definitions and does not serve this request"}})
            }
        };
        let _ = self.send(&reply).await;
    }

    /// What the server wrote about itself: the stderr tail for stdio.
    pub fn server_said(&self) -> Option<String> {
        match &self.transport {
            Transport::Stdio(t) => Some(t.stderr_tail()).filter(|s| !s.is_empty()),
            Transport::Streamable(_) | Transport::Sse(_) => None,
        }
    }

    /// An error for `phase` carrying what the server said.
    pub fn error(&self, phase: Phase, message: impl Into<String>) -> McpError {
        McpError {
            phase,
            message: message.into(),
            server_said: self.server_said(),
            http_status: None,
            rpc_code: None,
        }
    }

    /// An error for `phase` from a failed request.
    pub fn request_error(&self, phase: Phase, e: &RequestError) -> McpError {
        // Whatever was being asked, a server that cannot be reached failed
        // at connecting.
        let phase = match e {
            RequestError::Unreachable(_) => Phase::Connect,
            _ => phase,
        };
        McpError {
            http_status: e.http_status(),
            rpc_code: match e {
                RequestError::Rpc { code, .. } => Some(*code),
                _ => None,
            },
            ..self.error(phase, e.describe())
        }
    }

    /// Hands the open session over to a relay (the proxy): the transport
    /// to send on, the stream of everything the server sends, and the
    /// notifications that arrived during set-up.
    pub fn into_relay(self) -> (Relay, mpsc::UnboundedReceiver<Incoming>, Vec<Value>) {
        let tx = match &self.transport {
            Transport::Streamable(t) => Some(t.incoming_sender()),
            Transport::Stdio(t) => {
                t.relay_text();
                None
            }
            Transport::Sse(_) => None,
        };
        (
            Relay {
                transport: self.transport,
                closed: self.closed,
                incoming: tx,
            },
            self.incoming,
            self.notifications.into(),
        )
    }

    /// Ends the session and reaps the server.
    pub async fn close(mut self, grace: Duration) {
        match &mut self.transport {
            Transport::Stdio(t) => t.close(grace).await,
            Transport::Streamable(t) => t.close().await,
            Transport::Sse(t) => t.close(),
        }
    }
}

/// The sending half of an open session, for relaying many requests at once.
/// Answers arrive on the receiver [`Client::into_relay`] returned.
pub struct Relay {
    transport: Transport,
    closed: Option<String>,
    /// Streamable HTTP: where a failed POST's error answer is delivered.
    incoming: Option<mpsc::UnboundedSender<Incoming>>,
}

impl Relay {
    /// Sends one message. Over Streamable HTTP each message is its own POST,
    /// run concurrently (a slow call does not hold up the next); a POST
    /// that fails answers its request with a JSON-RPC error on the
    /// receiver, so no caller waits forever.
    pub async fn send(&mut self, message: &Value) -> Result<(), SendError> {
        if let Some(reason) = &self.closed {
            return Err(SendError::plain(reason.clone()));
        }
        match &mut self.transport {
            Transport::Stdio(t) => t.send(message).await.map_err(|reason| {
                self.closed = Some(reason.clone());
                SendError::plain(reason)
            }),
            Transport::Sse(t) => t.send(message).await,
            Transport::Streamable(t) => {
                let mut post = t.clone();
                let message = message.clone();
                let incoming = self.incoming.clone();
                tokio::spawn(async move {
                    if let Err(e) = post.send(&message).await {
                        let id = message
                            .get("id")
                            .filter(|_| message.get("method").is_some());
                        if let (Some(id), Some(tx)) = (id, incoming) {
                            let _ = tx.send(Incoming::Message(json!({
                                "jsonrpc": "2.0",
                                "id": id,
                                "error": {"code": -32603, "message": format!("upstream: {}", e.message)},
                            })));
                        }
                    }
                });
                Ok(())
            }
        }
    }

    /// Sends several messages: over stdio in one write (fewer wake-ups
    /// of the server under load), otherwise one by one.
    pub async fn send_all(&mut self, messages: &[Frame]) -> Result<(), SendError> {
        if let Some(reason) = &self.closed {
            return Err(SendError::plain(reason.clone()));
        }
        if let Transport::Stdio(t) = &mut self.transport {
            return t.send_all(messages).await.map_err(|reason| {
                self.closed = Some(reason.clone());
                SendError::plain(reason)
            });
        }
        for m in messages {
            let message = m.to_value()?;
            self.send(&message).await?;
        }
        Ok(())
    }

    /// What the server wrote about itself: the stderr tail for stdio.
    pub fn server_said(&self) -> Option<String> {
        match &self.transport {
            Transport::Stdio(t) => Some(t.stderr_tail()).filter(|s| !s.is_empty()),
            Transport::Streamable(_) | Transport::Sse(_) => None,
        }
    }

    /// A stdio server's process id (the leader of its process group).
    pub fn process_id(&self) -> Option<u32> {
        match &self.transport {
            Transport::Stdio(t) => t.process_id(),
            Transport::Streamable(_) | Transport::Sse(_) => None,
        }
    }

    /// How a stdio server exited, if it has (waiting up to `patience`).
    pub async fn exit_status(&mut self, patience: Duration) -> Option<String> {
        match &mut self.transport {
            Transport::Stdio(t) => t.exit_status(patience).await,
            Transport::Streamable(_) | Transport::Sse(_) => None,
        }
    }

    /// Ends the session and reaps the server.
    pub async fn close(mut self, grace: Duration) {
        match &mut self.transport {
            Transport::Stdio(t) => t.close(grace).await,
            Transport::Streamable(t) => t.close().await,
            Transport::Sse(t) => t.close(),
        }
    }
}
