//! Descriptive statistics and Student-t intervals, and the few helpers
//! every table shares (values sorted, distinct values, a rate delivered
//! else asked). The distributions are statrs's; tests/fixtures checks the
//! results against scipy.

use std::collections::BTreeMap;

use statrs::distribution::{ContinuousCDF, FisherSnedecor, StudentsT};

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

/// Type-7 quantile (numpy's default: linear between the two order
/// statistics around position q (n - 1)) of `n` values, read through
/// `kth(k)`, the k-th smallest (0-based). `kth` is called at most twice, in
/// ascending k, so a selection or a histogram can stand in for a sorted
/// slice. NaN for no values.
pub fn quantile_type7(n: usize, q: f64, mut kth: impl FnMut(usize) -> f64) -> f64 {
    if n == 0 {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = pos.floor() as usize;
    let frac = pos - lo as f64;
    let a = kth(lo);
    if frac == 0.0 || lo + 1 >= n {
        return a;
    }
    a + frac * (kth(lo + 1) - a)
}

/// Type-7 quantile of an ascending slice.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    quantile_type7(sorted.len(), q, |k| sorted[k])
}

/// Median of unsorted values.
pub fn median(x: &[f64]) -> f64 {
    quantile_sorted(&sorted(x.iter().copied()), 0.5)
}

/// One-way analysis of variance of `groups` (empty groups ignored): F =
/// between-group mean square / within-group mean square, and its upper-tail
/// p value on (k - 1, N - k) degrees of freedom. None with fewer than two
/// groups, no within-group degrees of freedom, no within-group spread, a
/// value that is not finite (an empty phase's NaN loss: statrs's `sf`
/// panics on a NaN F), or an F too large for the distribution to evaluate
/// ((k - 1) F overflows: `sf` panics there too).
pub fn one_way_anova(groups: &[Vec<f64>]) -> Option<(f64, f64)> {
    if groups.iter().flatten().any(|v| !v.is_finite()) {
        return None;
    }
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
    if !(ssw > 0.0 && ssw.is_finite() && ssb.is_finite()) {
        return None;
    }
    let (d1, d2) = ((k - 1) as f64, (n - k) as f64);
    let f = (ssb / d1) / (ssw / d2);
    if !(f.is_finite() && (d1 * f).is_finite()) {
        return None;
    }
    let p = FisherSnedecor::new(d1, d2).ok()?.sf(f);
    Some((f, p))
}

/// 100 (1 - mean(on) / mean(off)), %: the loss of the `items` that `is_on`
/// picks against the others, over the finite values `f` gives each side;
/// None where a side has none.
pub fn on_off_loss<T>(
    items: &[T],
    is_on: impl Fn(&T) -> bool,
    f: impl Fn(&T) -> f64,
) -> Option<f64> {
    let side = |on: bool| -> Vec<f64> {
        let picked = items.iter().filter(|p| is_on(p) == on);
        picked.map(&f).filter(|x| x.is_finite()).collect()
    };
    let (on, off) = (side(true), side(false));
    (!on.is_empty() && !off.is_empty()).then(|| 100.0 * (1.0 - mean(&on) / mean(&off)))
}

/// Holm's step-down adjustment of `p` (same order): each p times the
/// number of tests not yet rejected, kept monotone, at most 1.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let (mut adjusted, mut running) = (vec![1.0; p.len()], 0.0_f64);
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((p.len() - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// Degrees of freedom from which [`t_ppf`] uses the normal quantile with
/// its 1/df and 1/df^2 corrections (Cornish-Fisher, exact to ~1e-12 here)
/// instead of statrs's inverse, which drifts (1.95985 for 1.95997 at 1e6)
/// and never returns from 1e15 or infinite degrees of freedom (it hangs).
pub const T_DF_NORMAL: f64 = 1e5;

/// Student-t quantile: the t with P(T <= t) = p on `df` degrees of freedom
/// (df may be fractional, e.g. Welch; from [`T_DF_NORMAL`] on, the normal
/// expansion); NaN outside 0 < p < 1 or for df <= 0 or NaN.
pub fn t_ppf(p: f64, df: f64) -> f64 {
    use statrs::distribution::Normal;
    if !(p > 0.0 && p < 1.0 && df > 0.0) {
        return f64::NAN;
    }
    if df >= T_DF_NORMAL {
        let Ok(n) = Normal::new(0.0, 1.0) else {
            return f64::NAN;
        };
        let z = n.inverse_cdf(p);
        let (z3, z5) = (z.powi(3), z.powi(5));
        return z + (z3 + z) / (4.0 * df) + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * df * df);
    }
    StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |t| t.inverse_cdf(p))
}

