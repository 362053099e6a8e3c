//! One connection: what it is doing (a request in flight, headers
//! arriving, quiet since when), for its timeouts and for eviction.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::body::{Body, Frame};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use crate::{Closed, EVICT_AFTER};

/// What a connection is doing, for its timeouts and for eviction.
pub(crate) struct Watch {
    state: Mutex<WatchState>,
    /// Woken when a request ends, a new one starts arriving, or the
    /// connection is evicted.
    changed: Notify,
    /// `header_read_timeout` and `connection_idle`.
    header: Duration,
    idle: Duration,
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

impl WatchState {
    /// When the connection closes by its own timeouts, and why; `None`
    /// while a request is in flight.
    fn deadline(&self, header: Duration, idle: Duration) -> Option<(Instant, Closed)> {
        if self.in_flight > 0 {
            return None;
        }
        let quiet = (self.quiet_since + idle, Closed::Idle);
        Some(match self.head_started {
            Some(t) if t + header < quiet.0 => (t + header, Closed::HeaderTimeout),
            _ => quiet,
        })
    }
}

impl Watch {
    pub(crate) fn new(header: Duration, idle: Duration) -> Self {
        Self {
            state: Mutex::new(WatchState {
                in_flight: 0,
                quiet_since: Instant::now(),
                head_started: None,
                evicted: false,
            }),
            changed: Notify::new(),
            header,
            idle,
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

    /// Since when the connection has had nothing in flight, if it may be
    /// evicted at `now`: quiet for at least [`EVICT_AFTER`], and not
    /// already due to close by its own timeouts (it is closing anyway,
    /// for that reason). `None` while a request is in flight: such a
    /// connection is never evicted.
    pub(crate) fn evictable_since(&self, now: Instant) -> Option<Instant> {
        let s = self.state.lock().ok()?;
        Self::evictable(&s, now, self.header, self.idle)
    }

    fn evictable(
        s: &WatchState,
        now: Instant,
        header: Duration,
        idle: Duration,
    ) -> Option<Instant> {
        if s.evicted || now < s.quiet_since + EVICT_AFTER {
            return None;
        }
        let (due, _) = s.deadline(header, idle)?;
        (now < due).then_some(s.quiet_since)
    }

    /// Closes the connection if it may still be evicted at `now`; true if
    /// it did.
    pub(crate) fn evict(&self, now: Instant) -> bool {
        let Ok(mut s) = self.state.lock() else {
            return false;
        };
        if Self::evictable(&s, now, self.header, self.idle).is_none() {
            return false;
        }
        s.evicted = true;
        drop(s);
        self.changed.notify_one();
        true
    }

    /// When the connection is to be closed, and why; `None` while a
    /// request is in flight.
    fn deadline(&self) -> Option<(Instant, Closed)> {
        let s = self.state.lock().ok()?;
        if s.evicted && s.in_flight == 0 {
            return Some((Instant::now(), Closed::Evicted));
        }
        s.deadline(self.header, self.idle)
    }

    /// Resolves when the connection has outlived a timeout or was
    /// evicted, with the reason.
    pub(crate) async fn expired(&self) -> Closed {
        loop {
            let changed = self.changed.notified();
            match self.deadline() {
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
pub struct Tracked<B> {
    inner: B,
    _guard: InFlight,
}

impl<B> Tracked<B> {
    pub(crate) fn new(inner: B, guard: InFlight) -> Self {
        Self {
            inner,
            _guard: guard,
        }
    }
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

#[cfg(test)]
impl Watch {
    /// Pretends the connection has been quiet for `d` already.
    pub(crate) fn quiet_for(&self, d: Duration) {
        if let Ok(mut s) = self.state.lock() {
            s.quiet_since = Instant::now() - d;
        }
    }

    pub(crate) fn closing(&self) -> Option<Closed> {
        self.deadline().map(|d| d.1)
    }
}
