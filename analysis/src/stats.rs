//! Descriptive statistics and Student-t intervals, written out so that they
//! can be checked against scipy (tests/fixtures).

/// Arithmetic mean; NaN for an empty slice.
pub fn mean(x: &[f64]) -> f64 {
    if x.is_empty() {
        return f64::NAN;
    }
    x.iter().sum::<f64>() / x.len() as f64
}

/// Sample variance (n - 1 in the denominator); NaN below two values.
pub fn variance(x: &[f64]) -> f64 {
    let n = x.len();
    if n < 2 {
        return f64::NAN;
    }
    let m = mean(x);
    x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1) as f64
}

/// Sample standard deviation.
pub fn std_dev(x: &[f64]) -> f64 {
    variance(x).sqrt()
}

/// Type-7 quantile (numpy's default) of an ascending slice.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    sorted[lo] + (pos - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Median of unsorted values.
pub fn median(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    v.sort_by(f64::total_cmp);
    quantile_sorted(&v, 0.5)
}

/// ln Gamma(x) for x > 0 (Lanczos, g = 7, n = 9; ~1e-15 relative).
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
        // Reflection formula.
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

/// Regularised incomplete beta I_x(a, b) (continued fraction, Lentz).
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-16;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
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
    h
}

/// One-way analysis of variance of `groups` (empty groups ignored): F =
/// between-group mean square / within-group mean square, and its upper-tail
/// p value on (k - 1, N - k) degrees of freedom. None with fewer than two
/// groups, no within-group degrees of freedom, or no within-group spread.
pub fn one_way_anova(groups: &[Vec<f64>]) -> Option<(f64, f64)> {
    let groups: Vec<&Vec<f64>> = groups.iter().filter(|g| !g.is_empty()).collect();
    let k = groups.len();
    let n: usize = groups.iter().map(|g| g.len()).sum();
    if k < 2 || n <= k {
        return None;
    }
    let grand = groups.iter().map(|g| g.iter().sum::<f64>()).sum::<f64>() / n as f64;
    let (mut ssb, mut ssw) = (0.0, 0.0);
    for g in &groups {
        let m = mean(g);
        ssb += g.len() as f64 * (m - grand).powi(2);
        ssw += g.iter().map(|x| (x - m).powi(2)).sum::<f64>();
    }
    if ssw <= 0.0 {
        return None;
    }
    let (d1, d2) = ((k - 1) as f64, (n - k) as f64);
    let f = (ssb / d1) / (ssw / d2);
    let p = 1.0 - inc_beta(d1 / 2.0, d2 / 2.0, d1 * f / (d1 * f + d2));
    Some((f, p))
}

/// Student-t cumulative distribution with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, x);
    if t >= 0.0 { 1.0 - tail } else { tail }
}

