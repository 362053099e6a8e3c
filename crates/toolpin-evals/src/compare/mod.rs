//! `toolpin compare`: two sets of eval runs read case by case (docs/compare.md).
//!
//! Each side is one or more repeats of the suite. Per case: the pass rate on
//! each side, and whether it flipped; the flips grouped by the tools the case
//! touched and joined with the drift between the two catalogs; tool calls,
//! turns and cost per case with bootstrap intervals; tool names the agent
//! emitted that were never seen before; and a verdict on the pass-rate
//! change that says when it is not distinguishable from noise.

pub mod json;
pub mod markdown;
pub mod seen;
pub mod stats;
pub mod text;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use toolpin_drift::rule::Severity;

use crate::results::{CaseRun, Names, Repeat};
use stats::{Interval, Statistic};

/// How the statistics are drawn.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub seed: u64,
    pub resamples: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seed: stats::DEFAULT_SEED,
            resamples: stats::RESAMPLES,
        }
    }
}

/// What one case did on one side, over its repeats.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    pub runs: u32,
    pub passes: u32,
    /// Runs that recorded their tool calls, and the calls in them.
    pub call_runs: u32,
    pub calls: u64,
    /// Calls per tool (id into `Names`), summed over the runs, sorted by
    /// id.
    pub tools: Vec<(u32, u32)>,
    pub turn_runs: u32,
    pub turns: u64,
    pub usd_runs: u32,
    pub usd: f64,
    pub token_runs: u32,
    pub tokens: u64,
    /// The first error a run reported.
    pub error: Option<String>,
}

impl Tally {
    fn add(&mut self, run: &CaseRun) {
        self.runs += 1;
        self.passes += u32::from(run.passed);
        if let Some(calls) = &run.tool_calls {
            self.call_runs += 1;
            self.calls += calls.len() as u64;
            // Counted in `finish`: a search per call was quadratic in the
            // names one case calls (160,000 distinct names took 19 s).
            self.tools.extend(calls.iter().map(|id| (*id, 1)));
        }
        if let Some(turns) = run.turns {
            self.turn_runs += 1;
            self.turns += u64::from(turns);
        }
        if let Some(cost) = run.cost {
            if let Some(usd) = cost.usd {
                self.usd_runs += 1;
                self.usd += usd;
            }
            if cost.input_tokens.is_some() || cost.output_tokens.is_some() {
                self.token_runs += 1;
                self.tokens += cost.input_tokens.unwrap_or(0) + cost.output_tokens.unwrap_or(0);
            }
        }
        if self.error.is_none() {
            self.error.clone_from(&run.error);
        }
    }

    /// Sorts the calls `add` collected by tool and sums each tool's: one
    /// sort per case and side, O(n log n) in its calls.
    fn finish(&mut self) {
        self.tools.sort_unstable_by_key(|(id, _)| *id);
        // `dedup_by` hands the later element first and keeps the earlier.
        self.tools.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 += later.1;
            }
            same
        });
        self.tools.shrink_to_fit();
    }

    pub fn pass_rate(&self) -> f64 {
        if self.runs == 0 {
            0.0
        } else {
            f64::from(self.passes) / f64::from(self.runs)
        }
    }

    /// A case passes on a side when it passed in at least half its runs.
    pub fn passing(&self) -> bool {
        2 * self.passes >= self.runs
    }

    /// The per-run mean of a metric, when any run recorded it.
    pub fn per_run(&self, metric: Metric) -> Option<f64> {
        let (runs, total) = match metric {
            Metric::ToolCalls => (self.call_runs, self.calls as f64),
            Metric::Turns => (self.turn_runs, self.turns as f64),
            Metric::CostUsd => (self.usd_runs, self.usd),
            Metric::Tokens => (self.token_runs, self.tokens as f64),
        };
        (runs > 0).then(|| total / f64::from(runs))
    }
}

/// What a case did from one side to the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Flip {
    /// Passed before, fails after.
    NewFailure,
    /// Failed before, passes after.
    NewPass,
    StillPassing,
    StillFailing,
    OnlyBefore,
    OnlyAfter,
}

/// One case, both sides.
#[derive(Clone, Debug)]
pub struct Case {
    pub id: String,
    pub before: Option<Tally>,
    pub after: Option<Tally>,
}

