//! `toolpin check`: capture again, compare with the lockfile, and write
//! the drift down in the ledger (`toolpin_ops::check`).

use toolpin_ops::recorder::Recorder;
use toolpin_report::text::Sides;
use toolpin_report::Style;

use super::report_target::{check_targets, render, Judged};
use super::{repository_path, Outcome};
use crate::cli::{ConfigArgs, ReportArgs};
use crate::error::CliError;

pub fn run(
    config: &ConfigArgs,
    report: &ReportArgs,
    quiet: bool,
    style: Style,
) -> Result<Outcome, CliError> {
    check_targets(report)?;
    let project = config.resolve()?;
    let mut checked = toolpin_ops::check::check(&project, config.capture_options(quiet))?;
    // Opened first: a required ledger that cannot be written is an error
    // before any report is printed.
    let mut recorder = Recorder::open(&project.config, quiet)?;
    // Moved, not copied: the text is as large as the lockfile.
    let context = toolpin_report::context::Context::new(
        repository_path(&project.lockfile),
        checked.lockfile_text.take(),
    );
    let outcome = render(
        &Judged {
            sides: Sides::LockfileAndLive,
            comparison: &checked.comparison,
            verdict: &checked.verdict,
            plan: &checked.plan,
            evals: &project.config.evals,
            context: &context,
        },
        report,
        style,
    )?;
    checked.record(&project, &mut recorder)?;
    Ok(outcome)
}
