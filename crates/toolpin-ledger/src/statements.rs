//! Every statement the ledger runs, written once for both backends in the
//! notation of [`crate::dialect`] (`?N` parameters, `{name}` fragments).
//! [`ALL`] lists the fixed ones, so that a test can prepare each on both
//! databases; the few built at run time (a list of kinds, the history
//! query's filters) are built by the functions below from the same parts.

use crate::EventKind;

pub(crate) const SCHEMA_VERSION: &str = "SELECT COALESCE(MAX(version), 0) FROM migrations";

pub(crate) const ADD_MIGRATION: &str = "INSERT INTO migrations (version, name) VALUES (?1, ?2)";

pub(crate) const EVENT_COLUMNS: &str = "id, environment, server, tool, pinned, live, kind, \
     severity, findings, vendor, server_version, first_seen, last_seen, count, resolved_at, \
     resolution, pinned_version, reruns, unchanged_at";

/// The open event of a key, locked.
pub(crate) const FIND_OPEN: &str = "SELECT id, severity FROM events WHERE environment = ?1 \
     AND server = ?2 AND tool = ?3 AND pinned = ?4 AND live = ?5 AND kind = ?6 \
     AND resolved_at IS NULL{for_update}";

/// A new event; no row when another writer inserted its open key first.
pub(crate) const INSERT_EVENT: &str = "INSERT INTO events (environment, server, tool, pinned, \
     live, kind, severity, findings, vendor, server_version, first_seen, last_seen, count, \
     pinned_version, reruns, unchanged_at, finding_kinds) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, 1, ?12, ?13, \
     (SELECT last_clean FROM server_checks WHERE environment = ?1 AND server = ?2 \
      AND last_clean <= ?11), ?14) \
     ON CONFLICT (environment, server, tool, pinned, live, kind) \
     WHERE resolved_at IS NULL DO NOTHING RETURNING id";

pub(crate) const BUMP_SEVERE: &str = "UPDATE events SET count = count + 1, \
     first_seen = {least}(first_seen, ?2), last_seen = {greatest}(last_seen, ?2), \
     severity = ?3, findings = ?4, reruns = ?5, finding_kinds = ?6 WHERE id = ?1";

pub(crate) const BUMP: &str = "UPDATE events SET count = count + 1, \
     first_seen = {least}(first_seen, ?2), last_seen = {greatest}(last_seen, ?2) WHERE id = ?1";

pub(crate) const ENQUEUE: &str = "INSERT INTO outbox (sink, event_id, what, level, state, \
     attempts, next_attempt_at, created_at) VALUES (?1, ?2, ?3, ?4, 'pending', 0, ?5, ?5) \
     ON CONFLICT (sink, event_id, what, level) DO NOTHING";

pub(crate) const RESOLVE_EVENT: &str =
    "UPDATE events SET resolved_at = ?2, resolution = ?3 WHERE id = ?1";

/// A resolve for every sink that was sent (or owes) a trigger.
pub(crate) const ENQUEUE_RESOLVES: &str = "INSERT INTO outbox (sink, event_id, what, level, \
     state, attempts, next_attempt_at, created_at) \
     SELECT sink, event_id, 'resolve', '', 'pending', 0, ?2, ?2 FROM outbox \
     WHERE event_id = ?1 AND what = 'trigger' ORDER BY id \
     ON CONFLICT (sink, event_id, what, level) DO NOTHING";

pub(crate) const EVENT_BY_ID: &str = "SELECT id, environment, server, tool, pinned, live, kind, \
     severity, findings, vendor, server_version, first_seen, last_seen, count, resolved_at, \
     resolution, pinned_version, reruns, unchanged_at FROM events WHERE id = ?1";

/// Due deliveries, oldest first, locked; rows another watcher is taking
/// right now are skipped, not waited for. `?3`: the sinks as a JSON array,
/// or NULL for every sink.
pub(crate) const DUE: &str = "SELECT id FROM outbox WHERE state = 'pending' \
     AND next_attempt_at <= ?1 \
     AND (?3{text} IS NULL OR sink IN (SELECT value FROM {json_texts}(?3{text}{json}))) \
     ORDER BY next_attempt_at, id LIMIT ?2{skip_locked}";

pub(crate) const LEASE_DELIVERY: &str =
    "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ?2 WHERE id = ?1";

pub(crate) const DUE_SINKS: &str = "SELECT DISTINCT sink FROM outbox WHERE state = 'pending' \
     AND next_attempt_at <= ?1 \
     AND (?2{text} IS NULL OR sink IN (SELECT value FROM {json_texts}(?2{text}{json}))) \
     ORDER BY sink";

pub(crate) const DELIVERY_BY_ID: &str = "SELECT id, sink, event_id, what, level, state, \
     attempts, next_attempt_at, last_error, delivered_at FROM outbox WHERE id = ?1";

pub(crate) const DELIVERIES_OF: &str = "SELECT id FROM outbox WHERE event_id = ?1 ORDER BY id";

pub(crate) const MARK_DELIVERED: &str = "UPDATE outbox SET state = 'delivered', \
     delivered_at = ?2, last_error = NULL WHERE id = ?1";

