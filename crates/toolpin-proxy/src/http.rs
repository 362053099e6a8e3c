//! The Streamable HTTP front (`toolpin proxy --listen ADDR`), and
//! `/metrics`.
//!
//! - `POST /mcp`: one JSON-RPC message (or a batch). `initialize` opens a
//!   session (`Mcp-Session-Id`); a request is answered on an SSE stream that
//!   also carries what the upstream sends while it runs (progress, sampling,
//!   elicitation), or as plain JSON when the client accepts only that;
//!   notifications and answers get 202.
//! - `GET /mcp`: the session's stream for server-initiated messages
//!   (`notifications/tools/list_changed`, requests not tied to a call).
//! - `DELETE /mcp`: ends the session and its upstream sessions.
//! - Requests of the stateless revision (no session id) share one session.
//!   Every request is answered on its own POST whatever its id: the front
//!   gives each request (and its progress token) an id of its own, unique
//!   in the session, and the agent's id is put back on the answer. In the
//!   shared session, a server's message goes only to the POST it belongs
//!   with, and a cancellation names no other client's request.
//! - Limits: at most `max_sessions` sessions (then `initialize` gets 503
//!   with `Retry-After`); connections are guarded by `toolpin-front`'s
//!   [`Gate`] (`Options::connections`): at most `max_connections`, the one
//!   idle longest closed to make room (and when out of descriptors); a
//!   connection that does not finish a request's headers within
//!   `header_read_timeout`, or has no request in flight for
//!   `connection_idle`, is closed; a body that does not arrive within
//!   `body_timeout` is answered 408 and its connection closed; a failing
//!   accept backs off instead of spinning.
//! - Host and Origin are checked on every request (DNS-rebinding
//!   protection): loopback names, plus what `--allow-host` /
//!   `--allow-origin` add. Anything else gets 403.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper::header::{HeaderValue, ACCEPT, CONTENT_TYPE, HOST, ORIGIN};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use toolpin_front::{BodyError, Gate};
pub use toolpin_front::{
    Limits, DEFAULT_BODY_TIMEOUT, DEFAULT_CONNECTION_IDLE, DEFAULT_HEADER_READ_TIMEOUT,
};
use toolpin_manifest::wire::event;

use crate::session::{error_response, Session};
use crate::wire::Outgoing;
use crate::Proxy;

/// Largest request body accepted.
const MAX_BODY: usize = 64 << 20;
const SESSION_HEADER: &str = "mcp-session-id";

/// What the HTTP front accepts besides loopback, how long sessions and
/// connections live, and how many sessions it holds.
#[derive(Clone, Debug)]
pub struct Options {
    /// Extra Host header values (`host` or `host:port`).
    pub allow_hosts: Vec<String>,
    /// Extra Origin header values (`https://app.example.com`).
    pub allow_origins: Vec<String>,
    /// A session with no request and no open stream for this long is
    /// closed with its upstream sessions (most clients never send DELETE).
    pub session_idle: Duration,
    /// Most sessions open at once: each starts its own upstream sessions
    /// (a process per stdio server), so past this `initialize` gets 503.
    pub max_sessions: usize,
    /// What a connection may hold and for how long: the cap, the
    /// header-read, idle and body timeouts.
    pub connections: Limits,
}

/// Default for [`Options::session_idle`].
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// Default for [`Options::max_sessions`].
pub const DEFAULT_MAX_SESSIONS: usize = 32;
/// Default for [`Limits::max_connections`] in [`Options::connections`]:
/// room for a few hundred agents, each with its keep-alive connection and
/// an open event stream, well under the usual 1,024 descriptors.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// `Retry-After` of the refusal at the session cap, in seconds.
const RETRY_AFTER_SECONDS: u64 = 10;

impl Default for Options {
    fn default() -> Self {
        Self {
            allow_hosts: Vec::new(),
            allow_origins: Vec::new(),
            session_idle: DEFAULT_SESSION_IDLE,
            max_sessions: DEFAULT_MAX_SESSIONS,
            connections: Limits {
                max_connections: DEFAULT_MAX_CONNECTIONS,
                ..Limits::default()
            },
        }
    }
}

/// A body fed from a channel: an SSE stream, or one JSON document.
struct ChannelBody {
    rx: mpsc::UnboundedReceiver<Bytes>,
    /// A stateless client's stream: an SSE comment now and then, so that
    /// a client that hung up is noticed (the write fails, the body is
    /// dropped) even while nothing else is sent.
    heartbeat: Option<tokio::time::Interval>,
    /// Dropped with the body: a stateless client that goes away cancels.
    _abandon: Option<Abandon>,
}

/// How often a stateless client's quiet stream gets a heartbeat.
const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(1);

