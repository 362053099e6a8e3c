//! The operations layer (issue 33): the one crate that turns configuration
//! into capture, proxy, ledger and notify types, and what toolpin writes
//! down and who it tells (issue 18).
//!
//! Each command of the CLI is a thin wrapper around an operation here
//! (cargo's `ops` is the model): it resolves its settings once
//! ([`project::Project`]), calls the operation, and prints the typed
//! outcome it returns.
//!
//! - [`check`]: the check pipeline, once (`check`, `watch`, `accept`,
//!   `review`); [`approve`]: the decisions on its changes.
//! - [`capture`]: the configured servers captured, warnings printed.
//! - [`recorder`]: the ledger a command writes to on the side.
//! - [`record`]: a check's failing tools as ledger sightings (with the
//!   word diff, vendor, server versions and eval re-runs), the servers it
//!   saw clean, and the open events it shows resolved.
//! - [`deliver`]: the outbox handed to the notification sinks, each
//!   outcome recorded.
//! - [`history`]: `toolpin history`'s tables, JSON, CSV and Markdown.
//! - [`schedule`]: `toolpin watch --every`'s interval, jitter and signals.
//! - [`settings`]: the configuration (toolpin-config's plain data) read
//!   into capture, drift, proxy and usage types.
//! - [`usage`]: `toolpin usage`'s pinned catalogs and change lines.
//!
//! The ledger itself is `toolpin-ledger`; the sinks' payloads are
//! `toolpin-notify`; the command is `toolpin watch` in the CLI.

pub mod approve;
pub mod capture;
pub mod check;
pub mod contract;
pub mod deliver;
mod error;
pub mod evals;
pub mod history;
pub mod lock;
pub mod open;
pub mod project;
pub mod proxy;
pub mod record;
pub mod recorder;
pub mod schedule;
pub mod settings;
pub mod usage;
pub mod watch;
pub mod withdraw;

pub use error::Error;

/// Now, in unix seconds (the ledger is always handed its time).
pub fn now() -> i64 {
    toolpin_manifest::time::Timestamp::now().unix_seconds()
}
