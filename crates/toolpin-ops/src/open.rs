//! Opening the ledger `[ledger]` names, and the rule for when it cannot
//! be: a command warns and goes on unless `required = true`.

use toolpin_config::ledger::{LedgerConfig, LedgerLocation};
use toolpin_ledger::Ledger;

/// Opens the configured ledger; `Ok(None)` when `[ledger] enabled = false`.
/// The error is one line with no secret in it.
pub fn open(config: &LedgerConfig) -> Result<Option<Ledger>, String> {
    let Some(location) = &config.location else {
        return Ok(None);
    };
    let opened = match location {
        LedgerLocation::Sqlite(path) => {
            if config.in_state_dir() {
                if let Some(dir) = path.parent() {
                    toolpin_manifest::fs::ensure_state_dir(dir)
                        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                }
            }
            Ledger::open(path)
        }
        LedgerLocation::Postgres(url) => Ledger::connect(url, &toolpin_ledger::Options::default()),
    };
    opened
        .map(Some)
        .map_err(|e| toolpin_config::expand::redact(&e.to_string(), &config.secrets))
}
