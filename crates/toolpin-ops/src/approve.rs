//! `accept` and `review`: the pin, a fresh capture and the changes between
//! them; the decisions written into the lockfile, the approvals log and the
//! ledger; and the seen-tools file `accept --seen-tool` adds to.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolpin_approve::{self as approve, Change, Decision, Evidence, Selector};
use toolpin_capture::servers;
use toolpin_drift::policy::Verdict;
use toolpin_drift::{Comparison, Finding};
use toolpin_manifest::Catalog;

use crate::check::Checked;
use crate::project::Project;
use crate::recorder::Recorder;
use crate::Error;

/// What the changes since the pin are, ready to decide on.
pub struct Pending {
    pub project: Project,
    pub checked: Checked,
    pub changes: Vec<Change>,
}

/// What deciding wrote.
pub struct Decided {
    /// The catalog as pinned now.
    pub updated: Catalog,
    /// The addresses of the accepted changes.
    pub accepted: Vec<String>,
    /// How many decisions went into the approvals log.
    pub records: usize,
}

impl Pending {
    /// The check pipeline's pin and capture, and their changes.
    pub fn capture(project: Project, capture: servers::Options) -> Result<Self, Error> {
        let checked = crate::check::check(&project, capture)?;
        let changes = approve::changes(&checked.pinned, &checked.live, &checked.comparison);
        Ok(Self {
            project,
            checked,
            changes,
        })
    }

    pub fn lockfile(&self) -> &Path {
        &self.project.lockfile
    }

    /// `toolpin accept`: pins the changes `selectors` pick, each recorded
    /// with `reason` and the evidence files.
    pub fn accept(
        &self,
        selectors: &[Selector],
        reason: &str,
        evidence: &[PathBuf],
        quiet: bool,
    ) -> Result<Decided, Error> {
        let picked = approve::select(&self.changes, selectors)?;
        let evidence = evidence
            .iter()
            .map(|p| Evidence::read(p, self.lockfile()))
            .collect::<Result<Vec<_>, _>>()?;
        let decisions: Vec<Decision> = picked
            .into_iter()
            .map(|change| Decision {
                change,
                accepted: true,
                reason: Some(reason.to_string()),
                evidence: evidence.clone(),
            })
            .collect();
        self.decide(&decisions, quiet)
    }

    /// Writes `decisions` down: the accepted changes pinned (the lockfile
    /// is left alone when there are none), every decision in the approvals
    /// log, and in the ledger an approval (which resolves the open drift
    /// events of the accepted fingerprint) or a rejection per change.
    pub fn decide(&self, decisions: &[Decision], quiet: bool) -> Result<Decided, Error> {
        let (pinned, live) = (&self.checked.pinned, &self.checked.live);
        let accepted: Vec<&Change> = decisions
            .iter()
            .filter(|d| d.accepted)
            .map(|d| d.change)
            .collect();
        let updated = approve::apply(pinned, live, &accepted)?;
        let stamp = self.stamp(&updated);
        let records: Vec<Value> = decisions
            .iter()
            .map(|d| approve::record(d, &self.checked.comparison, &stamp))
            .collect();
        approve::commit(
            self.lockfile(),
            (!accepted.is_empty()).then_some(&updated),
            &records,
        )?;
        self.record_decisions(decisions, quiet)?;
        Ok(Decided {
            updated,
            accepted: accepted.iter().map(|c| c.address()).collect(),
            records: records.len(),
        })
    }

    fn record_decisions(&self, decisions: &[Decision], quiet: bool) -> Result<(), Error> {
        let cfg = &self.project.config;
        let mut recorder = Recorder::open(cfg, quiet)?;
        let env = cfg.environment.clone();
        let at = crate::now();
        let (pinned, live) = (&self.checked.pinned, &self.checked.live);
        recorder.write(|ledger| {
            for decision in decisions {
                let change = decision.change;
                let vendor = crate::record::vendor_of(&change.server, &cfg.vendors, pinned, live);
                let before = change.before.map(|f| f.to_string());
                let after = change.after.map(|f| f.to_string());
                if decision.accepted {
                    ledger.record_approval(
                        &env,
                        &change.server,
                        &change.tool,
                        before.as_deref(),
                        after.as_deref().unwrap_or(""),
                        vendor.as_deref(),
                        at,
                    )?;
                } else {
                    let mut s = toolpin_ledger::Sighting::new(
                        toolpin_ledger::EventKind::Rejected,
                        &env,
                        &change.server,
                        &change.tool,
                        at,
                    )
                    .fingerprints(before.as_deref(), after.as_deref());
                    if let Some(v) = &vendor {
                        s = s.vendor(v);
                    }
                    ledger.record_drift(&s)?;
                }
            }
            Ok(())
        })?;
        Ok(())
    }

