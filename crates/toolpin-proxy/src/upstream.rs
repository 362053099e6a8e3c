//! One upstream server as the proxy sees it: a session opened with the
//! agent's own initialize parameters, then a relay where many requests are
//! in flight at once, each waiting on its id.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use toolpin_capture::mcp::{self, Client, Frame, Incoming, Opened, Relay, SessionOptions};
use toolpin_capture::Endpoint;
use toolpin_manifest::Transform;

use crate::served::Route;
use crate::wire::{Call, Reply};

/// Where the stateless revision carries the protocol version.
pub(crate) const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

/// How to reach one configured upstream.
#[derive(Clone, Debug)]
pub struct UpstreamSpec {
    pub name: String,
    pub endpoint: Endpoint,
    /// As configured (capabilities and client info are merged with the
    /// agent's when a session opens).
    pub options: SessionOptions,
    /// The server's namespacing and filters, as in the lockfile.
    pub transform: Transform,
}

/// What a request in flight is waiting for.
pub enum Waiter {
    /// The agent's request, relayed.
    Front(Box<FrontCall>),
    /// The proxy's own request (a re-capture): the whole response.
    Internal(oneshot::Sender<Value>),
}

/// The agent's request in flight.
pub struct FrontCall {
    pub front_id: Value,
    pub method: String,
    /// For `tools/call`: the served name and its route.
    pub tool: Option<(String, Arc<Route>)>,
    pub started: Instant,
    /// The trace span of a `tools/call`.
    pub span: Option<crate::telemetry::CallSpan>,
}

/// Where an upstream hands what it receives: the session, called in order
/// from the task that reads the server (no queue in between).
pub type Events = Arc<dyn Fn(Event) + Send + Sync>;

/// What the upstream sends, for the session to act on.
pub enum Event {
    /// A response to a request of the agent's, as the server wrote it.
    Response(Box<FrontCall>, Reply),
    /// A request or notification from the server (named), and the agent's
    /// id of the one request in flight on that server, if only one is (what
    /// the server sends meanwhile belongs with it).
    Message(String, Value, Option<Value>),
    /// The connection to the server (named) ended: why, and the calls that
    /// were in flight.
    Closed(String, String, Vec<Box<FrontCall>>),
}

/// Hashes the proxy's own request ids (sequential integers, nothing an
/// attacker chooses) with one multiplication instead of SipHash.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_i64(&mut self, n: i64) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The requests in flight, by the proxy's id.
type Pending = HashMap<i64, Waiter, BuildHasherDefault<IdHasher>>;

/// An open upstream session.
///
/// Messages to the server go through a queue to a writer task, so that a
/// server that stops reading can never block the agent's session: the
/// call's deadline still fires, and a writer stuck that long gets the
/// server killed (and restarted on the next request).
pub struct Upstream {
    pub name: String,
    pub opened: Opened,
    /// The `_meta` every request needs in the stateless revision.
    stateless_meta: Option<Value>,
    relay: Arc<tokio::sync::Mutex<Option<Relay>>>,
    outbox: mpsc::UnboundedSender<Frame>,
    /// When the write in progress started (ms since `epoch`), 0 when idle.
    writing_since: Arc<std::sync::atomic::AtomicU64>,
    epoch: Instant,
    /// A stdio server's process group.
    pid: Option<u32>,
    next_id: AtomicI64,
    pending: Mutex<Pending>,
    closed: Mutex<Option<String>>,
    /// Closed on purpose: no `upstream-closed` event.
    shutting_down: std::sync::atomic::AtomicBool,
}

/// The writer of an upstream: one message at a time, in order, whatever
/// else is queued going in the same write. `writing_since` holds when the
/// current write started (milliseconds after `epoch`, 0 when idle).
fn spawn_writer(
    relay: Arc<tokio::sync::Mutex<Option<Relay>>>,
    mut queue: mpsc::UnboundedReceiver<Frame>,
    writing_since: Arc<std::sync::atomic::AtomicU64>,
    epoch: Instant,
) {
    tokio::spawn(async move {
        let mut batch = Vec::new();
        while let Some(message) = queue.recv().await {
            batch.clear();
            batch.push(message);
            while batch.len() < 256 {
                match queue.try_recv() {
                    Ok(m) => batch.push(m),
                    Err(_) => break,
                }
            }
            let mut guard = relay.lock().await;
            let Some(r) = guard.as_mut() else { return };
            let now = epoch.elapsed().as_millis() as u64;
            writing_since.store(now.max(1), Ordering::Relaxed);
            let sent = r.send_all(&batch).await;
            writing_since.store(0, Ordering::Relaxed);
            // A failed write means the server is gone; the reader sees
            // the close and answers every call in flight.
            if sent.is_err() {
                return;
            }
        }
    });
}

