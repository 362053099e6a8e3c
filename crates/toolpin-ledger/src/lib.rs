//! The drift ledger (issue 18, point 1): one store of every drift event
//! toolpin sees, and the outbox of the notifications those events owe.
//!
//! - [`Ledger`]: the store, opened on a SQLite file ([`Ledger::open`]) or
//!   connected to a PostgreSQL database ([`Ledger::connect`]; either by
//!   [`Ledger::open_location`] with a [`Location`]), with its schema
//!   migrated ([`migrate`]). The backend is private (see `store`): both
//!   behave the same behind the same methods.
//! - [`Sighting`]: what a caller saw (a failing check's tool, an approval,
//!   a proxy refusal, …), recorded with [`Ledger::record_drift`]. An event is
//!   keyed by what changed (environment, server, tool, pinned → live
//!   fingerprint, and the event's kind): the same drift seen by fifty runs
//!   is one [`Event`] with first and last sighting and a count.
//! - [`RecordOutcome`]: whether the sighting was new, seen before, or more
//!   severe than before: what the caller notifies about.
//! - The outbox: a notification per sink and event, enqueued in the same
//!   transaction as the event ([`Ledger::record_and_enqueue`]), taken when
//!   due ([`Ledger::take_due`]) and marked delivered or failed with backoff.
//!
//! docs/ledger.md is the specification. Time is always given by the caller
//! (unix seconds), never read here. The ledger stores exactly what it is
//! given: callers pass redacted text. No printing, no logging.

mod dialect;
mod driver;
pub mod history;
pub mod migrate;
mod postgres;
mod sqlite;
mod statements;
mod store;
mod stored;
pub mod usage;

use std::fmt;
use std::path::Path;
use std::time::Duration;

pub use history::{
    Durations, HistoryGroup, HistoryPeriod, HistoryQuery, HistoryRow, KindCounts, SeverityCounts,
};
pub use stored::{FINDING_KINDS, MAX_DETAIL};
/// The records, as plain data in their own crate so that their readers
/// (`toolpin-notify`) need no database driver.
pub use toolpin_ledger_model::{
    backoff, Delivery, DeliveryState, Event, EventFilter, EventKind, FindingRecord, Notice,
    RecordOutcome, Recorded, Resolution, Severity, Sighting, LEASE, MAX_ATTEMPTS,
};

/// How long a write waits for another process's write to finish before the
/// ledger is reported locked.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// An error, as one line for people: the ledger's path, then what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// How a ledger is opened.
#[derive(Clone, Debug)]
pub struct Options {
    /// How long a write waits for another writer (default 5 s).
    pub busy_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
        }
    }
}

/// Where a ledger is: a SQLite file, or a PostgreSQL database by URL. The
/// configuration's type ([`toolpin_config::ledger::LedgerLocation`]), so
/// that one value goes from `[ledger]` (or `--store`) to the error
/// message; its `Display` and `Debug` hide the URL's password
/// (`postgres://toolpin:***@db/toolpin`).
pub use toolpin_config::ledger::LedgerLocation as Location;
pub use toolpin_manifest::SafeUrl;

/// The drift ledger.
pub struct Ledger {
    /// SQLite or PostgreSQL behind the same statements ([`store`]).
    store: store::Store,
}

impl Ledger {
    /// Opens (creating it if absent) the SQLite ledger at `path`, in WAL
    /// mode, with the default busy timeout, and migrates its schema.
    pub fn open(path: &Path) -> Result<Self, Error> {
        Self::open_with(path, &Options::default())
    }

    /// [`Ledger::open`] with options.
    pub fn open_with(path: &Path, options: &Options) -> Result<Self, Error> {
        Ok(Self {
            store: store::Store::open(path, options)?,
        })
    }

    /// Connects to the PostgreSQL ledger at `url` (`postgres://` or
    /// `postgresql://`, see docs/ledger.md: a host name, or a unix socket
    /// directory as `?host=/run/postgresql`) and migrates its schema. Lock
    /// waits are bounded by `options.busy_timeout`. No TLS: `sslmode` must
    /// be `disable` or `prefer`. Errors are one line and name the database
    /// by its URL with the password hidden.
    pub fn connect(url: &str, options: &Options) -> Result<Self, Error> {
        Self::connect_url(&SafeUrl::new(url), options)
    }

    /// [`Ledger::connect`] with the URL as the configuration holds it.
    pub fn connect_url(url: &SafeUrl, options: &Options) -> Result<Self, Error> {
        Ok(Self {
            store: store::Store::connect(url, options)?,
        })
    }

    /// Opens the ledger wherever `location` says: a SQLite file or a
    /// PostgreSQL database.
    pub fn open_location(location: &Location, options: &Options) -> Result<Self, Error> {
        match location {
            Location::Sqlite(path) => Self::open_with(path, options),
            Location::Postgres(url) => Self::connect_url(url, options),
        }
    }

    /// The schema version the store is at after opening.
    pub fn schema_version(&mut self) -> Result<i64, Error> {
        self.store.schema_version()
    }

