//! The drift ledger's records as plain data (issue 33): what a caller
//! records ([`Sighting`], with its [`FindingRecord`]s), the [`Event`] it
//! becomes with its [`EventKind`] and [`Resolution`], and the outbox's
//! [`Delivery`] of a [`Notice`] with its [`DeliveryState`] and
//! [`backoff`]. No database driver: `toolpin-ledger` stores these, and
//! `toolpin-notify` reads them without depending on the store.
//!
//! docs/ledger.md is the specification.

mod event;
mod outbox;

pub use event::{
    EventFilter, EventKind, FindingRecord, RecordOutcome, Recorded, Resolution, Sighting,
};
pub use outbox::{backoff, Delivery, DeliveryState, Notice, LEASE, MAX_ATTEMPTS};
pub use toolpin_manifest::Severity;

/// One drift event as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub id: i64,
    pub environment: String,
    pub server: String,
    /// The namespaced tool; `""` for an event about the server itself.
    pub tool: String,
    /// The pinned tool fingerprint; `None` for a tool that is not pinned
    /// (added upstream).
    pub pinned: Option<String>,
    /// The live tool fingerprint; `None` for a tool gone upstream.
    pub live: Option<String>,
    pub kind: EventKind,
    /// The worst severity among the findings; `None` when there are none.
    pub severity: Option<Severity>,
    pub findings: Vec<FindingRecord>,
    pub vendor: Option<String>,
    /// The server's reported version (`serverInfo.version`) when first seen.
    pub server_version: Option<String>,
    /// The server's version in the lockfile.
    pub pinned_version: Option<String>,
    /// How many evals the plan asked to re-run (the latest sighting's).
    pub reruns: i64,
    /// The last time, before the first sighting, a check saw the server
    /// match its pins: the upstream change happened after it. `None` when
    /// no clean check was recorded before.
    pub unchanged_at: Option<i64>,
    pub first_seen: i64,
    pub last_seen: i64,
    /// How many sightings the event stands for.
    pub count: i64,
    /// When and how it was resolved; `None` while it is open.
    pub resolved: Option<(i64, Resolution)>,
}
