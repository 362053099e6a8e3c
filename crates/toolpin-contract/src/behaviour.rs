//! What a call did, and the behaviour snapshot `toolpin.behaviour.json`
//! that `toolpin contract record` writes and `run` compares with.
//!
//! An [`Observation`] is one golden call made `repeats` times: its error
//! class, the JSON types at every pointer of its result (array items
//! generalized as `*`), the item count of every array, the values of string
//! fields with few distinct values (timestamps, UUIDs and what the
//! contract calls [`Volatile`] left out), the built-in format of the strings
//! at each pointer, the keys that sort each array of objects, and the
//! latency percentiles. [`compare`] turns two observations into
//! [`Difference`]s, each with its behavioural rule id, one per change: a
//! format change is not also a value-set change, a lost order is reported
//! once per array.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolpin_manifest::Fingerprint;

use crate::formats::PRIORITY;
use crate::Error;

pub use crate::expect::{check_expect, resolve};

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
/// An array's items are checked for an order only with this many or more.
pub const MIN_ORDER_ITEMS: usize = 3;
/// At most this many order keys are kept per array.
pub const MAX_ORDER_KEYS: usize = 8;
/// At most this many distinct pointers are kept per call (its shape, and
/// with it its counts, value sets, formats and order keys): a result whose
/// members spread over more (an object keyed by ids) keeps the first ones
/// met, in key order, and the observation says so ([`Observation::bounded`]).
pub const MAX_POINTERS: usize = 1000;
/// Nothing deeper than this many levels into the payload is kept.
pub const MAX_DEPTH: usize = 32;

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
    /// The built-in format every string at a pointer satisfies (its name,
    /// `rfc3339`, `country-name`, …), when there is one. Volatile values
    /// count: a timestamp's format is kept though its values are not.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub formats: BTreeMap<String, String>,
    /// For each array of objects (the first seen at a generalized pointer,
    /// with at least [`MIN_ORDER_ITEMS`] items), the top-level scalar keys
    /// (`/created`) that sort its items, not constant, with the direction
    /// (`ascending`, `descending`); at most [`MAX_ORDER_KEYS`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub order: BTreeMap<String, BTreeMap<String, String>>,
    pub latency: Option<Latency>,
    /// The bounds the call's answers hit, each with what was left out:
    /// `members` ([`MAX_POINTERS`]), `depth` ([`MAX_DEPTH`]) and
    /// `result-bytes` (an answer over the caller's limit, not read).
    /// Written only when one was hit.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bounded: BTreeMap<String, String>,
}

/// What is left out of the value sets: the contract's `volatile` pointers
/// (with `*`, with or without a leading `/structuredContent`), and strings
/// matching its `volatile_patterns` (with `[defaults]`' ones).
#[derive(Clone, Debug, Default)]
pub struct Volatile {
    pub pointers: Vec<String>,
    /// Shared, not copied, by every call of a contract: a copied `Regex`
    /// starts an empty match cache, which cost each call a cache's setup.
    pub patterns: std::sync::Arc<[regex::Regex]>,
}

impl Volatile {
    /// Pointers only.
    pub fn pointers(pointers: &[String]) -> Volatile {
        Volatile {
            pointers: pointers.to_vec(),
            patterns: std::sync::Arc::new([]),
        }
    }

    fn pointer(&self, p: &str) -> bool {
        self.pointers
            .iter()
            .any(|v| v == p || v.strip_prefix("/structuredContent") == Some(p))
    }

    fn string(&self, s: &str) -> bool {
        volatile(s) || self.patterns.iter().any(|r| r.is_match(s))
    }
}

/// One result of one repeat, as the caller got it.
pub enum Outcome {
    /// The `tools/call` result object.
    Result(Value),
    /// A JSON-RPC or transport error, already classified.
    Error(Class),
    /// An answer larger than this many bytes, skipped unread: class
    /// `other`, and the bound noted.
    TooLarge(usize),
}

/// The JSON a result stands for: `structuredContent` if present, else the
/// text content parsed as JSON when it parses, else the text itself.
pub fn payload(result: &Value) -> std::borrow::Cow<'_, Value> {
    use std::borrow::Cow;
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
                return Cow::Owned(parsed);
            }
        }
        // Borrowed: a result is walked and checked, never changed, and a
        // copy of every payload was a tenth of a run's CPU.
        return Cow::Borrowed(s);
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
    Cow::Owned(match parsed.len() {
        0 => Value::Null,
        1 => parsed.into_iter().next().unwrap_or(Value::Null),
        _ => Value::Array(parsed),
    })
}

pub(crate) fn type_name(v: &Value) -> &'static str {
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

struct Walk<'v> {
    volatile: &'v Volatile,
    shape: BTreeMap<String, String>,
    counts: BTreeMap<String, u64>,
    strings: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// Per pointer, which of [`PRIORITY`] every string so far satisfies
    /// (a bit each).
    formats: BTreeMap<String, u16>,
    order: BTreeMap<String, BTreeMap<String, String>>,
    /// Values not kept: at a new pointer past [`MAX_POINTERS`], and deeper
    /// than [`MAX_DEPTH`].
    past_pointers: u64,
    too_deep: u64,
}

