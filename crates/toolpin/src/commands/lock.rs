//! `toolpin lock`: capture every configured server and write the lockfile.

use toolpin_manifest::lockfile;

use super::{display, Outcome};
use crate::cli::ConfigArgs;
use crate::config;
use crate::error::CliError;

pub fn run(args: &ConfigArgs, quiet: bool) -> Result<Outcome, CliError> {
    let cfg = config::load(&args.config, args.env.as_deref())?;
    let path = args
        .lockfile
        .clone()
        .unwrap_or_else(|| cfg.default_lockfile());
    let catalog = super::capture_config(&cfg, args.capture_options(quiet))?;
    let unchanged = lockfile::write(&catalog, &path).map_err(|e| CliError::new(e.to_string()))?
        == toolpin_manifest::fs::Replaced::Unchanged;
    if !quiet {
        eprintln!(
            "{} {} tool{} from {} server{} in {} ({})",
            if unchanged { "Unchanged:" } else { "Pinned" },
            catalog.tool_count(),
            if catalog.tool_count() == 1 { "" } else { "s" },
            catalog.servers.len(),
            if catalog.servers.len() == 1 { "" } else { "s" },
            display(&path),
            catalog.fingerprint().release_line(),
        );
    }
    Ok(Outcome::Clean)
}
