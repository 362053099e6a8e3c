//! `toolpin contract init` and `toolpin contract check`: the CLI side of
//! `toolpin-contract`, which owns the file, the derivation and the checks.

use super::{lockfile_path, plural, print, Outcome};
use crate::cli::{ConfigArgs, ContractCommand};
use crate::error::CliError;

pub fn run(command: &ContractCommand, quiet: bool) -> Result<Outcome, CliError> {
    match command {
        ContractCommand::Init { force, config } => init(config, *force, quiet),
        ContractCommand::Check { config } => check(config, quiet),
    }
}

fn init(config: &ConfigArgs, force: bool, quiet: bool) -> Result<Outcome, CliError> {
    let lockfile = lockfile_path(config)?;
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
    let lockfile = lockfile_path(config)?;
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