    /// Records a sighting: a new event, or one more sighting of the open
    /// event with the same key. Enqueues no notification.
    pub fn record_drift(&mut self, sighting: &Sighting) -> Result<Recorded, Error> {
        self.record_and_enqueue(sighting, &[])
    }

    /// Records a sighting and, in the same transaction, enqueues a
    /// notification for each of `sinks`: a trigger for a new event, an
    /// escalation for one that got more severe, nothing for one seen before.
    /// Routing (which sinks an event goes to) is the caller's.
    pub fn record_and_enqueue(
        &mut self,
        sighting: &Sighting,
        sinks: &[&str],
    ) -> Result<Recorded, Error> {
        self.store.record(sighting, sinks)
    }

    /// Records many sightings in one transaction (a watch run's whole
    /// check), each with the sinks `route` gives it: all are recorded, with
    /// their notifications, or none. Far cheaper than one transaction each.
    pub fn record_batch<F>(
        &mut self,
        sightings: &[Sighting],
        route: F,
    ) -> Result<Vec<Recorded>, Error>
    where
        F: Fn(&Sighting) -> Vec<String>,
    {
        self.store.record_batch(sightings, &route)
    }

    /// Resolves the open events of a tool: with
    /// [`Resolution::Accepted`], those whose live fingerprint is the
    /// accepted one; with [`Resolution::Reverted`] (upstream is back at the
    /// pinned fingerprint), every open drift event of the tool. Only events
    /// of the kinds that can be resolved ([`EventKind::is_resolvable`]) are.
    /// For each sink that was sent a trigger for a resolved event, a resolve
    /// notification is enqueued in the same transaction. Returns the ids of
    /// the events resolved.
    pub fn resolve(
        &mut self,
        environment: &str,
        server: &str,
        tool: &str,
        resolution: &Resolution,
        at: i64,
    ) -> Result<Vec<i64>, Error> {
        let key = (environment, server, tool);
        let kinds = EventKind::resolved_by_fingerprint;
        self.store.resolve(key, kinds, resolution, at)
    }

    /// Resolves the open `contract-failed` events of a tool (a definition's
    /// acceptance or revert never does, see [`Ledger::resolve`]):
    /// [`Resolution::Reverted`] when a contract run saw the tool behave as
    /// recorded again (every open one), [`Resolution::Accepted`] when the
    /// behaviour was re-recorded (those whose live key is `live`). Resolve
    /// notices are enqueued as by [`Ledger::resolve`].
    pub fn resolve_contract(
        &mut self,
        environment: &str,
        server: &str,
        tool: &str,
        resolution: &Resolution,
        at: i64,
    ) -> Result<Vec<i64>, Error> {
        let key = (environment, server, tool);
        let kinds = |k: EventKind| k == EventKind::ContractFailed;
        self.store.resolve(key, kinds, resolution, at)
    }

    /// Records an approval of `live` for the tool pinned at `pinned` (an
    /// `approved` event) and resolves, as accepted, the open events whose
    /// live fingerprint it is, in one transaction. `vendor` is the server's
    /// vendor as the caller names it.
    #[allow(clippy::too_many_arguments)]
    pub fn record_approval(
        &mut self,
        environment: &str,
        server: &str,
        tool: &str,
        pinned: Option<&str>,
        live: &str,
        vendor: Option<&str>,
        at: i64,
    ) -> Result<(Recorded, Vec<i64>), Error> {
        let mut sighting = Sighting::new(EventKind::Approved, environment, server, tool, at)
            .fingerprints(pinned, Some(live));
        if let Some(vendor) = vendor {
            sighting = sighting.vendor(vendor);
        }
        self.store.record_approval(&sighting, live)
    }

    /// The open (unresolved) events of the resolvable kinds that match
    /// `filter`, oldest first.
    pub fn open_events(&mut self, filter: &EventFilter) -> Result<Vec<Event>, Error> {
        self.store.events(filter, true)
    }

    /// Every event that matches `filter`, resolved or not, of every kind,
    /// oldest first.
    pub fn events(&mut self, filter: &EventFilter) -> Result<Vec<Event>, Error> {
        self.store.events(filter, false)
    }

    /// One event by id.
    pub fn event(&mut self, id: i64) -> Result<Option<Event>, Error> {
        self.store.event(id)
    }

    /// Enqueues one notification; `false` when it was already enqueued
    /// (a retry never enqueues twice).
    pub fn enqueue(
        &mut self,
        sink: &str,
        event: i64,
        notice: Notice,
        at: i64,
    ) -> Result<bool, Error> {
        self.store.enqueue(sink, event, notice, at)
    }

    /// Takes up to `limit` pending deliveries due at `now`, oldest first,
    /// and leases them for [`LEASE`] seconds (another watcher does
    /// not take them meanwhile); each take counts as an attempt.
    pub fn take_due(&mut self, now: i64, limit: usize) -> Result<Vec<Delivery>, Error> {
        self.take_due_for(now, limit, None)
    }