/// Which of [`PRIORITY`] `s` satisfies, of those in `mask`.
fn format_mask(s: &str, mask: u16) -> u16 {
    PRIORITY
        .iter()
        .enumerate()
        .filter(|(i, f)| mask & (1 << i) != 0 && f.holds(s))
        .fold(0, |m, (i, _)| m | (1 << i))
}

/// The top-level scalar keys (numbers, or strings) that sort `items`, with
/// the direction; constant keys, and arrays of fewer than
/// [`MIN_ORDER_ITEMS`] or of anything but objects, give none.
pub fn order_keys(items: &[Value]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if items.len() < MIN_ORDER_ITEMS {
        return out;
    }
    let Some(objects) = items
        .iter()
        .map(Value::as_object)
        .collect::<Option<Vec<_>>>()
    else {
        return out;
    };
    let mut names: Vec<&String> = objects[0].keys().collect();
    names.sort();
    for name in names {
        if out.len() >= MAX_ORDER_KEYS {
            break;
        }
        let Some(values) = objects
            .iter()
            .map(|o| o.get(name.as_str()))
            .collect::<Option<Vec<&Value>>>()
        else {
            continue;
        };
        if !(values.iter().all(|v| v.is_number()) || values.iter().all(|v| v.is_string())) {
            continue;
        }
        let (mut up, mut down) = (true, true);
        for pair in values.windows(2) {
            match crate::expect::compare_scalars(pair[0], pair[1]) {
                std::cmp::Ordering::Less => down = false,
                std::cmp::Ordering::Greater => up = false,
                std::cmp::Ordering::Equal => {}
            }
        }
        let key = format!("/{}", name.replace('~', "~0").replace('/', "~1"));
        match (up, down) {
            (true, false) => out.insert(key, "ascending".to_string()),
            (false, true) => out.insert(key, "descending".to_string()),
            // Constant, or not sorted.
            _ => None,
        };
    }
    out
}

/// The entry for `pointer`, inserted with `T::default()` when missing:
/// the key is copied only then (a page of rows visits each pointer once
/// per row).
fn slot<'m, T: Default>(map: &'m mut BTreeMap<String, T>, pointer: &str) -> &'m mut T {
    if !map.contains_key(pointer) {
        map.insert(pointer.to_string(), T::default());
    }
    map.get_mut(pointer)
        .expect("inserted just above when missing")
}

impl Walk<'_> {
    /// Visits `v` at `pointer`, `depth` levels into the payload, a buffer
    /// the walk extends for each child and restores after it.
    fn visit(&mut self, pointer: &mut String, v: &Value, depth: usize) {
        if depth > MAX_DEPTH {
            self.too_deep += 1;
            return;
        }
        if self.shape.len() >= MAX_POINTERS && !self.shape.contains_key(pointer.as_str()) {
            self.past_pointers += 1;
            return;
        }
        let t = type_name(v);
        // The same pointer with two types (integer and number): keep the wider.
        let entry = slot(&mut self.shape, pointer);
        if entry.is_empty() {
            entry.push_str(t);
        } else if entry != t {
            if (entry == "integer" && t == "number") || (entry == "number" && t == "integer") {
                *entry = "number".into();
            } else if !entry.split('|').any(|x| x == t) {
                let mut parts: Vec<&str> = entry.split('|').chain([t]).collect();
                parts.sort_unstable();
                *entry = parts.join("|");
            }
        }
        let len = pointer.len();
        match v {
            Value::Array(items) => {
                if !self.counts.contains_key(pointer.as_str()) {
                    self.counts.insert(pointer.clone(), items.len() as u64);
                    let keys = order_keys(items);
                    if !keys.is_empty() {
                        self.order.insert(pointer.clone(), keys);
                    }
                }
                pointer.push_str("/*");
                for item in items {
                    self.visit(pointer, item, depth + 1);
                }
                pointer.truncate(len);
            }
            Value::Object(map) => {
                for (k, item) in map {
                    pointer.push('/');
                    if k.contains(['~', '/']) {
                        pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    } else {
                        pointer.push_str(k);
                    }
                    self.visit(pointer, item, depth + 1);
                    pointer.truncate(len);
                }
            }
            Value::String(s) => {
                // Every format holds until a string fails it.
                if !self.formats.contains_key(pointer.as_str()) {
                    self.formats.insert(pointer.clone(), u16::MAX);
                }
                let mask = slot(&mut self.formats, pointer);
                if *mask != 0 {
                    *mask = format_mask(s, *mask);
                }
                if !self.volatile.string(s) && s.chars().count() <= MAX_VALUE_CHARS {
                    let set = slot(&mut self.strings, pointer);
                    if set.len() <= MAX_VALUES && !set.contains(s) {
                        set.insert(s.clone());
                    }
                }
            }
            _ => {}
        }
    }
}

