//! The aggregates: what `toolpin usage` keeps instead of spans. One
//! [`ToolStats`] per (UTC hour, environment, tenant, agent, catalog
//! fingerprint, tool), and one count per proxy event kind and hour. Every
//! part is bounded (a latency sketch of fixed buckets, capped value and
//! parameter tables) and mergeable, so files and shards ingested apart
//! combine into what one pass over all of them gives.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use crate::names::{NameMap, Names};
use crate::table::{Parts, Table};

/// Nanoseconds in an hour: keys are unix hours (`start / HOUR_NANOS`).
pub const HOUR_NANOS: u64 = 3_600 * 1_000_000_000;

/// The name a key part takes once [`Limits::names`] distinct values of it
/// are held: calls of the names past the cap are counted under it (and in
/// [`Aggregates::folded`]). Not a valid tool name, environment or
/// fingerprint, so it cannot be mistaken for one.
pub const OTHER: &str = "(other)";

/// The parts of a call key that hold names, in the order of
/// [`Aggregates::folded`].
pub const KEY_PARTS: [&str; 5] = ["environment", "tenant", "agent", "catalog", "tool"];

/// Estimated bytes of one map entry beside its string: the name, the
/// count, and the table's share of overhead. (An upper bound since the
/// tables became sorted vectors of shared names; kept, as the figure
/// `usage serve` flushes by.)
const MAP_ENTRY: usize = 64;

/// Where the tables stop growing. Memory is bounded by the number of keys
/// times these, never by the number of spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Distinct string values counted per parameter; the rest go to
    /// [`ParamStats::other_values`].
    pub values_per_param: usize,
    /// Longest string value counted as itself, in bytes: longer ones are
    /// free text, not enum values, and count as other.
    pub value_len: usize,
    /// Parameters tracked per key; supplied parameters beyond this are
    /// counted in [`ToolStats::params_over_cap`].
    pub params: usize,
    /// Distinct tool fingerprints kept per key (a pinned tool has one; more
    /// than a few means the pin moved within the hour).
    pub fingerprints: usize,
    /// Distinct names held per key part (environment, tenant, agent,
    /// catalog, tool): a call naming one more is counted under [`OTHER`]
    /// in that part. Unlimited by default (files are read whole);
    /// `usage serve`, whose names come from whoever exports to it, sets it.
    pub names: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            values_per_param: 32,
            value_len: 64,
            params: 64,
            fingerprints: 8,
            names: usize::MAX,
        }
    }
}

/// A latency sketch: counts in fixed log-linear buckets over nanoseconds,
/// HDR-histogram style. Each power of two is split into 64 buckets, so a
/// reported percentile is within 1/128 (0.8 %) of a recorded value, for
/// any duration from 1 ns to 584 years, in at most 3,776 buckets; values
/// below 128 ns are exact. Fixed buckets (rather than a sample or t-digest)
/// make `merge` exact and order-independent: merged shards give the same
/// percentiles as one pass. Only the buckets used are held (each with its
/// count, in bucket order): a key's calls land in a few of the hundreds of
/// buckets between its fastest and slowest call, and a store holds tens of
/// thousands of keys (holding every bucket between the extremes made
/// reading 90,000 stored keys allocate and zero 400 MB).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatencySketch {
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
    /// The buckets used, in increasing order, with their counts (never 0).
    buckets: Vec<(u16, u64)>,
}

const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;

fn bucket_of(v: u64) -> u16 {
    if v < 2 * SUB {
        return v as u16;
    }
    let exponent = 63 - v.leading_zeros();
    let shift = exponent - SUB_BITS;
    let mantissa = (v >> shift) & (SUB - 1);
    ((u64::from(shift) + 1) * SUB + mantissa) as u16
}

/// The smallest value in bucket `b`, and the bucket's width.
fn bucket_range(b: u16) -> (u64, u64) {
    let b = u64::from(b);
    if b < 2 * SUB {
        return (b, 1);
    }
    let shift = b / SUB - 1;
    let mantissa = b % SUB;
    ((SUB + mantissa) << shift, 1 << shift)
}

impl LatencySketch {
    pub fn record(&mut self, nanos: u64) {
        if self.count == 0 || nanos < self.min {
            self.min = nanos;
        }
        self.max = self.max.max(nanos);
        self.count += 1;
        self.sum += u128::from(nanos);
        self.add(bucket_of(nanos), 1);
    }