    /// [`Ledger::take_due`], of the deliveries to `sinks` only (`None`:
    /// every sink): a watcher takes only what it can send, and leaves the
    /// rest to the watchers whose configuration names those sinks.
    pub fn take_due_for(
        &mut self,
        now: i64,
        limit: usize,
        sinks: Option<&[String]>,
    ) -> Result<Vec<Delivery>, Error> {
        self.store.take_due(now, limit, sinks)
    }

    /// The sinks (of `sinks`; `None`: any) that have a delivery due at
    /// `now`, by name: what a watcher sends to in this pass.
    pub fn due_sinks(&mut self, now: i64, sinks: Option<&[String]>) -> Result<Vec<String>, Error> {
        self.store.due_sinks(now, sinks)
    }

    /// Marks a delivery delivered.
    pub fn mark_delivered(&mut self, delivery: i64, at: i64) -> Result<(), Error> {
        self.store.mark_delivered(delivery, at)
    }

    /// Marks an attempt failed with `error` (one line, redacted by the
    /// caller): retried after a backoff that doubles with each attempt
    /// ([`backoff`]), or failed for good after
    /// [`MAX_ATTEMPTS`]. Returns the state it is left in.
    pub fn mark_failed(
        &mut self,
        delivery: i64,
        error: &str,
        at: i64,
    ) -> Result<DeliveryState, Error> {
        self.store.mark_failed(delivery, error, at, false)
    }

    /// Marks a delivery failed for good, whatever its attempts: the sink
    /// refused it in a way no retry changes (a revoked token, a malformed
    /// routing key), so it is not sent again.
    pub fn give_up(&mut self, delivery: i64, error: &str, at: i64) -> Result<(), Error> {
        self.store
            .mark_failed(delivery, error, at, true)
            .map(|_| ())
    }

    /// Records that a check saw each of `servers` in `environment` match
    /// its pins at `at` (the time an upstream change is known to be after).
    pub fn record_clean(
        &mut self,
        environment: &str,
        servers: &[&str],
        at: i64,
    ) -> Result<(), Error> {
        self.store.record_clean(environment, servers, at)
    }

    /// What `sink` calls `event` (a GitHub issue's number), if it said.
    pub fn sink_ref(&mut self, sink: &str, event: i64) -> Result<Option<String>, Error> {
        self.store.sink_ref(sink, event)
    }

    /// Keeps what `sink` calls `event`, replacing what was kept.
    pub fn set_sink_ref(&mut self, sink: &str, event: i64, reference: &str) -> Result<(), Error> {
        self.store.set_sink_ref(sink, event, reference)
    }

    /// `toolpin history`: the events that match `query`, counted per
    /// group and UTC period of their first sighting, ordered by key, server
    /// and period (see [`HistoryRow`] for what each count is).
    pub fn history(&mut self, query: &HistoryQuery) -> Result<Vec<HistoryRow>, Error> {
        self.store.history(query)
    }

    /// Inserts `events` as given (their ids ignored), in one transaction,
    /// without deduplication, resolution or notifications: for benchmarks
    /// and tests that need a large ledger quickly. Not for recording.
    #[doc(hidden)]
    pub fn insert_events_unchecked(&mut self, events: &[Event]) -> Result<(), Error> {
        self.store.insert_events(events)
    }

    /// Prepares every statement the ledger runs on this database without
    /// running any (each rendered for its dialect); how many. For the
    /// tests of the dialect fragments: an error names the statement the
    /// database does not read.
    #[doc(hidden)]
    pub fn prepare_every_statement(&mut self) -> Result<usize, Error> {
        self.store.prepare_every_statement()
    }

    /// Merges tool-usage aggregates into the store, in one transaction
    /// (see [`usage`]).
    pub fn usage_merge(
        &mut self,
        calls: &toolpin_usage::Aggregates,
    ) -> Result<usage::UsageWritten, Error> {
        self.store.usage_merge(calls)
    }

    /// The stored tool usage `filter` selects.
    pub fn usage_read(
        &mut self,
        filter: &usage::UsageFilter,
    ) -> Result<toolpin_usage::Aggregates, Error> {
        self.store.usage_read(filter)
    }

    /// Rolls hour rows before `hourly_before` into day rows, and deletes
    /// rows that end before `delete_before` (unix hours).
    pub fn usage_compact(
        &mut self,
        hourly_before: u64,
        delete_before: Option<u64>,
    ) -> Result<usage::Compacted, Error> {
        self.store.usage_compact(hourly_before, delete_before)
    }

    /// The first stored hour and the end of the last bucket, if any.
    pub fn usage_span(&mut self) -> Result<Option<(u64, u64)>, Error> {
        self.store.usage_span()
    }

    /// Every delivery of an event, in the order enqueued.
    pub fn deliveries(&mut self, event: i64) -> Result<Vec<Delivery>, Error> {
        self.store.deliveries(event)
    }
}
