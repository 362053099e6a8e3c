//! `toolpin evals run`: the configured evals run against the pinned and
//! the live catalog, all of them, the ones named, or the ones the check's
//! plan routes the drift to.

use std::path::{Path, PathBuf};

use toolpin_capture::servers;
use toolpin_config::Eval;
use toolpin_evals::Plan;
use toolpin_report::Style;

use crate::project::Project;
use crate::Error;
use toolpin_manifest::text::shown_path;

/// What `evals run` was asked.
pub struct Request<'a> {
    /// The evals named (none: all of them).
    pub names: &'a [String],
    /// Run the evals the check's plan routes the drift to.
    pub plan: bool,
    /// The output directory (none: in toolpin's state directory).
    pub out: Option<PathBuf>,
    pub repeat: u32,
    pub aa: bool,
    pub seed: u64,
    pub capture: servers::Options,
}

/// What running the evals came to.
pub enum Ran {
    /// `--plan` found nothing to run, and why.
    Nothing(String),
    /// The evals' table, and whether any regressed.
    Table(String, bool),
}

/// Runs the evals `request` selects; an eval named that is not configured
/// is an error before anything is captured.
pub fn run(project: &Project, request: &Request, style: Style) -> Result<Ran, Error> {
    let cfg = &project.config;
    let shown = cfg.path.display();
    if cfg.evals.evals.is_empty() {
        return Err(Error::new(format!(
            "{shown} defines no evals; add an [evals.NAME] table with `run = \"…\"` (see docs/evals.md)"
        )));
    }
    if let Some(name) = request
        .names
        .iter()
        .find(|n| !cfg.evals.evals.contains_key(*n))
    {
        return Err(Error::new(format!(
            "no eval named {name:?} in {shown} (defined: {})",
            cfg.evals.names()
        )));
    }
    let pinned = project.read_lockfile()?;
    let live = crate::capture::capture_config(cfg, request.capture)?;
    let (selected, plan_doc, how) = if request.plan {
        let mut comparison = toolpin_drift::compare(&pinned, &live);
        let verdict = cfg.policy.apply(&mut comparison);
        let plan = Plan::new(&verdict, &cfg.evals);
        if plan.evals.is_empty() {
            return Ok(Ran::Nothing(if verdict.plan.is_empty() {
                "no finding fails the policy".to_string()
            } else {
                format!(
                    "the drift routes to no eval (not routed: {}; see `toolpin check --plan`)",
                    plan.unrouted.keys().copied().collect::<Vec<_>>().join(", ")
                )
            }));
        }
        let doc = toolpin_evals::plan_json(&plan, &cfg.evals, &comparison, &verdict);
        (
            selected(cfg, |e| plan.evals.contains_key(&e.name)),
            Some(doc),
            "plan",
        )
    } else if request.names.is_empty() {
        (selected(cfg, |_| true), None, "all")
    } else {
        (
            selected(cfg, |e| request.names.contains(&e.name)),
            None,
            "names",
        )
    };
    let out = match &request.out {
        Some(out) => out.clone(),
        // In toolpin's state directory, which git ignores.
        None => {
            let state = cfg
                .path
                .parent()
                .unwrap_or(Path::new(""))
                .join(toolpin_manifest::fs::STATE_DIR);
            toolpin_manifest::fs::ensure_state_dir(&state)
                .map_err(|e| Error::new(format!("cannot create {}: {e}", shown_path(&state))))?;
            state.join("evals")
        }
    };
    let seen = toolpin_evals::compare::seen::read(&toolpin_evals::compare::seen::path_for(
        &project.lockfile,
    ))?;
    let run = toolpin_evals::run::Request {
        evals: selected,
        pinned: &pinned,
        live: &live,
        out,
        config: shown_path(&cfg.path),
        selected: how,
        plan: plan_doc,
        progress: request.capture.progress,
        repeats: request.repeat,
        aa: request.aa,
        seed: request.seed,
        seen: seen.as_ref(),
    };
    let (table, regressed) = toolpin_evals::run::run(&run, style)?;
    Ok(Ran::Table(table, regressed))
}

/// The configured evals `keep` selects, in the configuration's order.
fn selected(cfg: &crate::settings::Config, keep: impl Fn(&Eval) -> bool) -> Vec<&Eval> {
    cfg.evals.evals.values().filter(|e| keep(e)).collect()
}
