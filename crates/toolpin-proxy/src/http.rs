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
//! - Limits: at most `max_sessions` sessions (then `initialize` gets 503
//!   with `Retry-After`); a connection that does not finish a request's
//!   headers within `header_read_timeout`, or has no request in flight for
//!   `connection_idle`, is closed; a failing accept (out of descriptors)
//!   backs off instead of spinning.
//! - Host and Origin are checked on every request (DNS-rebinding
//!   protection): loopback names, plus what `--allow-host` /
//!   `--allow-origin` add. Anything else gets 403.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper::header::{HeaderValue, ACCEPT, CONTENT_TYPE, HOST, ORIGIN};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Notify};

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
    /// A connection that has started a request but not finished its
    /// headers within this is closed (slowloris).
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed, so
    /// that silent connections cannot hold every descriptor.
    pub connection_idle: Duration,
}

/// Default for [`Options::session_idle`].
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// Default for [`Options::max_sessions`].
pub const DEFAULT_MAX_SESSIONS: usize = 32;
/// Default for [`Options::header_read_timeout`].
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for [`Options::connection_idle`].
pub const DEFAULT_CONNECTION_IDLE: Duration = Duration::from_secs(60);
/// `Retry-After` of the refusal at the session cap, in seconds.
const RETRY_AFTER_SECONDS: u64 = 10;
/// JSON-RPC code of the refusal at the session cap (server error range).
const SESSION_LIMIT_CODE: i64 = -32000;

impl Default for Options {
    fn default() -> Self {
        Self {
            allow_hosts: Vec::new(),
            allow_origins: Vec::new(),
            session_idle: DEFAULT_SESSION_IDLE,
            max_sessions: DEFAULT_MAX_SESSIONS,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            connection_idle: DEFAULT_CONNECTION_IDLE,
        }
    }
}

/// A body fed from a channel: an SSE stream, or one JSON document.
struct ChannelBody {
    rx: mpsc::UnboundedReceiver<Bytes>,
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
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

/// Where a session's outgoing messages go.
#[derive(Default)]
struct Streams {
    /// Open POST streams: the agent's request id → its stream.
    posts: BTreeMap<u64, (String, mpsc::UnboundedSender<Bytes>, bool)>,
    /// Progress tokens → the POST that announced them.
    progress: HashMap<String, u64>,
    /// The GET stream.
    get: Option<mpsc::UnboundedSender<Bytes>>,
    /// Messages with nowhere to go yet (no GET stream open).
    backlog: VecDeque<Outgoing>,
    next: u64,
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
    fn new(proxy: &Arc<Proxy>) -> Arc<Self> {
        let (to_client, mut outgoing) = mpsc::unbounded_channel::<Outgoing>();
        let session = Session::start(Arc::clone(proxy), to_client);
        let streams = Arc::new(Mutex::new(Streams::default()));
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
            .map(|s| s.get.as_ref().is_some_and(|g| !g.is_closed()) || !s.posts.is_empty())
            .unwrap_or(true);
        quiet && !streaming
    }
}

/// Sends one outgoing message where it belongs: a response on the stream
/// of the POST that asked; progress on the stream of the request that
/// announced the token; anything else on the GET stream, else on an open
/// POST stream, else kept until a GET stream opens.
fn route(streams: &Mutex<Streams>, message: Outgoing) {
    let Ok(mut s) = streams.lock() else { return };
    let is_response = message.json().is_none_or(|m| m.get("method").is_none());
    if is_response {
        let key = message
            .response_id()
            .map(Value::to_string)
            .unwrap_or_default();
        let found = s
            .posts
            .iter()
            .find(|(_, (id, _, _))| *id == key)
            .map(|(n, _)| *n);
        if let Some(n) = found {
            if let Some((_, tx, sse)) = s.posts.remove(&n) {
                let bytes = if sse {
                    sse_event(&message)
                } else {
                    Bytes::from(message.to_line())
                };
                let _ = tx.send(bytes);
            }
            s.progress.retain(|_, v| *v != n);
        }
        return;
    }
    let progress = message
        .json()
        .filter(|m| m.get("method").and_then(Value::as_str) == Some("notifications/progress"));
    if let Some(m) = progress {
        let token = m
            .get("params")
            .and_then(|p| p.get("progressToken"))
            .map(Value::to_string)
            .unwrap_or_default();
        if let Some(n) = s.progress.get(&token).copied() {
            if let Some((_, tx, true)) = s.posts.get(&n) {
                let _ = tx.send(sse_event(&message));
                return;
            }
        }
    }
    if let Some(get) = &s.get {
        if get.send(sse_event(&message)).is_ok() {
            return;
        }
        s.get = None;
    }
    if let Some((_, tx, _)) = s.posts.values().find(|(_, _, sse)| *sse) {
        let _ = tx.send(sse_event(&message));
        return;
    }
    if s.backlog.len() < MAX_BACKLOG {
        s.backlog.push_back(message);
    }
}

/// The front's shared state.
struct Front {
    proxy: Arc<Proxy>,
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    stateless: tokio::sync::OnceCell<Arc<HttpSession>>,
    options: Options,
}

/// Serves Streamable HTTP on `addr` until the process ends.
pub async fn serve(proxy: Arc<Proxy>, addr: &str, options: Options) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    proxy.events.emit(
        "listening",
        json!({"address": local.to_string(), "endpoint": format!("http://{local}/mcp")}),
    );
    let front = Arc::new(Front {
        proxy,
        sessions: Mutex::new(HashMap::new()),
        stateless: tokio::sync::OnceCell::new(),
        options,
    });
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
                    "session-expired",
                    json!({"idle_seconds": limit.as_secs_f64()}),
                );
                s.session.close().await;
            }
        }
    });
    accept_loop(listener, front).await
}

