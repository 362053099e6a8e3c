//! A command's settings, resolved once (uv's `LockSettings::resolve` is the
//! model): the configuration with its environment's overrides, and the
//! lockfile it pins to (`--lockfile`, else the configuration's).

use std::path::{Path, PathBuf};

use toolpin_manifest::{lockfile, Catalog};

use crate::settings::Config;
use crate::Error;

/// The configuration and the lockfile of one command.
pub struct Project {
    pub config: Config,
    pub lockfile: PathBuf,
}

impl Project {
    /// Reads the configuration at `config` (with `[env.NAME]` overrides);
    /// `lockfile` given wins over the configured one.
    pub fn load(config: &Path, env: Option<&str>, lockfile: Option<&Path>) -> Result<Self, Error> {
        let config = crate::settings::load(config, env)?;
        let lockfile = match lockfile {
            Some(p) => p.to_path_buf(),
            None => config.default_lockfile(),
        };
        Ok(Self { config, lockfile })
    }

    /// The pinned catalog (an absent lockfile says to run `toolpin lock`).
    pub fn read_lockfile(&self) -> Result<Catalog, Error> {
        Ok(lockfile::read(&self.lockfile)?)
    }
}

/// The lockfile alone: `lockfile` given (no configuration is read), else
/// the one the configuration names.
pub fn lockfile_path(
    config: &Path,
    env: Option<&str>,
    lockfile: Option<&Path>,
) -> Result<PathBuf, Error> {
    match lockfile {
        Some(p) => Ok(p.to_path_buf()),
        None => Ok(Project::load(config, env, None)?.lockfile),
    }
}