impl Case {
    pub fn flip(&self) -> Flip {
        match (&self.before, &self.after) {
            (Some(b), Some(a)) => match (b.passing(), a.passing()) {
                (true, false) => Flip::NewFailure,
                (false, true) => Flip::NewPass,
                (true, true) => Flip::StillPassing,
                (false, false) => Flip::StillFailing,
            },
            (Some(_), None) => Flip::OnlyBefore,
            _ => Flip::OnlyAfter,
        }
    }

    /// Passed on every before run and failed on every after run.
    pub fn failed_every_run(&self) -> bool {
        match (&self.before, &self.after) {
            (Some(b), Some(a)) => b.runs > 0 && b.passes == b.runs && a.runs > 0 && a.passes == 0,
            _ => false,
        }
    }

    /// The tools the case called on either side, sorted by id.
    pub fn touched(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self
            .before
            .iter()
            .chain(self.after.iter())
            .flat_map(|t| t.tools.iter().map(|(id, _)| *id))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

/// The per-case numbers compared besides pass/fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    ToolCalls,
    Turns,
    CostUsd,
    Tokens,
}

impl Metric {
    pub const ALL: [Metric; 4] = [
        Metric::ToolCalls,
        Metric::Turns,
        Metric::CostUsd,
        Metric::Tokens,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Metric::ToolCalls => "tool_calls",
            Metric::Turns => "turns",
            Metric::CostUsd => "cost_usd",
            Metric::Tokens => "tokens",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Metric::ToolCalls => "tool calls per case",
            Metric::Turns => "turns per case",
            Metric::CostUsd => "cost per case (USD)",
            Metric::Tokens => "tokens per case",
        }
    }
}

/// A metric on both sides, over the cases that recorded it on both.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricChange {
    pub metric: Metric,
    pub cases: usize,
    pub before_median: f64,
    pub after_median: f64,
    /// The median of the per-case change, with its bootstrap interval.
    pub change: Interval,
}

/// A tool whose calls per run moved.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolMove {
    pub tool: u32,
    /// Calls per run, over the cases on both sides that recorded calls.
    pub before: f64,
    pub after: f64,
}

impl ToolMove {
    pub fn delta(&self) -> f64 {
        self.after - self.before
    }
}

/// What the drift between the two catalogs says about one tool.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDrift {
    pub severity: Severity,
    /// Rule ids, most severe first, each once.
    pub rules: Vec<&'static str>,
}

/// Flipped cases under one tool they touched.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolGroup {
    /// `None`: the cases that recorded no tool calls.
    pub tool: Option<u32>,
    /// How many of the flipped cases touched it (a case counts under every
    /// tool it touched).
    pub touched: usize,
    /// The cases listed under it: each flipped case once, under the most
    /// often touched of its tools.
    pub cases: Vec<usize>,
    pub drift: Option<ToolDrift>,
}

/// The significance test's verdict on the pass-rate change. Whether the
/// comparison fails is decided from it and the rest of the evidence in
/// [`crate::verdict`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Regression,
    Improvement,
    Noise,
    /// Some cases changed, but fewer than the test needs to reject "no
    /// change" at 5% whatever they did (`stats::MIN_FLIPS`): the test says
    /// nothing, and calling the change noise would claim what it did not
    /// test.
    Untested,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::Noise => "not distinguishable from noise",
            Verdict::Untested => "too few cases changed for a significance test",
        }
    }

    pub fn key(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::Noise => "noise",
            Verdict::Untested => "untested",
        }
    }
}

/// The test that decided.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    /// One run per side: the exact McNemar test on the discordant cases.
    McNemar { to_failing: u64, to_passing: u64 },
    /// Repeats: the paired sign-flip permutation test of the per-case
    /// change in pass rate.
    Permutation,
}

impl Method {
    pub fn key(self) -> &'static str {
        match self {
            Method::McNemar { .. } => "mcnemar-exact",
            Method::Permutation => "paired-permutation",
        }
    }
}

/// The pass-rate change between two sides.
#[derive(Clone, Debug, PartialEq)]
pub struct PassChange {
    /// Cases on both sides.
    pub paired: usize,
    /// Paired cases whose pass rate moved (the discordant cases of one run
    /// per side).
    pub changed: usize,
    /// Mean per-case pass rate over the paired cases.
    pub before: f64,
    pub after: f64,
    /// after − before, with its 95% interval (paired bootstrap).
    pub delta: Interval,
    pub method: Method,
    /// The exact McNemar p-value (one run per side) or the paired
    /// permutation test's (repeats). The verdict follows it; the interval
    /// shows how large the change is.
    pub p_value: f64,
    pub significant: bool,
}

