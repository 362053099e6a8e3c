//! `toolpin check`: capture again and compare with the lockfile.

use toolpin_report::text::Sides;
use toolpin_report::Style;

use super::report_target::{check_plan_formats, report_comparison};
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
    report_comparison(
        Sides::LockfileAndLive,
        &pinned,
        &live,
        (&cfg.policy, &cfg.evals),
        &context,
        report,
        style,
    )
}
