//! Contract tests: golden calls against the live tools, derived from the
//! pin (issue 17). This crate holds the first slice:
//!
//! - [`init`]: the starter contracts file from a lockfile's [`Catalog`]
//!   (arguments from each pinned inputSchema, one call per enum value, a
//!   default probe per defaulted parameter), read-only tools only;
//! - [`Contracts`]: the file `toolpin.contracts.toml` beside the lockfile,
//!   parsed with located errors and validated against the lockfile
//!   ([`Contracts::validate`]), and the readiness check `run` will make
//!   first ([`Contracts::check_ready`]).
//!
//! - [`behaviour`]: what a call did ([`behaviour::observe`]), the behaviour
//!   snapshot `toolpin.behaviour.json` that `record` writes, and the
//!   comparison `run` makes ([`behaviour::compare`]) into differences with
//!   their behavioural rule ids.
//!
//! - [`expect`]: the `expect` assertions evaluated on a call's result;
//!   [`formats`]: the built-in value formats they and the snapshot use.
//!
//! - [`run`]: the plan of calls (golden calls and default probes), what
//!   each call did, the snapshot `record` writes and the judgement `run`
//!   makes;
//! - [`report`]: a run's differences as a drift comparison, for the same
//!   policy and report formats as `toolpin check`.
//!
//! The calls are made by `toolpin_capture::call`; this crate never connects.
//! docs/contracts.md is the specification.
//!
//! Pure apart from reading and writing the contracts file and the snapshot:
//! no network, no processes, no printing.

pub mod behaviour;
pub mod derive;
pub mod expect;
pub mod file;
pub mod formats;
mod init;
pub mod report;
pub mod run;

use std::path::{Path, PathBuf};

pub use file::{
    Call, Contract, Contracts, DefaultProbe, Defaults, Error, Expect, SideEffects, Summary,
};
pub use init::{init, Starter};
use toolpin_manifest::Catalog;

/// The contracts file's suffix beside a lockfile: `toolpin.lock` has
/// `toolpin.contracts.toml`, `toolpin.staging.lock` has
/// `toolpin.staging.contracts.toml`.
pub const SUFFIX: &str = "contracts.toml";

/// Where the contracts for `lockfile` live.
pub fn path_for(lockfile: &Path) -> PathBuf {
    toolpin_manifest::lockfile::sibling(lockfile, SUFFIX)
}

/// Writes a starter file to `path` atomically. An existing file is kept
/// unless `force`.
pub fn write(path: &Path, text: &str, force: bool) -> Result<(), Error> {
    let shown = path.display();
    match std::fs::symlink_metadata(path) {
        Ok(_) if !force => {
            return Err(Error::new(format!(
                "{shown} already exists; edit it, or pass --force to replace it with fresh starter contracts"
            )))
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::new(format!("cannot read {shown}: {e}"))),
    }
    toolpin_manifest::fs::write_atomic(path, text.as_bytes())
        .map_err(|e| Error::new(format!("cannot write {shown}: {e}")))
}

/// Reads and parses the contracts file at `path`.
pub fn read(path: &Path) -> Result<Contracts, Error> {
    let shown = path.display().to_string();
    let text = match std::fs::read(path) {
        Ok(bytes) => {
            String::from_utf8(bytes).map_err(|_| Error::new(format!("{shown}: not UTF-8 text")))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::new(format!(
                "{shown} not found; run `toolpin contract init` to create it"
            )))
        }
        Err(e) => return Err(Error::new(format!("cannot read {shown}: {e}"))),
    };
    Contracts::parse(&text, &shown)
}

/// Reads the contracts file at `path` and validates it against `catalog`.
pub fn check(
    path: &Path,
    catalog: &Catalog,
    lockfile: &str,
) -> Result<(Contracts, Summary), Error> {
    let contracts = read(path)?;
    let summary = contracts.validate(catalog, lockfile)?;
    Ok((contracts, summary))
}