/// A stateless client's POST. The stateless revision has no session to
/// send a cancellation on, and the clients share one, so a
/// `notifications/cancelled` cannot say whose request it means: a client
/// cancels by closing its connection. When the POST's stream (or the
/// wait for its JSON answer) is dropped, its requests still open are
/// cancelled upstream.
struct Abandon {
    session: std::sync::Weak<HttpSession>,
    ids: Vec<u64>,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        let Some(s) = self.session.upgrade() else {
            return;
        };
        let open: Vec<u64> = match s.streams.lock() {
            Ok(mut streams) => self
                .ids
                .iter()
                .filter(|n| streams.posts.remove(n).is_some())
                .copied()
                .collect(),
            Err(_) => return,
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if open.is_empty() {
            return;
        }
        let session = Arc::clone(&s.session);
        runtime.spawn(async move {
            for n in open {
                session
                    .handle(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": n, "reason": "the client closed its connection"}}))
                    .await;
            }
        });
    }
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Poll::Ready(b) = self.rx.poll_recv(cx) {
            return Poll::Ready(b.map(|b| Ok(Frame::data(b))));
        }
        if let Some(h) = self.heartbeat.as_mut() {
            if h.poll_tick(cx).is_ready() {
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b":\n\n")))));
            }
        }
        Poll::Pending
    }
}

type Reply = Response<http_body_util::Either<Full<Bytes>, ChannelBody>>;

