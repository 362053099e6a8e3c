//! Every statement the ledger runs, written once with dialect fragments,
//! renders to SQL that SQLite and PostgreSQL both read: each is prepared
//! (not run) on a fresh ledger of each backend.

mod common;

use common::Db;

fn every_statement_prepares(db: &Db) {
    let mut ledger = db.open();
    let n = ledger
        .prepare_every_statement()
        .unwrap_or_else(|e| panic!("a statement does not prepare: {e}"));
    // The fixed statements and the built ones (events, resolve, history).
    assert!(n >= 38, "{n} statements");
}

both! {
    every_statement_prepares,
}
