//! Straight-line fits: y = a + b x and y = b x (through the origin), by
//! ordinary or weighted least squares, with standard errors and R^2.
//!
//! Weights are 1 / variance of each point (variance of a per-frequency mean
//! = s^2 / n). They are used only when every point has a finite, positive
//! variance; otherwise the fit is unweighted (and says so). Standard errors
//! scale the weights by the residual variance (like scipy's curve_fit with
//! absolute_sigma=False and statsmodels' WLS), so they stay honest when the
//! per-point variances are off by a common factor.

use crate::stats::{Estimate, t_crit95};

/// A fitted line and its uncertainty.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct LineFit {
    /// Intercept (0 for a fit through the origin).
    pub intercept: f64,
    pub slope: f64,
    /// Standard error of the intercept (0 through the origin).
    pub se_intercept: f64,
    pub se_slope: f64,
    /// Covariance of intercept and slope.
    pub cov: f64,
    /// R^2: centred (1 - SSR/SST about the weighted mean) with an intercept;
    /// uncentred (1 - SSR / sum w y^2) through the origin, as is usual there.
    pub r2: f64,
    /// Number of points.
    pub n: usize,
    pub through_origin: bool,
    pub weighted: bool,
    /// Lack of fit: sum of (residual / point's standard error)^2 with the
    /// weights as given (1 / variance), before any rescaling; NaN for an
    /// unweighted fit (no variances to test against).
    pub chi2: f64,
    /// P(chi^2 with `dof()` degrees of freedom >= `chi2`): small when the
    /// points scatter about the line more than their own errors allow, i.e.
    /// one line does not describe them (NaN without weights or dof).
    pub lack_of_fit_p: f64,
}

impl LineFit {
    /// Fitted value at x.
    pub fn at(&self, x: f64) -> f64 {
        self.intercept + self.slope * x
    }

    /// Residual degrees of freedom.
    pub fn dof(&self) -> usize {
        self.n
            .saturating_sub(if self.through_origin { 1 } else { 2 })
    }

    /// Half-width of the 95 % confidence band of the fitted mean at x.
    pub fn band_half_width(&self, x: f64) -> f64 {
        let var = self.se_intercept.powi(2) + x * x * self.se_slope.powi(2) + 2.0 * x * self.cov;
        if !var.is_finite() {
            return f64::NAN;
        }
        self.dof_t() * var.max(0.0).sqrt()
    }

    /// 95 % interval of the slope.
    pub fn slope_ci(&self) -> (f64, f64) {
        let h = self.dof_t() * self.se_slope;
        (self.slope - h, self.slope + h)
    }

    /// The lack-of-fit test says one line describes the points: p >= 0.05.
    pub fn describes(&self) -> bool {
        self.lack_of_fit_p >= 0.05
    }

    fn dof_t(&self) -> f64 {
        match self.dof() {
            0 => f64::NAN,
            d => t_crit95(d as f64),
        }
    }
}

/// The rate a fit uses, kHz: the achieved rate where there is one, else the
/// requested one.
pub fn fit_rate_khz(achieved_hz: f64, freq_hz: u64) -> f64 {
    if achieved_hz.is_finite() && achieved_hz > 0.0 {
        achieved_hz / 1000.0
    } else {
        freq_hz as f64 / 1000.0
    }
}

/// chi^2 of a fit and its upper-tail p on `dof` degrees of freedom; NaN
/// without weights or degrees of freedom.
fn lack_of_fit(ssr_weighted: f64, weighted: bool, dof: usize) -> (f64, f64) {
    use statrs::distribution::{ChiSquared, ContinuousCDF};
    if !weighted || dof == 0 || !ssr_weighted.is_finite() {
        return (f64::NAN, f64::NAN);
    }
    let p = ChiSquared::new(dof as f64)
        .map(|d| d.sf(ssr_weighted))
        .unwrap_or(f64::NAN);
    (ssr_weighted, p)
}

/// Weights from per-point variances: 1/var if all are finite and positive,
/// else None (unweighted).
pub fn weights_from_variances(var: &[f64]) -> Option<Vec<f64>> {
    if var.is_empty() || var.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    Some(var.iter().map(|v| 1.0 / v).collect())
}

