//! `toolpin watch --once | --every INTERVAL`: check each environment,
//! record in the ledger, deliver the outbox. The recording and delivery
//! are `toolpin-ops`'s; this is the loop and what it prints.

use std::path::Path;

use toolpin_ledger::RecordOutcome;
use toolpin_ops::deliver::NotifySender;
use toolpin_ops::schedule;

use super::ledger::Recorder;
use super::{plural, Outcome};
use crate::cli::WatchArgs;
use crate::config;
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

/// One run over every environment: an environment that cannot be checked
/// is reported and the others are still checked; the run is then an error.
fn run_once(args: &WatchArgs, quiet: bool) -> Result<Outcome, CliError> {
    let envs: Vec<Option<&str>> = if args.envs.is_empty() {
        vec![None]
    } else {
        args.envs.iter().map(|e| Some(e.as_str())).collect()
    };
    let mut recorder: Option<Recorder> = None;
    // `[notify]` is not per environment: the first configuration's.
    let mut sender: Option<NotifySender> = None;
    let mut drift = false;
    let mut failed: Option<CliError> = None;
    for env in envs {
        match check_environment(&args.config, env, args.jobs, quiet, &mut recorder) {
            Ok((fails, cfg)) => {
                drift |= fails;
                if sender.is_none() {
                    sender = Some(NotifySender::new(&cfg.notify));
                }
            }
            Err(e) => {
                if let Some(previous) = failed.replace(e) {
                    eprintln!("error: {previous}");
                }
            }
        }
    }
    if let (Some(recorder), Some(sender)) = (recorder.as_mut(), sender.as_ref()) {
        recorder.deliver_due(sender)?;
    }
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(if drift {
        Outcome::Drift
    } else {
        Outcome::Clean
    })
}

/// Checks one environment and records it; whether its drift fails the
/// policy, and its configuration.
fn check_environment(
    path: &Path,
    env: Option<&str>,
    jobs: usize,
    quiet: bool,
    recorder: &mut Option<Recorder>,
) -> Result<(bool, config::Config), CliError> {
    let cfg = config::load(path, env)?;
    let lockfile = cfg.default_lockfile();
    let pinned = super::read_lockfile(&lockfile)?;
    let live = super::capture_config(
        &cfg,
        toolpin_capture::servers::Options {
            jobs,
            keep_going: true,
            progress: false,
        },
    )?;
    let mut comparison = toolpin_drift::compare(&pinned, &live);
    let verdict = cfg.policy.apply(&mut comparison);
    let plan = crate::evals::Plan::new(&verdict, &cfg.evals);
    let at = toolpin_ops::now();
    let seen = toolpin_ops::record::sightings(
        &cfg.environment,
        &pinned,
        &live,
        &comparison,
        &verdict,
        &plan,
        &cfg.vendors,
        at,
    );
    let tools = seen.drift.len();
    if recorder.is_none() {
        // One ledger for every environment: [ledger] is not per environment.
        *recorder = Some(Recorder::open_for_watch(&cfg, quiet)?);
    }
    let recorded = match recorder.as_mut() {
        Some(r) => r.write(|ledger| {
            toolpin_ops::record::record_check(
                ledger,
                &cfg.environment,
                &pinned,
                &live,
                seen,
                toolpin_ops::deliver::route(&cfg.notify),
                at,
            )
        })?,
        None => None,
    };
    if !quiet {
        eprintln!(
            "{}",
            summary(&cfg.environment, tools, &live, recorded.as_ref())
        );
    }
    Ok((verdict.fails, cfg))
}

/// `staging: drift in 2 tools (1 new, 1 seen before); 1 resolved`.
fn summary(
    environment: &str,
    tools: usize,
    live: &toolpin_manifest::Catalog,
    recorded: Option<&toolpin_ops::record::CheckRecorded>,
) -> String {
    let mut line = if tools == 0 {
        format!(
            "{environment}: ok, {} match the lockfile",
            plural(live.servers.len(), "server")
        )
    } else {
        format!("{environment}: drift in {}", plural(tools, "tool"))
    };
    if let Some(r) = recorded {
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
