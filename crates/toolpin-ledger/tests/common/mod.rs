//! Helpers shared by the ledger tests: a fresh ledger per backend
//! ([`Db`], and the [`both!`] macro that runs a test against SQLite and
//! PostgreSQL), a unique temporary directory per test (removed on drop)
//! and sightings.

#![allow(dead_code)]

pub mod pg;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use toolpin_ledger::{migrate, FindingRecord, Ledger, Location, Options, Severity, Sighting};

/// Runs each named test function (taking a `&Db`) twice: `NAME::sqlite`
/// against a fresh SQLite file and `NAME::postgres` against a fresh
/// database of the throwaway PostgreSQL cluster (skipped, with a note,
/// under `TOOLPIN_SKIP_POSTGRES=1`).
#[macro_export]
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn sqlite() {
                    super::$name(&$crate::common::Db::sqlite(stringify!($name)));
                }

                #[test]
                fn postgres() {
                    if let Some(db) = $crate::common::Db::postgres(stringify!($name)) {
                        super::$name(&db);
                    }
                }
            }
        )*
    };
}

/// A fresh, empty ledger location of one backend, and raw access to the
/// database below it (for what a test sets up or inspects by hand).
pub enum Db {
    Sqlite(TempDir),
    Postgres { url: String },
}

impl Db {
    pub fn sqlite(name: &str) -> Self {
        Db::Sqlite(TempDir::new(name))
    }

    /// `None` (with a note) when PostgreSQL tests are skipped.
    pub fn postgres(name: &str) -> Option<Self> {
        if pg::skipped() {
            pg::note_skipped(name);
            return None;
        }
        let cluster = pg::cluster();
        let database = cluster.database(name);
        Some(Db::Postgres {
            url: cluster.url_for(&database, None),
        })
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self, Db::Postgres { .. })
    }

    pub fn location(&self) -> Location {
        match self {
            Db::Sqlite(dir) => Location::Sqlite(dir.db()),
            Db::Postgres { url } => Location::Postgres(url.as_str().into()),
        }
    }

    /// How messages name this ledger.
    pub fn shown(&self) -> String {
        self.location().to_string()
    }

    pub fn open(&self) -> Ledger {
        self.open_with(&Options::default())
    }

    pub fn open_with(&self, options: &Options) -> Ledger {
        Ledger::open_location(&self.location(), options)
            .unwrap_or_else(|e| panic!("cannot open the ledger: {e}"))
    }

    pub fn try_open_with(&self, options: &Options) -> Result<Ledger, toolpin_ledger::Error> {
        Ledger::open_location(&self.location(), options)
    }

    /// Runs statements on the database directly.
    pub fn batch(&self, sql: &str) {
        match self {
            Db::Sqlite(dir) => rusqlite::Connection::open(dir.db())
                .unwrap()
                .execute_batch(sql)
                .unwrap(),
            Db::Postgres { url } => postgres::Client::connect(url, postgres::NoTls)
                .unwrap()
                .batch_execute(sql)
                .unwrap(),
        }
    }

    /// The first column of the first row of `sql`, as text.
    pub fn text(&self, sql: &str) -> String {
        match self {
            Db::Sqlite(dir) => rusqlite::Connection::open(dir.db())
                .unwrap()
                .query_row(sql, [], |r| r.get(0))
                .unwrap(),
            Db::Postgres { url } => postgres::Client::connect(url, postgres::NoTls)
                .unwrap()
                .query_one(sql, &[])
                .unwrap()
                .get(0),
        }
    }

    /// The first column of the first row of `sql`, as a number.
    pub fn int(&self, sql: &str) -> i64 {
        match self {
            Db::Sqlite(dir) => rusqlite::Connection::open(dir.db())
                .unwrap()
                .query_row(sql, [], |r| r.get(0))
                .unwrap(),
            Db::Postgres { url } => postgres::Client::connect(url, postgres::NoTls)
                .unwrap()
                .query_one(sql, &[])
                .unwrap()
                .get(0),
        }
    }

    /// Migration `index`'s text for this backend.
    pub fn migration(&self, index: usize) -> &'static str {
        let m = &migrate::MIGRATIONS[index];
        match self {
            Db::Sqlite(_) => m.sqlite,
            Db::Postgres { .. } => m.postgres,
        }
    }
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let dir =
            std::env::temp_dir().join(format!("toolpin-ledger-{}-{name}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn db(&self) -> PathBuf {
        self.0.join("toolpin.ledger.db")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub const PINNED: &str = "4ee55e610c4090f00097543b9b1b8f40a2c5f140a4a4838d194ad1be72464bef";
pub const LIVE: &str = "ce8353de143f5a2109e64ae965efe88af087f418c2ed21d582ffb056bac0c654";
pub const LIVE2: &str = "9644aeefba895e3da1867ae78ec21d3c48654eac108d29008464e4df49347721";

pub fn finding(rule: &str, severity: Severity, message: &str) -> FindingRecord {
    FindingRecord {
        rule: rule.to_string(),
        pointer: "/description".to_string(),
        severity,
        kind: "description".to_string(),
        message: message.to_string(),
        detail: None,
    }
}

/// The refund story: `lookup_order`'s description got a steering sentence.
pub fn refund(at: i64, severity: Severity) -> Sighting {
    Sighting::drift(
        "staging",
        "orders",
        "orders__lookup_order",
        Some(PINNED),
        Some(LIVE),
        at,
    )
    .findings(vec![finding(
        "description-changed",
        severity,
        "orders__lookup_order: description changed",
    )])
    .vendor("acme")
    .server_version("1.4.0")
}