/// Serves only `/metrics` on `addr`, in the background (stdio mode); of
/// `options`, the connection timeouts apply.
pub async fn serve_metrics(proxy: Arc<Proxy>, addr: &str, options: Options) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    let front = Arc::new(Front {
        proxy,
        sessions: Mutex::new(HashMap::new()),
        stateless: tokio::sync::OnceCell::new(),
        options,
    });
    tokio::spawn(async move {
        let _ = accept_loop_with(listener, front, true).await;
    });
    Ok(())
}

async fn accept_loop(listener: TcpListener, front: Arc<Front>) -> std::io::Result<()> {
    accept_loop_with(listener, front, false).await
}

async fn accept_loop_with(
    listener: TcpListener,
    front: Arc<Front>,
    metrics_only: bool,
) -> std::io::Result<()> {
    let mut backoff = Backoff::default();
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            // Out of descriptors (EMFILE) and the like: the connections
            // held now are closed by their timeouts, so wait and try again
            // rather than spin or stop serving.
            Err(e) => {
                if let Some(pause) = backoff.failed() {
                    front.proxy.events.emit(
                        "accept-failed",
                        json!({"message": e.to_string(), "retry_ms": pause.as_millis() as u64}),
                    );
                }
                tokio::time::sleep(backoff.pause()).await;
                continue;
            }
        };
        backoff = Backoff::default();
        let _ = stream.set_nodelay(true);
        let front = Arc::clone(&front);
        tokio::spawn(serve_connection(front, stream, metrics_only));
    }
}

/// How long the accept loop waits after a failed accept: 10 ms, doubling
/// to 1 s while accepts keep failing.
#[derive(Default)]
struct Backoff {
    failures: u32,
}

impl Backoff {
    /// Records a failure; returns the pause when this is the first of a
    /// run (the one worth an event).
    fn failed(&mut self) -> Option<Duration> {
        self.failures = self.failures.saturating_add(1);
        (self.failures == 1).then(|| self.pause())
    }

    fn pause(&self) -> Duration {
        let shift = self.failures.saturating_sub(1).min(7);
        Duration::from_millis(10u64 << shift).min(Duration::from_secs(1))
    }
}