impl PassChange {
    /// Whether the test can reject "no change" at 5% at all: with `k`
    /// cases changed, the smallest two-sided p-value either test reaches
    /// is 2 / 2^k (every change the same way), below 5% from six cases on.
    pub fn testable(&self) -> bool {
        self.changed >= stats::MIN_FLIPS
    }
}

/// The whole comparison.
#[derive(Clone, Debug)]
pub struct Report {
    pub names: Names,
    pub repeats: [usize; 2],
    pub aa_repeats: usize,
    pub options: Options,
    /// Every case on either side, by id.
    pub cases: Vec<Case>,
    pub pass: PassChange,
    /// The same test between the before runs and the A/A runs.
    pub aa: Option<PassChange>,
    pub verdict: Verdict,
    /// The smallest change in pass rate this many cases and repeats detect.
    pub detectable: f64,
    pub failures: Vec<ToolGroup>,
    pub passes: Vec<ToolGroup>,
    pub metrics: Vec<MetricChange>,
    pub tool_moves: Vec<ToolMove>,
    pub new_names: Vec<NewName>,
    /// Cases (indices) that passed on every before run and every A/A run
    /// and failed on every after run.
    pub failed_every_run: Vec<usize>,
    /// The first movement the other way, when there is one: what shows that
    /// the suite moves by chance (crate::verdict).
    pub moved_back: Option<MovedBack>,
    /// Whether the catalogs were known (for the drift join and for telling a
    /// hallucinated name).
    pub catalogs: bool,
}

/// A case that moved the way chance moves a suite: better after than before,
/// or differently on the A/A runs than on the before runs (by case id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MovedBack {
    Better(String),
    Aa(String),
}

/// A tool name the after side emitted that was not seen before.
#[derive(Clone, Debug, PartialEq)]
pub struct NewName {
    pub name: String,
    /// Cases (indices) whose after runs emitted it.
    pub cases: Vec<usize>,
    /// In neither catalog: the agent made it up. `None` without catalogs.
    pub hallucinated: Option<bool>,
}

impl Report {
    pub fn case_ids(&self, flip: Flip) -> Vec<usize> {
        flipped(&self.cases, flip)
    }

    /// The first ten of [`Report::tool_moves`] whose calls per run moved
    /// by half a call in a hundred runs or more.
    pub fn moved_most(&self) -> Vec<&ToolMove> {
        self.tool_moves
            .iter()
            .filter(|m| m.delta().abs() >= 0.005)
            .take(10)
            .collect()
    }

    /// Exit 1: what [`crate::verdict::decide`] says from this comparison
    /// alone (`toolpin compare`; `evals run` adds the exit codes).
    pub fn fails(&self) -> bool {
        self.outcome().regressed()
    }

    /// The outcome from this comparison alone.
    pub fn outcome(&self) -> crate::verdict::Outcome {
        crate::verdict::decide(Some(self), None)
    }
}

/// What the comparison knows beyond the runs.
#[derive(Default)]
pub struct Context<'a> {
    /// Tool names in either catalog (to tell a made-up name).
    pub catalog_tools: Option<BTreeSet<String>>,
    /// Drift per tool name, from comparing the two catalogs.
    pub drift: BTreeMap<String, ToolDrift>,
    /// Tool names acknowledged in the seen-tools file.
    pub seen: Option<&'a BTreeSet<String>>,
}

