//! `toolpin contract record` and `run`: the planned calls made against the
//! live servers, then the behaviour written down (`record`) or judged
//! against the recorded snapshot (`run`).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::OnceLock;

use toolpin_contract::behaviour::{self, Snapshot};
use toolpin_contract::run::{Gate, Judge, Planned, Refusal};
use toolpin_contract::Contracts;
use toolpin_drift::policy::{Policy, Verdict};
use toolpin_drift::Comparison;
use toolpin_evals::Plan;
use toolpin_manifest::Catalog;

use super::observe::{observe_all, Observed};
use crate::project::Project;
use crate::recorder::Recorder;
use crate::Error;

/// A project's contracts, checked and ready to call.
pub struct Loaded {
    pub project: Project,
    pub catalog: Catalog,
    pub contracts: Contracts,
}

impl Loaded {
    /// Reads the pin and its contract file, which must be ready (no
    /// placeholder left to fill in).
    pub fn load(project: Project) -> Result<Self, Error> {
        let catalog = project.read_lockfile()?;
        let lockfile = &project.lockfile;
        let path = toolpin_contract::path_for(lockfile);
        let (contracts, _) =
            toolpin_contract::check(&path, &catalog, &lockfile.display().to_string())?;
        contracts.check_ready()?;
        Ok(Self {
            project,
            catalog,
            contracts,
        })
    }

    /// The behaviour snapshot beside the lockfile.
    pub fn snapshot_path(&self) -> PathBuf {
        behaviour::path_for(&self.project.lockfile)
    }
}

/// What `contract record` did.
pub enum Recording {
    /// Tools were not called (each said on stderr): nothing was written.
    Refused(usize),
    /// The snapshot was written.
    Written {
        snapshot: Snapshot,
        /// Default probes recorded as not holding.
        notes: Vec<String>,
    },
}

/// Makes the planned calls and writes what they did as the behaviour
/// snapshot; the open contract failures of the tools recorded are then
/// accepted in the ledger. A server that could not be reached is an error.
pub fn record(loaded: &Loaded, quiet: bool) -> Result<Recording, Error> {
    let Loaded {
        project,
        catalog,
        contracts,
    } = loaded;
    let planned = toolpin_contract::run::plan(contracts);
    let gate = Gate::new(contracts, catalog);
    // Nothing judges what record sees: each result is dropped once
    // observed, never held until the snapshot is written.
    let observed = observe_all(
        &project.config,
        &planned,
        contracts.defaults.concurrency,
        &gate,
        false,
        &|_, _| None,
    );
    // A tool that was not called has no behaviour to record: the snapshot
    // is left as it was, and the run fails.
    report_refused(&planned, &observed.refused);
    unavailable(&observed.unavailable)?;
    if !observed.refused.is_empty() {
        return Ok(Recording::Refused(observed.refused.len()));
    }
    let (snapshot, notes) = toolpin_contract::run::snapshot(&planned, &observed.seen);
    let cfg = &project.config;
    let mut recorder = Recorder::open(cfg, quiet)?;
    snapshot.write(&loaded.snapshot_path())?;
    // The behaviour is the reference now: its recorded failures are
    // accepted.
    let recorded: BTreeSet<String> = planned.iter().map(|p| p.tool_key.clone()).collect();
    recorder.write(|ledger| {
        super::record_rerecorded(ledger, &cfg.environment, &recorded, crate::now())
    })?;
    Ok(Recording::Written { snapshot, notes })
}

/// What `contract run` saw, judged.
pub struct Ran {
    /// Tools called that the snapshot does not hold.
    pub unrecorded: Vec<String>,
    /// The differences from the snapshot as drift, judged by the run's
    /// policy; `None` when no server could be reached.
    pub judged: Option<Judged>,
    /// `server/tool` of every call made.
    pub called: BTreeSet<String>,
    pub refused: Vec<Refusal>,
    /// `server "x": why`, one per server that could not be reached.
    pub unavailable: Vec<String>,
}

/// A run's differences, judged.
pub struct Judged {
    pub comparison: Comparison,
    pub verdict: Verdict,
    pub plan: Plan,
}

