//! `toolpin usage ingest | serve | report | compact`. Reading spans and
//! the change-point tests are `toolpin-usage`'s, the receiver
//! `toolpin-otlp`'s, the store `toolpin-ledger`'s, and the pinned catalogs,
//! alarm recording and the flush loop `toolpin-ops`'s; this reads the
//! arguments and the configuration, and prints.

use std::path::{Path, PathBuf};

use toolpin_config::ledger::LedgerLocation;
use toolpin_ledger::Ledger;
use toolpin_usage::{Aggregates, IngestReport, Input, Options};

use super::{display, print, Outcome};
use crate::cli::{
    UsageCommand, UsageCompactArgs, UsageIngestArgs, UsageReadArgs, UsageReportArgs,
    UsageReportFormat, UsageServeArgs, UsageStoreArgs,
};
use crate::config;
use crate::error::CliError;

/// Nanoseconds in an hour: the store's keys are unix hours.
const HOUR_NANOS: u64 = 3_600_000_000_000;

/// The store's file beside the configuration when the ledger is off.
const STORE_FILE: &str = "toolpin.usage.db";

pub fn run(command: &UsageCommand, quiet: bool) -> Result<Outcome, CliError> {
    match command {
        UsageCommand::Ingest(args) => ingest(args, quiet),
        UsageCommand::Serve(args) => serve(args, quiet),
        UsageCommand::Report(args) => report(args, quiet),
        UsageCommand::Compact(args) => compact(args, quiet),
    }
}

fn now_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn options(read: &UsageReadArgs) -> Options {
    Options {
        tenant_key: read.tenant_key.clone(),
        environment: read.environment.clone(),
        ..Options::default()
    }
}

/// Reads every file (its format told from its first line) into one set of
/// aggregates. A file that cannot be opened or is of no known format is an
/// error before anything is read.
fn read_files(
    files: &[PathBuf],
    options: &Options,
) -> Result<(Aggregates, IngestReport), CliError> {
    let inputs = files
        .iter()
        .map(|path| toolpin_usage::detect::open(path).map_err(CliError::new))
        .collect::<Result<Vec<Input<'static>>, _>>()?;
    Ok(toolpin_usage::ingest(inputs, options))
}

/// Prints what reading found wrong (always: a dropped span is news) and,
/// unless quiet, what was read.
fn print_ingest_report(report: &IngestReport, quiet: bool) {
    let problems: u64 = report.problems.values().map(|o| o.count).sum();
    if problems > 0 || !quiet {
        eprint!("{report}");
    }
}

/// The usage store, opened.
struct Store {
    ledger: Ledger,
    shown: String,
    secrets: Vec<(String, String)>,
}

impl Store {
    fn err(&self, e: toolpin_ledger::Error) -> CliError {
        CliError::new(format!(
            "usage store {}: {}",
            self.shown,
            toolpin_manifest::Redactor::new(&self.secrets).redact(&e.to_string())
        ))
    }
}

