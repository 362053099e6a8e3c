//! `toolpin accept`: pin reviewed changes and record why
//! (`toolpin_ops::approve`).

use std::path::PathBuf;

use toolpin_ops::approve::{acknowledge_seen_tools, Pending};

use super::{display, plural, Outcome};
use crate::approve;
use crate::cli::ConfigArgs;
use crate::error::CliError;

pub fn run(
    args: &ConfigArgs,
    selectors: &[approve::Selector],
    reason: &str,
    evidence: &[PathBuf],
    quiet: bool,
) -> Result<Outcome, CliError> {
    let reason = given_reason(reason, "the change is acceptable")?;
    let pending = Pending::capture(args.resolve()?, args.capture_options(quiet))?;
    let lockfile = pending.lockfile();
    if pending.changes.is_empty() {
        if !quiet {
            let shown = display(lockfile);
            eprintln!("ok: the catalog matches {shown}; nothing to accept");
        }
        return Ok(Outcome::Clean);
    }
    let done = pending.accept(selectors, reason, evidence, quiet)?;
    if !quiet {
        let left = pending.changes.len() - done.accepted.len();
        eprintln!(
            "Accepted {} ({}); {} is now {}, recorded in {}{}",
            plural(done.accepted.len(), "change"),
            toolpin_report::style::printable(&done.accepted.join(", "), false),
            display(lockfile),
            done.updated.fingerprint().release_line(),
            display(&approve::log_path(lockfile)),
            if left == 0 {
                String::new()
            } else {
                format!(
                    "; {} still differ{} from the pin",
                    plural(left, "change"),
                    if left == 1 { "s" } else { "" }
                )
            }
        );
    }
    Ok(Outcome::Clean)
}

/// `toolpin accept --seen-tool NAME`: the names go into the seen-tools file
/// beside the lockfile, each with a record in the approvals log.
pub fn seen_tools(
    args: &ConfigArgs,
    names: &[String],
    reason: &str,
    evidence: &[PathBuf],
    quiet: bool,
) -> Result<Outcome, CliError> {
    let reason = given_reason(reason, "the tool name is acceptable")?;
    if let Some(bad) = names
        .iter()
        .find(|n| n.trim().is_empty() || n.chars().any(char::is_control))
    {
        return Err(CliError::new(format!(
            "--seen-tool {bad:?} is not a tool name"
        )));
    }
    let lockfile = args.lockfile_path()?;
    let done = acknowledge_seen_tools(&lockfile, names, reason, evidence)?;
    if !quiet {
        let (path, printable) = (display(&done.path), toolpin_report::style::printable);
        if done.added.is_empty() {
            let names = names.join(", ");
            let names = printable(&names, false);
            eprintln!("ok: {path} already lists {names}; nothing recorded");
        } else {
            eprintln!(
                "Acknowledged {} ({}) in {path}, recorded in {}",
                plural(done.added.len(), "tool name"),
                printable(&done.added.join(", "), false),
                display(&approve::log_path(&lockfile)),
            );
        }
    }
    Ok(Outcome::Clean)
}

/// `--reason`, trimmed; it must say why `what`.
fn given_reason<'a>(reason: &'a str, what: &str) -> Result<&'a str, CliError> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(CliError::new(format!("--reason must say why {what}")));
    }
    Ok(reason)
}
