//! Opening a ledger: the one opener, for the ledger `[ledger]` names and
//! for the usage store (`toolpin usage --store`, which may name another
//! location), and the rule for when it cannot be: a command warns and
//! goes on unless `required = true`.

use std::fmt;
use std::path::PathBuf;

use toolpin_config::ledger::{LedgerConfig, LedgerLocation};
use toolpin_ledger::{Ledger, Options};
use toolpin_manifest::Redactor;

/// Why a ledger could not be opened, in one line with no secret in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// toolpin's state directory, where the embedded default ledger lives,
    /// could not be created.
    StateDir { dir: PathBuf, error: String },
    /// The ledger said why (it names itself, a URL's password hidden).
    Ledger(String),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::StateDir { dir, error } => {
                write!(f, "cannot create {}: {error}", dir.display())
            }
            OpenError::Ledger(line) => f.write_str(line),
        }
    }
}

impl std::error::Error for OpenError {}

/// Opens the ledger at `location`. `in_state_dir`: it is the embedded
/// default in toolpin's state directory, which is created first (with
/// its `.gitignore`). `secrets` (a configuration's expanded values) are
/// replaced in the error by their stand-ins.
pub fn open_location(
    location: &LedgerLocation,
    in_state_dir: bool,
    secrets: &[(String, String)],
) -> Result<Ledger, OpenError> {
    if let (true, LedgerLocation::Sqlite(path)) = (in_state_dir, location) {
        if let Some(dir) = path.parent() {
            toolpin_manifest::fs::ensure_state_dir(dir).map_err(|e| OpenError::StateDir {
                dir: dir.to_path_buf(),
                error: e.to_string(),
            })?;
        }
    }
    Ledger::open_location(location, &Options::default())
        .map_err(|e| OpenError::Ledger(Redactor::new(secrets).redact(&e.to_string())))
}

/// Opens the configured ledger; `Ok(None)` when `[ledger] enabled = false`.
/// The error is one line with no secret in it.
pub fn open(config: &LedgerConfig) -> Result<Option<Ledger>, String> {
    let Some(location) = &config.location else {
        return Ok(None);
    };
    open_location(location, config.in_state_dir(), &config.secrets)
        .map(Some)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The copies disagreed: a plain replace of the configured secret
    /// missed it percent-encoded, and the URL's own redaction only knew
    /// the user part. A password written percent-encoded in the URL (as
    /// `${VAR}` expansion writes it) appears in no form in the error.
    #[test]
    fn a_percent_encoded_password_never_appears_in_an_error() {
        let password = "p@ss/w0rd&x";
        let encoded = "p%40ss%2Fw0rd%26x";
        let location = LedgerLocation::parse(&format!(
            "postgres://toolpin:{encoded}@127.0.0.1:1/toolpin?connect_timeout=2&sslmode=require"
        ));
        let secrets = vec![("${LEDGER_PASSWORD}".to_string(), password.to_string())];
        let err = open_location(&location, false, &secrets)
            .err()
            .expect("TLS is refused before connecting")
            .to_string();
        for form in [password, encoded, "p%40ss", "p@ss"] {
            assert!(!err.contains(form), "{err}");
        }
        assert!(
            err.starts_with("postgres://toolpin:***@127.0.0.1:1/toolpin?"),
            "{err}"
        );
        // Nothing listens on port 1: the connection error is scrubbed too.
        let location = LedgerLocation::parse(&format!(
            "postgres://toolpin:{encoded}@127.0.0.1:1/toolpin?connect_timeout=2&application_name={encoded}"
        ));
        let err = open_location(&location, false, &secrets)
            .err()
            .expect("nothing listens on port 1")
            .to_string();
        for form in [password, encoded] {
            assert!(!err.contains(form), "{err}");
        }
        assert!(
            err.contains("cannot connect to the ledger database"),
            "{err}"
        );
    }
}
