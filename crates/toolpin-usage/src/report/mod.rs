//! Change points (issue 19, point 3): what the same agent's calls did
//! before and after each catalog change, and day over day when nothing
//! changed. Per (environment, tenant, agent), the calls filed under one
//! catalog fingerprint are compared with those under the next: selection
//! shares across tools (chi-square, Jensen–Shannon distance as the effect),
//! each enum parameter's value distribution, how often each parameter is
//! supplied and each error class occurs (two-proportion tests), and each
//! tool's p95 latency. The p-values of one report are corrected together
//! (Holm). A tool the pinned catalog does not have, or an enum value it
//! does not allow, raises an alarm at once, without statistics.
//!
//! Pure: aggregates, pinned catalogs and thresholds in, a report out.

mod render;
pub mod stats;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::aggregate::{Aggregates, Key, Limits, ToolStats};

pub use render::{render_json, render_markdown, render_text};

/// The report document's `schema` member.
pub const SCHEMA: &str = "toolpin.usage-report/v1";

/// The pinned catalogs the calls are judged against.
#[derive(Clone, Debug, Default)]
pub struct Catalogs {
    /// By catalog fingerprint, as spans carry it in
    /// `toolpin.catalog.fingerprint` (lowercase hex SHA-256).
    pub pinned: BTreeMap<String, PinnedCatalog>,
    /// What changed between two pinned catalogs, in one line, keyed
    /// (from, to): the alarm quotes it.
    pub changes: BTreeMap<(String, String), String>,
    /// Each catalog's place in the lockfile's history (higher is newer).
    /// Catalogs first called in the same hour are ordered by it: hourly
    /// aggregates cannot tell which came first, the history can.
    pub sequence: BTreeMap<String, u64>,
}

/// One pinned catalog: its tools by the name the model calls.
#[derive(Clone, Debug, Default)]
pub struct PinnedCatalog {
    pub tools: BTreeMap<String, PinnedTool>,
}

/// What the report needs of a pinned tool: its enum parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PinnedTool {
    /// Parameter → the string values its schema allows.
    pub enums: BTreeMap<String, BTreeSet<String>>,
}

impl PinnedTool {
    /// The enum parameters of an input schema: each top-level property
    /// whose string `enum` or `const` (directly, behind a local `$ref`, in
    /// every branch of an `anyOf`/`oneOf`, or as an array's `items`) says
    /// which values it takes. A property any branch of which takes any
    /// string is not an enum.
    pub fn from_input_schema(schema: &Value) -> Self {
        let mut enums = BTreeMap::new();
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                let mut values = BTreeSet::new();
                if allowed_values(schema, property, &mut values, 0) && !values.is_empty() {
                    enums.insert(name.clone(), values);
                }
            }
        }
        Self { enums }
    }
}

/// Adds the string values `schema` allows to `out`; false when it allows
/// strings beyond a list (or cannot be read as such).
fn allowed_values(root: &Value, schema: &Value, out: &mut BTreeSet<String>, depth: u8) -> bool {
    if depth > 16 {
        return false;
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer));
        return match target {
            Some(t) => allowed_values(root, t, out, depth + 1),
            None => false,
        };
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        out.extend(values.iter().filter_map(Value::as_str).map(str::to_string));
        return true;
    }
    if let Some(value) = schema.get("const").and_then(Value::as_str) {
        out.insert(value.to_string());
        return true;
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(union).and_then(Value::as_array) {
            // `null` branches (an optional parameter) allow no string.
            return branches.iter().all(|b| {
                b.get("type").and_then(Value::as_str) == Some("null")
                    || allowed_values(root, b, out, depth + 1)
            });
        }
    }
    if let Some(items) = schema.get("items") {
        return allowed_values(root, items, out, depth + 1);
    }
    false
}

