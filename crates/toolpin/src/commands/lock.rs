//! `toolpin lock`: capture every configured server and write the lockfile
//! (`toolpin_ops::lock`).

use super::{display, Outcome};
use crate::cli::ConfigArgs;
use crate::error::CliError;

pub fn run(args: &ConfigArgs, quiet: bool) -> Result<Outcome, CliError> {
    let project = args.resolve()?;
    let path = &project.lockfile;
    let locked = toolpin_ops::lock::lock(&project, args.capture_options(quiet))?;
    let (catalog, unchanged) = (&locked.catalog, locked.unchanged);
    if !quiet {
        eprintln!(
            "{} {} tool{} from {} server{} in {} ({})",
            if unchanged { "Unchanged:" } else { "Pinned" },
            catalog.tool_count(),
            if catalog.tool_count() == 1 { "" } else { "s" },
            catalog.servers.len(),
            if catalog.servers.len() == 1 { "" } else { "s" },
            display(path),
            catalog.fingerprint().release_line(),
        );
    }
    Ok(Outcome::Clean)
}
