//! Time, once for the workspace: instants as [`Timestamp`] (nanoseconds
//! since the Unix epoch, UTC), the one RFC 3339 reader
//! ([`Timestamp::parse_rfc3339`], which refuses days that do not exist
//! such as 31 February) and writer ([`rfc3339`]), and the proleptic
//! Gregorian calendar ([`days_from_civil`], [`civil_from_days`]), without
//! a date library.
//!
//! Durations are [`std::time::Duration`]; the ledger keeps its unix
//! seconds (`i64`), converted with [`Timestamp::unix_seconds`].

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// One hour, the width of a usage aggregate's slot.
pub const HOUR: Duration = Duration::from_secs(3_600);

/// An instant, in nanoseconds since 1970-01-01T00:00:00Z (never before;
/// `u64` nanoseconds reach the year 2554).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(u64);

impl Timestamp {
    /// 1970-01-01T00:00:00Z.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// Now, from the system clock (the epoch if the clock is before it).
    pub fn now() -> Timestamp {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
    }

    /// From unix nanoseconds (OTLP's `startTimeUnixNano`).
    pub const fn from_unix_nanos(nanos: u64) -> Timestamp {
        Timestamp(nanos)
    }

    /// Unix nanoseconds.
    pub const fn unix_nanos(self) -> u64 {
        self.0
    }

    /// From unix seconds (the ledger's unit); `None` before 1970 or past
    /// what nanoseconds hold.
    pub fn from_unix_seconds(seconds: i64) -> Option<Timestamp> {
        let seconds = u64::try_from(seconds).ok()?;
        seconds.checked_mul(NANOS_PER_SECOND).map(Timestamp)
    }

    /// Whole unix seconds (the ledger's unit), rounded down.
    pub const fn unix_seconds(self) -> i64 {
        (self.0 / NANOS_PER_SECOND) as i64
    }

    /// The unix hour this instant falls in (a usage aggregate's slot).
    pub const fn unix_hour(self) -> u64 {
        self.0 / (3_600 * NANOS_PER_SECOND)
    }

    /// The time since the epoch.
    pub const fn since_epoch(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// `self + d`, at most the last representable instant.
    pub fn saturating_add(self, d: Duration) -> Timestamp {
        let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Timestamp(self.0.saturating_add(d))
    }

    /// `self - d`, at least the epoch.
    pub fn saturating_sub(self, d: Duration) -> Timestamp {
        let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Timestamp(self.0.saturating_sub(d))
    }

    /// How long after `earlier` this is; zero if it is not after.
    pub fn saturating_duration_since(self, earlier: Timestamp) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// Reads RFC 3339 `date-time`:
    /// `YYYY-MM-DD(T|t| )HH:MM:SS[.fraction](Z|z|±HH:MM)`. The day must
    /// exist in its month (no 31 February, 29 February in leap years
    /// only); a leap second (`:60`) reads as the next second's start;
    /// fraction digits past nanoseconds are dropped. Times before 1970 are
    /// refused.
    pub fn parse_rfc3339(s: &str) -> Result<Timestamp, TimeError> {
        parse_rfc3339(s).map(Timestamp)
    }

    /// As RFC 3339 UTC, to the second or to the millisecond.
    pub fn to_rfc3339(self, millis: bool) -> String {
        rfc3339(self.since_epoch(), millis)
    }
}

impl fmt::Display for Timestamp {
    /// RFC 3339 UTC to the millisecond.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339(true))
    }
}

/// Why a text is not an RFC 3339 date-time.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    #[error("not YYYY-MM-DDTHH:MM:SS[.fraction] followed by Z or ±HH:MM")]
    Shape,
    #[error("month {0} does not exist")]
    Month(i64),
    #[error("{year:04}-{month:02} has no day {day}")]
    Day { year: i64, month: i64, day: i64 },
    #[error("{0} is not a time of day")]
    TimeOfDay(String),
    #[error("offset {0} is out of range")]
    Offset(String),
    #[error("before 1970-01-01T00:00:00Z")]
    BeforeEpoch,
    #[error("past the year 2554")]
    TooLate,
}

