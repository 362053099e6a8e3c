//! `toolpin history`'s query (issue 18, point 4): the ledger's events
//! counted per vendor, server or tool and per UTC month or quarter of their
//! first sighting.
//!
//! The counts are one `GROUP BY` in SQL, per key and UTC day (integer
//! division, the same text for both backends): a
//! calendar expression per row (`strftime`, `to_char`) costs more than the
//! rest of the query, and the few hundred days of a group are summed into
//! months or quarters here. The medians need every duration of a group,
//! which SQLite cannot do in SQL: a second query returns only the durations
//! (and the key and first sighting) of the events that have one, and they
//! are folded in here. Every column both read is in the covering index
//! `events_history` (migration 3), led by vendor and first sighting.

use std::collections::{BTreeMap, HashMap};

use crate::stored::FINDING_KINDS;
use crate::EventKind;

/// What the rows are per.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistoryGroup {
    /// The `vendor` recorded with the event (the configured `vendor`, else
    /// the server's `serverInfo.name`); `""` when none was known.
    Vendor,
    Server,
    /// Per (server, tool); `""` is the server's own members.
    Tool,
}

/// The calendar period (UTC) of an event's first sighting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistoryPeriod {
    /// `2026-11`.
    Month,
    /// `2026-Q4`.
    Quarter,
}

/// Which events, and how they are grouped. `None` matches any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryQuery {
    pub group: HistoryGroup,
    pub period: HistoryPeriod,
    pub vendor: Option<String>,
    pub server: Option<String>,
    pub tool: Option<String>,
    pub environment: Option<String>,
    /// Events first seen at or after this (unix seconds).
    pub since: Option<i64>,
    /// Events first seen before this (unix seconds, exclusive).
    pub until: Option<i64>,
}

impl HistoryQuery {
    pub fn new(group: HistoryGroup, period: HistoryPeriod) -> Self {
        Self {
            group,
            period,
            vendor: None,
            server: None,
            tool: None,
            environment: None,
            since: None,
            until: None,
        }
    }
}

/// Drift-kind events by worst severity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeverityCounts {
    pub critical: i64,
    pub high: i64,
    pub medium: i64,
    pub low: i64,
    pub info: i64,
}

/// Drift-kind events by the kinds of their findings: an event counts once
/// under each kind its findings have.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindCounts {
    pub structural: i64,
    pub semantic: i64,
    pub description: i64,
    pub behavioural: i64,
}

/// A set of durations, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Durations {
    /// How many events had one.
    pub count: i64,
    /// The median (of an even count, the mean of the middle two, rounded
    /// down); `None` when there are none.
    pub median: Option<i64>,
    pub max: Option<i64>,
}

/// One group in one period.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistoryRow {
    /// The vendor, server or tool; `""` for events with no vendor.
    pub key: String,
    /// The tool's server when grouped by tool, else `None`.
    pub server: Option<String>,
    /// `2026-11` or `2026-Q4`.
    pub period: String,
    /// Drift-kind events (drift, proxy-drift, proxy-refusal,
    /// contract-failed) first seen in the period.
    pub changes: i64,
    pub severity: SeverityCounts,
    pub kinds: KindCounts,
    /// `drift` events whose server reported the version it has in the
    /// lockfile (both known): the tools changed, the version did not.
    pub silent: i64,
    /// From the last clean check before the change to its first sighting
    /// (events with a clean check before them).
    pub to_first_sighting: Durations,
    /// From first sighting to resolution (resolved events).
    pub to_resolution: Durations,
    /// Drift-kind events still open.
    pub open: i64,
    /// `approved` and `rejected` events.
    pub approvals: i64,
    pub rejections: i64,
    /// Evals the plans asked to re-run, summed.
    pub reruns: i64,
}

/// A bound value of a query.
pub(crate) enum Param {
    Text(String),
    Int(i64),
}

/// The two statements of a history query and their parameters (the same
/// for both).
pub(crate) struct Statements {
    /// Key (NULL: no vendor), server, UTC day (days since the epoch), the
    /// event class (0 drift-kind, 1 approved, 2 rejected, 3 other), then
    /// [`COUNT_COLUMNS`] integers: events, the five severities, the four
    /// finding kinds, silent, unresolved, reruns.
    pub counts: String,
    /// Key (NULL: no vendor), server, first_seen, first_seen − unchanged_at,
    /// resolved_at − first_seen (each of the last two may be NULL).
    pub durations: String,
    pub params: Vec<Param>,
}

/// The integer columns of the counts statement after key, server, day and
/// class.
pub(crate) const COUNT_COLUMNS: usize = 13;