/// Fit y = a + b x. `w` = None for ordinary least squares. Needs at least
/// two distinct x; returns None otherwise.
pub fn fit_line(x: &[f64], y: &[f64], w: Option<&[f64]>) -> Option<LineFit> {
    let n = x.len();
    if n < 2 || y.len() != n || w.is_some_and(|w| w.len() != n) {
        return None;
    }
    let wt = |i: usize| w.map_or(1.0, |w| w[i]);
    let sw: f64 = (0..n).map(wt).sum();
    let xm = (0..n).map(|i| wt(i) * x[i]).sum::<f64>() / sw;
    let ym = (0..n).map(|i| wt(i) * y[i]).sum::<f64>() / sw;
    let sxx: f64 = (0..n).map(|i| wt(i) * (x[i] - xm).powi(2)).sum();
    if sxx.is_nan() || sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = (0..n).map(|i| wt(i) * (x[i] - xm) * (y[i] - ym)).sum();
    let slope = sxy / sxx;
    let intercept = ym - slope * xm;
    let ssr: f64 = (0..n)
        .map(|i| wt(i) * (y[i] - intercept - slope * x[i]).powi(2))
        .sum();
    let sst: f64 = (0..n).map(|i| wt(i) * (y[i] - ym).powi(2)).sum();
    let s2 = if n > 2 {
        ssr / (n - 2) as f64
    } else {
        f64::NAN
    };
    let r2 = if sst > 0.0 { 1.0 - ssr / sst } else { f64::NAN };
    let (chi2, lack_of_fit_p) = lack_of_fit(ssr, w.is_some(), n.saturating_sub(2));
    Some(LineFit {
        intercept,
        slope,
        se_intercept: (s2 * (1.0 / sw + xm * xm / sxx)).sqrt(),
        se_slope: (s2 / sxx).sqrt(),
        cov: -xm * s2 / sxx,
        r2,
        n,
        through_origin: false,
        weighted: w.is_some(),
        chi2,
        lack_of_fit_p,
    })
}

/// Ordinary least squares of `y` on `x` with an intercept ([`fit_line`]
/// unweighted): the slope with its 95 % t interval (n - 2 df). None below
/// three points or without spread in `x`.
pub fn ols_slope(x: &[f64], y: &[f64]) -> Option<Estimate> {
    let f = fit_line(x, y, None).filter(|f| f.n >= 3)?;
    let h = f.dof_t() * f.se_slope;
    Some(Estimate::around(f.slope, h, f.se_slope, f.n))
}

/// Fit y = b x through the origin (the 2014 article's form).
pub fn fit_origin(x: &[f64], y: &[f64], w: Option<&[f64]>) -> Option<LineFit> {
    let n = x.len();
    if n < 1 || y.len() != n || w.is_some_and(|w| w.len() != n) {
        return None;
    }
    let wt = |i: usize| w.map_or(1.0, |w| w[i]);
    let sxx: f64 = (0..n).map(|i| wt(i) * x[i] * x[i]).sum();
    if sxx.is_nan() || sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = (0..n).map(|i| wt(i) * x[i] * y[i]).sum();
    let slope = sxy / sxx;
    let ssr: f64 = (0..n).map(|i| wt(i) * (y[i] - slope * x[i]).powi(2)).sum();
    let syy: f64 = (0..n).map(|i| wt(i) * y[i] * y[i]).sum();
    let s2 = if n > 1 {
        ssr / (n - 1) as f64
    } else {
        f64::NAN
    };
    let (chi2, lack_of_fit_p) = lack_of_fit(ssr, w.is_some(), n.saturating_sub(1));
    Some(LineFit {
        intercept: 0.0,
        slope,
        se_intercept: 0.0,
        se_slope: (s2 / sxx).sqrt(),
        cov: 0.0,
        r2: if syy > 0.0 { 1.0 - ssr / syy } else { f64::NAN },
        n,
        through_origin: true,
        weighted: w.is_some(),
        chi2,
        lack_of_fit_p,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn exact_line() {
        let x = [1.0, 2.0, 3.0, 4.0];
        let y: Vec<f64> = x.iter().map(|v| 0.5 + 2.0 * v).collect();
        let f = fit_line(&x, &y, None).unwrap();
        assert!((f.slope - 2.0).abs() < 1e-12);
        assert!((f.intercept - 0.5).abs() < 1e-12);
        assert!((f.r2 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn slope_matches_scipy() {
        // scipy.stats.linregress([0..5], [1, 1.9, 3.2, 3.9, 5.1, 6]): slope
        // 1.0085714285714285, stderr 0.030948717731947004; +- t.ppf(0.975, 4).
        let x = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [1.0, 1.9, 3.2, 3.9, 5.1, 6.0];
        let b = ols_slope(&x, &y).unwrap();
        assert!((b.value - 1.0085714285714285).abs() < 1e-12, "{b:?}");
        assert!((b.se - 0.030948717731947004).abs() < 1e-12, "{b:?}");
        assert!((b.lo - 0.922644012712416).abs() < 1e-9, "{b:?}");
        assert!((b.hi - 1.0944988444304409).abs() < 1e-9, "{b:?}");
        assert!(ols_slope(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]).is_none());
        assert!(ols_slope(&[1.0, 2.0], &[1.0, 2.0]).is_none());
    }

    #[test]
    fn origin_fit_of_article_table1() {
        // Least squares through the origin of the article's Table 1 is
        // dominated by the 100 kHz point: sum(xy)/sum(x^2) = 0.14687 %/kHz.
        // (The article's 0.1574313354 is the mean of util/kHz instead.)
        let x = [0.1, 0.5, 2.0, 4.0, 100.0];
        let y = [0.018035, 0.0822545, 0.3114508, 0.5585349, 14.6878577];
        let f = fit_origin(&x, &y, None).unwrap();
        let expect = x.iter().zip(&y).map(|(a, b)| a * b).sum::<f64>()
            / x.iter().map(|a| a * a).sum::<f64>();
        assert!((f.slope - expect).abs() < 1e-12, "{}", f.slope);
        assert!((f.slope - 0.14687).abs() < 1e-4, "{}", f.slope);
    }
}
