//! `toolpin lock`: capture every configured server and write the lockfile.

use toolpin_capture::servers;
use toolpin_manifest::fs::Replaced;
use toolpin_manifest::{lockfile, Catalog};

use crate::project::Project;
use crate::Error;

/// What locking wrote.
pub struct Locked {
    pub catalog: Catalog,
    /// The lockfile already said the same and was left untouched.
    pub unchanged: bool,
}

/// Captures the project's servers and pins them in its lockfile.
pub fn lock(project: &Project, capture: servers::Options) -> Result<Locked, Error> {
    let catalog = crate::capture::capture_config(&project.config, capture)?;
    let unchanged = lockfile::write(&catalog, &project.lockfile)? == Replaced::Unchanged;
    Ok(Locked { catalog, unchanged })
}
