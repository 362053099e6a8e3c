//! Delivering the outbox: every due notification handed to its sink, its
//! state recorded in the ledger whatever happens, so that a sink's outage
//! loses nothing and a retry never sends twice what was delivered.
//!
//! Each sink is sent to on a thread of its own, one delivery after another,
//! so a sink that hangs delays only its own notifications. A delivery is
//! leased (`Ledger::take_due_for`) just before its sink sends it, never
//! earlier: a pass never holds a lease that runs out before the send it
//! was taken for, and never sends a delivery another watcher took since.
//! The ledger stays on the calling thread (its connection is not shared);
//! the sink threads only send, over HTTP ([`http`]).

mod http;

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::Duration;

use toolpin_config::notify::{NotifyConfig, Sink};
use toolpin_ledger::{Delivery, DeliveryState, Ledger, Sighting, LEASE};
use toolpin_notify::DeliveryError;

pub use http::HttpTransport;

use crate::schedule;

/// What a sink said to one delivery.
#[derive(Debug)]
pub enum Sent {
    /// Delivered; with what the sink calls the event, when it says (a
    /// GitHub issue's number), kept for later notices.
    Delivered(Option<String>),
    /// Not delivered: a one-line reason (no secret in it); whether a retry
    /// may succeed (an outage, a rate limit) or never will (a revoked
    /// token: the delivery is given up at once); and what the sink calls
    /// the event, when it said before failing (a GitHub issue created,
    /// then its comment refused), kept so that the retry does not create
    /// it again.
    Failed {
        why: String,
        retryable: bool,
        reference: Option<String>,
    },
}

/// Sends one notification. The watch command's implementation sends to
/// the `[notify.NAME]` sinks; tests record what they are handed. Called
/// from one thread per sink at once, hence `Sync`.
pub trait Sender: Sync {
    /// Sends `delivery` to its sink; `reference` is what the sink called
    /// the event before. Must return within [`MAX_SEND`].
    fn send(&self, delivery: &Delivery, reference: Option<&str>) -> Sent;
}

/// What one pass over the outbox did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Delivered {
    pub delivered: usize,
    /// Failed now, to be retried after a backoff.
    pub retrying: usize,
    /// Failed for good (too many attempts).
    pub given_up: usize,
    /// The failures' one-line reasons, `notify.NAME: why`, by sink name
    /// (each sink's in the order they happened).
    pub errors: Vec<String>,
}

/// Most notifications one sink is sent in one pass: a backlog drains over
/// runs instead of stalling one.
pub const BATCH: usize = 200;

/// How long (in the pass's clock, seconds) a pass starts deliveries for:
/// past it, each sink finishes the delivery in flight and stops; the rest
/// wait for the next pass.
pub const BUDGET: i64 = 120;