/// The drift per tool of a catalog comparison, for [`Context::drift`].
pub fn drift_by_tool(c: &toolpin_drift::Comparison) -> BTreeMap<String, ToolDrift> {
    let mut out: BTreeMap<String, Vec<(Severity, &'static str)>> = BTreeMap::new();
    for f in &c.findings {
        if f.tool.is_empty() {
            continue;
        }
        out.entry(f.tool.clone())
            .or_default()
            .push((f.severity, f.rule));
    }
    out.into_iter()
        .map(|(tool, mut found)| {
            found.sort();
            let severity = found[0].0;
            let mut rules = Vec::new();
            for (_, rule) in found {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
            (tool, ToolDrift { severity, rules })
        })
        .collect()
}

/// Tallies each case over the repeats of one side.
fn tally(
    repeats: &[Repeat],
    index: &mut HashMap<String, usize>,
    slots: &mut Vec<Case>,
    after: bool,
) {
    for repeat in repeats {
        for run in &repeat.cases {
            let i = match index.get(run.case.as_str()) {
                Some(i) => *i,
                None => {
                    slots.push(Case {
                        id: run.case.clone(),
                        before: None,
                        after: None,
                    });
                    index.insert(run.case.clone(), slots.len() - 1);
                    slots.len() - 1
                }
            };
            let side = if after {
                &mut slots[i].after
            } else {
                &mut slots[i].before
            };
            side.get_or_insert_with(Tally::default).add(run);
        }
    }
}

/// The cases of two sides, sorted by id.
fn join(before: &[Repeat], after: &[Repeat]) -> Vec<Case> {
    let capacity = before.first().map_or(0, |r| r.cases.len());
    let mut index = HashMap::with_capacity(capacity);
    let mut cases = Vec::with_capacity(capacity);
    tally(before, &mut index, &mut cases, false);
    tally(after, &mut index, &mut cases, true);
    for case in &mut cases {
        for side in [&mut case.before, &mut case.after].into_iter().flatten() {
            side.finish();
        }
    }
    cases.sort_unstable_by(|a, b| a.id.cmp(&b.id));
    cases
}

/// The pass-rate change over the cases both sides ran.
fn pass_change(cases: &[Case], single_runs: bool, options: Options) -> PassChange {
    let mut deltas = Vec::new();
    let (mut before, mut after) = (0.0, 0.0);
    let (mut to_failing, mut to_passing) = (0u64, 0u64);
    for case in cases {
        if let (Some(b), Some(a)) = (&case.before, &case.after) {
            let (rb, ra) = (b.pass_rate(), a.pass_rate());
            before += rb;
            after += ra;
            deltas.push(ra - rb);
            match case.flip() {
                Flip::NewFailure => to_failing += 1,
                Flip::NewPass => to_passing += 1,
                _ => {}
            }
        }
    }
    let paired = deltas.len();
    let changed = deltas.iter().filter(|d| **d != 0.0).count();
    let n = paired.max(1) as f64;
    let delta = stats::bootstrap(&deltas, Statistic::Mean, options.resamples, options.seed);
    let (method, p_value) = if single_runs {
        (
            Method::McNemar {
                to_failing,
                to_passing,
            },
            stats::mcnemar_exact(to_failing, to_passing),
        )
    } else {
        (
            Method::Permutation,
            stats::sign_flip_test(&deltas, options.resamples, options.seed),
        )
    };
    let significant = p_value < 0.05;
    PassChange {
        paired,
        changed,
        before: before / n,
        after: after / n,
        delta,
        method,
        p_value,
        significant,
    }
}

/// The sd of a case's pass-rate change when nothing changed: each case's
/// two sides pooled, its binomial variance over the runs of each side.
fn null_sd(cases: &[Case]) -> f64 {
    let mut total = 0.0;
    let mut n = 0usize;
    for case in cases {
        if let (Some(b), Some(a)) = (&case.before, &case.after) {
            let p = f64::from(b.passes + a.passes) / f64::from(b.runs + a.runs);
            total += p * (1.0 - p) * (1.0 / f64::from(b.runs) + 1.0 / f64::from(a.runs));
            n += 1;
        }
    }
    if n == 0 {
        0.0
    } else {
        (total / n as f64).sqrt()
    }
}

fn metric_changes(cases: &[Case], options: Options) -> Vec<MetricChange> {
    let mut out = Vec::new();
    for (k, metric) in Metric::ALL.into_iter().enumerate() {
        let mut before = Vec::new();
        let mut after = Vec::new();
        let mut change = Vec::new();
        for case in cases {
            let (Some(b), Some(a)) = (&case.before, &case.after) else {
                continue;
            };
            if let (Some(x), Some(y)) = (b.per_run(metric), a.per_run(metric)) {
                before.push(x);
                after.push(y);
                change.push(y - x);
            }
        }
        if change.is_empty() {
            continue;
        }
        out.push(MetricChange {
            metric,
            cases: change.len(),
            before_median: stats::median(&before),
            after_median: stats::median(&after),
            change: stats::bootstrap(
                &change,
                Statistic::Median,
                options.resamples,
                options.seed.wrapping_add(1 + k as u64),
            ),
        });
    }
    out
}

fn tool_moves(cases: &[Case], names: &Names) -> Vec<ToolMove> {
    let mut before = vec![0u64; names.len()];
    let mut after = vec![0u64; names.len()];
    let (mut runs_before, mut runs_after) = (0u64, 0u64);
    for case in cases {
        let (Some(b), Some(a)) = (&case.before, &case.after) else {
            continue;
        };
        if b.call_runs == 0 || a.call_runs == 0 {
            continue;
        }
        // Per-run averages per case, so that a case with more repeats on
        // one side does not weigh more.
        runs_before += 1;
        runs_after += 1;
        for (id, n) in &b.tools {
            before[*id as usize] += u64::from(*n) * 1_000_000 / u64::from(b.call_runs);
        }
        for (id, n) in &a.tools {
            after[*id as usize] += u64::from(*n) * 1_000_000 / u64::from(a.call_runs);
        }
    }
    if runs_before == 0 {
        return Vec::new();
    }
    let per = |total: u64, runs: u64| total as f64 / 1e6 / runs as f64;
    let mut moves: Vec<ToolMove> = (0..names.len())
        .map(|id| ToolMove {
            tool: id as u32,
            before: per(before[id], runs_before),
            after: per(after[id], runs_after),
        })
        .filter(|m| m.before > 0.0 || m.after > 0.0)
        .collect();
    moves.sort_by(|a, b| {
        b.delta()
            .abs()
            .total_cmp(&a.delta().abs())
            .then_with(|| names.name(a.tool).cmp(names.name(b.tool)))
    });
    moves
}

/// Flipped cases grouped under the tools they touched.
fn groups(cases: &[Case], flipped: &[usize], names: &Names, ctx: &Context) -> Vec<ToolGroup> {
    let mut touched: BTreeMap<Option<u32>, usize> = BTreeMap::new();
    let mut touches: Vec<Vec<u32>> = Vec::with_capacity(flipped.len());
    for i in flipped {
        let tools = cases[*i].touched();
        if tools.is_empty() {
            *touched.entry(None).or_default() += 1;
        }
        for t in &tools {
            *touched.entry(Some(*t)).or_default() += 1;
        }
        touches.push(tools);
    }
    // Most touched first; ties by name; the no-call group last.
    let mut order: Vec<(Option<u32>, usize)> = touched.into_iter().collect();
    order.sort_by(|(ta, na), (tb, nb)| match (ta, tb) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, _) => std::cmp::Ordering::Greater,
        (_, None) => std::cmp::Ordering::Less,
        (Some(a), Some(b)) => nb.cmp(na).then_with(|| names.name(*a).cmp(names.name(*b))),
    });
    let rank: HashMap<Option<u32>, usize> = order
        .iter()
        .enumerate()
        .map(|(r, (t, _))| (*t, r))
        .collect();
    let mut listed: Vec<Vec<usize>> = vec![Vec::new(); order.len()];
    for (i, tools) in flipped.iter().zip(&touches) {
        let home = if tools.is_empty() {
            rank[&None]
        } else {
            tools.iter().map(|t| rank[&Some(*t)]).min().unwrap_or(0)
        };
        listed[home].push(*i);
    }
    order
        .into_iter()
        .zip(listed)
        .map(|((tool, n), cases)| ToolGroup {
            tool,
            touched: n,
            cases,
            drift: tool.and_then(|t| ctx.drift.get(names.name(t)).cloned()),
        })
        .collect()
}

