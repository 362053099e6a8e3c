//! The SQLite backend: a file in WAL mode, every write in an immediate
//! transaction (writers queue on the busy timeout instead of failing on a
//! lock upgrade). `synchronous = NORMAL`, SQLite's recommended setting in
//! WAL mode: a committed transaction survives the process crashing; only a
//! power loss or an OS crash can roll back the last ones (never corrupt).

use std::path::Path;

use rusqlite::{params, Connection, ErrorCode, OptionalExtension, Row, Statement, Transaction};

use crate::event::{findings_json, kind_bits, more_severe, parse_findings, severity_from_name};
use crate::history::{self, CountRow, Dialect, DurationRow, HistoryQuery, HistoryRow, Param};
use crate::migrate;
use crate::outbox::{backoff, Delivery, DeliveryState, Notice, LEASE, MAX_ATTEMPTS};
use crate::usage::{self, Compacted, UsageFilter, UsageWritten};
use crate::{
    Error, Event, EventFilter, EventKind, Options, RecordOutcome, Recorded, Resolution, Sighting,
};
use toolpin_usage::{Aggregates, EventKey, Key, ToolStats};

pub(crate) struct Store {
    conn: Connection,
    /// The path as given, for messages.
    shown: String,
    busy_seconds: f64,
}

const EVENT_COLUMNS: &str = "id, environment, server, tool, pinned, live, kind, severity, \
     findings, vendor, server_version, first_seen, last_seen, count, resolved_at, resolution, \
     pinned_version, reruns, unchanged_at";

