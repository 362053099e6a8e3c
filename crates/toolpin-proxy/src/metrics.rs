//! Prometheus metrics (text exposition format 0.0.4): calls per tool,
//! argument enum values per tool and parameter, errors by class, latency
//! histograms and drift events. These are the selection rates and argument
//! distributions in which description drift shows up in production.
//!
//! Every label set is bounded whatever the agent sends: tool names come
//! from the served catalog, except those of refused calls to tools it does
//! not serve, which get their own series only up to
//! [`MAX_UNSERVED_TOOLS`] names (then `unknown`); enum argument values are
//! kept up to [`MAX_VALUES_PER_PARAMETER`] per parameter; and every label
//! value is cut to [`MAX_LABEL_BYTES`]. The events log keeps the detail.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use serde_json::Value;

/// Latency buckets, in seconds.
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// `mcp.server.operation.duration` buckets, in seconds: the boundaries
/// the MCP semantic conventions advise (docs/otel/mcp-semconv.json).
pub const MCP_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Most distinct `error_type` values kept per tool for
/// `mcp_server_operation_duration_seconds` (an upstream picks its JSON-RPC
/// codes); the others are counted as [`OTHER_ERROR_TYPE`].
pub const MAX_ERROR_TYPES: usize = 16;

/// The convention's fallback `error.type`.
pub const OTHER_ERROR_TYPE: &str = "_OTHER";

/// Most distinct values kept per (tool, parameter), so a free-text
/// parameter mistaken for an enum cannot grow the registry without bound.
const MAX_VALUES_PER_PARAMETER: usize = 64;

/// Most distinct names of tools the catalog does not serve (unknown or
/// withdrawn names, refused with `server=""`) that get series of their own;
/// the calls to any other such name are counted under [`UNKNOWN_TOOL`]. A
/// few names show which tools a model invents; thousands are an attack on
/// the scraper.
pub const MAX_UNSERVED_TOOLS: usize = 16;

/// The `tool` label of refused calls past [`MAX_UNSERVED_TOOLS`] names.
pub const UNKNOWN_TOOL: &str = "unknown";

/// Longest label value, in bytes before escaping; longer ones are cut at a
/// character boundary and end in `...`.
pub const MAX_LABEL_BYTES: usize = 128;

/// Why a call failed, as the `class` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ErrorClass {
    /// Refused before forwarding: invalid arguments, unknown or withdrawn tool.
    Validation,
    /// The upstream refused the caller (401/403, or an auth error).
    Auth,
    /// The upstream said slow down (429, or a rate-limit error).
    RateLimit,
    /// No answer in time.
    Timeout,
    /// Any other upstream error, including a crash mid-call.
    Upstream,
    /// The agent cancelled it.
    Cancelled,
}

impl ErrorClass {
    pub fn name(self) -> &'static str {
        match self {
            Self::Validation => "validation",
            Self::Auth => "auth",
            Self::RateLimit => "rate_limit",
            Self::Timeout => "timeout",
            Self::Upstream => "upstream",
            Self::Cancelled => "cancelled",
        }
    }

    /// Classifies an upstream JSON-RPC error (or a tool result with
    /// `isError`) by its code and message.
    pub fn of_upstream(code: Option<i64>, message: &str) -> Self {
        let m = message.to_ascii_lowercase();
        if m.contains("rate limit") || m.contains("too many requests") || m.contains("429") {
            Self::RateLimit
        } else if code == Some(crate::jsonrpc::REQUEST_TIMEOUT)
            || m.contains("timed out")
            || m.contains("timeout")
        {
            Self::Timeout
        } else if m.contains("unauthori")
            || m.contains("forbidden")
            || m.contains("401")
            || m.contains("403")
            || m.contains("permission")
        {
            Self::Auth
        } else {
            Self::Upstream
        }
    }
}

/// The error classes in the order of their names (the order they are
/// rendered in).
const CLASSES: [ErrorClass; 6] = [
    ErrorClass::Auth,
    ErrorClass::Cancelled,
    ErrorClass::RateLimit,
    ErrorClass::Timeout,
    ErrorClass::Upstream,
    ErrorClass::Validation,
];

