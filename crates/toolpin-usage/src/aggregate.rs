//! The aggregates: what `toolpin usage` keeps instead of spans. One
//! [`ToolStats`] per (UTC hour, environment, tenant, agent, catalog
//! fingerprint, tool), and one count per proxy event kind and hour. Every
//! part is bounded (a latency sketch of fixed buckets, capped value and
//! parameter tables) and mergeable, so files and shards ingested apart
//! combine into what one pass over all of them gives.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use crate::table::{Parts, Table};

/// Nanoseconds in an hour: keys are unix hours (`start / HOUR_NANOS`).
pub const HOUR_NANOS: u64 = 3_600 * 1_000_000_000;

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
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            values_per_param: 32,
            value_len: 64,
            params: 64,
            fingerprints: 8,
        }
    }
}

/// A latency sketch: counts in fixed log-linear buckets over nanoseconds,
/// HDR-histogram style. Each power of two is split into 64 buckets, so a
/// reported percentile is within 1/128 (0.8 %) of a recorded value, for
/// any duration from 1 ns to 584 years, in at most 3,776 buckets; values
/// below 128 ns are exact. Fixed buckets (rather than a sample or t-digest)
/// make `merge` exact and order-independent: merged shards give the same
/// percentiles as one pass. Buckets are stored densely from the lowest
/// one used to the highest (a tool's calls usually span a few hundred).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatencySketch {
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
    /// The first bucket in `counts`.
    base: u16,
    counts: Vec<u64>,
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
        if self.counts.is_empty() {
            self.base = bucket;
        } else if bucket < self.base {
            let grow = usize::from(self.base - bucket);
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.base = bucket;
        }
        let i = usize::from(bucket - self.base);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += n;
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
        for (i, n) in other.counts.iter().enumerate() {
            if *n > 0 {
                self.add(other.base + i as u16, *n);
            }
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// A sketch from its stored parts, checked: the bucket counts must add
    /// up to `count`, lie within the range of buckets, and agree with the
    /// extremes. The error says which part is wrong.
    pub fn from_parts(
        count: u64,
        sum: u128,
        min: u64,
        max: u64,
        base: u16,
        counts: Vec<u64>,
    ) -> Result<Self, String> {
        let total = counts
            .iter()
            .try_fold(0u64, |a, n| a.checked_add(*n))
            .ok_or("bucket counts overflow")?;
        if total != count {
            return Err(format!("bucket counts add up to {total}, not {count}"));
        }
        if count == 0 {
            if !counts.is_empty() || sum != 0 {
                return Err("an empty sketch holds buckets or a sum".into());
            }
            return Ok(Self::default());
        }
        if min > max {
            return Err(format!("min {min} is above max {max}"));
        }
        let last = usize::from(base) + counts.len();
        if counts.is_empty() || last > usize::from(bucket_of(u64::MAX)) + 1 {
            return Err(format!("buckets {base}..{last} are out of range"));
        }
        if counts.first() == Some(&0) || counts.last() == Some(&0) {
            return Err("the bucket range does not start and end at a used bucket".into());
        }
        if bucket_of(min) != base || usize::from(bucket_of(max)) + 1 != last {
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
            base,
            counts,
        })
    }

    /// The stored parts: count, sum, min, max, the first bucket and the
    /// bucket counts from it (see [`LatencySketch::from_parts`]).
    pub fn parts(&self) -> (u64, u128, u64, u64, u16, &[u64]) {
        (
            self.count,
            self.sum,
            self.min,
            self.max,
            self.base,
            &self.counts,
        )
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
        for (i, n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let (low, width) = bucket_range(self.base + i as u16);
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

    /// Buckets held, from the lowest used to the highest (for memory
    /// accounting and tests).
    pub fn buckets(&self) -> usize {
        self.counts.len()
    }
}

/// One parameter of one tool within a key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParamStats {
    /// Calls whose arguments held this parameter with a value other than
    /// `null` (a `null` is how many frameworks spell "not given").
    pub supplied: u64,
    /// Short string values and how often each was given: the enum
    /// parameters' value distribution (capped, see [`Limits`]). A hash
    /// map: a free-text parameter fills the cap, and every later value is
    /// looked up among all of them (a B-tree's linear node search over
    /// strings was the hottest part of ingesting).
    pub values: HashMap<String, u64>,
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
    pub errors: BTreeMap<String, u64>,
    pub latency: LatencySketch,
    /// Calls whose arguments were seen as a JSON object: the denominator
    /// of every [`ParamStats::supplied`].
    pub with_arguments: u64,
    pub params: BTreeMap<String, ParamStats>,
    /// Supplied parameters not tracked because the key already tracks
    /// [`Limits::params`] others.
    pub params_over_cap: u64,
    /// `toolpin.tool.fingerprint` values and their calls (capped; the
    /// overflow is `fingerprints_other`). `""` when a span had none.
    pub tool_fingerprints: BTreeMap<String, u64>,
    pub fingerprints_other: u64,
}