impl Store {
    pub(crate) fn open(path: &Path, options: &Options) -> Result<Self, Error> {
        let shown = path.display().to_string();
        let conn = Connection::open(path)
            .map_err(|e| Error::new(format!("{shown}: cannot open the ledger: {e}")))?;
        let mut store = Self {
            conn,
            shown,
            busy_seconds: options.busy_timeout.as_secs_f64(),
        };
        store
            .conn
            .busy_timeout(options.busy_timeout)
            .map_err(|e| store.error(e))?;
        // Before anything is written (WAL mode changes the file's header):
        // a database of something else is refused, not added to.
        store.refuse_foreign()?;
        // Switching a new file to WAL takes an exclusive lock, and SQLite
        // answers a connection that would deadlock waiting for it with
        // SQLITE_BUSY at once, without its busy handler: several watchers
        // opening a new ledger together retry here, within the timeout.
        let deadline = std::time::Instant::now() + options.busy_timeout;
        let mode: String = loop {
            match store
                .conn
                .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            {
                Ok(mode) => break mode,
                Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(e) => return Err(store.error(e)),
            }
        };
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::new(format!(
                "{}: the ledger cannot use WAL journal mode (it is {mode}); put it on a local file system",
                store.shown
            )));
        }
        store
            .conn
            .execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL")
            .map_err(|e| store.error(e))?;
        store.migrate()?;
        Ok(store)
    }

    /// Refuses a database that has tables and is not a toolpin ledger (no
    /// `migrations` table holding toolpin's first migration): the file
    /// named as the ledger is someone else's, and is left as it is.
    fn refuse_foreign(&self) -> Result<(), Error> {
        let tables: Vec<String> = (|| {
            let mut stmt = self.conn.prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' ORDER BY name",
            )?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect::<Result<Vec<String>, _>>()
        })()
        .map_err(|e| self.error(e))?;
        if tables.is_empty() {
            return Ok(());
        }
        if tables.iter().any(|t| t == "migrations") {
            let first: Option<String> = self
                .conn
                .query_row("SELECT name FROM migrations WHERE version = 1", [], |r| {
                    r.get(0)
                })
                .optional()
                .unwrap_or(None);
            if first.as_deref() == Some(migrate::MIGRATIONS[0].name) {
                return Ok(());
            }
        }
        let mut shown: Vec<&str> = tables.iter().take(3).map(String::as_str).collect();
        if tables.len() > 3 {
            shown.push("…");
        }
        Err(Error::new(format!(
            "{}: not a toolpin ledger (a SQLite database with other tables: {}); point [ledger] path at a file of its own",
            self.shown,
            shown.join(", ")
        )))
    }

    /// One line for a SQLite error: locked, corrupt, or what SQLite says.
    fn error(&self, e: rusqlite::Error) -> Error {
        error_for(&self.shown, self.busy_seconds, e)
    }

    fn begin(&mut self) -> Result<Transaction<'_>, Error> {
        let shown = self.shown.clone();
        let busy = self.busy_seconds;
        self.conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| error_for(&shown, busy, e))
    }

    fn migrate(&mut self) -> Result<(), Error> {
        let shown = self.shown.clone();
        let busy = self.busy_seconds;
        let fail = |e| error_for(&shown, busy, e);
        let tx = self.begin()?;
        tx.execute_batch(migrate::MIGRATIONS_TABLE).map_err(fail)?;
        let found: i64 = tx
            .query_row(
                "SELECT COALESCE(MAX(version), 0) FROM migrations",
                [],
                |r| r.get(0),
            )
            .map_err(fail)?;
        if found > migrate::CURRENT {
            return Err(Error::new(format!(
                "{shown}: schema version {found} is newer than this toolpin reads ({}); upgrade toolpin",
                migrate::CURRENT
            )));
        }
        for m in migrate::MIGRATIONS {
            if m.version <= found {
                continue;
            }
            tx.execute_batch(m.sqlite).map_err(fail)?;
            tx.execute(
                "INSERT INTO migrations (version, name) VALUES (?1, ?2)",
                params![m.version, m.name],
            )
            .map_err(fail)?;
        }
        tx.commit().map_err(fail)
    }

    pub(crate) fn schema_version(&mut self) -> Result<i64, Error> {
        self.conn
            .query_row(
                "SELECT COALESCE(MAX(version), 0) FROM migrations",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.error(e))
    }

    pub(crate) fn record(&mut self, s: &Sighting, sinks: &[&str]) -> Result<Recorded, Error> {
        let shown = self.shown.clone();
        let busy = self.busy_seconds;
        let fail = |e| error_for(&shown, busy, e);
        let tx = self.begin()?;
        let recorded = Recording::prepare(&tx)
            .and_then(|mut rec| record_in(&mut rec, s, sinks))
            .map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(recorded)
    }

    pub(crate) fn record_batch(
        &mut self,
        sightings: &[Sighting],
        route: &dyn Fn(&Sighting) -> Vec<String>,
    ) -> Result<Vec<Recorded>, Error> {
        let shown = self.shown.clone();
        let busy = self.busy_seconds;
        let fail = |e| error_for(&shown, busy, e);
        let tx = self.begin()?;
        let mut out = Vec::with_capacity(sightings.len());
        {
            let mut rec = Recording::prepare(&tx).map_err(fail)?;
            for s in sightings {
                let sinks = route(s);
                let sinks: Vec<&str> = sinks.iter().map(String::as_str).collect();
                out.push(record_in(&mut rec, s, &sinks).map_err(fail)?);
            }
        }
        tx.commit().map_err(fail)?;
        Ok(out)
    }

    pub(crate) fn record_approval(
        &mut self,
        s: &Sighting,
        live: &str,
    ) -> Result<(Recorded, Vec<i64>), Error> {
        let shown = self.shown.clone();
        let busy = self.busy_seconds;
        let fail = |e| error_for(&shown, busy, e);
        let tx = self.begin()?;
        let recorded = Recording::prepare(&tx)
            .and_then(|mut rec| record_in(&mut rec, s, &[]))
            .map_err(fail)?;
        let resolution = Resolution::Accepted {
            live: live.to_string(),
        };
        let resolved = resolve_in(
            &tx,
            (&s.environment, &s.server, &s.tool),
            EventKind::resolved_by_fingerprint,
            &resolution,
            s.at,
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok((recorded, resolved))
    }

    pub(crate) fn resolve(
        &mut self,
        tool: (&str, &str, &str),
        kinds: fn(EventKind) -> bool,
        resolution: &Resolution,
        at: i64,
    ) -> Result<Vec<i64>, Error> {
        let shown = self.shown.clone();
        let busy = self.busy_seconds;
        let fail = |e| error_for(&shown, busy, e);
        let tx = self.begin()?;
        let resolved = resolve_in(&tx, tool, kinds, resolution, at).map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(resolved)
    }

    pub(crate) fn events(&mut self, filter: &EventFilter, open: bool) -> Result<Vec<Event>, Error> {
        let mut sql = format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE (?1 IS NULL OR environment = ?1) \
             AND (?2 IS NULL OR server = ?2) AND (?3 IS NULL OR tool = ?3)"
        );
        if open {
            let kinds: Vec<String> = EventKind::ALL
                .into_iter()
                .filter(|k| k.is_resolvable())
                .map(|k| format!("'{}'", k.name()))
                .collect();
            sql.push_str(&format!(
                " AND resolved_at IS NULL AND kind IN ({})",
                kinds.join(", ")
            ));
        }
        sql.push_str(" ORDER BY first_seen, id");
        let result = (|| {
            let mut stmt = self.conn.prepare(&sql)?;
            let rows = stmt.query_map(
                params![filter.environment, filter.server, filter.tool],
                read_event,
            )?;
            rows.collect::<Result<Vec<_>, _>>()
        })();
        result.map_err(|e| self.error(e))
    }

    pub(crate) fn event(&mut self, id: i64) -> Result<Option<Event>, Error> {
        event_in(&self.conn, id).map_err(|e| self.error(e))
    }

    pub(crate) fn enqueue(
        &mut self,
        sink: &str,
        event: i64,
        notice: Notice,
        at: i64,
    ) -> Result<bool, Error> {
        let shown = self.shown.clone();
        let busy = self.busy_seconds;
        let fail = |e| error_for(&shown, busy, e);
        let tx = self.begin()?;
        let added = enqueue_in(&tx, sink, event, notice, at).map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(added)
    }

    pub(crate) fn take_due(
        &mut self,
        now: i64,
        limit: usize,
        sinks: Option<&[String]>,
    ) -> Result<Vec<Delivery>, Error> {
        let shown = self.shown.clone();
        let busy = self.busy_seconds;
        let fail = |e| error_for(&shown, busy, e);
        // The sinks as a JSON array, read back by json_each: one statement
        // whatever their number.
        let sinks = sinks.map(|s| serde_json::Value::from(s.to_vec()).to_string());
        let tx = self.begin()?;
        let ids: Vec<i64> = (|| {
            let mut stmt = tx.prepare(
                "SELECT id FROM outbox WHERE state = 'pending' AND next_attempt_at <= ?1 \
                 AND (?3 IS NULL OR sink IN (SELECT value FROM json_each(?3))) \
                 ORDER BY next_attempt_at, id LIMIT ?2",
            )?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = stmt.query_map(params![now, limit, sinks], |r| r.get(0))?;
            rows.collect::<Result<Vec<i64>, _>>()
        })()
        .map_err(fail)?;
        let mut taken = Vec::with_capacity(ids.len());
        for id in ids {
            tx.execute(
                "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ?2 WHERE id = ?1",
                params![id, now + LEASE],
            )
            .map_err(fail)?;
            if let Some(d) = delivery_in(&tx, id).map_err(fail)? {
                taken.push(d);
            }
        }
        tx.commit().map_err(fail)?;
        Ok(taken)
    }

    pub(crate) fn due_sinks(
        &mut self,
        now: i64,
        sinks: Option<&[String]>,
    ) -> Result<Vec<String>, Error> {
        let sinks = sinks.map(|s| serde_json::Value::from(s.to_vec()).to_string());
        let result = (|| {
            let mut stmt = self.conn.prepare(
                "SELECT DISTINCT sink FROM outbox WHERE state = 'pending' AND next_attempt_at <= ?1 \
                 AND (?2 IS NULL OR sink IN (SELECT value FROM json_each(?2))) ORDER BY sink",
            )?;
            let rows = stmt.query_map(params![now, sinks], |r| r.get(0))?;
            rows.collect::<Result<Vec<String>, _>>()
        })();
        result.map_err(|e| self.error(e))
    }

    pub(crate) fn mark_delivered(&mut self, delivery: i64, at: i64) -> Result<(), Error> {
        let shown = self.shown.clone();
        let busy = self.busy_seconds;
        let fail = |e| error_for(&shown, busy, e);
        let tx = self.begin()?;
        let changed = tx
            .execute(
                "UPDATE outbox SET state = 'delivered', delivered_at = ?2, last_error = NULL \
                 WHERE id = ?1",
                params![delivery, at],
            )
            .map_err(fail)?;
        tx.commit().map_err(fail)?;
        if changed == 0 {
            return Err(Error::new(format!("{shown}: no delivery {delivery}")));
        }
        Ok(())
    }

    pub(crate) fn mark_failed(
        &mut self,
        delivery: i64,
        error: &str,
        at: i64,
        give_up: bool,
    ) -> Result<DeliveryState, Error> {
        let shown = self.shown.clone();
        let busy = self.busy_seconds;
        let fail = |e| error_for(&shown, busy, e);
        let tx = self.begin()?;
        let attempts: Option<i64> = tx
            .query_row(
                "SELECT attempts FROM outbox WHERE id = ?1 AND state = 'pending'",
                params![delivery],
                |r| r.get(0),
            )
            .optional()
            .map_err(fail)?;
        let Some(attempts) = attempts else {
            return Err(Error::new(format!(
                "{shown}: no pending delivery {delivery}"
            )));
        };
        let state = if give_up || attempts >= MAX_ATTEMPTS {
            DeliveryState::Failed
        } else {
            DeliveryState::Pending
        };
        tx.execute(
            "UPDATE outbox SET state = ?2, next_attempt_at = ?3, last_error = ?4 WHERE id = ?1",
            params![delivery, state.name(), at + backoff(attempts.max(1)), error],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(state)
    }

    pub(crate) fn record_clean(
        &mut self,
        environment: &str,
        servers: &[&str],
        at: i64,
    ) -> Result<(), Error> {
        let shown = self.shown.clone();
        let busy = self.busy_seconds;
        let fail = |e| error_for(&shown, busy, e);
        let tx = self.begin()?;
        for server in servers {
            tx.execute(
                "INSERT INTO server_checks (environment, server, last_clean) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (environment, server) DO UPDATE SET last_clean = \
                 CASE WHEN excluded.last_clean > last_clean THEN excluded.last_clean ELSE last_clean END",
                params![environment, server, at],
            )
            .map_err(fail)?;
        }
        tx.commit().map_err(fail)
    }

    pub(crate) fn sink_ref(&mut self, sink: &str, event: i64) -> Result<Option<String>, Error> {
        self.conn
            .query_row(
                "SELECT reference FROM sink_refs WHERE sink = ?1 AND event_id = ?2",
                params![sink, event],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.error(e))
    }

    pub(crate) fn set_sink_ref(
        &mut self,
        sink: &str,
        event: i64,
        reference: &str,
    ) -> Result<(), Error> {
        self.conn
            .execute(
                "INSERT INTO sink_refs (sink, event_id, reference) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (sink, event_id) DO UPDATE SET reference = excluded.reference",
                params![sink, event, reference],
            )
            .map(|_| ())
            .map_err(|e| self.error(e))
    }

    pub(crate) fn history(&mut self, q: &HistoryQuery) -> Result<Vec<HistoryRow>, Error> {
        let st = history::statements(q, Dialect::Sqlite);
        let params: Vec<rusqlite::types::Value> = st
            .params
            .iter()
            .map(|p| match p {
                Param::Text(t) => rusqlite::types::Value::Text(t.clone()),
                Param::Int(i) => rusqlite::types::Value::Integer(*i),
            })
            .collect();
        // One read transaction: both statements see the same events.
        let result = (|| {
            let tx = self.conn.transaction()?;
            let counts = {
                let mut stmt = tx.prepare(&st.counts)?;
                let rows = stmt.query_map(rusqlite::params_from_iter(params.iter()), |r| {
                    let mut values = [0i64; history::COUNT_COLUMNS];
                    for (i, v) in values.iter_mut().enumerate() {
                        *v = r.get::<_, Option<i64>>(i + 4)?.unwrap_or(0);
                    }
                    Ok(CountRow {
                        key: r.get(0)?,
                        server: r.get(1)?,
                        day: r.get(2)?,
                        class: r.get(3)?,
                        values,
                    })
                })?;
                rows.collect::<Result<Vec<_>, _>>()?
            };
            let durations = {
                let mut stmt = tx.prepare(&st.durations)?;
                let rows = stmt.query_map(rusqlite::params_from_iter(params.iter()), |r| {
                    Ok(DurationRow {
                        key: r.get(0)?,
                        server: r.get(1)?,
                        first_seen: r.get(2)?,
                        to_first_sighting: r.get(3)?,
                        to_resolution: r.get(4)?,
                    })
                })?;
                rows.collect::<Result<Vec<_>, _>>()?
            };
            tx.finish()?;
            Ok((counts, durations))
        })();
        let (counts, durations) = result.map_err(|e| self.error(e))?;
        Ok(history::assemble(q, counts, durations))
    }

    /// Inserts events as given, in one transaction, with no deduplication
    /// or outbox: for benchmarks and tests that need a large ledger fast.
    pub(crate) fn insert_events(&mut self, events: &[Event]) -> Result<(), Error> {
        let shown = self.shown.clone();
        let busy = self.busy_seconds;
        let fail = |e| error_for(&shown, busy, e);
        let tx = self.begin()?;
        {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO events (environment, server, tool, pinned, live, kind, \
                     severity, findings, vendor, server_version, first_seen, last_seen, count, \
                     resolved_at, resolution, pinned_version, reruns, unchanged_at, \
                     finding_kinds) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, \
                     ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
                )
                .map_err(fail)?;
            for e in events {
                let (resolved_at, resolution) = match &e.resolved {
                    Some((at, r)) => (Some(*at), Some(r.reason())),
                    None => (None, None),
                };
                stmt.execute(params![
                    e.environment,
                    e.server,
                    e.tool,
                    key(&e.pinned),
                    key(&e.live),
                    e.kind.name(),
                    e.severity.map(|s| s.name()),
                    findings_json(&e.findings),
                    e.vendor,
                    e.server_version,
                    e.first_seen,
                    e.last_seen,
                    e.count,
                    resolved_at,
                    resolution,
                    e.pinned_version,
                    e.reruns,
                    e.unchanged_at,
                    kind_bits(&e.findings),
                ])
                .map_err(fail)?;
            }
        }
        tx.commit().map_err(fail)
    }

    pub(crate) fn deliveries(&mut self, event: i64) -> Result<Vec<Delivery>, Error> {
        let result = (|| {
            let ids: Vec<i64> = {
                let mut stmt = self
                    .conn
                    .prepare("SELECT id FROM outbox WHERE event_id = ?1 ORDER BY id")?;
                let rows = stmt.query_map(params![event], |r| r.get(0))?;
                rows.collect::<Result<Vec<i64>, _>>()?
            };
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(d) = delivery_in(&self.conn, id)? {
                    out.push(d);
                }
            }
            Ok(out)
        })();
        result.map_err(|e| self.error(e))
    }
}

