//! What a connection may hold, and for how long. The same answers as
//! `toolpin proxy --listen` (crates/toolpin-proxy's `http.rs`, docs/proxy.md
//! "Limits"), with the same schedule and names: a failing accept backs off
//! from 10 ms doubling to 1 s instead of spinning; a connection that has
//! not finished a request's headers within `header_read_timeout`, or has
//! no request in flight for `connection_idle`, is closed. And two more that
//! a receiver of large bodies needs: at most `max_connections` are held
//! (past the cap, the connection idle longest is closed to make room, and
//! when every one is busy the next is not accepted until one ends), and
//! out of descriptors the same is done at once, so that a flood of silent
//! connections never locks an exporter out for the length of a timeout.
//! A body that has not arrived in full within `body_timeout` is answered
//! 408 (in `lib.rs`).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::body::{Body, Frame};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// How long the accept loop waits after a failed accept: 10 ms, doubling
/// to 1 s while accepts keep failing (as the proxy's front does).
#[derive(Default)]
pub(crate) struct Backoff {
    failures: u32,
}

impl Backoff {
    /// Records a failure and returns the pause before the next accept.
    pub(crate) fn failed(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let shift = self.failures.saturating_sub(1).min(7);
        Duration::from_millis(10u64 << shift).min(Duration::from_secs(1))
    }
}

/// Why the receiver closed a connection (counted for `usage serve`'s log).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Closed {
    /// Its request's headers did not arrive within `header_read_timeout`.
    HeaderTimeout,
    /// No request in flight for `connection_idle`.
    Idle,
    /// Idle, and its slot was wanted (the connection cap, or no
    /// descriptors left).
    Evicted,
}

impl Closed {
    pub fn name(self) -> &'static str {
        match self {
            Closed::HeaderTimeout => "header_timeout",
            Closed::Idle => "idle",
            Closed::Evicted => "evicted",
        }
    }
}

/// What a connection is doing, for its timeouts and for eviction.
pub(crate) struct Watch {
    state: Mutex<WatchState>,
    /// Woken when a request ends, a new one starts arriving, or the
    /// connection is evicted.
    changed: Notify,
}

struct WatchState {
    /// Requests whose answer is not yet fully written.
    in_flight: usize,
    /// Since when nothing has been in flight.
    quiet_since: Instant,
    /// When the first byte of the next request came, if it did.
    head_started: Option<Instant>,
    evicted: bool,
}

impl Watch {
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(WatchState {
                in_flight: 0,
                quiet_since: Instant::now(),
                head_started: None,
                evicted: false,
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

    /// Since when the connection has had nothing in flight, or `None`
    /// while a request is (such a connection is never evicted).
    fn idle_since(&self) -> Option<Instant> {
        let s = self.state.lock().ok()?;
        (s.in_flight == 0 && !s.evicted).then_some(s.quiet_since)
    }

    /// Closes the connection if nothing is in flight; true if it did.
    fn evict(&self) -> bool {
        let Ok(mut s) = self.state.lock() else {
            return false;
        };
        if s.in_flight > 0 || s.evicted {
            return false;
        }
        s.evicted = true;
        drop(s);
        self.changed.notify_one();
        true
    }

    /// When the connection is to be closed, and why; `None` while a
    /// request is in flight.
    fn deadline(&self, header: Duration, idle: Duration) -> Option<(Instant, Closed)> {
        let s = self.state.lock().ok()?;
        if s.in_flight > 0 {
            return None;
        }
        if s.evicted {
            return Some((Instant::now(), Closed::Evicted));
        }
        let quiet = (s.quiet_since + idle, Closed::Idle);
        Some(match s.head_started {
            Some(t) if t + header < quiet.0 => (t + header, Closed::HeaderTimeout),
            _ => quiet,
        })
    }

    /// Resolves when the connection has outlived a timeout or was
    /// evicted, with the reason.
    pub(crate) async fn expired(&self, header: Duration, idle: Duration) -> Closed {
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
pub(crate) struct InFlight(Arc<Watch>);

impl InFlight {
    pub(crate) fn start(watch: Arc<Watch>) -> Self {
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
pub(crate) struct Tracked<B> {
    pub(crate) inner: B,
    pub(crate) _guard: InFlight,
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
pub(crate) struct Watched<T> {
    pub(crate) inner: T,
    pub(crate) watch: Arc<Watch>,
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

/// The connections held, for the cap and for eviction.
#[derive(Default)]
pub(crate) struct Connections {
    open: Mutex<HashMap<u64, Arc<Watch>>>,
    next: AtomicU64,
    /// Woken when a connection ends.
    ended: Notify,
}

/// A connection's place in [`Connections`], given up when dropped.
pub(crate) struct Slot {
    connections: Arc<Connections>,
    id: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.connections.open.lock() {
            open.remove(&self.id);
        }
        self.connections.ended.notify_waiters();
    }
}

impl Connections {
    pub(crate) fn len(&self) -> usize {
        self.open.lock().map_or(0, |o| o.len())
    }

    /// Registers a new connection.
    pub(crate) fn add(self: &Arc<Self>, watch: Arc<Watch>) -> Slot {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut open) = self.open.lock() {
            open.insert(id, watch);
        }
        Slot {
            connections: Arc::clone(self),
            id,
        }
    }

    /// Closes the connection that has had nothing in flight the longest;
    /// false when every connection has a request in flight.
    pub(crate) fn evict_idle(&self) -> bool {
        let oldest = {
            let Ok(open) = self.open.lock() else {
                return false;
            };
            let mut idle: Vec<(Instant, Arc<Watch>)> = open
                .values()
                .filter_map(|w| w.idle_since().map(|t| (t, Arc::clone(w))))
                .collect();
            idle.sort_by_key(|(t, _)| *t);
            idle
        };
        oldest.iter().any(|(_, w)| w.evict())
    }

    /// Resolves when a connection ends (`enable` it before the event it
    /// waits for).
    pub(crate) fn one_ended(&self) -> tokio::sync::futures::Notified<'_> {
        self.ended.notified()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_second() {
        let mut b = Backoff::default();
        let pauses: Vec<u64> = (0..10).map(|_| b.failed().as_millis() as u64).collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
    }

    #[test]
    fn the_connection_idle_longest_is_evicted_never_one_in_flight() {
        let connections = Arc::new(Connections::default());
        let (old, busy, young) = (
            Arc::new(Watch::new()),
            Arc::new(Watch::new()),
            Arc::new(Watch::new()),
        );
        let _slots = [&busy, &old, &young].map(|w| connections.add(Arc::clone(w)));
        // `busy` is older still, but has a request in flight.
        let _request = InFlight::start(Arc::clone(&busy));
        if let Ok(mut s) = old.state.lock() {
            s.quiet_since -= Duration::from_secs(5);
        }
        assert!(connections.evict_idle());
        assert_eq!(
            old.deadline(Duration::from_secs(9), Duration::from_secs(9))
                .map(|d| d.1),
            Some(Closed::Evicted)
        );
        assert!(connections.evict_idle(), "then the younger idle one");
        assert!(!connections.evict_idle(), "never the one in flight");
        assert_eq!(busy.deadline(Duration::ZERO, Duration::ZERO), None);
    }
}
