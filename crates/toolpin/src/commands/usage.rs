//! `toolpin usage ingest | serve | report | compact`. Reading spans and
//! the change-point tests are `toolpin-usage`'s, the receiver
//! `toolpin-otlp`'s, the store `toolpin-ledger`'s, and the pinned catalogs,
//! alarm recording and the flush loop `toolpin-ops`'s; this reads the
//! arguments and the configuration, and prints.

use std::path::{Path, PathBuf};

use toolpin_manifest::text::plural_of;
use toolpin_ops::project::Project;
use toolpin_ops::usage::record::record_alarms;
use toolpin_ops::usage::serve::{serve_until_stopped, ServeEvents, ServeSettings};
use toolpin_ops::usage::store::open_store;
use toolpin_ops::usage::ReportRequest;
use toolpin_usage::{Aggregates, IngestReport, Options, Timestamp};

use super::{display, print, Outcome};
use crate::cli::{
    UsageCommand, UsageCompactArgs, UsageIngestArgs, UsageReadArgs, UsageReportArgs, UsageServeArgs,
};
use crate::error::CliError;

pub fn run(command: &UsageCommand, quiet: bool) -> Result<Outcome, CliError> {
    match command {
        UsageCommand::Ingest(args) => ingest(args, quiet),
        UsageCommand::Serve(args) => serve(args, quiet),
        UsageCommand::Report(args) => report(args, quiet),
        UsageCommand::Compact(args) => compact(args, quiet),
    }
}

fn options(read: &UsageReadArgs) -> Options {
    Options {
        tenant_key: read.tenant_key.clone(),
        environment: read.environment.clone(),
        ..Options::default()
    }
}

/// Prints what reading found wrong (always: a dropped span is news) and,
/// unless quiet, what was read.
fn print_ingest_report(report: &IngestReport, quiet: bool) {
    let problems: u64 = report.problems.values().map(|o| o.count).sum();
    if problems > 0 || !quiet {
        eprint!("{report}");
    }
}

/// The configuration, when there is one: `usage` works without
/// toolpin.toml when it is not there (a one-off report over files in CI),
/// but a configuration that is there must be valid.
fn optional_config(path: &Path) -> Result<Option<Project>, CliError> {
    if !path.exists() {
        return Ok(None);
    }
    Ok(Some(Project::load(path, None, None)?))
}

fn ingest(args: &UsageIngestArgs, quiet: bool) -> Result<Outcome, CliError> {
    let project = optional_config(&args.store.config)?;
    let cfg = project.as_ref().map(|p| &p.config);
    // Every file is read before the store is opened: a bad path or an
    // unknown format stores nothing.
    let (aggregates, report) = toolpin_ops::usage::read_files(&args.files, &options(&args.read))?;
    print_ingest_report(&report, quiet);
    let mut store = open_store(args.store.store.as_deref(), cfg, false)?;
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

/// What `usage serve` says on stderr as it runs.
struct Printer {
    quiet: bool,
    shown: String,
    max_names: usize,
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
                plural_of(calls, "call", "calls"),
                plural_of(keys as u64, "key", "keys")
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
                plural_of(n.busy, "export", "exports")
            ));
        }
        if n.too_large > 0 {
            what.push(format!(
                "{} answered 413 (see --max-body)",
                plural_of(n.too_large, "export", "exports")
            ));
        }
        if n.body_timeouts > 0 {
            what.push(format!(
                "{} not received within --body-timeout (408)",
                plural_of(n.body_timeouts, "body", "bodies")
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
                plural_of(n.accept_failures, "accept", "accepts"),
                n.accept_error.as_deref().unwrap_or("")
            ));
        }
        if !what.is_empty() {
            eprintln!("warning: usage serve: {}", what.join("; "));
        }
    }
}

/// `toolpin usage serve`: the OTLP receiver (`toolpin_ops::usage::serve`)
/// flushing into the store until stopped.
fn serve(args: &UsageServeArgs, quiet: bool) -> Result<Outcome, CliError> {
    let project = optional_config(&args.store.config)?;
    let cfg = project.as_ref().map(|p| &p.config);
    let mut store = open_store(args.store.store.as_deref(), cfg, false)?;
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
    let project = optional_config(&args.store.config)?;
    let lockfiles: Vec<PathBuf> = if !args.lockfiles.is_empty() {
        args.lockfiles.clone()
    } else if let Some(project) = &project {
        vec![project.lockfile.clone()]
    } else {
        return Err(CliError::new(format!(
            "{} not found: name the pinned catalogs with --lockfile PATH (or pass --config)",
            display(&args.store.config)
        )));
    };
    let cfg = project.as_ref().map(|p| &p.config);
    let reported = toolpin_ops::usage::report(ReportRequest {
        config: cfg,
        lockfiles,
        history: args.history,
        store: args.store.store.as_deref(),
        files: &args.files,
        options: options(&args.read),
        days: args.days,
        only_env: args.only_env.as_deref(),
        now: Timestamp::now(),
        quiet,
    })?;
    if let Some(ingest) = &reported.ingest {
        print_ingest_report(ingest, true);
    }
    let report = &reported.report;
    // The flag only takes the usage report's formats.
    let out = toolpin_ops::usage::render::render(report, args.format).unwrap_or_default();
    match &args.output {
        Some(path) => toolpin_manifest::fs::write_atomic(path, out.as_bytes())
            .map_err(|e| CliError::new(format!("cannot write {}: {e}", display(path))))?,
        None => print(&out)?,
    }
    if !args.no_record && !report.alarms.is_empty() {
        if let Some(cfg) = cfg {
            record_alarms(cfg, &reported.pinned, report, quiet)?;
        }
    }
    Ok(if report.alarms.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Drift
    })
}

fn compact(args: &UsageCompactArgs, quiet: bool) -> Result<Outcome, CliError> {
    let project = optional_config(&args.store.config)?;
    let cfg = project.as_ref().map(|p| &p.config);
    let mut store = open_store(args.store.store.as_deref(), cfg, true)?;
    let done = toolpin_ops::usage::compact(
        &mut store,
        Timestamp::now(),
        args.hourly_days,
        args.retain_days,
    )?;
    if !quiet {
        eprintln!("usage: {done}");
    }
    Ok(Outcome::Clean)
}
