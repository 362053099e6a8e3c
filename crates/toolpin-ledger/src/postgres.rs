//! The PostgreSQL driver, for fleets: several watchers on several machines
//! share one database. Same schema, same migrations (their PostgreSQL text,
//! [`migrate::Migration::postgres`]), same statements and semantics as
//! SQLite ([`crate::store`]); what is PostgreSQL's alone lives here.
//!
//! - The connection is plain TCP or a unix socket (`?host=/run/postgresql`):
//!   this build links no TLS library, so `sslmode` must be `disable` or
//!   `prefer` (which then connects without TLS); anything else is a
//!   one-line error before any connection is made.
//! - Every transaction runs at READ COMMITTED. One that loses a deadlock
//!   or a serialization race, or that trips over another watcher's insert
//!   of the same new event, is rolled back and run again from the start (a
//!   few times).
//! - Lock waits are bounded by `lock_timeout` = [`Options::busy_timeout`]:
//!   a table held by someone else is "locked", in one line, as in SQLite.
//!
//! Messages name the database by its URL with the password replaced by
//! `***` ([`SafeUrl`]'s `Display`); no message ever holds the password.
//!
//! [`migrate::Migration::postgres`]: crate::migrate::Migration::postgres

use std::str::FromStr;
use std::time::Duration;

use postgres::config::{Host, SslMode};
use postgres::error::SqlState;
use postgres::{Client, Config, NoTls};

use toolpin_config::ledger::is_postgres_url;
use toolpin_manifest::SafeUrl;

use crate::driver::{one_line, Cache, Fail, Result, Tx};
use crate::{Error, Options};

/// How long connecting may take when the URL does not say
/// (`connect_timeout=`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How many times a transaction is run when it loses a race.
pub(crate) const ATTEMPTS: usize = 8;

pub(crate) struct Conn {
    client: Client,
    statements: Cache,
}

impl Conn {
    /// Connects to `url`; messages name it by its `Display` (the password
    /// hidden), and any text they quote is scrubbed of its secrets.
    pub(crate) fn connect(url: &SafeUrl, options: &Options) -> Result<Self, Error> {
        let shown = url.to_string();
        let scrub = |text: String| url.redact(&text);
        if !is_postgres_url(url) {
            return Err(Error::new(format!(
                "{shown}: not a PostgreSQL URL (postgres://user@host/database)"
            )));
        }
        if let Some(mode) = url.query_value("sslmode") {
            if !matches!(mode.as_str(), "disable" | "prefer") {
                return Err(Error::new(scrub(format!(
                    "{shown}: sslmode={mode} is not supported: the ledger connects without TLS \
                     (plain TCP or a unix socket); use sslmode=disable or prefer"
                ))));
            }
        }
        let mut config = Config::from_str(url).map_err(|e| {
            Error::new(scrub(format!(
                "{shown}: not a valid PostgreSQL URL: {}",
                chain(&e)
            )))
        })?;
        if config.get_ssl_mode() == SslMode::Require {
            return Err(Error::new(format!(
                "{shown}: sslmode=require is not supported: the ledger connects without TLS"
            )));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("toolpin");
        }
        let mut client = config.connect(NoTls).map_err(|e| {
            let reason = match e.as_db_error() {
                Some(db) => one_line(db.message()),
                None => chain(&e),
            };
            Error::new(scrub(format!(
                "{shown}: cannot connect to the ledger database{}: {reason}",
                hosts_shown(&config)
            )))
        })?;
        let lock_ms = options.busy_timeout.as_millis().clamp(1, i32::MAX as u128);
        client
            .batch_execute(&format!(
                "SET lock_timeout = {lock_ms}; SET client_min_messages = warning"
            ))
            .map_err(|e| {
                Error::new(scrub(message(
                    &shown,
                    options.busy_timeout.as_secs_f64(),
                    &e,
                )))
            })?;
        Ok(Self {
            client,
            statements: Cache::default(),
        })
    }

    /// Runs `work` in one transaction and commits it; runs it again from
    /// the start when it lost a race another transaction won (a deadlock,
    /// a serialization failure, a unique key inserted meanwhile).
    pub(crate) fn run<T>(&mut self, work: &mut dyn FnMut(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = (|| {
                let tx = self.client.transaction()?;
                let mut tx = Tx::Postgres(tx, &mut self.statements);
                let value = work(&mut tx)?;
                if let Tx::Postgres(tx, _) = tx {
                    tx.commit()?;
                }
                Ok(value)
            })();
            match outcome {
                Err(Fail::Postgres(e)) if attempt < ATTEMPTS && retryable(&e) => {
                    // A little longer each time, so that the racers part.
                    std::thread::sleep(Duration::from_millis(5 * attempt as u64));
                }
                outcome => return outcome,
            }
        }
    }
}

/// One line for a failure: locked, or what PostgreSQL says.
pub(crate) fn message(shown: &str, busy_seconds: f64, e: &postgres::Error) -> String {
    match e.code() {
        Some(code) if *code == SqlState::LOCK_NOT_AVAILABLE => format!(
            "{shown}: the ledger is locked by another process (waited {busy_seconds} s); try again"
        ),
        _ => match e.as_db_error() {
            Some(db) => format!("{shown}: {}", one_line(db.message())),
            None => format!("{shown}: {}", chain(e)),
        },
    }
}

/// Whether a failed transaction is worth running again: it lost a race
/// that another transaction won.
fn retryable(e: &postgres::Error) -> bool {
    e.code().is_some_and(|code| {
        *code == SqlState::T_R_SERIALIZATION_FAILURE
            || *code == SqlState::T_R_DEADLOCK_DETECTED
            || *code == SqlState::UNIQUE_VIOLATION
    })
}

/// The error and its causes, in one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    one_line(&text)
}

/// ` at HOST` for the hosts the URL names (a socket directory or a name).
fn hosts_shown(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    if hosts.is_empty() {
        String::new()
    } else {
        format!(" at {}", hosts.join(","))
    }
}