/// One line for a SQLite error: locked, corrupt, or what SQLite says.
/// Tool usage (`crate::usage`): merged writes, reads, compaction.
impl Store {
    pub(crate) fn usage_merge(&mut self, calls: &Aggregates) -> Result<UsageWritten, Error> {
        let shown = self.shown.clone();
        let busy = self.busy_seconds;
        let fail = |e| error_for(&shown, busy, e);
        let data = |e: String| Error::new(format!("{shown}: {e}"));
        let limits = *calls.limits();
        let tx = self.begin()?;
        let mut written = UsageWritten::default();
        {
            let mut select = tx.prepare(usage::SELECT_ONE).map_err(fail)?;
            let mut upsert = tx.prepare(usage::UPSERT).map_err(fail)?;
            let mut add_events = tx.prepare(usage::ADD_EVENTS).map_err(fail)?;
            for (key, stats) in calls.calls_unordered() {
                let hour = usage::hour_to_db(key.hour);
                let parts = params![
                    hour,
                    1i64,
                    key.environment,
                    key.tenant,
                    key.agent,
                    key.catalog,
                    key.tool
                ];
                let stored: Option<String> = select
                    .query_row(parts, |r| r.get(0))
                    .optional()
                    .map_err(fail)?;
                let text = usage::merged(stored.as_deref(), stats, key, &limits).map_err(data)?;
                written.keys += 1;
                written.merged += u64::from(stored.is_some());
                upsert
                    .execute(params![
                        hour,
                        1i64,
                        key.environment,
                        key.tenant,
                        key.agent,
                        key.catalog,
                        key.tool,
                        text
                    ])
                    .map_err(fail)?;
            }
            for (e, n) in calls.events() {
                add_events
                    .execute(params![
                        usage::hour_to_db(e.hour),
                        e.environment,
                        e.event,
                        e.server,
                        e.tool,
                        e.rule,
                        e.catalog,
                        i64::try_from(*n).unwrap_or(i64::MAX)
                    ])
                    .map_err(fail)?;
                written.event_counts += 1;
            }
        }
        tx.commit().map_err(fail)?;
        Ok(written)
    }

