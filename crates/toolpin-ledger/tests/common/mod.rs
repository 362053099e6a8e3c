//! Helpers shared by the ledger tests: a unique temporary directory per
//! test (removed on drop) and sightings.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use toolpin_ledger::{FindingRecord, Severity, Sighting};

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