/// How long a closing stdio server gets before it is killed: well under
/// the 2 s the SDKs give the proxy itself before they signal it.
const CLOSE_GRACE: Duration = Duration::from_millis(800);

impl Upstream {
    /// Starts (or reaches) the server and opens a session declaring what
    /// the agent declared. Everything the server sends afterwards arrives
    /// on `events`.
    pub async fn connect(
        spec: &UpstreamSpec,
        options: SessionOptions,
        events: Events,
        proxy: &crate::Proxy,
    ) -> Result<Arc<Self>, String> {
        let mut client = match &spec.endpoint {
            Endpoint::Stdio(s) if proxy.settings.reply_runtime.is_some() => {
                let mut s = s.clone();
                s.reader.clone_from(&proxy.settings.reply_runtime);
                Client::connect_stdio(&s).await
            }
            Endpoint::Stdio(s) => Client::connect_stdio(s).await,
            Endpoint::Http(h) => Client::connect_http(h, options.timeouts.connect).await,
        }
        .map_err(|e| e.to_string())?;
        let opened = match mcp::open(&mut client, &options).await {
            Ok(o) => o,
            Err(e) => {
                client.close(CLOSE_GRACE).await;
                return Err(e.to_string());
            }
        };
        let stateless_meta = opened.stateless.then(|| mcp::stateless_meta(&options));
        let (relay, mut incoming, early) = client.into_relay();
        let pid = relay.process_id();
        let relay = Arc::new(tokio::sync::Mutex::new(Some(relay)));
        let (outbox, queue) = mpsc::unbounded_channel::<Frame>();
        let writing_since = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let epoch = Instant::now();
        let upstream = Arc::new(Self {
            name: spec.name.clone(),
            opened,
            stateless_meta,
            relay: Arc::clone(&relay),
            outbox,
            writing_since: Arc::clone(&writing_since),
            epoch,
            pid,
            next_id: AtomicI64::new(1),
            pending: Mutex::new(Pending::default()),
            closed: Mutex::new(None),
            shutting_down: std::sync::atomic::AtomicBool::new(false),
        });
        spawn_writer(relay, queue, writing_since, epoch);
        for message in early {
            events(Event::Message(spec.name.clone(), message, None));
        }
        let reader = Arc::downgrade(&upstream);
        let name = spec.name.clone();
        proxy.spawn_reply(async move {
            while let Some(incoming) = incoming.recv().await {
                let Some(up) = reader.upgrade() else { return };
                match incoming {
                    Incoming::Message(Value::Array(batch)) => {
                        for m in batch {
                            up.dispatch(m, &events, &name);
                        }
                    }
                    Incoming::Message(m) => up.dispatch(m, &events, &name),
                    Incoming::Text(text) => {
                        if let Err(reason) = up.dispatch_text(text, &events, &name) {
                            up.close_with(reason, &events).await;
                            return;
                        }
                    }
                    Incoming::Closed(reason) => {
                        up.close_with(reason, &events).await;
                        return;
                    }
                }
            }
            if let Some(up) = reader.upgrade() {
                up.close_with("the connection closed".into(), &events).await;
            }
        });
        Ok(upstream)
    }