/// When an alarm fires. `[usage.report]` in toolpin.toml.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct Thresholds {
    /// Family-wise error rate over every test of one report (Holm).
    pub alpha: f64,
    /// Calls each side of a comparison needs before selection shares are
    /// tested.
    pub min_calls: u64,
    /// Calls (or calls with arguments) a tool needs each side before its
    /// parameters and error classes are tested.
    pub min_tool_calls: u64,
    /// A selection-share alarm needs a tool's share to move this many
    /// percentage points.
    pub min_share_points: f64,
    /// Distribution alarms need at least this Jensen–Shannon distance.
    pub min_js: f64,
    /// Rate alarms (supplied, error class) need the rate to move this many
    /// percentage points.
    pub min_rate_points: f64,
    /// A latency alarm needs p95 after / p95 before at least this.
    pub latency_ratio: f64,
    /// Calls a tool needs each side before its latency is compared.
    pub min_latency_calls: u64,
    /// Hours each side of a catalog change that are compared.
    pub window_hours: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            alpha: 0.01,
            min_calls: 200,
            min_tool_calls: 50,
            min_share_points: 5.0,
            min_js: 0.05,
            min_rate_points: 5.0,
            latency_ratio: 1.5,
            min_latency_calls: 100,
            window_hours: 168,
        }
    }
}

impl Thresholds {
    /// A one-line error naming the key that is out of range.
    pub fn validate(&self) -> Result<(), String> {
        let unit = |key: &str, v: f64| {
            if v.is_finite() && v > 0.0 && v < 1.0 {
                Ok(())
            } else {
                Err(format!(
                    "usage.report.{key} must be between 0 and 1 (exclusive), not {v}"
                ))
            }
        };
        let points = |key: &str, v: f64| {
            if v.is_finite() && (0.0..=100.0).contains(&v) {
                Ok(())
            } else {
                Err(format!(
                    "usage.report.{key} must be between 0 and 100 percentage points, not {v}"
                ))
            }
        };
        unit("alpha", self.alpha)?;
        points("min-share-points", self.min_share_points)?;
        points("min-rate-points", self.min_rate_points)?;
        if !(self.min_js.is_finite() && (0.0..=1.0).contains(&self.min_js)) {
            return Err(format!(
                "usage.report.min-js must be between 0 and 1, not {}",
                self.min_js
            ));
        }
        if !(self.latency_ratio.is_finite() && self.latency_ratio > 1.0) {
            return Err(format!(
                "usage.report.latency-ratio must be above 1, not {}",
                self.latency_ratio
            ));
        }
        for (key, v) in [
            ("min-calls", self.min_calls),
            ("min-tool-calls", self.min_tool_calls),
            ("min-latency-calls", self.min_latency_calls),
            ("window-hours", self.window_hours),
        ] {
            if v == 0 {
                return Err(format!("usage.report.{key} must be at least 1"));
            }
        }
        Ok(())
    }
}

/// What kind of alarm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AlarmKind {
    /// A tool was called that the pinned catalog does not have.
    UnknownTool,
    /// An enum parameter got a value its pinned schema does not allow.
    UnknownEnumValue,
    /// The same traffic chose tools in different shares.
    SelectionShare,
    /// An enum parameter's values are passed in different shares.
    EnumShift,
    /// A parameter is supplied more or less often.
    SuppliedRate,
    /// An error class occurs more or less often.
    ErrorRate,
    /// A tool's p95 latency grew.
    LatencyP95,
}

impl AlarmKind {
    pub fn name(self) -> &'static str {
        match self {
            AlarmKind::UnknownTool => "unknown-tool",
            AlarmKind::UnknownEnumValue => "unknown-enum-value",
            AlarmKind::SelectionShare => "selection-share",
            AlarmKind::EnumShift => "enum-shift",
            AlarmKind::SuppliedRate => "supplied-rate",
            AlarmKind::ErrorRate => "error-rate",
            AlarmKind::LatencyP95 => "latency-p95",
        }
    }
}

/// What was compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// Calls under one catalog against calls under the next.
    CatalogChange,
    /// The last 24 hours against the 24 before, one catalog.
    DayOverDay,
    /// No comparison: an immediate alarm.
    Immediate,
}