pub(crate) const PENDING_ATTEMPTS: &str =
    "SELECT attempts FROM outbox WHERE id = ?1 AND state = 'pending'{for_update}";

pub(crate) const MARK_FAILED: &str =
    "UPDATE outbox SET state = ?2, next_attempt_at = ?3, last_error = ?4 WHERE id = ?1";

pub(crate) const RECORD_CLEAN: &str = "INSERT INTO server_checks (environment, server, \
     last_clean) VALUES (?1, ?2, ?3) ON CONFLICT (environment, server) DO UPDATE \
     SET last_clean = {greatest}(server_checks.last_clean, excluded.last_clean)";

pub(crate) const SINK_REF: &str =
    "SELECT reference FROM sink_refs WHERE sink = ?1 AND event_id = ?2";

pub(crate) const SET_SINK_REF: &str = "INSERT INTO sink_refs (sink, event_id, reference) \
     VALUES (?1, ?2, ?3) ON CONFLICT (sink, event_id) DO UPDATE SET reference = excluded.reference";

pub(crate) const INSERT_EVENT_AS_IS: &str = "INSERT INTO events (environment, server, tool, \
     pinned, live, kind, severity, findings, vendor, server_version, first_seen, last_seen, \
     count, resolved_at, resolution, pinned_version, reruns, unchanged_at, finding_kinds) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, \
     ?19)";

// Tool usage (`crate::usage`).

pub(crate) const USAGE_ONE: &str = "SELECT stats FROM usage_calls WHERE hour = ?1 \
     AND hours = ?2 AND environment = ?3 AND tenant = ?4 AND agent = ?5 AND catalog = ?6 \
     AND tool = ?7";

pub(crate) const USAGE_UPSERT: &str = "INSERT INTO usage_calls \
     (hour, hours, environment, tenant, agent, catalog, tool, stats) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
     ON CONFLICT (hour, hours, environment, tenant, agent, catalog, tool) \
     DO UPDATE SET stats = excluded.stats";

pub(crate) const USAGE_ADD_EVENTS: &str = "INSERT INTO usage_events \
     (hour, environment, event, server, tool, rule, catalog, count) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
     ON CONFLICT (hour, environment, event, server, tool, rule, catalog) \
     DO UPDATE SET count = usage_events.count + excluded.count";

/// `?3`: an environment, or NULL for every one.
pub(crate) const USAGE_RANGE: &str =
    "SELECT hour, environment, tenant, agent, catalog, tool, stats \
     FROM usage_calls WHERE hour >= ?1 AND hour < ?2 \
     AND (?3{text} IS NULL OR environment = ?3)";

pub(crate) const USAGE_EVENTS: &str =
    "SELECT hour, environment, event, server, tool, rule, catalog, count \
     FROM usage_events WHERE hour >= ?1 AND hour < ?2 \
     AND (?3{text} IS NULL OR environment = ?3)";

pub(crate) const USAGE_OLD_HOURS: &str =
    "SELECT hour, environment, tenant, agent, catalog, tool, stats \
     FROM usage_calls WHERE hours = 1 AND hour < ?1";

pub(crate) const USAGE_DELETE_OLD_HOURS: &str =
    "DELETE FROM usage_calls WHERE hours = 1 AND hour < ?1";

pub(crate) const USAGE_DELETE_EXPIRED_CALLS: &str =
    "DELETE FROM usage_calls WHERE hour + hours <= ?1";

pub(crate) const USAGE_DELETE_EXPIRED_EVENTS: &str =
    "DELETE FROM usage_events WHERE hour + 1 <= ?1";

pub(crate) const USAGE_SPAN: &str = "SELECT MIN(hour), MAX(hour + hours) FROM usage_calls";

/// The fixed statements, by name: each renders and prepares on both
/// databases (the drivers' tests).
pub(crate) const ALL: &[(&str, &str)] = &[
    ("SCHEMA_VERSION", SCHEMA_VERSION),
    ("ADD_MIGRATION", ADD_MIGRATION),
    ("FIND_OPEN", FIND_OPEN),
    ("INSERT_EVENT", INSERT_EVENT),
    ("BUMP_SEVERE", BUMP_SEVERE),
    ("BUMP", BUMP),
    ("ENQUEUE", ENQUEUE),
    ("RESOLVE_EVENT", RESOLVE_EVENT),
    ("ENQUEUE_RESOLVES", ENQUEUE_RESOLVES),
    ("EVENT_BY_ID", EVENT_BY_ID),
    ("DUE", DUE),
    ("LEASE_DELIVERY", LEASE_DELIVERY),
    ("DUE_SINKS", DUE_SINKS),
    ("DELIVERY_BY_ID", DELIVERY_BY_ID),
    ("DELIVERIES_OF", DELIVERIES_OF),
    ("MARK_DELIVERED", MARK_DELIVERED),
    ("PENDING_ATTEMPTS", PENDING_ATTEMPTS),
    ("MARK_FAILED", MARK_FAILED),
    ("RECORD_CLEAN", RECORD_CLEAN),
    ("SINK_REF", SINK_REF),
    ("SET_SINK_REF", SET_SINK_REF),
    ("INSERT_EVENT_AS_IS", INSERT_EVENT_AS_IS),
    ("USAGE_ONE", USAGE_ONE),
    ("USAGE_UPSERT", USAGE_UPSERT),
    ("USAGE_ADD_EVENTS", USAGE_ADD_EVENTS),
    ("USAGE_RANGE", USAGE_RANGE),
    ("USAGE_EVENTS", USAGE_EVENTS),
    ("USAGE_OLD_HOURS", USAGE_OLD_HOURS),
    ("USAGE_DELETE_OLD_HOURS", USAGE_DELETE_OLD_HOURS),
    ("USAGE_DELETE_EXPIRED_CALLS", USAGE_DELETE_EXPIRED_CALLS),
    ("USAGE_DELETE_EXPIRED_EVENTS", USAGE_DELETE_EXPIRED_EVENTS),
    ("USAGE_SPAN", USAGE_SPAN),
];