fn plain(status: StatusCode, text: &str) -> Reply {
    let mut r = Response::new(http_body_util::Either::Left(Full::new(Bytes::from(
        text.to_string(),
    ))));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn json_reply(status: StatusCode, value: &Value) -> Reply {
    let mut r = Response::new(http_body_util::Either::Left(Full::new(Bytes::from(
        value.to_string(),
    ))));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn sse_event(message: &Outgoing) -> Bytes {
    Bytes::from(format!("event: message\ndata: {}\n\n", message.to_line()))
}

/// One of the agent's requests awaiting its answer on a POST stream.
struct Waiting {
    /// The id the agent gave it: its answer goes out under it again.
    agent_id: Value,
    /// The agent's progress token, if it sent one.
    progress: Option<Value>,
    tx: mpsc::UnboundedSender<Bytes>,
    sse: bool,
}

/// Where a session's outgoing messages go.
///
/// Each request that arrives on a POST gets an id of the front's, unique
/// in the session, in place of the agent's (and likewise its progress
/// token): the session and the upstreams see only that id, so an answer
/// (or progress) finds the one POST that asked, whatever ids the agents
/// chose. Stateless clients share one session and almost all start at
/// id 1.
#[derive(Default)]
struct Streams {
    /// Open requests, by the front's id for them.
    posts: HashMap<u64, Waiting>,
    /// The GET stream.
    get: Option<mpsc::UnboundedSender<Bytes>>,
    /// Messages with nowhere to go yet (no GET stream open).
    backlog: VecDeque<Outgoing>,
    next: u64,
    /// Shared by the stateless clients: a message goes only to the POST
    /// it belongs to, never to some other client's.
    shared: bool,
    /// The relay session, to answer a server's request that cannot be
    /// delivered.
    session: std::sync::Weak<Session>,
    /// When the last open request was answered: a session is idle from
    /// then, not from when that request came (an initialize that starts
    /// slow upstreams can take longer than the idle limit).
    drained: Option<std::time::Instant>,
}

impl Streams {
    /// Registers one request of a POST: its id (and progress token) become
    /// the front's.
    fn register(
        &mut self,
        request: &mut Value,
        tx: &mpsc::UnboundedSender<Bytes>,
        sse: bool,
    ) -> u64 {
        self.next += 1;
        let n = self.next;
        let agent_id = request
            .get_mut("id")
            .map(|id| std::mem::replace(id, json!(n)))
            .unwrap_or(Value::Null);
        let progress = request
            .pointer_mut("/params/_meta/progressToken")
            .map(|t| std::mem::replace(t, json!(n)));
        self.posts.insert(
            n,
            Waiting {
                agent_id,
                progress,
                tx: tx.clone(),
                sse,
            },
        );
        n
    }

    /// The agent's `notifications/cancelled` for one of its open requests:
    /// names the front's id instead, and that request's POST gets no
    /// answer (its stream ends). `false` when it names no open request of
    /// this session's; then it is not relayed. Stateless clients share the
    /// session, so a cancellation cannot say whose request it means: theirs
    /// are never matched.
    fn cancel(&mut self, notification: &mut Value) -> bool {
        if self.shared {
            return false;
        }
        let Some(request) = notification.pointer_mut("/params/requestId") else {
            return false;
        };
        let Some(n) = self
            .posts
            .iter()
            .find(|(_, w)| w.agent_id == *request)
            .map(|(n, _)| *n)
        else {
            return false;
        };
        *request = json!(n);
        self.posts.remove(&n);
        true
    }
}

/// One HTTP session: the relay session and its streams.
struct HttpSession {
    session: Arc<Session>,
    streams: Arc<Mutex<Streams>>,
    /// When a request last came (for idle expiry).
    last_seen: Mutex<std::time::Instant>,
}

/// Most messages kept for a GET stream that is not open.
const MAX_BACKLOG: usize = 1000;

impl HttpSession {
    /// `session_id`: the `Mcp-Session-Id` it is known by (none for the
    /// session the stateless clients share).
    fn new(proxy: &Arc<Proxy>, shared: bool, session_id: Option<String>) -> Arc<Self> {
        let (to_client, mut outgoing) = mpsc::unbounded_channel::<Outgoing>();
        let streams = Arc::new(Mutex::new(Streams {
            shared,
            ..Streams::default()
        }));
        // The spans name a request by the agent's id, not the front's.
        let ids = Arc::downgrade(&streams);
        let agent_id = move |front: &Value| -> Option<Value> {
            let n = front.as_u64()?;
            let streams = ids.upgrade()?;
            let streams = streams.lock().ok()?;
            streams.posts.get(&n).map(|w| w.agent_id.clone())
        };
        let link = crate::telemetry::Link {
            transport: "tcp",
            // The front speaks HTTP/1.1 only (`http1::Builder`).
            protocol: Some(("http", "1.1")),
            session_id,
            agent_id: Some(Arc::new(agent_id)),
        };
        let session = Session::start(Arc::clone(proxy), to_client, link);
        if let Ok(mut s) = streams.lock() {
            s.session = Arc::downgrade(&session);
        }
        let routing = Arc::clone(&streams);
        tokio::spawn(async move {
            while let Some(message) = outgoing.recv().await {
                route(&routing, message);
            }
        });
        Arc::new(Self {
            session,
            streams,
            last_seen: Mutex::new(std::time::Instant::now()),
        })
    }

    fn touch(&self) {
        if let Ok(mut t) = self.last_seen.lock() {
            *t = std::time::Instant::now();
        }
    }

    /// Idle: no request for `limit`, no stream open.
    fn idle_for(&self, limit: std::time::Duration) -> bool {
        let quiet = self
            .last_seen
            .lock()
            .map(|t| t.elapsed() >= limit)
            .unwrap_or(false);
        let streaming = self
            .streams
            .lock()
            .map(|s| {
                s.get.as_ref().is_some_and(|g| !g.is_closed())
                    || !s.posts.is_empty()
                    || s.drained.is_some_and(|t| t.elapsed() < limit)
            })
            .unwrap_or(true);
        quiet && !streaming
    }
}

/// Sends one outgoing message where it belongs: a response on the stream
/// of the POST that asked, under the agent's id; progress on the stream
/// of the request that announced the token, under the agent's token; a
/// server's message tied to one request on that request's stream;
/// anything else on the GET stream, else on an open POST stream, else
/// kept until a GET stream opens (in the stateless clients' shared
/// session: only where it belongs, else nowhere).
fn route(streams: &Mutex<Streams>, mut message: Outgoing) {
    let Ok(mut s) = streams.lock() else { return };
    let is_response = message.json().is_none_or(|m| m.get("method").is_none());
    if is_response {
        // A response to nothing open (cancelled, or not a request of the
        // front's) has nobody to go to.
        let Some(n) = message.response_id().and_then(Value::as_u64) else {
            return;
        };
        if let Some(w) = s.posts.remove(&n) {
            if s.posts.is_empty() {
                s.drained = Some(std::time::Instant::now());
            }
            message.set_response_id(w.agent_id);
            let bytes = if w.sse {
                sse_event(&message)
            } else {
                Bytes::from(message.to_line())
            };
            let _ = w.tx.send(bytes);
        }
        return;
    }
    if let Some(n) = progress_of(&message) {
        // The token is the front's: it means nothing to anyone else.
        let Some(w) = s.posts.get(&n).filter(|w| w.sse) else {
            return;
        };
        let (Some(token), Some(Value::Object(params))) = (
            w.progress.clone(),
            message.json_mut().and_then(|m| m.get_mut("params")),
        ) else {
            return;
        };
        params.insert("progressToken".into(), token);
        let _ = w.tx.send(sse_event(&message));
        return;
    }
    if let Some(n) = message.related_to().and_then(Value::as_u64) {
        if let Some(w) = s.posts.get(&n).filter(|w| w.sse) {
            let _ = w.tx.send(sse_event(&message));
            return;
        }
    }
    if s.shared {
        refuse_undeliverable(&s.session, &message);
        return;
    }
    if let Some(get) = &s.get {
        if get.send(sse_event(&message)).is_ok() {
            return;
        }
        s.get = None;
    }
    if let Some(w) = s.posts.values().find(|w| w.sse) {
        let _ = w.tx.send(sse_event(&message));
        return;
    }
    if s.backlog.len() < MAX_BACKLOG {
        s.backlog.push_back(message);
    }
}

/// A server's request in the stateless clients' shared session that
/// belongs with no one call (several were in flight on that server) is
/// answered with an error, so that the server does not wait for an answer
/// that cannot come; it is never sent to some client that did not cause it.
fn refuse_undeliverable(session: &std::sync::Weak<Session>, message: &Outgoing) {
    let Some(id) = message.json().and_then(|m| m.get("id")).cloned() else {
        return;
    };
    let (Some(session), Ok(runtime)) = (session.upgrade(), tokio::runtime::Handle::try_current())
    else {
        return;
    };
    let answer = error_response(
        &id,
        crate::jsonrpc::INTERNAL_ERROR,
        "toolpin proxy: this request cannot be delivered: the stateless clients share one session and it belongs with no one call in flight",
        None,
    );
    runtime.spawn(async move { session.handle(answer).await });
}

/// The front's request of a progress notification (its token).
fn progress_of(message: &Outgoing) -> Option<u64> {
    let m = message.json()?;
    if m.get("method").and_then(Value::as_str) != Some("notifications/progress") {
        return None;
    }
    m.pointer("/params/progressToken")?.as_u64()
}

/// The front's shared state.
struct Front {
    proxy: Arc<Proxy>,
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    stateless: tokio::sync::OnceCell<Arc<HttpSession>>,
    options: Options,
    /// Its connections' guard, counting into the proxy's metrics.
    gate: Arc<Gate>,
}

impl Front {
    fn new(proxy: Arc<Proxy>, options: Options) -> Arc<Self> {
        let gate = Gate::new(options.connections, Arc::clone(&proxy.metrics.connections));
        Arc::new(Front {
            proxy,
            sessions: Mutex::new(HashMap::new()),
            stateless: tokio::sync::OnceCell::new(),
            options,
            gate,
        })
    }
}

/// Serves Streamable HTTP on `addr` until the process ends.
pub async fn serve(proxy: Arc<Proxy>, addr: &str, options: Options) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    proxy.events.emit(
        event::LISTENING,
        json!({"address": local.to_string(), "endpoint": format!("http://{local}/mcp")}),
    );
    let front = Front::new(proxy, options);
    // Idle sessions go, with their upstream sessions.
    let janitor = Arc::downgrade(&front);
    tokio::spawn(async move {
        loop {
            let Some(f) = janitor.upgrade() else { return };
            let limit = f.options.session_idle;
            let every = (limit / 4).clamp(
                std::time::Duration::from_millis(100),
                std::time::Duration::from_secs(30),
            );
            drop(f);
            tokio::time::sleep(every).await;
            let Some(f) = janitor.upgrade() else { return };
            let idle: Vec<(String, Arc<HttpSession>)> = f
                .sessions
                .lock()
                .map(|m| {
                    m.iter()
                        .filter(|(_, s)| s.idle_for(limit))
                        .map(|(k, s)| (k.clone(), Arc::clone(s)))
                        .collect()
                })
                .unwrap_or_default();
            for (id, s) in idle {
                if let Ok(mut m) = f.sessions.lock() {
                    m.remove(&id);
                }
                f.proxy.events.emit(
                    event::SESSION_EXPIRED,
                    json!({"idle_seconds": limit.as_secs_f64()}),
                );
                s.session.close().await;
            }
        }
    });
    accept_loop(listener, front, false).await
}

/// Serves only `/metrics` on `addr`, in the background (stdio mode); of
/// `options`, the connection limits apply.
pub async fn serve_metrics(proxy: Arc<Proxy>, addr: &str, options: Options) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    let front = Front::new(proxy, options);
    tokio::spawn(async move {
        let _ = accept_loop(listener, front, true).await;
    });
    Ok(())
}

