//! `toolpin withdraw` and `toolpin restore`: the flags file that running
//! proxies reload, and the withdrawal or restore in the ledger.

use std::path::Path;

use toolpin_ledger::EventKind;
use toolpin_proxy::flags::{self, Flags, Withdrawal};

use crate::project::Project;
use crate::recorder::Recorder;
use crate::Error;

/// Withdraws `tool` (`server/tool`) with `reason` by `author`, or restores
/// it (`reason` `None`), in the flags file beside `lockfile`, and writes it
/// down in `project`'s ledger (none without a readable configuration: a
/// bare `--lockfile`). Returns the flags file as shown.
pub fn withdraw(
    project: Option<&Project>,
    lockfile: &Path,
    tool: &str,
    reason: Option<&str>,
    quiet: bool,
) -> Result<String, Error> {
    let (author, kind) = match reason {
        Some(_) => (toolpin_approve::author(lockfile), EventKind::Withdrawn),
        None => (String::new(), EventKind::Restored),
    };
    let flags = set_withdrawn(lockfile, tool, reason, author)?;
    record(project, lockfile, tool, kind, quiet)?;
    Ok(flags)
}

/// Writes a withdrawal or restore of `tool` (`server/tool`) down in the
/// configuration's ledger. Without a readable configuration (a bare
/// `--lockfile`), there is no ledger to write to.
fn record(
    project: Option<&Project>,
    lockfile: &Path,
    tool: &str,
    kind: EventKind,
    quiet: bool,
) -> Result<(), Error> {
    let Some(cfg) = project.map(|p| &p.config) else {
        return Ok(());
    };
    let Some((server, name)) = tool.split_once('/') else {
        return Ok(());
    };
    let pinned = toolpin_manifest::lockfile::read(lockfile).ok();
    let fingerprint = pinned
        .as_ref()
        .and_then(|p| p.servers.get(server)?.tools.get(name))
        .map(|t| t.fingerprint.to_string());
    let mut sighting =
        toolpin_ledger::Sighting::new(kind, &cfg.environment, server, name, crate::now())
            .fingerprints(fingerprint.as_deref(), fingerprint.as_deref());
    let vendor = cfg.vendors.get(server).cloned().or_else(|| {
        pinned
            .as_ref()
            .and_then(|p| crate::record::server_info(p, server, "name"))
    });
    if let Some(v) = &vendor {
        sighting = sighting.vendor(v);
    }
    let mut recorder = Recorder::open(cfg, quiet)?;
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
) -> Result<String, Error> {
    let pinned = toolpin_manifest::lockfile::read(lockfile)?;
    let known = tool
        .split_once('/')
        .and_then(|(s, t)| pinned.servers.get(s)?.tools.get(t))
        .is_some();
    let path = flags::path_for(lockfile);
    let mut flags = Flags::read(&path).map_err(Error::new)?;
    match reason {
        Some(reason) => {
            if !known {
                return Err(Error::new(format!(
                    "{tool}: no such pinned tool in {} (name it as server/tool)",
                    lockfile.display()
                )));
            }
            let reason = reason.trim();
            if reason.is_empty() {
                return Err(Error::new("--reason must say why the tool is withdrawn"));
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
                return Err(Error::new(format!(
                    "{tool} is not withdrawn in {}",
                    path.display()
                )));
            }
        }
    }
    flags.write(&path).map_err(Error::new)?;
    Ok(path.display().to_string())
}
