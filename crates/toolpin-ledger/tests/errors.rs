//! A ledger that cannot be used says why in one line: newer schema,
//! corrupt file, locked database.

mod common;

use std::time::{Duration, Instant};

use common::{refund, TempDir};
use toolpin_ledger::{Ledger, Options, Severity};

fn short() -> Options {
    Options {
        busy_timeout: Duration::from_millis(200),
    }
}

#[test]
fn a_ledger_with_a_newer_schema_is_refused_in_one_line() {
    let dir = TempDir::new("newer");
    let path = dir.db();
    drop(Ledger::open(&path).unwrap());
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "INSERT INTO migrations (version, name) VALUES (98, 'later'), (99, 'later still')",
            [],
        )
        .unwrap();
    }
    let err = Ledger::open(&path)
        .err()
        .expect("a newer schema is refused");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: schema version 99 is newer than this toolpin reads ({}); upgrade toolpin",
            path.display(),
            toolpin_ledger::migrate::CURRENT
        )
    );
    // Refusing changed nothing.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let max: i64 = conn
        .query_row("SELECT MAX(version) FROM migrations", [], |r| r.get(0))
        .unwrap();
    assert_eq!(max, 99);
}

#[test]
fn a_file_that_is_not_a_sqlite_database_is_refused_in_one_line() {
    let dir = TempDir::new("corrupt");
    let path = dir.db();
    let junk: String = "this is not a ledger\n".repeat(400);
    std::fs::write(&path, &junk).unwrap();
    let err = Ledger::open(&path)
        .err()
        .expect("a corrupt file is refused");
    let text = err.to_string();
    assert_eq!(
        text,
        format!(
            "{}: not a toolpin ledger (the file is not a SQLite database, or it is corrupt)",
            path.display()
        )
    );
    assert!(!text.contains('\n'));
    // The file is left as it was.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), junk);
}

#[test]
fn a_ledger_with_a_damaged_header_is_refused_in_one_line() {
    let dir = TempDir::new("damaged");
    let path = dir.db();
    {
        let mut ledger = Ledger::open(&path).unwrap();
        ledger.record_drift(&refund(1, Severity::High)).unwrap();
    }
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() >= 100);
    for b in &mut bytes[0..16] {
        *b = b'X';
    }
    std::fs::write(&path, &bytes).unwrap();
    let _ = std::fs::remove_file(path.with_extension("db-wal"));
    let _ = std::fs::remove_file(path.with_extension("db-shm"));
    let err = Ledger::open(&path)
        .err()
        .expect("a damaged file is refused");
    assert!(err.to_string().contains("not a toolpin ledger"), "{err}");
}

#[test]
fn a_write_to_a_locked_ledger_waits_then_fails_in_one_line() {
    let dir = TempDir::new("locked");
    let path = dir.db();
    let mut ledger = Ledger::open_with(&path, &short()).unwrap();

    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    holder
        .execute(
            "INSERT INTO migrations (version, name) VALUES (0, 'held')",
            [],
        )
        .unwrap();

    let started = Instant::now();
    let err = ledger
        .record_drift(&refund(1, Severity::High))
        .expect_err("a locked ledger is an error");
    let waited = started.elapsed();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: the ledger is locked by another process (waited 0.2 s); try again",
            path.display()
        )
    );
    assert!(waited >= Duration::from_millis(150), "waited {waited:?}");

    // Opening while it is held fails the same way (migrations take the
    // write lock).
    let err = Ledger::open_with(&path, &short())
        .err()
        .expect("opening a locked ledger is an error");
    assert!(
        err.to_string().contains("is locked by another process"),
        "{err}"
    );

    // Once the lock is released the write goes through.
    holder.execute_batch("ROLLBACK").unwrap();
    ledger.record_drift(&refund(2, Severity::High)).unwrap();
}

#[test]
fn a_write_waits_for_a_lock_released_within_the_busy_timeout() {
    let dir = TempDir::new("wait");
    let path = dir.db();
    let mut ledger = Ledger::open(&path).unwrap();
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        holder.execute_batch("COMMIT").unwrap();
    });
    ledger.record_drift(&refund(1, Severity::High)).unwrap();
    release.join().unwrap();
}

#[test]
fn the_ledger_is_in_wal_mode() {
    let dir = TempDir::new("wal");
    let path = dir.db();
    let _ledger = Ledger::open(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn a_ledger_in_a_missing_directory_is_an_error_in_one_line() {
    let dir = TempDir::new("missing");
    let path = dir.0.join("no/such/dir/toolpin.ledger.db");
    let err = Ledger::open(&path).err().expect("cannot open");
    let text = err.to_string();
    assert!(text.starts_with(&path.display().to_string()), "{text}");
    assert!(!text.contains('\n'));
}