    pub(crate) fn usage_read(&mut self, filter: &UsageFilter) -> Result<Aggregates, Error> {
        let shown = self.shown.clone();
        let busy = self.busy_seconds;
        let fail = |e| error_for(&shown, busy, e);
        let from = usage::hour_to_db(filter.from_hour);
        let until = usage::hour_to_db(filter.until_hour);
        let mut rows: Vec<(Key, ToolStats)> = Vec::new();
        let mut bad: Option<String> = None;
        {
            let (sql, env) = match &filter.environment {
                Some(env) => (usage::SELECT_RANGE_ENV, Some(env.as_str())),
                None => (usage::SELECT_RANGE, None),
            };
            let mut stmt = self.conn.prepare(sql).map_err(fail)?;
            let mut cursor = match env {
                Some(env) => stmt.query(params![from, until, env]),
                None => stmt.query(params![from, until]),
            }
            .map_err(fail)?;
            while let Some(r) = cursor.next().map_err(fail)? {
                let (key, text) = usage_row(r).map_err(fail)?;
                match key.and_then(|key| Ok((usage::decode(&text, &key)?, key))) {
                    Ok((stats, key)) => rows.push((key, stats)),
                    Err(e) => {
                        bad = Some(e);
                        break;
                    }
                }
            }
        }
        if let Some(e) = bad {
            return Err(Error::new(format!("{}: {e}", self.shown)));
        }
        let mut events: Vec<(EventKey, u64)> = Vec::new();
        {
            let mut stmt = self.conn.prepare(usage::SELECT_EVENTS).map_err(fail)?;
            let mut cursor = stmt.query(params![from, until]).map_err(fail)?;
            while let Some(r) = cursor.next().map_err(fail)? {
                let key = EventKey {
                    hour: usage::hour_from_db(r.get(0).map_err(fail)?).unwrap_or(0),
                    environment: r.get(1).map_err(fail)?,
                    event: r.get(2).map_err(fail)?,
                    server: r.get(3).map_err(fail)?,
                    tool: r.get(4).map_err(fail)?,
                    rule: r.get(5).map_err(fail)?,
                    catalog: r.get(6).map_err(fail)?,
                };
                let n: i64 = r.get(7).map_err(fail)?;
                if filter
                    .environment
                    .as_ref()
                    .is_none_or(|e| *e == key.environment)
                {
                    events.push((key, u64::try_from(n).unwrap_or(0)));
                }
            }
        }
        Ok(usage::collect(rows, events))
    }

