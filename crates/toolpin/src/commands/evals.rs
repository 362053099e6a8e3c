//! `toolpin evals run` (`toolpin_ops::evals`) and `toolpin evals list`.

use toolpin_ops::evals::Ran;
use toolpin_report::Style;

use super::{print, Outcome};
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
            let request = toolpin_ops::evals::Request {
                names,
                plan: *plan,
                out: out.clone(),
                repeat: *repeat,
                aa: *aa,
                seed: *seed,
                capture: config.capture_options(quiet),
            };
            match toolpin_ops::evals::run(&config.resolve()?, &request, style)? {
                Ran::Nothing(why) => {
                    print(&format!("nothing to run: {why}\n"))?;
                    Ok(Outcome::Clean)
                }
                Ran::Table(table, regressed) => {
                    print(&table)?;
                    Ok(if regressed {
                        Outcome::Drift
                    } else {
                        Outcome::Clean
                    })
                }
            }
        }
    }
}
