//! `toolpin review`: the interactive review of each change.

use serde_json::Value;
use toolpin_report::Style;

use super::pending::Pending;
use super::{display, plural, print, Outcome};
use crate::cli::ConfigArgs;
use crate::error::CliError;
use crate::{approve, review};

pub fn run(
    args: &ConfigArgs,
    verbose: bool,
    style: Style,
    quiet: bool,
) -> Result<Outcome, CliError> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return Err(CliError::new(
            "toolpin review asks questions and needs a terminal; in scripts use `toolpin accept --tool SERVER/TOOL --reason ...`",
        ));
    }
    let pending = Pending::capture(args, quiet)?;
    if pending.changes.is_empty() {
        print(&format!(
            "ok: the catalog matches {}; nothing to review\n",
            display(&pending.lockfile)
        ))?;
        return Ok(Outcome::Clean);
    }
    let session = review::Review {
        comparison: &pending.comparison,
        verdict: &pending.verdict,
        changes: &pending.changes,
        lockfile: &pending.lockfile,
        style,
        verbose,
    };
    let answers = {
        let mut input = std::io::stdin().lock();
        let mut out = std::io::stdout().lock();
        session
            .run(&mut input, &mut out)
            .map_err(|e| CliError::new(format!("review: {e}")))?
    };
    let accepted: Vec<&approve::Change> = answers
        .iter()
        .filter(|a| a.accepted)
        .map(|a| &pending.changes[a.change])
        .collect();
    let updated = approve::apply(&pending.pinned, &pending.live, &accepted)?;
    let stamp = pending.stamp(&updated);
    let records: Vec<Value> = answers
        .iter()
        .map(|a| {
            let decision = approve::Decision {
                change: &pending.changes[a.change],
                accepted: a.accepted,
                reason: a.reason.clone(),
                evidence: a.evidence.clone(),
            };
            approve::record(&decision, &pending.comparison, &stamp)
        })
        .collect();
    approve::commit(
        &pending.lockfile,
        (!accepted.is_empty()).then_some(&updated),
        &records,
    )?;
    let rejected = answers.len() - accepted.len();
    let skipped = pending.changes.len() - answers.len();
    let mut summary = format!(
        "\n{} accepted, {} rejected, {} skipped",
        accepted.len(),
        rejected,
        skipped
    );
    if !accepted.is_empty() {
        summary += &format!(
            "; {} is now {}",
            display(&pending.lockfile),
            updated.fingerprint.release_line()
        );
    }
    if !records.is_empty() {
        summary += &format!(
            "; {} in {}",
            plural(records.len(), "record"),
            display(&approve::log_path(&pending.lockfile))
        );
    }
    print(&(summary + "\n"))?;
    Ok(Outcome::Clean)
}