    /// A line from a stdio server: a response to one of the proxy's
    /// requests stays text; anything else is parsed. `Err` when the line
    /// is not JSON (the connection is over).
    fn dispatch_text(&self, text: String, events: &Events, name: &str) -> Result<(), String> {
        let text = match Reply::parse(text) {
            Ok(reply) => {
                self.answer(reply, events);
                return Ok(());
            }
            Err(text) => text,
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(batch)) => {
                for m in batch {
                    self.dispatch(m, events, name);
                }
            }
            Ok(message) => self.dispatch(message, events, name),
            Err(e) => return Err(mcp::invalid_json(text.as_bytes(), &e)),
        }
        Ok(())
    }

    fn dispatch(&self, message: Value, events: &Events, name: &str) {
        let is_response = message.get("method").is_none()
            && (message.get("result").is_some() || message.get("error").is_some());
        if !is_response {
            // Progress finds its request by token.
            let progress =
                message.get("method").and_then(Value::as_str) == Some("notifications/progress");
            let related = if progress {
                None
            } else {
                self.sole_front_call()
            };
            events(Event::Message(name.to_string(), message, related));
            return;
        }
        // A response whose id is not one of the proxy's is nobody's.
        if let Some(reply) = Reply::from_value(&message) {
            self.answer(reply, events);
        }
    }

    /// The agent's id of the one request in flight here, if exactly one is.
    fn sole_front_call(&self) -> Option<Value> {
        let pending = self.pending.lock().ok()?;
        let mut calls = pending.values().filter_map(|w| match w {
            Waiter::Front(call) => Some(&call.front_id),
            Waiter::Internal(_) => None,
        });
        let first = calls.next()?.clone();
        calls.next().is_none().then_some(first)
    }

    /// Hands a response to whoever waits for it.
    fn answer(&self, reply: Reply, events: &Events) {
        let id = reply.upstream_id();
        let waiter = self.pending.lock().ok().and_then(|mut p| p.remove(&id));
        match waiter {
            Some(Waiter::Front(call)) => {
                events(Event::Response(call, reply));
            }
            Some(Waiter::Internal(tx)) => {
                let _ = tx.send(reply.into_value());
            }
            // Cancelled or timed out already.
            None => {}
        }
    }

    async fn close_with(&self, reason: String, events: &Events) {
        // The exit status, unless the writer is stuck on the relay.
        let status = match self.relay.try_lock() {
            Ok(mut relay) => match relay.as_mut() {
                Some(r) => r.exit_status(Duration::from_millis(300)).await,
                None => None,
            },
            Err(_) => None,
        };
        let reason = match status {
            Some(status) => format!("{reason} (the server {status})"),
            None => reason,
        };
        if let Ok(mut closed) = self.closed.lock() {
            closed.get_or_insert(reason.clone());
        }
        let drained: Vec<Waiter> = self
            .pending
            .lock()
            .map(|mut p| p.drain().map(|(_, w)| w).collect())
            .unwrap_or_default();
        let calls = drained
            .into_iter()
            .filter_map(|w| match w {
                Waiter::Front(call) => Some(call),
                // Dropping the sender wakes the internal waiter.
                Waiter::Internal(_) => None,
            })
            .collect();
        if !self.shutting_down.load(Ordering::Relaxed) {
            events(Event::Closed(self.name.clone(), reason, calls));
        }
    }

    /// Whether the proxy closed it on purpose (the agent went away).
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Relaxed)
    }

    /// Why the connection is gone, if it is.
    pub fn closed(&self) -> Option<String> {
        self.closed.lock().ok().and_then(|c| c.clone())
    }

    /// Relays a request: a fresh id, the waiter registered, the message
    /// sent. Returns the upstream id (for cancellation).
    pub async fn request(&self, mut message: Value, waiter: Waiter) -> Result<i64, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        message["id"] = json!(id);
        self.add_meta(&mut message);
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, waiter);
        }
        if let Err(e) = self.queue(Frame::Json(message)) {
            // The caller answers the agent; the waiter goes.
            let _ = self.take(id);
            return Err(e);
        }
        Ok(id)
    }

    /// Whether every request needs `_meta` added (the stateless revision):
    /// then a call cannot go as the agent wrote it.
    pub fn adds_meta(&self) -> bool {
        self.stateless_meta.is_some()
    }

    /// Relays the agent's `tools/call` as it wrote it, with a fresh id and
    /// the server's name for the tool (and the proxy's span as `_meta`'s
    /// `traceparent`, when given). Returns the upstream id.
    pub fn request_call(
        &self,
        call: &Call,
        name: &str,
        traceparent: Option<&str>,
        waiter: Waiter,
    ) -> Result<i64, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, waiter);
        }
        if let Err(e) = self.queue(Frame::Text(call.to_upstream_traced(id, name, traceparent))) {
            let _ = self.take(id);
            return Err(e);
        }
        Ok(id)
    }

    /// Removes and returns the agent's calls in flight for `timeout` or
    /// longer.
    pub fn expire(&self, timeout: Duration) -> Vec<(i64, Box<FrontCall>)> {
        let Ok(mut pending) = self.pending.lock() else {
            return Vec::new();
        };
        let late: Vec<i64> = pending
            .iter()
            .filter_map(|(id, w)| match w {
                Waiter::Front(call) if call.started.elapsed() >= timeout => Some(*id),
                _ => None,
            })
            .collect();
        late.into_iter()
            .filter_map(|id| match pending.remove(&id) {
                Some(Waiter::Front(call)) => Some((id, call)),
                _ => None,
            })
            .collect()
    }

    /// Whether any of the agent's calls is waiting on this server.
    pub fn has_calls_in_flight(&self) -> bool {
        self.pending
            .lock()
            .map(|p| p.values().any(|w| matches!(w, Waiter::Front(_))))
            .unwrap_or(false)
    }

    /// The agent's call in flight under the agent's id `front_id`, removed,
    /// with its upstream id (a cancellation: rare, so a scan).
    pub fn take_front(&self, front_id: &Value) -> Option<(i64, Box<FrontCall>)> {
        let mut pending = self.pending.lock().ok()?;
        let uid = pending.iter().find_map(|(uid, w)| match w {
            Waiter::Front(call) if call.front_id == *front_id => Some(*uid),
            _ => None,
        })?;
        match pending.remove(&uid) {
            Some(Waiter::Front(call)) => Some((uid, call)),
            _ => None,
        }
    }

    /// The waiter for `id`, if it is still pending (a timeout or cancel).
    pub fn take(&self, id: i64) -> Option<Waiter> {
        self.pending.lock().ok().and_then(|mut p| p.remove(&id))
    }

    /// The proxy's own request; the whole response, or why there is none.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, String> {
        let (tx, rx) = oneshot::channel();
        let id = self
            .request(
                json!({"jsonrpc": "2.0", "method": method, "params": params}),
                Waiter::Internal(tx),
            )
            .await?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(response)) => match response.get("error") {
                Some(e) => Err(format!(
                    "{method}: {}",
                    e.get("message").and_then(Value::as_str).unwrap_or("error")
                )),
                None => Ok(response.get("result").cloned().unwrap_or(Value::Null)),
            },
            Ok(Err(_)) => Err(self
                .closed()
                .unwrap_or_else(|| "the connection closed".into())),
            Err(_) => {
                let _ = self.take(id);
                Err(format!(
                    "{method}: no answer within {} s",
                    timeout.as_secs_f64()
                ))
            }
        }
    }

    /// Queues a message as it is (a notification, or an answer to the
    /// server's own request); never waits for the server.
    pub async fn send(&self, message: &Value) -> Result<(), String> {
        self.queue(Frame::Json(message.clone()))
    }

    fn queue(&self, message: Frame) -> Result<(), String> {
        if let Some(reason) = self.closed() {
            return Err(reason);
        }
        self.outbox
            .send(message)
            .map_err(|_| "the connection is closed".to_string())
    }

    /// How long the write in progress has been stuck, if one is.
    pub fn write_stalled_for(&self) -> Option<Duration> {
        let since = self.writing_since.load(Ordering::Relaxed);
        (since > 0).then(|| {
            let now = self.epoch.elapsed().as_millis() as u64;
            Duration::from_millis(now.saturating_sub(since))
        })
    }

    /// Kills a stdio server's process group (a wedged or abandoned server).
    pub fn kill(&self) {
        if let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: kill(2) has no memory effects; the negative pid is the
            // group the server leads.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }

    /// The server's process group, for cleanup on a signal.
    pub fn process_id(&self) -> Option<u32> {
        self.pid
    }

    /// A notification, with the stateless `_meta` when needed.
    pub async fn notify(&self, mut message: Value) -> Result<(), String> {
        self.add_meta(&mut message);
        self.queue(Frame::Json(message))
    }

    /// The protocol revision in `_meta` is the one negotiated with this
    /// server, never the agent's (the HTTP transport repeats it in
    /// `MCP-Protocol-Version`): the stateless revision's `_meta` is added,
    /// or the agent's protocol version removed.
    fn add_meta(&self, message: &mut Value) {
        let Some(obj) = message.as_object_mut() else {
            return;
        };
        let Some(meta) = &self.stateless_meta else {
            let agents = obj
                .get_mut("params")
                .and_then(|p| p.get_mut("_meta"))
                .and_then(Value::as_object_mut);
            if let Some(m) = agents {
                m.remove(PROTOCOL_VERSION_META);
            }
            return;
        };
        let params = obj.entry("params").or_insert_with(|| json!({}));
        if let Some(p) = params.as_object_mut() {
            let m = p.entry("_meta").or_insert_with(|| json!({}));
            if let (Some(m), Some(meta)) = (m.as_object_mut(), meta.as_object()) {
                for (k, v) in meta {
                    if k == PROTOCOL_VERSION_META {
                        m.insert(k.clone(), v.clone());
                    } else {
                        m.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
            }
        }
    }

    /// Ends the session and reaps the server.
    pub async fn shutdown(&self) {
        self.shutting_down.store(true, Ordering::Relaxed);
        if let Ok(mut closed) = self.closed.lock() {
            closed.get_or_insert_with(|| "the agent session ended".into());
        }
        // A writer stuck on a server that stopped reading holds the relay:
        // then the server is killed instead of asked.
        match tokio::time::timeout(CLOSE_GRACE, self.relay.lock()).await {
            Ok(mut guard) => {
                if let Some(relay) = guard.take() {
                    relay.close(CLOSE_GRACE).await;
                }
            }
            Err(_) => self.kill(),
        }
    }
}
