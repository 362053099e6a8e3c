//! `toolpin evals run` and `toolpin evals list`.

use std::path::Path;

use toolpin_report::Style;

use super::{display, print, Outcome};
use crate::cli::EvalsCommand;
use crate::error::CliError;
use crate::{config, evals};

pub fn run(command: &EvalsCommand, quiet: bool, style: Style) -> Result<Outcome, CliError> {
    match command {
        EvalsCommand::List { config } => {
            let (_, evals) = config::load_policy_and_evals(config)?;
            print(&evals::render_list(&evals, style))?;
            Ok(Outcome::Clean)
        }
        EvalsCommand::Run {
            names,
            plan,
            out,
            repeat,
            aa,
            seed,
            config,
        } => {
            let cfg = config::load(&config.config, config.env.as_deref())?;
            if cfg.evals.evals.is_empty() {
                return Err(CliError::new(format!(
                    "{} defines no evals; add an [evals.NAME] table with `run = \"…\"` (see docs/evals.md)",
                    config.config.display()
                )));
            }
            for name in names {
                if !cfg.evals.evals.contains_key(name) {
                    return Err(CliError::new(format!(
                        "no eval named {name:?} in {} (defined: {})",
                        config.config.display(),
                        cfg.evals.names()
                    )));
                }
            }
            let path = config
                .lockfile
                .clone()
                .unwrap_or_else(|| cfg.default_lockfile());
            let pinned = super::read_lockfile(&path)?;
            let live = super::capture_config(&cfg, config.capture_options(quiet))?;
            let (selected, plan_doc, how) = if *plan {
                let mut comparison = toolpin_drift::compare(&pinned, &live);
                let verdict = cfg.policy.apply(&mut comparison);
                let plan = evals::Plan::new(&verdict, &cfg.evals);
                if plan.evals.is_empty() {
                    let why = if verdict.plan.is_empty() {
                        "no finding fails the policy".to_string()
                    } else {
                        format!(
                            "the drift routes to no eval (not routed: {}; see `toolpin check --plan`)",
                            plan.unrouted.keys().copied().collect::<Vec<_>>().join(", ")
                        )
                    };
                    print(&format!("nothing to run: {why}\n"))?;
                    return Ok(Outcome::Clean);
                }
                let doc = evals::plan_json(&plan, &cfg.evals, &comparison, &verdict);
                let selected: Vec<&config::Eval> = cfg
                    .evals
                    .evals
                    .values()
                    .filter(|e| plan.evals.contains_key(&e.name))
                    .collect();
                (selected, Some(doc), "plan")
            } else if names.is_empty() {
                (cfg.evals.evals.values().collect(), None, "all")
            } else {
                let selected: Vec<&config::Eval> = cfg
                    .evals
                    .evals
                    .values()
                    .filter(|e| names.contains(&e.name))
                    .collect();
                (selected, None, "names")
            };
            let out = match out {
                Some(out) => out.clone(),
                // In toolpin's state directory, which git ignores.
                None => {
                    let state = cfg
                        .path
                        .parent()
                        .unwrap_or(Path::new(""))
                        .join(toolpin_manifest::fs::STATE_DIR);
                    toolpin_manifest::fs::ensure_state_dir(&state).map_err(|e| {
                        CliError::new(format!("cannot create {}: {e}", display(&state)))
                    })?;
                    state.join("evals")
                }
            };
            let seen = evals::compare::seen::read(&evals::compare::seen::path_for(&path))?;
            let request = evals::run::Request {
                evals: selected,
                pinned: &pinned,
                live: &live,
                out,
                config: display(&cfg.path),
                selected: how,
                plan: plan_doc,
                progress: !quiet,
                repeats: *repeat,
                aa: *aa,
                seed: *seed,
                seen: seen.as_ref(),
            };
            let (table, regressed) = evals::run::run(&request, style)?;
            print(&table)?;
            Ok(if regressed {
                Outcome::Drift
            } else {
                Outcome::Clean
            })
        }
    }
}