/// Serves connections until the process ends, guarded by the front's
/// gate. The first failed accept of a run (out of descriptors) is an
/// `accept-failed` event.
async fn accept_loop(
    listener: TcpListener,
    front: Arc<Front>,
    metrics_only: bool,
) -> std::io::Result<()> {
    let gate = Arc::clone(&front.gate);
    let proxy = Arc::clone(&front.proxy);
    let accept_failed = move |e: &std::io::Error, pause: Duration| {
        proxy.events.emit(
            event::ACCEPT_FAILED,
            json!({"message": e.to_string(), "retry_ms": pause.as_millis() as u64}),
        );
    };
    let handler = move |req| handle(Arc::clone(&front), req, metrics_only);
    gate.serve(
        listener,
        handler,
        accept_failed,
        std::future::pending(),
        Duration::ZERO,
    )
    .await
}

/// The name in a Host value (`name`, `name:port`, `[v6]`, `[v6]:port`);
/// `None` when it is none of these (nothing but `:port` may follow `]`,
/// and a port is digits).
fn host_name(host: &str) -> Option<&str> {
    let is_port = |p: &str| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = host.strip_prefix('[') {
        let (name, after) = rest.split_once(']')?;
        let port_ok = after.is_empty() || after.strip_prefix(':').is_some_and(is_port);
        return port_ok.then_some(name);
    }
    match host.split_once(':') {
        None => Some(host),
        Some((name, port)) if is_port(port) => Some(name),
        Some(_) => None,
    }
}