/// One alarm.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Alarm {
    pub kind: AlarmKind,
    pub basis: Basis,
    pub environment: String,
    pub tenant: String,
    pub agent: String,
    pub tool: String,
    /// The tool that lost the most share (selection shares).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameter: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The error class (error rates).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// The catalog before (`None` for day over day and immediate alarms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_catalog: Option<String>,
    pub to_catalog: String,
    /// The measure before and after: a share or rate (0 to 1), a p95 in
    /// milliseconds, or for an immediate alarm the calls that showed it.
    pub before: f64,
    pub after: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adjusted_p: Option<f64>,
    /// Jensen–Shannon distance, difference in rate, or latency ratio.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<f64>,
    /// First and last hour of the calls behind the alarm (unix hours).
    pub first_hour: u64,
    pub last_hour: u64,
    pub message: String,
    /// The lockfile change between the two catalogs, when both are pinned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<String>,
}

/// One comparison made.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub basis: Basis,
    pub environment: String,
    pub tenant: String,
    pub agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_catalog: Option<String>,
    pub to_catalog: String,
    /// Hours compared, `[start, end)`, unix hours.
    pub before_hours: [u64; 2],
    pub after_hours: [u64; 2],
    pub before_calls: u64,
    pub after_calls: u64,
    /// Tests made, and tests left out for too few calls.
    pub tests: u64,
    pub skipped: u64,
}

/// A catalog that calls name but no pinned lockfile has.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unpinned {
    pub catalog: String,
    pub calls: u64,
}

/// The report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UsageReport {
    pub schema: &'static str,
    /// Hours read, `[start, end)`, unix hours (`null` when no call).
    pub hours: Option<[u64; 2]>,
    pub calls: u64,
    /// (environment, tenant, agent) groups.
    pub groups: u64,
    pub comparisons: Vec<Comparison>,
    /// Statistical tests made (with p-values) and checks (latency ratios).
    pub tests: u64,
    pub checks: u64,
    pub skipped: u64,
    pub unpinned_catalogs: Vec<Unpinned>,
    pub thresholds: Thresholds,
    pub alarms: Vec<Alarm>,
}

/// Short form of a fingerprint in messages.
fn short(fp: &str) -> &str {
    fp.get(..8).unwrap_or(fp)
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

type GroupKey<'a> = (&'a str, &'a str, &'a str);

/// A group's keys by catalog.
#[derive(Default)]
struct Group<'a> {
    by_catalog: HashMap<&'a str, Vec<(&'a Key, &'a ToolStats)>>,
}

/// A candidate alarm before correction.
struct Candidate {
    alarm: Alarm,
    /// Index into the p-values, when tested.
    test: Option<usize>,
    /// Whether its effect passes the thresholds.
    effect_ok: bool,
}

/// One window's calls per tool, merged.
type Window = BTreeMap<String, ToolStats>;

/// Compares the calls in `calls` (keys of every hour that should count)
/// against `catalogs`; `until_hour` is the exclusive end of the data (the
/// current hour + 1), from which day over day counts back.
pub fn report(
    calls: &Aggregates,
    catalogs: &Catalogs,
    thresholds: &Thresholds,
    until_hour: u64,
) -> UsageReport {
    let (groups, span, total) = groups(calls);
    let mut names: Vec<GroupKey<'_>> = groups.keys().copied().collect();
    names.sort_unstable();

    let mut judged = Judged {
        thresholds,
        out: UsageReport {
            schema: SCHEMA,
            hours: span,
            calls: total,
            groups: names.len() as u64,
            comparisons: Vec::new(),
            tests: 0,
            checks: 0,
            skipped: 0,
            unpinned_catalogs: Vec::new(),
            thresholds: thresholds.clone(),
            alarms: Vec::new(),
        },
        candidates: Vec::new(),
        p_values: Vec::new(),
    };
    let mut unpinned: BTreeMap<String, u64> = BTreeMap::new();
    let limits = *calls.limits();
    for name in names {
        let group = &groups[&name];
        immediate(name, group, catalogs, &mut judged.candidates, &mut unpinned);
        compare_group(name, group, catalogs, (until_hour, &limits), &mut judged);
    }
    let mut out = judged.alarms();
    out.unpinned_catalogs = unpinned
        .into_iter()
        .map(|(catalog, calls)| Unpinned { catalog, calls })
        .collect();
    out
}

