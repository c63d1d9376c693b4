//! The loss model: one account of the loss against the delivered rate that
//! every design feeds.
//!
//! loss(f) = f x (c(f) + o) x 1e-7 %, with
//!
//! - **c(f)**, the gaps term: the gaps design's cost per sample at the
//!   measured rates (direct + after-effect + the part above the cap where
//!   charged), its 95 % prediction interval over runs, charged as
//!   [`CostCurve::at`] says (the largest bound at or below a rate). The
//!   long episodes' extra time is a comparison against the 0 Hz runs: it
//!   is a between-run point of the outside term, not part of c;
//! - **o**, the outside term: a cost per sample that no gap holds, fitted
//!   as a slope through the origin of the [`Evidence`] points (loss beyond
//!   the gaps term against the achieved rate). Sampling's cost grows with
//!   the delivered rate; a slowdown that does not is not charged.
//!
//! Per class (within runs, between runs) the slope is a random-effects
//! meta-regression: each point weighs 1 / (se^2 + tau^2), tau^2 the
//! class's own scatter between rates beyond the points' standard errors
//! (method of moments, DerSimonian-Laird), so a hog that inflates the
//! between-run points widens their slope alone; its standard error takes
//! the Knapp-Hartung factor where the residuals are wider than the
//! weights say (never narrower), on n - 1 degrees of freedom. Each class's
//! slope is tested one-sided (o > 0), and the family of those tests is held
//! at 5 % with Holm's step-down. The term is charged only where a class
//! resolves: the classes pooled (inverse variance) where they agree, and,
//! where they disagree beyond their joint uncertainty (heterogeneity, a
//! two-sided t test of their difference at 5 %; pooled on Satterthwaite's
//! degrees of freedom), the resolved one with the
//! larger upper bound: the conservative reading, one rule for every set.
//!
//! The cost charged at a rate is the upper end of the model's 95 %
//! prediction for a next run: c's prediction half-width and o's interval
//! half-width added in quadrature above c + o.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::evidence::{self, Class, Evidence, Source};
use super::search::{CostCurve, CostPoint, CostSource};
use crate::percost::{PerSample, PerSampleRow, RunCost};
use crate::row_types::LossRow;
use crate::split::SplitRow;
use crate::stats::{Estimate, t_crit95, t_interval, t_prediction};

/// The family-wise error rate of the outside term's tests.
pub const FAMILY_ALPHA: f64 = 0.05;

/// One class's slope: the outside cost per sample its points give.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ClassFit {
    pub class: Class,
    /// Rates (points) behind it.
    pub points: usize,
    /// The slope, ns per sample, with its 95 % t interval on `df`.
    pub cost_ns: Estimate,
    pub df: f64,
    /// The scatter between rates beyond the points' errors, pp^2.
    pub tau2: f64,
    /// One-sided p of o > 0, and Holm's adjusted p over the classes.
    pub p: f64,
    pub p_holm: f64,
}

impl ClassFit {
    /// The slope resolves above 0 with the family held at
    /// [`FAMILY_ALPHA`].
    pub fn resolved(&self) -> bool {
        self.p_holm < FAMILY_ALPHA
    }
}

/// How the outside term was read from the classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reading {
    /// The classes agree: pooled by inverse variance.
    Pooled,
    /// The classes disagree: the larger resolved one.
    Conservative,
}

/// The outside term charged: a cost per sample at every rate.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct OutsideTerm {
    /// ns per sample, 95 % interval.
    pub cost_ns: Estimate,
    pub reading: Reading,
}

/// An instrument's part in the answer: what it measured, and its weight.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Contribution {
    /// `gaps`, `paired`, `split`, `split_vs_zero` or `long_episodes`.
    pub instrument: String,
    /// What its points say, in words.
    pub what: String,
    /// Rates behind it.
    pub points: usize,
    /// Its share of the outside term's estimate (0 to 1; the gaps term is
    /// 1, the whole of c).
    pub weight: f64,
}

