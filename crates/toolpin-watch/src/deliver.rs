//! Delivering the outbox: every due notification handed to its sink, its
//! state recorded in the ledger whatever happens, so that a sink's outage
//! loses nothing and a retry never sends twice what was delivered.

use std::collections::BTreeMap;
use std::time::Duration;

use toolpin_config::notify::{NotifyConfig, Sink};
use toolpin_ledger::{Delivery, DeliveryState, Ledger, Sighting};

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
/// the `[notify.NAME]` sinks; tests record what they are handed.
pub trait Sender {
    /// Sends `delivery` to its sink; `reference` is what the sink called
    /// the event before.
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
    /// The failures' one-line reasons, `notify.NAME: why`.
    pub errors: Vec<String>,
}

/// Most notifications taken in one pass: a backlog drains over runs
/// instead of stalling one.
pub const BATCH: usize = 200;

/// Delivers every notification due at `now` to the sinks `sinks` names
/// (`None`: all), each taken under a lease so that another watcher does
/// not send it too, recording each outcome.
pub fn deliver_due(
    ledger: &mut Ledger,
    sender: &dyn Sender,
    sinks: Option<&[String]>,
    now: &dyn Fn() -> i64,
) -> Result<Delivered, toolpin_ledger::Error> {
    let mut done = Delivered::default();
    for delivery in ledger.take_due_for(now(), BATCH, sinks)? {
        let reference = ledger.sink_ref(&delivery.sink, delivery.event.id)?;
        match sender.send(&delivery, reference.as_deref()) {
            Sent::Delivered(reference) => {
                if let Some(r) = reference {
                    ledger.set_sink_ref(&delivery.sink, delivery.event.id, &r)?;
                }
                ledger.mark_delivered(delivery.id, now())?;
                done.delivered += 1;
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
                    ledger.give_up(delivery.id, &why, now())?;
                    done.given_up += 1;
                } else {
                    match ledger.mark_failed(delivery.id, &why, now())? {
                        DeliveryState::Failed => done.given_up += 1,
                        _ => done.retrying += 1,
                    }
                }
                done.errors.push(why);
            }
        }
    }
    Ok(done)
}

/// How long one request to a sink may take.
pub const SINK_TIMEOUT: Duration = Duration::from_secs(10);

/// The `[notify.NAME]` sinks, sending with `toolpin-notify`.
pub struct NotifySender {
    sinks: BTreeMap<String, Sink>,
    timeout: Duration,
}

impl NotifySender {
    pub fn new(config: &NotifyConfig) -> Self {
        Self {
            sinks: config.sinks.clone(),
            timeout: SINK_TIMEOUT,
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
        match toolpin_notify::deliver(sink, delivery, reference, self.timeout) {
            Ok(sent) => Sent::Delivered(sent.reference),
            Err(e) => Sent::Failed {
                why: e.message,
                retryable: e.retryable,
                reference: e.reference,
            },
        }
    }
}

/// The sinks a sighting goes to, by `[notify.NAME]` routing: the sinks
/// whose servers, tools, environments and severity floor admit it.
pub fn route(config: &NotifyConfig) -> impl Fn(&Sighting) -> Vec<String> + '_ {
    move |s: &Sighting| config.route(&s.environment, &s.server, &s.tool, s.severity())
}