fn is_loopback_host(host: &str) -> bool {
    host_name(host).is_some_and(|name| {
        matches!(
            name.to_ascii_lowercase().as_str(),
            "localhost" | "127.0.0.1" | "::1"
        )
    })
}

/// Requests that cannot be checked for where they were sent: more than
/// one Host header, or an absolute-form target (whose authority, not the
/// Host header, would name the host; RFC 9112 section 3.2). 400 for
/// either.
fn malformed_target(req: &Request<Incoming>) -> Option<&'static str> {
    if req.headers().get_all(HOST).iter().nth(1).is_some() {
        return Some("bad request: more than one Host header");
    }
    if req.uri().scheme().is_some() || req.uri().authority().is_some() {
        return Some("bad request: send the path only (origin-form), not an absolute URI");
    }
    None
}

impl Front {
    /// DNS-rebinding protection: the Host must be loopback or allowed, and
    /// an Origin, when sent, likewise.
    fn host_allowed(&self, req: &Request<Incoming>) -> Result<(), &'static str> {
        let host = req
            .headers()
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        let host_ok = host_name(host).is_some_and(|name| {
            is_loopback_host(host)
                || self
                    .options
                    .allow_hosts
                    .iter()
                    .any(|a| a.eq_ignore_ascii_case(host) || a.eq_ignore_ascii_case(name))
        });
        if !host_ok {
            return Err(
                "forbidden: Host header not allowed (DNS-rebinding protection; see --allow-host)",
            );
        }
        if let Some(origin) = req.headers().get(ORIGIN).and_then(|o| o.to_str().ok()) {
            let rest = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
                .unwrap_or("");
            let origin_ok = (origin != "null" && is_loopback_host(rest))
                || self
                    .options
                    .allow_origins
                    .iter()
                    .any(|a| a.eq_ignore_ascii_case(origin));
            if !origin_ok {
                return Err(
                    "forbidden: Origin not allowed (DNS-rebinding protection; see --allow-origin)",
                );
            }
        }
        Ok(())
    }

    /// A new session for `initialize`, unless `max_sessions` are open
    /// (then `Err` with how many are). The count and the insertion are one
    /// step, so concurrent `initialize`s cannot pass the cap together.
    fn open_session(&self) -> Result<(String, Arc<HttpSession>), usize> {
        let Ok(mut m) = self.sessions.lock() else {
            return Err(0);
        };
        if m.len() >= self.options.max_sessions {
            return Err(m.len());
        }
        let id = new_session_id();
        let s = HttpSession::new(&self.proxy, false, Some(id.clone()));
        m.insert(id.clone(), Arc::clone(&s));
        Ok((id, s))
    }

    fn session(&self, req: &Request<Incoming>) -> Option<(String, Arc<HttpSession>)> {
        let id = req
            .headers()
            .get(SESSION_HEADER)?
            .to_str()
            .ok()?
            .to_string();
        let s = self.sessions.lock().ok()?.get(&id).cloned()?;
        s.touch();
        Some((id, s))
    }
}

async fn handle(front: Arc<Front>, req: Request<Incoming>, metrics_only: bool) -> Reply {
    if let Some(why) = malformed_target(&req) {
        return plain(StatusCode::BAD_REQUEST, why);
    }
    if let Err(why) = front.host_allowed(&req) {
        front
            .proxy
            .events
            .emit(event::REFUSED_HOST, json!({"host": req.headers().get(HOST).and_then(|h| h.to_str().ok()), "origin": req.headers().get(ORIGIN).and_then(|h| h.to_str().ok())}));
        return plain(StatusCode::FORBIDDEN, why);
    }
    let path = req.uri().path().to_string();
    if path == "/metrics" && req.method() == Method::GET {
        let fp = front.proxy.settings.catalog.fingerprint().to_hex();
        let mut r = plain(StatusCode::OK, &front.proxy.metrics.render(&fp));
        r.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        );
        return r;
    }
    if metrics_only || !(path == "/mcp" || path == "/") {
        return plain(StatusCode::NOT_FOUND, "not found: the MCP endpoint is /mcp");
    }
    match *req.method() {
        Method::POST => post(front, req).await,
        Method::GET => get(front, req),
        Method::DELETE => match front.session(&req) {
            Some((id, s)) => {
                if let Ok(mut m) = front.sessions.lock() {
                    m.remove(&id);
                }
                s.session.close().await;
                plain(StatusCode::OK, "")
            }
            None => plain(StatusCode::NOT_FOUND, "no such session"),
        },
        _ => plain(StatusCode::METHOD_NOT_ALLOWED, "use POST, GET or DELETE"),
    }
}

