//! What a call did, and the behaviour snapshot `toolpin.behaviour.json`
//! that `toolpin contract record` writes and `run` compares with.
//!
//! An [`Observation`] is one golden call made `repeats` times: its error
//! class, the JSON types at every pointer of its result (array items
//! generalized as `*`), the item count of every array, the values of string
//! fields with few distinct values (timestamps and UUIDs left out), and the
//! latency percentiles. [`compare`] turns two observations into
//! [`Difference`]s, each with its behavioural rule id.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolpin_manifest::Fingerprint;

use crate::Error;

/// The snapshot's suffix beside a lockfile.
pub const SUFFIX: &str = "behaviour.json";
/// The snapshot format this build reads and writes.
pub const SNAPSHOT_VERSION: u64 = 1;
/// A string field is kept as a value set only with at most this many
/// distinct values.
pub const MAX_VALUES: usize = 20;
/// Longer strings are prose or data, not values to branch on: left out.
pub const MAX_VALUE_CHARS: usize = 200;
/// Latency regresses when p95 is more than this factor of the recorded p95…
pub const LATENCY_FACTOR: f64 = 2.0;
/// …and above this floor, in milliseconds.
pub const LATENCY_FLOOR_MS: f64 = 100.0;

/// Where the behaviour snapshot for `lockfile` lives.
pub fn path_for(lockfile: &Path) -> PathBuf {
    toolpin_manifest::lockfile::sibling(lockfile, SUFFIX)
}

/// How a call failed, or `ok`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    Ok,
    Validation,
    RateLimit,
    Auth,
    Timeout,
    Other,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Ok => "ok",
            Class::Validation => "validation",
            Class::RateLimit => "rate-limit",
            Class::Auth => "auth",
            Class::Timeout => "timeout",
            Class::Other => "other",
        }
    }

    /// The class of an error from its JSON-RPC code (if any), HTTP status
    /// (if any) and message.
    pub fn of_error(rpc_code: Option<i64>, http_status: Option<u16>, message: &str) -> Class {
        let m = message.to_ascii_lowercase();
        if http_status == Some(429)
            || m.contains("rate limit")
            || m.contains("rate-limit")
            || m.contains("too many requests")
            || m.contains("429")
        {
            Class::RateLimit
        } else if matches!(http_status, Some(401 | 403))
            || m.contains("unauthorized")
            || m.contains("forbidden")
            || m.contains("401")
            || m.contains("403")
        {
            Class::Auth
        } else if rpc_code == Some(-32602)
            || m.contains("invalid argument")
            || m.contains("invalid params")
            || m.contains("validation")
        {
            Class::Validation
        } else if m.contains("timed out") || m.contains("timeout") {
            Class::Timeout
        } else {
            Class::Other
        }
    }
}

/// Latency percentiles over the repeats, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub p50_ms: f64,
    pub p95_ms: f64,
}