    fn add(&mut self, bucket: u16, n: u64) {
        match self.buckets.binary_search_by_key(&bucket, |b| b.0) {
            Ok(i) => self.buckets[i].1 += n,
            Err(i) => self.buckets.insert(i, (bucket, n)),
        }
    }

    pub fn merge(&mut self, other: &LatencySketch) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 || other.min < self.min {
            self.min = other.min;
        }
        self.max = self.max.max(other.max);
        self.count += other.count;
        self.sum += other.sum;
        if self.buckets.is_empty() {
            self.buckets.clone_from(&other.buckets);
            return;
        }
        // In place when every bucket of `other` is used here already (a
        // key merged into a group usually is); else one merged copy.
        let mine = &self.buckets;
        let mut i = 0;
        let mut new = 0;
        for (b, _) in &other.buckets {
            while i < mine.len() && mine[i].0 < *b {
                i += 1;
            }
            if i < mine.len() && mine[i].0 == *b {
                i += 1;
            } else {
                new += 1;
            }
        }
        if new == 0 {
            let mut i = 0;
            for (b, n) in &other.buckets {
                while self.buckets[i].0 < *b {
                    i += 1;
                }
                self.buckets[i].1 += n;
                i += 1;
            }
            return;
        }
        let (x, y) = (&self.buckets, &other.buckets);
        let mut merged = Vec::with_capacity(x.len() + new);
        let (mut i, mut j) = (0, 0);
        while i < x.len() && j < y.len() {
            if x[i].0 < y[j].0 {
                merged.push(x[i]);
                i += 1;
            } else if x[i].0 > y[j].0 {
                merged.push(y[j]);
                j += 1;
            } else {
                merged.push((x[i].0, x[i].1 + y[j].1));
                i += 1;
                j += 1;
            }
        }
        merged.extend_from_slice(&x[i..]);
        merged.extend_from_slice(&y[j..]);
        self.buckets = merged;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// A sketch from its stored parts, checked: `buckets` are the used
    /// buckets in increasing order with their counts, which must add up
    /// to `count` and agree with the extremes. The error says which part
    /// is wrong.
    pub fn from_parts(
        count: u64,
        sum: u128,
        min: u64,
        max: u64,
        buckets: Vec<(u16, u64)>,
    ) -> Result<Self, String> {
        let total = buckets
            .iter()
            .try_fold(0u64, |a, (_, n)| a.checked_add(*n))
            .ok_or("bucket counts overflow")?;
        if total != count {
            return Err(format!("bucket counts add up to {total}, not {count}"));
        }
        if count == 0 {
            if !buckets.is_empty() || sum != 0 {
                return Err("an empty sketch holds buckets or a sum".into());
            }
            return Ok(Self::default());
        }
        if min > max {
            return Err(format!("min {min} is above max {max}"));
        }
        let (Some(first), Some(last)) = (buckets.first(), buckets.last()) else {
            return Err("a sketch with calls holds no buckets".into());
        };
        if last.0 > bucket_of(u64::MAX) {
            return Err(format!("buckets {}..{} are out of range", first.0, last.0));
        }
        if buckets.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err("buckets are not in increasing order".into());
        }
        if buckets.iter().any(|(_, n)| *n == 0) {
            return Err("a bucket is held with no calls".into());
        }
        if bucket_of(min) != first.0 || bucket_of(max) != last.0 {
            return Err("min and max do not fall in the first and last buckets".into());
        }
        let (sum_low, sum_high) = (
            u128::from(min) * u128::from(count),
            u128::from(max) * u128::from(count),
        );
        if sum < sum_low || sum > sum_high {
            return Err(format!("sum {sum} is outside count × [min, max]"));
        }
        Ok(Self {
            count,
            sum,
            min,
            max,
            buckets,
        })
    }

    /// The stored parts: count, sum, min, max, and the used buckets with
    /// their counts (see [`LatencySketch::from_parts`]).
    pub fn parts(&self) -> (u64, u128, u64, u64, &[(u16, u64)]) {
        (self.count, self.sum, self.min, self.max, &self.buckets)
    }

    /// Exact extremes and mean, in nanoseconds.
    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// The `q` quantile (0 ≤ q ≤ 1) in nanoseconds: the middle of the
    /// bucket holding the value of rank ⌈q·count⌉, kept within the exact
    /// min and max (and exactly those for the first and last rank). `None`
    /// when nothing was recorded.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let q = if q.is_nan() { 0.5 } else { q.clamp(0.0, 1.0) };
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        // The extremes are known exactly; a bucket's middle is not better.
        if rank == self.count {
            return Some(self.max);
        }
        if rank == 1 {
            return Some(self.min);
        }
        let mut seen = 0;
        for (b, n) in &self.buckets {
            seen += n;
            if seen >= rank {
                let (low, width) = bucket_range(*b);
                let mid = low.saturating_add(width / 2);
                return Some(mid.clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    pub fn p50(&self) -> Option<u64> {
        self.quantile(0.50)
    }

    pub fn p95(&self) -> Option<u64> {
        self.quantile(0.95)
    }

    pub fn p99(&self) -> Option<u64> {
        self.quantile(0.99)
    }

    /// Buckets held: those used (for memory accounting and tests).
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }

    /// Heap bytes the buckets take.
    fn heap_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<(u16, u64)>()
    }
}