/// The keys of `calls` by group and catalog, the hours they span and
/// their calls.
#[allow(clippy::type_complexity)]
fn groups(calls: &Aggregates) -> (HashMap<GroupKey<'_>, Group<'_>>, Option<[u64; 2]>, u64) {
    let mut groups: HashMap<GroupKey<'_>, Group<'_>> = HashMap::new();
    let mut span: Option<[u64; 2]> = None;
    let mut total = 0;
    for (key, stats) in calls.calls_unordered() {
        total += stats.calls;
        span = Some(match span {
            None => [key.hour, key.hour + 1],
            Some([a, b]) => [a.min(key.hour), b.max(key.hour + 1)],
        });
        groups
            .entry((&key.environment, &key.tenant, &key.agent))
            .or_default()
            .by_catalog
            .entry(&key.catalog)
            .or_default()
            .push((key, stats));
    }
    (groups, span, total)
}

/// One group's comparisons: at each catalog change, and day over day
/// when no change is recent enough to have been the comparison.
fn compare_group(
    name: GroupKey<'_>,
    group: &Group<'_>,
    catalogs: &Catalogs,
    (until_hour, limits): (u64, &Limits),
    judged: &mut Judged<'_>,
) {
    // Catalogs in the order they came into use.
    let mut order: Vec<(&str, u64, u64)> = group
        .by_catalog
        .iter()
        .map(|(catalog, keys)| {
            let first = keys.iter().map(|(k, _)| k.hour).min().unwrap_or(0);
            let seq = catalogs.sequence.get(*catalog).copied().unwrap_or(0);
            (*catalog, first, seq)
        })
        .collect();
    order.sort_unstable_by(|a, b| (a.1, a.2, a.0).cmp(&(b.1, b.2, b.0)));
    let w = judged.thresholds.window_hours;
    let mut last_change: Option<u64> = None;
    for pair in order.windows(2) {
        let ((from, _, _), (to, change, _)) = (pair[0], pair[1]);
        last_change = Some(change);
        // The hour of the change counts on both sides, each key under
        // its own catalog.
        let before = window(
            &group.by_catalog[from],
            change.saturating_sub(w),
            change + 1,
            limits,
        );
        let after = window(&group.by_catalog[to], change, change + w, limits);
        let setting = Setting {
            group: name,
            basis: Basis::CatalogChange,
            from: Some(from),
            to,
            change: catalogs.changes.get(&(from.to_string(), to.to_string())),
            pinned: catalogs
                .pinned
                .get(to)
                .or_else(|| catalogs.pinned.get(from)),
            before_hours: [change.saturating_sub(w), change + 1],
            after_hours: [change, change + w],
        };
        compare(&setting, &before, &after, judged);
    }
    let recent = last_change.is_some_and(|t| t + 48 > until_hour);
    let Some(&(current, _, _)) = order.last() else {
        return;
    };
    if recent || until_hour < 48 {
        return;
    }
    let keys = &group.by_catalog[current];
    let before = window(keys, until_hour - 48, until_hour - 24, limits);
    let after = window(keys, until_hour - 24, until_hour, limits);
    if !before.is_empty() && !after.is_empty() {
        let setting = Setting {
            group: name,
            basis: Basis::DayOverDay,
            from: None,
            to: current,
            change: None,
            pinned: catalogs.pinned.get(current),
            before_hours: [until_hour - 48, until_hour - 24],
            after_hours: [until_hour - 24, until_hour],
        };
        compare(&setting, &before, &after, judged);
    }
}

impl Judged<'_> {
    /// The report with the alarms that pass: Holm's correction over every
    /// test of the report, then the effect thresholds; in a stable order.
    fn alarms(self) -> UsageReport {
        let Judged {
            thresholds,
            mut out,
            candidates,
            p_values,
        } = self;
        let adjusted = stats::holm(&p_values);
        for mut c in candidates {
            match c.test {
                Some(i) => {
                    c.alarm.p_value = Some(p_values[i]);
                    c.alarm.adjusted_p = Some(adjusted[i]);
                    if adjusted[i] < thresholds.alpha && c.effect_ok {
                        out.alarms.push(c.alarm);
                    }
                }
                None if c.effect_ok => out.alarms.push(c.alarm),
                None => {}
            }
        }
        out.alarms.sort_by(|a, b| {
            (
                &a.environment,
                &a.tenant,
                &a.agent,
                a.kind,
                &a.tool,
                &a.parameter,
                &a.value,
                &a.class,
                &a.to_catalog,
            )
                .cmp(&(
                    &b.environment,
                    &b.tenant,
                    &b.agent,
                    b.kind,
                    &b.tool,
                    &b.parameter,
                    &b.value,
                    &b.class,
                    &b.to_catalog,
                ))
        });
        out
    }
}