fn parse_rfc3339(s: &str) -> Result<u64, TimeError> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return Err(TimeError::Shape);
    }
    let num = |r: std::ops::Range<usize>| -> Result<i64, TimeError> {
        let part = b.get(r).ok_or(TimeError::Shape)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return Err(TimeError::Shape);
        }
        Ok(part.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
    };
    let sep = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return Err(TimeError::Shape);
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // 60 is a leap second; it reads as the next second's start.
    if hour > 23 || minute > 59 || second > 60 {
        return Err(TimeError::TimeOfDay(s[11..19].to_string()));
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
            return Err(TimeError::Shape);
        }
        for _ in digits..9 {
            fraction *= 10;
        }
    }
    let offset_minutes = match b.get(i..).ok_or(TimeError::Shape)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (h, m) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
            if h > 23 || m > 59 {
                return Err(TimeError::Offset(s[i..].to_string()));
            }
            let total = h * 60 + m;
            if *sign == b'-' {
                -total
            } else {
                total
            }
        }
        _ => return Err(TimeError::Shape),
    };
    let m = u32::try_from(month).ok().filter(|m| (1..=12).contains(m));
    let m = m.ok_or(TimeError::Month(month))?;
    let days = u32::try_from(day)
        .ok()
        .and_then(|d| days_from_civil(year, m, d))
        .ok_or(TimeError::Day { year, month, day })?;
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    let seconds = u64::try_from(seconds).map_err(|_| TimeError::BeforeEpoch)?;
    seconds
        .checked_mul(NANOS_PER_SECOND)
        .and_then(|n| n.checked_add(fraction))
        .ok_or(TimeError::TooLate)
}

/// Now, to the second: `2026-11-29T23:39:59Z`.
pub fn now_utc() -> String {
    Timestamp::now().to_rfc3339(false)
}

/// Now, to the millisecond: `2026-11-29T23:39:59.123Z`.
pub fn now_utc_millis() -> String {
    Timestamp::now().to_rfc3339(true)
}

