//! `toolpin accept`: pin reviewed changes and record why.

use std::path::PathBuf;

use serde_json::Value;

use super::pending::Pending;
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
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(CliError::new(
            "--reason must say why the change is acceptable",
        ));
    }
    let pending = Pending::capture(args, quiet)?;
    if pending.changes.is_empty() {
        if !quiet {
            eprintln!(
                "ok: the catalog matches {}; nothing to accept",
                display(&pending.lockfile)
            );
        }
        return Ok(Outcome::Clean);
    }
    let picked = approve::select(&pending.changes, selectors)?;
    let evidence = evidence
        .iter()
        .map(|p| approve::Evidence::read(p, &pending.lockfile))
        .collect::<Result<Vec<_>, _>>()?;
    let updated = approve::apply(&pending.pinned, &pending.live, &picked)?;
    let stamp = pending.stamp(&updated);
    let records: Vec<Value> = picked
        .iter()
        .map(|change| {
            let decision = approve::Decision {
                change,
                accepted: true,
                reason: Some(reason.to_string()),
                evidence: evidence.clone(),
            };
            approve::record(&decision, &pending.comparison, &stamp)
        })
        .collect();
    approve::commit(&pending.lockfile, Some(&updated), &records)?;
    let decisions: Vec<(&approve::Change, bool)> = picked.iter().map(|c| (*c, true)).collect();
    pending.record_decisions(&decisions, quiet)?;
    if !quiet {
        let names: Vec<String> = picked.iter().map(|c| c.address()).collect();
        let left = pending.changes.len() - picked.len();
        eprintln!(
            "Accepted {} ({}); {} is now {}, recorded in {}{}",
            plural(picked.len(), "change"),
            toolpin_report::style::printable(&names.join(", "), false),
            display(&pending.lockfile),
            updated.fingerprint().release_line(),
            display(&approve::log_path(&pending.lockfile)),
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
/// beside the lockfile and each gets a record in the approvals log. The
/// file is written first; if the log then cannot be, the file is put back.
pub fn seen_tools(
    args: &ConfigArgs,
    names: &[String],
    reason: &str,
    evidence: &[PathBuf],
    quiet: bool,
) -> Result<Outcome, CliError> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(CliError::new(
            "--reason must say why the tool name is acceptable",
        ));
    }
    if let Some(bad) = names
        .iter()
        .find(|n| n.trim().is_empty() || n.chars().any(char::is_control))
    {
        return Err(CliError::new(format!(
            "--seen-tool {bad:?} is not a tool name"
        )));
    }
    let lockfile = super::lockfile_path(args)?;
    let pinned = super::read_lockfile(&lockfile)?;
    let path = toolpin_evals::compare::seen::path_for(&lockfile);
    let evidence = evidence
        .iter()
        .map(|p| approve::Evidence::read(p, &lockfile))
        .collect::<Result<Vec<_>, _>>()?;
    let previous = match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(CliError::new(format!(
                "cannot read {}: {e}",
                display(&path)
            )))
        }
    };
    let added = toolpin_evals::compare::seen::add(&path, names)?;
    if added.is_empty() {
        if !quiet {
            eprintln!(
                "ok: {} already lists {}; nothing recorded",
                display(&path),
                toolpin_report::style::printable(&names.join(", "), false)
            );
        }
        return Ok(Outcome::Clean);
    }
    let stamp = approve::Stamp {
        author: approve::author(&lockfile),
        time: approve::now_utc(),
        environment: pinned.environment.clone(),
        catalog_before: pinned.fingerprint(),
        catalog_after: pinned.fingerprint(),
    };
    let records: Vec<Value> = added
        .iter()
        .map(|name| approve::seen_tool_record(name, reason, &evidence, &stamp))
        .collect();
    if let Err(e) = approve::commit(&lockfile, None, &records) {
        let restored = match &previous {
            Some(bytes) => toolpin_manifest::fs::write_atomic(&path, bytes),
            None => std::fs::remove_file(&path),
        };
        let note = match restored {
            Ok(()) => String::new(),
            Err(r) => format!(" (and {} could not be restored: {r})", display(&path)),
        };
        return Err(CliError::new(format!("{e}{note}")));
    }
    if !quiet {
        eprintln!(
            "Acknowledged {} ({}) in {}, recorded in {}",
            plural(added.len(), "tool name"),
            toolpin_report::style::printable(&added.join(", "), false),
            display(&path),
            display(&approve::log_path(&lockfile)),
        );
    }
    Ok(Outcome::Clean)
}
