//! `toolpin diff`: compare two lockfiles or tool files.

use std::path::Path;

use toolpin_capture::Format;
use toolpin_drift::policy::Policy;
use toolpin_manifest::lockfile;
use toolpin_report::text::Sides;
use toolpin_report::Style;

use super::report_target::{check_plan_formats, report_comparison};
use super::{repository_path, Outcome};
use crate::cli::ReportArgs;
use crate::config;
use crate::error::CliError;

pub fn run(
    old: &Path,
    new: &Path,
    input_format: Option<Format>,
    config: Option<&Path>,
    report: &ReportArgs,
    style: Style,
) -> Result<Outcome, CliError> {
    check_plan_formats(report)?;
    let (policy, evals) = match config {
        Some(path) => config::load_policy_and_evals(path)?,
        None => (Policy::default(), config::Evals::default()),
    };
    let old_path = old;
    let old = super::catalog_from_path(old, input_format)?;
    let new = super::catalog_from_path(new, input_format)?;
    let context = toolpin_report::context::Context::new(
        repository_path(old_path),
        lockfile::looks_like_lockfile(&std::fs::read(old_path).unwrap_or_default())
            .then(|| std::fs::read_to_string(old_path).ok())
            .flatten(),
    );
    report_comparison(
        Sides::TwoCatalogs,
        &old,
        &new,
        (&policy, &evals),
        &context,
        report,
        style,
    )
}
