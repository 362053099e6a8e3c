//! `toolpin usage serve`'s loop: the OTLP/HTTP receiver (`toolpin-otlp`)
//! on a runtime of its own, and on this thread a flush every interval of
//! what arrived into the store. A flush that fails keeps what it could not
//! store and tries again next time; what is held (arrived, or being
//! stored) is bounded in bytes, and past the bound exporters are told to
//! retry later (503 with `Retry-After`). SIGTERM or SIGINT stops the
//! receiver, stores the rest and returns.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use toolpin_otlp::{serve, Receiver};
pub use toolpin_otlp::{Notices, Settings};
use toolpin_usage::{Aggregates, IngestReport, Options};

use crate::schedule;

/// How the receiver runs.
#[derive(Clone, Debug)]
pub struct ServeSettings {
    /// `host:port`; port 0 picks a free one (announced by
    /// [`ServeEvents::listening`]).
    pub listen: String,
    pub flush_every: Duration,
    /// The receiver's bounds (body, buffer, names, connections, timeouts).
    pub receiver: Settings,
}

impl ServeSettings {
    /// The receiver's defaults; a 503 asks exporters to retry after one
    /// flush interval (between 1 s and a minute).
    pub fn new(listen: &str, flush_every: Duration, options: Options) -> Self {
        let mut receiver = Settings::new(options);
        receiver.retry_after = flush_every.clamp(Duration::from_secs(1), Duration::from_secs(60));
        Self {
            listen: listen.to_string(),
            flush_every,
            receiver,
        }
    }
}

/// What the loop tells its caller (the CLI prints it).
pub trait ServeEvents {
    fn listening(&self, addr: SocketAddr);
    /// A flush stored `calls` calls under `keys` keys; `folded` calls
    /// (per key part, in `toolpin_usage::KEY_PARTS` order) named more
    /// distinct values than the cap and were counted under `(other)`.
    fn stored(&self, calls: u64, keys: usize, folded: &[u64; 5]);
    /// A flush failed; `buffered` keys (`held` bytes) are kept for the
    /// next one.
    fn store_failed(&self, error: &str, buffered: usize, held: usize);
    /// What arrived since the last flush that could not be used.
    fn bad_input(&self, report: &IngestReport);
    /// What the receiver refused or closed since the last flush.
    fn refused(&self, notices: &Notices);
}

/// Runs until SIGTERM or SIGINT. `store` merges aggregates into the usage
/// store. The error is one line: the address could not be bound, or the
/// last flush could not store what was left.
pub fn serve_until_stopped(
    settings: &ServeSettings,
    store: &mut dyn FnMut(&Aggregates) -> Result<(), String>,
    events: &dyn ServeEvents,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the receiver: {e}"))?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(&settings.listen))
        .map_err(|e| format!("cannot listen on {}: {e}", settings.listen))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {}: {e}", settings.listen))?;
    let receiver = Receiver::new(settings.receiver.clone());
    schedule::stop_on_signals();
    let stopped = async {
        while !schedule::stopping() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let server = runtime.spawn(serve(
        listener,
        Arc::clone(&receiver),
        stopped,
        Duration::from_secs(5),
    ));
    events.listening(addr);
    let flush = |store: &mut dyn FnMut(&Aggregates) -> Result<(), String>| -> Result<(), String> {
        let notices = receiver.take_notices();
        if !notices.is_empty() {
            events.refused(&notices);
        }
        // Held (and counted against the buffer's bound) until stored.
        let taken = receiver.take();
        if taken.report.problems.values().any(|o| o.count > 0) {
            events.bad_input(&taken.report);
        }
        if taken.aggregates.is_empty() {
            return Ok(());
        }
        match store(&taken.aggregates) {
            Ok(()) => {
                events.stored(
                    taken.aggregates.total_calls(),
                    taken.aggregates.len(),
                    &taken.aggregates.folded(),
                );
                Ok(())
            }
            Err(e) => {
                taken.restore();
                events.store_failed(&e, receiver.buffered_keys(), receiver.held_bytes());
                Err(e)
            }
        }
    };
    while schedule::sleep(settings.flush_every) {
        // A failure is reported and retried at the next flush.
        let _ = flush(store);
    }
    // Stop taking exports, let the ones in flight finish, store the rest.
    let _ = runtime.block_on(server);
    flush(store).map_err(|e| {
        format!(
            "{} keys could not be stored at exit: {e}",
            receiver.buffered_keys()
        )
    })
}
