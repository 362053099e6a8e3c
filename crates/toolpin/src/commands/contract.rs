//! `toolpin contract init`, `check`, `record` and `run`: the CLI side of
//! `toolpin-contract`, which owns the file, the derivation, the checks and
//! the behaviour snapshot; the calls are made by `toolpin_capture::call`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use toolpin_capture::call;
use toolpin_contract::behaviour::{self, Class, Outcome as CallOutcome, Snapshot};
use toolpin_contract::run::{CallJudgement, Gate, Judge, Planned, Refusal, Seen};
use toolpin_contract::Contracts;
use toolpin_report::text::Sides;
use toolpin_report::Style;

use super::ledger::Recorder;
use super::report_target::{check_targets, report_judged};
use super::{lockfile_path, plural, print, repository_path, Outcome};
use crate::cli::{ConfigArgs, ContractCommand, ReportArgs};
use crate::error::CliError;

pub fn run(command: &ContractCommand, quiet: bool, style: Style) -> Result<Outcome, CliError> {
    match command {
        ContractCommand::Init { force, config } => init(config, *force, quiet),
        ContractCommand::Check { config } => check(config, quiet),
        ContractCommand::Record { config } => record(config, quiet),
        ContractCommand::Run { config, report } => run_calls(config, report, quiet, style),
    }
}

fn init(config: &ConfigArgs, force: bool, quiet: bool) -> Result<Outcome, CliError> {
    let lockfile = lockfile_path(config)?;
    let catalog = super::read_lockfile(&lockfile)?;
    let path = toolpin_contract::path_for(&lockfile);
    let name = lockfile
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| lockfile.display().to_string());
    let starter = toolpin_contract::init(&catalog, &name);
    toolpin_contract::write(&path, &starter.text, force)?;
    if !quiet {
        let mut line = format!(
            "Wrote {}: {} for read-only tools ({}, {})",
            path.display(),
            plural(starter.active, "contract"),
            plural(starter.calls, "call"),
            plural(starter.probes, "default probe"),
        );
        if starter.commented > 0 {
            line += &format!(
                "; {} not read-only left commented out",
                plural(starter.commented, "tool")
            );
        }
        if starter.placeholders > 0 {
            line += &format!(
                "; fill in {}",
                plural(starter.placeholders, "placeholder argument")
            );
        }
        eprintln!("{line}");
    }
    Ok(Outcome::Clean)
}