/// The model fitted on one set (report/loss_model.json).
#[derive(Debug, Clone, serde::Serialize)]
pub struct LossModel {
    /// The gaps term, by rate: the prediction interval over runs.
    pub gaps: Vec<CostPoint>,
    /// The same, the interval of the mean over runs.
    pub gaps_mean: Vec<Estimate>,
    pub evidence: Vec<Evidence>,
    /// Each class with two or more rates.
    pub fits: Vec<ClassFit>,
    /// The two classes' difference: its two-sided p, where both fitted.
    pub heterogeneity_p: Option<f64>,
    pub outside: Option<OutsideTerm>,
}

/// The gaps term's rows: those with a total cost per sample and a
/// prediction interval. Err(why) where there are none (None: no gaps
/// design).
pub fn gaps_rows(per_sample: Option<&PerSample>) -> Result<Vec<&PerSampleRow>, Option<String>> {
    let Some(ps) = per_sample else {
        return Err(None);
    };
    let rows: Vec<&PerSampleRow> = ps
        .rows
        .iter()
        .filter(|r| r.total_pred_ns.hi.is_finite() && r.total_pred_ns.lo.is_finite())
        .collect();
    if rows.is_empty() {
        return Err(Some(
            "The gaps design's cost per sample is not used: no frequency has a total cost per \
             sample with an interval (it needs 0 Hz gaps runs and two or more runs at a \
             frequency)."
                .to_string(),
        ));
    }
    Ok(rows)
}

/// The gaps term at one rate: each run's total cost per sample, less the
/// long episodes' extra time where the table charged it (a between-run
/// comparison against the 0 Hz runs, which the model takes as evidence of
/// its outside term instead: [`evidence`]), with the prediction interval
/// over runs and the interval of the mean. The row's own where its runs'
/// costs are not there.
fn gaps_point(r: &PerSampleRow, runs: &[RunCost]) -> (CostPoint, Estimate) {
    let totals: Vec<f64> = runs
        .iter()
        .filter(|c| c.freq_hz == r.freq_hz)
        .map(|c| c.total_ns - if r.long_charged { c.long_ns } else { 0.0 })
        .collect();
    let (pred, mean) = if totals.len() >= 2 {
        (t_prediction(&totals), t_interval(&totals))
    } else {
        (r.total_pred_ns, r.total_ns)
    };
    (
        CostPoint {
            freq_hz: r.freq_hz,
            cost_ns: pred,
            source: CostSource::Model,
        },
        mean,
    )
}

fn t_sf(t: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |d| d.sf(t))
}

/// The class's random-effects slope through the origin, ns per sample;
/// None without points.
///
/// Degrees of freedom: where the scatter between rates is estimated
/// (tau^2 above 0, or the residuals wider than the points' errors, the
/// Knapp-Hartung factor applied), n - 1; otherwise the points' own errors carry the
/// uncertainty, on their Satterthwaite degrees of freedom (each point's
/// runs or blocks less one). One rate: the slope is its contrast against
/// 0 Hz, on that point's own degrees of freedom.
pub fn fit_class(class: Class, pts: &[&Evidence]) -> Option<ClassFit> {
    let n = pts.len();
    if n == 0 {
        return None;
    }
    // x: the achieved rate in units where loss % = x * cost ns.
    let x: Vec<f64> = pts.iter().map(|e| e.achieved_hz * 1e-7).collect();
    let y: Vec<f64> = pts.iter().map(|e| e.excess_pct).collect();
    let v: Vec<f64> = pts.iter().map(|e| e.se_pct * e.se_pct).collect();
    let own_df: Vec<f64> = pts.iter().map(|e| (e.n.max(2) - 1) as f64).collect();
    let slope = |w: &[f64]| {
        let sxx: f64 = (0..n).map(|i| w[i] * x[i] * x[i]).sum();
        let sxy: f64 = (0..n).map(|i| w[i] * x[i] * y[i]).sum();
        (sxy / sxx, sxx)
    };
    let w: Vec<f64> = v.iter().map(|v| 1.0 / v).collect();
    let (b_fe, sxx) = slope(&w);
    let tau2 = if n >= 2 {
        let q: f64 = (0..n).map(|i| w[i] * (y[i] - b_fe * x[i]).powi(2)).sum();
        let sw: f64 = w.iter().sum();
        let sw2x2: f64 = (0..n).map(|i| w[i] * w[i] * x[i] * x[i]).sum();
        let c = sw - sw2x2 / sxx;
        if c > 0.0 {
            ((q - (n - 1) as f64) / c).max(0.0)
        } else {
            0.0
        }
    } else {
        0.0
    };
    let ws: Vec<f64> = v.iter().map(|v| 1.0 / (v + tau2)).collect();
    let (b, sxx_s) = slope(&ws);
    let se_re = (1.0 / sxx_s).sqrt();
    let q = if n >= 2 {
        (0..n)
            .map(|i| ws[i] * (y[i] - b * x[i]).powi(2))
            .sum::<f64>()
            / (n - 1) as f64
    } else {
        0.0
    };
    let (se, df) = if tau2 > 0.0 || q > 1.0 {
        (se_re * q.max(1.0).sqrt(), (n - 1) as f64)
    } else {
        // Satterthwaite: b = sum c_i y_i, var = sum c_i^2 v_i.
        let parts: Vec<f64> = (0..n)
            .map(|i| (ws[i] * x[i] / sxx_s).powi(2) * v[i])
            .collect();
        let num = parts.iter().sum::<f64>().powi(2);
        let den: f64 = (0..n).map(|i| parts[i] * parts[i] / own_df[i]).sum();
        (se_re, if den > 0.0 { num / den } else { own_df[0] })
    };
    let h = t_crit95(df) * se;
    Some(ClassFit {
        class,
        points: n,
        cost_ns: Estimate {
            value: b,
            lo: b - h,
            hi: b + h,
            se,
            n,
        },
        df,
        tau2,
        p: t_sf(b / se, df),
        p_holm: f64::NAN,
    })
}