fn new_names(cases: &[Case], names: &Names, ctx: &Context, before_seen: &[bool]) -> Vec<NewName> {
    let mut out: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, case) in cases.iter().enumerate() {
        let Some(after) = &case.after else { continue };
        for (id, _) in &after.tools {
            let known =
                before_seen[*id as usize] || ctx.seen.is_some_and(|s| s.contains(names.name(*id)));
            if !known {
                out.entry(*id).or_default().push(i);
            }
        }
    }
    let mut list: Vec<NewName> = out
        .into_iter()
        .map(|(id, cases)| {
            let name = names.name(id).to_string();
            NewName {
                hallucinated: ctx.catalog_tools.as_ref().map(|t| !t.contains(&name)),
                name,
                cases,
            }
        })
        .collect();
    list.sort_by(|a, b| a.name.cmp(&b.name));
    list
}

/// The cases at `flip`, by index.
fn flipped(cases: &[Case], flip: Flip) -> Vec<usize> {
    (0..cases.len())
        .filter(|i| cases[*i].flip() == flip)
        .collect()
}

/// The noise: the A/A runs' own spread when there are any, else each
/// case's binomial spread.
fn noise(cases: &[Case], aa_cases: Option<&[Case]>) -> f64 {
    match aa_cases {
        Some(aa_cases) => {
            let deltas: Vec<f64> = aa_cases
                .iter()
                .filter_map(|c| match (&c.before, &c.after) {
                    (Some(b), Some(a)) => Some(a.pass_rate() - b.pass_rate()),
                    _ => None,
                })
                .collect();
            stats::sd(&deltas).max(null_sd(cases))
        }
        None => null_sd(cases),
    }
}