/// Student-t quantile: the t with t_cdf(t, df) = p (bisection then Newton-free
/// refinement to ~1e-12; df may be fractional, e.g. Welch).
pub fn t_ppf(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0 && df > 0.0) {
        return f64::NAN;
    }
    if p < 0.5 {
        return -t_ppf(1.0 - p, df);
    }
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while t_cdf(hi, df) < p {
        hi *= 2.0;
        if hi > 1e12 {
            return f64::INFINITY;
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-13 * hi.max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// Two-sided critical value t_{1-alpha/2, df} for a 95 % interval.
pub fn t_crit95(df: f64) -> f64 {
    t_ppf(0.975, df)
}

/// A point estimate with a two-sided 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Estimate {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
    /// Standard error of `value`.
    pub se: f64,
    /// Number of independent values behind it.
    pub n: usize,
}

impl Estimate {
    /// An estimate without an interval.
    pub fn point(value: f64, n: usize) -> Self {
        Self {
            value,
            lo: f64::NAN,
            hi: f64::NAN,
            se: f64::NAN,
            n,
        }
    }

    /// Half-width of the interval (NaN when undefined).
    pub fn half_width(&self) -> f64 {
        0.5 * (self.hi - self.lo)
    }
}

/// Mean with a t interval: mean +- t_{0.975, n-1} s / sqrt(n). With one
/// value the interval is undefined (NaN bounds).
pub fn t_interval(x: &[f64]) -> Estimate {
    let n = x.len();
    let m = mean(x);
    if n < 2 {
        return Estimate {
            value: m,
            lo: f64::NAN,
            hi: f64::NAN,
            se: f64::NAN,
            n,
        };
    }
    let se = std_dev(x) / (n as f64).sqrt();
    let h = t_crit95((n - 1) as f64) * se;
    Estimate {
        value: m,
        lo: m - h,
        hi: m + h,
        se,
        n,
    }
}

/// Loss in percent, 100 (1 - mean(on) / mean(off)), with a delta-method 95 %
/// interval: Var(r) ~ r^2 (s_on^2 / (n_on m_on^2) + s_off^2 / (n_off m_off^2)),
/// t quantile on Welch-Satterthwaite degrees of freedom.
pub fn loss_delta(on: &[f64], off: &[f64]) -> Estimate {
    let (m1, m0) = (mean(on), mean(off));
    let r = m1 / m0;
    let value = 100.0 * (1.0 - r);
    let n = on.len().min(off.len());
    if on.len() < 2 || off.len() < 2 {
        return Estimate {
            value,
            lo: f64::NAN,
            hi: f64::NAN,
            se: f64::NAN,
            n,
        };
    }
    let (n1, n0) = (on.len() as f64, off.len() as f64);
    // Relative variances of each mean.
    let v1 = variance(on) / (n1 * m1 * m1);
    let v0 = variance(off) / (n0 * m0 * m0);
    let se = r * (v1 + v0).sqrt();
    let df = welch_df(v1, n1, v0, n0);
    let h = 100.0 * t_crit95(df) * se;
    Estimate {
        value,
        lo: value - h,
        hi: value + h,
        se: 100.0 * se,
        n,
    }
}

/// Welch-Satterthwaite degrees of freedom for two variance components
/// v_i (already divided by n_i).
pub fn welch_df(v1: f64, n1: f64, v0: f64, n0: f64) -> f64 {
    let num = (v1 + v0).powi(2);
    let den = v1 * v1 / (n1 - 1.0) + v0 * v0 / (n0 - 1.0);
    if den > 0.0 { num / den } else { n1 + n0 - 2.0 }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn anova_matches_scipy_f_oneway() {
        // scipy.stats.f_oneway([1.2,0.8,1.1,0.9,1.0],[1.9,2.2,1.7,2.1],[1.4,1.3,1.6])
        let g = vec![
            vec![1.2, 0.8, 1.1, 0.9, 1.0],
            vec![1.9, 2.2, 1.7, 2.1],
            vec![1.4, 1.3, 1.6],
        ];
        let (f, p) = one_way_anova(&g).unwrap();
        assert!((f - 32.31586402266292).abs() < 1e-9, "{f}");
        assert!((p - 7.803668714370627e-05).abs() < 1e-12, "{p}");
        // Equal group means: F = 0, p = 1.
        let (f, p) = one_way_anova(&[vec![1.0, 2.0, 3.0], vec![1.5, 2.5, 2.0]]).unwrap();
        assert!(f.abs() < 1e-12 && (p - 1.0).abs() < 1e-12, "{f} {p}");
        // Undefined: one group, one value per group, no spread.
        assert!(one_way_anova(&[vec![1.0, 2.0]]).is_none());
        assert!(one_way_anova(&[vec![1.0], vec![2.0]]).is_none());
        assert!(one_way_anova(&[vec![1.0, 1.0], vec![2.0, 2.0]]).is_none());
    }

    #[test]
    fn t_quantiles_match_tables() {
        // Printed t tables (two-sided 95 %).
        for (df, t) in [(1.0, 12.706), (4.0, 2.776), (9.0, 2.262), (30.0, 2.042)] {
            assert!((t_crit95(df) - t).abs() < 1e-3, "df {df}: {}", t_crit95(df));
        }
    }

    #[test]
    fn quantile_type7() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&v, 0.5), 2.5);
        assert!((quantile_sorted(&v, 0.99) - 3.97).abs() < 1e-12);
    }

    #[test]
    fn ln_gamma_known() {
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    }
}
