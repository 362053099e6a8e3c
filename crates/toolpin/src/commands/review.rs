//! `toolpin review`: the changes one at a time, each shown with its
//! classified diff, then accept (with a reason), reject or skip.
//! The questions are `crate::conversation`'s; nothing is written until
//! the end.

use toolpin_ops::approve::Pending;
use toolpin_report::Style;

use super::{display, plural, print, Outcome};
use crate::approve;
use crate::cli::ConfigArgs;
use crate::conversation::Review;
use crate::error::CliError;

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
    let pending = Pending::capture(args.resolve()?, args.capture_options(quiet))?;
    let lockfile = pending.lockfile();
    if pending.changes.is_empty() {
        let shown = display(lockfile);
        print(&format!(
            "ok: the catalog matches {shown}; nothing to review\n"
        ))?;
        return Ok(Outcome::Clean);
    }
    let session = Review {
        comparison: &pending.checked.comparison,
        verdict: &pending.checked.verdict,
        changes: &pending.changes,
        lockfile,
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
    let decisions: Vec<approve::Decision> = answers
        .into_iter()
        .map(|a| approve::Decision {
            change: &pending.changes[a.change],
            accepted: a.accepted,
            reason: a.reason,
            evidence: a.evidence,
        })
        .collect();
    let done = pending.decide(&decisions, quiet)?;
    let accepted = done.accepted.len();
    let rejected = decisions.len() - accepted;
    let skipped = pending.changes.len() - decisions.len();
    let mut summary = format!("\n{accepted} accepted, {rejected} rejected, {skipped} skipped");
    if accepted > 0 {
        let release = done.updated.fingerprint().release_line();
        summary += &format!("; {} is now {release}", display(lockfile));
    }
    if done.records > 0 {
        summary += &format!(
            "; {} in {}",
            plural(done.records, "record"),
            display(&approve::log_path(lockfile))
        );
    }
    print(&(summary + "\n"))?;
    Ok(Outcome::Clean)
}