/// Where the store is: `--store`, else the ledger, else a file beside the
/// configuration. `must_exist`: a SQLite file that is not there is an
/// error (reading it would create an empty store and hide a wrong path).
fn open_store(
    args: &UsageStoreArgs,
    cfg: Option<&config::Config>,
    must_exist: bool,
) -> Result<Store, CliError> {
    let (location, shown, secrets) = match (&args.store, cfg) {
        (Some(s), _) => match LedgerLocation::parse(s) {
            LedgerLocation::Postgres(url) => (
                LedgerLocation::Postgres(url),
                "(the --store URL)".to_string(),
                Vec::new(),
            ),
            sqlite => (sqlite, s.clone(), Vec::new()),
        },
        (None, Some(cfg)) => match &cfg.ledger.location {
            Some(location) => (
                location.clone(),
                cfg.ledger.shown.clone(),
                cfg.ledger.secrets.clone(),
            ),
            None => {
                let path = cfg.path.parent().unwrap_or(Path::new("")).join(STORE_FILE);
                (
                    LedgerLocation::Sqlite(path.clone()),
                    display(&path),
                    Vec::new(),
                )
            }
        },
        (None, None) => (
            LedgerLocation::Sqlite(PathBuf::from(STORE_FILE)),
            STORE_FILE.to_string(),
            Vec::new(),
        ),
    };
    if must_exist {
        if let LedgerLocation::Sqlite(path) = &location {
            if !path.exists() {
                return Err(CliError::new(format!(
                    "{}: no usage store here; `toolpin usage ingest` or `toolpin usage serve` writes it (or pass --store)",
                    display(path)
                )));
            }
        }
    }
    // The embedded default ledger lives in toolpin's state directory.
    let in_state_dir = args.store.is_none() && cfg.is_some_and(|c| c.ledger.in_state_dir());
    let ledger = toolpin_ops::open::open_location(&location, in_state_dir, &secrets).map_err(
        |e| match e {
            toolpin_ops::open::OpenError::StateDir { dir, error } => {
                CliError::new(format!("cannot create {}: {error}", display(&dir)))
            }
            toolpin_ops::open::OpenError::Ledger(line) => {
                CliError::new(format!("usage store {shown}: {line}"))
            }
        },
    )?;
    Ok(Store {
        ledger,
        shown,
        secrets,
    })
}

/// The configuration, when there is one: `usage` works without
/// toolpin.toml when it is not there (a one-off report over files in CI),
/// but a configuration that is there must be valid.
fn optional_config(path: &Path) -> Result<Option<config::Config>, CliError> {
    if !path.exists() {
        return Ok(None);
    }
    config::load(path, None).map(Some).map_err(CliError::from)
}

fn ingest(args: &UsageIngestArgs, quiet: bool) -> Result<Outcome, CliError> {
    let cfg = optional_config(&args.store.config)?;
    // Every file is read before the store is opened: a bad path or an
    // unknown format stores nothing.
    let (aggregates, report) = read_files(&args.files, &options(&args.read))?;
    print_ingest_report(&report, quiet);
    let mut store = open_store(&args.store, cfg.as_ref(), false)?;
    store
        .ledger
        .usage_merge(&aggregates)
        .map_err(|e| store.err(e))?;
    if !quiet {
        eprintln!(
            "usage: stored {} call{} under {} key{} in {}",
            aggregates.total_calls(),
            if aggregates.total_calls() == 1 {
                ""
            } else {
                "s"
            },
            aggregates.len(),
            if aggregates.len() == 1 { "" } else { "s" },
            store.shown
        );
    }
    Ok(Outcome::Clean)
}