/// One HTTP/1.1 connection, closed by the proxy when it has no request in
/// flight for `connection_idle`, or has started a request whose headers
/// are not complete within `header_read_timeout`.
async fn serve_connection(front: Arc<Front>, stream: tokio::net::TcpStream, metrics_only: bool) {
    let watch = Arc::new(Watch::new());
    let io = hyper_util::rt::TokioIo::new(Watched {
        inner: stream,
        watch: Arc::clone(&watch),
    });
    let serving = Arc::clone(&front);
    let watching = Arc::clone(&watch);
    let service = hyper::service::service_fn(move |req| {
        let front = Arc::clone(&serving);
        let guard = InFlight::start(Arc::clone(&watching));
        async move {
            let reply = handle(front, req, metrics_only).await;
            Ok::<_, Infallible>(reply.map(|body| Tracked {
                inner: body,
                _guard: guard,
            }))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.keep_alive(true);
    let connection = builder.serve_connection(io, service);
    let (header, idle) = (
        front.options.header_read_timeout,
        front.options.connection_idle,
    );
    tokio::select! {
        _ = connection => {}
        reason = watch.expired(header, idle) => front.proxy.metrics.connection_closed(reason),
    }
}

/// What a connection is doing, for its timeouts.
struct Watch {
    state: Mutex<WatchState>,
    /// Woken when a request ends or a new one starts arriving.
    changed: Notify,
}

struct WatchState {
    /// Requests whose answer is not yet fully written.
    in_flight: usize,
    /// Since when nothing has been in flight.
    quiet_since: Instant,
    /// When the first byte of the next request came, if it did.
    head_started: Option<Instant>,
}

impl Watch {
    fn new() -> Self {
        Self {
            state: Mutex::new(WatchState {
                in_flight: 0,
                quiet_since: Instant::now(),
                head_started: None,
            }),
            changed: Notify::new(),
        }
    }

    /// Bytes arrived: with nothing in flight, a request is starting.
    fn read(&self) {
        let Ok(mut s) = self.state.lock() else { return };
        if s.in_flight == 0 && s.head_started.is_none() {
            s.head_started = Some(Instant::now());
            drop(s);
            self.changed.notify_one();
        }
    }

    /// When the connection is to be closed, and why; `None` while a
    /// request is in flight.
    fn deadline(&self, header: Duration, idle: Duration) -> Option<(Instant, &'static str)> {
        let s = self.state.lock().ok()?;
        if s.in_flight > 0 {
            return None;
        }
        let quiet = (s.quiet_since + idle, "idle");
        Some(match s.head_started {
            Some(t) if t + header < quiet.0 => (t + header, "header_timeout"),
            _ => quiet,
        })
    }

    /// Resolves when the connection has outlived a timeout, with the reason.
    async fn expired(&self, header: Duration, idle: Duration) -> &'static str {
        loop {
            let changed = self.changed.notified();
            match self.deadline(header, idle) {
                None => changed.await,
                Some((at, reason)) => {
                    if Instant::now() >= at {
                        return reason;
                    }
                    tokio::select! {
                        _ = tokio::time::sleep_until(at.into()) => {}
                        _ = changed => {}
                    }
                }
            }
        }
    }
}

/// Counts one request as in flight from its headers until its answer's
/// body is dropped (written in full, or the connection gone).
struct InFlight(Arc<Watch>);

impl InFlight {
    fn start(watch: Arc<Watch>) -> Self {
        if let Ok(mut s) = watch.state.lock() {
            s.in_flight += 1;
            s.head_started = None;
        }
        watch.changed.notify_one();
        Self(watch)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Ok(mut s) = self.0.state.lock() {
            s.in_flight = s.in_flight.saturating_sub(1);
            if s.in_flight == 0 {
                s.quiet_since = Instant::now();
                s.head_started = None;
            }
        }
        self.0.changed.notify_one();
    }
}

/// An answer's body, holding its request in flight.
struct Tracked<B> {
    inner: B,
    _guard: InFlight,
}

impl<B: Body + Unpin> Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// A connection's stream, telling its [`Watch`] when bytes arrive.
struct Watched<T> {
    inner: T,
    watch: Arc<Watch>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.watch.read();
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        // [::1]:port
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, p)| {
            if p.chars().all(|c| c.is_ascii_digit()) {
                h
            } else {
                host
            }
        })
    };
    matches!(
        name.to_ascii_lowercase().as_str(),
        "localhost" | "127.0.0.1" | "::1"
    )
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
        let host_ok = is_loopback_host(host)
            || self.options.allow_hosts.iter().any(|a| {
                a.eq_ignore_ascii_case(host)
                    || host
                        .rsplit_once(':')
                        .is_some_and(|(h, _)| a.eq_ignore_ascii_case(h))
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
        let s = HttpSession::new(&self.proxy);
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
    if let Err(why) = front.host_allowed(&req) {
        front
            .proxy
            .events
            .emit("refused-host", json!({"host": req.headers().get(HOST).and_then(|h| h.to_str().ok()), "origin": req.headers().get(ORIGIN).and_then(|h| h.to_str().ok())}));
        return plain(StatusCode::FORBIDDEN, why);
    }
    let path = req.uri().path().to_string();
    if path == "/metrics" && req.method() == Method::GET {
        let fp = front.proxy.settings.catalog.fingerprint.to_hex();
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
    sse_response(rx)
}

fn sse_response(rx: mpsc::UnboundedReceiver<Bytes>) -> Reply {
    let mut r = Response::new(http_body_util::Either::Right(ChannelBody { rx }));
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
        "session-refused",
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
        &error_response(&id, SESSION_LIMIT_CODE, text, Some(data)),
    );
    r.headers_mut().insert(
        hyper::header::RETRY_AFTER,
        HeaderValue::from(RETRY_AFTER_SECONDS),
    );
    r
}

/// A session id nobody can guess: 128 bits from the system's generator.
fn new_session_id() -> String {
    crate::telemetry::random_bytes::<16>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

async fn post(front: Arc<Front>, req: Request<Incoming>) -> Reply {
    let accepts_sse = req
        .headers()
        .get(ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| a.contains("text/event-stream"));
    let existing = front.session(&req);
    let has_session_header = req.headers().contains_key(SESSION_HEADER);
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("cannot read the body: {e}"),
            )
        }
    };
    let message: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return json_reply(
                StatusCode::BAD_REQUEST,
                &error_response(&Value::Null, -32700, format!("parse error: {e}"), None),
            )
        }
    };
    let first = match &message {
        Value::Array(a) => a.first().cloned().unwrap_or(Value::Null),
        other => other.clone(),
    };
    let method = first.get("method").and_then(Value::as_str).unwrap_or("");
    let opens = method == "initialize";
    let stateless = !opens
        && !has_session_header
        && first
            .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
            .is_some();
    let (session_id, session) = if opens {
        match front.open_session() {
            Ok((id, s)) => (Some(id), s),
            Err(open) => return session_limit_reply(&front, &first, open),
        }
    } else if let Some((id, s)) = existing {
        (Some(id), s)
    } else if stateless || method == "server/discover" {
        let proxy = Arc::clone(&front.proxy);
        let s = front
            .stateless
            .get_or_init(|| async move { HttpSession::new(&proxy) })
            .await;
        (None, Arc::clone(s))
    } else if has_session_header {
        return plain(StatusCode::NOT_FOUND, "no such session; initialize again");
    } else {
        return json_reply(
            StatusCode::BAD_REQUEST,
            &error_response(
                &Value::Null,
                -32600,
                "no Mcp-Session-Id: send initialize first",
                None,
            ),
        );
    };

    // Requests in the message: their answers are awaited on this POST.
    let requests: Vec<&Value> = match &message {
        Value::Array(a) => a
            .iter()
            .filter(|m| m.get("method").is_some() && m.get("id").is_some())
            .collect(),
        m if m.get("method").is_some() && m.get("id").is_some() => vec![m],
        _ => Vec::new(),
    };
    if requests.is_empty() {
        session.session.handle(message).await;
        return plain(StatusCode::ACCEPTED, "");
    }
    let (tx, rx) = mpsc::unbounded_channel();
    if let Ok(mut streams) = session.streams.lock() {
        for r in &requests {
            let n = streams.next;
            streams.next += 1;
            let key = r.get("id").map(Value::to_string).unwrap_or_default();
            if let Some(token) = r.pointer("/params/_meta/progressToken") {
                streams.progress.insert(token.to_string(), n);
            }
            streams.posts.insert(n, (key, tx.clone(), accepts_sse));
        }
    }
    drop(tx);
    let handling = Arc::clone(&session.session);
    tokio::spawn(async move { handling.handle(message).await });
    let mut reply = if accepts_sse {
        sse_response(rx)
    } else {
        // Plain JSON: wait for the one answer.
        let mut rx = rx;
        match rx.recv().await {
            Some(bytes) => {
                let mut r = Response::new(http_body_util::Either::Left(Full::new(bytes)));
                r.headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                r
            }
            None => plain(StatusCode::INTERNAL_SERVER_ERROR, "the request was dropped"),
        }
    };
    if let Some(id) = session_id.filter(|_| opens) {
        if let Ok(v) = HeaderValue::from_str(&id) {
            reply.headers_mut().insert(SESSION_HEADER, v);
        }
    }
    reply
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
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn session_ids_differ() {
        let a = new_session_id();
        assert_eq!(a.len(), 32);
        assert_ne!(a, new_session_id());
    }
}
