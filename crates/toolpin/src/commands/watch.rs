//! `toolpin watch --once | --every INTERVAL`: check each environment,
//! record in the ledger, deliver the outbox. The run is
//! `toolpin_ops::watch`'s; this is the loop and what it prints.

use toolpin_ledger::RecordOutcome;
use toolpin_ops::schedule;
use toolpin_ops::watch::{Checked, Watch};

use super::{plural, Outcome};
use crate::cli::WatchArgs;
use crate::error::CliError;

pub fn run(args: &WatchArgs, quiet: bool) -> Result<Outcome, CliError> {
    let Some(interval) = args.every else {
        return run_once(args, quiet);
    };
    schedule::stop_on_signals();
    let mut run = 0u64;
    loop {
        let outcome = run_once(args, quiet);
        if let Err(e) = &outcome {
            eprintln!("error: {e}");
        }
        run += 1;
        let seed = u64::from(std::process::id())
            ^ run.rotate_left(32)
            ^ toolpin_manifest::time::Timestamp::now().unix_nanos();
        if schedule::stopping() || !schedule::sleep(schedule::jittered(interval, seed)) {
            if !quiet {
                eprintln!("watch: stopped");
            }
            // The last run's outcome is the exit code; its error was printed.
            return outcome.or(Err(CliError::new("the last run failed")));
        }
    }
}

/// One run over every environment (`toolpin_ops::watch::once`), each
/// summarised on stderr as it is checked.
fn run_once(args: &WatchArgs, quiet: bool) -> Result<Outcome, CliError> {
    let watch = Watch {
        config: &args.config,
        envs: &args.envs,
        jobs: args.jobs,
        quiet,
    };
    let drift = toolpin_ops::watch::once(&watch, &mut |checked| {
        if !quiet {
            eprintln!("{}", summary(checked));
        }
    })?;
    Ok(if drift {
        Outcome::Drift
    } else {
        Outcome::Clean
    })
}

/// `staging: drift in 2 tools (1 new, 1 seen before); 1 resolved`.
fn summary(checked: &Checked) -> String {
    let environment = &checked.environment;
    let tools = checked.written.drifting;
    let mut line = if tools == 0 {
        format!(
            "{environment}: ok, {} match the lockfile",
            plural(checked.servers, "server")
        )
    } else {
        format!("{environment}: drift in {}", plural(tools, "tool"))
    };
    if let Some(r) = &checked.written.recorded {
        let count = |o: RecordOutcome| r.recorded.iter().filter(|(_, x)| x.outcome == o).count();
        if tools > 0 {
            line += &format!(
                " ({} new, {} seen before, {} more severe)",
                count(RecordOutcome::New),
                count(RecordOutcome::Seen),
                count(RecordOutcome::MoreSevere)
            );
        }
        if !r.resolved.is_empty() {
            line += &format!("; {} resolved", plural(r.resolved.len(), "event"));
        }
    }
    line
}