/// Makes the planned calls and judges each against the snapshot. The
/// snapshot is read and checked while the servers start, and each call is
/// judged as it arrives once it is: the run then adds little wall time to
/// the calls themselves (docs/performance.md).
pub fn run(loaded: &Loaded) -> Result<Ran, Error> {
    let Loaded {
        project,
        catalog,
        contracts,
    } = loaded;
    let path = loaded.snapshot_path();
    if std::fs::symlink_metadata(&path).is_err() {
        // No snapshot: said before any call is made.
        Snapshot::read(&path)?;
    }
    let planned = toolpin_contract::run::plan(contracts);
    let snapshot: OnceLock<Result<Snapshot, toolpin_contract::Error>> = OnceLock::new();
    let judge: OnceLock<Judge> = OnceLock::new();
    let gate = Gate::new(contracts, catalog);
    let observed = std::thread::scope(|scope| {
        scope.spawn(|| {
            if let Ok(s) = snapshot.get_or_init(|| Snapshot::read(&path)) {
                let _ = judge.set(Judge::new(contracts, catalog, s));
            }
        });
        observe_all(
            &project.config,
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
            _ => Err(Error::new(format!("cannot read {}", path.display()))),
        };
    };
    let Observed {
        seen,
        judged,
        unavailable,
        refused,
    } = observed;
    let snapshot_fingerprint = judge.snapshot_fingerprint().to_string();
    let judged = judge.finish(&planned, &seen, judged, &refused);
    let comparison = toolpin_contract::report::comparison(
        &judged.differences,
        &judged.called,
        &snapshot_fingerprint,
        &judged.fingerprint,
    );
    // Nothing was observed: no report to give, only the reason.
    let nothing = !unavailable.is_empty() && unavailable.len() == planned_servers(&planned);
    let judgement = (!nothing).then(|| {
        let cfg = &project.config;
        let mut comparison = comparison;
        let verdict = policy(&cfg.policy, &refused).apply(&mut comparison);
        let plan = Plan::new(&verdict, &cfg.evals);
        Judged {
            comparison,
            verdict,
            plan,
        }
    });
    Ok(Ran {
        unrecorded: judged.unrecorded,
        judged: judgement,
        called: judged.called,
        refused,
        unavailable,
    })
}

/// A contract run asks whether behaviour moved: its behavioural findings
/// count, whatever the preset. A call not made is a safety stop, not drift
/// to weigh: no level, ignore or watch list turns it off, and it fails the
/// run.
fn policy(configured: &Policy, refused: &[Refusal]) -> Policy {
    let mut policy = Policy {
        every_kind: true,
        ..configured.clone()
    };
    policy.levels.remove(toolpin_contract::run::REFUSED_RULE);
    policy
        .ignore
        .retain(|e| e.rule != toolpin_contract::run::REFUSED_RULE);
    if !policy.watch.is_empty() {
        for r in refused {
            // Every character literal: the tool's own name, not a glob.
            let literal: String = r.tool_key.chars().flat_map(|c| ['\\', c]).collect();
            policy.watch.extend(toolpin_manifest::Glob::new(&literal));
        }
    }
    policy
}

impl Ran {
    /// Whether the run fails: its judged drift, or a call not made.
    pub fn fails(&self) -> bool {
        self.judged
            .as_ref()
            .is_some_and(|j| j.verdict.fails || !self.refused.is_empty())
    }

    /// Writes the run's failures down in `recorder`'s ledger and resolves
    /// the failures of the tools that behaved as recorded again.
    pub fn record(&self, loaded: &Loaded, recorder: &mut Recorder) -> Result<(), Error> {
        let Some(judged) = &self.judged else {
            return Ok(());
        };
        let cfg = &loaded.project.config;
        let at = crate::now();
        let failed = super::contract_sightings(
            &cfg.environment,
            &loaded.catalog,
            &judged.comparison,
            &judged.verdict,
            &cfg.vendors,
            at,
        );
        recorder.write(|ledger| {
            super::record_contract_run(
                ledger,
                &cfg.environment,
                failed,
                &self.called,
                crate::deliver::route(&cfg.notify),
                at,
            )
        })?;
        Ok(())
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

/// Says on stderr which servers could not be reached, one line each; any
/// is an error.
pub fn unavailable(unavailable: &[String]) -> Result<(), Error> {
    if unavailable.is_empty() {
        return Ok(());
    }
    for line in unavailable {
        eprintln!("unavailable: {line}");
    }
    let n = unavailable.len();
    Err(Error::new(format!(
        "{n} server{} unavailable; no behaviour was compared for {}",
        if n == 1 { "" } else { "s" },
        if n == 1 { "it" } else { "them" }
    )))
}

fn planned_servers(planned: &[Planned]) -> usize {
    let mut servers: Vec<&str> = planned.iter().map(|p| p.server.as_str()).collect();
    servers.sort_unstable();
    servers.dedup();
    servers.len()
}