impl Latency {
    /// Nearest-rank percentiles of `samples` (milliseconds); zeros when empty.
    pub fn of(samples: &[f64]) -> Latency {
        let mut s = samples.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        let rank = |p: f64| -> f64 {
            if s.is_empty() {
                return 0.0;
            }
            let i = ((p * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1;
            (s[i] * 10.0).round() / 10.0
        };
        Latency {
            p50_ms: rank(0.50),
            p95_ms: rank(0.95),
        }
    }
}

/// One golden call, observed over its repeats.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// `ok`, or the class of the error (`isError` or a JSON-RPC error).
    pub class: Option<Class>,
    /// JSON type at each pointer.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub shape: BTreeMap<String, String>,
    /// Item count of each array (at generalized pointers: of the first).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counts: BTreeMap<String, u64>,
    /// The distinct string values at a pointer, when few.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, Vec<String>>,
    pub latency: Option<Latency>,
}

/// One result of one repeat, as the caller got it.
pub enum Outcome {
    /// The `tools/call` result object.
    Result(Value),
    /// A JSON-RPC or transport error, already classified.
    Error(Class),
}

/// The JSON a result stands for: `structuredContent` if present, else the
/// text content parsed as JSON when it parses, else the text itself.
pub fn payload(result: &Value) -> Value {
    if let Some(s) = result.get("structuredContent") {
        // SDKs wrap a tool's text return as `{"result": "…"}`: that text,
        // when it is JSON, is the payload.
        if let Some(Value::String(text)) = s
            .get("result")
            .filter(|_| s.as_object().is_some_and(|m| m.len() == 1))
        {
            if let Ok(parsed @ (Value::Object(_) | Value::Array(_))) =
                serde_json::from_str::<Value>(text)
            {
                return parsed;
            }
        }
        return s.clone();
    }
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter(|i| i.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|i| i.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    let parsed: Vec<Value> = texts
        .iter()
        .map(|t| serde_json::from_str(t).unwrap_or_else(|_| Value::String((*t).to_string())))
        .collect();
    match parsed.len() {
        0 => Value::Null,
        1 => parsed.into_iter().next().unwrap_or(Value::Null),
        _ => Value::Array(parsed),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether a string is volatile: an RFC 3339 timestamp or date, or a UUID.
pub fn volatile(s: &str) -> bool {
    let b = s.as_bytes();
    let uuid = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
    let date = b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
        && (b.len() == 10 || matches!(b[10], b'T' | b't' | b' '));
    uuid || date
}

#[derive(Default)]
struct Walk {
    shape: BTreeMap<String, String>,
    counts: BTreeMap<String, u64>,
    strings: BTreeMap<String, std::collections::BTreeSet<String>>,
}

impl Walk {
    fn visit(&mut self, pointer: &str, v: &Value) {
        let t = type_name(v);
        // The same pointer with two types (integer and number): keep the wider.
        let entry = self
            .shape
            .entry(pointer.to_string())
            .or_insert_with(|| t.to_string());
        if entry != t {
            if (entry == "integer" && t == "number") || (entry == "number" && t == "integer") {
                *entry = "number".into();
            } else if !entry.split('|').any(|x| x == t) {
                let mut parts: Vec<&str> = entry.split('|').chain([t]).collect();
                parts.sort_unstable();
                *entry = parts.join("|");
            }
        }
        match v {
            Value::Array(items) => {
                self.counts
                    .entry(pointer.to_string())
                    .or_insert(items.len() as u64);
                let inner = format!("{pointer}/*");
                for item in items {
                    self.visit(&inner, item);
                }
            }
            Value::Object(map) => {
                for (k, item) in map {
                    let key = k.replace('~', "~0").replace('/', "~1");
                    self.visit(&format!("{pointer}/{key}"), item);
                }
            }
            Value::String(s) if !volatile(s) && s.chars().count() <= MAX_VALUE_CHARS => {
                let set = self.strings.entry(pointer.to_string()).or_default();
                if set.len() <= MAX_VALUES {
                    set.insert(s.clone());
                }
            }
            _ => {}
        }
    }
}

/// Observes the repeats of one call, with their latencies in milliseconds.
/// `volatile` pointers (with `*`) are left out of the value sets.
pub fn observe(outcomes: &[(Outcome, f64)], volatile_pointers: &[String]) -> Observation {
    let mut walk = Walk::default();
    let mut class = None;
    for (outcome, _) in outcomes {
        let c = match outcome {
            Outcome::Error(c) => *c,
            Outcome::Result(r) if r.get("isError") == Some(&Value::Bool(true)) => {
                let text = payload(r);
                let msg = match &text {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                Class::of_error(None, None, &msg)
            }
            Outcome::Result(r) => {
                walk.visit("", &payload(r));
                Class::Ok
            }
        };
        // The first repeat's class stands; a flaky class is the worst seen.
        class = Some(match class {
            None => c,
            Some(Class::Ok) => c,
            Some(prev) => prev,
        });
    }
    let values = walk
        .strings
        .into_iter()
        .filter(|(p, set)| {
            set.len() <= MAX_VALUES
                && !volatile_pointers
                    .iter()
                    .any(|v| v == p || v.strip_prefix("/structuredContent") == Some(p.as_str()))
        })
        .map(|(p, set)| (p, set.into_iter().collect()))
        .collect();
    let latencies: Vec<f64> = outcomes.iter().map(|(_, ms)| *ms).collect();
    Observation {
        class,
        shape: walk.shape,
        counts: walk.counts,
        values,
        latency: Some(Latency::of(&latencies)),
    }
}

/// The behaviour snapshot: one observation per call, keyed
/// `server/tool#call`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub version: u64,
    /// `sha256:` over the canonical JSON (RFC 8785) of `calls`.
    pub fingerprint: String,
    pub calls: BTreeMap<String, Observation>,
}

impl Snapshot {
    pub fn new(calls: BTreeMap<String, Observation>) -> Snapshot {
        let fingerprint = fingerprint(&calls);
        Snapshot {
            version: SNAPSHOT_VERSION,
            fingerprint,
            calls,
        }
    }

    /// Pretty, sorted JSON with a final newline.
    pub fn to_text(&self) -> String {
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    }

    pub fn write(&self, path: &Path) -> Result<(), Error> {
        toolpin_manifest::fs::write_atomic(path, self.to_text().as_bytes())
            .map_err(|e| Error::new(format!("cannot write {}: {e}", path.display())))
    }

    pub fn read(path: &Path) -> Result<Snapshot, Error> {
        let shown = path.display();
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::new(format!(
                    "{shown} not found; run `toolpin contract record` first"
                )))
            }
            Err(e) => return Err(Error::new(format!("cannot read {shown}: {e}"))),
        };
        let snapshot: Snapshot = serde_json::from_str(&text)
            .map_err(|e| Error::new(format!("{shown}: not a behaviour snapshot: {e}")))?;
        if snapshot.version != SNAPSHOT_VERSION {
            return Err(Error::new(format!(
                "{shown}: version {} is not supported (this build reads {SNAPSHOT_VERSION})",
                snapshot.version
            )));
        }
        if fingerprint(&snapshot.calls) != snapshot.fingerprint {
            return Err(Error::new(format!(
                "{shown}: the fingerprint does not match its calls; it was edited by hand; run `toolpin contract record` again"
            )));
        }
        Ok(snapshot)
    }
}

fn fingerprint(calls: &BTreeMap<String, Observation>) -> String {
    let value = serde_json::to_value(calls).unwrap_or(Value::Null);
    Fingerprint::of_bytes(&toolpin_manifest::jcs::to_canonical_vec(&value)).to_hex()
}

/// One behavioural difference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The behavioural rule id.
    pub rule: &'static str,
    /// `server/tool#call`.
    pub call: String,
    pub pointer: Option<String>,
    pub message: String,
}

