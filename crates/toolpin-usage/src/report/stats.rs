//! The statistics the change-point tests need: the chi-square test of
//! homogeneity, the two-proportion z-test, the Jensen–Shannon distance and
//! Holm's correction. Written out (about a hundred lines) rather than
//! taken from `statrs`, which brings nalgebra and its build time for two
//! special functions; `tests/change.rs` checks them against scipy.

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9: about 15 significant digits).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized upper incomplete gamma function Q(a, x), by its series
/// below a + 1 and its continued fraction above (Numerical Recipes §6.2).
pub fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 || a <= 0.0 {
        return 1.0;
    }
    if x < a + 1.0 {
        1.0 - gamma_p_series(a, x)
    } else {
        gamma_q_fraction(a, x)
    }
}

const EPS: f64 = 1e-15;
const MAX_ITER: usize = 1_000;

fn gamma_p_series(a: f64, x: f64) -> f64 {
    let mut ap = a;
    let mut sum = 1.0 / a;
    let mut del = sum;
    for _ in 0..MAX_ITER {
        ap += 1.0;
        del *= x / ap;
        sum += del;
        if del.abs() < sum.abs() * EPS {
            break;
        }
    }
    (sum.ln() - x + a * x.ln() - ln_gamma(a)).exp()
}

fn gamma_q_fraction(a: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / TINY;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..MAX_ITER {
        let an = -(i as f64) * (i as f64 - a);
        b += 2.0;
        d = an * d + b;
        if d.abs() < TINY {
            d = TINY;
        }
        c = b + an / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < EPS {
            break;
        }
    }
    ((-x + a * x.ln() - ln_gamma(a)).exp() * h).clamp(0.0, 1.0)
}

/// P(X ≥ x) for a chi-square variable with `df` degrees of freedom.
pub fn chi2_sf(x: f64, df: f64) -> f64 {
    if !x.is_finite() {
        return if x > 0.0 { 0.0 } else { 1.0 };
    }
    gamma_q(df / 2.0, x / 2.0)
}

/// P(Z ≥ z) for a standard normal variable: erfc(z / √2) / 2.
pub fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// erfc(x) through the incomplete gamma function: erfc(x) = Q(1/2, x²) for
/// x ≥ 0 (exact to the precision of `gamma_q`, also far in the tail).
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x >= 0.0 {
        gamma_q(0.5, x * x)
    } else {
        2.0 - gamma_q(0.5, x * x)
    }
}

/// The chi-square test of homogeneity of two rows of counts over the same
/// categories. Categories whose expected count is under 5 in either row
/// are pooled into one (the usual validity rule); fewer than two
/// categories left means no test (`None`). Returns (statistic, degrees of
/// freedom, p-value).
pub fn chi2_homogeneity(before: &[u64], after: &[u64]) -> Option<(f64, f64, f64)> {
    debug_assert_eq!(before.len(), after.len());
    let n1: u64 = before.iter().sum();
    let n2: u64 = after.iter().sum();
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let total = (n1 + n2) as f64;
    let expected = |column: u64, row: u64| column as f64 * row as f64 / total;
    let mut cells: Vec<(u64, u64)> = Vec::with_capacity(before.len());
    let mut pooled = (0u64, 0u64);
    for (&b, &a) in before.iter().zip(after) {
        let column = b + a;
        if column == 0 {
            continue;
        }
        if expected(column, n1) < 5.0 || expected(column, n2) < 5.0 {
            pooled.0 += b;
            pooled.1 += a;
        } else {
            cells.push((b, a));
        }
    }
    if pooled.0 + pooled.1 > 0 {
        cells.push(pooled);
    }
    if cells.len() < 2 {
        return None;
    }
    let mut statistic = 0.0;
    for (b, a) in &cells {
        let column = b + a;
        for (observed, row) in [(*b, n1), (*a, n2)] {
            let e = expected(column, row);
            if e > 0.0 {
                let d = observed as f64 - e;
                statistic += d * d / e;
            }
        }
    }
    let df = (cells.len() - 1) as f64;
    Some((statistic, df, chi2_sf(statistic, df)))
}

/// The pooled two-proportion z-test of x1/n1 against x2/n2, two-sided.
/// `None` when a side is empty; p = 1 when neither side varies.
pub fn two_proportion(x1: u64, n1: u64, x2: u64, n2: u64) -> Option<(f64, f64)> {
    if n1 == 0 || n2 == 0 || x1 > n1 || x2 > n2 {
        return None;
    }
    let (p1, p2) = (x1 as f64 / n1 as f64, x2 as f64 / n2 as f64);
    let pooled = (x1 + x2) as f64 / (n1 + n2) as f64;
    let se = (pooled * (1.0 - pooled) * (1.0 / n1 as f64 + 1.0 / n2 as f64)).sqrt();
    if se == 0.0 {
        return Some((0.0, 1.0));
    }
    let z = (p2 - p1) / se;
    Some((z, (2.0 * normal_sf(z.abs())).min(1.0)))
}

/// The Jensen–Shannon distance (the square root of the divergence, base 2:
/// 0 for equal distributions, 1 for disjoint ones) between two rows of
/// counts over the same categories.
pub fn js_distance(before: &[u64], after: &[u64]) -> f64 {
    let n1: u64 = before.iter().sum();
    let n2: u64 = after.iter().sum();
    if n1 == 0 || n2 == 0 {
        return 0.0;
    }
    let mut divergence = 0.0;
    for (&b, &a) in before.iter().zip(after) {
        let p = b as f64 / n1 as f64;
        let q = a as f64 / n2 as f64;
        let m = (p + q) / 2.0;
        if p > 0.0 {
            divergence += 0.5 * p * (p / m).log2();
        }
        if q > 0.0 {
            divergence += 0.5 * q * (q / m).log2();
        }
    }
    divergence.max(0.0).sqrt()
}

/// Holm's step-down adjustment: adjusted p-values in the input's order,
/// each at most 1 and never below an earlier (smaller) one's.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]).then(a.cmp(&b)));
    let mut adjusted = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        let value = ((m - rank) as f64 * p_values[i]).min(1.0);
        running = running.max(value);
        adjusted[i] = running;
    }
    adjusted
}