/// What the pass-rate change says, beyond the A/A spread when there is one.
fn verdict(pass: &PassChange, aa_change: Option<&PassChange>) -> Verdict {
    let beyond_aa = aa_change.is_none_or(|aa| {
        let reach = aa.delta.low.abs().max(aa.delta.high.abs());
        pass.delta.estimate.abs() > reach
    });
    // No case changed: "no change" is exactly what was seen (p = 1).
    if pass.changed == 0 {
        Verdict::Noise
    } else if !pass.testable() {
        Verdict::Untested
    } else if pass.significant && beyond_aa {
        if pass.delta.estimate < 0.0 {
            Verdict::Regression
        } else {
            Verdict::Improvement
        }
    } else {
        Verdict::Noise
    }
}

/// Which tool names (by id) the runs of the pinned catalog called.
fn seen_before<'a>(repeats: impl Iterator<Item = &'a Repeat>, names: &Names) -> Vec<bool> {
    let mut seen = vec![false; names.len()];
    for repeat in repeats {
        for run in &repeat.cases {
            for id in run.tool_calls.iter().flatten() {
                seen[*id as usize] = true;
            }
        }
    }
    seen
}

/// Pass rates compared as fractions, exactly.
fn rate_cmp(c: &Case) -> Option<std::cmp::Ordering> {
    match (&c.before, &c.after) {
        (Some(b), Some(a)) => Some(
            (u64::from(a.passes) * u64::from(b.runs))
                .cmp(&(u64::from(b.passes) * u64::from(a.runs))),
        ),
        _ => None,
    }
}

/// The first case that got better, else the first A/A case that moved.
fn moved_back(cases: &[Case], aa_cases: Option<&[Case]>) -> Option<MovedBack> {
    cases
        .iter()
        .find(|c| rate_cmp(c) == Some(std::cmp::Ordering::Greater))
        .map(|c| MovedBack::Better(c.id.clone()))
        .or_else(|| {
            aa_cases
                .into_iter()
                .flatten()
                .find(|c| rate_cmp(c).is_some_and(|o| o != std::cmp::Ordering::Equal))
                .map(|c| MovedBack::Aa(c.id.clone()))
        })
}

/// The cases that failed every run, less those an A/A run failed too.
fn failed_every_run(cases: &[Case], aa_cases: Option<&[Case]>) -> Vec<usize> {
    // An A/A run of a case that did not pass makes it no longer a case
    // that passed on every run of the unchanged catalog.
    let aa_failed: std::collections::HashSet<&str> = aa_cases
        .into_iter()
        .flatten()
        .filter(|c| c.after.as_ref().is_some_and(|t| t.passes < t.runs))
        .map(|c| c.id.as_str())
        .collect();
    (0..cases.len())
        .filter(|i| cases[*i].failed_every_run() && !aa_failed.contains(cases[*i].id.as_str()))
        .collect()
}

