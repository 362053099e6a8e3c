//! The ledger stores what it is given, verbatim, and nothing else: callers
//! pass redacted text. It writes no file but the database (no logging).

mod common;

use common::{TempDir, LIVE, PINNED};
use toolpin_ledger::{FindingRecord, Ledger, Severity, Sighting};

const PLACEHOLDER: &str = "Authorization: Bearer ${ORDERS_API_TOKEN}";

#[test]
fn a_message_holding_a_secret_placeholder_is_stored_verbatim() {
    let dir = TempDir::new("secrets");
    let path = dir.db();
    let message = format!("orders__lookup_order: description changed: send {{+{PLACEHOLDER}+}}");
    let sighting = Sighting::drift(
        "staging",
        "orders",
        "orders__lookup_order",
        Some(PINNED),
        Some(LIVE),
        1,
    )
    .findings(vec![FindingRecord {
        rule: "description-changed".into(),
        pointer: "/description".into(),
        severity: Severity::Critical,
        kind: "description".into(),
        message: message.clone(),
        detail: Some(format!("word diff: {message}")),
    }]);
    let mut ledger = Ledger::open(&path).unwrap();
    let r = ledger.record_drift(&sighting).unwrap();
    let e = ledger.event(r.event).unwrap().unwrap();
    assert_eq!(e.findings[0].message, message);
    drop(ledger);

    // The stored JSON holds exactly the six members, the placeholder
    // unexpanded.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let text: String = conn
        .query_row(
            "SELECT findings FROM events WHERE id = ?1",
            [r.event],
            |row| row.get(0),
        )
        .unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let member = &value[0];
    let mut keys: Vec<_> = member.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(
        keys,
        ["detail", "kind", "message", "pointer", "rule", "severity"]
    );
    assert_eq!(member["message"], serde_json::Value::String(message));
    assert!(text.contains("${ORDERS_API_TOKEN}"));

    // Nothing but the database and its WAL files was written.
    let mut files: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    for f in &files {
        assert!(f.starts_with("toolpin.ledger.db"), "unexpected file {f}");
    }
}

#[test]
fn a_finding_from_the_drift_crate_keeps_only_its_five_members() {
    use serde_json::json;
    use toolpin_drift::finding::Finding;
    use toolpin_drift::rule::by_id;

    let rule = by_id("description-changed").unwrap();
    let finding = Finding::new(
        rule,
        "orders",
        "orders__lookup_order",
        "/description".into(),
    )
    .message("description changed")
    .values(Some(&json!("token sk-live-123")), Some(&json!("other")));
    let record = FindingRecord::from(&finding);
    assert_eq!(record.rule, "description-changed");
    assert_eq!(record.pointer, "/description");
    assert_eq!(record.kind, "description");
    assert_eq!(record.message, "description changed");

    let dir = TempDir::new("from-finding");
    let mut ledger = Ledger::open(&dir.db()).unwrap();
    let s = Sighting::drift(
        "staging",
        "orders",
        "orders__lookup_order",
        None,
        Some(LIVE),
        1,
    )
    .findings(vec![record]);
    ledger.record_drift(&s).unwrap();
    drop(ledger);
    // The before value (which might hold anything) is nowhere in the file.
    let bytes = std::fs::read(dir.db()).unwrap();
    let wal = std::fs::read(dir.db().with_extension("db-wal")).unwrap_or_default();
    for haystack in [&bytes, &wal] {
        assert!(!haystack
            .windows(b"sk-live-123".len())
            .any(|w| w == b"sk-live-123"));
    }
}