/// The differences of `now` from `recorded`, for the call `key`.
pub fn compare(key: &str, recorded: &Observation, now: &Observation) -> Vec<Difference> {
    let mut out = Vec::new();
    let mut diff = |rule, pointer: Option<&str>, message: String| {
        out.push(Difference {
            rule,
            call: key.to_string(),
            pointer: pointer.map(str::to_string),
            message,
        })
    };
    let (was, is) = (
        recorded.class.unwrap_or(Class::Ok),
        now.class.unwrap_or(Class::Ok),
    );
    if was != is {
        diff(
            "error-class-changed",
            None,
            format!(
                "the call answered {} when recorded, {} now",
                was.as_str(),
                is.as_str()
            ),
        );
    } else if is == Class::Ok {
        for (pointer, t) in &recorded.shape {
            match now.shape.get(pointer) {
                None => diff(
                    "result-field-missing",
                    Some(pointer),
                    format!("`{}` ({t}) is no longer in the result", shown(pointer)),
                ),
                Some(n) if n != t => diff(
                    "result-field-missing",
                    Some(pointer),
                    format!("`{}` was {t}, is {n} now", shown(pointer)),
                ),
                _ => {}
            }
        }
        for (pointer, n) in &recorded.counts {
            if let Some(m) = now.counts.get(pointer) {
                if m != n {
                    diff(
                        "result-count-changed",
                        Some(pointer),
                        format!("`{}` held {n} items when recorded, {m} now", shown(pointer)),
                    );
                }
            }
        }
        for (pointer, set) in &recorded.values {
            if let Some(now_set) = now.values.get(pointer) {
                if now_set != set {
                    let added: Vec<&String> = now_set.iter().filter(|v| !set.contains(v)).collect();
                    let gone: Vec<&String> = set.iter().filter(|v| !now_set.contains(v)).collect();
                    let mut parts = Vec::new();
                    if !added.is_empty() {
                        parts.push(format!("new {}", list(&added)));
                    }
                    if !gone.is_empty() {
                        parts.push(format!("no longer {}", list(&gone)));
                    }
                    diff(
                        "result-value-set-changed",
                        Some(pointer),
                        format!("values at `{}`: {}", shown(pointer), parts.join("; ")),
                    );
                }
            }
        }
    }
    if let (Some(a), Some(b)) = (recorded.latency, now.latency) {
        if b.p95_ms > LATENCY_FACTOR * a.p95_ms && b.p95_ms > LATENCY_FLOOR_MS {
            diff(
                "latency-regressed",
                None,
                format!("p95 {} ms, recorded {} ms", b.p95_ms, a.p95_ms),
            );
        }
    }
    out
}

