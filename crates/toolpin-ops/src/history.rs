//! `toolpin history`'s output: the ledger's [`HistoryRow`]s as an aligned
//! text table, a JSON document (`toolpin.history/v1`,
//! docs/history.schema.json), CSV (RFC 4180, with a header row) or a
//! GitHub Markdown table. docs/history.md says what each column means.

use std::time::Duration;

use serde_json::{json, Map, Value};
use toolpin_ledger::{Durations, HistoryGroup, HistoryPeriod, HistoryQuery, HistoryRow};
use toolpin_manifest::time::rfc3339;
use toolpin_report::csv;
use toolpin_report::format::{pick, Format, CSV, JSON, MARKDOWN, TEXT};

/// The `schema` member of the JSON document.
pub const SCHEMA: &str = "toolpin.history/v1";

/// The rows of `query` in `format` (one of [`Report::History`]'s: text,
/// JSON, CSV or Markdown); every format ends with a newline. `None` for a
/// format history is not written in.
///
/// [`Report::History`]: toolpin_report::Report::History
pub fn render(rows: &[HistoryRow], query: &HistoryQuery, format: &Format) -> Option<String> {
    type Write = fn(&[HistoryRow], &HistoryQuery) -> String;
    let write: Write = pick(
        format,
        &[
            (TEXT, text as Write),
            (JSON, json),
            (CSV, csv),
            (MARKDOWN, markdown),
        ],
    )?;
    Some(write(rows, query))
}

pub fn group_name(group: HistoryGroup) -> &'static str {
    match group {
        HistoryGroup::Vendor => "vendor",
        HistoryGroup::Server => "server",
        HistoryGroup::Tool => "tool",
    }
}

pub fn period_name(period: HistoryPeriod) -> &'static str {
    match period {
        HistoryPeriod::Month => "month",
        HistoryPeriod::Quarter => "quarter",
    }
}

/// A duration for people: the largest unit that keeps two significant
/// figures or more, rounded down (`45s`, `12m`, `3h`, `2d`).
pub fn human(seconds: i64) -> String {
    let s = seconds.max(0);
    if s < 120 {
        format!("{s}s")
    } else if s < 120 * 60 {
        format!("{}m", s / 60)
    } else if s < 48 * 3600 {
        format!("{}h", s / 3600)
    } else {
        format!("{}d", s / 86_400)
    }
}

/// The cells every table format shares, as (header, value) pairs per row:
/// durations as `human`, a missing vendor as `(none)`.
fn table(rows: &[HistoryRow], query: &HistoryQuery) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let mut headers = vec![group_name(query.group)];
    let tool = query.group == HistoryGroup::Tool;
    if tool {
        headers.insert(0, "server");
    }
    headers.push("period");
    headers.extend(COUNTED);
    headers.extend([
        "silent",
        "to sighting p50",
        "to sighting max",
        "to resolution p50",
        "to resolution max",
        "open",
        "approvals",
        "rejections",
        "reruns",
    ]);
    let dur = |v: Option<i64>| v.map(human).unwrap_or_else(|| "-".to_string());
    let cells = rows
        .iter()
        .map(|r| {
            let mut c = Vec::with_capacity(headers.len());
            if tool {
                c.push(r.server.clone().unwrap_or_default());
            }
            c.push(key_shown(r));
            c.push(r.period.clone());
            for n in counts(r) {
                c.push(n.to_string());
            }
            c.push(dur(r.to_first_sighting.median));
            c.push(dur(r.to_first_sighting.max));
            c.push(dur(r.to_resolution.median));
            c.push(dur(r.to_resolution.max));
            for n in [r.open, r.approvals, r.rejections, r.reruns] {
                c.push(n.to_string());
            }
            c
        })
        .collect();
    (headers, cells)
}

fn key_shown(r: &HistoryRow) -> String {
    if r.key.is_empty() {
        "(none)".to_string()
    } else {
        r.key.clone()
    }
}

/// `text` with control characters (a terminal escape in a vendor name)
/// shown as `?`.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

