//! `toolpin usage ingest | serve | report | compact`. Reading spans and
//! the change-point tests are `toolpin-usage`'s, the receiver
//! `toolpin-otlp`'s, the store `toolpin-ledger`'s, and the pinned catalogs,
//! alarm recording and the flush loop `toolpin-ops`'s; this reads the
//! arguments and the configuration, and prints.

use std::path::{Path, PathBuf};

use toolpin_manifest::text::plural_of;
use toolpin_ops::project::Project;
use toolpin_ops::usage::record::record_alarms;
use toolpin_ops::usage::store::open_store;
use toolpin_ops::usage::ReportRequest;
use toolpin_usage::{IngestReport, Options, Timestamp};

use super::{display, print, Outcome};
use crate::cli::{UsageCommand, UsageCompactArgs, UsageIngestArgs, UsageReadArgs, UsageReportArgs};
use crate::error::CliError;

mod serve;

pub fn run(command: &UsageCommand, quiet: bool) -> Result<Outcome, CliError> {
    match command {
        UsageCommand::Ingest(args) => ingest(args, quiet),
        UsageCommand::Serve(args) => serve::run(args, quiet),
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
            "usage: stored {} under {} in {}",
            plural_of(aggregates.total_calls(), "call", "calls"),
            plural_of(aggregates.len() as u64, "key", "keys"),
            store.shown
        );
    }
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