impl ToolStats {
    pub fn errors_total(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Adds `other` into `self`, within `limits` (see [`Aggregates::merge`]).
    pub fn merge(&mut self, other: &ToolStats, limits: &Limits) {
        self.calls += other.calls;
        for (class, n) in &other.errors {
            *self.errors.entry(class.clone()).or_insert(0) += n;
        }
        self.latency.merge(&other.latency);
        self.with_arguments += other.with_arguments;
        self.params_over_cap += other.params_over_cap;
        for (name, p) in &other.params {
            if !self.params.contains_key(name) && self.params.len() >= limits.params {
                self.params_over_cap += p.supplied;
                continue;
            }
            let mine = self.params.entry(name.clone()).or_default();
            mine.supplied += p.supplied;
            mine.other_values += p.other_values;
            mine.non_string += p.non_string;
            for (value, n) in &p.values {
                count_capped(&mut mine.values, &mut mine.other_values, value, *n, limits);
            }
        }
        for (fp, n) in &other.tool_fingerprints {
            count_fingerprint(self, fp, *n, limits);
        }
        self.fingerprints_other += other.fingerprints_other;
    }
}

/// Adds `n` to `value` if it is counted by name, else to `other`.
fn count_capped(
    values: &mut HashMap<String, u64>,
    other: &mut u64,
    value: &str,
    n: u64,
    limits: &Limits,
) {
    if value.len() > limits.value_len {
        *other += n;
    } else if let Some(c) = values.get_mut(value) {
        *c += n;
    } else if values.len() < limits.values_per_param {
        values.insert(value.to_string(), n);
    } else {
        *other += n;
    }
}

fn count_fingerprint(stats: &mut ToolStats, fp: &str, n: u64, limits: &Limits) {
    if let Some(c) = stats.tool_fingerprints.get_mut(fp) {
        *c += n;
    } else if stats.tool_fingerprints.len() < limits.fingerprints {
        stats.tool_fingerprints.insert(fp.to_string(), n);
    } else {
        stats.fingerprints_other += n;
    }
}

/// What a call key is made of. Absent parts are `""`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// Unix hour (UTC) of the call's start.
    pub hour: u64,
    pub environment: String,
    pub tenant: String,
    pub agent: String,
    /// `toolpin.catalog.fingerprint`.
    pub catalog: String,
    pub tool: String,
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

    pub fn record_call(&mut self, call: &Call<'_>) {
        let parts = Parts {
            hour: call.start_nanos / HOUR_NANOS,
            strings: [
                call.environment,
                call.tenant,
                call.agent,
                call.catalog,
                call.tool,
            ],
        };
        let limits = self.limits;
        let stats = self.calls.entry(&parts);
        stats.calls += 1;
        stats.latency.record(call.duration_nanos);
        if let Some(class) = call.error {
            match stats.errors.get_mut(class) {
                Some(n) => *n += 1,
                None => {
                    stats.errors.insert(class.to_string(), 1);
                }
            }
        }
        count_fingerprint(stats, call.tool_fingerprint, 1, &limits);
        let Some(arguments) = call.arguments else {
            return;
        };
        stats.with_arguments += 1;
        for (name, value) in arguments {
            if *value == ArgValue::Null {
                continue;
            }
            // Looked up by `&str` first: the name is copied only the first
            // time a key sees it.
            let param = if let Some(p) = stats.params.get_mut(name.as_ref()) {
                p
            } else if stats.params.len() < limits.params {
                stats.params.entry(name.to_string()).or_default()
            } else {
                stats.params_over_cap += 1;
                continue;
            };
            param.supplied += 1;
            match value {
                ArgValue::Str(s) => {
                    count_capped(&mut param.values, &mut param.other_values, s, 1, &limits)
                }
                ArgValue::Other => param.non_string += 1,
                ArgValue::Null => {}
            }
        }
    }

    /// Adds a whole key's statistics (read back from a store), merged
    /// into what the key already holds.
    pub fn add_stats(&mut self, key: &Key, stats: &ToolStats) {
        let limits = self.limits;
        self.calls.entry(&Parts::of(key)).merge(stats, &limits);
    }

    /// [`Aggregates::add_stats`] for statistics the caller owns: a new key
    /// takes them as they are, without a merge (reading a store back).
    pub fn add_owned_stats(&mut self, key: &Key, stats: ToolStats) {
        let limits = self.limits;
        let slot = self.calls.entry(&Parts::of(key));
        if slot.calls == 0 && slot.latency.count() == 0 && slot.params.is_empty() {
            *slot = stats;
        } else {
            slot.merge(&stats, &limits);
        }
    }

    /// Adds `n` to an event count.
    pub fn add_events(&mut self, key: EventKey, n: u64) {
        *self.events.entry(key).or_insert(0) += n;
    }

    pub fn record_event(&mut self, key: EventKey) {
        *self.events.entry(key).or_insert(0) += 1;
    }

    /// Adds `other` into `self`. Counts, errors, latency and `supplied`
    /// combine exactly; where a cap was reached, which values are counted
    /// by name can depend on the order of merging, but named plus other
    /// always totals the same.
    pub fn merge(&mut self, other: &Aggregates) {
        let limits = self.limits;
        for (key, stats) in other.calls.iter() {
            self.calls.entry(&Parts::of(key)).merge(stats, &limits);
        }
        for (key, n) in &other.events {
            *self.events.entry(key.clone()).or_insert(0) += n;
        }
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
            let in_env = environment.is_none_or(|e| e == key.environment);
            if key.hour >= from_hour && key.hour < until_hour && in_env {
                out.calls.entry(&Parts::of(key)).merge(stats, &self.limits);
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
