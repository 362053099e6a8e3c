//! What an HTTP/1.1 connection may hold, and for how long: the guard in
//! front of `toolpin proxy --listen` (crates/toolpin-proxy's `http.rs`)
//! and `toolpin usage serve` (crates/toolpin-otlp), on tokio and hyper.
//!
//! [`Gate::serve`] accepts connections and serves each with hyper, bounded
//! by [`Limits`]:
//!
//! - a failing accept backs off from 10 ms doubling to 1 s instead of
//!   spinning;
//! - a connection that has started a request but not finished its headers
//!   within `header_read_timeout` is closed (slowloris), and so is one with
//!   no request in flight for `connection_idle`;
//! - at most `max_connections` are held: past the cap, the connection idle
//!   longest is closed to make room, and when none can be the next is not
//!   accepted until one ends;
//! - out of descriptors (`EMFILE` and the like), the same is done at once,
//!   so that a flood of silent connections never locks a client out for
//!   the length of a timeout;
//! - [`Gate::body`] reads a request's body within `body_timeout` (past it,
//!   the caller answers 408 and the connection is closed).
//!
//! A request in flight (a long call, an open event stream) is never cut by
//! any of these, nor evicted. A connection is evicted only once it has been
//! quiet for [`EVICT_AFTER`] (a client that has just connected gets the
//! time to send its request, whatever the flood behind it), and never when
//! its own timeout is already due (it closes for that reason). Why each
//! connection was closed is counted in a [`Tally`].

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Limited};
use hyper::body::{Body, Bytes, Incoming};
use hyper::header::{HeaderValue, CONNECTION};
use hyper::{Request, Response};
use tokio::net::{TcpListener, TcpStream};

mod held;
mod watch;

use held::{Backoff, Connections};
pub use watch::Tracked;
use watch::{InFlight, Watch, Watched};

/// Default for [`Limits::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 128;
/// Default for [`Limits::header_read_timeout`].
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for [`Limits::connection_idle`].
pub const DEFAULT_CONNECTION_IDLE: Duration = Duration::from_secs(60);
/// Default for [`Limits::body_timeout`].
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a connection must have been quiet (no request in flight)
/// before it may be evicted.
pub const EVICT_AFTER: Duration = Duration::from_secs(1);
/// A failed accept is reported (to [`Gate::serve`]'s `accept_failed`)
/// when none failed for this long before it: once per episode of
/// exhaustion, however long it lasts and however often eviction lets an
/// accept through. Every failure is counted in the [`Tally`].
pub const QUIET_BEFORE_REPORT: Duration = Duration::from_secs(10);

/// What a connection may hold, and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections held at once (at least 1).
    pub max_connections: usize,
    /// A connection that has started a request but not finished its
    /// headers within this is closed.
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed.
    pub connection_idle: Duration,
    /// A body not received in full within this of its headers is an error
    /// ([`BodyError::TimedOut`]), answered 408 and the connection closed.
    pub body_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            connection_idle: DEFAULT_CONNECTION_IDLE,
            body_timeout: DEFAULT_BODY_TIMEOUT,
        }
    }
}

/// Why the server closed a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Closed {
    /// Its request's headers did not arrive within `header_read_timeout`.
    HeaderTimeout,
    /// Its request's body did not arrive within `body_timeout` (answered
    /// 408).
    BodyTimeout,
    /// No request in flight for `connection_idle`.
    Idle,
    /// Quiet, and its slot was wanted (the connection cap, or no
    /// descriptors left).
    Evicted,
}

impl Closed {
    /// The name in logs and metric labels.
    pub fn name(self) -> &'static str {
        match self {
            Closed::HeaderTimeout => "header_timeout",
            Closed::BodyTimeout => "body_timeout",
            Closed::Idle => "idle",
            Closed::Evicted => "evicted",
        }
    }
}

/// What the gate closed and refused, counted from its start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Connections closed, by reason.
    pub closed: BTreeMap<Closed, u64>,
    /// Failed accepts (out of descriptors, and the like).
    pub accept_failures: u64,
    /// The last accept error.
    pub accept_error: Option<String>,
}