/// One parameter of one tool within a key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParamStats {
    /// Calls whose arguments held this parameter with a value other than
    /// `null` (a `null` is how many frameworks spell "not given").
    pub supplied: u64,
    /// Short string values and how often each was given: the enum
    /// parameters' value distribution (capped, see [`Limits`]). A free-text
    /// parameter fills the cap, and every later value is looked up among
    /// all of them: a binary search of at most 32 (a B-tree's linear node
    /// search over strings was once the hottest part of ingesting).
    pub values: NameMap<u64>,
    /// String values not counted by name: past the cap, or too long.
    pub other_values: u64,
    /// Values that were not strings (numbers, booleans, objects, arrays).
    pub non_string: u64,
}

/// Everything kept for one key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolStats {
    pub calls: u64,
    /// Failed calls by error class (`error.type`, else `"error"` for a span
    /// with status ERROR).
    pub errors: NameMap<u64>,
    pub latency: LatencySketch,
    /// Calls whose arguments were seen as a JSON object: the denominator
    /// of every [`ParamStats::supplied`].
    pub with_arguments: u64,
    pub params: NameMap<ParamStats>,
    /// Supplied parameters not tracked because the key already tracks
    /// [`Limits::params`] others.
    pub params_over_cap: u64,
    /// `toolpin.tool.fingerprint` values and their calls (capped; the
    /// overflow is `fingerprints_other`). `""` when a span had none.
    pub tool_fingerprints: NameMap<u64>,
    pub fingerprints_other: u64,
}