fn class_index(class: ErrorClass) -> usize {
    CLASSES.iter().position(|c| *c == class).unwrap_or(0)
}

/// Cumulative buckets, count and sum, each an atomic. A call adds to the
/// count first and the buckets from the widest down, and `/metrics` reads
/// the buckets from the narrowest up and the count last, so a scrape during
/// a call never sees a bucket above a wider one or above the count.
#[derive(Default)]
struct Histogram {
    counts: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    /// An `f64`, as its bits.
    sum: AtomicU64,
}

impl Histogram {
    fn observe(&self, seconds: f64) {
        self.count.fetch_add(1, Ordering::SeqCst);
        for (i, bound) in BUCKETS.iter().enumerate().rev() {
            if seconds <= *bound {
                self.counts[i].fetch_add(1, Ordering::SeqCst);
            }
        }
        let mut current = self.sum.load(Ordering::Relaxed);
        loop {
            let next = (f64::from_bits(current) + seconds).to_bits();
            match self
                .sum
                .compare_exchange_weak(current, next, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(seen) => current = seen,
            }
        }
    }
}

/// The `mcp.server.operation.duration` histogram of one series: a count
/// per bucket (not cumulative: a call adds to one counter, not to every
/// bucket above it), made cumulative at scrape time, where the `+Inf`
/// count is their total, so a scrape is always consistent.
struct McpHistogram {
    /// By bucket of [`MCP_BUCKETS`], then above the last.
    counts: [AtomicU64; MCP_BUCKETS.len() + 1],
    /// An `f64`, as its bits.
    sum: AtomicU64,
}

impl Default for McpHistogram {
    fn default() -> Self {
        Self {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            sum: AtomicU64::new(0),
        }
    }
}

impl McpHistogram {
    fn observe(&self, seconds: f64) {
        let bucket = MCP_BUCKETS.partition_point(|bound| *bound < seconds);
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        add_f64(&self.sum, seconds);
    }
}

/// Adds to an `f64` kept as the bits of an `AtomicU64`.
fn add_f64(sum: &AtomicU64, x: f64) {
    let mut current = sum.load(Ordering::Relaxed);
    loop {
        let next = (f64::from_bits(current) + x).to_bits();
        match sum.compare_exchange_weak(current, next, Ordering::SeqCst, Ordering::Relaxed) {
            Ok(_) => break,
            Err(seen) => current = seen,
        }
    }
}

/// One tool's calls.
#[derive(Default)]
struct ToolStats {
    ok: AtomicU64,
    error: AtomicU64,
    /// By class, in [`CLASSES`] order.
    errors: [AtomicU64; CLASSES.len()],
    latency: Histogram,
    /// `mcp.server.operation.duration` of the calls that succeeded.
    mcp_ok: McpHistogram,
    /// … and of those that failed, by `error.type` (at most
    /// [`MAX_ERROR_TYPES`] of them, then [`OTHER_ERROR_TYPE`]). A few
    /// entries: a scan under a read lock, taken only on failed calls.
    mcp_errors: RwLock<Vec<(String, McpHistogram)>>,
}

impl ToolStats {
    fn record(&self, seconds: f64, error: Option<(ErrorClass, &str)>) {
        match error {
            None => {
                self.ok.fetch_add(1, Ordering::Relaxed);
                self.mcp_ok.observe(seconds);
            }
            Some((class, error_type)) => {
                self.errors[class_index(class)].fetch_add(1, Ordering::Relaxed);
                self.error.fetch_add(1, Ordering::Relaxed);
                self.mcp_error(seconds, &bounded(error_type));
            }
        };
        self.latency.observe(seconds);
    }

    fn mcp_error(&self, seconds: f64, error_type: &str) {
        if let Ok(errors) = self.mcp_errors.read() {
            if let Some((_, h)) = errors.iter().find(|(t, _)| t == error_type) {
                h.observe(seconds);
                return;
            }
        }
        let Ok(mut errors) = self.mcp_errors.write() else {
            return;
        };
        let name = if errors.iter().any(|(t, _)| t == error_type) || errors.len() < MAX_ERROR_TYPES
        {
            error_type
        } else {
            OTHER_ERROR_TYPE
        };
        if !errors.iter().any(|(t, _)| t == name) {
            errors.push((name.to_string(), McpHistogram::default()));
        }
        if let Some((_, h)) = errors.iter().find(|(t, _)| t == name) {
            h.observe(seconds);
        }
    }
}

