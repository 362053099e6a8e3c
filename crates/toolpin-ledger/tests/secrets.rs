//! The ledger stores what it is given, verbatim, and nothing else: callers
//! pass redacted text. It writes no file but the database (no logging).

mod common;

use common::{Db, LIVE, PINNED};
use toolpin_ledger::{FindingRecord, Severity, Sighting};

const PLACEHOLDER: &str = "Authorization: Bearer ${ORDERS_API_TOKEN}";

fn a_message_holding_a_secret_placeholder_is_stored_verbatim(db: &Db) {
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
    let mut ledger = db.open();
    let r = ledger.record_drift(&sighting).unwrap();
    let e = ledger.event(r.event).unwrap().unwrap();
    assert_eq!(e.findings[0].message, message);
    drop(ledger);

    // The stored JSON holds exactly the six members, the placeholder
    // unexpanded.
    let text = db.text(&format!(
        "SELECT findings FROM events WHERE id = {}",
        r.event
    ));
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
    let Db::Sqlite(dir) = db else {
        return;
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    for f in &files {
        assert!(f.starts_with("toolpin.ledger.db"), "unexpected file {f}");
    }
}

fn a_finding_from_the_drift_crate_keeps_only_its_five_members(db: &Db) {
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

    let mut ledger = db.open();
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
    // The before value (which might hold anything) is stored nowhere.
    match db {
        Db::Sqlite(dir) => {
            let bytes = std::fs::read(dir.db()).unwrap();
            let wal = std::fs::read(dir.db().with_extension("db-wal")).unwrap_or_default();
            for haystack in [&bytes, &wal] {
                assert!(!haystack
                    .windows(b"sk-live-123".len())
                    .any(|w| w == b"sk-live-123"));
            }
        }
        Db::Postgres { .. } => {
            // Every row of every table, as text.
            let all = db.text(
                "SELECT concat_ws(' ', (SELECT string_agg(e::text, ' ') FROM events e), \
                 (SELECT string_agg(o::text, ' ') FROM outbox o), \
                 (SELECT string_agg(c::text, ' ') FROM server_checks c), \
                 (SELECT string_agg(r::text, ' ') FROM sink_refs r))",
            );
            assert!(all.contains("description changed"), "{all}");
            assert!(!all.contains("sk-live-123"), "{all}");
        }
    }
}

both! {
    a_message_holding_a_secret_placeholder_is_stored_verbatim,
    a_finding_from_the_drift_crate_keeps_only_its_five_members,
}
