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
    if !quiet {
        let names: Vec<String> = picked.iter().map(|c| c.address()).collect();
        let left = pending.changes.len() - picked.len();
        eprintln!(
            "Accepted {} ({}); {} is now {}, recorded in {}{}",
            plural(picked.len(), "change"),
            toolpin_report::style::printable(&names.join(", "), false),
            display(&pending.lockfile),
            updated.fingerprint.release_line(),
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