/// Series that change on rare events (drift, refusals, findings): one
/// lock between them is never taken on a relayed call.
#[derive(Default)]
struct Rare {
    /// (server, rule, severity) → events.
    drift: BTreeMap<(String, String, String), u64>,
    /// (rule) → refusals and result findings.
    findings: BTreeMap<String, u64>,
    /// (server, tool, parameter) → arguments with a value the pinned enum
    /// does not allow.
    unknown_enum_values: BTreeMap<(String, String, String), u64>,
}

/// The proxy's metrics. Each series of a call is an atomic: counting a
/// call takes a read lock of the series map (to find its series) and no
/// exclusive lock, except the first call of a tool, which adds its series.
/// (`prometheus-client` keeps atomics per series too, but renders
/// OpenMetrics: `# EOF`, counters named without `_total` in `# TYPE`,
/// bounds as `1.0`; the 0.0.4 text that dashboards and the tests read
/// would change.)
#[derive(Default)]
pub struct Metrics {
    /// server → tool → calls (looked up by &str: no allocation per call).
    tools: RwLock<BTreeMap<String, BTreeMap<String, ToolStats>>>,
    /// (tool, parameter, value) → times passed.
    arguments: RwLock<BTreeMap<(String, String, String), AtomicU64>>,
    rare: Mutex<Rare>,
    /// `initialize` refused: the session cap was reached.
    sessions_refused: AtomicU64,
    /// The OTLP exporter's failures.
    export: std::sync::Arc<crate::telemetry::Health>,
    /// Why the HTTP front's gate closed connections, and its failed
    /// accepts (`toolpin_connections_closed_total`).
    pub(crate) connections: std::sync::Arc<toolpin_front::Tally>,
}

impl Metrics {
    /// Metrics that count the failed exports of `export`.
    pub fn with_export_health(export: std::sync::Arc<crate::telemetry::Health>) -> Self {
        Self {
            export,
            ..Self::default()
        }
    }

    /// One finished call: `error` is `None` on success. Its
    /// `mcp_server_operation_duration_seconds` error type is the class;
    /// see [`Metrics::call_as`] for another.
    pub fn call(&self, server: &str, tool: &str, seconds: f64, error: Option<ErrorClass>) {
        self.call_as(server, tool, seconds, error.map(|c| (c, c.name())));
    }

    /// One finished call: `error` is its class and its `error.type` (the
    /// JSON-RPC code, `tool_error`, a refusal's rule), `None` on success.
    pub fn call_as(
        &self,
        server: &str,
        tool: &str,
        seconds: f64,
        error: Option<(ErrorClass, &str)>,
    ) {
        let server = bounded(server);
        let tool = bounded(tool);
        // `server=""`: a name the catalog does not serve, chosen by the agent.
        let past_cap = |per_server: &BTreeMap<String, ToolStats>| {
            server.is_empty()
                && !per_server.contains_key(tool.as_ref())
                && per_server.keys().filter(|t| *t != UNKNOWN_TOOL).count() >= MAX_UNSERVED_TOOLS
        };
        if let Ok(map) = self.tools.read() {
            if let Some(per_server) = map.get(server.as_ref()) {
                let name = if past_cap(per_server) {
                    UNKNOWN_TOOL
                } else {
                    tool.as_ref()
                };
                if let Some(t) = per_server.get(name) {
                    t.record(seconds, error);
                    return;
                }
            }
        }
        // A new series.
        let Ok(mut map) = self.tools.write() else {
            return;
        };
        if !map.contains_key(server.as_ref()) {
            map.insert(server.to_string(), BTreeMap::new());
        }
        let Some(per_server) = map.get_mut(server.as_ref()) else {
            return;
        };
        let name = if past_cap(per_server) {
            UNKNOWN_TOOL
        } else {
            tool.as_ref()
        };
        if !per_server.contains_key(name) {
            per_server.insert(name.to_string(), ToolStats::default());
        }
        if let Some(t) = per_server.get(name) {
            t.record(seconds, error);
        }
    }

