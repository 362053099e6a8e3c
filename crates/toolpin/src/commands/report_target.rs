//! Report targets (`--format FORMAT[=PATH]`) and rendering a comparison
//! into each of them, for `check` and `diff`.

use toolpin_drift::policy::Policy;
use toolpin_manifest::Catalog;
use toolpin_report::text::Sides;
use toolpin_report::Style;

use super::{print, Outcome};
use crate::cli::ReportArgs;
use crate::error::CliError;
use crate::{config, evals};

/// Where one report goes: the report crate's format table parses `--format`.
pub type ReportTarget = toolpin_report::Target;

pub fn report_comparison(
    sides: Sides,
    old: &Catalog,
    new: &Catalog,
    judged_by: (&Policy, &config::Evals),
    context: &toolpin_report::context::Context,
    args: &ReportArgs,
    style: Style,
) -> Result<Outcome, CliError> {
    check_targets(args)?;
    report(
        sides,
        toolpin_drift::compare(old, new),
        judged_by,
        context,
        args,
        style,
    )
}

/// Judges `comparison` by the policy and writes every report (or the
/// eval plan) `args` asks for; drift when the policy fails.
pub fn report(
    sides: Sides,
    mut comparison: toolpin_drift::Comparison,
    (policy, evals): (&Policy, &config::Evals),
    context: &toolpin_report::context::Context,
    args: &ReportArgs,
    style: Style,
) -> Result<Outcome, CliError> {
    targets(args)?;
    let verdict = policy.apply(&mut comparison);
    let plan = evals::Plan::new(&verdict, evals);
    let report = Judged {
        sides,
        comparison: &comparison,
        verdict: &verdict,
        plan: &plan,
        evals,
        context,
    };
    render(&report, args, style)
}

/// A judged comparison, to be reported.
pub struct Judged<'a> {
    pub sides: Sides,
    pub comparison: &'a toolpin_drift::Comparison,
    pub verdict: &'a toolpin_drift::policy::Verdict,
    pub plan: &'a evals::Plan,
    pub evals: &'a config::Evals,
    pub context: &'a toolpin_report::context::Context,
}

/// Writes every report (or the eval plan) `args` asks for; drift when the
/// policy fails.
pub fn render(report: &Judged, args: &ReportArgs, style: Style) -> Result<Outcome, CliError> {
    let Judged {
        sides,
        comparison,
        verdict,
        plan,
        evals,
        context,
    } = *report;
    let targets = targets(args)?;
    let plan = args.plan.then_some(plan);
    for target in &targets {
        // Colour only on the terminal, never into a file.
        let target_style = if target.path.is_some() {
            Style { color: false }
        } else {
            style
        };
        if let Some(plan) = &plan {
            let text = if target.format == toolpin_report::format::JSON {
                let doc = evals::plan_json(plan, evals, comparison, verdict);
                // Serializing a Value cannot fail.
                serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
            } else {
                evals::render_text(plan, evals, comparison, verdict, target_style)
            };
            write_report(target, &text)?;
            continue;
        }
        // The flag only takes the drift report's formats.
        let text = toolpin_report::format::render(
            target.format,
            &toolpin_report::Input {
                comparison,
                verdict,
                context,
                style: target_style,
                sides,
                verbose: args.verbose,
                rules_doc: RULES_URL,
            },
        )
        .unwrap_or_default();
        write_report(target, &text)?;
    }
    Ok(if verdict.fails {
        Outcome::Drift
    } else {
        Outcome::Clean
    })
}

/// Whether `args`' report targets can be written, before any work is done.
pub fn check_targets(args: &ReportArgs) -> Result<(), CliError> {
    targets(args).map(|_| ())
}

fn targets(args: &ReportArgs) -> Result<Vec<ReportTarget>, CliError> {
    let targets = if args.format.is_empty() {
        vec![ReportTarget {
            format: toolpin_report::format::TEXT,
            path: None,
        }]
    } else {
        args.format.clone()
    };
    if targets.iter().filter(|t| t.path.is_none()).count() > 1 {
        return Err(CliError::new(
            "only one --format may write to stdout; give the others a path (FORMAT=PATH)",
        ));
    }
    check_plan_formats(args)?;
    Ok(targets)
}

/// `--plan` replaces the report with the plan, which has a text and a JSON
/// form only. Checked before anything is captured.
pub fn check_plan_formats(args: &ReportArgs) -> Result<(), CliError> {
    match args
        .format
        .iter()
        .find(|t| !toolpin_report::Report::Plan.offers(t.format))
    {
        Some(t) if args.plan => Err(CliError::new(format!(
            "--plan prints the plan as {}, not {}; run without --plan for that report",
            toolpin_report::Report::Plan.list(),
            t.format.name
        ))),
        _ => Ok(()),
    }
}

/// Prints a report, or writes it to its file (creating missing directories).
pub(crate) fn write_report(target: &ReportTarget, text: &str) -> Result<(), CliError> {
    let Some(path) = &target.path else {
        return print(text);
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::new(format!("cannot create {}: {e}", dir.display())))?;
    }
    toolpin_manifest::fs::write_atomic(path, text.as_bytes())
        .map_err(|e| CliError::new(format!("cannot write {}: {e}", path.display())))
}

/// Where rule ids in a pull-request comment link: relative links there
/// resolve against the pull request, not the repository.
const RULES_URL: &str = concat!(env!("CARGO_PKG_REPOSITORY"), "/blob/main/docs/rules.md");
