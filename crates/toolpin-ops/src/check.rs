//! The check pipeline, written once: read the lockfile, capture again,
//! compare, judge by the policy, plan the evals; then write the drift down
//! in the ledger. `toolpin check` renders what it returns between the two
//! steps, `toolpin watch` summarises it, `accept` and `review` decide on
//! its changes.

use toolpin_capture::servers;
use toolpin_drift::policy::Verdict;
use toolpin_drift::Comparison;
use toolpin_evals::Plan;
use toolpin_manifest::{lockfile, Catalog};

use crate::project::Project;
use crate::record::{self, Seen, SightingsRecorded};
use crate::recorder::Recorder;
use crate::Error;

/// What one check saw and what the policy made of it.
pub struct Checked {
    pub pinned: Catalog,
    pub live: Catalog,
    /// The lockfile's text, read with the pin (a report locates its
    /// findings in it).
    pub lockfile_text: Option<String>,
    pub comparison: Comparison,
    pub verdict: Verdict,
    /// The evals the failing findings route to.
    pub plan: Plan,
}

/// Reads the pin, captures the project's servers with `capture`,
/// compares, and judges by the configured policy and evals.
pub fn check(project: &Project, capture: servers::Options) -> Result<Checked, Error> {
    let pinned = lockfile::read(&project.lockfile)?;
    let live = crate::capture::capture_config(&project.config, capture)?;
    // The text (for locating findings) is read after the capture rather
    // than kept from the parse: held through the capture it raised the
    // peak RSS of a 12,000-tool check from 97 to 110 MiB.
    let lockfile_text = std::fs::read_to_string(&project.lockfile).ok();
    let cfg = &project.config;
    let mut comparison = toolpin_drift::compare(&pinned, &live);
    let verdict = cfg.policy.apply(&mut comparison);
    let plan = Plan::new(&verdict, &cfg.evals);
    Ok(Checked {
        pinned,
        live,
        lockfile_text,
        comparison,
        verdict,
        plan,
    })
}

impl Checked {
    /// The check's drift, the servers it saw clean and the events it
    /// resolved, written down in `recorder`'s ledger (with each sighting's
    /// notifications enqueued, not sent: `toolpin watch` delivers the
    /// outbox).
    pub fn record(&self, project: &Project, recorder: &mut Recorder) -> Result<Written, Error> {
        let cfg = &project.config;
        let at = crate::now();
        let seen = record::sightings(
            &Seen {
                environment: &cfg.environment,
                pinned: &self.pinned,
                live: &self.live,
                comparison: &self.comparison,
                verdict: &self.verdict,
                plan: &self.plan,
                vendors: &cfg.vendors,
            },
            at,
        );
        let drifting = seen.drift.len();
        let recorded = recorder.write(|ledger| {
            record::record_check(
                ledger,
                &cfg.environment,
                &self.pinned,
                &self.live,
                seen,
                crate::deliver::route(&cfg.notify),
                at,
            )
        })?;
        Ok(Written { drifting, recorded })
    }
}

/// What recording a check did.
pub struct Written {
    /// Tools (and servers, by their own members) whose drift fails the
    /// policy.
    pub drifting: usize,
    /// What the ledger made of it; `None`: no ledger to write to.
    pub recorded: Option<SightingsRecorded>,
}
