//! `toolpin compare`: two sets of eval runs, case by case.

use std::path::PathBuf;

use toolpin_evals::compare::{self, seen, Options};
use toolpin_evals::results::Format;
use toolpin_report::{Report, Style};

use super::report_target::{write_report, ReportTarget};
use super::Outcome;
use crate::cli::CompareArgs;
use crate::error::CliError;

pub fn run(args: &CompareArgs, style: Style) -> Result<Outcome, CliError> {
    let targets = targets(&args.format)?;
    let format = args
        .input_format
        .as_deref()
        .map(Format::parse)
        .transpose()
        .map_err(CliError::new)?;
    let catalogs = match args.catalogs.as_slice() {
        [pinned, live] => Some((
            super::catalog_from_path(pinned, None)?,
            super::catalog_from_path(live, None)?,
        )),
        _ => None,
    };
    let seen_path = args
        .seen
        .clone()
        .unwrap_or_else(|| seen::path_for(&args.lockfile));
    let seen = seen::read(&seen_path)?;
    let before: Vec<PathBuf> = std::iter::once(args.before_path.clone())
        .chain(args.before.iter().cloned())
        .collect();
    let after: Vec<PathBuf> = std::iter::once(args.after_path.clone())
        .chain(args.after.iter().cloned())
        .collect();
    let inputs = compare::read_inputs(&before, &after, &args.aa, format)?;
    let ctx = compare::context(catalogs.as_ref().map(|(a, b)| (a, b)), seen.as_ref());
    let report = compare::compare(
        &inputs.before,
        &inputs.after,
        inputs.aa.as_deref(),
        inputs.names,
        &ctx,
        Options {
            seed: args.seed,
            resamples: args.resamples,
        },
    );
    for target in &targets {
        let target_style = if target.path.is_some() {
            Style { color: false }
        } else {
            style
        };
        let text = compare::render(&report, target.format, target_style).unwrap_or_default();
        write_report(target, &text)?;
    }
    Ok(if report.fails() {
        Outcome::Drift
    } else {
        Outcome::Clean
    })
}

/// `--format` for a comparison: text, json or markdown, at most one on stdout.
pub(crate) fn targets(given: &[ReportTarget]) -> Result<Vec<ReportTarget>, CliError> {
    let targets = if given.is_empty() {
        vec![ReportTarget {
            format: toolpin_report::format::TEXT,
            path: None,
        }]
    } else {
        given.to_vec()
    };
    if let Some(t) = targets
        .iter()
        .find(|t| !Report::Comparison.offers(t.format))
    {
        return Err(CliError::new(format!(
            "a comparison is reported as {}, not {}",
            Report::Comparison.list(),
            t.format.name
        )));
    }
    if targets.iter().filter(|t| t.path.is_none()).count() > 1 {
        return Err(CliError::new(
            "only one --format may write to stdout; give the others a path (FORMAT=PATH)",
        ));
    }
    Ok(targets)
}
