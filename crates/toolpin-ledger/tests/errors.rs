//! A ledger that cannot be used says why in one line: newer schema,
//! corrupt file, locked database, unreachable server; and never with the
//! password of its URL.

mod common;

use std::time::{Duration, Instant};

use common::{pg, refund, Db, TempDir};
use toolpin_ledger::{Ledger, Location, Options, Severity};

fn short() -> Options {
    Options {
        busy_timeout: Duration::from_millis(200),
    }
}

fn a_ledger_with_a_newer_schema_is_refused_in_one_line(db: &Db) {
    drop(db.open());
    db.batch("INSERT INTO migrations (version, name) VALUES (98, 'later'), (99, 'later still')");
    let err = db
        .try_open_with(&Options::default())
        .err()
        .expect("a newer schema is refused");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: schema version 99 is newer than this toolpin reads ({}); upgrade toolpin",
            db.shown(),
            toolpin_ledger::migrate::CURRENT
        )
    );
    // Refusing changed nothing.
    assert_eq!(db.int("SELECT MAX(version) FROM migrations"), 99);
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

/// A SQLite database of something else named as the ledger is refused,
/// not given toolpin's tables: the file is left byte for byte.
#[test]
fn a_foreign_sqlite_database_is_refused_and_left_as_it_was() {
    let dir = TempDir::new("foreign");
    let path = dir.0.join("app.db");
    {
        let app = rusqlite::Connection::open(&path).unwrap();
        app.execute_batch(
            "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);\
             INSERT INTO users VALUES (1, 'ann');\
             CREATE TABLE orders (id INTEGER PRIMARY KEY);\
             CREATE TABLE migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL);\
             INSERT INTO migrations VALUES (1, 'create users');",
        )
        .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = Ledger::open(&path)
        .err()
        .expect("a foreign database is refused");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: not a toolpin ledger (a SQLite database with other tables: migrations, orders, users); point [ledger] path at a file of its own",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), before, "the file changed");
    let mut names: Vec<String> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["app.db"], "files beside it");
    // An empty file, and a ledger toolpin made, open as before.
    let fresh = dir.0.join("fresh.db");
    std::fs::write(&fresh, b"").unwrap();
    Ledger::open(&fresh)
        .unwrap()
        .record_drift(&refund(1, Severity::High))
        .unwrap();
    Ledger::open(&fresh).unwrap();
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

/// Another connection holding the ledger's tables: an exclusive SQLite
/// transaction, or PostgreSQL's exclusive table locks.
enum Holder {
    Sqlite(rusqlite::Connection),
    Postgres(Box<postgres::Client>),
}

impl Holder {
    fn hold(db: &Db) -> Self {
        match db.location() {
            Location::Sqlite(path) => {
                let holder = rusqlite::Connection::open(&path).unwrap();
                holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
                holder
                    .execute(
                        "INSERT INTO migrations (version, name) VALUES (0, 'held')",
                        [],
                    )
                    .unwrap();
                Holder::Sqlite(holder)
            }
            Location::Postgres(url) => {
                let mut holder = postgres::Client::connect(&url, postgres::NoTls).unwrap();
                holder
                    .batch_execute(
                        "BEGIN; LOCK TABLE events, outbox, migrations IN ACCESS EXCLUSIVE MODE",
                    )
                    .unwrap();
                Holder::Postgres(Box::new(holder))
            }
        }
    }

    fn release(self, after: Duration) -> std::thread::JoinHandle<()> {
        match self {
            Holder::Sqlite(c) => std::thread::spawn(move || {
                std::thread::sleep(after);
                c.execute_batch("ROLLBACK").unwrap();
            }),
            Holder::Postgres(mut c) => std::thread::spawn(move || {
                std::thread::sleep(after);
                c.batch_execute("ROLLBACK").unwrap();
            }),
        }
    }
}

fn a_write_to_a_locked_ledger_waits_then_fails_in_one_line(db: &Db) {
    let mut ledger = db.open_with(&short());
    let holder = Holder::hold(db);

    let started = Instant::now();
    let err = ledger
        .record_drift(&refund(1, Severity::High))
        .expect_err("a locked ledger is an error");
    let waited = started.elapsed();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: the ledger is locked by another process (waited 0.2 s); try again",
            db.shown()
        )
    );
    assert!(waited >= Duration::from_millis(150), "waited {waited:?}");

    // Opening while it is held fails the same way (migrations read the
    // migrations table under the write lock).
    let err = db
        .try_open_with(&short())
        .err()
        .expect("opening a locked ledger is an error");
    assert!(
        err.to_string().contains("is locked by another process"),
        "{err}"
    );

    // Once the lock is released the write goes through.
    holder.release(Duration::ZERO).join().unwrap();
    ledger.record_drift(&refund(2, Severity::High)).unwrap();
}

fn a_write_waits_for_a_lock_released_within_the_busy_timeout(db: &Db) {
    let mut ledger = db.open();
    let release = Holder::hold(db).release(Duration::from_millis(300));
    let started = Instant::now();
    ledger.record_drift(&refund(1, Severity::High)).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(250));
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