fn get(front: Arc<Front>, req: Request<Incoming>) -> Reply {
    let accepts_sse = req
        .headers()
        .get(ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| a.contains("text/event-stream"));
    if !accepts_sse {
        return plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "GET opens an event stream; accept text/event-stream",
        );
    }
    let Some((_, s)) = front.session(&req) else {
        return plain(StatusCode::NOT_FOUND, "no such session; initialize first");
    };
    let (tx, rx) = mpsc::unbounded_channel();
    if let Ok(mut streams) = s.streams.lock() {
        for m in streams.backlog.drain(..) {
            let _ = tx.send(sse_event(&m));
        }
        streams.get = Some(tx);
    }
    sse_response(rx, None)
}

fn sse_response(rx: mpsc::UnboundedReceiver<Bytes>, abandon: Option<Abandon>) -> Reply {
    let heartbeat = abandon.as_ref().map(|_| {
        let mut h = tokio::time::interval_at(tokio::time::Instant::now() + HEARTBEAT, HEARTBEAT);
        h.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        h
    });
    let mut r = Response::new(http_body_util::Either::Right(ChannelBody {
        rx,
        heartbeat,
        _abandon: abandon,
    }));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    r.headers_mut()
        .insert("cache-control", HeaderValue::from_static("no-cache"));
    r
}

/// The refusal of an `initialize` at the session cap: 503 with
/// `Retry-After`, a JSON-RPC error naming the cap, and an event.
fn session_limit_reply(front: &Front, request: &Value, open: usize) -> Reply {
    let max = front.options.max_sessions;
    front.proxy.events.emit(
        event::SESSION_REFUSED,
        json!({"reason": "max_sessions", "max_sessions": max, "open": open}),
    );
    front.proxy.metrics.session_refused();
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let text = format!(
        "too many sessions: this proxy holds at most {max} ([proxy] max_sessions); retry later, or end an unused session with DELETE"
    );
    let data = json!({"toolpin": {"limit": "max_sessions", "max_sessions": max, "retry_after_seconds": RETRY_AFTER_SECONDS}});
    let mut r = json_reply(
        StatusCode::SERVICE_UNAVAILABLE,
        &error_response(&id, crate::jsonrpc::SESSION_LIMIT, text, Some(data)),
    );
    r.headers_mut().insert(
        hyper::header::RETRY_AFTER,
        HeaderValue::from(RETRY_AFTER_SECONDS),
    );
    r
}

/// A session id nobody can guess: 128 bits from the system's generator.
fn new_session_id() -> String {
    toolpin_manifest::text::hex(&crate::telemetry::random_bytes::<16>())
}