impl ToolStats {
    pub fn errors_total(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Adds `other` into `self`, within `limits` (see [`Aggregates::merge`]).
    pub fn merge(&mut self, other: &ToolStats, limits: &Limits) {
        self.merge_counted(other, limits);
    }

    /// [`ToolStats::merge`], returning the heap bytes it added. The
    /// names added are shared with `other`'s tables.
    fn merge_counted(&mut self, other: &ToolStats, limits: &Limits) -> usize {
        let mut added = 0;
        self.calls += other.calls;
        for (class, n) in other.errors.shared() {
            if count(&mut self.errors, class, *n, usize::MAX, || {
                Arc::clone(class)
            }) == Some(true)
            {
                added += MAP_ENTRY + class.len();
            }
        }
        let before = self.latency.heap_bytes();
        self.latency.merge(&other.latency);
        added += self.latency.heap_bytes().saturating_sub(before);
        self.with_arguments += other.with_arguments;
        self.params_over_cap += other.params_over_cap;
        for (name, p) in other.params.shared() {
            let mine = match self.params.find(name) {
                Ok(i) => self.params.at_mut(i),
                Err(i) if self.params.len() < limits.params => {
                    added += param_bytes(name);
                    self.params
                        .insert_at(i, Arc::clone(name), ParamStats::default())
                }
                Err(_) => {
                    self.params_over_cap += p.supplied;
                    continue;
                }
            };
            mine.supplied += p.supplied;
            mine.other_values += p.other_values;
            mine.non_string += p.non_string;
            for (value, n) in p.values.shared() {
                let value_shared = || Arc::clone(value);
                if count_capped(mine, value, *n, limits, value_shared) {
                    added += MAP_ENTRY + value.len();
                }
            }
        }
        for (fp, n) in other.tool_fingerprints.shared() {
            if count_fingerprint(self, fp, *n, limits, || Arc::clone(fp)) {
                added += MAP_ENTRY + fp.len();
            }
        }
        self.fingerprints_other += other.fingerprints_other;
        added
    }

    /// Estimated heap bytes of these statistics' tables (what
    /// [`Aggregates::bytes`] adds up as they grow).
    pub fn heap_bytes(&self) -> usize {
        let strings = |m: &NameMap<u64>| -> usize { m.keys().map(|k| MAP_ENTRY + k.len()).sum() };
        let params: usize = self
            .params
            .iter()
            .map(|(name, p)| {
                param_bytes(name) + p.values.keys().map(|v| MAP_ENTRY + v.len()).sum::<usize>()
            })
            .sum();
        strings(&self.errors)
            + self.latency.heap_bytes()
            + params
            + strings(&self.tool_fingerprints)
    }
}

/// A new parameter's entry, before its values.
fn param_bytes(name: &str) -> usize {
    MAP_ENTRY + std::mem::size_of::<ParamStats>() + name.len()
}

/// Adds `n` to `name`'s count in `map`, making it (from `shared`) when
/// the map holds fewer than `cap` names: `Some(true)` when it was new,
/// `None` when there was no room.
fn count(
    map: &mut NameMap<u64>,
    name: &str,
    n: u64,
    cap: usize,
    shared: impl FnOnce() -> Arc<str>,
) -> Option<bool> {
    match map.find(name) {
        Ok(i) => {
            *map.at_mut(i) += n;
            Some(false)
        }
        Err(i) if map.len() < cap => {
            map.insert_at(i, shared(), n);
            Some(true)
        }
        Err(_) => None,
    }
}

/// Adds `n` calls of `value` to `param`'s values if it is counted by
/// name, else to its other values; true when `value` was new.
fn count_capped(
    param: &mut ParamStats,
    value: &str,
    n: u64,
    limits: &Limits,
    shared: impl FnOnce() -> Arc<str>,
) -> bool {
    if value.len() <= limits.value_len {
        if let Some(new) = count(&mut param.values, value, n, limits.values_per_param, shared) {
            return new;
        }
    }
    param.other_values += n;
    false
}

/// Counts `n` calls of tool fingerprint `fp`; true when `fp` was new.
fn count_fingerprint(
    stats: &mut ToolStats,
    fp: &str,
    n: u64,
    limits: &Limits,
    shared: impl FnOnce() -> Arc<str>,
) -> bool {
    match count(
        &mut stats.tool_fingerprints,
        fp,
        n,
        limits.fingerprints,
        shared,
    ) {
        Some(new) => new,
        None => {
            stats.fingerprints_other += n;
            false
        }
    }
}

/// What a call key is made of. Absent parts are `""`. The names are
/// shared: the keys of one [`Aggregates`] hold one copy of each distinct
/// name (90 days × 50 tools × 20 tenants are 90,000 keys but 75 names).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// Unix hour (UTC) of the call's start.
    pub hour: u64,
    pub environment: Arc<str>,
    pub tenant: Arc<str>,
    pub agent: Arc<str>,
    /// `toolpin.catalog.fingerprint`.
    pub catalog: Arc<str>,
    pub tool: Arc<str>,
}

impl Key {
    /// A key of `hour` and the parts environment, tenant, agent, catalog
    /// and tool.
    pub fn new(hour: u64, [environment, tenant, agent, catalog, tool]: [&str; 5]) -> Self {
        Self {
            hour,
            environment: environment.into(),
            tenant: tenant.into(),
            agent: agent.into(),
            catalog: catalog.into(),
            tool: tool.into(),
        }
    }
}

/// A value in a call's arguments object, as the statistics need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgValue<'a> {
    Str(Cow<'a, str>),
    Null,
    /// A number, boolean, object or array.
    Other,
}