    pub(crate) fn usage_compact(
        &mut self,
        hourly_before: u64,
        delete_before: Option<u64>,
    ) -> Result<Compacted, Error> {
        let shown = self.shown.clone();
        let busy = self.busy_seconds;
        let fail = |e| error_for(&shown, busy, e);
        let data = |e: String| Error::new(format!("{shown}: {e}"));
        let limits = toolpin_usage::Limits::default();
        let tx = self.begin()?;
        let mut done = Compacted::default();
        if let Some(before) = delete_before {
            let before = usage::hour_to_db(before);
            done.deleted += tx
                .execute(usage::DELETE_EXPIRED_CALLS, params![before])
                .map_err(fail)? as u64;
            done.deleted += tx
                .execute(usage::DELETE_EXPIRED_EVENTS, params![before])
                .map_err(fail)? as u64;
        }
        let before = usage::hour_to_db(hourly_before);
        let mut hours: Vec<(Key, ToolStats)> = Vec::new();
        {
            let mut stmt = tx.prepare(usage::SELECT_OLD_HOURS).map_err(fail)?;
            let mut cursor = stmt.query(params![before]).map_err(fail)?;
            while let Some(r) = cursor.next().map_err(fail)? {
                let (key, text) = usage_row(r).map_err(fail)?;
                let key = key.map_err(data)?;
                let stats = usage::decode(&text, &key).map_err(data)?;
                hours.push((key, stats));
            }
        }
        done.hours_rolled = hours.len() as u64;
        tx.execute(usage::DELETE_OLD_HOURS, params![before])
            .map_err(fail)?;
        {
            let mut select = tx.prepare(usage::SELECT_ONE).map_err(fail)?;
            let mut upsert = tx.prepare(usage::UPSERT).map_err(fail)?;
            for (key, stats) in usage::roll_up(hours, &limits) {
                let hour = usage::hour_to_db(key.hour);
                let stored: Option<String> = select
                    .query_row(
                        params![
                            hour,
                            usage::DAY,
                            key.environment,
                            key.tenant,
                            key.agent,
                            key.catalog,
                            key.tool
                        ],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(fail)?;
                let text = usage::merged(stored.as_deref(), &stats, &key, &limits).map_err(data)?;
                upsert
                    .execute(params![
                        hour,
                        usage::DAY,
                        key.environment,
                        key.tenant,
                        key.agent,
                        key.catalog,
                        key.tool,
                        text
                    ])
                    .map_err(fail)?;
                done.days_written += 1;
            }
        }
        tx.commit().map_err(fail)?;
        Ok(done)
    }

    pub(crate) fn usage_span(&mut self) -> Result<Option<(u64, u64)>, Error> {
        let (a, b): (Option<i64>, Option<i64>) = self
            .conn
            .query_row(usage::SELECT_SPAN, [], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.error(e))?;
        Ok(match (a, b) {
            (Some(a), Some(b)) => {
                Some((u64::try_from(a).unwrap_or(0), u64::try_from(b).unwrap_or(0)))
            }
            _ => None,
        })
    }
}

/// A `usage_calls` row's key (its first six columns; a negative hour is a
/// damaged row, the inner error) and its stored statistics.
fn usage_row(r: &Row<'_>) -> rusqlite::Result<(Result<Key, String>, String)> {
    let hour: i64 = r.get(0)?;
    let (environment, tenant, agent, catalog, tool) =
        (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?);
    let key = usage::hour_from_db(hour).map(|hour| Key {
        hour,
        environment,
        tenant,
        agent,
        catalog,
        tool,
    });
    Ok((key, r.get(6)?))
}

fn error_for(shown: &str, busy_seconds: f64, e: rusqlite::Error) -> Error {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => Error::new(format!(
            "{shown}: the ledger is locked by another process (waited {busy_seconds} s); try again"
        )),
        Some(ErrorCode::NotADatabase) | Some(ErrorCode::DatabaseCorrupt) => Error::new(format!(
            "{shown}: not a toolpin ledger (the file is not a SQLite database, or it is corrupt)"
        )),
        Some(ErrorCode::ReadOnly) | Some(ErrorCode::CannotOpen) => Error::new(format!(
            "{shown}: cannot write the ledger: {}",
            one_line(&e.to_string())
        )),
        _ => Error::new(format!("{shown}: {}", one_line(&e.to_string()))),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The key column of an absent fingerprint: `""`, so that the unique key
/// holds (NULLs are distinct in unique indexes, in SQLite as in PostgreSQL).
fn key(fingerprint: &Option<String>) -> &str {
    fingerprint.as_deref().unwrap_or("")
}

/// The statements recording runs, prepared once per transaction: a batch
/// of thousands runs these few texts, and parsing them for each sighting
/// was most of its cost.
struct Recording<'t> {
    find: Statement<'t>,
    insert: Statement<'t>,
    bump_severe: Statement<'t>,
    bump: Statement<'t>,
    enqueue: Statement<'t>,
}

impl<'t> Recording<'t> {
    fn prepare(tx: &'t Transaction<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            find: tx.prepare(FIND)?,
            insert: tx.prepare(INSERT)?,
            bump_severe: tx.prepare(BUMP_SEVERE)?,
            bump: tx.prepare(BUMP)?,
            enqueue: tx.prepare(ENQUEUE)?,
        })
    }
}

