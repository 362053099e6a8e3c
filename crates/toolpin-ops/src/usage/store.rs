//! The usage store `toolpin usage` reads and writes: `--store`, else the
//! configured ledger, else a file beside the configuration.

use std::path::{Path, PathBuf};

use crate::settings::Config;
use toolpin_config::ledger::LedgerLocation;
use toolpin_ledger::Ledger;

use crate::Error;

/// The store's file beside the configuration when the ledger is off.
const STORE_FILE: &str = "toolpin.usage.db";

/// The usage store, opened.
pub struct Store {
    pub ledger: Ledger,
    /// The store as shown: its path, or a URL's stand-in.
    pub shown: String,
    secrets: Vec<(String, String)>,
}

impl Store {
    pub fn err(&self, e: toolpin_ledger::Error) -> Error {
        Error::new(format!(
            "usage store {}: {}",
            self.shown,
            toolpin_config::expand::redact(&e.to_string(), &self.secrets)
        ))
    }
}

/// Where the store is: `--store`, else the ledger, else a file beside the
/// configuration. `must_exist`: a SQLite file that is not there is an
/// error (reading it would create an empty store and hide a wrong path).
pub fn open_store(
    store: Option<&str>,
    cfg: Option<&Config>,
    must_exist: bool,
) -> Result<Store, Error> {
    let (location, shown, secrets) = match (store, cfg) {
        (Some(s), _) if s.starts_with("postgres://") || s.starts_with("postgresql://") => (
            LedgerLocation::Postgres(s.to_string()),
            "(the --store URL)".to_string(),
            Vec::new(),
        ),
        (Some(s), _) => (
            LedgerLocation::Sqlite(PathBuf::from(s)),
            s.to_string(),
            Vec::new(),
        ),
        (None, Some(cfg)) => match &cfg.ledger.location {
            Some(location) => (
                location.clone(),
                cfg.ledger.shown.clone(),
                cfg.ledger.secrets.clone(),
            ),
            None => {
                let path = cfg.path.parent().unwrap_or(Path::new("")).join(STORE_FILE);
                (
                    LedgerLocation::Sqlite(path.clone()),
                    display_path(&path),
                    Vec::new(),
                )
            }
        },
        (None, None) => (
            LedgerLocation::Sqlite(PathBuf::from(STORE_FILE)),
            STORE_FILE.to_string(),
            Vec::new(),
        ),
    };
    if must_exist {
        if let LedgerLocation::Sqlite(path) = &location {
            if !path.exists() {
                return Err(Error::new(format!(
                    "{}: no usage store here; `toolpin usage ingest` or `toolpin usage serve` writes it (or pass --store)",
                    display_path(path)
                )));
            }
        }
    }
    let opened = match &location {
        LedgerLocation::Sqlite(path) => {
            // The embedded default ledger lives in toolpin's state directory.
            if store.is_none() && cfg.is_some_and(|c| c.ledger.in_state_dir()) {
                if let Some(dir) = path.parent() {
                    toolpin_manifest::fs::ensure_state_dir(dir).map_err(|e| {
                        Error::new(format!("cannot create {}: {e}", display_path(dir)))
                    })?;
                }
            }
            Ledger::open(path)
        }
        LedgerLocation::Postgres(url) => Ledger::connect(url, &toolpin_ledger::Options::default()),
    };
    let ledger = opened.map_err(|e| {
        Error::new(format!(
            "usage store {shown}: {}",
            toolpin_config::expand::redact(&e.to_string(), &secrets)
        ))
    })?;
    Ok(Store {
        ledger,
        shown,
        secrets,
    })
}

/// A path as shown: without a leading `./`.
fn display_path(path: &Path) -> String {
    path.strip_prefix("./")
        .unwrap_or(path)
        .display()
        .to_string()
}