fn check(config: &ConfigArgs, quiet: bool) -> Result<Outcome, CliError> {
    let lockfile = lockfile_path(config)?;
    let catalog = super::read_lockfile(&lockfile)?;
    let path = toolpin_contract::path_for(&lockfile);
    let (_, summary) = toolpin_contract::check(&path, &catalog, &lockfile.display().to_string())?;
    if !quiet {
        let mut line = format!(
            "{}: ok ({}, {}, {})",
            path.display(),
            plural(summary.contracts, "contract"),
            plural(summary.calls, "call"),
            plural(summary.probes, "default probe"),
        );
        if !summary.placeholders.is_empty() {
            const SHOWN: usize = 5;
            let mut first = summary
                .placeholders
                .iter()
                .take(SHOWN)
                .map(|(tool, arg)| format!("{tool} `{arg}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if summary.placeholders.len() > SHOWN {
                first += &format!(", and {} more", summary.placeholders.len() - SHOWN);
            }
            line += &format!(
                "; {} to fill in before the calls are made: {first}",
                plural(summary.placeholders.len(), "placeholder argument")
            );
        }
        print(&(line + "\n"))?;
    }
    Ok(Outcome::Clean)
}

/// What the live servers did, aligned with the plan (`None`: the call's
/// server could not be reached, or its tool was refused), the servers that
/// could not be reached and the tools that were not called.
struct Observed {
    seen: Vec<Option<Seen>>,
    /// Calls judged as they arrived (`None`: not yet; judged at the end).
    judged: Vec<Option<CallJudgement>>,
    /// `server "x": why`, one per server that could not be reached.
    unavailable: Vec<String>,
    /// The tools the [`Gate`] refused on their session, by `server/tool`.
    refused: Vec<Refusal>,
}

type Loaded = (
    std::path::PathBuf,
    crate::config::Config,
    toolpin_manifest::Catalog,
    Contracts,
);

fn load(config: &ConfigArgs) -> Result<Loaded, CliError> {
    let cfg = crate::config::load(&config.config, config.env.as_deref())?;
    let lockfile = match &config.lockfile {
        Some(p) => p.clone(),
        None => cfg.default_lockfile(),
    };
    let catalog = super::read_lockfile(&lockfile)?;
    let path = toolpin_contract::path_for(&lockfile);
    let (contracts, _) = toolpin_contract::check(&path, &catalog, &lockfile.display().to_string())?;
    contracts.check_ready()?;
    Ok((lockfile, cfg, catalog, contracts))
}

/// Makes the planned calls. Servers are called at once, at most
/// `concurrency` of them; each server's calls go in plan order over one
/// session, so that one call's latency never includes another's queueing
/// and a stateful server sees the calls in the order the file gives.
/// What to make of a call as soon as it is seen: a judgement, or `None`
/// to leave it for later.
type OnSeen<'a> = dyn Fn(&Planned, &Seen) -> Option<CallJudgement> + Sync + 'a;

/// Each session lists its tools first; `gate` decides from that list which
/// tools are called (docs/contracts.md, "Safety rules").
/// `keep_payloads`: whether each call's first result is kept for a
/// judgement `on_seen` did not make (`run`'s, when its snapshot was not
/// read yet); `record` judges nothing.
fn observe_all(
    cfg: &crate::config::Config,
    planned: &[Planned],
    concurrency: u64,
    gate: &Gate,
    keep_payloads: bool,
    on_seen: &OnSeen,
) -> Observed {
    let servers: Vec<&crate::config::Server> = cfg
        .servers
        .iter()
        .filter(|s| planned.iter().any(|p| p.server == s.name))
        .collect();
    let seen = Mutex::new((
        (0..planned.len())
            .map(|_| None)
            .collect::<Vec<Option<Seen>>>(),
        (0..planned.len())
            .map(|_| None)
            .collect::<Vec<Option<CallJudgement>>>(),
    ));
    let unavailable = Mutex::new(Vec::new());
    let refused = Mutex::new(Vec::new());
    let next = AtomicUsize::new(0);
    let workers = (concurrency.max(1) as usize).min(servers.len());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                while let Some(server) = servers.get(next.fetch_add(1, Ordering::Relaxed)) {
                    match observe_server(server, planned, gate, &refused, keep_payloads, on_seen) {
                        Ok(mine) => {
                            let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
                            for (i, s, j) in mine {
                                seen.0[i] = Some(s);
                                seen.1[i] = j;
                            }
                        }
                        Err(why) => unavailable
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(format!("server {:?}: {why}", server.name)),
                    }
                }
            });
        }
    });
    let mut unavailable = unavailable.into_inner().unwrap_or_else(|e| e.into_inner());
    unavailable.sort();
    let mut refused: Vec<Refusal> = refused.into_inner().unwrap_or_else(|e| e.into_inner());
    refused.sort_by(|a, b| a.tool_key.cmp(&b.tool_key));
    let (seen, judged) = seen.into_inner().unwrap_or_else(|e| e.into_inner());
    Observed {
        seen,
        judged,
        unavailable,
        refused,
    }
}

/// One server's planned calls, each observed over its repeats, by plan
/// index.
fn observe_server(
    server: &crate::config::Server,
    planned: &[Planned],
    gate: &Gate,
    refused: &Mutex<Vec<Refusal>>,
    keep_payloads: bool,
    on_seen: &OnSeen,
) -> Result<Vec<(usize, Seen, Option<CallJudgement>)>, String> {
    let mine: Vec<(usize, &Planned)> = planned
        .iter()
        .enumerate()
        .filter(|(_, p)| p.server == server.name)
        .collect();
    let prefix = server.transform.prefix.as_str();
    let mut requests = Vec::new();
    for (_, p) in &mine {
        let tool = p.tool.strip_prefix(prefix).unwrap_or(&p.tool).to_string();
        for _ in 0..p.repeats {
            requests.push(call::Request {
                tool: tool.clone(),
                arguments: p.arguments.clone(),
                timeout: Duration::from_millis(p.timeout_ms),
            });
        }
    }
    // Each answer is observed on a second thread while the server works
    // on the next call, so observing adds little to the session's wall.
    let (tx, rx) = std::sync::mpsc::channel::<call::Answer>();
    std::thread::scope(|scope| {
        let observer = scope.spawn(move || {
            let mut answers = rx.into_iter();
            let mut out = Vec::with_capacity(mine.len());
            for (i, p) in mine {
                let answers: Vec<call::Answer> =
                    answers.by_ref().take(p.repeats as usize).collect();
                if answers.len() < p.repeats as usize {
                    // The session ended early: the server is unavailable.
                    break;
                }
                if answers
                    .iter()
                    .any(|a| matches!(a.result, Err(call::Failure::NotCalled(_))))
                {
                    // Refused by the gate: nothing was seen.
                    continue;
                }
                let outcomes: Vec<(CallOutcome, f64)> = answers
                    .into_iter()
                    .map(|a| (outcome(a.result), a.latency.as_secs_f64() * 1000.0))
                    .collect();
                let mut seen = toolpin_contract::run::seen(p, outcomes);
                let judged = on_seen(p, &seen);
                if judged.is_some() || !keep_payloads {
                    // Judged, or never to be: the result is no longer
                    // needed, and freeing it here overlaps with the
                    // session, not the exit (nor do the results of many
                    // calls pile up until it).
                    seen.payload = None;
                }
                out.push((i, seen, judged));
            }
            out
        });
        // What the session lists decides what is called: a refusal is
        // kept with its reason, and the call module answers the tool's
        // requests with it, unsent.
        let admit = |tool: &str, live: Option<&toolpin_manifest::PinnedTool>| {
            gate.admit(&server.name, tool, live).map_err(|refusal| {
                let reason = refusal.reason.clone();
                refused
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(refusal);
                reason
            })
        };
        let called = call::call_server_each(server, &requests, &admit, &mut |a| {
            let _ = tx.send(a);
        });
        drop(tx);
        let seen = observer
            .join()
            .map_err(|_| "observing the answers failed".to_string())?;
        called.map(|()| seen)
    })
}

