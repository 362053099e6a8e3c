//! The operations layer (issue 33): the one crate that turns configuration
//! into capture, proxy, ledger and notify types, and what toolpin writes
//! down and who it tells (issue 18).
//!
//! - [`record`]: a check's failing tools as ledger sightings (with the
//!   word diff, vendor, server versions and eval re-runs), the servers it
//!   saw clean, and the open events it shows resolved.
//! - [`deliver`]: the outbox handed to the notification sinks, each
//!   outcome recorded.
//! - [`history`]: `toolpin history`'s tables, JSON, CSV and Markdown.
//! - [`schedule`]: `toolpin watch --every`'s interval, jitter and signals.
//! - [`usage`]: `toolpin usage`'s pinned catalogs and change lines.
//!
//! The ledger itself is `toolpin-ledger`; the sinks' payloads are
//! `toolpin-notify`; the command is `toolpin watch` in the CLI.

pub mod contract;
pub mod deliver;
pub mod history;
pub mod open;
pub mod proxy;
pub mod record;
pub mod schedule;
pub mod usage;

/// Now, in unix seconds (the ledger is always handed its time).
pub fn now() -> i64 {
    toolpin_manifest::time::Timestamp::now().unix_seconds()
}
