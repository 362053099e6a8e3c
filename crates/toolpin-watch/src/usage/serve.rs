//! `toolpin usage serve`'s loop: the OTLP/HTTP receiver (`toolpin-otlp`)
//! on a runtime of its own, and on this thread a flush every interval of
//! what arrived into the store. A flush that fails keeps what it could not
//! store and tries again next time; while the store is down and the buffer
//! is past its bound, exporters are told to retry later (503). SIGTERM or
//! SIGINT stops the receiver, stores the rest and returns.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use toolpin_otlp::{serve, Receiver};
use toolpin_usage::{Aggregates, IngestReport, Options};

use crate::schedule;

/// How the receiver runs.
#[derive(Clone, Debug)]
pub struct ServeSettings {
    /// `host:port`; port 0 picks a free one (announced by
    /// [`ServeEvents::listening`]).
    pub listen: String,
    pub flush_every: Duration,
    pub options: Options,
    /// Largest export body, compressed or not.
    pub max_body_bytes: usize,
    /// Keys held while the store is down before exporters get 503.
    pub max_buffered_keys: usize,
}

impl ServeSettings {
    pub fn new(listen: &str, flush_every: Duration, options: Options) -> Self {
        Self {
            listen: listen.to_string(),
            flush_every,
            options,
            max_body_bytes: 16 << 20,
            max_buffered_keys: 1_000_000,
        }
    }
}

/// What the loop tells its caller (the CLI prints it).
pub trait ServeEvents {
    fn listening(&self, addr: SocketAddr);
    /// A flush stored `calls` calls under `keys` keys.
    fn stored(&self, calls: u64, keys: usize);
    /// A flush failed; `buffered` keys are kept for the next one.
    fn store_failed(&self, error: &str, buffered: usize);
    /// What arrived since the last flush that could not be used.
    fn bad_input(&self, report: &IngestReport);
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
    let receiver = Receiver::new(settings.options.clone(), settings.max_body_bytes);
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
        let (aggregates, report) = receiver.take();
        if report.problems.values().any(|o| o.count > 0) {
            events.bad_input(&report);
        }
        if aggregates.is_empty() {
            return Ok(());
        }
        match store(&aggregates) {
            Ok(()) => {
                receiver.set_unavailable(false);
                events.stored(aggregates.total_calls(), aggregates.len());
                Ok(())
            }
            Err(e) => {
                receiver.restore(&aggregates);
                let buffered = receiver.buffered_keys();
                receiver.set_unavailable(buffered > settings.max_buffered_keys);
                events.store_failed(&e, buffered);
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
