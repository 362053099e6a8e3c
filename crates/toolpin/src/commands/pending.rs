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
        })
    }

    pub fn stamp(&self, after: &Catalog) -> approve::Stamp {
        approve::Stamp {
            author: approve::author(&self.lockfile),
            time: approve::now_utc(),
            environment: self.pinned.environment.clone(),
            catalog_before: self.pinned.fingerprint,
            catalog_after: after.fingerprint,
        }
    }
}