/// Why a message cannot be handled, as the JSON-RPC error that answers
/// it: anything but an object, or an object whose `method` is not a
/// string.
fn invalid(message: &Value) -> Option<Value> {
    let why = match message {
        Value::Object(m) => match m.get("method") {
            Some(Value::String(_)) | None => return None,
            Some(_) => "invalid request: method is not a string",
        },
        _ => "invalid request: not a JSON-RPC object",
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    Some(error_response(
        &id,
        crate::jsonrpc::INVALID_REQUEST,
        why,
        None,
    ))
}

/// The body's messages that can be handled (a batch keeps its shape), and
/// the answers to those that cannot. `Err` when nothing can be: the
/// JSON-RPC answer to the whole body (HTTP 400).
fn sort_out(message: Value) -> Result<(Value, Vec<Value>), Value> {
    match message {
        Value::Array(batch) if !batch.is_empty() => {
            let mut rejected = Vec::new();
            let valid: Vec<Value> = batch
                .into_iter()
                .filter(|m| match invalid(m) {
                    Some(e) => {
                        rejected.push(e);
                        false
                    }
                    None => true,
                })
                .collect();
            if valid.is_empty() {
                return Err(Value::Array(rejected));
            }
            Ok((Value::Array(valid), rejected))
        }
        Value::Array(_) => Err(error_response(
            &Value::Null,
            crate::jsonrpc::INVALID_REQUEST,
            "invalid request: an empty batch",
            None,
        )),
        other => match invalid(&other) {
            Some(e) => Err(e),
            None => Ok((other, Vec::new())),
        },
    }
}

/// Whether a body holds only answers (to the servers' requests).
fn answers_only(message: &Value) -> bool {
    let answer = |m: &Value| m.get("method").is_none() && m.get("id").is_some();
    match message {
        Value::Array(batch) => batch.iter().all(answer),
        single => answer(single),
    }
}

fn is_request(m: &Value) -> bool {
    m.get("method").is_some() && m.get("id").is_some()
}

fn is_cancellation(m: &Value) -> bool {
    m.get("id").is_none()
        && m.get("method").and_then(Value::as_str) == Some("notifications/cancelled")
}

async fn post(front: Arc<Front>, req: Request<Incoming>) -> Reply {
    let accepts_sse = req
        .headers()
        .get(ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| a.contains("text/event-stream"));
    let existing = front.session(&req);
    let has_session_header = req.headers().contains_key(SESSION_HEADER);
    let message = match read_message(&front, req.into_body()).await {
        Ok(message) => message,
        Err(reply) => return reply,
    };
    let is_batch = message.is_array();
    let (mut message, rejected) = match sort_out(message) {
        Ok(sorted) => sorted,
        Err(answer) => return json_reply(StatusCode::BAD_REQUEST, &answer),
    };
    let first = match &message {
        Value::Array(a) => a.first().cloned().unwrap_or(Value::Null),
        other => other.clone(),
    };
    let opens = first.get("method").and_then(Value::as_str) == Some("initialize");
    let (session_id, session) =
        match session_for(&front, &first, &message, existing, has_session_header).await {
            Ok(found) => found,
            Err(reply) => return reply,
        };
    let (rx, expected, ids) = register(&session, &mut message, &rejected, accepts_sse);
    let relay = match &message {
        Value::Array(batch) => !batch.is_empty(),
        single => !single.is_null(),
    };
    if expected == 0 {
        if relay {
            session.session.handle(message).await;
        }
        return plain(StatusCode::ACCEPTED, "");
    }
    if relay {
        let handling = Arc::clone(&session.session);
        tokio::spawn(async move { handling.handle(message).await });
    }
    let shared = session_id.is_none();
    let abandon = shared.then(|| Abandon {
        session: Arc::downgrade(&session),
        ids,
    });
    let mut reply = if accepts_sse {
        sse_response(rx, abandon)
    } else {
        let reply = json_answers(rx, expected, is_batch).await;
        drop(abandon);
        reply
    };
    if let Some(id) = session_id.filter(|_| opens) {
        if let Ok(v) = HeaderValue::from_str(&id) {
            reply.headers_mut().insert(SESSION_HEADER, v);
        }
    }
    reply
}

/// The JSON body of a POST, or the reply refusing it.
async fn read_message(front: &Front, body: Incoming) -> Result<Value, Reply> {
    let body = match front.gate.body(body, MAX_BODY).await {
        Ok(b) => b,
        Err(e @ BodyError::TimedOut(_)) => {
            // Counted in toolpin_connections_closed_total{reason="body_timeout"}.
            let mut r = plain(StatusCode::REQUEST_TIMEOUT, &e.to_string());
            toolpin_front::close_after(&mut r);
            return Err(r);
        }
        Err(e @ BodyError::TooLarge(_)) => {
            return Err(plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("cannot read the body: {e}"),
            ))
        }
        Err(e @ BodyError::Unreadable(_)) => {
            return Err(plain(
                StatusCode::BAD_REQUEST,
                &format!("cannot read the body: {e}"),
            ))
        }
    };
    serde_json::from_slice(&body).map_err(|e| {
        json_reply(
            StatusCode::BAD_REQUEST,
            &error_response(
                &Value::Null,
                crate::jsonrpc::PARSE_ERROR,
                format!("parse error: {e}"),
                None,
            ),
        )
    })
}

/// The session a POST belongs to (its id, `None` for the shared stateless
/// one): a new one for `initialize`, the one its header names, or the
/// stateless one; or the reply refusing the POST.
async fn session_for(
    front: &Front,
    first: &Value,
    message: &Value,
    existing: Option<(String, Arc<HttpSession>)>,
    has_session_header: bool,
) -> Result<(Option<String>, Arc<HttpSession>), Reply> {
    let method = first.get("method").and_then(Value::as_str).unwrap_or("");
    let stateless = method != "initialize"
        && !has_session_header
        && first
            .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
            .is_some();
    if method == "initialize" {
        return match front.open_session() {
            Ok((id, s)) => Ok((Some(id), s)),
            Err(open) => Err(session_limit_reply(front, first, open)),
        };
    }
    if let Some((id, s)) = existing {
        return Ok((Some(id), s));
    }
    if stateless || method == "server/discover" {
        let proxy = Arc::clone(&front.proxy);
        let s = front
            .stateless
            .get_or_init(|| async move { HttpSession::new(&proxy, true, None) })
            .await;
        return Ok((None, Arc::clone(s)));
    }
    if let Some(s) = front
        .stateless
        .get()
        .filter(|_| !has_session_header && answers_only(message))
    {
        // A stateless client's answer to a server's request (sampling,
        // elicitation): the ids are the session's own.
        return Ok((None, Arc::clone(s)));
    }
    if has_session_header {
        return Err(plain(
            StatusCode::NOT_FOUND,
            "no such session; initialize again",
        ));
    }
    Err(json_reply(
        StatusCode::BAD_REQUEST,
        &error_response(
            &Value::Null,
            crate::jsonrpc::INVALID_REQUEST,
            "no Mcp-Session-Id: send initialize first",
            None,
        ),
    ))
}

