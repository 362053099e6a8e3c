//! `toolpin contract init`, `check`, `record` and `run`: the CLI side of
//! `toolpin-contract`, which owns the file, the derivation, the checks and
//! the behaviour snapshot; the calls are made by `toolpin_capture::call`.

use std::collections::BTreeMap;
use std::time::Duration;

use toolpin_capture::call;
use toolpin_contract::behaviour::{self, Class, Observation, Outcome as CallOutcome, Snapshot};
use toolpin_contract::Contracts;

use super::{lockfile_path, plural, print, Outcome};
use crate::cli::{ConfigArgs, ContractCommand};
use crate::error::CliError;

pub fn run(command: &ContractCommand, quiet: bool) -> Result<Outcome, CliError> {
    match command {
        ContractCommand::Init { force, config } => init(config, *force, quiet),
        ContractCommand::Check { config } => check(config, quiet),
        ContractCommand::Record { config } => record(config, quiet),
        ContractCommand::Run { config } => run_calls(config, quiet),
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

/// Every call's observation, keyed `server/tool#call`, from the live servers.
struct Observed {
    calls: BTreeMap<String, Observation>,
    /// Each call's first successful result (not an `isError` one).
    payloads: BTreeMap<String, serde_json::Value>,
    /// `server "x": why`, one per server that could not be reached.
    unavailable: Vec<String>,
}

/// What one call is: its key, the tool it calls, its arguments, timeout and
/// repeats, and the contract's volatile pointers.
struct Planned {
    key: String,
    server: String,
    tool: String,
    arguments: serde_json::Map<String, serde_json::Value>,
    timeout_ms: u64,
    repeats: u64,
    volatile: behaviour::Volatile,
}

fn load(
    config: &ConfigArgs,
) -> Result<(std::path::PathBuf, crate::config::Config, Contracts), CliError> {
    let cfg = crate::config::load(&config.config, config.env.as_deref())?;
    let lockfile = match &config.lockfile {
        Some(p) => p.clone(),
        None => cfg.default_lockfile(),
    };
    let catalog = super::read_lockfile(&lockfile)?;
    let path = toolpin_contract::path_for(&lockfile);
    let (contracts, _) = toolpin_contract::check(&path, &catalog, &lockfile.display().to_string())?;
    contracts.check_ready()?;
    Ok((lockfile, cfg, contracts))
}

fn plan(contracts: &Contracts) -> Vec<Planned> {
    let mut out = Vec::new();
    for contract in contracts.tools.iter().filter(|c| c.enabled) {
        let Some((server, tool)) = contract.key.split_once('/') else {
            continue;
        };
        for call in contract.calls.iter().filter(|c| c.enabled) {
            out.push(Planned {
                key: format!("{}#{}", contract.key, call.name),
                server: server.to_string(),
                tool: tool.to_string(),
                arguments: contract.call_arguments(call),
                timeout_ms: call.timeout_ms,
                repeats: call.repeats.clamp(1, toolpin_contract::file::MAX_REPEATS),
                volatile: contract.volatile_values(),
            });
        }
    }
    out
}

fn observe_all(cfg: &crate::config::Config, planned: &[Planned]) -> Observed {
    let mut calls = BTreeMap::new();
    let mut payloads = BTreeMap::new();
    let mut unavailable = Vec::new();
    for server in &cfg.servers {
        let mine: Vec<&Planned> = planned.iter().filter(|p| p.server == server.name).collect();
        if mine.is_empty() {
            continue;
        }
        let prefix = server.transform.prefix.as_str();
        let mut requests = Vec::new();
        for p in &mine {
            let tool = p.tool.strip_prefix(prefix).unwrap_or(&p.tool).to_string();
            for _ in 0..p.repeats {
                requests.push(call::Request {
                    tool: tool.clone(),
                    arguments: p.arguments.clone(),
                    timeout: Duration::from_millis(p.timeout_ms),
                });
            }
        }
        let answers = match call::call_server(server, &requests) {
            Ok(a) => a,
            Err(why) => {
                unavailable.push(format!("server {:?}: {why}", server.name));
                continue;
            }
        };
        let mut answers = answers.into_iter();
        for p in mine {
            let outcomes: Vec<(CallOutcome, f64)> = answers
                .by_ref()
                .take(p.repeats as usize)
                .map(|a| {
                    let ms = a.latency.as_secs_f64() * 1000.0;
                    let outcome = match a.result {
                        Ok(v) => CallOutcome::Result(v),
                        Err(call::Failure::Rpc { code, message }) => {
                            CallOutcome::Error(Class::of_error(Some(code), None, &message))
                        }
                        Err(call::Failure::Http { status, message }) => {
                            CallOutcome::Error(Class::of_error(None, Some(status), &message))
                        }
                        Err(call::Failure::Timeout) => CallOutcome::Error(Class::Timeout),
                        Err(call::Failure::Transport(m)) => {
                            CallOutcome::Error(Class::of_error(None, None, &m))
                        }
                    };
                    (outcome, ms)
                })
                .collect();
            if let Some(CallOutcome::Result(r)) = outcomes.iter().map(|(o, _)| o).find(
                |o| matches!(o, CallOutcome::Result(r) if r.get("isError") != Some(&serde_json::Value::Bool(true))),
            ) {
                payloads.insert(p.key.clone(), r.clone());
            }
            calls.insert(p.key.clone(), behaviour::observe(&outcomes, &p.volatile));
        }
    }
    Observed {
        calls,
        payloads,
        unavailable,
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
    let (lockfile, cfg, contracts) = load(config)?;
    let planned = plan(&contracts);
    let observed = observe_all(&cfg, &planned);
    report_unavailable(&observed.unavailable)?;
    let path = behaviour::path_for(&lockfile);
    let snapshot = Snapshot::new(observed.calls);
    snapshot.write(&path)?;
    if !quiet {
        eprintln!(
            "Wrote {}: {}",
            path.display(),
            plural(snapshot.calls.len(), "call")
        );
    }
    Ok(Outcome::Clean)
}

fn run_calls(config: &ConfigArgs, quiet: bool) -> Result<Outcome, CliError> {
    let (lockfile, cfg, contracts) = load(config)?;
    let catalog = super::read_lockfile(&lockfile)?;
    let path = behaviour::path_for(&lockfile);
    let snapshot = Snapshot::read(&path)?;
    let planned = plan(&contracts);
    let observed = observe_all(&cfg, &planned);
    let mut differences = Vec::new();
    for (key, now) in &observed.calls {
        match snapshot.calls.get(key) {
            Some(recorded) => differences.extend(behaviour::compare(key, recorded, now)),
            None => {
                if !quiet {
                    eprintln!(
                        "note: {key} is not in {}; run `toolpin contract record`",
                        path.display()
                    );
                }
            }
        }
    }
    for contract in contracts.tools.iter().filter(|c| c.enabled) {
        for call in contract.calls.iter().filter(|c| c.enabled) {
            let key = format!("{}#{}", contract.key, call.name);
            let output_schema = toolpin_contract::expect::output_schema(&catalog, &contract.key);
            differences.extend(behaviour::check_expect(
                &key,
                &call.expect,
                observed.calls.get(&key).and_then(|o| o.class),
                observed.payloads.get(&key),
                output_schema.as_ref(),
            ));
            if let (Some(now), Some(budget)) = (observed.calls.get(&key), &call.expect.latency) {
                let budget = budget.get_ref();
                differences.extend(behaviour::over_budget(
                    &key,
                    now,
                    budget.p50_ms.as_ref().map(|s| *s.get_ref()),
                    budget.p95_ms.as_ref().map(|s| *s.get_ref()),
                ));
            }
        }
    }
    let mut text = String::new();
    for d in &differences {
        text += &format!("{}: {}: {}\n", d.rule, d.call, d.message);
    }
    if !quiet || !differences.is_empty() {
        text += &format!(
            "{}, {}\n",
            plural(observed.calls.len(), "call"),
            match differences.len() {
                0 => "no behavioural findings".to_string(),
                n => plural(n, "behavioural finding"),
            }
        );
    }
    print(&text)?;
    report_unavailable(&observed.unavailable)?;
    Ok(if differences.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Drift
    })
}