/// The statements, in the notation of [`crate::dialect`] (the same text
/// for both backends).
pub(crate) fn statements(q: &HistoryQuery) -> Statements {
    let mut params = Vec::new();
    let mut conditions = Vec::new();
    let mut bind = |column: &str, op: &str, value: Param| {
        params.push(value);
        let n = params.len();
        conditions.push(format!("{column} {op} ?{n}"));
    };
    // Only the filters given become conditions: a `? IS NULL OR` form
    // would keep SQLite from choosing an index.
    if let Some(v) = &q.vendor {
        bind("vendor", "=", Param::Text(v.clone()));
    }
    if let Some(v) = &q.server {
        bind("server", "=", Param::Text(v.clone()));
    }
    if let Some(v) = &q.tool {
        bind("tool", "=", Param::Text(v.clone()));
    }
    if let Some(v) = &q.environment {
        bind("environment", "=", Param::Text(v.clone()));
    }
    if let Some(v) = q.since {
        bind("first_seen", ">=", Param::Int(v));
    }
    if let Some(v) = q.until {
        bind("first_seen", "<", Param::Int(v));
    }
    let filter = if conditions.is_empty() {
        String::new()
    } else {
        format!(" AND {}", conditions.join(" AND "))
    };
    let (key, server) = match q.group {
        HistoryGroup::Vendor => ("vendor", "''"),
        HistoryGroup::Server => ("server", "''"),
        HistoryGroup::Tool => ("tool", "server"),
    };
    let drift = crate::statements::kind_list(EventKind::is_resolvable);
    let is_drift = format!("kind IN ({drift})");
    // The event's class is grouped on, so that the kind list is tested
    // once per row rather than in every sum: 0 drift-kind, 1 approved,
    // 2 rejected, 3 any other record. Comparisons are cast, as PostgreSQL
    // does not sum booleans (SQLite's are already 0 or 1).
    let class = format!(
        "CAST(CASE WHEN {is_drift} THEN 0 WHEN kind = 'approved' THEN 1 \
         WHEN kind = 'rejected' THEN 2 ELSE 3 END AS BIGINT)"
    );
    let sum = |when: &str| format!("CAST(SUM(CAST({when} AS INTEGER)) AS BIGINT)");
    let mut columns = vec!["CAST(COUNT(*) AS BIGINT)".to_string()];
    for s in ["critical", "high", "medium", "low", "info"] {
        columns.push(sum(&format!("severity = '{s}'")));
    }
    for (i, _) in FINDING_KINDS.iter().enumerate() {
        columns.push(sum(&format!("(finding_kinds & {}) <> 0", 1 << i)));
    }
    // NULL = NULL is not true: both versions must be known.
    columns.push(sum("kind = 'drift' AND server_version = pinned_version"));
    columns.push(sum("resolved_at IS NULL"));
    columns.push("CAST(SUM(reruns) AS BIGINT)".to_string());
    debug_assert_eq!(columns.len(), COUNT_COLUMNS);
    let counts = format!(
        "SELECT {key}, {server}, first_seen / 86400, {class}, {} FROM events \
         WHERE 1 = 1{filter} GROUP BY 1, 2, 3, 4",
        columns.join(", ")
    );
    let durations = format!(
        "SELECT {key}, {server}, first_seen, first_seen - unchanged_at, \
         CASE WHEN resolved_at IS NULL THEN NULL ELSE resolved_at - first_seen END \
         FROM events WHERE {is_drift} AND (unchanged_at IS NOT NULL OR resolved_at IS NOT NULL)\
         {filter}"
    );
    Statements {
        counts,
        durations,
        params,
    }
}

/// One row of the counts statement.
pub(crate) struct CountRow {
    pub key: Option<String>,
    pub server: String,
    pub day: i64,
    pub class: i64,
    pub values: [i64; COUNT_COLUMNS],
}

/// One row of the durations statement.
pub(crate) struct DurationRow {
    pub key: Option<String>,
    pub server: String,
    pub first_seen: i64,
    pub to_first_sighting: Option<i64>,
    pub to_resolution: Option<i64>,
}