impl UsageReport {
    /// Fills in the change line of every alarm between two catalogs that
    /// has none yet, from `describe(from, to)` (the caller's lockfile
    /// diff; computed only for the pairs that alarmed), and appends it to
    /// the message.
    pub fn describe_changes(&mut self, describe: impl Fn(&str, &str) -> Option<String>) {
        for alarm in &mut self.alarms {
            if alarm.change.is_some() {
                continue;
            }
            let Some(from) = &alarm.from_catalog else {
                continue;
            };
            if let Some(change) = describe(from, &alarm.to_catalog) {
                alarm.message = format!("{}: {change}", alarm.message);
                alarm.change = Some(change);
            }
        }
    }
}

/// The calls of `keys` in hours `[from, to)`, merged per tool.
fn window(keys: &[(&Key, &ToolStats)], from: u64, to: u64, limits: &Limits) -> Window {
    let mut out: Window = BTreeMap::new();
    for (key, stats) in keys {
        if key.hour >= from && key.hour < to {
            match out.get_mut(&*key.tool) {
                Some(t) => t.merge(stats, limits),
                None => {
                    out.insert(key.tool.to_string(), (*stats).clone());
                }
            }
        }
    }
    out
}

/// (kind, catalog, tool, parameter, value) of an immediate alarm; its
/// calls, first and last hour are counted beside it.
type Sighted<'a> = (AlarmKind, &'a str, &'a str, &'a str, &'a str);

/// The alarms that need no statistics: tools and enum values the pinned
/// catalog of the calls' own fingerprint does not have.
fn immediate(
    (environment, tenant, agent): GroupKey<'_>,
    group: &Group<'_>,
    catalogs: &Catalogs,
    candidates: &mut Vec<Candidate>,
    unpinned: &mut BTreeMap<String, u64>,
) {
    let mut found: BTreeMap<Sighted<'_>, (u64, u64, u64)> = BTreeMap::new();
    for (catalog, keys) in &group.by_catalog {
        let Some(pinned) = catalogs.pinned.get(*catalog) else {
            let calls: u64 = keys.iter().map(|(_, s)| s.calls).sum();
            *unpinned.entry(catalog.to_string()).or_insert(0) += calls;
            continue;
        };
        for (key, stats) in keys {
            let Some(tool) = pinned.tools.get(&*key.tool) else {
                let e = found
                    .entry((AlarmKind::UnknownTool, catalog, &key.tool, "", ""))
                    .or_insert((0, key.hour, key.hour));
                e.0 += stats.calls;
                e.1 = e.1.min(key.hour);
                e.2 = e.2.max(key.hour);
                continue;
            };
            for (param, allowed) in &tool.enums {
                let Some(p) = stats.params.get(param) else {
                    continue;
                };
                for (value, n) in &p.values {
                    if !allowed.contains(value) {
                        let e = found
                            .entry((
                                AlarmKind::UnknownEnumValue,
                                catalog,
                                &key.tool,
                                param,
                                value,
                            ))
                            .or_insert((0, key.hour, key.hour));
                        e.0 += n;
                        e.1 = e.1.min(key.hour);
                        e.2 = e.2.max(key.hour);
                    }
                }
            }
        }
    }
    for ((kind, catalog, tool, param, value), (n, first, last)) in found {
        let message = match kind {
            AlarmKind::UnknownTool => format!(
                "`{tool}` was called {n} time{} but catalog {} has no such tool",
                if n == 1 { "" } else { "s" },
                short(catalog)
            ),
            _ => format!(
                "`{tool}` got {param}={value:?} {n} time{}, a value catalog {} does not allow",
                if n == 1 { "" } else { "s" },
                short(catalog)
            ),
        };
        candidates.push(Candidate {
            alarm: Alarm {
                kind,
                basis: Basis::Immediate,
                environment: environment.to_string(),
                tenant: tenant.to_string(),
                agent: agent.to_string(),
                tool: tool.to_string(),
                other_tool: None,
                parameter: (!param.is_empty()).then(|| param.to_string()),
                value: (!param.is_empty()).then(|| value.to_string()),
                class: None,
                from_catalog: None,
                to_catalog: catalog.to_string(),
                before: 0.0,
                after: n as f64,
                p_value: None,
                adjusted_p: None,
                effect: None,
                first_hour: first,
                last_hour: last,
                message,
                change: None,
            },
            test: None,
            effect_ok: true,
        });
    }
}