/// The kinds for which `keep` holds, as an SQL list of string literals
/// (the names are this crate's constants, never input).
pub(crate) fn kind_list(keep: impl Fn(EventKind) -> bool) -> String {
    EventKind::ALL
        .into_iter()
        .filter(|k| keep(*k))
        .map(|k| format!("'{}'", k.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The events matching a filter (`?1` environment, `?2` server, `?3`
/// tool, each NULL for any), oldest first; `open`: only the unresolved
/// ones of the resolvable kinds.
pub(crate) fn events(open: bool) -> String {
    let mut sql = format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE (?1{{text}} IS NULL OR environment = ?1) \
         AND (?2{{text}} IS NULL OR server = ?2) AND (?3{{text}} IS NULL OR tool = ?3)"
    );
    if open {
        sql.push_str(&format!(
            " AND resolved_at IS NULL AND kind IN ({})",
            kind_list(EventKind::is_resolvable)
        ));
    }
    sql.push_str(" ORDER BY first_seen, id");
    sql
}

/// The open events of a tool (`?1` environment, `?2` server, `?3` tool)
/// of the kinds `kinds` keeps whose live fingerprint is `?4` (NULL: any),
/// locked.
pub(crate) fn open_of_tool(kinds: impl Fn(EventKind) -> bool) -> String {
    format!(
        "SELECT id FROM events WHERE environment = ?1 AND server = ?2 AND tool = ?3 \
         AND (?4{{text}} IS NULL OR live = ?4) AND resolved_at IS NULL AND kind IN ({}) \
         ORDER BY id{{for_update}}",
        kind_list(kinds)
    )
}

/// Every statement the ledger runs, by name: [`ALL`], then those built at
/// run time, in each of their forms (the history query with no filter and
/// with every filter).
pub(crate) fn every() -> Vec<(String, String)> {
    use crate::history::{statements, HistoryGroup, HistoryPeriod, HistoryQuery};
    let mut out: Vec<(String, String)> = ALL
        .iter()
        .map(|(name, sql)| (name.to_string(), sql.to_string()))
        .collect();
    out.push(("events(all)".into(), events(false)));
    out.push(("events(open)".into(), events(true)));
    out.push((
        "open_of_tool".into(),
        open_of_tool(EventKind::resolved_by_fingerprint),
    ));
    let mut full = HistoryQuery::new(HistoryGroup::Tool, HistoryPeriod::Quarter);
    full.vendor = Some("acme".into());
    full.server = Some("orders".into());
    full.tool = Some("orders__lookup".into());
    full.environment = Some("prod".into());
    full.since = Some(0);
    full.until = Some(1);
    for (name, q) in [
        (
            "history",
            HistoryQuery::new(HistoryGroup::Vendor, HistoryPeriod::Month),
        ),
        ("history(filtered)", full),
    ] {
        let st = statements(&q);
        out.push((format!("{name}.counts"), st.counts));
        out.push((format!("{name}.durations"), st.durations));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::Dialect;

    /// The parameter numbers of `text` marked by `mark`, sorted.
    fn params(text: &str, mark: char) -> Vec<String> {
        let mut n: Vec<String> = text
            .match_indices(mark)
            .map(|(i, _)| {
                let rest = &text[i + 1..];
                let end = rest
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(rest.len());
                rest[..end].to_string()
            })
            .collect();
        n.sort();
        n
    }

    /// Every statement renders to text with no fragment left, with
    /// `$N` parameters (and no `?`) for PostgreSQL, and unchanged
    /// parameters for SQLite.
    #[test]
    fn every_statement_renders_for_both_dialects() {
        let all = every();
        assert!(all.len() > ALL.len());
        for (name, sql) in all {
            let sqlite = Dialect::Sqlite.render(&sql);
            let postgres = Dialect::Postgres.render(&sql);
            for text in [&sqlite, &postgres] {
                assert!(!text.contains('{') && !text.contains('}'), "{name}: {text}");
            }
            assert!(!postgres.contains('?'), "{name}: {postgres}");
            assert_eq!(params(&sqlite, '?'), params(&postgres, '$'), "{name}");
        }
    }
}