/// Compares the before and after runs (and the A/A runs, when given).
pub fn compare(
    before: &[Repeat],
    after: &[Repeat],
    aa: Option<&[Repeat]>,
    names: Names,
    ctx: &Context,
    options: Options,
) -> Report {
    let cases = join(before, after);
    let single = before.len() == 1 && after.len() == 1;
    let pass = pass_change(&cases, single, options);
    let aa_cases = aa.map(|aa| join(before, aa));
    let aa_change = aa
        .zip(aa_cases.as_deref())
        .map(|(aa, aa_cases)| pass_change(aa_cases, before.len() == 1 && aa.len() == 1, options));
    let sd = noise(&cases, aa_cases.as_deref());
    let detectable = stats::minimum_detectable(sd, pass.paired);
    let verdict = verdict(&pass, aa_change.as_ref());
    let failures = groups(&cases, &flipped(&cases, Flip::NewFailure), &names, ctx);
    let passes = groups(&cases, &flipped(&cases, Flip::NewPass), &names, ctx);
    let metrics = metric_changes(&cases, options);
    let tool_moves = tool_moves(&cases, &names);
    let before_seen = seen_before(before.iter().chain(aa.unwrap_or_default()), &names);
    let new_names = new_names(&cases, &names, ctx, &before_seen);
    let moved_back = moved_back(&cases, aa_cases.as_deref());
    let failed_every_run = failed_every_run(&cases, aa_cases.as_deref());
    Report {
        repeats: [before.len(), after.len()],
        aa_repeats: aa.map_or(0, <[Repeat]>::len),
        options,
        cases,
        pass,
        aa: aa_change,
        verdict,
        detectable,
        failures,
        passes,
        metrics,
        tool_moves,
        new_names,
        failed_every_run,
        moved_back,
        catalogs: ctx.catalog_tools.is_some(),
        names,
    }
}

/// Both sides read from their result files, sharing one name table.
pub struct Inputs {
    pub before: Vec<Repeat>,
    pub after: Vec<Repeat>,
    pub aa: Option<Vec<Repeat>>,
    pub names: Names,
}

/// Reads the result files (or directories) of each side.
pub fn read_inputs(
    before: &[std::path::PathBuf],
    after: &[std::path::PathBuf],
    aa: &[std::path::PathBuf],
    format: Option<crate::results::Format>,
) -> Result<Inputs, crate::results::Error> {
    let mut names = Names::default();
    let before = crate::results::read_side("before", before, format, &mut names)?;
    let after = crate::results::read_side("after", after, format, &mut names)?;
    let aa = if aa.is_empty() {
        None
    } else {
        Some(crate::results::read_side("A/A", aa, format, &mut names)?)
    };
    Ok(Inputs {
        before,
        after,
        aa,
        names,
    })
}

/// What the catalogs (when known) and the seen-tools file add.
pub fn context<'a>(
    catalogs: Option<(&toolpin_manifest::Catalog, &toolpin_manifest::Catalog)>,
    seen: Option<&'a BTreeSet<String>>,
) -> Context<'a> {
    let Some((pinned, live)) = catalogs else {
        return Context {
            seen,
            ..Context::default()
        };
    };
    let tools: BTreeSet<String> = pinned
        .tools()
        .chain(live.tools())
        .map(|(name, _, _)| name.to_string())
        .collect();
    let comparison = toolpin_drift::compare(pinned, live);
    Context {
        catalog_tools: Some(tools),
        drift: drift_by_tool(&comparison),
        seen,
    }
}

/// The report in one of its formats ([`Report::Comparison`]: `text`,
/// `json` or `markdown`); `None` for a format it is not written in.
///
/// [`Report::Comparison`]: toolpin_report::Report::Comparison
pub fn render(
    report: &Report,
    format: &toolpin_report::Format,
    style: toolpin_report::Style,
) -> Option<String> {
    use crate::verdict::Outcome;
    use toolpin_report::format::{pick, JSON, MARKDOWN, TEXT};
    use toolpin_report::Style;
    type Write = fn(&Report, &Outcome, Style) -> String;
    let write: Write = pick(
        format,
        &[
            (TEXT, text::render as Write),
            // Serializing a Value cannot fail.
            (JSON, |r: &Report, o: &Outcome, _: Style| {
                serde_json::to_string_pretty(&json::render(r, o)).unwrap_or_default() + "\n"
            }),
            (MARKDOWN, |r: &Report, o: &Outcome, _: Style| {
                markdown::render(r, o)
            }),
        ],
    )?;
    Some(write(report, &report.outcome(), style))
}

#[cfg(test)]
mod tests;