const FIND: &str = "SELECT id, severity FROM events WHERE environment = ?1 AND server = ?2 \
             AND tool = ?3 AND pinned = ?4 AND live = ?5 AND kind = ?6 AND resolved_at IS NULL";

const INSERT: &str =
    "INSERT INTO events (environment, server, tool, pinned, live, kind, severity, \
                 findings, vendor, server_version, first_seen, last_seen, count, \
                 pinned_version, reruns, unchanged_at, finding_kinds) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, 1, ?12, ?13, \
                 (SELECT last_clean FROM server_checks WHERE environment = ?1 AND server = ?2 \
                  AND last_clean <= ?11), ?14) RETURNING id";

const BUMP_SEVERE: &str = "UPDATE events SET count = count + 1, \
                     first_seen = CASE WHEN ?2 < first_seen THEN ?2 ELSE first_seen END, \
                     last_seen = CASE WHEN ?2 > last_seen THEN ?2 ELSE last_seen END, \
                     severity = ?3, findings = ?4, reruns = ?5, finding_kinds = ?6 WHERE id = ?1";

const BUMP: &str = "UPDATE events SET count = count + 1, \
                     first_seen = CASE WHEN ?2 < first_seen THEN ?2 ELSE first_seen END, \
                     last_seen = CASE WHEN ?2 > last_seen THEN ?2 ELSE last_seen END \
                     WHERE id = ?1";