/// Observes the repeats of one call, with their latencies in milliseconds.
/// What `volatile` names is left out of the value sets.
pub fn observe(outcomes: &[(Outcome, f64)], volatile: &Volatile) -> Observation {
    let mut walk = Walk {
        volatile,
        shape: BTreeMap::new(),
        counts: BTreeMap::new(),
        strings: BTreeMap::new(),
        formats: BTreeMap::new(),
        order: BTreeMap::new(),
        past_pointers: 0,
        too_deep: 0,
    };
    let mut bounded = BTreeMap::new();
    let mut class = None;
    for (outcome, _) in outcomes {
        let c = match outcome {
            Outcome::Error(c) => *c,
            Outcome::TooLarge(limit) => {
                bounded.insert(
                    "result-bytes".to_string(),
                    format!("an answer larger than {limit} bytes was not read"),
                );
                Class::Other
            }
            Outcome::Result(r) if r.get("isError") == Some(&Value::Bool(true)) => {
                let text = payload(r);
                let msg = match text.as_ref() {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                Class::of_error(None, None, &msg)
            }
            Outcome::Result(r) => {
                walk.visit(&mut String::new(), &payload(r), 0);
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
        .filter(|(p, set)| set.len() <= MAX_VALUES && !volatile.pointer(p))
        .map(|(p, set)| (p, set.into_iter().collect()))
        .collect();
    let formats = walk
        .formats
        .into_iter()
        .filter_map(|(p, mask)| {
            let first = (0..PRIORITY.len()).find(|i| mask & (1 << i) != 0)?;
            Some((p, PRIORITY[first].as_str().to_string()))
        })
        .collect();
    if walk.past_pointers > 0 {
        bounded.insert(
            "members".to_string(),
            format!(
                "{} at pointers past the first {MAX_POINTERS} not kept",
                count_values(walk.past_pointers)
            ),
        );
    }
    if walk.too_deep > 0 {
        bounded.insert(
            "depth".to_string(),
            format!(
                "{} deeper than {MAX_DEPTH} levels not kept (with all they hold)",
                count_values(walk.too_deep)
            ),
        );
    }
    let latencies: Vec<f64> = outcomes.iter().map(|(_, ms)| *ms).collect();
    Observation {
        class,
        shape: walk.shape,
        counts: walk.counts,
        values,
        formats,
        order: walk.order,
        latency: Some(Latency::of(&latencies)),
        bounded,
    }
}

/// "1 value", "2 values".
fn count_values(n: u64) -> String {
    format!("{n} value{}", if n == 1 { "" } else { "s" })
}

/// The behaviour snapshot: one observation per call, keyed
/// `server/tool#call`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub version: u64,
    /// `sha256:` over the canonical JSON (RFC 8785) of `calls`.
    pub fingerprint: String,
    pub calls: BTreeMap<String, Observation>,
    /// Whether each default probe held when recorded, keyed
    /// `server/tool#probe:PARAMETER` ([`probe_key`]). Written only when
    /// there are probes, so snapshots without them read as before.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub probes: BTreeMap<String, bool>,
}

impl Snapshot {
    pub fn new(calls: BTreeMap<String, Observation>) -> Snapshot {
        Snapshot::with_probes(calls, BTreeMap::new())
    }

    pub fn with_probes(
        calls: BTreeMap<String, Observation>,
        probes: BTreeMap<String, bool>,
    ) -> Snapshot {
        let fingerprint = fingerprint(&calls, &probes);
        Snapshot {
            version: SNAPSHOT_VERSION,
            fingerprint,
            calls,
            probes,
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
        if fingerprint(&snapshot.calls, &snapshot.probes) != snapshot.fingerprint {
            return Err(Error::new(format!(
                "{shown}: the fingerprint does not match its calls; it was edited by hand; run `toolpin contract record` again"
            )));
        }
        Ok(snapshot)
    }
}

/// Over `calls` alone when there are no probes (the fingerprint snapshots
/// had before probes were kept), else over `{"calls", "probes"}`.
pub(crate) fn fingerprint<C: Serialize + ?Sized>(
    calls: &C,
    probes: &BTreeMap<String, bool>,
) -> String {
    let calls = serde_json::to_value(calls).unwrap_or(Value::Null);
    let value = if probes.is_empty() {
        calls
    } else {
        serde_json::json!({"calls": calls, "probes": probes})
    };
    Fingerprint::of_bytes(&toolpin_manifest::jcs::to_canonical_vec(&value)).to_hex()
}

/// One behavioural difference.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Difference {
    /// The behavioural rule id.
    pub rule: &'static str,
    /// `server/tool#call`.
    pub call: String,
    pub pointer: Option<String>,
    pub message: String,
    /// What the snapshot held there and what the call gave now (a count,
    /// a value set, a format, an order, a class, a p95), when the
    /// difference is between two such values. Reports show them, and two
    /// findings are one repeated change only when they agree.
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// The differences of `now` from `recorded`, for the call `key`.
pub fn compare(key: &str, recorded: &Observation, now: &Observation) -> Vec<Difference> {
    let mut out = differences(key, recorded, now);
    for d in &mut out {
        (d.before, d.after) = values(d, recorded, now);
    }
    out
}

/// The values a difference from [`compare`] is between.
fn values(
    d: &Difference,
    recorded: &Observation,
    now: &Observation,
) -> (Option<Value>, Option<Value>) {
    fn at<T: Serialize>(map: &BTreeMap<String, T>, p: &str) -> Value {
        map.get(p).map_or(Value::Null, |v| {
            serde_json::to_value(v).unwrap_or(Value::Null)
        })
    }
    let p = d.pointer.as_deref().unwrap_or("");
    let class = |o: &Observation| Value::from(o.class.unwrap_or(Class::Ok).as_str());
    let p95 = |o: &Observation| o.latency.map_or(Value::Null, |l| Value::from(l.p95_ms));
    let (before, after) = match d.rule {
        "error-class-changed" => (class(recorded), class(now)),
        "result-field-missing" => (at(&recorded.shape, p), at(&now.shape, p)),
        "result-count-changed" => (at(&recorded.counts, p), at(&now.counts, p)),
        "result-format-changed" => (at(&recorded.formats, p), at(&now.formats, p)),
        "result-order-changed" => (at(&recorded.order, p), at(&now.order, p)),
        "result-value-set-changed" => (at(&recorded.values, p), at(&now.values, p)),
        "latency-regressed" => (p95(recorded), p95(now)),
        _ => return (None, None),
    };
    (Some(before), Some(after))
}

fn differences(key: &str, recorded: &Observation, now: &Observation) -> Vec<Difference> {
    let mut d = Differences {
        call: key,
        recorded,
        now,
        found: Vec::new(),
    };
    let (was, is) = (
        recorded.class.unwrap_or(Class::Ok),
        now.class.unwrap_or(Class::Ok),
    );
    if was != is {
        d.class_changed(was, is);
    } else if is == Class::Ok {
        d.shape();
        d.counts();
        // A format that changed explains the values that changed with it:
        // one finding, the format's.
        let reformatted = d.formats();
        d.order();
        d.values(&reformatted);
    }
    d.latency();
    d.found
}

/// The differences between a call's recorded and current observations.
struct Differences<'a> {
    call: &'a str,
    recorded: &'a Observation,
    now: &'a Observation,
    found: Vec<Difference>,
}

impl<'a> Differences<'a> {
    fn diff(&mut self, rule: &'static str, pointer: Option<&str>, message: String) {
        self.found.push(Difference {
            rule,
            call: self.call.to_string(),
            pointer: pointer.map(str::to_string),
            message,
            ..Difference::default()
        })
    }

    fn class_changed(&mut self, was: Class, is: Class) {
        // An answer not read for its size says why it is `other`.
        let why = |o: &Observation| {
            o.bounded
                .get("result-bytes")
                .map(|b| format!(" ({b})"))
                .unwrap_or_default()
        };
        let message = format!(
            "the call answered {}{} when recorded, {}{} now",
            was.as_str(),
            why(self.recorded),
            is.as_str(),
            why(self.now)
        );
        self.diff("error-class-changed", None, message);
    }

    fn shape(&mut self) {
        let (recorded, now) = (self.recorded, self.now);
        // Past the pointer bound, which pointers are kept depends on the
        // others: one not kept now is not known to be gone.
        let unknown_when_absent = now.bounded.contains_key("members");
        for (pointer, t) in &recorded.shape {
            match now.shape.get(pointer) {
                None if unknown_when_absent => {}
                None => self.diff(
                    "result-field-missing",
                    Some(pointer),
                    format!("`{}` ({t}) is no longer in the result", shown(pointer)),
                ),
                Some(n) if n != t => self.diff(
                    "result-field-missing",
                    Some(pointer),
                    format!("`{}` was {t}, is {n} now", shown(pointer)),
                ),
                _ => {}
            }
        }
    }

    fn counts(&mut self) {
        for (pointer, n) in &self.recorded.counts {
            if let Some(m) = self.now.counts.get(pointer) {
                if m != n {
                    self.diff(
                        "result-count-changed",
                        Some(pointer),
                        format!("`{}` held {n} items when recorded, {m} now", shown(pointer)),
                    );
                }
            }
        }
    }

    /// The pointers whose format changed.
    fn formats(&mut self) -> std::collections::BTreeSet<&'a str> {
        let (recorded, now) = (self.recorded, self.now);
        let mut reformatted = std::collections::BTreeSet::new();
        for (pointer, f) in &recorded.formats {
            let same_type = recorded.shape.contains_key(pointer)
                && now.shape.get(pointer) == recorded.shape.get(pointer);
            let is = now.formats.get(pointer);
            if same_type && is != Some(f) {
                reformatted.insert(pointer.as_str());
                self.diff(
                    "result-format-changed",
                    Some(pointer),
                    format!(
                        "`{}` held {f} values when recorded, {} now",
                        shown(pointer),
                        is.map_or("values of no built-in format", String::as_str)
                    ),
                );
            }
        }
        reformatted
    }

    fn order(&mut self) {
        let now = self.now;
        for (pointer, keys) in &self.recorded.order {
            // Only an array still long enough to show an order is judged.
            if now
                .counts
                .get(pointer)
                .is_none_or(|n| (*n as usize) < MIN_ORDER_ITEMS)
            {
                continue;
            }
            let now_keys = now.order.get(pointer);
            let held = keys
                .iter()
                .any(|(k, d)| now_keys.and_then(|m| m.get(k)) == Some(d));
            if held {
                continue;
            }
            let was = keys
                .iter()
                .map(|(k, d)| format!("`{k}` {d}"))
                .collect::<Vec<_>>()
                .join(", ");
            let is: Vec<String> = keys
                .keys()
                .filter_map(|k| Some(format!("`{k}` {}", now_keys?.get(k)?)))
                .collect();
            let is = if is.is_empty() {
                "by none of them".to_string()
            } else {
                format!("by {}", is.join(", "))
            };
            self.diff(
                "result-order-changed",
                Some(pointer),
                format!(
                    "`{}` was sorted by {was} when recorded, now {is}",
                    shown(pointer)
                ),
            );
        }
    }

    fn values(&mut self, reformatted: &std::collections::BTreeSet<&str>) {
        for (pointer, set) in &self.recorded.values {
            if reformatted.contains(pointer.as_str()) {
                continue;
            }
            let Some(now_set) = self.now.values.get(pointer).filter(|n| *n != set) else {
                continue;
            };
            let added: Vec<&String> = now_set.iter().filter(|v| !set.contains(v)).collect();
            let gone: Vec<&String> = set.iter().filter(|v| !now_set.contains(v)).collect();
            let mut parts = Vec::new();
            if !added.is_empty() {
                parts.push(format!("new {}", list(&added)));
            }
            if !gone.is_empty() {
                parts.push(format!("no longer {}", list(&gone)));
            }
            self.diff(
                "result-value-set-changed",
                Some(pointer),
                format!("values at `{}`: {}", shown(pointer), parts.join("; ")),
            );
        }
    }

    fn latency(&mut self) {
        if let (Some(a), Some(b)) = (self.recorded.latency, self.now.latency) {
            if b.p95_ms > LATENCY_FACTOR * a.p95_ms && b.p95_ms > LATENCY_FLOOR_MS {
                self.diff(
                    "latency-regressed",
                    None,
                    format!("p95 {} ms, recorded {} ms", b.p95_ms, a.p95_ms),
                );
            }
        }
    }
}

/// The key of a default probe: `server/tool#probe:PARAMETER`.
pub fn probe_key(tool: &str, parameter: &str) -> String {
    format!("{tool}#probe:{parameter}")
}

/// Why a default probe does not hold, `None` when it does: the call
/// without the parameter (`without`) and the call with its pinned default
/// passed (`with`) must answer alike: the same class, the same JSON type at
/// every pointer, and the same item count in every array. Values are not
/// compared (two calls in a row may see different data); neither are
/// latencies.
pub fn probe_differs(parameter: &str, without: &Observation, with: &Observation) -> Option<String> {
    let (a, b) = (
        without.class.unwrap_or(Class::Ok),
        with.class.unwrap_or(Class::Ok),
    );
    if a != b {
        return Some(format!(
            "without `{parameter}` the call answered {}, with its pinned default {}",
            a.as_str(),
            b.as_str()
        ));
    }
    for (pointer, n) in &with.counts {
        match without.counts.get(pointer) {
            Some(m) if m != n => {
                return Some(format!(
                    "without `{parameter}` `{}` held {m} items, with its pinned default {n}",
                    shown(pointer)
                ))
            }
            _ => {}
        }
    }
    let fields = |o: &Observation, other: &Observation| -> Vec<String> {
        o.shape
            .iter()
            .filter(|(p, t)| other.shape.get(*p) != Some(t))
            .map(|(p, t)| format!("`{}` ({t})", shown(p)))
            .collect()
    };
    let (only_with, only_without) = (fields(with, without), fields(without, with));
    if !only_with.is_empty() || !only_without.is_empty() {
        let mut parts = Vec::new();
        if !only_with.is_empty() {
            parts.push(format!(
                "only with its pinned default: {}",
                only_with.join(", ")
            ));
        }
        if !only_without.is_empty() {
            parts.push(format!("only without it: {}", only_without.join(", ")));
        }
        return Some(format!(
            "the result differs in shape with and without `{parameter}`: {}",
            parts.join("; ")
        ));
    }
    None
}

/// A default probe judged in a run: `default-behaviour-changed` when it
/// does not hold now, unless the snapshot recorded that it did not hold
/// then either (the server never honoured that default; `record` said so).
pub fn probe_difference(
    key: &str,
    parameter: &str,
    held_when_recorded: Option<bool>,
    without: &Observation,
    with: &Observation,
) -> Option<Difference> {
    let why = probe_differs(parameter, without, with)?;
    if held_when_recorded == Some(false) {
        return None;
    }
    Some(Difference {
        rule: "default-behaviour-changed",
        call: key.to_string(),
        pointer: None,
        message: format!("{why} (the pinned default no longer describes the server's)"),
        ..Difference::default()
    })
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
                    before: Some(Value::from(b)),
                    after: Some(Value::from(got)),
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
    use serde_json::{json, Map};

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
    fn an_observation_keeps_at_most_the_bounded_pointers_and_depth_and_says_so() {
        let wide: Map<String, Value> = (0..MAX_POINTERS + 500)
            .map(|i| (format!("k{i:05}"), json!(format!("v{}", i % 3))))
            .collect();
        let mut deep = json!("leaf");
        for _ in 0..MAX_DEPTH + 3 {
            deep = json!({ "d": deep });
        }
        let mut payload = wide.clone();
        payload.insert("a".into(), deep);
        let o = observe(
            &[(result(Value::Object(payload)), 1.0)],
            &Volatile::default(),
        );
        assert_eq!(o.shape.len(), MAX_POINTERS);
        assert!(o.values.len() < MAX_POINTERS && o.formats.len() < MAX_POINTERS);
        // "a" sorts first: its chain is kept down to MAX_DEPTH levels.
        let chain = |n: usize| format!("/a{}", "/d".repeat(n - 1));
        assert!(o.shape.contains_key(&chain(MAX_DEPTH)));
        assert!(!o.shape.contains_key(&chain(MAX_DEPTH + 1)));
        assert_eq!(
            o.bounded["depth"],
            "1 value deeper than 32 levels not kept (with all they hold)"
        );
        // 1 + 33 pointers of the chain, then members up to the bound.
        let kept = MAX_POINTERS - 1 - MAX_DEPTH;
        assert_eq!(
            o.bounded["members"],
            format!(
                "{} values at pointers past the first 1000 not kept",
                MAX_POINTERS + 500 - kept
            )
        );
        // Over the bound, a pointer that is not kept now is not reported
        // as gone; one with another type still is.
        let mut fewer = wide.clone();
        fewer.insert("0first".into(), json!(1));
        fewer.insert("k00000".into(), json!(5));
        let now = observe(&[(result(Value::Object(fewer)), 1.0)], &Volatile::default());
        let differences = compare("s/t#c", &o, &now);
        let rules: Vec<(&str, Option<&str>)> = differences
            .iter()
            .map(|d| (d.rule, d.pointer.as_deref()))
            .collect();
        assert_eq!(rules, [("result-field-missing", Some("/k00000"))]);
        // Within the bounds nothing is noted, and the snapshot of before
        // reads the same.
        let small = observe(&[(result(rows(3, &["a"])), 1.0)], &Volatile::default());
        assert!(small.bounded.is_empty());
        assert!(!serde_json::to_string(&small).unwrap().contains("bounded"));
    }

    #[test]
    fn an_answer_too_large_to_read_is_class_other_with_its_bound() {
        let o = observe(&[(Outcome::TooLarge(16 << 20), 3.0)], &Volatile::default());
        assert_eq!(o.class, Some(Class::Other));
        assert!(o.shape.is_empty());
        assert_eq!(
            o.bounded["result-bytes"],
            "an answer larger than 16777216 bytes was not read"
        );
        let ok = observe(&[(result(rows(3, &["a"])), 1.0)], &Volatile::default());
        let d = compare("s/t#c", &o, &ok);
        assert_eq!(d.len(), 1);
        assert_eq!(
            d[0].message,
            "the call answered other (an answer larger than 16777216 bytes was not read) when recorded, ok now"
        );
    }

    #[test]
    fn observes_shape_counts_values_and_redacts_timestamps() {
        let o = observe(
            &[(result(rows(3, &["open", "closed"])), 5.0)],
            &Volatile::default(),
        );
        assert_eq!(o.class, Some(Class::Ok));
        assert_eq!(o.shape["/rows/*/status"], "string");
        assert_eq!(o.counts["/rows"], 3);
        assert_eq!(o.values["/rows/*/status"], vec!["closed", "open"]);
        assert!(!o.values.contains_key("/rows/*/at"));
        assert_eq!(o.values["/rows/*/id"], vec!["0", "1", "2"]);
        let volatile = ["/structuredContent/rows/*/id".to_string()];
        let o = observe(
            &[(result(rows(3, &["open"])), 5.0)],
            &Volatile::pointers(&volatile),
        );
        assert!(!o.values.contains_key("/rows/*/id"));
    }

    #[test]
    fn each_change_is_its_own_difference() {
        let base = observe(
            &[(result(rows(50, &["a", "b", "c"])), 5.0)],
            &Volatile::default(),
        );
        assert!(compare("k", &base, &base).is_empty());
        let fewer = observe(
            &[(result(rows(20, &["a", "b", "c"])), 5.0)],
            &Volatile::default(),
        );
        let rules: Vec<_> = compare("k", &base, &fewer)
            .into_iter()
            .map(|d| d.rule)
            .collect();
        // The ids differ too (fewer of them): restrict ids as volatile.
        assert!(rules.contains(&"result-count-changed"));
        let slow = observe(
            &[(result(rows(50, &["a", "b", "c"])), 300.0)],
            &Volatile::default(),
        );
        let d = compare("k", &base, &slow);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].rule, "latency-regressed");
        let err = observe(
            &[(Outcome::Error(Class::RateLimit), 5.0)],
            &Volatile::default(),
        );
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
            observe(&[(result(json!({"a": 1})), 1.0)], &Volatile::default()),
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

    fn obs(v: Value) -> Observation {
        observe(&[(result(v), 5.0)], &Volatile::default())
    }

    fn rules(d: &[Difference]) -> Vec<&'static str> {
        d.iter().map(|d| d.rule).collect()
    }

    /// 30 orders, newest first: `id` ascending, `created` descending.
    fn orders(country: &dyn Fn(usize) -> &'static str, reversed: bool) -> Value {
        let names = ["open", "pending", "closed"];
        let mut items: Vec<Value> = (0..30)
            .map(|i| {
                json!({
                    "id": format!("ord-{i:04}"),
                    "status": names[i % 3],
                    "country": country(i),
                    "created": format!("2026-12-02T10:{:02}:00Z", 59 - i),
                    "total": 10 + (i * 7) % 13,
                })
            })
            .collect();
        if reversed {
            items.reverse();
        }
        json!({"rows": items, "total": 1000})
    }

    fn names(i: usize) -> &'static str {
        ["Germany", "France", "Japan", "Brazil", "Canada"][i % 5]
    }

    fn codes(i: usize) -> &'static str {
        ["DE", "FR", "JP", "BR", "CA"][i % 5]
    }

    #[test]
    fn records_formats_and_order_keys() {
        let o = obs(orders(&names, false));
        assert_eq!(o.formats["/rows/*/created"], "rfc3339");
        assert_eq!(o.formats["/rows/*/country"], "country-name");
        assert!(!o.formats.contains_key("/rows/*/id"));
        assert!(!o.formats.contains_key("/rows/*/status"));
        // The timestamps are volatile for the value sets, not for formats.
        assert!(!o.values.contains_key("/rows/*/created"));
        let order = &o.order["/rows"];
        assert_eq!(order.get("/id").map(String::as_str), Some("ascending"));
        assert_eq!(
            order.get("/created").map(String::as_str),
            Some("descending")
        );
        assert!(!order.contains_key("/status"), "{order:?}");
        assert!(!order.contains_key("/total"), "{order:?}");
        let text = serde_json::to_string(&o).unwrap();
        let back: Observation = serde_json::from_str(&text).unwrap();
        assert_eq!(back, o);
    }

    #[test]
    fn order_keys_need_three_items_a_changing_key_and_one_kind() {
        assert!(order_keys(&[json!({"a": 1}), json!({"a": 2})]).is_empty());
        assert!(order_keys(&[json!({"a": 1}), json!({"a": 1}), json!({"a": 1})]).is_empty());
        assert!(order_keys(&[json!({"a": 1}), json!({"a": "2"}), json!({"a": 3})]).is_empty());
        assert!(order_keys(&[json!(1), json!(2), json!(3)]).is_empty());
        assert!(order_keys(&[json!({"a": 1}), json!({"b": 2}), json!({"a": 3})]).is_empty());
        let k = order_keys(&[
            json!({"a": 1, "b": "z", "c": true, "a/b": 0.5}),
            json!({"a": 1, "b": "y", "c": false, "a/b": 1}),
            json!({"a": 2.5, "b": "x", "c": true, "a/b": 2}),
        ]);
        assert_eq!(
            k,
            BTreeMap::from([
                ("/a".to_string(), "ascending".to_string()),
                ("/a~1b".to_string(), "ascending".to_string()),
                ("/b".to_string(), "descending".to_string()),
            ])
        );
        let many: Vec<Value> = (0..5)
            .map(|i| {
                let m: serde_json::Map<String, Value> = (0..20)
                    .map(|k| (format!("k{k:02}"), json!(i * k)))
                    .collect();
                Value::Object(m)
            })
            .collect();
        assert_eq!(order_keys(&many).len(), MAX_ORDER_KEYS);
    }

    #[test]
    fn a_format_change_is_one_finding_not_a_value_set_change_too() {
        let base = obs(orders(&names, false));
        let iso = obs(orders(&codes, false));
        let d = compare("k", &base, &iso);
        assert_eq!(rules(&d), ["result-format-changed"], "{d:?}");
        assert_eq!(
            d[0].message,
            "`/rows/*/country` held country-name values when recorded, iso-3166-alpha-2 now"
        );
        // A timestamp losing its offset.
        let mut local = orders(&names, false);
        for row in local["rows"].as_array_mut().unwrap() {
            let c = row["created"]
                .as_str()
                .unwrap()
                .trim_end_matches('Z')
                .to_string();
            row["created"] = json!(c);
        }
        let d = compare("k", &base, &obs(local));
        assert_eq!(rules(&d), ["result-format-changed"], "{d:?}");
        assert!(d[0]
            .message
            .ends_with("held rfc3339 values when recorded, rfc3339-local now"));
        // One value of no format: none now.
        let mut mixed = orders(&names, false);
        mixed["rows"][0]["country"] = json!("Atlantis");
        let d = compare("k", &base, &obs(mixed));
        assert_eq!(rules(&d), ["result-format-changed"], "{d:?}");
        assert!(
            d[0].message.ends_with("values of no built-in format now"),
            "{d:?}"
        );
        // A format that appears is not drift.
        assert!(compare("k", &iso, &iso).is_empty());
        let mut plain = orders(&names, false);
        plain["rows"][0]["id"] = json!("https://example.com/1");
        assert!(compare("k", &base, &obs(plain)).is_empty());
    }

    #[test]
    fn a_reorder_is_one_finding_per_array() {
        let base = obs(orders(&names, false));
        let d = compare("k", &base, &obs(orders(&names, true)));
        assert_eq!(rules(&d), ["result-order-changed"], "{d:?}");
        assert_eq!(
            d[0].message,
            "`/rows` was sorted by `/created` descending, `/id` ascending when recorded, now by `/created` ascending, `/id` descending"
        );
        // Shuffled: sorted by none of them.
        let mut shuffled = orders(&names, false);
        shuffled["rows"].as_array_mut().unwrap().swap(3, 17);
        let d = compare("k", &base, &obs(shuffled));
        assert_eq!(rules(&d), ["result-order-changed"], "{d:?}");
        assert!(d[0].message.ends_with("now by none of them"), "{d:?}");
        // Sorted by id and created by coincidence: one still holding is
        // enough.
        let mut ids = orders(&names, false);
        for (i, row) in ids["rows"].as_array_mut().unwrap().iter_mut().enumerate() {
            row["id"] = json!(format!("ord-{:04}", (i * 7) % 30));
        }
        assert!(compare("k", &base, &obs(ids)).is_empty());
        // Too short to show an order now: not judged (the count changed).
        let mut short = orders(&names, true);
        short["rows"].as_array_mut().unwrap().truncate(2);
        let d = compare("k", &base, &obs(short));
        assert!(rules(&d).contains(&"result-count-changed"), "{d:?}");
        assert!(!rules(&d).contains(&"result-order-changed"), "{d:?}");
    }

    #[test]
    fn volatile_patterns_keep_strings_out_of_value_sets() {
        let v = json!({"rows": [{"ref": "ord-1", "s": "a"}, {"ref": "ord-2", "s": "ord-3"}, {"ref": "x", "s": "b"}]});
        let plain = obs(v.clone());
        assert_eq!(plain.values["/rows/*/ref"], ["ord-1", "ord-2", "x"]);
        let volatile = Volatile {
            pointers: vec![],
            patterns: vec![regex::Regex::new("^ord-[0-9]+$").unwrap()].into(),
        };
        let o = observe(&[(result(v), 1.0)], &volatile);
        assert_eq!(o.values["/rows/*/ref"], ["x"]);
        assert_eq!(o.values["/rows/*/s"], ["a", "b"]);
    }

    #[test]
    fn an_old_snapshot_without_formats_or_order_still_reads() {
        let old = json!({"class": "ok", "shape": {"": "object"}, "counts": {}, "latency": {"p50_ms": 1.0, "p95_ms": 1.0}});
        let o: Observation = serde_json::from_value(old).unwrap();
        assert!(o.formats.is_empty() && o.order.is_empty());
        // Nor are empty maps written.
        let text = serde_json::to_string(&obs(json!({"a": 1}))).unwrap();
        assert!(
            !text.contains("formats") && !text.contains("order"),
            "{text}"
        );
    }

    /// A small deterministic generator of payloads.
    fn generated(seed: u64) -> Value {
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut next = |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let pool = [
            "Germany",
            "DE",
            "EUR",
            "2026-12-02T10:00:00Z",
            "2026-12-02",
            "a@example.com",
            "https://x.test/a",
            "open",
            "closed",
            "123e4567-e89b-12d3-a456-426614174000",
            "",
        ];
        let rows: Vec<Value> = (0..next(12))
            .map(|_| {
                let mut m = serde_json::Map::new();
                for k in 0..next(6) {
                    let v = match next(4) {
                        0 => json!(next(100)),
                        1 => json!(pool[next(pool.len() as u64) as usize]),
                        2 => json!([next(3), next(3), next(3)]),
                        _ => json!({"n": next(5), "s": pool[next(4) as usize]}),
                    };
                    m.insert(format!("k{k}"), v);
                }
                Value::Object(m)
            })
            .collect();
        json!({"rows": rows, "meta": {"page": next(4)}})
    }

    #[test]
    fn the_same_payload_observed_twice_never_differs() {
        for seed in 0..300 {
            let v = generated(seed);
            let (a, b) = (obs(v.clone()), obs(v.clone()));
            let d = compare("k", &a, &b);
            assert!(d.is_empty(), "seed {seed}: {d:?}\n{v}");
            // Through the snapshot's JSON too.
            let back: Observation =
                serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
            assert!(compare("k", &back, &b).is_empty(), "seed {seed}");
        }
        let base = obs(orders(&names, false));
        assert!(compare("k", &base, &obs(orders(&names, false))).is_empty());
    }
}
