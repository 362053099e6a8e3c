//! The statistics of a comparison: the exact McNemar test for one run per
//! side, a paired bootstrap over cases for repeats and for the medians, and
//! the smallest change a suite of this size could detect.
//!
//! Everything is seeded, so that the same inputs give the same report. The
//! bootstrap is written out here rather than taken from a crate: it is a
//! dozen lines, and the budget (10,000 resamples of 10,000 cases in well
//! under 200 ms) needs the two-indices-per-random-word draw below.

/// Resamples per bootstrap.
pub const RESAMPLES: u32 = 10_000;

/// The seed when none is given.
pub const DEFAULT_SEED: u64 = 1;

/// z(0.975) + z(0.80): a two-sided 5% test with 80% power.
const Z_ALPHA_BETA: f64 = 1.959_964 + 0.841_621;

/// The fewest one-directional flips an exact McNemar test at 5% can call
/// significant: 2 × 0.5^6 = 0.031, while 2 × 0.5^5 = 0.0625.
pub const MIN_FLIPS: usize = 6;

/// A 95% interval around an estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
}

impl Interval {
    /// Whether the whole interval lies on one side of `x`.
    pub fn excludes(&self, x: f64) -> bool {
        self.low > x || self.high < x
    }
}

/// The exact two-sided McNemar p-value: the chance of a split at least as
/// uneven as `b` against `c` among the `b + c` discordant cases, when each
/// direction is equally likely.
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let k = b.min(c);
    // Sum of C(n, i) / 2^n for i ≤ k, in logs (2^n underflows past n = 1074).
    let ln2n = n as f64 * std::f64::consts::LN_2;
    let mut ln_term = -ln2n; // i = 0
    let mut total = ln_term.exp();
    for i in 1..=k {
        ln_term += ((n - i + 1) as f64).ln() - (i as f64).ln();
        total += ln_term.exp();
    }
    (2.0 * total).min(1.0)
}

/// The paired sign-flip (permutation) test of "the mean change is zero":
/// with no change, each case's two sides are exchangeable, so its change is
/// as likely negative as positive. The p-value is the share of random sign
/// assignments whose mean is at least as far from zero as the observed one,
/// counting the observed assignment (so it is never zero). Cases with no
/// change take no part; 64 signs come from one random word.
pub fn sign_flip_test(values: &[f64], resamples: u32, seed: u64) -> f64 {
    let moved: Vec<f64> = values.iter().copied().filter(|v| *v != 0.0).collect();
    if moved.is_empty() || resamples == 0 {
        return 1.0;
    }
    let observed = moved.iter().sum::<f64>().abs();
    // Sums that equal the observed one up to rounding count as reaching it.
    let reach = observed - 1e-9 * (1.0 + observed);
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x5157_0f11_9a7e_0001);
    let mut at_least = 0u32;
    for _ in 0..resamples {
        let mut sum = 0.0;
        for chunk in moved.chunks(64) {
            let mut bits = rng.u64(..);
            for v in chunk {
                // Branch-free: the low bit picks the sign.
                let sign = 1.0 - 2.0 * (bits & 1) as f64;
                sum += sign * v;
                bits >>= 1;
            }
        }
        if sum.abs() >= reach {
            at_least += 1;
        }
    }
    f64::from(at_least + 1) / f64::from(resamples + 1)
}

/// What the bootstrap estimates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Statistic {
    Mean,
    Median,
}

pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    median_of_sorted(&sorted)
}

fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// Population standard deviation.
pub fn sd(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values);
    (values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / values.len() as f64).sqrt()
}

/// Uniform indices below `n`, two per 64-bit word: Lemire's multiply-shift
/// on each half. The bias is at most n / 2^32 (2e-6 for 10,000 cases),
/// far below what 10,000 resamples can show.
struct Draws {
    rng: fastrand::Rng,
    n: u64,
}

impl Draws {
    fn new(n: usize, seed: u64) -> Self {
        Draws {
            rng: fastrand::Rng::with_seed(seed),
            n: n as u64,
        }
    }

    #[inline(always)]
    fn pair(&mut self) -> (usize, usize) {
        let word = self.rng.u64(..);
        let lo = ((word & 0xffff_ffff) * self.n) >> 32;
        let hi = ((word >> 32) * self.n) >> 32;
        (lo as usize, hi as usize)
    }
}