fn outcome(result: Result<serde_json::Value, call::Failure>) -> CallOutcome {
    match result {
        Ok(v) => CallOutcome::Result(v),
        Err(call::Failure::Rpc { code, message }) => {
            CallOutcome::Error(Class::of_error(Some(code), None, &message))
        }
        Err(call::Failure::Http { status, message }) => {
            CallOutcome::Error(Class::of_error(None, Some(status), &message))
        }
        Err(call::Failure::Timeout) => CallOutcome::Error(Class::Timeout),
        Err(call::Failure::Transport(m)) => CallOutcome::Error(Class::of_error(None, None, &m)),
        Err(call::Failure::TooLarge(limit)) => CallOutcome::TooLarge(limit),
        // Never observed: `observe_server` leaves refused calls unseen.
        Err(call::Failure::NotCalled(_)) => CallOutcome::Error(Class::Other),
    }
}

/// Says on stderr which tools were not called and why, one line each
/// (`drifted: server/tool: …` or `unavailable: server/tool: …`).
fn report_refused(planned: &[Planned], refused: &[Refusal]) {
    for (r, d) in refused
        .iter()
        .zip(toolpin_contract::run::refused(planned, refused))
    {
        eprintln!("{}: {}: {}", r.label(), r.tool_key, d.message);
    }
}

fn report_unavailable(unavailable: &[String]) -> Result<(), CliError> {
    if unavailable.is_empty() {
        return Ok(());
    }
    for line in unavailable {
        eprintln!("unavailable: {line}");
    }
    Err(CliError::new(format!(
        "{} unavailable; no behaviour was compared for {}",
        plural(unavailable.len(), "server"),
        if unavailable.len() == 1 { "it" } else { "them" }
    )))
}

fn record(config: &ConfigArgs, quiet: bool) -> Result<Outcome, CliError> {
    let (lockfile, cfg, catalog, contracts) = load(config)?;
    let planned = toolpin_contract::run::plan(&contracts);
    let gate = Gate::new(&contracts, &catalog);
    // Nothing judges what record sees: each result is dropped once
    // observed, never held until the snapshot is written.
    let observed = observe_all(
        &cfg,
        &planned,
        contracts.defaults.concurrency,
        &gate,
        false,
        &|_, _| None,
    );
    // A tool that was not called has no behaviour to record: the snapshot
    // is left as it was, and the run fails.
    report_refused(&planned, &observed.refused);
    report_unavailable(&observed.unavailable)?;
    if !observed.refused.is_empty() {
        if !quiet {
            eprintln!(
                "{} not called; {} not written: accept or re-pin the change (`toolpin check` shows it), review the contract, then record again",
                plural(observed.refused.len(), "tool"),
                behaviour::path_for(&lockfile).display()
            );
        }
        return Ok(Outcome::Drift);
    }
    let path = behaviour::path_for(&lockfile);
    let (snapshot, notes) = toolpin_contract::run::snapshot(&planned, &observed.seen);
    let mut recorder = Recorder::open(&cfg, quiet)?;
    snapshot.write(&path)?;
    // The behaviour is the reference now: its recorded failures are
    // accepted.
    let recorded: std::collections::BTreeSet<String> =
        planned.iter().map(|p| p.tool_key.clone()).collect();
    recorder.write(|ledger| {
        toolpin_ops::contract::record_rerecorded(
            ledger,
            &cfg.environment,
            &recorded,
            toolpin_ops::now(),
        )
    })?;
    if !quiet {
        for note in &notes {
            eprintln!("note: default probe {note}; recorded as not holding");
        }
        for (key, observation) in &snapshot.calls {
            for (bound, what) in &observation.bounded {
                eprintln!("note: {key}: the {bound} bound was hit: {what} (docs/contracts.md, \"Bounds\")");
            }
        }
        let mut line = format!(
            "Wrote {}: {}",
            path.display(),
            plural(snapshot.calls.len(), "call")
        );
        if !snapshot.probes.is_empty() {
            line += &format!(", {}", plural(snapshot.probes.len(), "default probe"));
        }
        eprintln!("{line}");
    }
    Ok(Outcome::Clean)
}