fn serve(args: &UsageServeArgs, quiet: bool) -> Result<Outcome, CliError> {
    use toolpin_ops::usage::serve::{serve_until_stopped, ServeEvents, ServeSettings};

    struct Printer {
        quiet: bool,
        shown: String,
        max_names: usize,
    }
    fn plural(n: u64, one: &str, many: &str) -> String {
        format!("{n} {}", if n == 1 { one } else { many })
    }
    impl ServeEvents for Printer {
        fn listening(&self, addr: std::net::SocketAddr) {
            // Always printed: with port 0 it is how the caller learns it.
            eprintln!(
                "usage serve: listening on http://{addr} (POST /v1/traces), storing in {}",
                self.shown
            );
        }
        fn stored(&self, calls: u64, keys: usize, folded: &[u64; 5]) {
            if !self.quiet {
                eprintln!(
                    "usage serve: stored {} under {}",
                    plural(calls, "call", "calls"),
                    plural(keys as u64, "key", "keys")
                );
            }
            // Always printed: calls under "(other)" are news.
            let parts: Vec<String> = toolpin_usage::KEY_PARTS
                .iter()
                .zip(folded)
                .filter(|(_, n)| **n > 0)
                .map(|(part, n)| format!("{part} {n}"))
                .collect();
            if !parts.is_empty() {
                eprintln!(
                    "warning: usage serve: calls naming more than {} distinct values of a key part since the last flush were counted under {:?} ({}); raise --max-names if these are real",
                    self.max_names,
                    toolpin_usage::OTHER,
                    parts.join(", ")
                );
            }
        }
        fn store_failed(&self, error: &str, buffered: usize, held: usize) {
            eprintln!(
                "warning: usage serve: {error}; {buffered} keys ({} MiB) kept for the next flush",
                held >> 20
            );
        }
        fn bad_input(&self, report: &IngestReport) {
            eprint!("{report}");
        }
        fn refused(&self, n: &toolpin_ops::usage::serve::Notices) {
            let mut what = Vec::new();
            if n.busy > 0 {
                what.push(format!(
                    "{} answered 503 (the buffer was full: see --max-buffer)",
                    plural(n.busy, "export", "exports")
                ));
            }
            if n.too_large > 0 {
                what.push(format!(
                    "{} answered 413 (see --max-body)",
                    plural(n.too_large, "export", "exports")
                ));
            }
            if n.body_timeouts > 0 {
                what.push(format!(
                    "{} not received within --body-timeout (408)",
                    plural(n.body_timeouts, "body", "bodies")
                ));
            }
            if !n.closed.is_empty() {
                let closed: Vec<String> = n
                    .closed
                    .iter()
                    .map(|(why, k)| format!("{} {k}", why.name()))
                    .collect();
                what.push(format!("connections closed: {}", closed.join(", ")));
            }
            if n.accept_failures > 0 {
                what.push(format!(
                    "{} failed ({}); retried with a pause",
                    plural(n.accept_failures, "accept", "accepts"),
                    n.accept_error.as_deref().unwrap_or("")
                ));
            }
            if !what.is_empty() {
                eprintln!("warning: usage serve: {}", what.join("; "));
            }
        }
    }

    let cfg = optional_config(&args.store.config)?;
    let mut store = open_store(&args.store, cfg.as_ref(), false)?;
    let mut settings = ServeSettings::new(&args.listen, args.flush_every, options(&args.read));
    // The flags given override the receiver's defaults.
    let receiver = &mut settings.receiver;
    let set = |slot: &mut usize, flag: Option<usize>| *slot = flag.unwrap_or(*slot);
    set(&mut receiver.max_body_bytes, args.max_body);
    set(&mut receiver.max_buffer_bytes, args.max_buffer);
    set(&mut receiver.max_names, args.max_names);
    set(&mut receiver.max_connections, args.max_connections);
    receiver.body_timeout = args.body_timeout.unwrap_or(receiver.body_timeout);
    receiver.connection_idle = args.connection_idle.unwrap_or(receiver.connection_idle);
    let printer = Printer {
        quiet,
        shown: store.shown.clone(),
        max_names: receiver.max_names,
    };
    let mut write = |aggregates: &Aggregates| -> Result<(), String> {
        store
            .ledger
            .usage_merge(aggregates)
            .map(|_| ())
            .map_err(|e| store.err(e).to_string())
    };
    serve_until_stopped(&settings, &mut write, &printer).map_err(CliError::new)?;
    Ok(Outcome::Clean)
}