impl Counts {
    /// What was counted after `earlier` (an earlier copy of these counts).
    pub fn since(&self, earlier: &Counts) -> Counts {
        let closed = self
            .closed
            .iter()
            .map(|(why, n)| {
                (
                    *why,
                    n - earlier.closed.get(why).copied().unwrap_or(0).min(*n),
                )
            })
            .filter(|(_, n)| *n > 0)
            .collect();
        let accept_failures = self.accept_failures.saturating_sub(earlier.accept_failures);
        Counts {
            closed,
            accept_failures,
            accept_error: self.accept_error.clone().filter(|_| accept_failures > 0),
        }
    }
}

/// The gate's counters, shared with whoever reports them (the proxy's
/// `/metrics`, `usage serve`'s log).
#[derive(Default)]
pub struct Tally(Mutex<Counts>);

impl Tally {
    /// Everything counted so far.
    pub fn counts(&self) -> Counts {
        self.0.lock().map(|c| c.clone()).unwrap_or_default()
    }

    fn closed(&self, why: Closed) {
        if let Ok(mut c) = self.0.lock() {
            *c.closed.entry(why).or_insert(0) += 1;
        }
    }

    fn accept_failed(&self, e: &std::io::Error) {
        if let Ok(mut c) = self.0.lock() {
            c.accept_failures += 1;
            c.accept_error = Some(e.to_string());
        }
    }
}

/// Why a body could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyError {
    /// More than the limit given (answer 413).
    TooLarge(usize),
    /// Not received in full within `body_timeout` (answer 408 and close
    /// the connection: [`close_after`]). Counted as [`Closed::BodyTimeout`].
    TimedOut(Duration),
    /// The connection failed while it arrived.
    Unreadable(String),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::TooLarge(limit) => write!(f, "a body over {limit} bytes"),
            BodyError::TimedOut(t) => write!(f, "the body did not arrive within {t:?}"),
            BodyError::Unreadable(e) => write!(f, "the body could not be read: {e}"),
        }
    }
}

/// Marks an answer as the last on its connection (`Connection: close`):
/// hyper closes the connection once it is written.
pub fn close_after<B>(response: &mut Response<B>) {
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
}

/// The guard of one listener's connections.
pub struct Gate {
    limits: Limits,
    connections: Arc<Connections>,
    tally: Arc<Tally>,
}

impl Gate {
    /// A gate bounded by `limits`, counting into `tally`.
    pub fn new(limits: Limits, tally: Arc<Tally>) -> Arc<Self> {
        let mut limits = limits;
        limits.max_connections = limits.max_connections.max(1);
        Arc::new(Self {
            limits,
            connections: Arc::new(Connections::default()),
            tally,
        })
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// Connections held now.
    pub fn held(&self) -> usize {
        self.connections.len()
    }

    /// A request's body, at most `limit` bytes, within `body_timeout`.
    pub async fn body<B>(&self, body: B, limit: usize) -> Result<Bytes, BodyError>
    where
        B: Body,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let collect = Limited::new(body, limit).collect();
        match tokio::time::timeout(self.limits.body_timeout, collect).await {
            Ok(Ok(b)) => Ok(b.to_bytes()),
            Ok(Err(e))
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some() =>
            {
                Err(BodyError::TooLarge(limit))
            }
            Ok(Err(e)) => Err(BodyError::Unreadable(e.to_string())),
            Err(_) => {
                self.tally.closed(Closed::BodyTimeout);
                Err(BodyError::TimedOut(self.limits.body_timeout))
            }
        }
    }

