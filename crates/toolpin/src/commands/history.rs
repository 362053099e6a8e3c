//! `toolpin history`: the ledger's events counted per vendor, server or
//! tool and per month or quarter. The query is the ledger's
//! (`Ledger::history`), the formats `toolpin_ops::history`'s; this reads
//! the arguments, opens the configured ledger and writes the result.

use toolpin_config::ledger::LedgerLocation;
use toolpin_ledger::history::days_from_civil;
use toolpin_ledger::{HistoryGroup, HistoryPeriod, HistoryQuery};
use toolpin_ops::history::render;

use super::{display, print, Outcome};
use crate::cli::{HistoryArgs, HistoryBy, HistoryPeriodArg};
use crate::error::CliError;

pub fn run(args: &HistoryArgs) -> Result<Outcome, CliError> {
    // The arguments first: a bad date is an error before anything is read.
    let since = args
        .since
        .as_deref()
        .map(|d| day("--since", d))
        .transpose()?;
    let until = args
        .until
        .as_deref()
        .map(|d| day("--until", d).map(|start| start + 86_400))
        .transpose()?;
    if let (Some(s), Some(u)) = (since, until) {
        if u <= s {
            return Err(CliError::new("--until is before --since"));
        }
    }
    let query = HistoryQuery {
        group: match args.by {
            HistoryBy::Vendor => HistoryGroup::Vendor,
            HistoryBy::Server => HistoryGroup::Server,
            HistoryBy::Tool => HistoryGroup::Tool,
        },
        period: match args.period {
            HistoryPeriodArg::Month => HistoryPeriod::Month,
            HistoryPeriodArg::Quarter => HistoryPeriod::Quarter,
        },
        vendor: args.vendor.clone(),
        server: args.server.clone(),
        tool: args.tool.clone(),
        environment: args.env.clone(),
        since,
        until,
    };
    let cfg = toolpin_ops::project::Project::load(&args.config, None, None)?.config;
    match &cfg.ledger.location {
        None => {
            return Err(CliError::new(
                "the ledger is turned off ([ledger] enabled = false): there is no history to read",
            ))
        }
        // Opening a SQLite file creates it: a history of nothing would hide
        // a wrong path or a ledger never written.
        Some(LedgerLocation::Sqlite(path)) if !path.exists() => {
            return Err(CliError::new(format!(
                "{}: no ledger here; `toolpin check` or `toolpin watch` writes it ([ledger] path in toolpin.toml)",
                display(path)
            )))
        }
        Some(_) => {}
    }
    let mut ledger = toolpin_ops::open::open(&cfg.ledger)
        .map_err(|e| CliError::new(format!("ledger: {e}")))?
        .ok_or_else(|| CliError::new("the ledger is turned off ([ledger] enabled = false)"))?;
    let rows = ledger.history(&query).map_err(|e| {
        CliError::new(format!(
            "ledger: {}",
            toolpin_manifest::Redactor::new(&cfg.ledger.secrets).redact(&e.to_string())
        ))
    })?;
    // The flag only takes history's formats.
    let out = render(&rows, &query, args.format).unwrap_or_default();
    match &args.output {
        Some(path) => toolpin_manifest::fs::write_atomic(path, out.as_bytes())
            .map_err(|e| CliError::new(format!("cannot write {}: {e}", display(path))))?,
        None => print(&out)?,
    }
    Ok(Outcome::Clean)
}

/// `YYYY-MM-DD` as the unix time of that day's start (UTC).
fn day(flag: &str, text: &str) -> Result<i64, CliError> {
    let bad = || CliError::new(format!("{flag} {text:?}: not a date; use YYYY-MM-DD"));
    let parts: Vec<&str> = text.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return Err(bad());
    };
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if !(digits(y, 4) && digits(m, 2) && digits(d, 2)) {
        return Err(bad());
    }
    let (y, m, d) = match (y.parse::<i64>(), m.parse::<u32>(), d.parse::<u32>()) {
        (Ok(y), Ok(m), Ok(d)) => (y, m, d),
        _ => return Err(bad()),
    };
    let days = days_from_civil(y, m, d).ok_or_else(bad)?;
    Ok(days * 86_400)
}

#[cfg(test)]
mod tests {
    use super::day;

    #[test]
    fn days_are_strict_dates() {
        assert_eq!(day("--since", "1970-01-02").ok(), Some(86_400));
        assert_eq!(day("--since", "2026-10-01").ok(), Some(1_790_812_800));
        for bad in [
            "2026-02-30",
            "2026-1-01",
            "26-01-01",
            "2026-01-01T00",
            "",
            "x",
        ] {
            assert!(day("--since", bad).is_err(), "{bad}");
        }
    }
}
