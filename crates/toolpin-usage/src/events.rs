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

use crate::aggregate::{Aggregates, EventKey, HOUR_NANOS};
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
        let Some(nanos) = parse_rfc3339(time) else {
            report.events_rejected += 1;
            report.note(Problem::BadTime, || {
                format!("{input}:{number}: {name}: time {time:?} is not RFC 3339")
            });
            continue;
        };
        if nanos > options.now_nanos.saturating_add(options.max_future_nanos) {
            report.events_rejected += 1;
            report.note(Problem::FutureTimestamp, || {
                format!("{input}:{number}: {name} at {time} is in the future")
            });
            continue;
        }
        report.events_used += 1;
        aggregates.record_event(EventKey {
            hour: nanos / HOUR_NANOS,
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

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` to unix nanoseconds; `None`
/// for anything else, or a time before 1970.
pub fn parse_rfc3339(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let sep = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    // 60 is a leap second; it reads as the next second's start.
    if second > 60 {
        return None;
    }
    let mut i = 19;
    let mut fraction: u64 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            if i - start < 9 {
                fraction = fraction * 10 + u64::from(b[i] - b'0');
            }
            i += 1;
        }
        let digits = i - start;
        if digits == 0 {
            return None;
        }
        for _ in digits..9 {
            fraction *= 10;
        }
    }
    let offset_minutes = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let h = num(i + 1..i + 3)?;
            let m = num(i + 4..i + 6)?;
            if h > 23 || m > 59 {
                return None;
            }
            let total = h * 60 + m;
            if *sign == b'-' {
                -total
            } else {
                total
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    if seconds < 0 {
        return None;
    }
    (seconds as u64)
        .checked_mul(1_000_000_000)?
        .checked_add(fraction)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339("2026-12-03T15:24:53.123Z"),
            Some(1_796_311_493_123_000_000)
        );
        assert_eq!(
            parse_rfc3339("2026-12-03T16:24:53.123+01:00"),
            parse_rfc3339("2026-12-03T15:24:53.123Z")
        );
        assert_eq!(
            parse_rfc3339("2024-02-29T00:00:00.5Z"),
            Some(1_709_164_800_500_000_000)
        );
        for bad in [
            "",
            "2026-12-03",
            "2026-13-03T15:24:53Z",
            "2026-12-03T15:24:53",
            "2026-12-03T15:24:53.Z",
            "2026-12-03T15:24:53+0100",
            "1969-12-31T23:59:59Z",
            "２０２6-12-03T15:24:53Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