    /// A call refused before it reached upstream.
    pub fn refused(&self, server: &str, tool: &str, rule: &str) {
        self.call_as(server, tool, 0.0, Some((ErrorClass::Validation, rule)));
        self.finding(rule);
    }

    /// A finding seen at run time (`result-nonconformant`, …).
    pub fn finding(&self, rule: &str) {
        if let Ok(mut r) = self.rare.lock() {
            *r.findings.entry(bounded(rule).into_owned()).or_default() += 1;
        }
    }

    /// Counts the values of the enum parameters (top-level properties of
    /// the pinned inputSchema with an `enum` or `const`) in a call.
    pub fn arguments(&self, tool: &str, schema: &Value, args: &Value) {
        let (Some(props), Some(args)) = (
            schema.get("properties").and_then(Value::as_object),
            args.as_object(),
        ) else {
            return;
        };
        for (name, value) in args {
            let Some(prop) = props.get(name) else {
                continue;
            };
            if prop.get("enum").is_none() && prop.get("const").is_none() {
                continue;
            }
            let label = match value {
                Value::String(s) => bounded(s).into_owned(),
                other => bounded(&other.to_string()).into_owned(),
            };
            let key = (
                bounded(tool).into_owned(),
                bounded(name).into_owned(),
                label,
            );
            if let Ok(map) = self.arguments.read() {
                if let Some(n) = map.get(&key) {
                    n.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            }
            let Ok(mut map) = self.arguments.write() else {
                return;
            };
            if !map.contains_key(&key) {
                let distinct = map
                    .keys()
                    .filter(|(t, p, _)| *t == key.0 && *p == key.1)
                    .count();
                if distinct >= MAX_VALUES_PER_PARAMETER {
                    continue;
                }
            }
            map.entry(key).or_default().fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A call's argument at `pointer` had a value the pinned enum does not
    /// allow (counted whether or not validation refuses the call: the
    /// model chose it either way).
    pub fn unknown_enum_value(&self, server: &str, tool: &str, pointer: &str) {
        let parameter = pointer.strip_prefix('/').unwrap_or(pointer);
        if let Ok(mut r) = self.rare.lock() {
            bump(&mut r.unknown_enum_values, [server, tool, parameter]);
        }
    }

    /// A drift finding found at run time.
    pub fn drift_event(&self, server: &str, rule: &str, severity: &str) {
        if let Ok(mut r) = self.rare.lock() {
            bump(&mut r.drift, [server, rule, severity]);
        }
    }

    /// An `initialize` refused because the session cap was reached.
    pub fn session_refused(&self) {
        self.sessions_refused.fetch_add(1, Ordering::Relaxed);
    }

    /// The exposition text for `/metrics`.
    pub fn render(&self, catalog_fingerprint: &str) -> String {
        let (Ok(tools), Ok(arguments), Ok(r)) =
            (self.tools.read(), self.arguments.read(), self.rare.lock())
        else {
            return String::new();
        };
        let mut out = String::new();
        let _ = writeln!(out, "# HELP toolpin_catalog_info The pinned catalog served.\n# TYPE toolpin_catalog_info gauge");
        sample(
            &mut out,
            "toolpin_catalog_info",
            &[("fingerprint", catalog_fingerprint)],
            1,
        );
        let stats: Vec<(&str, &str, &ToolStats)> = tools
            .iter()
            .flat_map(|(server, tools)| {
                tools
                    .iter()
                    .map(move |(tool, t)| (server.as_str(), tool.as_str(), t))
            })
            .collect();
        render_tool_stats(&mut out, &stats);
        render_mcp_duration(&mut out, &stats);
        let _ = writeln!(out, "# HELP toolpin_tool_argument_values_total Enum argument values passed, by tool and parameter.\n# TYPE toolpin_tool_argument_values_total counter");
        for ((tool, param, value), n) in arguments.iter() {
            let labels = [
                ("tool", tool.as_str()),
                ("parameter", param.as_str()),
                ("value", value.as_str()),
            ];
            sample(
                &mut out,
                "toolpin_tool_argument_values_total",
                &labels,
                n.load(Ordering::Relaxed),
            );
        }
        let _ = writeln!(out, "# HELP toolpin_unknown_enum_values_total Arguments whose value the pinned enum does not allow, by tool and parameter.\n# TYPE toolpin_unknown_enum_values_total counter");
        for ((server, tool, parameter), n) in &r.unknown_enum_values {
            let labels = [
                ("server", server.as_str()),
                ("tool", tool.as_str()),
                ("parameter", parameter.as_str()),
            ];
            sample(&mut out, "toolpin_unknown_enum_values_total", &labels, n);
        }
        let _ = writeln!(out, "# HELP toolpin_drift_events_total Drift found upstream at run time.\n# TYPE toolpin_drift_events_total counter");
        for ((server, rule, severity), n) in &r.drift {
            let labels = [
                ("server", server.as_str()),
                ("rule", rule.as_str()),
                ("severity", severity.as_str()),
            ];
            sample(&mut out, "toolpin_drift_events_total", &labels, n);
        }
        let _ = writeln!(out, "# HELP toolpin_findings_total Run-time findings and refusals by rule.\n# TYPE toolpin_findings_total counter");
        for (rule, n) in &r.findings {
            sample(
                &mut out,
                "toolpin_findings_total",
                &[("rule", rule.as_str())],
                n,
            );
        }
        let _ = writeln!(out, "# HELP toolpin_sessions_refused_total initialize requests refused because the session cap was reached.\n# TYPE toolpin_sessions_refused_total counter");
        let refused = self.sessions_refused.load(Ordering::Relaxed);
        sample(&mut out, "toolpin_sessions_refused_total", &[], refused);
        let _ = writeln!(out, "# HELP toolpin_connections_closed_total HTTP connections the proxy closed, by reason.\n# TYPE toolpin_connections_closed_total counter");
        for (reason, n) in &self.connections.counts().closed {
            let labels = [("reason", reason.name())];
            sample(&mut out, "toolpin_connections_closed_total", &labels, n);
        }
        let _ = writeln!(out, "# HELP toolpin_otlp_export_failures_total OTLP trace exports that failed (spans dropped).\n# TYPE toolpin_otlp_export_failures_total counter");
        let failures = self.export.failures();
        sample(
            &mut out,
            "toolpin_otlp_export_failures_total",
            &[],
            failures,
        );
        out
    }
}

/// toolpin's own series per tool: calls by outcome, errors by class, and
/// the latency histogram.
fn render_tool_stats(out: &mut String, stats: &[(&str, &str, &ToolStats)]) {
    let _ = writeln!(out, "# HELP toolpin_tool_calls_total tools/call requests by tool and outcome.\n# TYPE toolpin_tool_calls_total counter");
    for (server, tool, t) in stats {
        let (error, ok) = (
            t.error.load(Ordering::Relaxed),
            t.ok.load(Ordering::Relaxed),
        );
        for (outcome, n) in [("error", error), ("ok", ok)] {
            if n > 0 {
                let labels = [("server", *server), ("tool", *tool), ("outcome", outcome)];
                sample(out, "toolpin_tool_calls_total", &labels, n);
            }
        }
    }
    let _ = writeln!(out, "# HELP toolpin_tool_errors_total Failed tools/call requests by class.\n# TYPE toolpin_tool_errors_total counter");
    for (server, tool, t) in stats {
        for (class, n) in CLASSES.iter().zip(&t.errors) {
            let n = n.load(Ordering::Relaxed);
            if n > 0 {
                let labels = [
                    ("server", *server),
                    ("tool", *tool),
                    ("class", class.name()),
                ];
                sample(out, "toolpin_tool_errors_total", &labels, n);
            }
        }
    }
    let _ = writeln!(out, "# HELP toolpin_tool_call_duration_seconds tools/call latency through the proxy.\n# TYPE toolpin_tool_call_duration_seconds histogram");
    for (server, tool, t) in stats {
        let h = &t.latency;
        for (i, bound) in BUCKETS.iter().enumerate() {
            let bound = bound.to_string();
            let labels = [("server", *server), ("tool", *tool), ("le", bound.as_str())];
            let n = h.counts[i].load(Ordering::SeqCst);
            sample(out, "toolpin_tool_call_duration_seconds_bucket", &labels, n);
        }
        let count = h.count.load(Ordering::SeqCst);
        let sum = f64::from_bits(h.sum.load(Ordering::SeqCst));
        let labels = [("server", *server), ("tool", *tool), ("le", "+Inf")];
        sample(
            out,
            "toolpin_tool_call_duration_seconds_bucket",
            &labels,
            count,
        );
        let labels = [("server", *server), ("tool", *tool)];
        sample(out, "toolpin_tool_call_duration_seconds_sum", &labels, sum);
        sample(
            out,
            "toolpin_tool_call_duration_seconds_count",
            &labels,
            count,
        );
    }
}

/// One sample line, `name{label="value",...} value`, its label values
/// escaped (no braces without labels).
fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: impl fmt::Display) {
    out.push_str(name);
    if !labels.is_empty() {
        out.push('{');
        for (i, (k, v)) in labels.iter().enumerate() {
            let comma = if i == 0 { "" } else { "," };
            let _ = write!(out, "{comma}{k}=\"{}\"", label(v));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {value}");
}

/// `mcp_server_operation_duration_seconds`: the convention's
/// `mcp.server.operation.duration` histogram, by tool and error type. The
/// same tool name under two servers (a served tool, and a refusal of the
/// name once withdrawn) is one series: summed here, at scrape time.
fn render_mcp_duration(out: &mut String, stats: &[(&str, &str, &ToolStats)]) {
    type Sums = ([u64; MCP_BUCKETS.len() + 1], f64);
    let mut series: BTreeMap<(&str, Option<String>), Sums> = BTreeMap::new();
    for (_, tool, t) in stats {
        let mut take = |error_type: Option<String>, h: &McpHistogram| {
            let counts: [u64; MCP_BUCKETS.len() + 1] =
                std::array::from_fn(|i| h.counts[i].load(Ordering::Relaxed));
            if counts.iter().all(|n| *n == 0) {
                return;
            }
            let sum = f64::from_bits(h.sum.load(Ordering::Relaxed));
            let e = series
                .entry((*tool, error_type))
                .or_insert(([0; MCP_BUCKETS.len() + 1], 0.0));
            for (have, more) in e.0.iter_mut().zip(counts) {
                *have += more;
            }
            e.1 += sum;
        };
        take(None, &t.mcp_ok);
        if let Ok(errors) = t.mcp_errors.read() {
            for (error_type, h) in errors.iter() {
                take(Some(error_type.clone()), h);
            }
        }
    }
    let _ = writeln!(out, "# HELP mcp_server_operation_duration_seconds MCP request duration as observed on the receiver (mcp.server.operation.duration), tools/call only.\n# TYPE mcp_server_operation_duration_seconds histogram");
    for ((tool, error_type), (counts, sum)) in &series {
        let mut labels = format!(
            "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"{}\"",
            label(tool)
        );
        if let Some(e) = error_type {
            let _ = write!(labels, ",error_type=\"{}\"", label(e));
        }
        let mut cumulative = 0;
        for (bound, n) in MCP_BUCKETS.iter().zip(counts) {
            cumulative += n;
            let _ = writeln!(
                out,
                "mcp_server_operation_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {cumulative}"
            );
        }
        let count = cumulative + counts[MCP_BUCKETS.len()];
        let _ = writeln!(
            out,
            "mcp_server_operation_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            out,
            "mcp_server_operation_duration_seconds_sum{{{labels}}} {sum}"
        );
        let _ = writeln!(
            out,
            "mcp_server_operation_duration_seconds_count{{{labels}}} {count}"
        );
    }
}

/// One more in the series of three label values, each cut to
/// [`MAX_LABEL_BYTES`].
fn bump(series: &mut BTreeMap<(String, String, String), u64>, labels: [&str; 3]) {
    let [a, b, c] = labels.map(|l| bounded(l).into_owned());
    *series.entry((a, b, c)).or_default() += 1;
}

/// A label value cut to [`MAX_LABEL_BYTES`] (ending in `...` when cut).
fn bounded(s: &str) -> Cow<'_, str> {
    if s.len() <= MAX_LABEL_BYTES {
        return Cow::Borrowed(s);
    }
    let mut end = MAX_LABEL_BYTES - 3;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}...", &s[..end]))
}

/// A label value escaped as the exposition format requires.
fn label(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_and_renders() {
        let m = Metrics::default();
        m.call("orders", "search", 0.003, None);
        m.call("orders", "search", 2.0, Some(ErrorClass::Timeout));
        m.arguments(
            "search",
            &json!({"properties": {"status": {"enum": ["open", "shipped"]}, "q": {"type": "string"}}}),
            &json!({"status": "open", "q": "free text"}),
        );
        m.drift_event("orders", "description-changed", "critical");
        let text = m.render("abc");
        for needle in [
            "toolpin_tool_calls_total{server=\"orders\",tool=\"search\",outcome=\"ok\"} 1",
            "toolpin_tool_errors_total{server=\"orders\",tool=\"search\",class=\"timeout\"} 1",
            "toolpin_tool_call_duration_seconds_bucket{server=\"orders\",tool=\"search\",le=\"0.005\"} 1",
            "toolpin_tool_call_duration_seconds_count{server=\"orders\",tool=\"search\"} 2",
            "toolpin_tool_argument_values_total{tool=\"search\",parameter=\"status\",value=\"open\"} 1",
            "toolpin_drift_events_total{server=\"orders\",rule=\"description-changed\",severity=\"critical\"} 1",
        ] {
            assert!(text.contains(needle), "{needle} not in\n{text}");
        }
        assert!(!text.contains("free text"));
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    /// The convention's histogram beside toolpin's own: its buckets, its
    /// labels, the error type only on failed calls, a bounded number of
    /// error types per tool, and one series for a tool name seen under two
    /// servers.
    #[test]
    fn mcp_server_operation_duration_follows_the_convention() {
        let m = Metrics::default();
        m.call("orders", "search", 0.015, None);
        m.call_as(
            "orders",
            "search",
            0.3,
            Some((ErrorClass::Upstream, "-32602")),
        );
        m.call_as(
            "orders",
            "search",
            0.3,
            Some((ErrorClass::Upstream, "tool_error")),
        );
        m.refused("orders", "search", "invalid-arguments");
        m.refused("", "search", "invalid-arguments");
        for code in 0..40 {
            m.call_as(
                "orders",
                "get",
                1.0,
                Some((ErrorClass::Upstream, &code.to_string())),
            );
        }
        let text = m.render("abc");
        for needle in [
            "# TYPE mcp_server_operation_duration_seconds histogram",
            "mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"search\",le=\"0.01\"} 0",
            "mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"search\",le=\"0.02\"} 1",
            "mcp_server_operation_duration_seconds_bucket{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"search\",le=\"300\"} 1",
            "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"search\"} 1",
            "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"search\",error_type=\"-32602\"} 1",
            "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"search\",error_type=\"tool_error\"} 1",
            // Two servers, one series.
            "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"search\",error_type=\"invalid-arguments\"} 2",
            "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"get\",error_type=\"_OTHER\"} 24",
            // toolpin's own histogram is unchanged.
            "toolpin_tool_call_duration_seconds_bucket{server=\"orders\",tool=\"search\",le=\"0.0005\"} 1",
        ] {
            assert!(text.contains(needle), "{needle} not in\n{text}");
        }
        let get_series = text
            .lines()
            .filter(|l| {
                l.starts_with("mcp_server_operation_duration_seconds_count{")
                    && l.contains("gen_ai_tool_name=\"get\"")
            })
            .count();
        assert_eq!(get_series, MAX_ERROR_TYPES + 1);
        let bounds: Vec<f64> = text
            .lines()
            .filter(|l| {
                l.starts_with("mcp_server_operation_duration_seconds_bucket{")
                    && l.contains("error_type=\"tool_error\"")
                    && !l.contains("+Inf")
            })
            .filter_map(|l| l.split("le=\"").nth(1)?.split('"').next()?.parse().ok())
            .collect();
        assert_eq!(bounds, MCP_BUCKETS);
    }

    /// Refused calls to tools the catalog does not serve: the first
    /// `MAX_UNSERVED_TOOLS` names have series of their own, every other
    /// name is counted as `unknown`.
    #[test]
    fn unserved_tool_names_collapse_into_unknown_past_the_cap() {
        let m = Metrics::default();
        for i in 0..1000 {
            m.refused("", &format!("made-up-{i}"), "unknown-tool-called");
        }
        m.refused("", "made-up-3", "unknown-tool-called");
        m.call("orders", "search", 0.001, None);
        let text = m.render("abc");
        let calls: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("toolpin_tool_calls_total{server=\"\","))
            .collect();
        assert_eq!(calls.len(), MAX_UNSERVED_TOOLS + 1, "{calls:#?}");
        assert!(calls.contains(
            &"toolpin_tool_calls_total{server=\"\",tool=\"made-up-3\",outcome=\"error\"} 2"
        ));
        assert!(calls.contains(
            &"toolpin_tool_calls_total{server=\"\",tool=\"unknown\",outcome=\"error\"} 984"
        ));
        // A served tool is never collapsed.
        assert!(text.contains(
            "toolpin_tool_calls_total{server=\"orders\",tool=\"search\",outcome=\"ok\"} 1"
        ));
        assert!(text.contains("toolpin_findings_total{rule=\"unknown-tool-called\"} 1001"));
    }

    #[test]
    fn label_values_are_cut_to_a_fixed_length() {
        let m = Metrics::default();
        let long = "é".repeat(10_000);
        m.refused("", &long, "unknown-tool-called");
        m.arguments(
            "search",
            &json!({"properties": {"status": {"enum": ["open"]}}}),
            &json!({"status": "x".repeat(1 << 20)}),
        );
        let text = m.render("abc");
        // About 40 lines name the cut tool (toolpin's series and the 17 of
        // mcp_server_operation_duration_seconds): bounded, whatever its length.
        assert!(text.len() < 16_000, "{} bytes", text.len());
        let cut = format!("{}...", "é".repeat(62));
        assert_eq!(cut.len(), 127);
        assert!(text.contains(&format!(
            "toolpin_tool_calls_total{{server=\"\",tool=\"{cut}\",outcome=\"error\"}} 1"
        )));
        assert!(text.contains(&format!(
            "toolpin_tool_argument_values_total{{tool=\"search\",parameter=\"status\",value=\"{}...\"}} 1",
            "x".repeat(125)
        )));
        assert_eq!(bounded("short"), "short");
        assert_eq!(bounded(&"a".repeat(128)).len(), 128);
        assert_eq!(bounded(&"a".repeat(129)).len(), 128);
    }

    /// Calls counted from several threads while `/metrics` is read: nothing
    /// is lost, and no scrape sees a bucket above a wider one.
    #[test]
    fn concurrent_calls_are_all_counted_and_scrapes_stay_consistent() {
        let m = std::sync::Arc::new(Metrics::default());
        let threads: Vec<_> = (0..4)
            .map(|i| {
                let m = std::sync::Arc::clone(&m);
                std::thread::spawn(move || {
                    for n in 0..2000 {
                        let error = (n % 5 == 0).then_some(ErrorClass::Upstream);
                        m.call("orders", "search", f64::from(i * n % 7) * 0.001, error);
                    }
                })
            })
            .collect();
        let bucket = |line: &str| line.rsplit(' ').next().and_then(|n| n.parse::<u64>().ok());
        for _ in 0..50 {
            let text = m.render("abc");
            let counts: Vec<u64> = text
                .lines()
                .filter(|l| l.starts_with("toolpin_tool_call_duration_seconds_bucket"))
                .filter_map(bucket)
                .collect();
            assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
        }
        for t in threads {
            t.join().expect("thread");
        }
        let text = m.render("abc");
        assert!(text.contains(
            "toolpin_tool_call_duration_seconds_count{server=\"orders\",tool=\"search\"} 8000"
        ));
        assert!(text.contains(
            "toolpin_tool_calls_total{server=\"orders\",tool=\"search\",outcome=\"error\"} 1600"
        ));
        assert!(text.contains(
            "toolpin_tool_errors_total{server=\"orders\",tool=\"search\",class=\"upstream\"} 1600"
        ));
    }
}
