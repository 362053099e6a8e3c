//! `toolpin withdraw` and `toolpin restore`: the flags file that running
//! proxies reload.

use std::path::Path;

use toolpin_proxy::flags::{self, Flags, Withdrawal};

use super::{lockfile_path, Outcome};
use crate::approve;
use crate::cli::ConfigArgs;
use crate::error::CliError;

pub fn withdraw(
    config: &ConfigArgs,
    tool: &str,
    reason: &str,
    quiet: bool,
) -> Result<Outcome, CliError> {
    let lockfile = lockfile_path(config)?;
    let flags = set_withdrawn(&lockfile, tool, Some(reason), approve::author(&lockfile))?;
    record(
        config,
        &lockfile,
        tool,
        toolpin_ledger::EventKind::Withdrawn,
        quiet,
    )?;
    if !quiet {
        eprintln!(
            "Withdrew {tool} ({flags}); running proxies drop it within a second, or on SIGHUP"
        );
    }
    Ok(Outcome::Clean)
}

pub fn restore(config: &ConfigArgs, tool: &str, quiet: bool) -> Result<Outcome, CliError> {
    let lockfile = lockfile_path(config)?;
    let flags = set_withdrawn(&lockfile, tool, None, String::new())?;
    record(
        config,
        &lockfile,
        tool,
        toolpin_ledger::EventKind::Restored,
        quiet,
    )?;
    if !quiet {
        eprintln!("Restored {tool} ({flags}); running proxies serve it again within a second");
    }
    Ok(Outcome::Clean)
}

/// Writes a withdrawal or restore of `tool` (`server/tool`) down in the
/// configuration's ledger. Without a readable configuration (a bare
/// `--lockfile`), there is no ledger to write to.
fn record(
    args: &ConfigArgs,
    lockfile: &Path,
    tool: &str,
    kind: toolpin_ledger::EventKind,
    quiet: bool,
) -> Result<(), CliError> {
    let Ok(cfg) = crate::config::load(&args.config, args.env.as_deref()) else {
        return Ok(());
    };
    let Some((server, name)) = tool.split_once('/') else {
        return Ok(());
    };
    let pinned = super::read_lockfile(lockfile).ok();
    let fingerprint = pinned
        .as_ref()
        .and_then(|p| p.servers.get(server)?.tools.get(name))
        .map(|t| t.fingerprint.to_string());
    let mut sighting =
        toolpin_ledger::Sighting::new(kind, &cfg.environment, server, name, toolpin_ops::now())
            .fingerprints(fingerprint.as_deref(), fingerprint.as_deref());
    let vendor = cfg.vendors.get(server).cloned().or_else(|| {
        pinned
            .as_ref()
            .and_then(|p| toolpin_ops::record::server_info(p, server, "name"))
    });
    if let Some(v) = &vendor {
        sighting = sighting.vendor(v);
    }
    let mut recorder = super::ledger::Recorder::open(&cfg, quiet)?;
    recorder.write(|ledger| ledger.record_drift(&sighting))?;
    Ok(())
}

/// Withdraws `tool` (with a reason) or restores it (without) in the flags
/// file beside the lockfile; returns the flags file as shown.
fn set_withdrawn(
    lockfile: &Path,
    tool: &str,
    reason: Option<&str>,
    author: String,
) -> Result<String, CliError> {
    let pinned = super::read_lockfile(lockfile)?;
    let known = tool
        .split_once('/')
        .and_then(|(s, t)| pinned.servers.get(s)?.tools.get(t))
        .is_some();
    let path = flags::path_for(lockfile);
    let mut flags = Flags::read(&path).map_err(CliError::new)?;
    match reason {
        Some(reason) => {
            if !known {
                return Err(CliError::new(format!(
                    "{tool}: no such pinned tool in {} (name it as server/tool)",
                    lockfile.display()
                )));
            }
            let reason = reason.trim();
            if reason.is_empty() {
                return Err(CliError::new("--reason must say why the tool is withdrawn"));
            }
            flags.withdrawn.insert(
                tool.to_string(),
                Withdrawal {
                    reason: reason.to_string(),
                    by: Some(author),
                    at: Some(toolpin_manifest::time::now_utc()),
                },
            );
        }
        None => {
            if flags.withdrawn.remove(tool).is_none() {
                return Err(CliError::new(format!(
                    "{tool} is not withdrawn in {}",
                    path.display()
                )));
            }
        }
    }
    flags.write(&path).map_err(CliError::new)?;
    Ok(path.display().to_string())
}