const ENQUEUE: &str = "INSERT INTO outbox (sink, event_id, what, level, state, attempts, next_attempt_at, created_at) \
         VALUES (?1, ?2, ?3, ?4, 'pending', 0, ?5, ?5) \
         ON CONFLICT (sink, event_id, what, level) DO NOTHING";

fn record_in(rec: &mut Recording<'_>, s: &Sighting, sinks: &[&str]) -> rusqlite::Result<Recorded> {
    let severity = s.severity();
    let existing: Option<(i64, Option<String>)> = rec
        .find
        .query_row(
            params![
                s.environment,
                s.server,
                s.tool,
                key(&s.pinned),
                key(&s.live),
                s.kind.name()
            ],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let recorded = match existing {
        None => {
            let id: i64 = rec.insert.query_row(
                params![
                    s.environment,
                    s.server,
                    s.tool,
                    key(&s.pinned),
                    key(&s.live),
                    s.kind.name(),
                    severity.map(|v| v.name()),
                    findings_json(&s.findings),
                    s.vendor,
                    s.server_version,
                    s.at,
                    s.pinned_version,
                    s.reruns,
                    kind_bits(&s.findings)
                ],
                |r| r.get(0),
            )?;
            Recorded {
                event: id,
                outcome: RecordOutcome::New,
            }
        }
        Some((id, old)) => {
            let old = old.as_deref().and_then(severity_from_name);
            if more_severe(severity, old) {
                rec.bump_severe.execute(params![
                    id,
                    s.at,
                    severity.map(|v| v.name()),
                    findings_json(&s.findings),
                    s.reruns,
                    kind_bits(&s.findings)
                ])?;
                Recorded {
                    event: id,
                    outcome: RecordOutcome::MoreSevere,
                }
            } else {
                rec.bump.execute(params![id, s.at])?;
                Recorded {
                    event: id,
                    outcome: RecordOutcome::Seen,
                }
            }
        }
    };
    let notice = match (recorded.outcome, severity) {
        (RecordOutcome::New, _) => Some(Notice::Trigger),
        (RecordOutcome::MoreSevere, Some(level)) => Some(Notice::Escalate(level)),
        _ => None,
    };
    if let Some(notice) = notice {
        for sink in sinks {
            enqueue_with(&mut rec.enqueue, sink, recorded.event, notice, s.at)?;
        }
    }
    Ok(recorded)
}

fn resolve_in(
    tx: &Transaction<'_>,
    (environment, server, tool): (&str, &str, &str),
    kinds: fn(EventKind) -> bool,
    resolution: &Resolution,
    at: i64,
) -> rusqlite::Result<Vec<i64>> {
    let kinds: Vec<String> = EventKind::ALL
        .into_iter()
        .filter(|k| kinds(*k))
        .map(|k| format!("'{}'", k.name()))
        .collect();
    let live = match resolution {
        Resolution::Accepted { live } => Some(live.as_str()),
        Resolution::Reverted => None,
    };
    let ids: Vec<i64> = {
        let sql = format!(
            "SELECT id FROM events WHERE environment = ?1 AND server = ?2 AND tool = ?3 \
             AND (?4 IS NULL OR live = ?4) AND resolved_at IS NULL AND kind IN ({}) ORDER BY id",
            kinds.join(", ")
        );
        let mut stmt = tx.prepare(&sql)?;
        let rows = stmt.query_map(params![environment, server, tool, live], |r| r.get(0))?;
        rows.collect::<Result<Vec<i64>, _>>()?
    };
    for id in &ids {
        tx.execute(
            "UPDATE events SET resolved_at = ?2, resolution = ?3 WHERE id = ?1",
            params![id, at, resolution.reason()],
        )?;
        // A resolve for every sink that was sent (or owes) a trigger.
        tx.execute(
            "INSERT INTO outbox (sink, event_id, what, level, state, attempts, next_attempt_at, created_at) \
             SELECT sink, event_id, 'resolve', '', 'pending', 0, ?2, ?2 FROM outbox \
             WHERE event_id = ?1 AND what = 'trigger' \
             ON CONFLICT (sink, event_id, what, level) DO NOTHING",
            params![id, at],
        )?;
    }
    Ok(ids)
}

fn enqueue_in(
    tx: &Transaction<'_>,
    sink: &str,
    event: i64,
    notice: Notice,
    at: i64,
) -> rusqlite::Result<bool> {
    enqueue_with(&mut tx.prepare(ENQUEUE)?, sink, event, notice, at)
}

fn enqueue_with(
    stmt: &mut Statement<'_>,
    sink: &str,
    event: i64,
    notice: Notice,
    at: i64,
) -> rusqlite::Result<bool> {
    let added = stmt.execute(params![sink, event, notice.what(), notice.level(), at])?;
    Ok(added == 1)
}

fn event_in(conn: &Connection, id: i64) -> rusqlite::Result<Option<Event>> {
    conn.query_row(
        &format!("SELECT {EVENT_COLUMNS} FROM events WHERE id = ?1"),
        params![id],
        read_event,
    )
    .optional()
}

fn delivery_in(conn: &Connection, id: i64) -> rusqlite::Result<Option<Delivery>> {
    let row = conn
        .query_row(
            "SELECT id, sink, event_id, what, level, state, attempts, next_attempt_at, \
             last_error, delivered_at FROM outbox WHERE id = ?1",
            params![id],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, i64>(6)?,
                    r.get::<_, i64>(7)?,
                    r.get::<_, Option<String>>(8)?,
                    r.get::<_, Option<i64>>(9)?,
                ))
            },
        )
        .optional()?;
    let Some((id, sink, event_id, what, level, state, attempts, next, last_error, delivered_at)) =
        row
    else {
        return Ok(None);
    };
    let Some(event) = event_in(conn, event_id)? else {
        return Ok(None);
    };
    let notice = Notice::parse(&what, &level).ok_or_else(|| invalid(3, "what", &what))?;
    let state = DeliveryState::parse(&state).ok_or_else(|| invalid(5, "state", &state))?;
    Ok(Some(Delivery {
        id,
        sink,
        notice,
        state,
        attempts,
        next_attempt_at: next,
        last_error,
        delivered_at,
        event,
    }))
}

