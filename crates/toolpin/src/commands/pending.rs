//! The pin, a fresh capture, and the changes between them: what `accept`
//! and `review` decide on.

use std::path::PathBuf;

use toolpin_manifest::Catalog;

use crate::approve;
use crate::cli::ConfigArgs;
use crate::config;
use crate::error::CliError;

pub struct Pending {
    pub lockfile: PathBuf,
    pub pinned: Catalog,
    pub live: Catalog,
    pub comparison: toolpin_drift::Comparison,
    pub verdict: toolpin_drift::policy::Verdict,
    pub changes: Vec<approve::Change>,
    pub config: config::Config,
}

impl Pending {
    pub fn capture(args: &ConfigArgs, quiet: bool) -> Result<Self, CliError> {
        let cfg = config::load(&args.config, args.env.as_deref())?;
        let lockfile = args
            .lockfile
            .clone()
            .unwrap_or_else(|| cfg.default_lockfile());
        let pinned = super::read_lockfile(&lockfile)?;
        let live = super::capture_config(&cfg, args.capture_options(quiet))?;
        let mut comparison = toolpin_drift::compare(&pinned, &live);
        let verdict = cfg.policy.apply(&mut comparison);
        let changes = approve::changes(&pinned, &live, &comparison);
        Ok(Self {
            lockfile,
            pinned,
            live,
            comparison,
            verdict,
            changes,
            config: cfg,
        })
    }

    /// Writes the decisions down in the ledger: an approval (which resolves
    /// the open drift events of the accepted fingerprint) or a rejection
    /// per change.
    pub fn record_decisions(
        &self,
        decisions: &[(&approve::Change, bool)],
        quiet: bool,
    ) -> Result<(), CliError> {
        let mut recorder = super::ledger::Recorder::open(&self.config, quiet)?;
        let env = self.config.environment.clone();
        let at = toolpin_ops::now();
        recorder.write(|ledger| {
            for (change, accepted) in decisions {
                let vendor = toolpin_ops::record::vendor_of(
                    &change.server,
                    &self.config.vendors,
                    &self.pinned,
                    &self.live,
                );
                let before = change.before.map(|f| f.to_string());
                let after = change.after.map(|f| f.to_string());
                if *accepted {
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

    pub fn stamp(&self, after: &Catalog) -> approve::Stamp {
        approve::Stamp {
            author: approve::author(&self.lockfile),
            time: approve::now_utc(),
            environment: self.pinned.environment.clone(),
            catalog_before: self.pinned.fingerprint(),
            catalog_after: after.fingerprint(),
        }
    }
}