/// `t` after the Unix epoch as RFC 3339 UTC, with milliseconds or not.
pub fn rfc3339(t: Duration, millis: bool) -> String {
    let secs = t.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    let fraction = if millis {
        format!(".{:03}", t.subsec_millis())
    } else {
        String::new()
    };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{fraction}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian
/// (Howard Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Whether `y` is a Gregorian leap year.
pub fn is_leap_year(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// The number of days in month `m` (1 to 12) of year `y`; `None` for a
/// month that does not exist.
pub fn days_in_month(y: i64, m: u32) -> Option<u32> {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => Some(31),
        4 | 6 | 9 | 11 => Some(30),
        2 if is_leap_year(y) => Some(29),
        2 => Some(28),
        _ => None,
    }
}

/// (year, month, day) → days since 1970-01-01, the inverse of
/// [`civil_from_days`]; `None` for a day that does not exist.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> Option<i64> {
    if d == 0 || d > days_in_month(y, m)? {
        return None;
    }
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 } as i64;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        let at = |s| rfc3339(Duration::from_secs(s), false);
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_795_995_599), "2026-11-29T23:39:59Z");
        assert_eq!(at(4_107_542_400), "2100-03-01T00:00:00Z");
        assert_eq!(
            rfc3339(Duration::from_millis(1_795_995_599_042), true),
            "2026-11-29T23:39:59.042Z"
        );
    }

    fn parse(s: &str) -> Result<u64, TimeError> {
        Timestamp::parse_rfc3339(s).map(Timestamp::unix_nanos)
    }

    #[test]
    fn rfc3339_times() {
        assert_eq!(parse("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(
            parse("2026-12-03T15:24:53.123Z"),
            Ok(1_796_311_493_123_000_000)
        );
        assert_eq!(
            parse("2024-02-29T00:00:00.5Z"),
            Ok(1_709_164_800_500_000_000)
        );
        // Digits past nanoseconds are dropped; `t` and a space separate.
        assert_eq!(parse("1970-01-01t00:00:01.1234567899z"), Ok(1_123_456_789));
        assert_eq!(parse("1970-01-01 00:00:01Z"), Ok(NANOS_PER_SECOND));
        // A leap second is the next second's start.
        assert_eq!(parse("2016-12-31T23:59:60Z"), parse("2017-01-01T00:00:00Z"));
        for bad in [
            "",
            "2026-12-03",
            "2026-13-03T15:24:53Z",
            "2026-12-03T15:24:53",
            "2026-12-03T15:24:53.Z",
            "2026-12-03T15:24:53+0100",
            "1969-12-31T23:59:59Z",
            "２０２6-12-03T15:24:53Z",
            "2026-12-03T24:00:00Z",
            "2026-12-03T15:24:53+24:00",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    /// The copies disagreed here: toolpin-usage's reader took
    /// `2026-02-31` as 3 March.
    #[test]
    fn days_that_do_not_exist_are_refused() {
        for (bad, why) in [
            ("2026-02-31T00:00:00Z", "2026-02 has no day 31"),
            ("2026-02-29T00:00:00Z", "2026-02 has no day 29"),
            ("1900-02-29T00:00:00Z", "1900-02 has no day 29"),
            ("2026-04-31T12:00:00+02:00", "2026-04 has no day 31"),
            ("2026-01-00T00:00:00Z", "2026-01 has no day 0"),
            ("2026-00-10T00:00:00Z", "month 0 does not exist"),
        ] {
            let err = Timestamp::parse_rfc3339(bad).expect_err(bad);
            assert_eq!(err.to_string(), why, "{bad}");
        }
        // Leap years: every fourth, not centuries, but every fourth century.
        for good in [
            "2024-02-29T00:00:00Z",
            "2000-02-29T00:00:00Z",
            "2028-02-29T23:59:59Z",
        ] {
            assert!(parse(good).is_ok(), "{good}");
        }
        assert_eq!(
            parse("2024-02-29T00:00:00Z").map(|n| n + 86_400 * NANOS_PER_SECOND),
            parse("2024-03-01T00:00:00Z")
        );
    }

    #[test]
    fn offsets_move_the_instant() {
        let utc = parse("2026-12-03T15:24:53.123Z");
        assert_eq!(parse("2026-12-03T16:24:53.123+01:00"), utc);
        assert_eq!(parse("2026-12-03T10:54:53.123-04:30"), utc);
        // An offset can cross midnight, a month and a year.
        assert_eq!(
            parse("2027-01-01T01:00:00+02:00"),
            parse("2026-12-31T23:00:00Z")
        );
        assert_eq!(
            parse("1970-01-01T00:30:00+01:00"),
            Err(TimeError::BeforeEpoch)
        );
        assert!(matches!(
            parse("2026-12-03T15:24:53+01:60"),
            Err(TimeError::Offset(_))
        ));
    }

    #[test]
    fn conversions() {
        let t = Timestamp::parse_rfc3339("2026-12-03T15:24:53.123Z").unwrap();
        assert_eq!(t.unix_seconds(), 1_796_311_493);
        assert_eq!(t.unix_hour(), 1_796_311_493 / 3_600);
        assert_eq!(t.to_string(), "2026-12-03T15:24:53.123Z");
        assert_eq!(t.to_rfc3339(false), "2026-12-03T15:24:53Z");
        assert_eq!(
            Timestamp::from_unix_seconds(1_796_311_493),
            Some(Timestamp::from_unix_nanos(1_796_311_493_000_000_000))
        );
        assert_eq!(Timestamp::from_unix_seconds(-1), None);
        assert_eq!(t.saturating_add(HOUR).saturating_duration_since(t), HOUR);
        assert_eq!(Timestamp::EPOCH.saturating_sub(HOUR), Timestamp::EPOCH);
        assert!(Timestamp::now() > t.saturating_sub(HOUR * 24 * 365));
    }

    #[test]
    fn calendar_round_trips() {
        for days in (-800_000..800_000).step_by(97) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), Some(days));
        }
    }
}
