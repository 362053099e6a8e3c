//! `toolpin watch --every`: the interval, its jitter, and stopping
//! cleanly on SIGTERM or SIGINT between runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Set by the signal handler; checked between runs and while sleeping.
static STOP: AtomicBool = AtomicBool::new(false);

/// The shortest interval: watching more often than this is a load test.
pub const MIN_INTERVAL: Duration = Duration::from_secs(10);

/// Parses `--every`: a number with `s`, `m`, `h` or `d` (`90s`, `15m`,
/// `1h`, `1d`), at least [`MIN_INTERVAL`].
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let bad = || {
        format!("{text:?} is not an interval; write a number with s, m, h or d (\"15m\", \"1h\")")
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| bad())?;
    let scale = match unit.trim() {
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        _ => return Err(bad()),
    };
    let seconds = number * scale;
    if !seconds.is_finite() || seconds > 366.0 * 86_400.0 {
        return Err(bad());
    }
    let interval = Duration::from_secs_f64(seconds);
    if interval < MIN_INTERVAL {
        return Err(format!(
            "--every {text}: the interval must be at least {} s",
            MIN_INTERVAL.as_secs()
        ));
    }
    Ok(interval)
}

/// The wait before the next run: `interval` moved by up to ±10 %, so that
/// watchers started together (a fleet's pods) spread their checks. `seed`
/// varies per process and run (no random-number crate for one number).
pub fn jittered(interval: Duration, seed: u64) -> Duration {
    // splitmix64: a well-mixed value from any seed.
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // A factor in [0.9, 1.1).
    let unit = (z >> 11) as f64 / (1u64 << 53) as f64;
    interval.mul_f64(0.9 + 0.2 * unit)
}

/// Installs the SIGTERM and SIGINT handlers: the run under way finishes
/// (its events recorded, its notifications sent) and the loop stops.
pub fn stop_on_signals() {
    extern "C" fn on_signal(_: libc::c_int) {
        STOP.store(true, Ordering::SeqCst);
    }
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

/// Whether a stop was asked for.
pub fn stopping() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Sleeps for `wait`, waking early when a stop is asked for; `false` when
/// it was.
pub fn sleep(wait: Duration) -> bool {
    let until = Instant::now() + wait;
    while !stopping() {
        let now = Instant::now();
        if now >= until {
            return true;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(100)));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_parse_with_their_unit() {
        assert_eq!(parse_interval("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_interval("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_interval("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_interval("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_interval("2d"), Ok(Duration::from_secs(172_800)));
        for bad in ["", "h", "1", "1w", "-1h", "1 hour", "1e400s"] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
        assert!(parse_interval("5s").unwrap_err().contains("at least 10 s"));
    }

    #[test]
    fn jitter_stays_within_ten_percent_and_spreads() {
        let hour = Duration::from_secs(3600);
        let waits: Vec<Duration> = (0..1000).map(|s| jittered(hour, s)).collect();
        assert!(waits
            .iter()
            .all(|w| *w >= hour.mul_f64(0.9) && *w < hour.mul_f64(1.1)));
        let below = waits.iter().filter(|w| **w < hour).count();
        // Spread on both sides of the interval, roughly evenly.
        assert!((350..650).contains(&below), "{below}");
    }
}
