//! `toolpin withdraw` and `toolpin restore`: the flags file that running
//! proxies reload (`toolpin_ops::withdraw`).

use super::Outcome;
use crate::cli::ConfigArgs;
use crate::error::CliError;

pub fn withdraw(
    config: &ConfigArgs,
    tool: &str,
    reason: &str,
    quiet: bool,
) -> Result<Outcome, CliError> {
    let lockfile = config.lockfile_path()?;
    let project = config.resolve().ok();
    let flags =
        toolpin_ops::withdraw::withdraw(project.as_ref(), &lockfile, tool, Some(reason), quiet)?;
    if !quiet {
        eprintln!(
            "Withdrew {tool} ({flags}); running proxies drop it within a second, or on SIGHUP"
        );
    }
    Ok(Outcome::Clean)
}

pub fn restore(config: &ConfigArgs, tool: &str, quiet: bool) -> Result<Outcome, CliError> {
    let lockfile = config.lockfile_path()?;
    let project = config.resolve().ok();
    let flags = toolpin_ops::withdraw::withdraw(project.as_ref(), &lockfile, tool, None, quiet)?;
    if !quiet {
        eprintln!("Restored {tool} ({flags}); running proxies serve it again within a second");
    }
    Ok(Outcome::Clean)
}
