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
        LedgerLocation::Sqlite(path) => Ledger::open(path),
        LedgerLocation::Postgres(url) => Ledger::connect(url, &toolpin_ledger::Options::default()),
    };
    opened
        .map(Some)
        .map_err(|e| redact(&e.to_string(), &config.secrets))
}

/// `text` with every secret value replaced by its stand-in.
pub fn redact(text: &str, secrets: &[(String, String)]) -> String {
    let mut out = text.to_string();
    for (stand_in, value) in secrets {
        if !value.is_empty() {
            out = out.replace(value, stand_in);
        }
    }
    out
}