/// One tool call, borrowed from the line it was read from.
#[derive(Clone, Debug)]
pub struct Call<'a> {
    pub start_nanos: u64,
    pub duration_nanos: u64,
    pub environment: &'a str,
    pub tenant: &'a str,
    pub agent: &'a str,
    pub catalog: &'a str,
    pub tool: &'a str,
    pub tool_fingerprint: &'a str,
    /// The error class when the call failed.
    pub error: Option<&'a str>,
    /// The arguments object's members, when the arguments were seen.
    pub arguments: Option<&'a [(Cow<'a, str>, ArgValue<'a>)]>,
}

/// One count of proxy events.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventKey {
    pub hour: u64,
    pub environment: String,
    /// The event's name (`refused`, `drift`, `finding`, …).
    pub event: String,
    pub server: String,
    pub tool: String,
    /// The drift rule, for the events that carry one.
    pub rule: String,
    pub catalog: String,
}

/// The aggregates of any number of inputs.
#[derive(Clone, Debug, Default)]
pub struct Aggregates {
    limits: Limits,
    calls: Table,
    events: BTreeMap<EventKey, u64>,
    /// Estimated heap bytes held, kept up to date as the tables grow.
    bytes: usize,
    /// The distinct names of each key part, while [`Limits::names`] caps
    /// them (empty otherwise).
    names: [HashSet<Box<str>>; 5],
    /// Calls counted under [`OTHER`], per key part.
    folded: [u64; 5],
}

/// Estimated bytes of one event count beside its strings.
const EVENT_ENTRY: usize = std::mem::size_of::<EventKey>() + 48;

fn event_bytes(key: &EventKey) -> usize {
    EVENT_ENTRY
        + key.environment.len()
        + key.event.len()
        + key.server.len()
        + key.tool.len()
        + key.rule.len()
        + key.catalog.len()
}

impl PartialEq for Aggregates {
    fn eq(&self, other: &Self) -> bool {
        self.calls == other.calls && self.events == other.events
    }
}