fn report(args: &UsageReportArgs, quiet: bool) -> Result<Outcome, CliError> {
    let cfg = optional_config(&args.store.config)?;
    let thresholds = cfg
        .as_ref()
        .map(|c| c.usage_report.clone())
        .unwrap_or_default();
    let lockfiles: Vec<PathBuf> = if !args.lockfiles.is_empty() {
        args.lockfiles.clone()
    } else if let Some(cfg) = &cfg {
        vec![cfg.default_lockfile()]
    } else {
        return Err(CliError::new(format!(
            "{} not found: name the pinned catalogs with --lockfile PATH (or pass --config)",
            display(&args.store.config)
        )));
    };
    // The pins first: a missing lockfile is an error before any reading.
    let pinned =
        toolpin_ops::usage::pinned::PinnedCatalogs::from_lockfiles(&lockfiles, args.history)
            .map_err(CliError::new)?;
    for unreadable in &pinned.unreadable {
        if !quiet {
            eprintln!("note: a committed lockfile was skipped: {unreadable}");
        }
    }
    let now = now_nanos();
    let until_hour = now / HOUR_NANOS + 1;
    let from_hour = until_hour.saturating_sub(args.days * 24);
    let aggregates = if args.files.is_empty() {
        let mut store = open_store(&args.store, cfg.as_ref(), true)?;
        read_store(&mut store, from_hour, until_hour, args.only_env.as_deref())?
    } else {
        let (aggregates, ingest_report) = read_files(&args.files, &options(&args.read))?;
        print_ingest_report(&ingest_report, true);
        aggregates.within(from_hour, until_hour, args.only_env.as_deref())
    };
    let mut report =
        toolpin_usage::report::report(&aggregates, &pinned.for_report(), &thresholds, until_hour);
    report.describe_changes(|from, to| pinned.describe(from, to));
    let out = match args.format {
        UsageReportFormat::Text => toolpin_usage::report::render_text(&report),
        UsageReportFormat::Json => toolpin_usage::report::render_json(&report),
        UsageReportFormat::Markdown => toolpin_usage::report::render_markdown(&report),
    };
    match &args.output {
        Some(path) => toolpin_manifest::fs::write_atomic(path, out.as_bytes())
            .map_err(|e| CliError::new(format!("cannot write {}: {e}", display(path))))?,
        None => print(&out)?,
    }
    if !args.no_record && !report.alarms.is_empty() {
        if let Some(cfg) = &cfg {
            record_alarms(cfg, &pinned, &report, quiet)?;
        }
    }
    Ok(if report.alarms.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Drift
    })
}

fn compact(args: &UsageCompactArgs, quiet: bool) -> Result<Outcome, CliError> {
    let cfg = optional_config(&args.store.config)?;
    let mut store = open_store(&args.store, cfg.as_ref(), true)?;
    let now_hour = now_nanos() / HOUR_NANOS;
    let hourly_before = now_hour.saturating_sub(args.hourly_days * 24);
    let delete_before = args.retain_days.map(|d| now_hour.saturating_sub(d * 24));
    let done = store
        .ledger
        .usage_compact(hourly_before, delete_before)
        .map_err(|e| store.err(e))?;
    if !quiet {
        eprintln!("usage: {done}");
    }
    Ok(Outcome::Clean)
}

/// The stored calls of hours `[from_hour, until_hour)`.
fn read_store(
    store: &mut Store,
    from_hour: u64,
    until_hour: u64,
    environment: Option<&str>,
) -> Result<Aggregates, CliError> {
    let filter = toolpin_ledger::usage::UsageFilter {
        from_hour,
        until_hour,
        environment: environment.map(str::to_string),
    };
    store.ledger.usage_read(&filter).map_err(|e| store.err(e))
}

/// Records the alarms as `usage-shift` events in the ledger, each routed
/// to the `[notify.NAME]` sinks that admit it: their notifications are
/// enqueued with them, and `toolpin watch` delivers them (a report never
/// waits on a sink, nor sends what other commands enqueued). An alarm seen
/// before is one more sighting, and enqueues nothing.
fn record_alarms(
    cfg: &config::Config,
    pinned: &toolpin_ops::usage::pinned::PinnedCatalogs,
    report: &toolpin_usage::report::UsageReport,
    quiet: bool,
) -> Result<(), CliError> {
    let at = toolpin_ops::now();
    let sightings = toolpin_ops::usage::record::sightings(report, pinned, at);
    let mut recorder = super::ledger::Recorder::open(cfg, quiet)?;
    let route = toolpin_ops::deliver::route(&cfg.notify);
    let recorded = recorder.write(|ledger| ledger.record_batch(&sightings, &route))?;
    let Some(recorded) = recorded else {
        return Ok(());
    };
    if !quiet {
        let new = recorded
            .iter()
            .filter(|r| r.outcome == toolpin_ledger::RecordOutcome::New)
            .count();
        eprintln!(
            "usage: {} usage-shift event{} in the ledger ({new} new)",
            recorded.len(),
            if recorded.len() == 1 { "" } else { "s" }
        );
    }
    Ok(())
}