fn run_calls(
    config: &ConfigArgs,
    args: &ReportArgs,
    quiet: bool,
    style: Style,
) -> Result<Outcome, CliError> {
    check_targets(args)?;
    let (lockfile, cfg, catalog, contracts) = load(config)?;
    let path = behaviour::path_for(&lockfile);
    if std::fs::symlink_metadata(&path).is_err() {
        // No snapshot: said before any call is made.
        Snapshot::read(&path)?;
    }
    let planned = toolpin_contract::run::plan(&contracts);
    // The snapshot is read and checked while the servers start, and each
    // call is judged as it arrives once it is: the run then adds little
    // wall time to the calls themselves (docs/performance.md).
    let snapshot: OnceLock<Result<Snapshot, toolpin_contract::Error>> = OnceLock::new();
    let judge: OnceLock<Judge> = OnceLock::new();
    let gate = Gate::new(&contracts, &catalog);
    let observed = std::thread::scope(|scope| {
        scope.spawn(|| {
            if let Ok(s) = snapshot.get_or_init(|| Snapshot::read(&path)) {
                let _ = judge.set(Judge::new(&contracts, &catalog, s));
            }
        });
        observe_all(
            &cfg,
            &planned,
            contracts.defaults.concurrency,
            &gate,
            true,
            &|p, s| judge.get().and_then(|j| j.call(p, s)),
        )
    });
    let Some(judge) = judge.get() else {
        return match snapshot.get() {
            Some(Err(e)) => Err(e.clone().into()),
            _ => Err(CliError::new(format!("cannot read {}", path.display()))),
        };
    };
    let snapshot_fingerprint = judge.snapshot_fingerprint().to_string();
    let judged = judge.finish(&planned, &observed.seen, observed.judged, &observed.refused);
    if !quiet {
        for key in &judged.unrecorded {
            eprintln!(
                "note: {key} is not in {}; run `toolpin contract record`",
                path.display()
            );
        }
    }
    let comparison = toolpin_contract::report::comparison(
        &judged.differences,
        &judged.called,
        &snapshot_fingerprint,
        &judged.fingerprint,
    );
    let context = toolpin_report::context::Context::new(
        repository_path(&lockfile),
        std::fs::read_to_string(&lockfile).ok(),
    );
    // A contract run asks whether behaviour moved: its behavioural
    // findings count, whatever the preset. A call not made is a safety
    // stop, not drift to weigh: no level, ignore or watch list turns it
    // off, and it fails the run.
    let mut policy = toolpin_drift::policy::Policy {
        every_kind: true,
        ..cfg.policy.clone()
    };
    policy.levels.remove(toolpin_contract::run::REFUSED_RULE);
    policy
        .ignore
        .retain(|e| e.rule != toolpin_contract::run::REFUSED_RULE);
    if !policy.watch.is_empty() {
        for r in &observed.refused {
            // Every character literal: the tool's own name, not a glob.
            let literal: String = r.tool_key.chars().flat_map(|c| ['\\', c]).collect();
            policy.watch.extend(toolpin_manifest::Glob::new(&literal));
        }
    }
    let outcome = if !observed.unavailable.is_empty()
        && observed.unavailable.len() == planned_servers(&planned)
    {
        // Nothing was observed: no report to give, only the reason.
        Outcome::Clean
    } else {
        // Opened first: a required ledger that cannot be written is an
        // error before any report is printed.
        let mut recorder = Recorder::open(&cfg, quiet)?;
        let reported = report_judged(
            Sides::SnapshotAndLive,
            comparison,
            (&policy, &cfg.evals),
            &context,
            args,
            style,
        )?;
        let at = toolpin_ops::now();
        let failed = toolpin_ops::contract::contract_sightings(
            &cfg.environment,
            &catalog,
            &reported.comparison,
            &reported.verdict,
            &cfg.vendors,
            at,
        );
        recorder.write(|ledger| {
            toolpin_ops::contract::record_contract_run(
                ledger,
                &cfg.environment,
                failed,
                &judged.called,
                toolpin_ops::deliver::route(&cfg.notify),
                at,
            )
        })?;
        if observed.refused.is_empty() {
            reported.outcome
        } else {
            Outcome::Drift
        }
    };
    report_unavailable(&observed.unavailable)?;
    Ok(outcome)
}

fn planned_servers(planned: &[Planned]) -> usize {
    let mut servers: Vec<&str> = planned.iter().map(|p| p.server.as_str()).collect();
    servers.sort_unstable();
    servers.dedup();
    servers.len()
}