both! {
    a_ledger_with_a_newer_schema_is_refused_in_one_line,
    a_write_to_a_locked_ledger_waits_then_fails_in_one_line,
    a_write_waits_for_a_lock_released_within_the_busy_timeout,
}

const PASSWORD: &str = "hunter2-Zq9";

fn assert_one_line_without_password(text: &str) {
    assert!(!text.contains('\n'), "{text}");
    assert!(!text.contains(PASSWORD), "the password leaked: {text}");
    assert!(!text.contains("hunter2"), "the password leaked: {text}");
}

#[test]
fn an_unreachable_socket_is_an_error_in_one_line_without_the_password() {
    let url =
        format!("postgres://toolpin:{PASSWORD}@/toolpin?host=/nonexistent/toolpin-socket-dir");
    let err = Ledger::connect(&url, &Options::default())
        .err()
        .expect("nothing listens there");
    let text = err.to_string();
    assert_one_line_without_password(&text);
    assert!(
        text.starts_with(
            "postgres://toolpin:***@/toolpin?host=/nonexistent/toolpin-socket-dir: \
             cannot connect to the ledger database at /nonexistent/toolpin-socket-dir: "
        ),
        "{text}"
    );
}

#[test]
fn a_closed_port_is_an_error_in_one_line_without_the_password() {
    // Port 1 on the loopback: nothing listens, the connection is refused.
    let url = format!("postgresql://toolpin:{PASSWORD}@127.0.0.1:1/toolpin?connect_timeout=5");
    let started = Instant::now();
    let err = Ledger::connect(&url, &Options::default())
        .err()
        .expect("nothing listens there");
    assert!(started.elapsed() < Duration::from_secs(6));
    let text = err.to_string();
    assert_one_line_without_password(&text);
    assert!(
        text.starts_with(
            "postgresql://toolpin:***@127.0.0.1:1/toolpin?connect_timeout=5: \
             cannot connect to the ledger database at 127.0.0.1: "
        ),
        "{text}"
    );
}

#[test]
fn a_password_parameter_is_hidden_too() {
    let url = format!("postgres://toolpin@/toolpin?host=/nonexistent&password={PASSWORD}");
    let text = Ledger::connect(&url, &Options::default())
        .err()
        .expect("nothing listens there")
        .to_string();
    assert_one_line_without_password(&text);
    assert!(text.contains("password=***"), "{text}");
    // And in how a location is shown or debugged.
    let location = Location::parse(&url);
    assert!(matches!(location, Location::Postgres(_)));
    assert!(!location.to_string().contains(PASSWORD));
    assert!(!format!("{location:?}").contains(PASSWORD));
}

#[test]
fn tls_modes_are_refused_in_one_line_before_connecting() {
    for mode in ["require", "verify-ca", "verify-full"] {
        let url = format!("postgres://toolpin:{PASSWORD}@db.invalid/toolpin?sslmode={mode}");
        let text = Ledger::connect(&url, &Options::default())
            .err()
            .expect("TLS is not supported")
            .to_string();
        assert_one_line_without_password(&text);
        assert_eq!(
            text,
            format!(
                "postgres://toolpin:***@db.invalid/toolpin?sslmode={mode}: sslmode={mode} is not \
                 supported: the ledger connects without TLS (plain TCP or a unix socket); use \
                 sslmode=disable or prefer"
            )
        );
    }
}

#[test]
fn a_malformed_url_is_an_error_in_one_line_without_the_password() {
    for url in [
        format!("postgres://toolpin:{PASSWORD}@db/toolpin?port=notanumber"),
        format!("postgres://toolpin:{PASSWORD}@db/toolpin?no_such_option=1"),
        format!("mysql://toolpin:{PASSWORD}@db/toolpin"),
    ] {
        let text = Ledger::connect(&url, &Options::default())
            .err()
            .expect("malformed")
            .to_string();
        assert_one_line_without_password(&text);
    }
}

#[test]
fn a_live_server_s_refusal_is_one_line_without_the_password() {
    if pg::skipped() {
        pg::note_skipped("a_live_server_s_refusal_is_one_line_without_the_password");
        return;
    }
    let cluster = pg::cluster();
    let url = cluster.url_for("no_such_database", Some(PASSWORD));
    let text = Ledger::connect(&url, &Options::default())
        .err()
        .expect("no such database")
        .to_string();
    assert_one_line_without_password(&text);
    assert!(text.contains("toolpin:***@"), "{text}");
    assert!(text.contains("no_such_database"), "{text}");
    // The same URL with a database that exists works (trust
    // authentication ignores the password).
    let database = cluster.database("password");
    let mut ledger = Ledger::connect(
        &cluster.url_for(&database, Some(PASSWORD)),
        &Options::default(),
    )
    .unwrap();
    assert_eq!(
        ledger.schema_version().unwrap(),
        toolpin_ledger::migrate::CURRENT
    );
}
