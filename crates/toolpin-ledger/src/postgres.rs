//! The PostgreSQL backend, for fleets: several watchers on several machines
//! share one database. Same schema, same migrations (their PostgreSQL text,
//! [`migrate::Migration::postgres`]), same semantics as the SQLite store.
//!
//! - The connection is plain TCP or a unix socket (`?host=/run/postgresql`):
//!   this build links no TLS library, so `sslmode` must be `disable` or
//!   `prefer` (which then connects without TLS); anything else is a
//!   one-line error before any connection is made.
//! - Every write is one transaction at READ COMMITTED. A transaction that
//!   loses a deadlock or a serialization race, or that trips over another
//!   watcher's insert of the same new event, is rolled back and run again
//!   from the start (a few times).
//! - One open event per key: the partial unique index, plus
//!   `INSERT … ON CONFLICT DO NOTHING` and a re-read when another watcher
//!   inserted it first; the open event is read `FOR UPDATE`, so two
//!   watchers never both see it as "more severe".
//! - `take_due` locks the rows it takes `FOR UPDATE SKIP LOCKED`: two
//!   watchers never take one delivery.
//! - Migrations run under a transaction-scoped advisory lock, so two
//!   processes opening a fresh database at once apply each migration once.
//! - Lock waits are bounded by `lock_timeout` = [`Options::busy_timeout`]:
//!   a table held by someone else is "locked", in one line, as in SQLite.
//!
//! Messages name the database by its URL with the password replaced by
//! `***` ([`redact`]); no message ever holds the password.

use std::str::FromStr;
use std::time::Duration;

use postgres::config::{Host, SslMode};
use postgres::error::SqlState;
use postgres::{Client, Config, GenericClient, NoTls, Row, Transaction};

use crate::event::{findings_json, kind_bits, more_severe, parse_findings, severity_from_name};
use crate::history::{self, CountRow, Dialect, DurationRow, HistoryQuery, HistoryRow, Param};
use crate::migrate;
use crate::outbox::{backoff, Delivery, DeliveryState, Notice, LEASE, MAX_ATTEMPTS};
use crate::usage::{self, Compacted, UsageFilter, UsageWritten};
use crate::{
    Error, Event, EventFilter, EventKind, Options, RecordOutcome, Recorded, Resolution, Sighting,
};
use toolpin_usage::{Aggregates, EventKey, Key, ToolStats};

/// How long connecting may take when the URL does not say
/// (`connect_timeout=`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How many times a transaction is run when it loses a race.
const ATTEMPTS: usize = 8;

/// The key of the advisory lock migrations run under ("toolpin" in ASCII).
const MIGRATION_LOCK: i64 = 0x0074_6f6f_6c70_696e;

const EVENT_COLUMNS: &str = "id, environment, server, tool, pinned, live, kind, severity, \
     findings, vendor, server_version, first_seen, last_seen, count, resolved_at, resolution, \
     pinned_version, reruns, unchanged_at";

pub(crate) struct Store {
    client: Client,
    /// The URL with its password redacted, for messages.
    shown: String,
    busy_seconds: f64,
    /// The password (as written in the URL and decoded), never shown: any
    /// message that would hold it has it replaced.
    secrets: Vec<String>,
}

/// Why a statement failed: the database said so, or a stored value is not
/// one this build knows.
enum Fail {
    Db(postgres::Error),
    Data(String),
}

impl From<postgres::Error> for Fail {
    fn from(e: postgres::Error) -> Self {
        Fail::Db(e)
    }
}

type Result<T, E = Fail> = std::result::Result<T, E>;

