//! The usage store `toolpin usage` reads and writes: `--store`, else the
//! configured ledger, else a file beside the configuration.

use std::path::{Path, PathBuf};

use crate::settings::Config;
use toolpin_config::ledger::LedgerLocation;
use toolpin_ledger::Ledger;

use crate::Error;
use toolpin_manifest::text::shown_path;

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
            toolpin_manifest::Redactor::new(&self.secrets).redact(&e.to_string())
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
        (Some(s), _) => match LedgerLocation::parse(s) {
            LedgerLocation::Postgres(url) => (
                LedgerLocation::Postgres(url),
                "(the --store URL)".to_string(),
                Vec::new(),
            ),
            sqlite => (sqlite, s.to_string(), Vec::new()),
        },
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
                    shown_path(&path),
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
                    shown_path(path)
                )));
            }
        }
    }
    // The embedded default ledger lives in toolpin's state directory.
    let in_state_dir = store.is_none() && cfg.is_some_and(|c| c.ledger.in_state_dir());
    let ledger =
        crate::open::open_location(&location, in_state_dir, &secrets).map_err(|e| match e {
            crate::open::OpenError::StateDir { dir, error } => {
                Error::new(format!("cannot create {}: {error}", shown_path(&dir)))
            }
            crate::open::OpenError::Ledger(line) => {
                Error::new(format!("usage store {shown}: {line}"))
            }
        })?;
    Ok(Store {
        ledger,
        shown,
        secrets,
    })
}
