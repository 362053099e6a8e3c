//! The usage store (issue 19): `toolpin usage`'s aggregates in the ledger
//! database (migration 4), one row per bucket and key. A write reads the
//! stored row, merges and writes it back inside one transaction that no
//! other writer of these tables can interleave with (SQLite's immediate
//! transaction; in PostgreSQL a SHARE ROW EXCLUSIVE lock on `usage_calls`),
//! so that two processes flushing at once never lose a count. A row that
//! does not decode fails the read or write with its key: never skipped.
//!
//! The statements are the store's ([`crate::statements`], `USAGE_*`),
//! the same for both backends.

use std::fmt;

use toolpin_usage::{Key, ToolStats};

/// Which stored calls to read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UsageFilter {
    /// Unix hours `[from_hour, until_hour)` (a rolled-up day counts by its
    /// first hour).
    pub from_hour: u64,
    pub until_hour: u64,
    pub environment: Option<String>,
}

/// What a write stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsageWritten {
    /// Keys written (new or merged into).
    pub keys: u64,
    /// Of them, keys that were already stored.
    pub merged: u64,
    pub event_counts: u64,
}

/// What a compaction did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Compacted {
    /// Hour rows rolled into day rows.
    pub hours_rolled: u64,
    /// Day rows written (new or merged into).
    pub days_written: u64,
    /// Rows deleted for being past retention (calls and event counts).
    pub deleted: u64,
}

impl fmt::Display for Compacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} hour row{} rolled into {} day row{}; {} row{} past retention deleted",
            self.hours_rolled,
            if self.hours_rolled == 1 { "" } else { "s" },
            self.days_written,
            if self.days_written == 1 { "" } else { "s" },
            self.deleted,
            if self.deleted == 1 { "" } else { "s" },
        )
    }
}

/// Hours in a rolled-up row.
pub(crate) const DAY: i64 = 24;

/// A stored hour as the database holds it (BIGINT).
pub(crate) fn hour_to_db(hour: u64) -> i64 {
    i64::try_from(hour).unwrap_or(i64::MAX)
}

/// A stored hour read back; a negative one is a damaged row.
pub(crate) fn hour_from_db(hour: i64) -> Result<u64, String> {
    u64::try_from(hour).map_err(|_| format!("hour {hour} is negative"))
}

/// A key as messages name it.
pub(crate) fn key_text(key: &Key) -> String {
    format!(
        "hour {} environment {:?} tenant {:?} agent {:?} catalog {:?} tool {:?}",
        key.hour, key.environment, key.tenant, key.agent, key.catalog, key.tool
    )
}

/// `stored` merged with `new`, encoded; the error names the key.
pub(crate) fn merged(
    stored: Option<&str>,
    new: &ToolStats,
    key: &Key,
    limits: &toolpin_usage::Limits,
) -> Result<String, String> {
    match stored {
        None => Ok(toolpin_usage::serial::encode(new)),
        Some(text) => {
            let mut stats = decode(text, key)?;
            stats.merge(new, limits);
            Ok(toolpin_usage::serial::encode(&stats))
        }
    }
}

/// A stored row's statistics; the error names the key.
pub(crate) fn decode(text: &str, key: &Key) -> Result<ToolStats, String> {
    toolpin_usage::serial::decode(text)
        .map_err(|e| format!("the usage row of {} cannot be read: {e}", key_text(key)))
}

/// The stored row of the key of `hour` and borrowed `parts` (see
/// [`decode`]) added to `out`; the error names the key.
pub(crate) fn add_row(
    out: &mut toolpin_usage::Aggregates,
    text: &str,
    hour: u64,
    parts: [&str; 5],
) -> Result<(), String> {
    out.add_encoded_at(hour, parts, text).map_err(|e| {
        let key = Key::new(hour, parts);
        format!("the usage row of {} cannot be read: {e}", key_text(&key))
    })
}

/// The day rows that the hour rows `rows` roll up into.
pub(crate) fn roll_up(
    rows: Vec<(Key, ToolStats)>,
    limits: &toolpin_usage::Limits,
) -> std::collections::BTreeMap<Key, ToolStats> {
    let mut days: std::collections::BTreeMap<Key, ToolStats> = std::collections::BTreeMap::new();
    for (mut key, stats) in rows {
        key.hour -= key.hour % DAY as u64;
        match days.get_mut(&key) {
            Some(day) => day.merge(&stats, limits),
            None => {
                days.insert(key, stats);
            }
        }
    }
    days
}