/// How long one request to a sink may take, unless its `timeout` says.
pub const SINK_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest one delivery may take: three requests (GitHub's most) at
/// the longest timeout a sink may set. It ends well inside its lease.
pub const MAX_SEND: Duration =
    Duration::from_secs(3 * toolpin_config::notify::MAX_TIMEOUT.as_secs());

const _: () = assert!((MAX_SEND.as_secs() as i64) < LEASE);

/// Delivers the notifications due to the sinks `sinks` names (`None`:
/// every sink with something due), each sink on a thread of its own,
/// recording each outcome. `now` is the clock (unix seconds) the leases,
/// the backoff and the [`BUDGET`] are measured in.
///
/// A sink is sent nothing more in this pass after a failure worth retrying
/// (it is down, slow or rate-limiting: its other notifications would fail
/// the same way, each spending an attempt), after [`BATCH`] deliveries, or
/// once the budget is spent; every sink stops after the delivery in flight
/// when SIGTERM or SIGINT asks `watch` to stop.
pub fn deliver_due(
    ledger: &mut Ledger,
    sender: &dyn Sender,
    sinks: Option<&[String]>,
    now: &dyn Fn() -> i64,
) -> Result<Delivered, toolpin_ledger::Error> {
    let started = now();
    let due = ledger.due_sinks(started, sinks)?;
    let mut pass = Pass {
        ledger,
        now,
        started,
        done: Delivered::default(),
        errors: Vec::new(),
    };
    // Each sink's first delivery, taken before its thread starts.
    let mut first = Vec::new();
    for sink in due {
        first.extend(pass.take(&sink)?);
    }
    let outcome = std::thread::scope(|scope| {
        let (report, outcomes) = mpsc::channel::<(usize, Delivery, Sent)>();
        let mut jobs = Vec::new();
        for (index, job) in first.into_iter().enumerate() {
            let (give, next) = mpsc::channel::<Job>();
            let report = report.clone();
            // The channel was just made: this cannot fail.
            let _ = give.send(job);
            jobs.push(Some(give));
            scope.spawn(move || {
                while let Ok((delivery, reference)) = next.recv() {
                    let sent = sender.send(&delivery, reference.as_deref());
                    if report.send((index, delivery, sent)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(report);
        let mut sent = vec![1usize; jobs.len()];
        let mut failed: Option<toolpin_ledger::Error> = None;
        // Each outcome as it comes; then that sink's next delivery, or the
        // end of its thread (its sender dropped).
        for (index, delivery, outcome) in outcomes {
            let more = if failed.is_some() {
                false
            } else {
                match pass.record(&delivery, outcome) {
                    Ok(more) => more,
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                }
            };
            let next = if more && sent[index] < BATCH && pass.may_start() {
                match pass.take(&delivery.sink) {
                    Ok(job) => job,
                    Err(e) => {
                        failed = Some(e);
                        None
                    }
                }
            } else {
                None
            };
            match (next, &jobs[index]) {
                (Some(job), Some(give)) => {
                    sent[index] += 1;
                    let _ = give.send(job);
                }
                _ => jobs[index] = None,
            }
        }
        failed
    });
    if let Some(e) = outcome {
        return Err(e);
    }
    let Pass {
        mut done,
        mut errors,
        ..
    } = pass;
    // By sink, each sink's in order: the output does not depend on which
    // thread answered first.
    errors.sort_by(|a, b| a.0.cmp(&b.0));
    done.errors = errors.into_iter().map(|(_, why)| why).collect();
    Ok(done)
}

/// A delivery to send and what its sink called its event before.
type Job = (Delivery, Option<String>);

/// The ledger's side of a pass: taking deliveries and recording outcomes.
struct Pass<'a> {
    ledger: &'a mut Ledger,
    now: &'a dyn Fn() -> i64,
    started: i64,
    done: Delivered,
    /// (sink, why), in the order they happened.
    errors: Vec<(String, String)>,
}

impl Pass<'_> {
    /// Whether another delivery may start: the budget is not spent and no
    /// stop was asked for.
    fn may_start(&self) -> bool {
        !schedule::stopping() && (self.now)() - self.started < BUDGET
    }

    /// Leases `sink`'s next due delivery, if any, with its reference.
    fn take(&mut self, sink: &str) -> Result<Option<Job>, toolpin_ledger::Error> {
        if !self.may_start() {
            return Ok(None);
        }
        let names = [sink.to_string()];
        let Some(delivery) = self
            .ledger
            .take_due_for((self.now)(), 1, Some(&names))?
            .into_iter()
            .next()
        else {
            return Ok(None);
        };
        let reference = self.ledger.sink_ref(&delivery.sink, delivery.event.id)?;
        Ok(Some((delivery, reference)))
    }

    /// Records what the sink said; whether the sink is to be sent more.
    fn record(&mut self, delivery: &Delivery, sent: Sent) -> Result<bool, toolpin_ledger::Error> {
        let ledger = &mut *self.ledger;
        let at = (self.now)();
        match sent {
            Sent::Delivered(reference) => {
                if let Some(r) = reference {
                    ledger.set_sink_ref(&delivery.sink, delivery.event.id, &r)?;
                }
                ledger.mark_delivered(delivery.id, at)?;
                self.done.delivered += 1;
                Ok(true)
            }
            Sent::Failed {
                why,
                retryable,
                reference,
            } => {
                if let Some(r) = reference {
                    ledger.set_sink_ref(&delivery.sink, delivery.event.id, &r)?;
                }
                if !retryable {
                    ledger.give_up(delivery.id, &why, at)?;
                    self.done.given_up += 1;
                } else {
                    match ledger.mark_failed(delivery.id, &why, at)? {
                        DeliveryState::Failed => self.done.given_up += 1,
                        _ => self.done.retrying += 1,
                    }
                }
                self.errors.push((delivery.sink.clone(), why));
                // A refusal concerns that one notification; an outage,
                // every one of the sink's.
                Ok(!retryable)
            }
        }
    }
}

/// The `[notify.NAME]` sinks, sending with `toolpin-notify`.
pub struct NotifySender {
    sinks: BTreeMap<String, Sink>,
}

impl NotifySender {
    pub fn new(config: &NotifyConfig) -> Self {
        Self {
            sinks: config.sinks.clone(),
        }
    }

    /// The sinks' names: the deliveries this watcher takes.
    pub fn names(&self) -> Vec<String> {
        self.sinks.keys().cloned().collect()
    }
}

impl Sender for NotifySender {
    fn send(&self, delivery: &Delivery, reference: Option<&str>) -> Sent {
        let Some(sink) = self.sinks.get(&delivery.sink) else {
            // Not taken unless named (see `deliver_due`'s `sinks`).
            return Sent::Failed {
                why: format!(
                    "notify.{}: no such sink in the configuration",
                    delivery.sink
                ),
                retryable: true,
                reference: None,
            };
        };
        let timeout = sink.timeout.unwrap_or(SINK_TIMEOUT);
        match send(sink, delivery, reference, timeout) {
            Ok(sent) => Sent::Delivered(sent.reference),
            Err(e) => Sent::Failed {
                why: e.message,
                retryable: e.retryable,
                reference: e.reference,
            },
        }
    }
}

/// Sends `delivery` to `sink` with `toolpin_notify::deliver` over HTTP
/// ([`HttpTransport`]), each request bounded by `timeout`. `reference` is
/// what the sink called the event before. Blocking: call it outside any
/// tokio runtime.
pub fn send(
    sink: &Sink,
    delivery: &Delivery,
    reference: Option<&str>,
    timeout: Duration,
) -> Result<toolpin_notify::Delivered, DeliveryError> {
    let transport = HttpTransport::new(timeout).map_err(|e| DeliveryError {
        message: format!("notify.{}: cannot set up the HTTP client: {e}", sink.name),
        retryable: false,
        reference: None,
    })?;
    toolpin_notify::deliver(sink, delivery, reference, &transport)
}

/// The sinks a sighting goes to, by `[notify.NAME]` routing: the sinks
/// whose servers, tools, environments and severity floor admit it.
pub fn route(config: &NotifyConfig) -> impl Fn(&Sighting) -> Vec<String> + '_ {
    move |s: &Sighting| config.route(&s.environment, &s.server, &s.tool, s.severity())
}