    fn stamp(&self, after: &Catalog) -> approve::Stamp {
        stamp(self.lockfile(), &self.checked.pinned, after)
    }
}

fn stamp(lockfile: &Path, before: &Catalog, after: &Catalog) -> approve::Stamp {
    approve::Stamp {
        author: approve::author(lockfile),
        time: approve::now_utc(),
        environment: before.environment.clone(),
        catalog_before: before.fingerprint(),
        catalog_after: after.fingerprint(),
    }
}

/// One change's findings as a comparison of their own, with what the
/// policy made of each: what `review` shows of it.
pub fn sub_comparison(c: &Comparison, judged: &Verdict, ch: &Change) -> (Comparison, Verdict) {
    let findings: Vec<Finding> = ch
        .findings
        .iter()
        .filter_map(|i| c.findings.get(*i).cloned())
        .collect();
    let mut verdict = Verdict {
        fails: false,
        preset: judged.preset,
        fail_on: judged.fail_on,
        ..Verdict::default()
    };
    for (j, i) in ch.findings.iter().enumerate() {
        if judged.failing.contains(i) {
            verdict.failing.push(j);
        }
        if let Some((_, reason)) = judged.ignored.iter().find(|(k, _)| k == i) {
            verdict.ignored.push((j, reason.clone()));
        }
    }
    verdict.fails = !verdict.failing.is_empty();
    let sub = Comparison {
        findings,
        summary: c.summary.clone(),
        fingerprints: c.fingerprints.clone(),
        tools: Vec::new(),
    };
    (sub, verdict)
}

/// What `accept --seen-tool` wrote.
pub struct Acknowledged {
    /// The seen-tools file.
    pub path: PathBuf,
    /// The names it did not list yet (none: nothing was written).
    pub added: Vec<String>,
}

/// `toolpin accept --seen-tool NAME`: the names go into the seen-tools
/// file beside the lockfile and each gets a record in the approvals log.
/// The file is written first; if the log then cannot be, the file is put
/// back.
pub fn acknowledge_seen_tools(
    lockfile: &Path,
    names: &[String],
    reason: &str,
    evidence: &[PathBuf],
) -> Result<Acknowledged, Error> {
    let pinned = toolpin_manifest::lockfile::read(lockfile)?;
    let path = toolpin_evals::compare::seen::path_for(lockfile);
    let evidence = evidence
        .iter()
        .map(|p| Evidence::read(p, lockfile))
        .collect::<Result<Vec<_>, _>>()?;
    let shown = || toolpin_manifest::text::shown_path(&path);
    let previous = match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::new(format!("cannot read {}: {e}", shown()))),
    };
    let added = toolpin_evals::compare::seen::add(&path, names)?;
    if added.is_empty() {
        return Ok(Acknowledged { path, added });
    }
    let stamp = stamp(lockfile, &pinned, &pinned);
    let records: Vec<Value> = added
        .iter()
        .map(|name| approve::seen_tool_record(name, reason, &evidence, &stamp))
        .collect();
    if let Err(e) = approve::commit(lockfile, None, &records) {
        let restored = match &previous {
            Some(bytes) => toolpin_manifest::fs::write_atomic(&path, bytes),
            None => std::fs::remove_file(&path),
        };
        let note = match restored {
            Ok(()) => String::new(),
            Err(r) => format!(" (and {} could not be restored: {r})", shown()),
        };
        return Err(Error::new(format!("{e}{note}")));
    }
    Ok(Acknowledged { path, added })
}
