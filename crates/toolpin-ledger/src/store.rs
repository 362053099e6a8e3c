//! The ledger's operations, each written once for both backends (issue
//! 33, point 3): the statements of [`crate::statements`] run in a
//! transaction of either driver ([`Tx`]).
//!
//! - A write is one transaction: SQLite's immediate one (writers queue on
//!   the busy timeout), PostgreSQL's at READ COMMITTED, run again from the
//!   start when it lost a race ([`crate::postgres`]).
//! - One open event per key: the partial unique index, `INSERT … ON
//!   CONFLICT DO NOTHING` and a re-read when another writer inserted it
//!   first; the open event is read `{for_update}`, so two PostgreSQL
//!   watchers never both see it as "more severe" (SQLite's immediate
//!   transaction already keeps the second out).
//! - `take_due` takes the rows it leases `{skip_locked}`: two watchers
//!   never take one delivery.
//! - Migrations run under [`crate::dialect::Dialect::migration_lock`] where there is one,
//!   so two processes opening a fresh database at once apply each once.
//! - The usage tables' writers take [`crate::dialect::Dialect::usage_lock`] where the
//!   transaction does not keep other writers out already.

use std::path::Path;

use toolpin_manifest::SafeUrl;
use toolpin_usage::{Aggregates, EventKey, Key, ToolStats};

use crate::driver::{args, Arg, Fail, Result, Row, Tx};
use crate::history::{self, CountRow, DurationRow, HistoryQuery, HistoryRow, Param};
use crate::statements::*;
use crate::stored::{findings_json, kind_bits, more_severe, parse_findings};
use crate::usage::{self, Compacted, UsageFilter, UsageWritten};
use crate::{backoff, Delivery, DeliveryState, Notice, LEASE, MAX_ATTEMPTS};
use crate::{
    migrate, postgres, sqlite, Error, Event, EventFilter, EventKind, Options, RecordOutcome,
    Recorded, Resolution, Severity, Sighting,
};

/// The key of the advisory lock migrations run under ("toolpin" in ASCII).
const MIGRATION_LOCK: i64 = 0x0074_6f6f_6c70_696e;

/// How many turns recording a sighting takes at most: the open event is
/// locked, or inserted, or another writer inserted it meanwhile (then it
/// is locked next turn).
const TURNS: usize = postgres::ATTEMPTS;

enum Conn {
    Sqlite(sqlite::Conn),
    /// Boxed: the client is far larger than a SQLite connection.
    Postgres(Box<postgres::Conn>),
}

pub(crate) struct Store {
    conn: Conn,
    /// The location as messages name it (a URL's password hidden).
    shown: String,
    busy_seconds: f64,
    /// The URL connected to, whose secrets no message may hold.
    url: Option<SafeUrl>,
}

impl Store {
    pub(crate) fn open(path: &Path, options: &Options) -> Result<Self, Error> {
        let shown = path.display().to_string();
        let conn = sqlite::Conn::open(path, &shown, options)?;
        Self::migrated(Conn::Sqlite(conn), shown, None, options)
    }

    pub(crate) fn connect(url: &SafeUrl, options: &Options) -> Result<Self, Error> {
        let conn = postgres::Conn::connect(url, options)?;
        Self::migrated(
            Conn::Postgres(Box::new(conn)),
            url.to_string(),
            Some(url.clone()),
            options,
        )
    }

    fn migrated(
        conn: Conn,
        shown: String,
        url: Option<SafeUrl>,
        options: &Options,
    ) -> Result<Self, Error> {
        let mut store = Self {
            conn,
            shown,
            busy_seconds: options.busy_timeout.as_secs_f64(),
            url,
        };
        store.migrate()?;
        Ok(store)
    }

    /// One line for a failure, naming the ledger, with no secret in it.
    fn error(&self, fail: Fail) -> Error {
        let (shown, busy) = (self.shown.as_str(), self.busy_seconds);
        let text = match &fail {
            Fail::Data(text) => format!("{shown}: {text}"),
            Fail::Sqlite(e) => sqlite::message(shown, busy, e),
            Fail::Postgres(e) => postgres::message(shown, busy, e),
        };
        Error::new(match &self.url {
            Some(url) => url.redact(&text),
            None => text,
        })
    }