/// Where a comparison stands.
struct Setting<'a> {
    group: GroupKey<'a>,
    basis: Basis,
    from: Option<&'a str>,
    to: &'a str,
    change: Option<&'a String>,
    pinned: Option<&'a PinnedCatalog>,
    before_hours: [u64; 2],
    after_hours: [u64; 2],
}

impl Setting<'_> {
    fn alarm(
        &self,
        kind: AlarmKind,
        tool: &str,
        before: f64,
        after: f64,
        message: String,
    ) -> Alarm {
        let (environment, tenant, agent) = self.group;
        let since = match self.from {
            Some(from) => format!("since catalog {} → {}", short(from), short(self.to)),
            None => "day over day".to_string(),
        };
        let message = match self.change {
            Some(change) => format!("{message} {since}: {change}"),
            None => format!("{message} {since}"),
        };
        Alarm {
            kind,
            basis: self.basis,
            environment: environment.to_string(),
            tenant: tenant.to_string(),
            agent: agent.to_string(),
            tool: tool.to_string(),
            other_tool: None,
            parameter: None,
            value: None,
            class: None,
            from_catalog: self.from.map(str::to_string),
            to_catalog: self.to.to_string(),
            before,
            after,
            p_value: None,
            adjusted_p: None,
            effect: None,
            first_hour: self.before_hours[0],
            last_hour: self.after_hours[1].saturating_sub(1),
            message,
            change: self.change.cloned(),
        }
    }
}

/// The tests of one comparison.
fn compare(setting: &Setting<'_>, before: &Window, after: &Window, judged: &mut Judged<'_>) {
    let calls = |w: &Window| w.values().map(|s| s.calls).sum::<u64>();
    let (n1, n2) = (calls(before), calls(after));
    let mut t = Tests {
        setting,
        th: judged.thresholds,
        judged,
        tests: 0,
        skipped: 0,
    };
    t.selection(before, after, (n1, n2));
    // Per tool on both sides.
    for (tool, b) in before {
        let Some(a) = after.get(tool) else { continue };
        t.enums(tool, b, a);
        t.supplied(tool, b, a);
        t.errors(tool, b, a);
        t.latency(tool, b, a);
    }
    let (tests, skipped) = (t.tests, t.skipped);
    let (environment, tenant, agent) = setting.group;
    let out = &mut judged.out;
    out.tests += tests;
    out.skipped += skipped;
    out.comparisons.push(Comparison {
        basis: setting.basis,
        environment: environment.to_string(),
        tenant: tenant.to_string(),
        agent: agent.to_string(),
        from_catalog: setting.from.map(str::to_string),
        to_catalog: setting.to.to_string(),
        before_hours: setting.before_hours,
        after_hours: setting.after_hours,
        before_calls: n1,
        after_calls: n2,
        tests,
        skipped,
    });
}

/// What a report gathers over its comparisons: the report, the candidate
/// alarms and the p-values they are tested on.
struct Judged<'t> {
    thresholds: &'t Thresholds,
    out: UsageReport,
    candidates: Vec<Candidate>,
    p_values: Vec<f64>,
}

/// The tests of one comparison, as they are made.
struct Tests<'s, 'j, 't> {
    setting: &'s Setting<'s>,
    th: &'t Thresholds,
    judged: &'j mut Judged<'t>,
    tests: u64,
    skipped: u64,
}

