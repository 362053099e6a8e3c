//! `toolpin contract init`, `check`, `record` and `run`: the CLI side of
//! `toolpin-contract`, which owns the file, the derivation, the checks and
//! the behaviour snapshot; the calls are made by `toolpin_ops::contract`.

use toolpin_ops::contract;
use toolpin_ops::recorder::Recorder;
use toolpin_report::text::Sides;
use toolpin_report::Style;

use super::report_target::{check_targets, render, Judged};
use super::{plural, print, repository_path, Outcome};
use crate::cli::{ConfigArgs, ContractCommand, ReportArgs};
use crate::error::CliError;

pub fn run(command: &ContractCommand, quiet: bool, style: Style) -> Result<Outcome, CliError> {
    match command {
        ContractCommand::Init { force, config } => init(config, *force, quiet),
        ContractCommand::Check { config } => check(config, quiet),
        ContractCommand::Record { config } => record(config, quiet),
        ContractCommand::Run { config, report } => run_calls(config, report, quiet, style),
    }
}

fn init(config: &ConfigArgs, force: bool, quiet: bool) -> Result<Outcome, CliError> {
    let lockfile = config.lockfile_path()?;
    let catalog = super::read_lockfile(&lockfile)?;
    let path = toolpin_contract::path_for(&lockfile);
    let name = lockfile
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| lockfile.display().to_string());
    let starter = toolpin_contract::init(&catalog, &name);
    toolpin_contract::write(&path, &starter.text, force)?;
    if !quiet {
        let mut line = format!(
            "Wrote {}: {} for read-only tools ({}, {})",
            path.display(),
            plural(starter.active, "contract"),
            plural(starter.calls, "call"),
            plural(starter.probes, "default probe"),
        );
        if starter.commented > 0 {
            line += &format!(
                "; {} not read-only left commented out",
                plural(starter.commented, "tool")
            );
        }
        if starter.placeholders > 0 {
            line += &format!(
                "; fill in {}",
                plural(starter.placeholders, "placeholder argument")
            );
        }
        eprintln!("{line}");
    }
    Ok(Outcome::Clean)
}

fn check(config: &ConfigArgs, quiet: bool) -> Result<Outcome, CliError> {
    let lockfile = config.lockfile_path()?;
    let catalog = super::read_lockfile(&lockfile)?;
    let path = toolpin_contract::path_for(&lockfile);
    let (_, summary) = toolpin_contract::check(&path, &catalog, &lockfile.display().to_string())?;
    if !quiet {
        let mut line = format!(
            "{}: ok ({}, {}, {})",
            path.display(),
            plural(summary.contracts, "contract"),
            plural(summary.calls, "call"),
            plural(summary.probes, "default probe"),
        );
        if !summary.placeholders.is_empty() {
            const SHOWN: usize = 5;
            let mut first = summary
                .placeholders
                .iter()
                .take(SHOWN)
                .map(|(tool, arg)| format!("{tool} `{arg}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if summary.placeholders.len() > SHOWN {
                first += &format!(", and {} more", summary.placeholders.len() - SHOWN);
            }
            line += &format!(
                "; {} to fill in before the calls are made: {first}",
                plural(summary.placeholders.len(), "placeholder argument")
            );
        }
        print(&(line + "\n"))?;
    }
    Ok(Outcome::Clean)
}

fn record(config: &ConfigArgs, quiet: bool) -> Result<Outcome, CliError> {
    let loaded = contract::Loaded::load(config.resolve()?)?;
    let path = loaded.snapshot_path();
    let (snapshot, notes) = match contract::record(&loaded, quiet)? {
        contract::Recording::Written { snapshot, notes } => (snapshot, notes),
        contract::Recording::Refused(refused) => {
            if !quiet {
                eprintln!(
                    "{} not called; {} not written: accept or re-pin the change (`toolpin check` shows it), review the contract, then record again",
                    plural(refused, "tool"),
                    path.display()
                );
            }
            return Ok(Outcome::Drift);
        }
    };
    if !quiet {
        for note in &notes {
            eprintln!("note: default probe {note}; recorded as not holding");
        }
        for (key, observation) in &snapshot.calls {
            for (bound, what) in &observation.bounded {
                eprintln!("note: {key}: the {bound} bound was hit: {what} (docs/contracts.md, \"Bounds\")");
            }
        }
        let mut line = format!(
            "Wrote {}: {}",
            path.display(),
            plural(snapshot.calls.len(), "call")
        );
        if !snapshot.probes.is_empty() {
            line += &format!(", {}", plural(snapshot.probes.len(), "default probe"));
        }
        eprintln!("{line}");
    }
    Ok(Outcome::Clean)
}

/// `toolpin contract run`: the calls judged against the snapshot
/// (`toolpin_ops::contract::run`), reported like a check, and recorded.
fn run_calls(
    config: &ConfigArgs,
    args: &ReportArgs,
    quiet: bool,
    style: Style,
) -> Result<Outcome, CliError> {
    check_targets(args)?;
    let loaded = contract::Loaded::load(config.resolve()?)?;
    let ran = contract::run(&loaded)?;
    if !quiet {
        let path = loaded.snapshot_path();
        for key in &ran.unrecorded {
            let shown = path.display();
            eprintln!("note: {key} is not in {shown}; run `toolpin contract record`");
        }
    }
    if let Some(judged) = &ran.judged {
        let project = &loaded.project;
        // Opened first: a required ledger that cannot be written is an
        // error before any report is printed.
        let mut recorder = Recorder::open(&project.config, quiet)?;
        let context = toolpin_report::context::Context::new(
            repository_path(&project.lockfile),
            std::fs::read_to_string(&project.lockfile).ok(),
        );
        let report = Judged {
            sides: Sides::SnapshotAndLive,
            comparison: &judged.comparison,
            verdict: &judged.verdict,
            plan: &judged.plan,
            evals: &project.config.evals,
            context: &context,
        };
        render(&report, args, style)?;
        ran.record(&loaded, &mut recorder)?;
    }
    contract::unavailable(&ran.unavailable)?;
    Ok(if ran.fails() {
        Outcome::Drift
    } else {
        Outcome::Clean
    })
}