/// Whether `text` is a PostgreSQL URL (`postgres://` or `postgresql://`).
pub(crate) fn is_url(text: &str) -> bool {
    let lower = text.get(..13).unwrap_or(text).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

impl Store {
    pub(crate) fn connect(url: &str, options: &Options) -> Result<Self, Error> {
        let shown = redact(url);
        let secrets = secrets_of(url);
        let scrub = |text: String| scrub(&text, &secrets);
        if !is_url(url) {
            return Err(Error::new(format!(
                "{shown}: not a PostgreSQL URL (postgres://user@host/database)"
            )));
        }
        if let Some(mode) = query_value(url, "sslmode") {
            if !matches!(mode.as_str(), "disable" | "prefer") {
                return Err(Error::new(scrub(format!(
                    "{shown}: sslmode={mode} is not supported: the ledger connects without TLS \
                     (plain TCP or a unix socket); use sslmode=disable or prefer"
                ))));
            }
        }
        let mut config = Config::from_str(url).map_err(|e| {
            Error::new(scrub(format!(
                "{shown}: not a valid PostgreSQL URL: {}",
                chain(&e)
            )))
        })?;
        if config.get_ssl_mode() == SslMode::Require {
            return Err(Error::new(format!(
                "{shown}: sslmode=require is not supported: the ledger connects without TLS"
            )));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("toolpin");
        }
        let client = config.connect(NoTls).map_err(|e| {
            let reason = match e.as_db_error() {
                Some(db) => one_line(db.message()),
                None => chain(&e),
            };
            Error::new(scrub(format!(
                "{shown}: cannot connect to the ledger database{}: {reason}",
                hosts_shown(&config)
            )))
        })?;
        let mut store = Self {
            client,
            shown,
            busy_seconds: options.busy_timeout.as_secs_f64(),
            secrets,
        };
        let lock_ms = options.busy_timeout.as_millis().clamp(1, i32::MAX as u128);
        store
            .client
            .batch_execute(&format!(
                "SET lock_timeout = {lock_ms}; SET client_min_messages = warning"
            ))
            .map_err(|e| store.error(Fail::Db(e)))?;
        store.migrate()?;
        Ok(store)
    }

    /// One line for a failure: locked, or what PostgreSQL says.
    fn error(&self, fail: Fail) -> Error {
        let text = match fail {
            Fail::Data(text) => format!("{}: {text}", self.shown),
            Fail::Db(e) => match e.code() {
                Some(code) if *code == SqlState::LOCK_NOT_AVAILABLE => format!(
                    "{}: the ledger is locked by another process (waited {} s); try again",
                    self.shown, self.busy_seconds
                ),
                _ => match e.as_db_error() {
                    Some(db) => format!("{}: {}", self.shown, one_line(db.message())),
                    None => format!("{}: {}", self.shown, chain(&e)),
                },
            },
        };
        Error::new(scrub(&text, &self.secrets))
    }

    /// Runs `work` in one transaction and commits it; run again from the
    /// start when it lost a race another transaction won (a deadlock, a
    /// serialization failure, a unique key inserted meanwhile).
    fn transact<T>(
        &mut self,
        mut work: impl FnMut(&mut Transaction<'_>) -> Result<T>,
    ) -> Result<T, Error> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = (|| {
                let mut tx = self.client.transaction()?;
                let value = work(&mut tx)?;
                tx.commit()?;
                Ok(value)
            })();
            match outcome {
                Ok(value) => return Ok(value),
                Err(Fail::Db(e)) if attempt < ATTEMPTS && retryable(&e) => {
                    // A little longer each time, so that the racers part.
                    std::thread::sleep(Duration::from_millis(5 * attempt as u64));
                }
                Err(fail) => return Err(self.error(fail)),
            }
        }
    }

    fn migrate(&mut self) -> Result<(), Error> {
        let shown = self.shown.clone();
        let newer = self.transact(|tx| {
            // Serializes migrations across processes; released at commit.
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
            tx.batch_execute(migrate::MIGRATIONS_TABLE)?;
            let found: i64 = tx
                .query_one("SELECT COALESCE(MAX(version), 0) FROM migrations", &[])?
                .try_get(0)?;
            if found > migrate::CURRENT {
                return Ok(Some(found));
            }
            for m in migrate::MIGRATIONS {
                if m.version <= found {
                    continue;
                }
                tx.batch_execute(m.postgres)?;
                tx.execute(
                    "INSERT INTO migrations (version, name) VALUES ($1, $2)",
                    &[&m.version, &m.name],
                )?;
            }
            Ok(None)
        })?;
        match newer {
            Some(found) => Err(Error::new(format!(
                "{shown}: schema version {found} is newer than this toolpin reads ({}); upgrade toolpin",
                migrate::CURRENT
            ))),
            None => Ok(()),
        }
    }

    pub(crate) fn schema_version(&mut self) -> Result<i64, Error> {
        let result = (|| -> Result<i64> {
            Ok(self
                .client
                .query_one("SELECT COALESCE(MAX(version), 0) FROM migrations", &[])?
                .try_get(0)?)
        })();
        result.map_err(|e| self.error(e))
    }

    pub(crate) fn record(&mut self, s: &Sighting, sinks: &[&str]) -> Result<Recorded, Error> {
        self.transact(|tx| record_in(tx, s, sinks))
    }

    pub(crate) fn record_batch(
        &mut self,
        sightings: &[Sighting],
        route: &dyn Fn(&Sighting) -> Vec<String>,
    ) -> Result<Vec<Recorded>, Error> {
        // The sightings are recorded in the order of their keys (a stable
        // sort: sightings of one key keep their order), so that two
        // watchers recording overlapping checks lock the events they share
        // in the same order and never deadlock. The outcomes come back in
        // the order given.
        let mut order: Vec<usize> = (0..sightings.len()).collect();
        order.sort_by(|&a, &b| sort_key(&sightings[a]).cmp(&sort_key(&sightings[b])));
        self.transact(|tx| {
            let mut out: Vec<Option<Recorded>> = vec![None; sightings.len()];
            for &i in &order {
                let s = &sightings[i];
                let sinks = route(s);
                let sinks: Vec<&str> = sinks.iter().map(String::as_str).collect();
                out[i] = Some(record_in(tx, s, &sinks)?);
            }
            Ok(out.into_iter().flatten().collect())
        })
    }

    pub(crate) fn record_approval(
        &mut self,
        s: &Sighting,
        live: &str,
    ) -> Result<(Recorded, Vec<i64>), Error> {
        let resolution = Resolution::Accepted {
            live: live.to_string(),
        };
        self.transact(|tx| {
            let recorded = record_in(tx, s, &[])?;
            let resolved = resolve_in(
                tx,
                (&s.environment, &s.server, &s.tool),
                EventKind::resolved_by_fingerprint,
                &resolution,
                s.at,
            )?;
            Ok((recorded, resolved))
        })
    }

    pub(crate) fn resolve(
        &mut self,
        tool: (&str, &str, &str),
        kinds: fn(EventKind) -> bool,
        resolution: &Resolution,
        at: i64,
    ) -> Result<Vec<i64>, Error> {
        self.transact(|tx| resolve_in(tx, tool, kinds, resolution, at))
    }

    pub(crate) fn events(&mut self, filter: &EventFilter, open: bool) -> Result<Vec<Event>, Error> {
        let mut sql = format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE ($1::TEXT IS NULL OR environment = $1) \
             AND ($2::TEXT IS NULL OR server = $2) AND ($3::TEXT IS NULL OR tool = $3)"
        );
        if open {
            sql.push_str(&format!(
                " AND resolved_at IS NULL AND kind IN ({})",
                kind_list(EventKind::is_resolvable)
            ));
        }
        sql.push_str(" ORDER BY first_seen, id");
        let result = (|| -> Result<Vec<Event>> {
            let rows = self
                .client
                .query(&sql, &[&filter.environment, &filter.server, &filter.tool])?;
            rows.iter().map(read_event).collect()
        })();
        result.map_err(|e| self.error(e))
    }

    pub(crate) fn event(&mut self, id: i64) -> Result<Option<Event>, Error> {
        let result = event_in(&mut self.client, id);
        result.map_err(|e| self.error(e))
    }

    pub(crate) fn enqueue(
        &mut self,
        sink: &str,
        event: i64,
        notice: Notice,
        at: i64,
    ) -> Result<bool, Error> {
        self.transact(|tx| enqueue_in(tx, sink, event, notice, at))
    }

    pub(crate) fn take_due(
        &mut self,
        now: i64,
        limit: usize,
        sinks: Option<&[String]>,
    ) -> Result<Vec<Delivery>, Error> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let sinks: Option<Vec<String>> = sinks.map(<[String]>::to_vec);
        self.transact(|tx| {
            // Rows another watcher is taking right now are skipped, not
            // waited for: it leases them.
            let ids: Vec<i64> = tx
                .query(
                    "SELECT id FROM outbox WHERE state = 'pending' AND next_attempt_at <= $1 \
                     AND ($3::TEXT[] IS NULL OR sink = ANY($3)) \
                     ORDER BY next_attempt_at, id LIMIT $2 FOR UPDATE SKIP LOCKED",
                    &[&now, &limit, &sinks],
                )?
                .iter()
                .map(|r| r.try_get(0))
                .collect::<Result<_, _>>()?;
            let mut taken = Vec::with_capacity(ids.len());
            for id in ids {
                tx.execute(
                    "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = $2 WHERE id = $1",
                    &[&id, &(now + LEASE)],
                )?;
                if let Some(d) = delivery_in(tx, id)? {
                    taken.push(d);
                }
            }
            Ok(taken)
        })
    }

    pub(crate) fn due_sinks(
        &mut self,
        now: i64,
        sinks: Option<&[String]>,
    ) -> Result<Vec<String>, Error> {
        let sinks: Option<Vec<String>> = sinks.map(<[String]>::to_vec);
        let result = (|| -> Result<Vec<String>> {
            self.client
                .query(
                    "SELECT DISTINCT sink FROM outbox WHERE state = 'pending' AND next_attempt_at <= $1 \
                     AND ($2::TEXT[] IS NULL OR sink = ANY($2)) ORDER BY sink",
                    &[&now, &sinks],
                )?
                .iter()
                .map(|r| Ok(r.try_get(0)?))
                .collect()
        })();
        result.map_err(|e| self.error(e))
    }

    pub(crate) fn mark_delivered(&mut self, delivery: i64, at: i64) -> Result<(), Error> {
        let changed = self.transact(|tx| {
            Ok(tx.execute(
                "UPDATE outbox SET state = 'delivered', delivered_at = $2, last_error = NULL \
                 WHERE id = $1",
                &[&delivery, &at],
            )?)
        })?;
        if changed == 0 {
            return Err(Error::new(format!(
                "{}: no delivery {delivery}",
                self.shown
            )));
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
        let state = self.transact(|tx| {
            let Some(row) = tx.query_opt(
                "SELECT attempts FROM outbox WHERE id = $1 AND state = 'pending' FOR UPDATE",
                &[&delivery],
            )?
            else {
                return Ok(None);
            };
            let attempts: i64 = row.try_get(0)?;
            let state = if give_up || attempts >= MAX_ATTEMPTS {
                DeliveryState::Failed
            } else {
                DeliveryState::Pending
            };
            tx.execute(
                "UPDATE outbox SET state = $2, next_attempt_at = $3, last_error = $4 WHERE id = $1",
                &[
                    &delivery,
                    &state.name(),
                    &(at + backoff(attempts.max(1))),
                    &error,
                ],
            )?;
            Ok(Some(state))
        })?;
        state.ok_or_else(|| Error::new(format!("{}: no pending delivery {delivery}", self.shown)))
    }

    pub(crate) fn record_clean(
        &mut self,
        environment: &str,
        servers: &[&str],
        at: i64,
    ) -> Result<(), Error> {
        self.transact(|tx| {
            for server in servers {
                tx.execute(
                    "INSERT INTO server_checks (environment, server, last_clean) \
                     VALUES ($1, $2, $3) ON CONFLICT (environment, server) DO UPDATE \
                     SET last_clean = GREATEST(server_checks.last_clean, excluded.last_clean)",
                    &[&environment, server, &at],
                )?;
            }
            Ok(())
        })
    }

    pub(crate) fn sink_ref(&mut self, sink: &str, event: i64) -> Result<Option<String>, Error> {
        let result = (|| -> Result<Option<String>> {
            match self.client.query_opt(
                "SELECT reference FROM sink_refs WHERE sink = $1 AND event_id = $2",
                &[&sink, &event],
            )? {
                Some(row) => Ok(Some(row.try_get(0)?)),
                None => Ok(None),
            }
        })();
        result.map_err(|e| self.error(e))
    }

    pub(crate) fn set_sink_ref(
        &mut self,
        sink: &str,
        event: i64,
        reference: &str,
    ) -> Result<(), Error> {
        self.transact(|tx| {
            tx.execute(
                "INSERT INTO sink_refs (sink, event_id, reference) VALUES ($1, $2, $3) \
                 ON CONFLICT (sink, event_id) DO UPDATE SET reference = excluded.reference",
                &[&sink, &event, &reference],
            )?;
            Ok(())
        })
    }

    pub(crate) fn history(&mut self, q: &HistoryQuery) -> Result<Vec<HistoryRow>, Error> {
        let st = history::statements(q, Dialect::Postgres);
        let params: Vec<&(dyn postgres::types::ToSql + Sync)> = st
            .params
            .iter()
            .map(|p| match p {
                Param::Text(t) => t as &(dyn postgres::types::ToSql + Sync),
                Param::Int(i) => i as &(dyn postgres::types::ToSql + Sync),
            })
            .collect();
        // One transaction: both statements see the same events.
        let (counts, durations) = self.transact(|tx| {
            let counts = tx
                .query(&st.counts, &params)?
                .iter()
                .map(|r| {
                    let mut values = [0i64; history::COUNT_COLUMNS];
                    for (i, v) in values.iter_mut().enumerate() {
                        *v = r.try_get::<_, Option<i64>>(i + 4)?.unwrap_or(0);
                    }
                    Ok(CountRow {
                        key: r.try_get(0)?,
                        server: r.try_get(1)?,
                        day: r.try_get(2)?,
                        class: r.try_get(3)?,
                        values,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let durations = tx
                .query(&st.durations, &params)?
                .iter()
                .map(|r| {
                    Ok(DurationRow {
                        key: r.try_get(0)?,
                        server: r.try_get(1)?,
                        first_seen: r.try_get(2)?,
                        to_first_sighting: r.try_get(3)?,
                        to_resolution: r.try_get(4)?,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok((counts, durations))
        })?;
        Ok(history::assemble(q, counts, durations))
    }

    /// Inserts events as given, in one transaction, with no deduplication
    /// or outbox: for benchmarks and tests that need a large ledger fast.
    pub(crate) fn insert_events(&mut self, events: &[Event]) -> Result<(), Error> {
        self.transact(|tx| {
            let stmt = tx.prepare(
                "INSERT INTO events (environment, server, tool, pinned, live, kind, \
                 severity, findings, vendor, server_version, first_seen, last_seen, count, \
                 resolved_at, resolution, pinned_version, reruns, unchanged_at, \
                 finding_kinds) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, \
                 $13, $14, $15, $16, $17, $18, $19)",
            )?;
            for e in events {
                let (resolved_at, resolution) = match &e.resolved {
                    Some((at, r)) => (Some(*at), Some(r.reason())),
                    None => (None, None),
                };
                tx.execute(
                    &stmt,
                    &[
                        &e.environment,
                        &e.server,
                        &e.tool,
                        &key(&e.pinned),
                        &key(&e.live),
                        &e.kind.name(),
                        &e.severity.map(|s| s.name()),
                        &findings_json(&e.findings),
                        &e.vendor,
                        &e.server_version,
                        &e.first_seen,
                        &e.last_seen,
                        &e.count,
                        &resolved_at,
                        &resolution,
                        &e.pinned_version,
                        &e.reruns,
                        &e.unchanged_at,
                        &kind_bits(&e.findings),
                    ],
                )?;
            }
            Ok(())
        })
    }

    pub(crate) fn deliveries(&mut self, event: i64) -> Result<Vec<Delivery>, Error> {
        // One snapshot for the whole read.
        self.transact(|tx| {
            let ids: Vec<i64> = tx
                .query(
                    "SELECT id FROM outbox WHERE event_id = $1 ORDER BY id",
                    &[&event],
                )?
                .iter()
                .map(|r| r.try_get(0))
                .collect::<Result<_, _>>()?;
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(d) = delivery_in(tx, id)? {
                    out.push(d);
                }
            }
            Ok(out)
        })
    }
}

/// The key of a sighting's event, to order a batch by.
/// Tool usage (`crate::usage`): merged writes, reads, compaction. Writers
/// take a SHARE ROW EXCLUSIVE lock on `usage_calls` (it conflicts with
/// itself, not with readers), so merges from several processes queue.
impl Store {
    pub(crate) fn usage_merge(&mut self, calls: &Aggregates) -> Result<UsageWritten, Error> {
        let limits = *calls.limits();
        // Sorted: equal input, equal work, whatever the table's order.
        let keys = calls.calls();
        self.transact(|tx| {
            tx.batch_execute("LOCK TABLE usage_calls IN SHARE ROW EXCLUSIVE MODE")?;
            let select = tx.prepare(usage::SELECT_ONE)?;
            let upsert = tx.prepare(usage::UPSERT)?;
            let add_events = tx.prepare(usage::ADD_EVENTS)?;
            let mut written = UsageWritten::default();
            for (key, stats) in &keys {
                let hour = usage::hour_to_db(key.hour);
                let stored: Option<String> = tx
                    .query_opt(
                        &select,
                        &[
                            &hour,
                            &1i64,
                            &key.environment,
                            &key.tenant,
                            &key.agent,
                            &key.catalog,
                            &key.tool,
                        ],
                    )?
                    .map(|r| r.try_get(0))
                    .transpose()?;
                let text =
                    usage::merged(stored.as_deref(), stats, key, &limits).map_err(Fail::Data)?;
                written.keys += 1;
                written.merged += u64::from(stored.is_some());
                tx.execute(
                    &upsert,
                    &[
                        &hour,
                        &1i64,
                        &key.environment,
                        &key.tenant,
                        &key.agent,
                        &key.catalog,
                        &key.tool,
                        &text,
                    ],
                )?;
            }
            for (e, n) in calls.events() {
                let n = i64::try_from(*n).unwrap_or(i64::MAX);
                tx.execute(
                    &add_events,
                    &[
                        &usage::hour_to_db(e.hour),
                        &e.environment,
                        &e.event,
                        &e.server,
                        &e.tool,
                        &e.rule,
                        &e.catalog,
                        &n,
                    ],
                )?;
                written.event_counts += 1;
            }
            Ok(written)
        })
    }

    pub(crate) fn usage_read(&mut self, filter: &UsageFilter) -> Result<Aggregates, Error> {
        let from = usage::hour_to_db(filter.from_hour);
        let until = usage::hour_to_db(filter.until_hour);
        let environment = filter.environment.clone();
        self.transact(|tx| {
            let rows = match &environment {
                Some(env) => tx.query(usage::SELECT_RANGE_ENV, &[&from, &until, env])?,
                None => tx.query(usage::SELECT_RANGE, &[&from, &until])?,
            };
            let mut calls: Vec<(Key, ToolStats)> = Vec::with_capacity(rows.len());
            for r in &rows {
                let key = usage_key(r)?;
                let text: String = r.try_get(6)?;
                calls.push((key.clone(), usage::decode(&text, &key).map_err(Fail::Data)?));
            }
            let mut events: Vec<(EventKey, u64)> = Vec::new();
            for r in tx.query(usage::SELECT_EVENTS, &[&from, &until])? {
                let hour: i64 = r.try_get(0)?;
                let key = EventKey {
                    hour: usage::hour_from_db(hour).map_err(Fail::Data)?,
                    environment: r.try_get(1)?,
                    event: r.try_get(2)?,
                    server: r.try_get(3)?,
                    tool: r.try_get(4)?,
                    rule: r.try_get(5)?,
                    catalog: r.try_get(6)?,
                };
                let n: i64 = r.try_get(7)?;
                if environment.as_ref().is_none_or(|e| *e == key.environment) {
                    events.push((key, u64::try_from(n).unwrap_or(0)));
                }
            }
            Ok(usage::collect(calls, events))
        })
    }

    pub(crate) fn usage_compact(
        &mut self,
        hourly_before: u64,
        delete_before: Option<u64>,
    ) -> Result<Compacted, Error> {
        let limits = toolpin_usage::Limits::default();
        let before = usage::hour_to_db(hourly_before);
        self.transact(|tx| {
            tx.batch_execute("LOCK TABLE usage_calls IN SHARE ROW EXCLUSIVE MODE")?;
            let mut done = Compacted::default();
            if let Some(expired) = delete_before {
                let expired = usage::hour_to_db(expired);
                done.deleted += tx.execute(usage::DELETE_EXPIRED_CALLS, &[&expired])?;
                done.deleted += tx.execute(usage::DELETE_EXPIRED_EVENTS, &[&expired])?;
            }
            let mut hours: Vec<(Key, ToolStats)> = Vec::new();
            for r in tx.query(usage::SELECT_OLD_HOURS, &[&before])? {
                let key = usage_key(&r)?;
                let text: String = r.try_get(6)?;
                let stats = usage::decode(&text, &key).map_err(Fail::Data)?;
                hours.push((key, stats));
            }
            done.hours_rolled = hours.len() as u64;
            tx.execute(usage::DELETE_OLD_HOURS, &[&before])?;
            let select = tx.prepare(usage::SELECT_ONE)?;
            let upsert = tx.prepare(usage::UPSERT)?;
            for (key, stats) in usage::roll_up(hours, &limits) {
                let hour = usage::hour_to_db(key.hour);
                let stored: Option<String> = tx
                    .query_opt(
                        &select,
                        &[
                            &hour,
                            &usage::DAY,
                            &key.environment,
                            &key.tenant,
                            &key.agent,
                            &key.catalog,
                            &key.tool,
                        ],
                    )?
                    .map(|r| r.try_get(0))
                    .transpose()?;
                let text =
                    usage::merged(stored.as_deref(), &stats, &key, &limits).map_err(Fail::Data)?;
                tx.execute(
                    &upsert,
                    &[
                        &hour,
                        &usage::DAY,
                        &key.environment,
                        &key.tenant,
                        &key.agent,
                        &key.catalog,
                        &key.tool,
                        &text,
                    ],
                )?;
                done.days_written += 1;
            }
            Ok(done)
        })
    }

    pub(crate) fn usage_span(&mut self) -> Result<Option<(u64, u64)>, Error> {
        self.transact(|tx| {
            let r = tx.query_one(usage::SELECT_SPAN, &[])?;
            let (a, b): (Option<i64>, Option<i64>) = (r.try_get(0)?, r.try_get(1)?);
            Ok(match (a, b) {
                (Some(a), Some(b)) => {
                    Some((u64::try_from(a).unwrap_or(0), u64::try_from(b).unwrap_or(0)))
                }
                _ => None,
            })
        })
    }
}

/// The key of a `usage_calls` row (its first six columns).
fn usage_key(r: &Row) -> Result<Key> {
    let hour: i64 = r.try_get(0)?;
    Ok(Key {
        hour: usage::hour_from_db(hour).map_err(Fail::Data)?,
        environment: r.try_get(1)?,
        tenant: r.try_get(2)?,
        agent: r.try_get(3)?,
        catalog: r.try_get(4)?,
        tool: r.try_get(5)?,
    })
}

fn sort_key(s: &Sighting) -> (&str, &str, &str, &str, &str, &str) {
    (
        &s.environment,
        &s.server,
        &s.tool,
        key(&s.pinned),
        key(&s.live),
        s.kind.name(),
    )
}

/// Whether a failed transaction is worth running again: it lost a race
/// that another transaction won.
fn retryable(e: &postgres::Error) -> bool {
    e.code().is_some_and(|code| {
        *code == SqlState::T_R_SERIALIZATION_FAILURE
            || *code == SqlState::T_R_DEADLOCK_DETECTED
            || *code == SqlState::UNIQUE_VIOLATION
    })
}

/// The kinds for which `keep` holds, as an SQL list of string literals
/// (the names are this crate's constants, never input).
fn kind_list(keep: fn(EventKind) -> bool) -> String {
    EventKind::ALL
        .into_iter()
        .filter(|k| keep(*k))
        .map(|k| format!("'{}'", k.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The key column of an absent fingerprint: `""` (NULLs are distinct in
/// unique indexes).
fn key(fingerprint: &Option<String>) -> &str {
    fingerprint.as_deref().unwrap_or("")
}

fn record_in(tx: &mut Transaction<'_>, s: &Sighting, sinks: &[&str]) -> Result<Recorded> {
    let severity = s.severity();
    let severity_name = severity.map(|v| v.name());
    let (pinned, live, kind) = (key(&s.pinned), key(&s.live), s.kind.name());
    let findings = findings_json(&s.findings);
    let kinds = kind_bits(&s.findings);
    let mut recorded = None;
    // At most a few turns: the open event is locked, or inserted, or
    // another watcher inserted it meanwhile (then it is locked next turn).
    for _ in 0..ATTEMPTS {
        let existing = tx.query_opt(
            "SELECT id, severity FROM events WHERE environment = $1 AND server = $2 \
             AND tool = $3 AND pinned = $4 AND live = $5 AND kind = $6 AND resolved_at IS NULL \
             FOR UPDATE",
            &[&s.environment, &s.server, &s.tool, &pinned, &live, &kind],
        )?;
        if let Some(row) = existing {
            let id: i64 = row.try_get(0)?;
            let old: Option<String> = row.try_get(1)?;
            let old = old.as_deref().and_then(severity_from_name);
            if more_severe(severity, old) {
                tx.execute(
                    "UPDATE events SET count = count + 1, \
                     first_seen = LEAST(first_seen, $2), last_seen = GREATEST(last_seen, $2), \
                     severity = $3, findings = $4, reruns = $5, finding_kinds = $6 WHERE id = $1",
                    &[&id, &s.at, &severity_name, &findings, &s.reruns, &kinds],
                )?;
                recorded = Some(Recorded {
                    event: id,
                    outcome: RecordOutcome::MoreSevere,
                });
            } else {
                tx.execute(
                    "UPDATE events SET count = count + 1, \
                     first_seen = LEAST(first_seen, $2), last_seen = GREATEST(last_seen, $2) \
                     WHERE id = $1",
                    &[&id, &s.at],
                )?;
                recorded = Some(Recorded {
                    event: id,
                    outcome: RecordOutcome::Seen,
                });
            }
            break;
        }
        let inserted = tx.query_opt(
            "INSERT INTO events (environment, server, tool, pinned, live, kind, severity, \
             findings, vendor, server_version, first_seen, last_seen, count, \
             pinned_version, reruns, unchanged_at, finding_kinds) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, 1, $12, $13, \
             (SELECT last_clean FROM server_checks WHERE environment = $1 AND server = $2 \
              AND last_clean <= $11), $14) \
             ON CONFLICT (environment, server, tool, pinned, live, kind) \
             WHERE resolved_at IS NULL DO NOTHING RETURNING id",
            &[
                &s.environment,
                &s.server,
                &s.tool,
                &pinned,
                &live,
                &kind,
                &severity_name,
                &findings,
                &s.vendor,
                &s.server_version,
                &s.at,
                &s.pinned_version,
                &s.reruns,
                &kinds,
            ],
        )?;
        if let Some(row) = inserted {
            recorded = Some(Recorded {
                event: row.try_get(0)?,
                outcome: RecordOutcome::New,
            });
            break;
        }
    }
    let Some(recorded) = recorded else {
        return Err(Fail::Data(
            "the open event kept changing under this write; try again".to_string(),
        ));
    };
    let notice = match (recorded.outcome, severity) {
        (RecordOutcome::New, _) => Some(Notice::Trigger),
        (RecordOutcome::MoreSevere, Some(level)) => Some(Notice::Escalate(level)),
        _ => None,
    };
    if let Some(notice) = notice {
        for sink in sinks {
            enqueue_in(tx, sink, recorded.event, notice, s.at)?;
        }
    }
    Ok(recorded)
}

fn resolve_in(
    tx: &mut Transaction<'_>,
    (environment, server, tool): (&str, &str, &str),
    kinds: fn(EventKind) -> bool,
    resolution: &Resolution,
    at: i64,
) -> Result<Vec<i64>> {
    let live = match resolution {
        Resolution::Accepted { live } => Some(live.as_str()),
        Resolution::Reverted => None,
    };
    let sql = format!(
        "SELECT id FROM events WHERE environment = $1 AND server = $2 AND tool = $3 \
         AND ($4::TEXT IS NULL OR live = $4) AND resolved_at IS NULL AND kind IN ({}) \
         ORDER BY id FOR UPDATE",
        kind_list(kinds)
    );
    let ids: Vec<i64> = tx
        .query(&sql, &[&environment, &server, &tool, &live])?
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?;
    for id in &ids {
        tx.execute(
            "UPDATE events SET resolved_at = $2, resolution = $3 WHERE id = $1",
            &[id, &at, &resolution.reason()],
        )?;
        // A resolve for every sink that was sent (or owes) a trigger.
        tx.execute(
            "INSERT INTO outbox (sink, event_id, what, level, state, attempts, next_attempt_at, \
             created_at) \
             SELECT sink, event_id, 'resolve', '', 'pending', 0, $2, $2 FROM outbox \
             WHERE event_id = $1 AND what = 'trigger' ORDER BY id \
             ON CONFLICT (sink, event_id, what, level) DO NOTHING",
            &[id, &at],
        )?;
    }
    Ok(ids)
}

fn enqueue_in(
    tx: &mut Transaction<'_>,
    sink: &str,
    event: i64,
    notice: Notice,
    at: i64,
) -> Result<bool> {
    let added = tx.execute(
        "INSERT INTO outbox (sink, event_id, what, level, state, attempts, next_attempt_at, \
         created_at) VALUES ($1, $2, $3, $4, 'pending', 0, $5, $5) \
         ON CONFLICT (sink, event_id, what, level) DO NOTHING",
        &[&sink, &event, &notice.what(), &notice.level(), &at],
    )?;
    Ok(added == 1)
}

fn event_in(conn: &mut impl GenericClient, id: i64) -> Result<Option<Event>> {
    match conn.query_opt(
        &format!("SELECT {EVENT_COLUMNS} FROM events WHERE id = $1"),
        &[&id],
    )? {
        Some(row) => Ok(Some(read_event(&row)?)),
        None => Ok(None),
    }
}

fn delivery_in(conn: &mut impl GenericClient, id: i64) -> Result<Option<Delivery>> {
    let Some(row) = conn.query_opt(
        "SELECT id, sink, event_id, what, level, state, attempts, next_attempt_at, \
         last_error, delivered_at FROM outbox WHERE id = $1",
        &[&id],
    )?
    else {
        return Ok(None);
    };
    let event_id: i64 = row.try_get(2)?;
    let Some(event) = event_in(conn, event_id)? else {
        return Ok(None);
    };
    let what: String = row.try_get(3)?;
    let level: String = row.try_get(4)?;
    let state: String = row.try_get(5)?;
    let notice =
        Notice::parse(&what, &level).ok_or_else(|| Fail::Data(format!("unknown what {what:?}")))?;
    let state = DeliveryState::parse(&state)
        .ok_or_else(|| Fail::Data(format!("unknown state {state:?}")))?;
    Ok(Some(Delivery {
        id: row.try_get(0)?,
        sink: row.try_get(1)?,
        notice,
        state,
        attempts: row.try_get(6)?,
        next_attempt_at: row.try_get(7)?,
        last_error: row.try_get(8)?,
        delivered_at: row.try_get(9)?,
        event,
    }))
}

fn optional_key(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

fn read_event(r: &Row) -> Result<Event> {
    let kind: String = r.try_get(6)?;
    let severity: Option<String> = r.try_get(7)?;
    let findings: String = r.try_get(8)?;
    let resolved_at: Option<i64> = r.try_get(14)?;
    let resolution: Option<String> = r.try_get(15)?;
    let live: String = r.try_get(5)?;
    let resolved = match (resolved_at, resolution.as_deref()) {
        (Some(at), Some("accepted")) => Some((at, Resolution::Accepted { live: live.clone() })),
        (Some(at), Some("reverted")) => Some((at, Resolution::Reverted)),
        (None, None) => None,
        (_, other) => {
            return Err(Fail::Data(format!(
                "unknown resolution {:?}",
                other.unwrap_or("")
            )))
        }
    };
    Ok(Event {
        id: r.try_get(0)?,
        environment: r.try_get(1)?,
        server: r.try_get(2)?,
        tool: r.try_get(3)?,
        pinned: optional_key(r.try_get(4)?),
        live: optional_key(live),
        kind: EventKind::parse(&kind)
            .ok_or_else(|| Fail::Data(format!("unknown kind {kind:?}")))?,
        severity: match severity {
            Some(s) => Some(
                severity_from_name(&s)
                    .ok_or_else(|| Fail::Data(format!("unknown severity {s:?}")))?,
            ),
            None => None,
        },
        findings: parse_findings(&findings)
            .map_err(|e| Fail::Data(format!("unreadable findings: {e}")))?,
        vendor: r.try_get(9)?,
        server_version: r.try_get(10)?,
        first_seen: r.try_get(11)?,
        last_seen: r.try_get(12)?,
        count: r.try_get(13)?,
        resolved,
        pinned_version: r.try_get(16)?,
        reruns: r.try_get(17)?,
        unchanged_at: r.try_get(18)?,
    })
}

/// The error and its causes, in one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    one_line(&text)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// ` at HOST` for the hosts the URL names (a socket directory or a name).
fn hosts_shown(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    if hosts.is_empty() {
        String::new()
    } else {
        format!(" at {}", hosts.join(","))
    }
}

/// The URL split at its user part: scheme, user, password (as written),
/// and what follows the `@`. The user part ends at the last `@`, so a
/// password holding `/`, `?` or `@` unencoded is still all of it (at worst
/// more than the password is hidden, never less).
fn split_user(url: &str) -> Option<(&str, &str, Option<&str>, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let (user_info, after) = rest.rsplit_once('@')?;
    Some(match user_info.split_once(':') {
        Some((user, password)) => (scheme, user, Some(password), after),
        None => (scheme, user_info, None, after),
    })
}

/// The URL with its password (in the user part or a `password=` parameter)
/// replaced by `***`: `postgres://toolpin:***@db/toolpin`.
pub(crate) fn redact(url: &str) -> String {
    let (head, after) = match split_user(url) {
        Some((scheme, user, Some(_), after)) => (format!("{scheme}://{user}:***@"), after),
        Some((scheme, user, None, after)) => (format!("{scheme}://{user}@"), after),
        None => (String::new(), url),
    };
    let after = match after.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => pair.to_string(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => after.to_string(),
    };
    format!("{head}{after}")
}

/// The password as it appears in the URL, and percent-decoded: text no
/// message may hold.
fn secrets_of(url: &str) -> Vec<String> {
    let mut found = Vec::new();
    let after = match split_user(url) {
        Some((_, _, password, after)) => {
            found.extend(password.map(str::to_string));
            after
        }
        None => url,
    };
    if let Some((_, query)) = after.split_once('?') {
        for pair in query.split('&') {
            if let Some((k, v)) = pair.split_once('=') {
                if k.eq_ignore_ascii_case("password") {
                    found.push(v.to_string());
                }
            }
        }
    }
    let decoded: Vec<String> = found.iter().map(|p| percent_decode(p)).collect();
    found.extend(decoded);
    found.retain(|p| !p.is_empty());
    found.sort_by_key(|p| std::cmp::Reverse(p.len()));
    found.dedup();
    found
}

/// `text` with every secret replaced by `***`.
fn scrub(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for secret in secrets {
        out = out.replace(secret.as_str(), "***");
    }
    out
}

/// The value of a query parameter of the URL, percent-decoded.
fn query_value(url: &str, name: &str) -> Option<String> {
    let (_, query) = url.split_once('?')?;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| percent_decode(v))
    })
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_the_user_part_or_a_parameter_is_redacted() {
        assert_eq!(
            redact("postgres://toolpin:s3cret@db/toolpin"),
            "postgres://toolpin:***@db/toolpin"
        );
        assert_eq!(
            redact("postgresql://toolpin:p%40ss@db:5433,db2/toolpin?sslmode=disable"),
            "postgresql://toolpin:***@db:5433,db2/toolpin?sslmode=disable"
        );
        assert_eq!(
            redact("postgres://toolpin@/toolpin?host=/run/postgresql&password=hunter2"),
            "postgres://toolpin@/toolpin?host=/run/postgresql&password=***"
        );
        assert_eq!(redact("postgres://db/toolpin"), "postgres://db/toolpin");
        // An `@`, `/` or `?` in the password (unencoded) still hides all
        // of it.
        assert_eq!(redact("postgres://u:a@b@db/x"), "postgres://u:***@db/x");
        assert_eq!(redact("postgres://u:a/b?c@db/x"), "postgres://u:***@db/x");
        assert_eq!(
            secrets_of("postgres://u:a/b?c@db/x"),
            vec!["a/b?c".to_string()]
        );
    }

    #[test]
    fn secrets_are_found_raw_and_decoded_and_scrubbed() {
        let s = secrets_of("postgres://u:p%40ss@db/x?password=other");
        assert!(s.contains(&"p%40ss".to_string()));
        assert!(s.contains(&"p@ss".to_string()));
        assert!(s.contains(&"other".to_string()));
        assert_eq!(
            scrub("auth failed for p@ss and p%40ss", &s),
            "auth failed for *** and ***"
        );
    }

    #[test]
    fn urls_are_recognized_by_their_scheme() {
        assert!(is_url("postgres://db/x"));
        assert!(is_url("PostgreSQL://db/x"));
        assert!(!is_url("toolpin.ledger.db"));
        assert!(!is_url("/var/lib/toolpin/postgres://x"));
        assert!(!is_url("é"));
    }

    #[test]
    fn percent_decoding_leaves_broken_escapes_alone() {
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%4"), "%4");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