fn text(rows: &[HistoryRow], query: &HistoryQuery) -> String {
    if rows.is_empty() {
        return "no events in the ledger match\n".to_string();
    }
    let (headers, cells) = table(rows, query);
    let cells: Vec<Vec<String>> = cells
        .into_iter()
        .map(|row| row.iter().map(|c| printable(c)).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    // Names left-aligned, numbers right-aligned.
    let names = if query.group == HistoryGroup::Tool {
        3
    } else {
        2
    };
    let line = |row: Vec<&str>| {
        let mut out = String::new();
        for (i, (c, w)) in row.iter().zip(&widths).enumerate() {
            if i > 0 {
                out.push_str("  ");
            }
            let pad = w - c.chars().count();
            if i < names {
                out.push_str(c);
                out.push_str(&" ".repeat(pad));
            } else {
                out.push_str(&" ".repeat(pad));
                out.push_str(c);
            }
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
        out
    };
    let mut out = line(headers.clone());
    for row in &cells {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

fn markdown(rows: &[HistoryRow], query: &HistoryQuery) -> String {
    let (headers, cells) = table(rows, query);
    let names = if query.group == HistoryGroup::Tool {
        3
    } else {
        2
    };
    let mut out = format!("| {} |\n|", headers.join(" | "));
    for i in 0..headers.len() {
        out.push_str(if i < names { "---|" } else { "---:|" });
    }
    out.push('\n');
    for row in cells {
        let row: Vec<String> = row.iter().map(|c| markdown_cell(c)).collect();
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

/// A table cell: `|` escaped, backslashes doubled first so that a name
/// ending in `\` does not escape the bar after it, line breaks as spaces.
fn markdown_cell(text: &str) -> String {
    printable(&text.replace(['\r', '\n'], " "))
        .replace('\\', "\\\\")
        .replace('|', "\\|")
}

/// The CSV header and rows (RFC 4180: CRLF line ends, fields quoted when
/// they hold a comma, a quote, CR or LF, quotes doubled). Durations are in
/// seconds; an absent one is an empty field. A missing vendor is empty.
fn csv(rows: &[HistoryRow], query: &HistoryQuery) -> String {
    let tool = query.group == HistoryGroup::Tool;
    let mut header = Vec::new();
    if tool {
        header.push("server");
    }
    header.push(group_name(query.group));
    header.push("period");
    header.extend(COUNTED);
    header.extend([
        "silent_drift",
        "to_first_sighting_count",
        "to_first_sighting_median_seconds",
        "to_first_sighting_max_seconds",
        "to_resolution_count",
        "to_resolution_median_seconds",
        "to_resolution_max_seconds",
        "open",
        "approvals",
        "rejections",
        "reruns",
    ]);
    let mut out = csv::record(&header);
    let opt = |v: Option<i64>| v.map(|n| n.to_string()).unwrap_or_default();
    for r in rows {
        let mut f = Vec::with_capacity(header.len());
        if tool {
            f.push(r.server.clone().unwrap_or_default());
        }
        f.push(r.key.clone());
        f.push(r.period.clone());
        for n in counts(r) {
            f.push(n.to_string());
        }
        for d in [&r.to_first_sighting, &r.to_resolution] {
            f.push(d.count.to_string());
            f.push(opt(d.median));
            f.push(opt(d.max));
        }
        for n in [r.open, r.approvals, r.rejections, r.reruns] {
            f.push(n.to_string());
        }
        out.push_str(&csv::record(f));
    }
    out
}

/// The names of [`counts`]' columns but the last (`silent`, which each
/// format names its own way).
const COUNTED: [&str; 10] = [
    "changes",
    "critical",
    "high",
    "medium",
    "low",
    "info",
    "structural",
    "semantic",
    "description",
    "behavioural",
];

/// The counting columns, in the order every format writes them: changes,
/// by severity, by kind, silent.
fn counts(r: &HistoryRow) -> [i64; 11] {
    [
        r.changes,
        r.severity.critical,
        r.severity.high,
        r.severity.medium,
        r.severity.low,
        r.severity.info,
        r.kinds.structural,
        r.kinds.semantic,
        r.kinds.description,
        r.kinds.behavioural,
        r.silent,
    ]
}

fn durations(d: &Durations) -> Value {
    json!({
        "count": d.count,
        "median_seconds": d.median,
        "max_seconds": d.max,
    })
}

fn when(at: Option<i64>) -> Value {
    match at {
        Some(t) if t >= 0 => Value::String(rfc3339(Duration::from_secs(t as u64), false)),
        Some(t) => Value::from(t),
        None => Value::Null,
    }
}

fn json(rows: &[HistoryRow], query: &HistoryQuery) -> String {
    let items: Vec<Value> = rows
        .iter()
        .map(|r| {
            let mut m = Map::new();
            m.insert(
                "key".into(),
                if r.key.is_empty() && query.group == HistoryGroup::Vendor {
                    Value::Null
                } else {
                    Value::String(r.key.clone())
                },
            );
            if let Some(server) = &r.server {
                m.insert("server".into(), Value::String(server.clone()));
            }
            m.insert("period".into(), Value::String(r.period.clone()));
            m.insert("changes".into(), r.changes.into());
            m.insert(
                "severity".into(),
                json!({
                    "critical": r.severity.critical,
                    "high": r.severity.high,
                    "medium": r.severity.medium,
                    "low": r.severity.low,
                    "info": r.severity.info,
                }),
            );
            m.insert(
                "kinds".into(),
                json!({
                    "structural": r.kinds.structural,
                    "semantic": r.kinds.semantic,
                    "description": r.kinds.description,
                    "behavioural": r.kinds.behavioural,
                }),
            );
            m.insert("silent_drift".into(), r.silent.into());
            m.insert("to_first_sighting".into(), durations(&r.to_first_sighting));
            m.insert("to_resolution".into(), durations(&r.to_resolution));
            m.insert("open".into(), r.open.into());
            m.insert("approvals".into(), r.approvals.into());
            m.insert("rejections".into(), r.rejections.into());
            m.insert("reruns".into(), r.reruns.into());
            Value::Object(m)
        })
        .collect();
    let doc = json!({
        "schema": SCHEMA,
        "group": group_name(query.group),
        "period": period_name(query.period),
        "filters": {
            "vendor": query.vendor,
            "server": query.server,
            "tool": query.tool,
            "environment": query.environment,
            "since": when(query.since),
            "until": when(query.until),
        },
        "rows": items,
    });
    let mut out = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| doc.to_string());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolpin_ledger::{KindCounts, SeverityCounts};

    /// [`super::render`] in a format history is written in.
    fn render(rows: &[HistoryRow], query: &HistoryQuery, format: &Format) -> String {
        super::render(rows, query, format).expect("a history format")
    }

    #[test]
    fn every_history_format_renders() {
        for format in toolpin_report::Report::History.formats() {
            assert!(super::render(&[], &q(HistoryGroup::Vendor), format).is_some());
        }
        assert_eq!(
            super::render(&[], &q(HistoryGroup::Vendor), toolpin_report::format::SARIF),
            None
        );
    }

    fn row(key: &str) -> HistoryRow {
        HistoryRow {
            key: key.to_string(),
            server: None,
            period: "2026-Q4".to_string(),
            changes: 3,
            severity: SeverityCounts {
                high: 2,
                low: 1,
                ..SeverityCounts::default()
            },
            kinds: KindCounts {
                description: 3,
                ..KindCounts::default()
            },
            silent: 1,
            to_first_sighting: Durations {
                count: 2,
                median: Some(3 * 3600),
                max: Some(2 * 86_400 + 5),
            },
            to_resolution: Durations::default(),
            open: 3,
            approvals: 1,
            rejections: 0,
            reruns: 4,
        }
    }

    fn q(group: HistoryGroup) -> HistoryQuery {
        HistoryQuery::new(group, HistoryPeriod::Quarter)
    }

    #[test]
    fn durations_are_short_for_people() {
        assert_eq!(human(45), "45s");
        assert_eq!(human(119), "119s");
        assert_eq!(human(12 * 60), "12m");
        assert_eq!(human(3 * 3600 + 59), "3h");
        assert_eq!(human(47 * 3600), "47h");
        assert_eq!(human(2 * 86_400 + 3600), "2d");
        assert_eq!(human(-5), "0s");
    }

    #[test]
    fn csv_has_a_header_and_crlf_records() {
        let out = render(&[row("Acme, Inc.")], &q(HistoryGroup::Vendor), CSV);
        let lines: Vec<&str> = out.split("\r\n").collect();
        assert_eq!(lines.len(), 3, "{out:?}");
        assert!(lines[0].starts_with("vendor,period,changes,critical,"));
        assert!(lines[1].starts_with("\"Acme, Inc.\",2026-Q4,3,0,2,0,1,0,"));
        assert!(
            lines[1].contains(",1,2,10800,172805,0,,,3,1,0,4"),
            "{}",
            lines[1]
        );
        assert_eq!(lines[2], "");
    }

    #[test]
    fn text_is_aligned_with_human_durations() {
        let mut other = row("");
        other.to_first_sighting = Durations::default();
        let out = render(&[row("acme"), other], &q(HistoryGroup::Vendor), TEXT);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("vendor  period   changes"), "{out}");
        assert!(lines[1].starts_with("acme    2026-Q4        3"), "{out}");
        assert!(
            lines[1].contains(" 3h ") && lines[1].contains(" 2d "),
            "{out}"
        );
        assert!(lines[2].starts_with("(none)  2026-Q4"), "{out}");
        // Columns line up: every line's `changes` ends at the same place.
        let end = lines[0].find("changes").map_or(0, |i| i + "changes".len());
        assert_eq!(lines[1].as_bytes().get(end - 1), Some(&b'3'));
        assert_eq!(lines[2].as_bytes().get(end - 1), Some(&b'3'));
        assert_eq!(
            render(&[], &q(HistoryGroup::Vendor), TEXT),
            "no events in the ledger match\n"
        );
    }

    #[test]
    fn markdown_is_a_github_table_with_bars_escaped() {
        let mut r = row("a|b");
        r.server = Some("orders".into());
        let out = render(&[r], &q(HistoryGroup::Tool), MARKDOWN);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("| server | tool | period | changes |"));
        assert!(lines[1].starts_with("|---|---|---|---:|"));
        assert!(
            lines[2].starts_with("| orders | a\\|b | 2026-Q4 | 3 |"),
            "{out}"
        );
    }

    #[test]
    fn json_has_the_schema_and_null_for_an_unknown_vendor() {
        let mut query = q(HistoryGroup::Vendor);
        query.since = Some(1_798_761_600);
        let out = render(&[row("")], &query, JSON);
        let v: Value = serde_json::from_str(&out).expect("json");
        assert_eq!(v["schema"], SCHEMA);
        assert_eq!(v["group"], "vendor");
        assert_eq!(v["filters"]["since"], "2027-01-01T00:00:00Z");
        assert_eq!(v["rows"][0]["key"], Value::Null);
        assert_eq!(v["rows"][0]["to_first_sighting"]["median_seconds"], 10_800);
        assert_eq!(v["rows"][0]["to_resolution"]["median_seconds"], Value::Null);
    }
}
