//! The proxy's event log (`toolpin proxy --events`, crates/toolpin-proxy's
//! `events.rs`): one JSON object per line with `time` (RFC 3339, UTC, in
//! milliseconds), `event` and the event's fields. The proxy writes no
//! event for a completed call (calls go to the metrics and the OTLP
//! spans), so the log gives counts of what went wrong or changed, not
//! calls: `refused` (rule, server, tool, catalog), `drift` (server, tool,
//! rule, severity, catalog), `finding` (rule, server, tool, catalog),
//! `invalid-arguments` (server, tool), `drift-fail`, `recapture-failed`,
//! `upstream-closed`, `upstream-restarted`, `upstream-wedged` (server),
//! `tool-withdrawn`, `tool-restored` (tool), `refused-host`,
//! `flags-error`, `facade-error` and `otlp-export-failed`. Every kind is
//! counted under its name, unknown kinds too, keyed by hour and the
//! server, tool, rule and catalog fields that the event carries.

use std::io::{self, BufRead};

use serde::Deserialize;

use toolpin_manifest::time::Timestamp;

use crate::aggregate::{Aggregates, EventKey};
use crate::ingest::{IngestReport, Options, Problem};
use crate::lines::Lines;
use crate::span::Loose;

/// The fields read; the rest of an event (messages, pointers) is skipped.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, default)]
    time: Option<Loose<'a>>,
    #[serde(borrow, default)]
    event: Option<Loose<'a>>,
    #[serde(borrow, default)]
    server: Option<Loose<'a>>,
    #[serde(borrow, default)]
    tool: Option<Loose<'a>>,
    #[serde(borrow, default)]
    rule: Option<Loose<'a>>,
    #[serde(borrow, default)]
    catalog: Option<Loose<'a>>,
}

fn text<'s>(field: &'s Option<Loose<'_>>) -> &'s str {
    field.as_ref().and_then(|l| l.0.as_deref()).unwrap_or("")
}

/// Reads one event log into `aggregates`.
pub(crate) fn read<R: BufRead>(
    lines: &mut Lines<R>,
    input: &str,
    options: &Options,
    aggregates: &mut Aggregates,
    report: &mut IngestReport,
) -> io::Result<()> {
    while let Some(line) = lines.next_line()? {
        report.lines += 1;
        let number = line.number;
        let bytes = line.bytes.trim_ascii();
        if bytes.is_empty() && line.skipped == 0 {
            report.blank_lines += 1;
            continue;
        }
        if line.skipped > 0 {
            report.note(Problem::LineTooLong, || {
                format!("{input}:{number}: longer than the limit")
            });
            continue;
        }
        // Derived structs also read JSON arrays (as tuples): only an object
        // is an event.
        if bytes.first() != Some(&b'{')
            && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
        {
            report.note(Problem::WrongShape, || {
                format!("{input}:{number}: not a JSON object")
            });
            continue;
        }
        let event: Event<'_> = match serde_json::from_slice(bytes) {
            Ok(e) => e,
            Err(e) => {
                let problem = if e.is_eof() && !line.terminated {
                    Problem::TruncatedLine
                } else if e.is_data() {
                    Problem::WrongShape
                } else {
                    Problem::MalformedLine
                };
                report.note(problem, || format!("{input}:{number}: {e}"));
                continue;
            }
        };
        report.events_seen += 1;
        let name = text(&event.event);
        if name.is_empty() {
            report.events_rejected += 1;
            report.note(Problem::MissingEventName, || {
                format!("{input}:{number}: no \"event\"")
            });
            continue;
        }
        match report.event_kinds.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                report.event_kinds.insert(name.to_string(), 1);
            }
        }
        let time = text(&event.time);
        if time.is_empty() {
            report.events_rejected += 1;
            report.note(Problem::MissingTime, || {
                format!("{input}:{number}: {name} has no \"time\"")
            });
            continue;
        }
        let at = match Timestamp::parse_rfc3339(time) {
            Ok(at) => at,
            Err(e) => {
                report.events_rejected += 1;
                report.note(Problem::BadTime, || {
                    format!("{input}:{number}: {name}: time {time:?} is not RFC 3339: {e}")
                });
                continue;
            }
        };
        if at > options.now.saturating_add(options.max_future) {
            report.events_rejected += 1;
            report.note(Problem::FutureTimestamp, || {
                format!("{input}:{number}: {name} at {time} is in the future")
            });
            continue;
        }
        report.events_used += 1;
        aggregates.record_event(EventKey {
            hour: at.unix_hour(),
            environment: options.environment.clone(),
            event: name.to_string(),
            server: text(&event.server).to_string(),
            tool: text(&event.tool).to_string(),
            rule: text(&event.rule).to_string(),
            catalog: text(&event.catalog).to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ingest(log: &str) -> (Aggregates, IngestReport) {
        let options = Options {
            now: Timestamp::parse_rfc3339("2026-12-31T00:00:00Z").unwrap(),
            ..Options::default()
        };
        let mut aggregates = Aggregates::new(options.limits);
        let mut report = IngestReport::new(5);
        let mut lines = Lines::new(log.as_bytes(), 1 << 20);
        read(
            &mut lines,
            "events.jsonl",
            &options,
            &mut aggregates,
            &mut report,
        )
        .unwrap();
        (aggregates, report)
    }

    /// toolpin-usage's own reader took 31 February 2026 as 3 March; the
    /// workspace's one reader refuses the day, and says why.
    #[test]
    fn a_day_that_does_not_exist_is_a_bad_time() {
        let (_, report) = ingest(concat!(
            r#"{"time":"2026-02-31T00:00:00Z","event":"refused","tool":"t"}"#,
            "\n",
            r#"{"time":"2024-02-29T23:30:00-01:00","event":"refused","tool":"t"}"#,
            "\n",
        ));
        assert_eq!(report.events_seen, 2);
        assert_eq!(report.events_rejected, 1);
        assert_eq!(report.events_used, 1);
        let bad = &report.problems[&Problem::BadTime];
        assert_eq!(bad.count, 1);
        assert_eq!(
            bad.examples,
            [
                r#"events.jsonl:1: refused: time "2026-02-31T00:00:00Z" is not RFC 3339: 2026-02 has no day 31"#
            ]
        );
    }

    /// The fields read are the ones the proxy writes, by their wire names.
    #[test]
    fn reads_the_fields_by_their_wire_names() {
        use toolpin_manifest::wire::event;
        let mut line = serde_json::Map::new();
        for (k, v) in [
            (event::TIME, "2026-12-03T15:24:53.123Z"),
            (event::EVENT, event::REFUSED),
            (event::SERVER, "orders"),
            (event::TOOL, "lookup"),
            (event::RULE, "unknown-tool-called"),
            (event::CATALOG, "c1"),
        ] {
            line.insert(k.into(), v.into());
        }
        let (aggregates, report) = ingest(&format!("{}\n", serde_json::Value::Object(line)));
        assert_eq!(report.events_used, 1, "{report:?}");
        let key = aggregates.events().keys().next().cloned().unwrap();
        assert_eq!(
            (key.event.as_str(), key.server.as_str(), key.tool.as_str()),
            (event::REFUSED, "orders", "lookup")
        );
        assert_eq!(
            (key.rule.as_str(), key.catalog.as_str()),
            ("unknown-tool-called", "c1")
        );
        assert_eq!(key.hour, 1_796_311_493 / 3_600);
    }
}
