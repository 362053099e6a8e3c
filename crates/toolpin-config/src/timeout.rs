//! Durations as toolpin.toml writes them: seconds (`30`, `2.5`) or a
//! string with a unit (`"500ms"`, `"30s"`, `"2m"`).

use std::time::Duration;

use serde::Deserialize;

/// A duration as written.
#[derive(Debug, Clone)]
pub enum TimeoutValue {
    Seconds(f64),
    Text(String),
}

impl<'de> Deserialize<'de> for TimeoutValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = TimeoutValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("seconds (30) or a duration string (\"500ms\", \"30s\", \"2m\")")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<TimeoutValue, E> {
                Ok(TimeoutValue::Seconds(v as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<TimeoutValue, E> {
                Ok(TimeoutValue::Seconds(v as f64))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<TimeoutValue, E> {
                Ok(TimeoutValue::Seconds(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<TimeoutValue, E> {
                Ok(TimeoutValue::Text(v.to_string()))
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl std::fmt::Display for TimeoutValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TimeoutValue::Seconds(s) => write!(f, "{s}"),
            TimeoutValue::Text(t) => write!(f, "{t:?}"),
        }
    }
}

/// A written duration read: more than zero and at most a day; errors name
/// `key`.
pub fn parse_timeout(key: &str, t: &TimeoutValue) -> Result<Duration, String> {
    let bad = || {
        format!(
            "`{key}`: {t} is not a duration of up to a day; write seconds (30) or \"500ms\", \"30s\", \"2m\""
        )
    };
    let secs = match t {
        TimeoutValue::Seconds(s) => *s,
        TimeoutValue::Text(text) => {
            let text = text.trim();
            let (num, scale) = if let Some(n) = text.strip_suffix("ms") {
                (n, 0.001)
            } else if let Some(n) = text.strip_suffix('s') {
                (n, 1.0)
            } else if let Some(n) = text.strip_suffix('m') {
                (n, 60.0)
            } else {
                (text, 1.0)
            };
            num.trim().parse::<f64>().map_err(|_| bad())? * scale
        }
    };
    if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts() {
        let d = |t: TimeoutValue| parse_timeout("timeout", &t);
        assert_eq!(
            d(TimeoutValue::Seconds(2.5)),
            Ok(Duration::from_millis(2500))
        );
        assert_eq!(
            d(TimeoutValue::Text("500ms".into())),
            Ok(Duration::from_millis(500))
        );
        assert_eq!(
            d(TimeoutValue::Text("2m".into())),
            Ok(Duration::from_secs(120))
        );
        assert!(d(TimeoutValue::Seconds(0.0)).is_err());
    }
}