/// Registers the requests in `message`: their answers are awaited on this
/// POST, under ids of the front's; cancellations name those ids, or go
/// nowhere (and are dropped from `message`). The answers' channel (holding
/// the `rejected` ones already), how many answers are owed, and the ids.
fn register(
    session: &HttpSession,
    message: &mut Value,
    rejected: &[Value],
    accepts_sse: bool,
) -> (mpsc::UnboundedReceiver<Bytes>, usize, Vec<u64>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut expected = rejected.len();
    let mut ids = Vec::new();
    if let Ok(mut streams) = session.streams.lock() {
        let mut admit = |m: &mut Value| {
            if is_request(m) {
                ids.push(streams.register(m, &tx, accepts_sse));
                expected += 1;
                true
            } else if is_cancellation(m) {
                streams.cancel(m)
            } else {
                true
            }
        };
        match message {
            Value::Array(batch) => batch.retain_mut(|m| admit(m)),
            single => {
                if !admit(single) {
                    *single = Value::Null;
                }
            }
        }
    }
    for e in rejected {
        let line = Outgoing::Json(e.clone());
        let _ = tx.send(if accepts_sse {
            sse_event(&line)
        } else {
            Bytes::from(line.to_line())
        });
    }
    (rx, expected, ids)
}

/// Plain JSON: waits for every answer (none owed for a request that was
/// cancelled), then one document, or an array for a batch.
async fn json_answers(
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    expected: usize,
    is_batch: bool,
) -> Reply {
    let mut answers = Vec::with_capacity(expected);
    while answers.len() < expected {
        match rx.recv().await {
            Some(bytes) => answers.push(bytes),
            None => break,
        }
    }
    let body = match (is_batch, answers.len()) {
        (_, 0) => return plain(StatusCode::ACCEPTED, ""),
        (false, _) => answers.swap_remove(0),
        (true, _) => {
            let mut joined = Vec::with_capacity(
                answers.iter().map(Bytes::len).sum::<usize>() + answers.len() + 1,
            );
            joined.push(b'[');
            for (i, a) in answers.iter().enumerate() {
                if i > 0 {
                    joined.push(b',');
                }
                joined.extend_from_slice(a);
            }
            joined.push(b']');
            Bytes::from(joined)
        }
    };
    let mut r = Response::new(http_body_util::Either::Left(Full::new(body)));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for ok in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:3000",
            "[::1]:9",
            "LOCALHOST",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:80",
            "127.0.0.1.evil.example",
            "",
            "localhost.evil",
            "[::1]evil.com",
            "[::1]evil.com:80",
            "[::1]:80evil",
            "[::1]:",
            "[::1",
            "localhost:",
            "localhost:80x",
            "localhost:80:80",
            "::1",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn host_names() {
        assert_eq!(host_name("[::1]:8080"), Some("::1"));
        assert_eq!(host_name("[::1]"), Some("::1"));
        assert_eq!(host_name("example.test:443"), Some("example.test"));
        assert_eq!(host_name("example.test"), Some("example.test"));
        assert_eq!(host_name("[::1]x"), None);
        assert_eq!(host_name("example.test:123456"), None);
    }

    /// Every request of a POST gets an id of the front's; the answer goes
    /// back under the agent's id, to that POST only.
    #[test]
    fn answers_find_their_own_post_whatever_the_agents_ids() {
        let streams = Mutex::new(Streams::default());
        let (tx_a, mut rx_a) = mpsc::unbounded_channel();
        let (tx_b, mut rx_b) = mpsc::unbounded_channel();
        let mut a = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"});
        let mut b = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": {"progressToken": "t"}}});
        {
            let mut s = streams.lock().expect("lock");
            s.register(&mut a, &tx_a, false);
            s.register(&mut b, &tx_b, true);
        }
        assert_eq!(a["id"], 1);
        assert_eq!(b["id"], 2);
        assert_eq!(b["params"]["_meta"]["progressToken"], 2);
        route(
            &streams,
            Outgoing::Json(
                json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 2, "progress": 1}}),
            ),
        );
        route(
            &streams,
            Outgoing::Json(json!({"jsonrpc": "2.0", "id": 2, "result": {"b": true}})),
        );
        route(
            &streams,
            Outgoing::Json(json!({"jsonrpc": "2.0", "id": 1, "result": {"a": true}})),
        );
        let got = |rx: &mut mpsc::UnboundedReceiver<Bytes>| {
            let mut out = Vec::new();
            while let Ok(b) = rx.try_recv() {
                out.push(String::from_utf8_lossy(&b).into_owned());
            }
            out
        };
        assert_eq!(
            got(&mut rx_a),
            vec![r#"{"id":1,"jsonrpc":"2.0","result":{"a":true}}"#]
        );
        assert_eq!(
            got(&mut rx_b),
            vec![
                "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1,\"progressToken\":\"t\"}}\n\n".to_string(),
                "event: message\ndata: {\"id\":1,\"jsonrpc\":\"2.0\",\"result\":{\"b\":true}}\n\n".to_string(),
            ]
        );
        assert!(streams.lock().expect("lock").posts.is_empty());
    }

    #[test]
    fn session_ids_differ() {
        let a = new_session_id();
        assert_eq!(a.len(), 32);
        assert_ne!(a, new_session_id());
    }
}