    /// Serves `listener` with `handler` until `shutdown` completes, then
    /// stops accepting, lets open connections finish the request they are
    /// in (at most `grace`), and returns. `accept_failed` hears of the
    /// first failed accept of each episode ([`QUIET_BEFORE_REPORT`]), with
    /// the pause before the next try (every failure is counted in the
    /// tally).
    pub async fn serve<H, F, B>(
        self: Arc<Self>,
        listener: TcpListener,
        handler: H,
        mut accept_failed: impl FnMut(&std::io::Error, Duration) + Send,
        shutdown: impl Future<Output = ()> + Send,
        grace: Duration,
    ) -> std::io::Result<()>
    where
        H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
        F: Future<Output = Response<B>> + Send + 'static,
        B: Body + Send + Unpin + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let connections = Arc::clone(&self.connections);
        let cap = self.limits.max_connections;
        let mut backoff = Backoff::default();
        let mut last_failure: Option<Instant> = None;
        tokio::pin!(shutdown);
        'serving: loop {
            // At the cap: the connection idle longest makes room; when
            // none may be evicted, wait for one to end or to become so.
            while connections.len() >= cap {
                let ended = connections.one_ended();
                tokio::pin!(ended);
                ended.as_mut().enable();
                connections.evict_idle();
                tokio::select! {
                    () = &mut shutdown => break 'serving,
                    () = ended => {}
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
            let accepted = tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => accepted,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors (EMFILE) and the like: close the
                    // connection idle longest, so that the one waiting
                    // gets its descriptor, and try again when a connection
                    // has ended or after a pause, rather than spin or stop
                    // serving.
                    let pause = backoff.failed();
                    self.tally.accept_failed(&e);
                    if last_failure.is_none_or(|t| t.elapsed() >= QUIET_BEFORE_REPORT) {
                        accept_failed(&e, pause);
                    }
                    last_failure = Some(Instant::now());
                    let ended = connections.one_ended();
                    tokio::pin!(ended);
                    ended.as_mut().enable();
                    if out_of_resources(&e) {
                        connections.evict_idle();
                    }
                    tokio::select! {
                        () = &mut shutdown => break,
                        () = tokio::time::sleep(pause) => {}
                        () = ended => {}
                    }
                    continue;
                }
            };
            backoff = Backoff::default();
            let _ = stream.set_nodelay(true);
            let watch = Arc::new(Watch::new(
                self.limits.header_read_timeout,
                self.limits.connection_idle,
            ));
            let slot = connections.add(Arc::clone(&watch));
            let gate = Arc::clone(&self);
            let handler = handler.clone();
            let stop = stop_rx.clone();
            tokio::spawn(async move {
                gate.serve_connection(stream, watch, handler, stop).await;
                drop(slot);
            });
        }
        let _ = stop_tx.send(true);
        let deadline = tokio::time::Instant::now() + grace;
        while connections.len() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }

    /// One HTTP/1.1 connection, closed when it outlives a timeout or is
    /// evicted (only ever with no request in flight), or gracefully at
    /// shutdown.
    async fn serve_connection<H, F, B>(
        &self,
        stream: TcpStream,
        watch: Arc<Watch>,
        handler: H,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) where
        H: Fn(Request<Incoming>) -> F + Send + Sync + 'static,
        F: Future<Output = Response<B>> + Send + 'static,
        B: Body + Send + Unpin + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let io = hyper_util::rt::TokioIo::new(Watched {
            inner: stream,
            watch: Arc::clone(&watch),
        });
        let watching = Arc::clone(&watch);
        let service = hyper::service::service_fn(move |req| {
            let guard = InFlight::start(Arc::clone(&watching));
            let reply = handler(req);
            async move { Ok::<_, Infallible>(reply.await.map(|body| Tracked::new(body, guard))) }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .keep_alive(true)
            .serve_connection(io, service);
        tokio::pin!(conn);
        tokio::select! {
            _ = conn.as_mut() => {}
            why = watch.expired() => self.tally.closed(why),
            _ = stop.changed() => {
                conn.as_mut().graceful_shutdown();
                let _ = tokio::time::timeout(Duration::from_secs(30), conn).await;
            }
        }
    }
}

/// An accept that failed for want of descriptors or memory, which closing
/// a connection gives back.
fn out_of_resources(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_since_an_earlier_copy() {
        let mut earlier = Counts::default();
        earlier.closed.insert(Closed::Idle, 2);
        earlier.accept_failures = 3;
        earlier.accept_error = Some("too many open files".into());
        let mut now = earlier.clone();
        now.closed.insert(Closed::Idle, 5);
        now.closed.insert(Closed::Evicted, 1);
        assert_eq!(
            now.since(&earlier),
            Counts {
                closed: BTreeMap::from([(Closed::Idle, 3), (Closed::Evicted, 1)]),
                accept_failures: 0,
                accept_error: None,
            }
        );
        assert_eq!(now.since(&now), Counts::default());
    }
}