/// The paired bootstrap: resample the cases with replacement `resamples`
/// times and take the 2.5th and 97.5th percentiles of the statistic.
/// `values` holds one number per case (a per-case change), so the pairing
/// of each case's two sides is kept.
pub fn bootstrap(values: &[f64], statistic: Statistic, resamples: u32, seed: u64) -> Interval {
    match statistic {
        Statistic::Mean => {
            let (estimate, stats) = resample(values, statistic, resamples, seed);
            interval(estimate, &stats)
        }
        Statistic::Median => exact_median_interval(values),
    }
}

/// The 95% interval of the bootstrap distribution of the median, exactly:
/// the limit of infinitely many resamples, with no random draws at all.
///
/// A resample's k-th smallest value is at most x when at least k of its n
/// draws are, and the number of draws at most x is Binomial(n, F(x)) with
/// F the share of the values at most x. So the distribution of a resampled
/// order statistic is a binomial tail at each distinct value. For an odd
/// count the median is the middle order statistic; for an even count the
/// interval runs from the lower middle one's 2.5th percentile to the upper
/// middle one's 97.5th, a little wider than the mean of the two would give.
///
/// This replaced resampling the medians: four medians of 10,000 cases ×
/// 10,000 resamples took 400 ms of the 200 ms the whole comparison may
/// take; this takes well under one.
fn exact_median_interval(values: &[f64]) -> Interval {
    let estimate = median(values);
    let n = values.len();
    if n < 2 {
        return Interval {
            estimate,
            low: estimate,
            high: estimate,
        };
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    // Distinct values with how many values are at most each.
    let mut steps: Vec<(f64, usize)> = Vec::new();
    for (i, v) in sorted.iter().enumerate() {
        match steps.last_mut() {
            Some((last, at_most)) if last.total_cmp(v).is_eq() => *at_most = i + 1,
            _ => steps.push((*v, i + 1)),
        }
    }
    let ln_fact = ln_factorials(n);
    // P(the k-th smallest of a resample ≤ the value of step s).
    let cdf = |k: usize, s: usize| binomial_upper_tail(n, steps[s].1, k, &ln_fact);
    // The smallest step whose CDF reaches q.
    let quantile = |k: usize, q: f64| -> f64 {
        let (mut lo, mut hi) = (0usize, steps.len() - 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if cdf(k, mid) >= q {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        steps[lo].0
    };
    let (lower, upper) = if n % 2 == 1 {
        (n.div_ceil(2), n.div_ceil(2))
    } else {
        (n / 2, n / 2 + 1)
    };
    Interval {
        estimate,
        low: quantile(lower, 0.025),
        high: quantile(upper, 0.975),
    }
}

/// ln(i!) for i ≤ n.
fn ln_factorials(n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(n + 1);
    let mut acc = 0.0;
    out.push(0.0);
    for i in 1..=n {
        acc += (i as f64).ln();
        out.push(acc);
    }
    out
}

/// P(X ≥ k) for X ~ Binomial(n, m/n).
fn binomial_upper_tail(n: usize, m: usize, k: usize, ln_fact: &[f64]) -> f64 {
    if k == 0 || m == n {
        return 1.0;
    }
    if m == 0 || k > n {
        return 0.0;
    }
    let p = m as f64 / n as f64;
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    let ln_pmf =
        |i: usize| ln_fact[n] - ln_fact[i] - ln_fact[n - i] + i as f64 * lp + (n - i) as f64 * lq;
    // Sum the shorter side; past the mode, terms shrink geometrically, so
    // stop once they no longer move the sum.
    let mode = ((n + 1) as f64 * p).floor() as usize;
    let sum_range = |from: usize, to: usize, upward: bool| -> f64 {
        let mut total = 0.0;
        let mut i = if upward { from } else { to };
        loop {
            let term = ln_pmf(i).exp();
            total += term;
            let past_mode = if upward { i >= mode } else { i <= mode };
            if past_mode && term < total * 1e-17 {
                break;
            }
            if upward {
                if i == to {
                    break;
                }
                i += 1;
            } else {
                if i == from {
                    break;
                }
                i -= 1;
            }
        }
        total
    };
    if k > mode {
        sum_range(k, n, true).min(1.0)
    } else {
        (1.0 - sum_range(0, k - 1, false)).max(0.0)
    }
}

fn interval(estimate: f64, sorted: &[f64]) -> Interval {
    if sorted.is_empty() {
        return Interval {
            estimate,
            low: estimate,
            high: estimate,
        };
    }
    Interval {
        estimate,
        low: percentile(sorted, 0.025),
        high: percentile(sorted, 0.975),
    }
}

/// The statistic on the values and on each resample (sorted); no resamples
/// when there is nothing to resample.
fn resample(values: &[f64], statistic: Statistic, resamples: u32, seed: u64) -> (f64, Vec<f64>) {
    let n = values.len();
    let estimate = match statistic {
        Statistic::Mean => mean(values),
        Statistic::Median => median(values),
    };
    if n < 2 || resamples == 0 {
        return (estimate, Vec::new());
    }
    let mut draws = Draws::new(n, seed);
    let mut stats = Vec::with_capacity(resamples as usize);
    // The inner loops below keep four independent accumulators (sums, or
    // histograms) so that consecutive draws do not wait on each other's
    // add or store: a single chain made these loops five times slower.
    match statistic {
        Statistic::Mean => {
            for _ in 0..resamples {
                let mut sums = [0.0f64; 4];
                let mut j = 0;
                while j + 4 <= n {
                    let (a, b) = draws.pair();
                    let (c, d) = draws.pair();
                    sums[0] += values[a];
                    sums[1] += values[b];
                    sums[2] += values[c];
                    sums[3] += values[d];
                    j += 4;
                }
                while j < n {
                    sums[0] += values[draws.pair().0];
                    j += 1;
                }
                stats.push((sums[0] + sums[1] + sums[2] + sums[3]) / n as f64);
            }
        }
        Statistic::Median => {
            // Each resample sorted: the reference the exact method below
            // is tested against, not used by `bootstrap`.
            let mut sample = vec![0.0; n];
            for _ in 0..resamples {
                for slot in sample.iter_mut() {
                    *slot = values[draws.pair().0];
                }
                stats.push(median(&sample));
            }
        }
    }
    stats.sort_unstable_by(f64::total_cmp);
    (estimate, stats)
}

/// The q-quantile of sorted values, linearly interpolated.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    let frac = pos - lo as f64;
    sorted[lo] + (sorted[hi] - sorted[lo]) * frac
}

/// The smallest change in pass rate (a fraction of the cases) that `n`
/// paired cases detect with 80% power at 5%, when a case's change varies
/// by `sd` with no change at all; never below what an exact test needs
/// (`MIN_FLIPS` cases all flipping one way).
pub fn minimum_detectable(sd: f64, n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let normal = Z_ALPHA_BETA * sd / (n as f64).sqrt();
    let exact = MIN_FLIPS as f64 / n as f64;
    normal.max(exact).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn mcnemar_matches_the_binomial_tail() {
        // Known values: 2 × P(X ≤ k), X ~ Bin(n, 0.5).
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        assert!(close(mcnemar_exact(0, 6), 2.0 / 64.0, 1e-12));
        assert!(close(mcnemar_exact(5, 0), 2.0 / 32.0, 1e-12));
        // n = 10, k = 2: (1 + 10 + 45) / 1024 × 2.
        assert!(close(mcnemar_exact(2, 8), 112.0 / 1024.0, 1e-12));
        assert!(close(mcnemar_exact(8, 2), 112.0 / 1024.0, 1e-12));
        assert_eq!(mcnemar_exact(5, 5), 1.0);
        // Far past where 2^n underflows, still a probability.
        let p = mcnemar_exact(600, 400);
        assert!(p > 0.0 && p < 1e-9, "{p}");
        assert!(close(mcnemar_exact(1000, 1000), 1.0, 1e-9));
    }

    #[test]
    fn the_fewest_significant_flips_is_six() {
        assert!(mcnemar_exact(0, MIN_FLIPS as u64) < 0.05);
        assert!(mcnemar_exact(0, MIN_FLIPS as u64 - 1) >= 0.05);
    }

    #[test]
    fn sign_flip_p_values() {
        // Six cases all down by one: the exact p is 2 / 2^6 = 0.031.
        let six = [-1.0; 6];
        let p = sign_flip_test(&six, 20_000, 1);
        assert!(close(p, 2.0 / 64.0, 0.005), "{p}");
        // Balanced moves: nothing.
        let p = sign_flip_test(&[-1.0, 1.0, -0.5, 0.5, 0.0, 0.0], 5000, 1);
        assert!(p > 0.9, "{p}");
        assert_eq!(sign_flip_test(&[0.0; 10], 100, 1), 1.0);
        // Seeded.
        let v: Vec<f64> = (0..300)
            .map(|i| {
                if i % 7 == 0 {
                    -0.2
                } else if i % 11 == 0 {
                    0.4
                } else {
                    0.0
                }
            })
            .collect();
        assert_eq!(sign_flip_test(&v, 1000, 5), sign_flip_test(&v, 1000, 5));
    }

    #[test]
    fn medians_and_percentiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        assert_eq!(percentile(&[0.0, 10.0], 0.5), 5.0);
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_estimate() {
        let values: Vec<f64> = (0..200)
            .map(|i| if i % 4 == 0 { -1.0 } else { 0.0 })
            .collect();
        let a = bootstrap(&values, Statistic::Mean, 2000, 7);
        let b = bootstrap(&values, Statistic::Mean, 2000, 7);
        assert_eq!(a, b);
        assert_eq!(a.estimate, -0.25);
        assert!(a.low < -0.25 && a.high > -0.25 && a.high < 0.0, "{a:?}");
        // The normal approximation: sd of the mean = sqrt(p(1-p)/n) ≈ 0.0306.
        assert!(close(a.high - a.low, 2.0 * 1.96 * 0.0306, 0.02), "{a:?}");
        let c = bootstrap(&values, Statistic::Mean, 2000, 8);
        assert_ne!(a, c);
    }

    #[test]
    fn the_exact_median_interval_matches_many_resamples() {
        // Skewed, tied, odd and even counts: the exact percentiles against
        // 20,000 sorted resamples (which land within a step of them).
        for n in [31usize, 100, 257] {
            let values: Vec<f64> = (0..n)
                .map(|i| (((i * 7919) % 13) as f64 - 4.0).max(-1.0))
                .collect();
            let exact = bootstrap(&values, Statistic::Median, 0, 0);
            let (_, stats) = resample(&values, Statistic::Median, 20_000, 3);
            let mc = interval(median(&values), &stats);
            let mut distinct = values.clone();
            distinct.sort_unstable_by(f64::total_cmp);
            distinct.dedup();
            let step = |x: f64| distinct.iter().position(|d| *d >= x - 1e-12).unwrap_or(0) as i64;
            assert!(
                (step(exact.low) - step(mc.low)).abs() <= 1,
                "n={n} {exact:?} {mc:?}"
            );
            assert!(
                (step(exact.high) - step(mc.high)).abs() <= 1,
                "n={n} {exact:?} {mc:?}"
            );
            assert_eq!(exact.estimate, median(&values));
        }
        let even = bootstrap(&[0.0, 1.0, 2.0, 3.0], Statistic::Median, 100, 1);
        assert_eq!(even.estimate, 1.5);
        assert_eq!((even.low, even.high), (0.0, 3.0));
    }

    #[test]
    fn binomial_tails() {
        let lf = ln_factorials(10);
        // P(Bin(10, 0.5) ≥ 8) = (45 + 10 + 1) / 1024.
        assert!(close(
            binomial_upper_tail(10, 5, 8, &lf),
            56.0 / 1024.0,
            1e-12
        ));
        assert!(close(
            binomial_upper_tail(10, 5, 3, &lf),
            1.0 - 56.0 / 1024.0,
            1e-12
        ));
        assert_eq!(binomial_upper_tail(10, 10, 10, &lf), 1.0);
        assert_eq!(binomial_upper_tail(10, 0, 1, &lf), 0.0);
        let big = ln_factorials(10_000);
        let p = binomial_upper_tail(10_000, 5_000, 5_000, &big);
        assert!(close(p, 0.5 + 0.5 * 0.00798, 1e-4), "{p}");
    }

    #[test]
    fn constant_changes_have_no_spread() {
        let values = vec![2.0; 50];
        let i = bootstrap(&values, Statistic::Median, 100, 1);
        assert_eq!((i.low, i.estimate, i.high), (2.0, 2.0, 2.0));
        let one = bootstrap(&[1.0], Statistic::Mean, 100, 1);
        assert_eq!((one.low, one.high), (1.0, 1.0));
    }

    #[test]
    fn the_detectable_change_shrinks_with_cases() {
        assert!(minimum_detectable(0.5, 100) > minimum_detectable(0.5, 400));
        assert!(close(
            minimum_detectable(0.5, 400),
            2.8016 * 0.5 / 20.0,
            1e-3
        ));
        // Never below six flips' worth.
        assert_eq!(minimum_detectable(0.0, 60), 0.1);
        assert_eq!(minimum_detectable(0.1, 0), 1.0);
    }
}