    /// Runs `work` in one write transaction.
    fn write<T>(&mut self, mut work: impl FnMut(&mut Tx<'_>) -> Result<T>) -> Result<T, Error> {
        let outcome = match &mut self.conn {
            Conn::Sqlite(c) => c.run(true, &mut work),
            Conn::Postgres(c) => c.run(&mut work),
        };
        outcome.map_err(|e| self.error(e))
    }

    /// Runs `work` in one read transaction: what it reads is one snapshot.
    fn read<T>(&mut self, mut work: impl FnMut(&mut Tx<'_>) -> Result<T>) -> Result<T, Error> {
        let outcome = match &mut self.conn {
            Conn::Sqlite(c) => c.run(false, &mut work),
            Conn::Postgres(c) => c.run(&mut work),
        };
        outcome.map_err(|e| self.error(e))
    }

    fn migrate(&mut self) -> Result<(), Error> {
        let newer = self.write(|tx| {
            let dialect = tx.dialect();
            if let Some(lock) = dialect.migration_lock() {
                tx.execute(lock, args![MIGRATION_LOCK])?;
            }
            tx.batch(migrate::MIGRATIONS_TABLE)?;
            let found: i64 = tx.row(SCHEMA_VERSION, &[], |r| r.get(0))?.unwrap_or(0);
            if found > migrate::CURRENT {
                return Ok(Some(found));
            }
            for m in migrate::MIGRATIONS {
                if m.version > found {
                    tx.batch(dialect.migration(m))?;
                    tx.execute(ADD_MIGRATION, args![m.version, m.name])?;
                }
            }
            Ok(None)
        })?;
        match newer {
            Some(found) => Err(Error::new(format!(
                "{}: schema version {found} is newer than this toolpin reads ({}); upgrade toolpin",
                self.shown,
                migrate::CURRENT
            ))),
            None => Ok(()),
        }
    }

    pub(crate) fn schema_version(&mut self) -> Result<i64, Error> {
        self.read(|tx| Ok(tx.row(SCHEMA_VERSION, &[], |r| r.get(0))?.unwrap_or(0)))
    }

    pub(crate) fn record(&mut self, s: &Sighting, sinks: &[&str]) -> Result<Recorded, Error> {
        self.write(|tx| record_in(tx, s, sinks))
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
        self.write(|tx| {
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
        self.write(|tx| {
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
        self.write(|tx| resolve_in(tx, tool, kinds, resolution, at))
    }

    pub(crate) fn events(&mut self, filter: &EventFilter, open: bool) -> Result<Vec<Event>, Error> {
        let sql = events(open);
        self.read(|tx| {
            let filter = args![&filter.environment, &filter.server, &filter.tool];
            tx.rows(&sql, filter, read_event)
        })
    }

    pub(crate) fn event(&mut self, id: i64) -> Result<Option<Event>, Error> {
        self.read(|tx| event_in(tx, id))
    }

    pub(crate) fn enqueue(
        &mut self,
        sink: &str,
        event: i64,
        notice: Notice,
        at: i64,
    ) -> Result<bool, Error> {
        self.write(|tx| enqueue_in(tx, sink, event, notice, at))
    }

    pub(crate) fn take_due(
        &mut self,
        now: i64,
        limit: usize,
        sinks: Option<&[String]>,
    ) -> Result<Vec<Delivery>, Error> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let sinks = sinks_json(sinks);
        self.write(|tx| {
            let ids: Vec<i64> = tx.rows(DUE, args![now, limit, sinks.as_deref()], |r| r.get(0))?;
            let mut taken = Vec::with_capacity(ids.len());
            for id in ids {
                tx.execute(LEASE_DELIVERY, args![id, now + LEASE])?;
                taken.extend(delivery_in(tx, id)?);
            }
            Ok(taken)
        })
    }

    pub(crate) fn due_sinks(
        &mut self,
        now: i64,
        sinks: Option<&[String]>,
    ) -> Result<Vec<String>, Error> {
        let sinks = sinks_json(sinks);
        self.read(|tx| tx.rows(DUE_SINKS, args![now, sinks.as_deref()], |r| r.get(0)))
    }

    pub(crate) fn mark_delivered(&mut self, delivery: i64, at: i64) -> Result<(), Error> {
        let changed = self.write(|tx| tx.execute(MARK_DELIVERED, args![delivery, at]))?;
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
        let state = self.write(|tx| {
            let Some(attempts) = tx.row(PENDING_ATTEMPTS, args![delivery], |r| r.get::<i64>(0))?
            else {
                return Ok(None);
            };
            let state = if give_up || attempts >= MAX_ATTEMPTS {
                DeliveryState::Failed
            } else {
                DeliveryState::Pending
            };
            let next = at + backoff(attempts.max(1));
            tx.execute(MARK_FAILED, args![delivery, state.name(), next, error])?;
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
        self.write(|tx| {
            for server in servers {
                tx.execute(RECORD_CLEAN, args![environment, *server, at])?;
            }
            Ok(())
        })
    }

    pub(crate) fn sink_ref(&mut self, sink: &str, event: i64) -> Result<Option<String>, Error> {
        self.read(|tx| tx.row(SINK_REF, args![sink, event], |r| r.get(0)))
    }

    pub(crate) fn set_sink_ref(
        &mut self,
        sink: &str,
        event: i64,
        reference: &str,
    ) -> Result<(), Error> {
        self.write(|tx| tx.execute(SET_SINK_REF, args![sink, event, reference]))
            .map(|_| ())
    }

    pub(crate) fn history(&mut self, q: &HistoryQuery) -> Result<Vec<HistoryRow>, Error> {
        let st = history::statements(q);
        let params: Vec<Arg<'_>> = st
            .params
            .iter()
            .map(|p| match p {
                Param::Text(t) => Arg::from(t),
                Param::Int(i) => Arg::from(*i),
            })
            .collect();
        // One read transaction: both statements see the same events.
        let (counts, durations) = self.read(|tx| {
            let counts = tx.rows(&st.counts, &params, |r| {
                let mut values = [0i64; history::COUNT_COLUMNS];
                for (i, v) in values.iter_mut().enumerate() {
                    *v = r.get::<Option<i64>>(i + 4)?.unwrap_or(0);
                }
                Ok(CountRow {
                    key: r.get(0)?,
                    server: r.get(1)?,
                    day: r.get(2)?,
                    class: r.get(3)?,
                    values,
                })
            })?;
            let durations = tx.rows(&st.durations, &params, |r| {
                Ok(DurationRow {
                    key: r.get(0)?,
                    server: r.get(1)?,
                    first_seen: r.get(2)?,
                    to_first_sighting: r.get(3)?,
                    to_resolution: r.get(4)?,
                })
            })?;
            Ok((counts, durations))
        })?;
        Ok(history::assemble(q, counts, durations))
    }

    /// Inserts events as given, in one transaction, with no deduplication
    /// or outbox: for benchmarks and tests that need a large ledger fast.
    pub(crate) fn insert_events(&mut self, events: &[Event]) -> Result<(), Error> {
        self.write(|tx| {
            for e in events {
                let (resolved_at, resolution) = match &e.resolved {
                    Some((at, r)) => (Some(*at), Some(r.reason())),
                    None => (None, None),
                };
                tx.execute(
                    INSERT_EVENT_AS_IS,
                    args![
                        &e.environment,
                        &e.server,
                        &e.tool,
                        key(&e.pinned),
                        key(&e.live),
                        e.kind.name(),
                        e.severity.map(|s| s.name()),
                        findings_json(&e.findings).as_str(),
                        &e.vendor,
                        &e.server_version,
                        e.first_seen,
                        e.last_seen,
                        e.count,
                        resolved_at,
                        resolution,
                        &e.pinned_version,
                        e.reruns,
                        e.unchanged_at,
                        kind_bits(&e.findings),
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// Prepares every statement the ledger runs, rendered for this
    /// database, without running any; how many. An error names the first
    /// the database does not read.
    pub(crate) fn prepare_every_statement(&mut self) -> Result<usize, Error> {
        let every = crate::statements::every();
        self.read(|tx| {
            for (name, sql) in &every {
                tx.prepare(sql).map_err(|e| match e {
                    Fail::Sqlite(e) => Fail::Data(format!("{name}: {e}")),
                    Fail::Postgres(e) => Fail::Data(format!("{name}: {e:?}")),
                    Fail::Data(e) => Fail::Data(format!("{name}: {e}")),
                })?;
            }
            Ok(every.len())
        })
    }

    pub(crate) fn deliveries(&mut self, event: i64) -> Result<Vec<Delivery>, Error> {
        self.read(|tx| {
            let ids: Vec<i64> = tx.rows(DELIVERIES_OF, args![event], |r| r.get(0))?;
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                out.extend(delivery_in(tx, id)?);
            }
            Ok(out)
        })
    }
}

/// Tool usage (`crate::usage`): merged writes, reads, compaction.
impl Store {
    pub(crate) fn usage_merge(&mut self, calls: &Aggregates) -> Result<UsageWritten, Error> {
        let limits = *calls.limits();
        // Sorted: equal input, equal work, whatever the table's order.
        let keys = calls.calls();
        self.write(|tx| {
            if let Some(lock) = tx.dialect().usage_lock() {
                tx.batch(lock)?;
            }
            let mut written = UsageWritten::default();
            for (key, stats) in &keys {
                let stored = merge_row(tx, key, 1, stats, &limits)?;
                written.keys += 1;
                written.merged += u64::from(stored);
            }
            for (e, n) in calls.events() {
                let n = i64::try_from(*n).unwrap_or(i64::MAX);
                tx.execute(
                    USAGE_ADD_EVENTS,
                    args![
                        usage::hour_to_db(e.hour),
                        &e.environment,
                        &e.event,
                        &e.server,
                        &e.tool,
                        &e.rule,
                        &e.catalog,
                        n
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
        let range = args![from, until, &filter.environment];
        self.read(|tx| {
            let mut out = Aggregates::new(toolpin_usage::Limits::default());
            // The key's parts are borrowed from the row: the table copies
            // them only for a key it has not seen (reading each row's key
            // into five strings was most of the read's cost), and the
            // statistics decode straight into the table, sharing its names.
            tx.each(USAGE_RANGE, range, |r| {
                let hour = usage::hour_from_db(r.get(0)?).map_err(Fail::Data)?;
                let parts = [r.str(1)?, r.str(2)?, r.str(3)?, r.str(4)?, r.str(5)?];
                usage::add_row(&mut out, r.str(6)?, hour, parts).map_err(Fail::Data)?;
                Ok(())
            })?;
            tx.each(USAGE_EVENTS, range, |r| {
                let key = EventKey {
                    hour: usage::hour_from_db(r.get(0)?).map_err(Fail::Data)?,
                    environment: r.get(1)?,
                    event: r.get(2)?,
                    server: r.get(3)?,
                    tool: r.get(4)?,
                    rule: r.get(5)?,
                    catalog: r.get(6)?,
                };
                let n: i64 = r.get(7)?;
                out.add_events(key, u64::try_from(n).unwrap_or(0));
                Ok(())
            })?;
            Ok(out)
        })
    }

    pub(crate) fn usage_compact(
        &mut self,
        hourly_before: u64,
        delete_before: Option<u64>,
    ) -> Result<Compacted, Error> {
        let limits = toolpin_usage::Limits::default();
        let before = usage::hour_to_db(hourly_before);
        self.write(|tx| {
            if let Some(lock) = tx.dialect().usage_lock() {
                tx.batch(lock)?;
            }
            let mut done = Compacted::default();
            if let Some(expired) = delete_before {
                let expired = usage::hour_to_db(expired);
                done.deleted += tx.execute(USAGE_DELETE_EXPIRED_CALLS, args![expired])?;
                done.deleted += tx.execute(USAGE_DELETE_EXPIRED_EVENTS, args![expired])?;
            }
            let hours = tx.rows(USAGE_OLD_HOURS, args![before], usage_row)?;
            done.hours_rolled = hours.len() as u64;
            tx.execute(USAGE_DELETE_OLD_HOURS, args![before])?;
            for (key, stats) in usage::roll_up(hours, &limits) {
                merge_row(tx, &key, usage::DAY, &stats, &limits)?;
                done.days_written += 1;
            }
            Ok(done)
        })
    }

    pub(crate) fn usage_span(&mut self) -> Result<Option<(u64, u64)>, Error> {
        let span = self.read(|tx| {
            tx.row(USAGE_SPAN, &[], |r| {
                Ok((r.get::<Option<i64>>(0)?, r.get::<Option<i64>>(1)?))
            })
        })?;
        Ok(match span {
            Some((Some(a), Some(b))) => {
                Some((u64::try_from(a).unwrap_or(0), u64::try_from(b).unwrap_or(0)))
            }
            _ => None,
        })
    }
}

/// Merges `stats` into the stored row of `key` over `hours` (writing it
/// when there is none); whether there was one.
fn merge_row(
    tx: &mut Tx<'_>,
    key: &Key,
    hours: i64,
    stats: &ToolStats,
    limits: &toolpin_usage::Limits,
) -> Result<bool> {
    let hour = usage::hour_to_db(key.hour);
    let parts = args![
        hour,
        hours,
        &*key.environment,
        &*key.tenant,
        &*key.agent,
        &*key.catalog,
        &*key.tool
    ];
    let stored: Option<String> = tx.row(USAGE_ONE, parts, |r| r.get(0))?;
    let text = usage::merged(stored.as_deref(), stats, key, limits).map_err(Fail::Data)?;
    let mut row = parts.to_vec();
    row.push(Arg::from(&text));
    tx.execute(USAGE_UPSERT, &row)?;
    Ok(stored.is_some())
}

/// A `usage_calls` row (hour, the five key parts, its statistics).
fn usage_row(r: &Row<'_>) -> Result<(Key, ToolStats)> {
    let hour = usage::hour_from_db(r.get(0)?).map_err(Fail::Data)?;
    let key = Key::new(
        hour,
        [r.str(1)?, r.str(2)?, r.str(3)?, r.str(4)?, r.str(5)?],
    );
    let stats = usage::decode(r.str(6)?, &key).map_err(Fail::Data)?;
    Ok((key, stats))
}

/// The sinks as a JSON array (what `{json_texts}` reads back): one
/// statement whatever their number. `None`: every sink.
fn sinks_json(sinks: Option<&[String]>) -> Option<String> {
    sinks.map(|s| serde_json::Value::from(s.to_vec()).to_string())
}

/// The key of a sighting's event, to order a batch by.
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

/// The key column of an absent fingerprint: `""`, so that the unique key
/// holds (NULLs are distinct in unique indexes, in SQLite as in PostgreSQL).
fn key(fingerprint: &Option<String>) -> &str {
    fingerprint.as_deref().unwrap_or("")
}

fn record_in(tx: &mut Tx<'_>, s: &Sighting, sinks: &[&str]) -> Result<Recorded> {
    let severity = s.severity();
    let severity_name = severity.map(|v| v.name());
    let (pinned, live, kind) = (key(&s.pinned), key(&s.live), s.kind.name());
    let open_key = args![&s.environment, &s.server, &s.tool, pinned, live, kind];
    let mut recorded = None;
    for _ in 0..TURNS {
        let existing = tx.row(FIND_OPEN, open_key, |r| {
            Ok((r.get::<i64>(0)?, r.get::<Option<String>>(1)?))
        })?;
        if let Some((id, old)) = existing {
            let old = old.as_deref().and_then(Severity::parse);
            let outcome = if more_severe(severity, old) {
                let findings = findings_json(&s.findings);
                let bump = args![
                    id,
                    s.at,
                    severity_name,
                    findings.as_str(),
                    s.reruns,
                    kind_bits(&s.findings)
                ];
                tx.execute(BUMP_SEVERE, bump)?;
                RecordOutcome::MoreSevere
            } else {
                tx.execute(BUMP, args![id, s.at])?;
                RecordOutcome::Seen
            };
            recorded = Some(Recorded { event: id, outcome });
            break;
        }
        let findings = findings_json(&s.findings);
        let row = args![
            &s.environment,
            &s.server,
            &s.tool,
            pinned,
            live,
            kind,
            severity_name,
            findings.as_str(),
            &s.vendor,
            &s.server_version,
            s.at,
            &s.pinned_version,
            s.reruns,
            kind_bits(&s.findings),
        ];
        if let Some(id) = tx.row(INSERT_EVENT, row, |r| r.get::<i64>(0))? {
            recorded = Some(Recorded {
                event: id,
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
    tx: &mut Tx<'_>,
    (environment, server, tool): (&str, &str, &str),
    kinds: fn(EventKind) -> bool,
    resolution: &Resolution,
    at: i64,
) -> Result<Vec<i64>> {
    let live = match resolution {
        Resolution::Accepted { live } => Some(live.as_str()),
        Resolution::Reverted => None,
    };
    let select = open_of_tool(kinds);
    let ids: Vec<i64> = tx.rows(&select, args![environment, server, tool, live], |r| {
        r.get(0)
    })?;
    for &id in &ids {
        tx.execute(RESOLVE_EVENT, args![id, at, resolution.reason()])?;
        tx.execute(ENQUEUE_RESOLVES, args![id, at])?;
    }
    Ok(ids)
}

fn enqueue_in(tx: &mut Tx<'_>, sink: &str, event: i64, notice: Notice, at: i64) -> Result<bool> {
    let added = tx.execute(
        ENQUEUE,
        args![sink, event, notice.name(), notice.level(), at],
    )?;
    Ok(added == 1)
}

fn event_in(tx: &mut Tx<'_>, id: i64) -> Result<Option<Event>> {
    tx.row(EVENT_BY_ID, args![id], read_event)
}

fn delivery_in(tx: &mut Tx<'_>, id: i64) -> Result<Option<Delivery>> {
    let row = tx.row(DELIVERY_BY_ID, args![id], |r| {
        Ok((
            r.get::<i64>(2)?,
            [r.get::<String>(1)?, r.get(3)?, r.get(4)?, r.get(5)?],
            [r.get::<i64>(6)?, r.get(7)?],
            r.get::<Option<String>>(8)?,
            r.get::<Option<i64>>(9)?,
        ))
    })?;
    let Some((event_id, [sink, what, level, state], [attempts, next], last_error, delivered_at)) =
        row
    else {
        return Ok(None);
    };
    let Some(event) = event_in(tx, event_id)? else {
        return Ok(None);
    };
    let notice =
        Notice::parse(&what, &level).ok_or_else(|| Fail::Data(format!("unknown what {what:?}")))?;
    let state = DeliveryState::parse(&state)
        .ok_or_else(|| Fail::Data(format!("unknown state {state:?}")))?;
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

fn optional_key(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

fn read_event(r: &Row<'_>) -> Result<Event> {
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
        (_, other) => {
            let other = other.unwrap_or("");
            return Err(Fail::Data(format!("unknown resolution {other:?}")));
        }
    };
    Ok(Event {
        id: r.get(0)?,
        environment: r.get(1)?,
        server: r.get(2)?,
        tool: r.get(3)?,
        pinned: optional_key(r.get(4)?),
        live: optional_key(live),
        kind: EventKind::parse(&kind)
            .ok_or_else(|| Fail::Data(format!("unknown kind {kind:?}")))?,
        severity: match severity {
            Some(s) => Some(
                Severity::parse(&s).ok_or_else(|| Fail::Data(format!("unknown severity {s:?}")))?,
            ),
            None => None,
        },
        findings: parse_findings(&findings)
            .map_err(|e| Fail::Data(format!("unreadable findings: {e}")))?,
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