/// The difference of a call's latency from its contract's budget.
pub fn over_budget(
    key: &str,
    now: &Observation,
    p50: Option<i64>,
    p95: Option<i64>,
) -> Vec<Difference> {
    let mut out = Vec::new();
    let Some(l) = now.latency else { return out };
    for (name, got, budget) in [("p50", l.p50_ms, p50), ("p95", l.p95_ms, p95)] {
        if let Some(b) = budget {
            if got > b as f64 {
                out.push(Difference {
                    rule: "latency-regressed",
                    call: key.to_string(),
                    pointer: None,
                    message: format!("{name} {got} ms is over the budget of {b} ms"),
                });
            }
        }
    }
    out
}

fn shown(pointer: &str) -> &str {
    if pointer.is_empty() {
        "(the result)"
    } else {
        pointer
    }
}

fn list(values: &[&String]) -> String {
    values
        .iter()
        .map(|v| format!("{v:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(v: Value) -> Outcome {
        Outcome::Result(json!({"content": [{"type": "text", "text": v.to_string()}]}))
    }

    fn rows(n: usize, statuses: &[&str]) -> Value {
        let items: Vec<Value> = (0..n)
            .map(|i| json!({"id": format!("{i}"), "status": statuses[i % statuses.len()], "at": "2026-12-02T10:00:00Z"}))
            .collect();
        json!({"rows": items})
    }

    #[test]
    fn observes_shape_counts_values_and_redacts_timestamps() {
        let o = observe(&[(result(rows(3, &["open", "closed"])), 5.0)], &[]);
        assert_eq!(o.class, Some(Class::Ok));
        assert_eq!(o.shape["/rows/*/status"], "string");
        assert_eq!(o.counts["/rows"], 3);
        assert_eq!(o.values["/rows/*/status"], vec!["closed", "open"]);
        assert!(!o.values.contains_key("/rows/*/at"));
        assert_eq!(o.values["/rows/*/id"], vec!["0", "1", "2"]);
        let volatile = ["/structuredContent/rows/*/id".to_string()];
        let o = observe(&[(result(rows(3, &["open"])), 5.0)], &volatile);
        assert!(!o.values.contains_key("/rows/*/id"));
    }

    #[test]
    fn each_change_is_its_own_difference() {
        let base = observe(&[(result(rows(50, &["a", "b", "c"])), 5.0)], &[]);
        assert!(compare("k", &base, &base).is_empty());
        let fewer = observe(&[(result(rows(20, &["a", "b", "c"])), 5.0)], &[]);
        let rules: Vec<_> = compare("k", &base, &fewer)
            .into_iter()
            .map(|d| d.rule)
            .collect();
        // The ids differ too (fewer of them): restrict ids as volatile.
        assert!(rules.contains(&"result-count-changed"));
        let slow = observe(&[(result(rows(50, &["a", "b", "c"])), 300.0)], &[]);
        let d = compare("k", &base, &slow);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].rule, "latency-regressed");
        let err = observe(&[(Outcome::Error(Class::RateLimit), 5.0)], &[]);
        let d = compare("k", &base, &err);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].rule, "error-class-changed");
    }

    #[test]
    fn classifies_errors() {
        assert_eq!(
            Class::of_error(Some(-32602), None, "bad"),
            Class::Validation
        );
        assert_eq!(Class::of_error(None, Some(429), ""), Class::RateLimit);
        assert_eq!(
            Class::of_error(None, None, "Rate limit exceeded"),
            Class::RateLimit
        );
        assert_eq!(Class::of_error(None, Some(401), ""), Class::Auth);
        assert_eq!(Class::of_error(None, None, "boom"), Class::Other);
    }

    #[test]
    fn snapshot_round_trips_with_its_fingerprint() {
        let mut calls = BTreeMap::new();
        calls.insert(
            "s/t#golden".to_string(),
            observe(&[(result(json!({"a": 1})), 1.0)], &[]),
        );
        let snap = Snapshot::new(calls);
        let dir = std::env::temp_dir().join(format!("toolpin-behaviour-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("toolpin.behaviour.json");
        snap.write(&path).unwrap();
        assert_eq!(Snapshot::read(&path).unwrap(), snap);
        std::fs::write(&path, snap.to_text().replace("\"integer\"", "\"string\"")).unwrap();
        assert!(Snapshot::read(&path).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}

/// The values at `pointer` (with `*` for every array item) in `payload`.
/// A leading `/structuredContent` is optional: pointers point into the
/// payload.
pub fn resolve<'a>(payload: &'a Value, pointer: &str) -> Vec<&'a Value> {
    let pointer = pointer
        .strip_prefix("/structuredContent")
        .unwrap_or(pointer);
    let mut at = vec![payload];
    if pointer.is_empty() {
        return at;
    }
    for token in pointer.trim_start_matches('/').split('/') {
        let token = token.replace("~1", "/").replace("~0", "~");
        let mut next = Vec::new();
        for v in at {
            match (v, token.as_str()) {
                (Value::Array(items), "*") => next.extend(items.iter()),
                (Value::Array(items), t) => {
                    if let Some(item) = t.parse::<usize>().ok().and_then(|i| items.get(i)) {
                        next.push(item);
                    }
                }
                (Value::Object(map), t) => {
                    if let Some(item) = map.get(t) {
                        next.push(item);
                    }
                }
                _ => {}
            }
        }
        at = next;
    }
    at
}

/// The `expect` assertions `fields`, `values` and `counts` of the call
/// `key`, evaluated on one successful result's payload; each failure is a
/// `contract-failed` difference.
pub fn check_expect(key: &str, expect: &crate::Expect, payload: &Value) -> Vec<Difference> {
    let mut out = Vec::new();
    let mut fail = |pointer: &str, message: String| {
        out.push(Difference {
            rule: "contract-failed",
            call: key.to_string(),
            pointer: Some(pointer.to_string()),
            message,
        })
    };
    for field in &expect.fields {
        let pointer = field.pointer.get_ref();
        let found = resolve(payload, pointer);
        if found.is_empty() {
            fail(
                pointer,
                format!("expected a value at `{pointer}`, found none"),
            );
            continue;
        }
        if let Some(t) = field.json_type {
            let want = format!("{t:?}").to_ascii_lowercase();
            if let Some(bad) = found.iter().find(|v| {
                let got = type_name(v);
                !(got == want || (want == "number" && got == "integer"))
            }) {
                fail(
                    pointer,
                    format!("expected {want} at `{pointer}`, found {}", type_name(bad)),
                );
            }
        }
    }
    for set in &expect.values {
        let pointer = set.pointer.get_ref();
        let allowed = set.set.get_ref();
        let found = resolve(payload, pointer);
        let mut outside: Vec<String> = found
            .iter()
            .filter(|v| !allowed.contains(v))
            .map(|v| v.to_string())
            .collect();
        outside.dedup();
        if !outside.is_empty() {
            fail(
                pointer,
                format!(
                    "values at `{pointer}` outside the pinned set: {}",
                    outside.join(", ")
                ),
            );
        }
        if set.exact {
            let missing: Vec<String> = allowed
                .iter()
                .filter(|v| !found.contains(v))
                .map(|v| v.to_string())
                .collect();
            if !missing.is_empty() {
                fail(
                    pointer,
                    format!(
                        "values of the pinned set not seen at `{pointer}`: {}",
                        missing.join(", ")
                    ),
                );
            }
        }
    }
    for count in &expect.counts {
        let pointer = count.pointer.get_ref();
        let found = resolve(payload, pointer);
        let n = match found.as_slice() {
            [Value::Array(items)] => items.len() as u64,
            _ if pointer.contains('*') => found.len() as u64,
            [] => {
                fail(
                    pointer,
                    format!("expected an array at `{pointer}`, found none"),
                );
                continue;
            }
            _ => found.len() as u64,
        };
        if count.min.is_some_and(|m| n < m) || count.max.is_some_and(|m| n > m) {
            let range = match (count.min, count.max) {
                (Some(a), Some(b)) => format!("{a}..{b}"),
                (Some(a), None) => format!("at least {a}"),
                (None, Some(b)) => format!("at most {b}"),
                (None, None) => String::new(),
            };
            fail(
                pointer,
                format!("`{pointer}` holds {n} items, expected {range}"),
            );
        }
    }
    out
}

#[cfg(test)]
mod expect_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolves_wildcards_and_the_structured_content_prefix() {
        let v = json!({"rows": [{"s": "a"}, {"s": "b"}]});
        assert_eq!(
            resolve(&v, "/structuredContent/rows/*/s"),
            vec![&json!("a"), &json!("b")]
        );
        assert_eq!(resolve(&v, "/rows/1/s"), vec![&json!("b")]);
        assert!(resolve(&v, "/nope").is_empty());
    }
}
