//! `toolpin check`: capture again, compare with the lockfile, and write
//! the drift down in the ledger.

use toolpin_report::text::Sides;
use toolpin_report::Style;

use super::ledger::Recorder;
use super::report_target::{check_plan_formats, check_targets, report_judged};
use super::{repository_path, Outcome};
use crate::cli::{ConfigArgs, ReportArgs};
use crate::config;
use crate::error::CliError;

pub fn run(
    config: &ConfigArgs,
    report: &ReportArgs,
    quiet: bool,
    style: Style,
) -> Result<Outcome, CliError> {
    check_plan_formats(report)?;
    check_targets(report)?;
    let cfg = config::load(&config.config, config.env.as_deref())?;
    let path = config
        .lockfile
        .clone()
        .unwrap_or_else(|| cfg.default_lockfile());
    let pinned = super::read_lockfile(&path)?;
    let live = super::capture_config(&cfg, config.capture_options(quiet))?;
    let context = toolpin_report::context::Context::new(
        repository_path(&path),
        std::fs::read_to_string(&path).ok(),
    );
    // Opened first: a required ledger that cannot be written is an error
    // before any report is printed.
    let mut recorder = Recorder::open(&cfg, quiet)?;
    let judged = report_judged(
        Sides::LockfileAndLive,
        toolpin_drift::compare(&pinned, &live),
        (&cfg.policy, &cfg.evals),
        &context,
        report,
        style,
    )?;
    let at = toolpin_ops::now();
    let seen = toolpin_ops::record::sightings(
        &cfg.environment,
        &pinned,
        &live,
        &judged.comparison,
        &judged.verdict,
        &judged.plan,
        &cfg.vendors,
        at,
    );
    recorder.write(|ledger| {
        toolpin_ops::record::record_check(
            ledger,
            &cfg.environment,
            &pinned,
            &live,
            seen,
            // Enqueued, not sent: `toolpin watch` delivers the outbox.
            toolpin_ops::deliver::route(&cfg.notify),
            at,
        )
    })?;
    Ok(judged.outcome)
}