impl Aggregates {
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The key part values `strings` is counted under: itself, or
    /// [`OTHER`] in each part whose cap of distinct names is reached
    /// (`calls` are then counted in [`Aggregates::folded`]).
    fn fold<'p>(&mut self, mut strings: [&'p str; 5], calls: u64) -> [&'p str; 5] {
        let cap = self.limits.names;
        if cap == usize::MAX {
            return strings;
        }
        for (i, s) in strings.iter_mut().enumerate() {
            let names = &mut self.names[i];
            if *s == OTHER || names.contains(*s) {
                continue;
            }
            if names.len() < cap {
                self.bytes += MAP_ENTRY + s.len();
                names.insert(Box::from(*s));
            } else {
                self.folded[i] += calls;
                *s = OTHER;
            }
        }
        strings
    }

    /// The statistics of a key (its names folded past the cap), created
    /// empty if new, with the names its tables share.
    fn slot(&mut self, hour: u64, strings: [&str; 5], calls: u64) -> (&mut ToolStats, &mut Names) {
        let strings = self.fold(strings, calls);
        let (stats, names, added) = self.calls.entry(&Parts { hour, strings });
        self.bytes += added;
        (stats, names)
    }

    pub fn record_call(&mut self, call: &Call<'_>) {
        let limits = self.limits;
        let strings = [
            call.environment,
            call.tenant,
            call.agent,
            call.catalog,
            call.tool,
        ];
        let mut added = 0;
        let (stats, names) = self.slot(call.start_nanos / HOUR_NANOS, strings, 1);
        stats.calls += 1;
        let before = stats.latency.heap_bytes();
        stats.latency.record(call.duration_nanos);
        added += stats.latency.heap_bytes().saturating_sub(before);
        if let Some(class) = call.error {
            if count(&mut stats.errors, class, 1, usize::MAX, || names.get(class)) == Some(true) {
                added += MAP_ENTRY + class.len();
            }
        }
        let fp = call.tool_fingerprint;
        if count_fingerprint(stats, fp, 1, &limits, || names.get(fp)) {
            added += MAP_ENTRY + fp.len();
        }
        if let Some(arguments) = call.arguments {
            stats.with_arguments += 1;
            for (name, value) in arguments {
                if *value == ArgValue::Null {
                    continue;
                }
                // Looked up by `&str`: a name new to the key is shared
                // with the other keys that hold it.
                let param = match stats.params.find(name) {
                    Ok(i) => stats.params.at_mut(i),
                    Err(i) if stats.params.len() < limits.params => {
                        added += param_bytes(name);
                        let name = names.get(name);
                        stats.params.insert_at(i, name, ParamStats::default())
                    }
                    Err(_) => {
                        stats.params_over_cap += 1;
                        continue;
                    }
                };
                param.supplied += 1;
                match value {
                    ArgValue::Str(s) => {
                        if count_capped(param, s, 1, &limits, || names.get(s)) {
                            added += MAP_ENTRY + s.len();
                        }
                    }
                    ArgValue::Other => param.non_string += 1,
                    ArgValue::Null => {}
                }
            }
        }
        self.bytes += added;
    }

    /// Merges `stats` into the key `key` names.
    fn merge_key(&mut self, key: &Key, stats: &ToolStats) {
        let limits = self.limits;
        let strings = Parts::of(key).strings;
        let added = self
            .slot(key.hour, strings, stats.calls)
            .0
            .merge_counted(stats, &limits);
        self.bytes += added;
    }

    /// Adds a whole key's statistics (read back from a store), merged
    /// into what the key already holds.
    pub fn add_stats(&mut self, key: &Key, stats: &ToolStats) {
        self.merge_key(key, stats);
    }

    /// [`Aggregates::add_stats`] for statistics the caller owns: a new key
    /// takes them as they are, without a merge (reading a store back).
    pub fn add_owned_stats(&mut self, key: &Key, stats: ToolStats) {
        self.add_owned_stats_at(key.hour, Parts::of(key).strings, stats);
    }

    /// [`Aggregates::add_owned_stats`] for the key of `hour` and `parts`
    /// (environment, tenant, agent, catalog, tool) borrowed from where
    /// they were read (a store's row): copied only when the key is new.
    pub fn add_owned_stats_at(&mut self, hour: u64, parts: [&str; 5], stats: ToolStats) {
        let limits = self.limits;
        let slot = self.slot(hour, parts, stats.calls).0;
        let added = if slot.calls == 0 && slot.latency.count() == 0 && slot.params.is_empty() {
            let added = stats.heap_bytes().saturating_sub(slot.heap_bytes());
            *slot = stats;
            added
        } else {
            slot.merge_counted(&stats, &limits)
        };
        self.bytes += added;
    }

    /// [`Aggregates::add_owned_stats_at`] for statistics as the store
    /// encodes them ([`crate::serial::encode`]): decoded with their
    /// tables' names shared with the keys already held, so that a name
    /// they hold is not copied again. The error says what is wrong with
    /// `text`, as [`crate::serial::decode`]'s does; nothing is added then.
    pub fn add_encoded_at(
        &mut self,
        hour: u64,
        parts: [&str; 5],
        text: &str,
    ) -> Result<(), String> {
        let stats = crate::serial::decode_with(text, self.calls.names())?;
        self.add_owned_stats_at(hour, parts, stats);
        Ok(())
    }

    /// Adds `n` to an event count.
    pub fn add_events(&mut self, key: EventKey, n: u64) {
        match self.events.get_mut(&key) {
            Some(c) => *c += n,
            None => {
                self.bytes += event_bytes(&key);
                self.events.insert(key, n);
            }
        }
    }

    pub fn record_event(&mut self, key: EventKey) {
        self.add_events(key, 1);
    }

    /// Adds `other` into `self`. Counts, errors, latency and `supplied`
    /// combine exactly; where a cap was reached, which values are counted
    /// by name can depend on the order of merging, but named plus other
    /// always totals the same.
    pub fn merge(&mut self, other: &Aggregates) {
        for (key, stats) in other.calls.iter() {
            self.merge_key(key, stats);
        }
        for (key, n) in &other.events {
            self.add_events(key.clone(), *n);
        }
        for (mine, theirs) in self.folded.iter_mut().zip(other.folded) {
            *mine += theirs;
        }
    }

    /// Estimated heap bytes these aggregates hold: every key with its
    /// strings and tables, the event counts, and the names held for
    /// [`Limits::names`]. Kept as they grow (reading it costs nothing),
    /// from the sizes of the structures and their strings; allocator
    /// overhead and spare capacity of the maps are estimated, not measured.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Calls counted under [`OTHER`] because their part's cap of distinct
    /// names was reached, per part in [`KEY_PARTS`] order.
    pub fn folded(&self) -> [u64; 5] {
        self.folded
    }

    pub fn get(&self, key: &Key) -> Option<&ToolStats> {
        self.calls.get(&Parts::of(key))
    }

    /// Every call key and its statistics, in key order.
    pub fn calls(&self) -> Vec<(&Key, &ToolStats)> {
        let mut all: Vec<_> = self.calls.iter().collect();
        all.sort_by(|a, b| a.0.cmp(b.0));
        all
    }

    /// Every call key and its statistics, in no particular order (for
    /// passes that group them anyway: sorting 100,000 keys costs more than
    /// the pass).
    pub fn calls_unordered(&self) -> impl Iterator<Item = (&Key, &ToolStats)> {
        self.calls.iter()
    }

    /// The calls of hours `[from_hour, until_hour)`, of one environment
    /// when given (event counts are not kept: the report reads calls).
    pub fn within(&self, from_hour: u64, until_hour: u64, environment: Option<&str>) -> Aggregates {
        let mut out = Aggregates::new(self.limits);
        for (key, stats) in self.calls.iter() {
            let in_env = environment.is_none_or(|e| e == &*key.environment);
            if key.hour >= from_hour && key.hour < until_hour && in_env {
                out.merge_key(key, stats);
            }
        }
        out
    }

    /// Number of call keys.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.len() == 0 && self.events.is_empty()
    }

    /// Calls over every key.
    pub fn total_calls(&self) -> u64 {
        self.calls.iter().map(|(_, s)| s.calls).sum()
    }

    pub fn events(&self) -> &BTreeMap<EventKey, u64> {
        &self.events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call<'a>(
        tool: &'a str,
        tenant: &'a str,
        nanos: u64,
        args: &'a [(Cow<'a, str>, ArgValue<'a>)],
    ) -> Call<'a> {
        Call {
            start_nanos: 5 * HOUR_NANOS,
            duration_nanos: nanos,
            environment: "prod",
            tenant,
            agent: "agent",
            catalog: "cat",
            tool,
            tool_fingerprint: "fp",
            error: (nanos % 2 == 1).then_some("timeout"),
            arguments: Some(args),
        }
    }

    /// What [`Aggregates::bytes`] must equal: every key and its tables,
    /// the event counts and the names held, counted afresh.
    fn counted_afresh(a: &Aggregates) -> usize {
        let keys: usize = a
            .calls
            .iter()
            .map(|(k, s)| crate::table::key_bytes(&Parts::of(k)) + s.heap_bytes())
            .sum();
        let events: usize = a.events.keys().map(event_bytes).sum();
        let names: usize = a
            .names
            .iter()
            .flat_map(|n| n.iter().map(|s| MAP_ENTRY + s.len()))
            .sum();
        keys + events + names
    }

    #[test]
    fn bytes_follow_the_tables_as_they_grow() {
        let limits = Limits {
            names: 50,
            ..Limits::default()
        };
        let (mut a, mut b) = (Aggregates::new(limits), Aggregates::new(limits));
        for i in 0..400u64 {
            let value = format!("v{}", i % 40);
            let args = [
                (Cow::Borrowed("status"), ArgValue::Str(Cow::Owned(value))),
                (Cow::Owned(format!("p{}", i % 70)), ArgValue::Other),
            ];
            let tool = format!("tool-{}", i % 60);
            let into = if i % 3 == 0 { &mut a } else { &mut b };
            into.record_call(&call(&tool, "acme", i * i * 7_919, &args));
            assert_eq!(into.bytes(), counted_afresh(into), "call {i}");
        }
        a.record_event(EventKey {
            hour: 1,
            environment: "prod".into(),
            event: "drift".into(),
            server: "s".into(),
            tool: "t".into(),
            rule: "r".into(),
            catalog: "c".into(),
        });
        a.merge(&b);
        assert_eq!(a.bytes(), counted_afresh(&a));
        let mut c = Aggregates::new(limits);
        for (key, stats) in a.calls() {
            c.add_owned_stats(key, stats.clone());
        }
        assert_eq!(c.bytes(), counted_afresh(&c));
        let within = a.within(0, 10, Some("prod"));
        assert_eq!(within.bytes(), counted_afresh(&within));
        // A sketch holds the buckets its calls use, not every one between
        // them: 3 calls from ns to hours are 3 buckets, not 2,300.
        let mut wide = Aggregates::new(Limits::default());
        for nanos in [1, 1_000_000_000, 3_600_000_000_000] {
            wide.record_call(&call("t", "", nanos, &[]));
        }
        assert_eq!(wide.calls()[0].1.latency.buckets(), 3);
        assert!(wide.bytes() < 2_000, "{}", wide.bytes());
        assert_eq!(wide.bytes(), counted_afresh(&wide));
    }

    #[test]
    fn names_past_the_cap_are_counted_under_other() {
        let limits = Limits {
            names: 2,
            ..Limits::default()
        };
        let mut a = Aggregates::new(limits);
        for tool in ["a", "b", "c", "d", "a", "c"] {
            a.record_call(&call(tool, "acme", 10, &[]));
        }
        let tools: Vec<(&str, u64)> = a.calls().iter().map(|(k, s)| (&*k.tool, s.calls)).collect();
        assert_eq!(tools, [(OTHER, 3), ("a", 2), ("b", 1)]);
        assert_eq!(a.folded(), [0, 0, 0, 0, 3]);
        // Merged in, the receiving side's cap applies, and what the other
        // side folded is counted too.
        let mut b = Aggregates::new(limits);
        for tenant in ["t1", "t2", "t3"] {
            b.record_call(&call("e", tenant, 10, &[]));
        }
        assert_eq!(b.folded(), [0, 1, 0, 0, 0]);
        a.merge(&b);
        assert_eq!(a.total_calls(), 9);
        assert_eq!(a.folded(), [0, 2, 0, 0, 6]);
        assert_eq!(
            a.get(&Key {
                hour: 5,
                environment: "prod".into(),
                tenant: OTHER.into(),
                agent: "agent".into(),
                catalog: "cat".into(),
                tool: OTHER.into(),
            })
            .map(|s| s.calls),
            Some(2),
            "t2 and t3 are past acme and t1"
        );
        // Without a cap, names are neither kept nor folded.
        let mut free = Aggregates::new(Limits::default());
        free.merge(&a);
        assert!(free.names.iter().all(HashSet::is_empty));
        assert_eq!(free.len(), a.len());
    }

    #[test]
    fn buckets_are_contiguous_and_tight() {
        let mut previous = bucket_of(0);
        for v in 1..200_000u64 {
            let b = bucket_of(v);
            assert!(b == previous || b == previous + 1, "{v}");
            let (low, width) = bucket_range(b);
            assert!(low <= v && v < low + width, "{v} in {low}+{width}");
            previous = b;
        }
        assert!(bucket_of(u64::MAX) < 3_776);
        let (low, width) = bucket_range(bucket_of(u64::MAX));
        assert_eq!(low.wrapping_add(width - 1), u64::MAX);
    }

    #[test]
    fn percentiles_are_within_one_percent() {
        let mut s = LatencySketch::default();
        for ms in 1..=1000u64 {
            s.record(ms * 1_000_000);
        }
        for (q, want) in [(0.5, 500.0), (0.95, 950.0), (0.99, 990.0)] {
            let got = s.quantile(q).unwrap_or(0) as f64 / 1e6;
            assert!((got - want).abs() / want < 0.01, "q{q}: {got} vs {want}");
        }
        assert_eq!(s.min(), Some(1_000_000));
        assert_eq!(s.max(), Some(1_000_000_000));
        assert_eq!(LatencySketch::default().p50(), None);
    }

    #[test]
    fn merged_sketches_equal_one_pass() {
        let (mut a, mut b, mut all) = Default::default();
        for v in 0..5_000u64 {
            let v = v * v * 37 % 9_000_000_007;
            let s: &mut LatencySketch = if v % 3 == 0 { &mut a } else { &mut b };
            s.record(v);
            LatencySketch::record(&mut all, v);
        }
        let mut merged: LatencySketch = a.clone();
        merged.merge(&b);
        assert_eq!(merged, all);
    }
}
