//! The SQLite driver: a file in WAL mode, every write in an immediate
//! transaction (writers queue on the busy timeout instead of failing on a
//! lock upgrade). `synchronous = NORMAL`, SQLite's recommended setting in
//! WAL mode: a committed transaction survives the process crashing; only a
//! power loss or an OS crash can roll back the last ones (never corrupt).
//!
//! What is SQLite's alone lives here: opening the file, refusing a
//! database of something else, and its errors in one line. The statements
//! are the store's ([`crate::store`]).

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior};

use crate::driver::{one_line, Result, SqliteTx, Tx};
use crate::{migrate, Error, Options};

pub(crate) struct Conn {
    conn: Connection,
}

impl Conn {
    /// Opens (creating it) the file at `path`, named `shown` in messages.
    pub(crate) fn open(path: &Path, shown: &str, options: &Options) -> Result<Self, Error> {
        let busy = options.busy_timeout.as_secs_f64();
        let fail = |e: rusqlite::Error| Error::new(message(shown, busy, &e));
        let conn = Connection::open(path)
            .map_err(|e| Error::new(format!("{shown}: cannot open the ledger: {e}")))?;
        conn.busy_timeout(options.busy_timeout).map_err(fail)?;
        // Before anything is written (WAL mode changes the file's header):
        // a database of something else is refused, not added to.
        refuse_foreign(&conn, shown).map_err(|e| match e {
            Refusal::Sqlite(e) => fail(e),
            Refusal::Foreign(text) => Error::new(text),
        })?;
        // Switching a new file to WAL takes an exclusive lock, and SQLite
        // answers a connection that would deadlock waiting for it with
        // SQLITE_BUSY at once, without its busy handler: several watchers
        // opening a new ledger together retry here, within the timeout.
        let deadline = Instant::now() + options.busy_timeout;
        let mode: String = loop {
            match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)) {
                Ok(mode) => break mode,
                Err(e) if is_busy(&e) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(fail(e)),
            }
        };
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::new(format!(
                "{shown}: the ledger cannot use WAL journal mode (it is {mode}); put it on a local file system"
            )));
        }
        conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL")
            .map_err(fail)?;
        Ok(Self { conn })
    }

    /// Runs `work` in one transaction and commits it: an immediate one to
    /// write (writers queue on the busy timeout), a deferred one to read.
    pub(crate) fn run<T>(
        &mut self,
        write: bool,
        work: &mut dyn FnMut(&mut Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        let behavior = if write {
            TransactionBehavior::Immediate
        } else {
            TransactionBehavior::Deferred
        };
        let mut tx = Tx::Sqlite(SqliteTx::begin(&self.conn, behavior)?);
        let value = work(&mut tx)?;
        if let Tx::Sqlite(tx) = tx {
            tx.commit()?;
        }
        Ok(value)
    }
}

enum Refusal {
    Sqlite(rusqlite::Error),
    Foreign(String),
}

impl From<rusqlite::Error> for Refusal {
    fn from(e: rusqlite::Error) -> Self {
        Refusal::Sqlite(e)
    }
}

/// Refuses a database that has tables and is not a toolpin ledger (no
/// `migrations` table holding toolpin's first migration): the file named
/// as the ledger is someone else's, and is left as it is.
fn refuse_foreign(conn: &Connection, shown: &str) -> std::result::Result<(), Refusal> {
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' \
         AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )?;
    let tables = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    if tables.is_empty() {
        return Ok(());
    }
    if tables.iter().any(|t| t == "migrations") {
        let first: Option<String> = conn
            .query_row("SELECT name FROM migrations WHERE version = 1", [], |r| {
                r.get(0)
            })
            .optional()
            .unwrap_or(None);
        if first.as_deref() == Some(migrate::MIGRATIONS[0].name) {
            return Ok(());
        }
    }
    let mut named: Vec<&str> = tables.iter().take(3).map(String::as_str).collect();
    if tables.len() > 3 {
        named.push("…");
    }
    Err(Refusal::Foreign(format!(
        "{shown}: not a toolpin ledger (a SQLite database with other tables: {}); point [ledger] path at a file of its own",
        named.join(", ")
    )))
}

/// One line for a failure: locked, corrupt, or what SQLite says.
pub(crate) fn message(shown: &str, busy_seconds: f64, e: &rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => format!(
            "{shown}: the ledger is locked by another process (waited {busy_seconds} s); try again"
        ),
        Some(ErrorCode::NotADatabase) | Some(ErrorCode::DatabaseCorrupt) => format!(
            "{shown}: not a toolpin ledger (the file is not a SQLite database, or it is corrupt)"
        ),
        Some(ErrorCode::ReadOnly) | Some(ErrorCode::CannotOpen) => format!(
            "{shown}: cannot write the ledger: {}",
            one_line(&e.to_string())
        ),
        _ => format!("{shown}: {}", one_line(&e.to_string())),
    }
}

/// Whether `e` is SQLite's "database is locked" (or a table of it).
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}