/// The rows, ordered by key, server and period: the days summed into
/// their periods, the durations folded in.
pub(crate) fn assemble(
    q: &HistoryQuery,
    counts: Vec<CountRow>,
    durations: Vec<DurationRow>,
) -> Vec<HistoryRow> {
    // A label per distinct day, not per row.
    let mut labels: HashMap<i64, String> = HashMap::new();
    let mut label = |day: i64| {
        labels
            .entry(day)
            .or_insert_with(|| period_label(day.saturating_mul(86_400), q.period))
            .clone()
    };
    type Key = (String, String, String);
    let mut sums: BTreeMap<Key, HistoryRow> = BTreeMap::new();
    for c in counts {
        let (key, server, period) = (c.key.unwrap_or_default(), c.server, label(c.day));
        let row = sums
            .entry((key.clone(), server.clone(), period.clone()))
            .or_insert_with(|| HistoryRow {
                server: matches!(q.group, HistoryGroup::Tool).then_some(server),
                key,
                period,
                ..HistoryRow::default()
            });
        let v = c.values;
        row.reruns += v[12];
        match c.class {
            0 => {
                row.changes += v[0];
                row.severity.critical += v[1];
                row.severity.high += v[2];
                row.severity.medium += v[3];
                row.severity.low += v[4];
                row.severity.info += v[5];
                row.kinds.structural += v[6];
                row.kinds.semantic += v[7];
                row.kinds.description += v[8];
                row.kinds.behavioural += v[9];
                row.silent += v[10];
                row.open += v[11];
            }
            1 => row.approvals += v[0],
            2 => row.rejections += v[0],
            _ => {}
        }
    }
    let mut spans: HashMap<Key, (Vec<i64>, Vec<i64>)> = HashMap::new();
    for d in durations {
        let key = (
            d.key.unwrap_or_default(),
            d.server,
            label(d.first_seen.div_euclid(86_400)),
        );
        let entry = spans.entry(key).or_default();
        entry.0.extend(d.to_first_sighting);
        entry.1.extend(d.to_resolution);
    }
    sums.into_iter()
        .map(|(k, mut row)| {
            let (mut first, mut resolution) = spans.remove(&k).unwrap_or_default();
            row.to_first_sighting = summarize(&mut first);
            row.to_resolution = summarize(&mut resolution);
            row
        })
        .collect()
}

/// Count, median and max of `values` (reordered in place).
fn summarize(values: &mut [i64]) -> Durations {
    let n = values.len();
    if n == 0 {
        return Durations::default();
    }
    values.sort_unstable();
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        // The mean of the middle two without overflow, rounded down.
        let (a, b) = (values[n / 2 - 1], values[n / 2]);
        a + (b - a) / 2
    };
    Durations {
        count: n as i64,
        median: Some(median),
        max: values.last().copied(),
    }
}

/// The UTC period label of a unix time: `2026-11`, `2026-Q4`.
pub fn period_label(at: i64, period: HistoryPeriod) -> String {
    let (y, m, _) = civil_from_days(at.div_euclid(86_400));
    match period {
        HistoryPeriod::Month => format!("{y:04}-{m:02}"),
        HistoryPeriod::Quarter => format!("{y:04}-Q{}", m.div_ceil(3)),
    }
}

// The calendar is toolpin-manifest's (the lockfile's timestamps use it).
pub use toolpin_manifest::time::{civil_from_days, days_from_civil};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_are_utc_calendar_months_and_quarters() {
        // 2026-09-30T23:59:59Z and one second later.
        let end_q3 = days_from_civil(2026, 10, 1).unwrap() * 86_400 - 1;
        assert_eq!(period_label(end_q3, HistoryPeriod::Month), "2026-09");
        assert_eq!(period_label(end_q3, HistoryPeriod::Quarter), "2026-Q3");
        assert_eq!(period_label(end_q3 + 1, HistoryPeriod::Month), "2026-10");
        assert_eq!(period_label(end_q3 + 1, HistoryPeriod::Quarter), "2026-Q4");
        assert_eq!(period_label(0, HistoryPeriod::Quarter), "1970-Q1");
    }

    #[test]
    fn days_round_trip_and_bad_days_are_refused() {
        for days in [-1, 0, 59, 365, 11_016, 20_000, 60_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), Some(days));
        }
        assert_eq!(days_from_civil(2026, 2, 29), None);
        assert_eq!(
            days_from_civil(2028, 2, 29).map(civil_from_days),
            Some((2028, 2, 29))
        );
        assert_eq!(days_from_civil(2026, 13, 1), None);
        assert_eq!(days_from_civil(2026, 4, 31), None);
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(summarize(&mut []), Durations::default());
        let d = summarize(&mut [30, 10, 20]);
        assert_eq!((d.count, d.median, d.max), (3, Some(20), Some(30)));
        let d = summarize(&mut [40, 10, 20, 30]);
        assert_eq!((d.count, d.median, d.max), (4, Some(25), Some(40)));
    }
}