/// Two-sided critical value t_{1-alpha/2, df} for a 95 % interval.
pub fn t_crit95(df: f64) -> f64 {
    t_ppf(0.975, df)
}

/// A point estimate with a two-sided 95 % interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
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

    /// `value` +- `h`, with standard error `se`, from `n` values.
    pub fn around(value: f64, h: f64, se: f64, n: usize) -> Self {
        let (lo, hi) = (value - h, value + h);
        Self {
            value,
            lo,
            hi,
            se,
            n,
        }
    }

    /// The estimate times `k` (k > 0): value, bounds and standard error.
    pub fn scaled(&self, k: f64) -> Self {
        let (value, lo, hi, se) = (self.value * k, self.lo * k, self.hi * k, self.se * k);
        Self {
            value,
            lo,
            hi,
            se,
            n: self.n,
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
    t_mean(x, |s, n| s / n.sqrt())
}

/// [`t_interval`] of the values an iterator yields.
pub fn t_interval_of(x: impl IntoIterator<Item = f64>) -> Estimate {
    t_interval(&x.into_iter().collect::<Vec<_>>())
}

/// [`mean`] of the values an iterator yields.
pub fn mean_of(x: impl IntoIterator<Item = f64>) -> f64 {
    mean(&x.into_iter().collect::<Vec<_>>())
}

/// `x` where it is above 0, else `or` (a rate delivered, else the one
/// asked).
pub fn positive_or(x: f64, or: f64) -> f64 {
    if x > 0.0 { x } else { or }
}

/// The values an iterator yields, ascending.
pub fn sorted(x: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = x.into_iter().collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Bisection over `steps` halvings of `lo..hi`, `within` true at `lo`
/// and false at `hi`: the last `lo` (the highest point found within).
pub fn bisect(mut lo: f64, mut hi: f64, steps: u32, within: impl Fn(f64) -> bool) -> f64 {
    for _ in 0..steps {
        let mid = 0.5 * (lo + hi);
        if within(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The values of `(key, value)` pairs grouped by key: keys ascending, each
/// key's values in the order they came.
pub fn grouped<K: Ord, V>(pairs: impl IntoIterator<Item = (K, V)>) -> BTreeMap<K, Vec<V>> {
    let mut m: BTreeMap<K, Vec<V>> = BTreeMap::new();
    for (k, v) in pairs {
        m.entry(k).or_default().push(v);
    }
    m
}

/// The distinct values an iterator yields, ascending.
pub fn distinct_sorted<T: Ord>(x: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = x.into_iter().collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Mean with a 95 % **prediction** interval for one more value drawn like
/// `x`: mean +- t_{0.975, n-1} s sqrt(1 + 1/n). Where the interval of the
/// mean says where the average lies, this one says where the next run will
/// land, so it covers the worst part of a drifting sweep, not only its
/// average. `se` is s sqrt(1 + 1/n). Undefined (NaN bounds) below two values.
pub fn t_prediction(x: &[f64]) -> Estimate {
    t_mean(x, |s, n| s * (1.0 + 1.0 / n).sqrt())
}

/// The mean of `x` +- t(0.975, n - 1) x `se(s, n)`, s the standard
/// deviation; undefined (NaN bounds) below two values.
fn t_mean(x: &[f64], se: impl Fn(f64, f64) -> f64) -> Estimate {
    let n = x.len();
    let m = mean(x);
    if n < 2 {
        return Estimate::point(m, n);
    }
    let se = se(std_dev(x), n as f64);
    Estimate::around(m, t_crit95((n - 1) as f64) * se, se, n)
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
        return Estimate::point(value, n);
    }
    let (n1, n0) = (on.len() as f64, off.len() as f64);
    // Relative variances of each mean.
    let v1 = variance(on) / (n1 * m1 * m1);
    let v0 = variance(off) / (n0 * m0 * m0);
    let se = r * (v1 + v0).sqrt();
    let df = satterthwaite_df(&[(v1, n1), (v0, n0)]).unwrap_or(n1 + n0 - 2.0);
    let h = 100.0 * t_crit95(df) * se;
    Estimate::around(value, h, 100.0 * se, n)
}

/// The two-sided 95 % critical value for a sum or difference of
/// independent estimates: t on the Welch-Satterthwaite degrees of freedom
/// of their squared standard errors, each with its own n - 1. With few
/// runs behind an estimate (2 or 3) this is far wider than the normal
/// 1.96, which would call two overlapping intervals different.
pub fn satterthwaite_crit95(parts: &[&Estimate]) -> f64 {
    let components: Vec<(f64, f64)> = parts.iter().map(|e| (e.se * e.se, e.n as f64)).collect();
    match satterthwaite_df(&components) {
        Some(df) if parts.iter().all(|e| e.n >= 2) && df.is_finite() => t_crit95(df),
        _ => {
            // No degrees of freedom to go on (an estimate of one value has
            // no se either, so nothing is tested with this): the normal value.
            1.959_963_984_540_054
        }
    }
}

/// Welch-Satterthwaite degrees of freedom of a sum of variance components
/// `(v_i, n_i)`, each v_i already divided by its n_i: (sum v_i)^2 / sum
/// (v_i^2 / (n_i - 1)); None where that is not a positive number.
fn satterthwaite_df(components: &[(f64, f64)]) -> Option<f64> {
    let var: f64 = components.iter().map(|(v, _)| v).sum();
    let den: f64 = components.iter().map(|(v, n)| v * v / (n - 1.0)).sum();
    let df = var * var / den;
    (den > 0.0 && df > 0.0).then_some(df)
}

/// a - b for independent estimates: the SEs added in quadrature, a 95 %
/// interval on [`satterthwaite_crit95`], n the smaller of the two.
pub fn difference(a: &Estimate, b: &Estimate) -> Estimate {
    let value = a.value - b.value;
    let se = (a.se.powi(2) + b.se.powi(2)).sqrt();
    let h = satterthwaite_crit95(&[a, b]) * se;
    Estimate::around(value, h, se, a.n.min(b.n))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn satterthwaite_matches_scipy_welch() {
        // se 0.3 (n 5) and 0.5 (n 3): df = (0.09 + 0.25)^2 /
        // (0.09^2 / 4 + 0.25^2 / 2) = 3.4741; scipy.stats.t.ppf(0.975,
        // 3.474079639368896) = 2.9503281875254483.
        let a = Estimate {
            value: 1.0,
            lo: 0.0,
            hi: 2.0,
            se: 0.3,
            n: 5,
        };
        let b = Estimate {
            value: 0.5,
            lo: 0.0,
            hi: 1.0,
            se: 0.5,
            n: 3,
        };
        let df: f64 = 0.34f64.powi(2) / (0.09f64.powi(2) / 4.0 + 0.25f64.powi(2) / 2.0);
        assert!((df - 3.474079639368896).abs() < 1e-12, "{df}");
        let crit = satterthwaite_crit95(&[&a, &b]);
        assert!((crit - 2.9503281875254483).abs() < 1e-9, "{crit}");
        // Many runs: close to the normal value.
        let big = Estimate { n: 10_000, ..a };
        assert!((satterthwaite_crit95(&[&big, &big]) - 1.96).abs() < 1e-3);
        let d = difference(&a, &b);
        assert!((d.value - 0.5).abs() < 1e-12);
        assert!(
            (d.hi - d.value - crit * 0.34f64.sqrt()).abs() < 1e-12,
            "{d:?}"
        );
    }

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
        // A tiny p keeps its relative precision (the upper tail is computed
        // directly, not as 1 - cdf): scipy gives 1.7017558470616743e-13.
        let far = [
            vec![1.0, 1.1, 0.9, 1.05, 0.95],
            vec![2.0, 2.1, 1.9, 2.05, 1.95],
            vec![3.0, 3.1, 2.9, 3.05, 2.95],
        ];
        let (f, p) = one_way_anova(&far).unwrap();
        assert!((f - 800.0).abs() < 1e-9, "{f}");
        assert!((p / 1.7017558470616743e-13 - 1.0).abs() < 1e-9, "{p}");
        // Equal group means: F = 0, p = 1.
        let (f, p) = one_way_anova(&[vec![1.0, 2.0, 3.0], vec![1.5, 2.5, 2.0]]).unwrap();
        assert!(f.abs() < 1e-12 && (p - 1.0).abs() < 1e-12, "{f} {p}");
        // Undefined: one group, one value per group, no spread.
        assert!(one_way_anova(&[vec![1.0, 2.0]]).is_none());
        assert!(one_way_anova(&[vec![1.0], vec![2.0]]).is_none());
        assert!(one_way_anova(&[vec![1.0, 1.0], vec![2.0, 2.0]]).is_none());
        // Not computable, not a panic (issue 33: an ABBA group with an
        // empty phase gave a NaN loss, and statrs's sf unwrapped it): a
        // NaN or infinite value, or an F whose (k - 1) F overflows.
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(one_way_anova(&[vec![1.0, bad, 2.0], vec![3.0, 4.0]]).is_none());
        }
        assert!(one_way_anova(&[vec![0.0, 1e-150], vec![1e150, 1e150]]).is_none());
        assert!(one_way_anova(&[vec![-1e200, 1e200], vec![0.0, 1.0]]).is_none());
    }

    #[test]
    fn prediction_interval_and_slope_match_scipy() {
        // x = [10, 12, 9, 14, 11]: mean +- t.ppf(0.975, 4) * s * sqrt(1 + 1/5)
        // (numpy/scipy): 5.349667141566649, 17.05033285843335.
        let p = t_prediction(&[10.0, 12.0, 9.0, 14.0, 11.0]);
        assert!((p.lo - 5.349667141566649).abs() < 1e-9, "{p:?}");
        assert!((p.hi - 17.05033285843335).abs() < 1e-9, "{p:?}");
        // Wider than the interval of the mean, by sqrt(n + 1) here.
        let m = t_interval(&[10.0, 12.0, 9.0, 14.0, 11.0]);
        assert!((p.half_width() / m.half_width() - 6f64.sqrt()).abs() < 1e-9);
        assert!(t_prediction(&[1.0]).lo.is_nan());
    }

    #[test]
    fn t_quantiles_match_tables() {
        // Printed t tables (two-sided 95 %).
        for (df, t) in [(1.0, 12.706), (4.0, 2.776), (9.0, 2.262), (30.0, 2.042)] {
            assert!((t_crit95(df) - t).abs() < 1e-3, "df {df}: {}", t_crit95(df));
        }
        // The lower tail mirrors the upper; no quantile outside (0, 1) or
        // without degrees of freedom.
        assert!((t_ppf(0.025, 4.0) + t_ppf(0.975, 4.0)).abs() < 1e-12);
        assert!(t_ppf(0.5, 7.0).abs() < 1e-12);
        for (p, df) in [
            (0.0, 4.0),
            (1.0, 4.0),
            (f64::NAN, 4.0),
            (0.9, 0.0),
            (0.9, f64::NAN),
            (0.9, -1.0),
        ] {
            assert!(t_ppf(p, df).is_nan(), "t_ppf({p}, {df})");
        }
        // Without bound the degrees of freedom give the normal quantile
        // (statrs's inverse hangs at 1e15 and beyond); just above the
        // normal one at 1e5: z + (z^3 + z) / (4 df) = 1.9599877.
        for df in [1e15, 1e300, f64::INFINITY] {
            assert!(
                (t_crit95(df) - 1.959_963_984_540_054).abs() < 1e-12,
                "df {df}"
            );
        }
        assert!(
            (t_crit95(1e5) - 1.959_987_7).abs() < 1e-6,
            "{}",
            t_crit95(1e5)
        );
    }

    #[test]
    fn quantiles_are_type7() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&v, 0.5), 2.5);
        assert!((quantile_sorted(&v, 0.99) - 3.97).abs() < 1e-12);
        assert_eq!(quantile_sorted(&v, 1.0), 4.0);
        assert_eq!(quantile_sorted(&[7.0], 0.99), 7.0);
        assert!(quantile_sorted(&[], 0.5).is_nan());
        // Read through order statistics: at most two, ascending.
        let mut asked = Vec::new();
        let q = quantile_type7(4, 0.5, |k| {
            asked.push(k);
            v[k]
        });
        assert_eq!((q, asked), (2.5, vec![1, 2]));
    }
}