/// Holm's step-down adjustment of the classes' p values, in place.
fn holm(fits: &mut [ClassFit]) {
    let k = fits.len();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&i, &j| fits[i].p.total_cmp(&fits[j].p));
    let mut running = 0.0_f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((k - rank) as f64 * fits[i].p).min(1.0));
        fits[i].p_holm = running;
    }
}

/// The two-sided p that two classes' slopes differ (t on the smaller df).
fn heterogeneity(a: &ClassFit, b: &ClassFit) -> f64 {
    let d = a.cost_ns.value - b.cost_ns.value;
    let se = a.cost_ns.se.hypot(b.cost_ns.se);
    2.0 * t_sf(d.abs() / se, a.df.min(b.df))
}

/// The outside term from the class fits: none unless one resolves.
fn outside_term(fits: &[ClassFit], heterogeneous: bool) -> Option<OutsideTerm> {
    let resolved: Vec<&ClassFit> = fits.iter().filter(|f| f.resolved()).collect();
    if resolved.is_empty() {
        return None;
    }
    if heterogeneous {
        let f = resolved
            .iter()
            .max_by(|a, b| a.cost_ns.hi.total_cmp(&b.cost_ns.hi))?;
        return Some(OutsideTerm {
            cost_ns: f.cost_ns,
            reading: Reading::Conservative,
        });
    }
    let wsum: f64 = fits
        .iter()
        .map(|f| 1.0 / (f.cost_ns.se * f.cost_ns.se))
        .sum();
    let value = fits
        .iter()
        .map(|f| f.cost_ns.value / (f.cost_ns.se * f.cost_ns.se))
        .sum::<f64>()
        / wsum;
    let se = (1.0 / wsum).sqrt();
    // Satterthwaite over the classes: a class that carries no weight
    // brings none of its degrees of freedom either.
    let parts: Vec<(f64, f64)> = fits
        .iter()
        .map(|f| ((1.0 / (f.cost_ns.se * f.cost_ns.se)) / wsum, f))
        .map(|(c, f)| (c * c * f.cost_ns.se * f.cost_ns.se, f.df))
        .collect();
    let num = parts.iter().map(|p| p.0).sum::<f64>().powi(2);
    let den: f64 = parts.iter().map(|(v, d)| v * v / d).sum();
    let df = num / den;
    let h = t_crit95(df) * se;
    Some(OutsideTerm {
        cost_ns: Estimate {
            value,
            lo: value - h,
            hi: value + h,
            se,
            n: fits.iter().map(|f| f.points).sum(),
        },
        reading: Reading::Pooled,
    })
}