impl Tests<'_, '_, '_> {
    /// A tested candidate: `p` is corrected with the others, `effect_ok`
    /// says whether its effect passes the thresholds.
    fn test(&mut self, alarm: Alarm, p: f64, effect_ok: bool) {
        self.tests += 1;
        let j = &mut *self.judged;
        j.p_values.push(p);
        j.candidates.push(Candidate {
            alarm,
            test: Some(j.p_values.len() - 1),
            effect_ok,
        });
    }

    /// Selection shares across the tools.
    fn selection(&mut self, before: &Window, after: &Window, (n1, n2): (u64, u64)) {
        let th = self.th;
        let tools: Vec<&String> = before
            .keys()
            .chain(after.keys())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if !(n1 >= th.min_calls && n2 >= th.min_calls && tools.len() >= 2) {
            if n1 > 0 && n2 > 0 {
                self.skipped += 1;
            }
            return;
        }
        let row = |w: &Window| -> Vec<u64> {
            tools
                .iter()
                .map(|t| w.get(*t).map_or(0, |s| s.calls))
                .collect()
        };
        let (b, a) = (row(before), row(after));
        let Some((_, _, p)) = stats::chi2_homogeneity(&b, &a) else {
            return;
        };
        let js = stats::js_distance(&b, &a);
        let share = |row: &[u64], i: usize, n: u64| row[i] as f64 / n as f64;
        let deltas: Vec<f64> = (0..tools.len())
            .map(|i| share(&a, i, n2) - share(&b, i, n1))
            .collect();
        let gainer = argmax(&deltas, |d| d);
        let loser = argmax(&deltas, |d| -d);
        let moved = deltas[gainer].max(-deltas[loser]);
        let (g, l) = (tools[gainer], tools[loser]);
        let message = format!(
            "`{g}` share {} → {} ({l} {} → {})",
            pct(share(&b, gainer, n1)),
            pct(share(&a, gainer, n2)),
            pct(share(&b, loser, n1)),
            pct(share(&a, loser, n2)),
        );
        let mut alarm = self.setting.alarm(
            AlarmKind::SelectionShare,
            g,
            share(&b, gainer, n1),
            share(&a, gainer, n2),
            message,
        );
        alarm.other_tool = Some(l.clone());
        alarm.effect = Some(js);
        let ok = js >= th.min_js && moved * 100.0 >= th.min_share_points;
        self.test(alarm, p, ok);
    }

    /// Each pinned enum parameter's value distribution.
    fn enums(&mut self, tool: &str, b: &ToolStats, a: &ToolStats) {
        let th = self.th;
        let enum_params: Vec<&String> = match self.setting.pinned.and_then(|p| p.tools.get(tool)) {
            Some(pinned) => pinned.enums.keys().collect(),
            None => Vec::new(),
        };
        for param in enum_params {
            let (Some(pb), Some(pa)) = (b.params.get(param), a.params.get(param)) else {
                continue;
            };
            let (s1, s2) = (pb.supplied, pa.supplied);
            if s1 < th.min_tool_calls || s2 < th.min_tool_calls {
                self.skipped += 1;
                continue;
            }
            let values: Vec<&str> = pb
                .values
                .keys()
                .chain(pa.values.keys())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            if values.len() < 2 {
                continue;
            }
            let row = |p: &crate::aggregate::ParamStats| -> Vec<u64> {
                values
                    .iter()
                    .map(|v| p.values.get(v).copied().unwrap_or(0))
                    .collect()
            };
            let (rb, ra) = (row(pb), row(pa));
            let Some((_, _, p)) = stats::chi2_homogeneity(&rb, &ra) else {
                continue;
            };
            let (t1, t2) = (rb.iter().sum::<u64>().max(1), ra.iter().sum::<u64>().max(1));
            let deltas: Vec<f64> = (0..values.len())
                .map(|i| ra[i] as f64 / t2 as f64 - rb[i] as f64 / t1 as f64)
                .collect();
            // The value that gained the most (one must, when shares moved).
            let i = argmax(&deltas, |d| d);
            let js = stats::js_distance(&rb, &ra);
            let (vb, va) = (rb[i] as f64 / t1 as f64, ra[i] as f64 / t2 as f64);
            let message = format!(
                "`{tool}` {param}={:?} passed in {} → {} of calls",
                values[i],
                pct(vb),
                pct(va)
            );
            let mut alarm = self
                .setting
                .alarm(AlarmKind::EnumShift, tool, vb, va, message);
            alarm.parameter = Some(param.clone());
            alarm.value = Some(values[i].to_string());
            alarm.effect = Some(js);
            self.test(alarm, p, js >= th.min_js);
        }
    }

    /// How often each parameter is supplied.
    fn supplied(&mut self, tool: &str, b: &ToolStats, a: &ToolStats) {
        let th = self.th;
        let (w1, w2) = (b.with_arguments, a.with_arguments);
        let params: BTreeSet<&str> = b.params.keys().chain(a.params.keys()).collect();
        if !(w1 >= th.min_tool_calls && w2 >= th.min_tool_calls) {
            if !params.is_empty() {
                self.skipped += 1;
            }
            return;
        }
        for param in params {
            let x1 = b.params.get(param).map_or(0, |p| p.supplied);
            let x2 = a.params.get(param).map_or(0, |p| p.supplied);
            let Some((_, p)) = stats::two_proportion(x1, w1, x2, w2) else {
                continue;
            };
            let (r1, r2) = (x1 as f64 / w1 as f64, x2 as f64 / w2 as f64);
            let message = format!(
                "`{tool}` {param} supplied in {} → {} of calls",
                pct(r1),
                pct(r2)
            );
            let mut alarm = self
                .setting
                .alarm(AlarmKind::SuppliedRate, tool, r1, r2, message);
            alarm.parameter = Some(param.to_string());
            alarm.effect = Some(r2 - r1);
            self.test(alarm, p, (r2 - r1).abs() * 100.0 >= th.min_rate_points);
        }
    }

    /// Each error class's rate.
    fn errors(&mut self, tool: &str, b: &ToolStats, a: &ToolStats) {
        let th = self.th;
        let classes: BTreeSet<&str> = b.errors.keys().chain(a.errors.keys()).collect();
        if !(b.calls >= th.min_tool_calls && a.calls >= th.min_tool_calls) {
            if !classes.is_empty() {
                self.skipped += 1;
            }
            return;
        }
        for class in classes {
            let x1 = b.errors.get(class).copied().unwrap_or(0);
            let x2 = a.errors.get(class).copied().unwrap_or(0);
            let Some((_, p)) = stats::two_proportion(x1, b.calls, x2, a.calls) else {
                continue;
            };
            let (r1, r2) = (x1 as f64 / b.calls as f64, x2 as f64 / a.calls as f64);
            let message = format!("`{tool}` {class} errors {} → {} of calls", pct(r1), pct(r2));
            let mut alarm = self
                .setting
                .alarm(AlarmKind::ErrorRate, tool, r1, r2, message);
            alarm.class = Some(class.to_string());
            alarm.effect = Some(r2 - r1);
            self.test(alarm, p, (r2 - r1).abs() * 100.0 >= th.min_rate_points);
        }
    }

    /// The p95 latency's ratio (a check, not a test).
    fn latency(&mut self, tool: &str, b: &ToolStats, a: &ToolStats) {
        let th = self.th;
        if b.latency.count() < th.min_latency_calls || a.latency.count() < th.min_latency_calls {
            self.skipped += 1;
            return;
        }
        let (Some(p1), Some(p2)) = (b.latency.p95(), a.latency.p95()) else {
            return;
        };
        self.judged.out.checks += 1;
        let ratio = p2 as f64 / (p1.max(1)) as f64;
        if ratio < th.latency_ratio {
            return;
        }
        let ms = |n: u64| n as f64 / 1e6;
        let message = format!(
            "`{tool}` p95 latency {:.1} ms → {:.1} ms (×{ratio:.1})",
            ms(p1),
            ms(p2)
        );
        let mut alarm = self
            .setting
            .alarm(AlarmKind::LatencyP95, tool, ms(p1), ms(p2), message);
        alarm.effect = Some(ratio);
        self.judged.candidates.push(Candidate {
            alarm,
            test: None,
            effect_ok: true,
        });
    }
}

/// The index of the largest `key(x)`; the first on ties.
fn argmax(xs: &[f64], key: impl Fn(f64) -> f64) -> usize {
    let mut best = 0;
    for (i, &x) in xs.iter().enumerate() {
        if key(x) > key(xs[best]) {
            best = i;
        }
    }
    best
}
