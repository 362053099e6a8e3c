//! The outbox: the notifications events owe, and their delivery state.

use toolpin_manifest::Severity;

use crate::Event;

/// What a notification says about its event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    /// The event is new.
    Trigger,
    /// The event got more severe: at this severity. One escalation per
    /// severity, so medium → high → critical is two.
    Escalate(Severity),
    /// The event was resolved.
    Resolve,
}

impl Notice {
    /// The name stored (the outbox's `what`).
    pub fn name(self) -> &'static str {
        match self {
            Notice::Trigger => "trigger",
            Notice::Escalate(_) => "escalate",
            Notice::Resolve => "resolve",
        }
    }

    /// The severity an escalation is at; `""` for the others (part of the
    /// outbox's unique key, so never NULL).
    pub fn level(self) -> &'static str {
        match self {
            Notice::Escalate(s) => s.name(),
            _ => "",
        }
    }

    /// Reads [`Notice::name`] and [`Notice::level`] back.
    pub fn parse(what: &str, level: &str) -> Option<Self> {
        match what {
            "trigger" => Some(Notice::Trigger),
            "resolve" => Some(Notice::Resolve),
            "escalate" => Severity::parse(level).map(Notice::Escalate),
            _ => None,
        }
    }
}

/// Where a delivery stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryState {
    /// Not delivered yet: due at `next_attempt_at` (retried after a failure).
    Pending,
    /// Delivered.
    Delivered,
    /// Given up after [`MAX_ATTEMPTS`] attempts.
    Failed,
}

impl DeliveryState {
    /// The name stored.
    pub fn name(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Delivered => "delivered",
            DeliveryState::Failed => "failed",
        }
    }

    /// Reads [`DeliveryState::name`] back.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "pending" => Some(DeliveryState::Pending),
            "delivered" => Some(DeliveryState::Delivered),
            "failed" => Some(DeliveryState::Failed),
            _ => None,
        }
    }
}

/// One notification to one sink.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    pub id: i64,
    /// The sink's name (`[notify.NAME]`).
    pub sink: String,
    pub notice: Notice,
    pub state: DeliveryState,
    /// Attempts so far (a take counts as one).
    pub attempts: i64,
    pub next_attempt_at: i64,
    pub last_error: Option<String>,
    pub delivered_at: Option<i64>,
    /// The event it is about, as it is now.
    pub event: Event,
}

/// How long a taken delivery is leased (seconds): another watcher does not
/// take it meanwhile, and a watcher that died while delivering lets it
/// become due again afterwards.
pub const LEASE: i64 = 300;

/// Attempts after which a delivery is failed for good.
pub const MAX_ATTEMPTS: i64 = 10;

/// Seconds to wait after the `attempts`-th failed attempt: 60 s, doubled
/// each time, at most six hours.
pub fn backoff(attempts: i64) -> i64 {
    let exponent = attempts.clamp(1, 20) - 1;
    (60_i64 << exponent).min(6 * 3600)
}