impl LossModel {
    /// Fit the model on a set's tables: the gaps design's per-sample
    /// table, Table 2's loss rows and the split design's rows
    /// ([`crate::recommend::loss_model`] takes them from the findings);
    /// Err(why) without a gaps term (None: no gaps design at all).
    pub fn fit(
        per_sample: Option<&PerSample>,
        loss: &[LossRow],
        split: &[SplitRow],
    ) -> Result<Self, Option<String>> {
        let rows = gaps_rows(per_sample)?;
        let runs: &[RunCost] = per_sample.map_or(&[], |p| &p.run_costs);
        let (gaps, gaps_mean): (Vec<CostPoint>, Vec<Estimate>) =
            rows.iter().map(|r| gaps_point(r, runs)).unzip();
        let means: Vec<(u64, Estimate)> = gaps
            .iter()
            .zip(&gaps_mean)
            .map(|(p, m)| (p.freq_hz, *m))
            .collect();
        let evidence = evidence::collect(per_sample, loss, split, &means);
        let mut fits: Vec<ClassFit> = [Class::WithinRuns, Class::BetweenRuns]
            .into_iter()
            .filter_map(|class| {
                let pts: Vec<&Evidence> = evidence.iter().filter(|e| e.class() == class).collect();
                fit_class(class, &pts)
            })
            .filter(|f| f.cost_ns.se.is_finite() && f.cost_ns.se > 0.0)
            .collect();
        holm(&mut fits);
        let heterogeneity_p = match fits.as_slice() {
            [a, b] => Some(heterogeneity(a, b)),
            _ => None,
        };
        let outside = outside_term(&fits, heterogeneity_p.is_some_and(|p| p < FAMILY_ALPHA));
        Ok(Self {
            gaps,
            gaps_mean,
            evidence,
            fits,
            heterogeneity_p,
            outside,
        })
    }

    /// Whether the classes disagree beyond their joint uncertainty.
    pub fn heterogeneous(&self) -> bool {
        self.heterogeneity_p.is_some_and(|p| p < FAMILY_ALPHA)
    }

    /// The gaps term alone, as a curve.
    pub fn gaps_curve(&self) -> CostCurve {
        CostCurve {
            points: self.gaps.clone(),
        }
    }

    /// The cost the model charges at each measured rate: the gaps term,
    /// with the outside term added where it is charged.
    pub fn curve(&self) -> CostCurve {
        let Some(o) = self.outside else {
            return self.gaps_curve();
        };
        let ho = o.cost_ns.half_width();
        let points = self
            .gaps
            .iter()
            .map(|p| {
                let c = p.cost_ns;
                let value = c.value + o.cost_ns.value;
                CostPoint {
                    freq_hz: p.freq_hz,
                    cost_ns: Estimate {
                        value,
                        lo: value - (c.value - c.lo).hypot(ho),
                        hi: value + (c.hi - c.value).hypot(ho),
                        se: c.se.hypot(o.cost_ns.se),
                        n: c.n,
                    },
                    source: CostSource::ModelOutside,
                }
            })
            .collect();
        CostCurve { points }
    }

