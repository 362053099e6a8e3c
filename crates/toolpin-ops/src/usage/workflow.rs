//! `toolpin usage ingest | report | compact` over the usage store: files
//! read into aggregates, a report over a window of hours against the
//! pinned catalogs, and the store's roll-up. The CLI prints what they
//! return.

use std::path::PathBuf;

use crate::settings::Config;
use toolpin_usage::report::UsageReport;
use toolpin_usage::{Aggregates, IngestReport, Input, Options, Timestamp};

use super::pinned::PinnedCatalogs;
use super::store::{open_store, Store};
use crate::Error;

/// Reads every file (its format told from its first line) into one set of
/// aggregates. A file that cannot be opened or is of no known format is an
/// error before anything is read.
pub fn read_files(
    files: &[PathBuf],
    options: &Options,
) -> Result<(Aggregates, IngestReport), Error> {
    let inputs = files
        .iter()
        .map(|path| toolpin_usage::detect::open(path).map_err(Error::new))
        .collect::<Result<Vec<Input<'static>>, _>>()?;
    Ok(toolpin_usage::ingest(inputs, options))
}

/// What a usage report is over.
pub struct ReportRequest<'a> {
    /// The configuration, when there is one.
    pub config: Option<&'a Config>,
    /// The lockfiles named (none: the configuration's).
    pub lockfiles: Vec<PathBuf>,
    /// How many committed versions of each lockfile to read as well.
    pub history: usize,
    /// `--store`.
    pub store: Option<&'a str>,
    /// Span files to read instead of the store.
    pub files: &'a [PathBuf],
    pub options: Options,
    /// The window: this many days up to now.
    pub days: u64,
    pub only_env: Option<&'a str>,
    pub now: Timestamp,
    /// Whether the committed lockfiles that could not be read go unsaid.
    pub quiet: bool,
}

/// A usage report and the pins it was judged by.
pub struct Reported {
    pub report: UsageReport,
    pub pinned: PinnedCatalogs,
    /// What reading the files found wrong (none when the store was read).
    pub ingest: Option<IngestReport>,
}

/// The report over `request`'s window: the pins are read first (a missing
/// lockfile is an error before any reading), then the store or the files.
pub fn report(request: ReportRequest) -> Result<Reported, Error> {
    let pinned =
        PinnedCatalogs::from_lockfiles(&request.lockfiles, request.history).map_err(Error::new)?;
    if !request.quiet {
        for unreadable in &pinned.unreadable {
            eprintln!("note: a committed lockfile was skipped: {unreadable}");
        }
    }
    let until_hour = request.now.unix_hour() + 1;
    let from_hour = until_hour.saturating_sub(request.days * 24);
    let (aggregates, ingest) = if request.files.is_empty() {
        let mut store = open_store(request.store, request.config, true)?;
        let stored = read_store(&mut store, from_hour, until_hour, request.only_env)?;
        (stored, None)
    } else {
        let (aggregates, ingest) = read_files(request.files, &request.options)?;
        let within = aggregates.within(from_hour, until_hour, request.only_env);
        (within, Some(ingest))
    };
    let thresholds = request
        .config
        .map(|c| c.usage_report.clone())
        .unwrap_or_default();
    let mut report =
        toolpin_usage::report::report(&aggregates, &pinned.for_report(), &thresholds, until_hour);
    report.describe_changes(|from, to| pinned.describe(from, to));
    Ok(Reported {
        report,
        pinned,
        ingest,
    })
}

/// The stored calls of hours `[from_hour, until_hour)`.
fn read_store(
    store: &mut Store,
    from_hour: u64,
    until_hour: u64,
    environment: Option<&str>,
) -> Result<Aggregates, Error> {
    let filter = toolpin_ledger::usage::UsageFilter {
        from_hour,
        until_hour,
        environment: environment.map(str::to_string),
    };
    store.ledger.usage_read(&filter).map_err(|e| store.err(e))
}

/// Rolls the store's hourly rows older than `hourly_days` up into days and
/// deletes what is older than `retain_days`; what it did, in one line.
pub fn compact(
    store: &mut Store,
    now: Timestamp,
    hourly_days: u64,
    retain_days: Option<u64>,
) -> Result<String, Error> {
    let now_hour = now.unix_hour();
    let hourly_before = now_hour.saturating_sub(hourly_days * 24);
    let delete_before = retain_days.map(|d| now_hour.saturating_sub(d * 24));
    let done = store
        .ledger
        .usage_compact(hourly_before, delete_before)
        .map_err(|e| store.err(e))?;
    Ok(done.to_string())
}
