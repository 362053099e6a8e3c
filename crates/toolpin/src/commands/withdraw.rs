//! `toolpin withdraw` and `toolpin restore`: the flags file that running
//! proxies reload.

use super::{lockfile_path, Outcome};
use crate::cli::ConfigArgs;
use crate::error::CliError;
use crate::{approve, proxy};

pub fn withdraw(
    config: &ConfigArgs,
    tool: &str,
    reason: &str,
    quiet: bool,
) -> Result<Outcome, CliError> {
    let lockfile = lockfile_path(config)?;
    let flags = proxy::set_withdrawn(&lockfile, tool, Some(reason), approve::author(&lockfile))?;
    if !quiet {
        eprintln!(
            "Withdrew {tool} ({flags}); running proxies drop it within a second, or on SIGHUP"
        );
    }
    Ok(Outcome::Clean)
}

pub fn restore(config: &ConfigArgs, tool: &str, quiet: bool) -> Result<Outcome, CliError> {
    let lockfile = lockfile_path(config)?;
    let flags = proxy::set_withdrawn(&lockfile, tool, None, String::new())?;
    if !quiet {
        eprintln!("Restored {tool} ({flags}); running proxies serve it again within a second");
    }
    Ok(Outcome::Clean)
}