fn invalid(column: usize, name: &str, value: &str) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        column,
        rusqlite::types::Type::Text,
        format!("unknown {name} {value:?}").into(),
    )
}

fn optional_key(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

fn read_event(r: &Row<'_>) -> rusqlite::Result<Event> {
    let kind: String = r.get(6)?;
    let severity: Option<String> = r.get(7)?;
    let findings: String = r.get(8)?;
    let resolved_at: Option<i64> = r.get(14)?;
    let resolution: Option<String> = r.get(15)?;
    let live: String = r.get(5)?;
    let resolved = match (resolved_at, resolution.as_deref()) {
        (Some(at), Some("accepted")) => Some((at, Resolution::Accepted { live: live.clone() })),
        (Some(at), Some("reverted")) => Some((at, Resolution::Reverted)),
        (None, None) => None,
        (_, other) => return Err(invalid(15, "resolution", other.unwrap_or(""))),
    };
    Ok(Event {
        id: r.get(0)?,
        environment: r.get(1)?,
        server: r.get(2)?,
        tool: r.get(3)?,
        pinned: optional_key(r.get(4)?),
        live: optional_key(live),
        kind: EventKind::parse(&kind).ok_or_else(|| invalid(6, "kind", &kind))?,
        severity: match severity {
            Some(s) => Some(severity_from_name(&s).ok_or_else(|| invalid(7, "severity", &s))?),
            None => None,
        },
        findings: parse_findings(&findings).map_err(|e| invalid(8, "findings", &e))?,
        vendor: r.get(9)?,
        server_version: r.get(10)?,
        first_seen: r.get(11)?,
        last_seen: r.get(12)?,
        count: r.get(13)?,
        resolved,
        pinned_version: r.get(16)?,
        reruns: r.get(17)?,
        unchanged_at: r.get(18)?,
    })
}

/// Whether `e` is SQLite's "database is locked" (or a table of it).
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}