    /// Each instrument's part: the gaps term, then each source of the
    /// outside term with its share of the estimate (by the information
    /// its points carry in their class's slope, times the class's share
    /// of the term).
    pub fn contributions(&self) -> Vec<Contribution> {
        let mut v = vec![Contribution {
            instrument: "gaps".to_string(),
            what: format!(
                "the cost per sample at {} (direct + after-effect, prediction interval over runs)",
                self.gaps
                    .iter()
                    .map(|p| format!("{} Hz {:.0} ns", p.freq_hz, p.cost_ns.value))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            points: self.gaps.len(),
            weight: 1.0,
        }];
        let class_share = |c: Class| -> f64 {
            let Some(f) = self.fits.iter().find(|f| f.class == c) else {
                return 0.0;
            };
            match self.outside.map(|o| o.reading) {
                Some(Reading::Conservative) => {
                    let chosen = self.outside.is_some_and(|o| o.cost_ns == f.cost_ns);
                    if chosen { 1.0 } else { 0.0 }
                }
                _ => {
                    let w: f64 = self.fits.iter().map(|g| g.cost_ns.se.powi(-2)).sum();
                    f.cost_ns.se.powi(-2) / w
                }
            }
        };
        for source in [
            Source::Paired,
            Source::Split,
            Source::SplitVsZero,
            Source::LongEpisodes,
        ] {
            let pts: Vec<&Evidence> = self
                .evidence
                .iter()
                .filter(|e| e.source == source)
                .collect();
            if pts.is_empty() {
                continue;
            }
            let class = source.class();
            let tau2 = self
                .fits
                .iter()
                .find(|f| f.class == class)
                .map_or(0.0, |f| f.tau2);
            let info = |e: &Evidence| (e.achieved_hz * 1e-7).powi(2) / (e.se_pct.powi(2) + tau2);
            let total: f64 = self
                .evidence
                .iter()
                .filter(|e| e.class() == class)
                .map(info)
                .sum();
            let own: f64 = pts.iter().map(|e| info(e)).sum();
            v.push(Contribution {
                instrument: match source {
                    Source::Paired => "paired",
                    Source::Split => "split",
                    Source::SplitVsZero => "split_vs_zero",
                    Source::LongEpisodes => "long_episodes",
                }
                .to_string(),
                what: format!(
                    "{} ({}): {}",
                    source.words(),
                    class.words(),
                    pts.iter()
                        .map(|e| format!(
                            "{} Hz {:+.3} % (se {:.3})",
                            e.freq_hz, e.excess_pct, e.se_pct
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                points: pts.len(),
                weight: if total > 0.0 {
                    own / total * class_share(class)
                } else {
                    0.0
                },
            });
        }
        v
    }

    /// The outside term in sentences: each class's slope and test, the
    /// heterogeneity, and what was charged.
    pub fn sentences(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.fits.is_empty() {
            v.push("No design measured the loss outside the gaps (no paired or split runs in the linear range): the model is the gaps term alone.".to_string());
            return v;
        }
        let k = self.fits.len();
        for f in &self.fits {
            let mut rates: Vec<u64> = self
                .evidence
                .iter()
                .filter(|e| e.class() == f.class)
                .map(|e| e.freq_hz)
                .collect();
            rates.sort_unstable();
            rates.dedup();
            v.push(format!(
                "Loss outside the gaps term, {}: {:.0} ns per sample [{:.0}, {:.0}] as {} (between-rate scatter tau^2 {:.3} pp^2, {:.1} degrees of freedom), one-sided p {:.3}, Holm-adjusted over {k} test{} {:.3}: {}.",
                f.class.words(),
                f.cost_ns.value,
                f.cost_ns.lo,
                f.cost_ns.hi,
                match (f.points, rates.len()) {
                    (1, _) => "its one rate's contrast against 0 Hz (one rate: the scatter between rates cannot be estimated)".to_string(),
                    (p, r) if p == r => format!("a slope through {r} rates"),
                    (p, r) => format!("a slope through {p} points at {r} rates"),
                },
                f.tau2,
                f.df,
                f.p,
                if k == 1 { "" } else { "s" },
                f.p_holm,
                if f.resolved() {
                    "it grows with the rate"
                } else {
                    "no growth with the rate resolves"
                }
            ));
        }
        if let Some(p) = self.heterogeneity_p {
            v.push(if p < FAMILY_ALPHA {
                format!("HETEROGENEITY: the within-run and between-run slopes disagree beyond their joint uncertainty (p {p:.3}); the larger resolved one is charged (the conservative reading).")
            } else {
                format!("The within-run and between-run slopes agree (p {p:.3} that they differ).")
            });
        }
        v.push(match self.outside {
            Some(o) => format!(
                "Charged at every rate: {:.0} ns [{:.0}, {:.0}] per sample outside the gaps ({}).",
                o.cost_ns.value,
                o.cost_ns.lo,
                o.cost_ns.hi,
                match o.reading {
                    Reading::Pooled => "the classes pooled by inverse variance",
                    Reading::Conservative => "the larger resolved class",
                }
            ),
            None => "Not charged: no class's slope resolves above 0 with the family of tests held at 5 %.".to_string(),
        });
        v
    }
}
