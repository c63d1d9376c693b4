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
//! resolves, and where both do, the one with the larger upper bound: the
//! conservative reading, one rule for every set. The classes are not
//! pooled, because they do not measure the same thing: a part that
//! outlasts a phase slows the off phases too and cancels within runs, so
//! the within-run class sees only part of what the between-run class
//! sees. Their difference (heterogeneity, a two-sided t test at 5 % on
//! the smaller degrees of freedom) is named in the report: such a part,
//! or a hog that inflates the between-run comparisons.
//!
//! The cost charged at a rate is the upper end of the model's 95 %
//! prediction for a next run: c's prediction half-width and o's interval
//! half-width added in quadrature above c + o.

use nalgebra::{DMatrix, DVector};
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::evidence::{self, Class, Evidence, Source};
use super::search::{CostCurve, CostPoint, CostSource};
use crate::percost::{PerSample, PerSampleRow, RunCost};
use crate::row_types::LossRow;
use crate::split::SplitRow;
use crate::stats::{Estimate, distinct_sorted, grouped, holm, t_crit95, t_interval, t_prediction};

/// The family-wise error rate of the outside term's tests.
pub const FAMILY_ALPHA: f64 = 0.05;

/// The smallest outside part worth charging, as a share of the total cost
/// per sample that the within-run designs measure (their throughput
/// loss's slope against the rate): each class is tested against this
/// margin, not against 0. Below it, the part is smaller than the gaps
/// term's own uncertainty (its prediction interval is wider than 5 %
/// wherever it was measured), and a 1 % bias of one dense rate (another
/// task's slices that samples join, the loop's speed measured outside
/// gaps that fill a quarter of the time) would resolve with thousands of
/// samples behind it.
pub const MATERIAL_SHARE: f64 = 0.05;

/// One class's slope: the outside cost per sample its points give.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ClassFit {
    pub class: Class,
    /// Rates (points) behind it.
    pub points: usize,
    /// Its sources with an intercept of their own (between runs: each
    /// source compared with the 0 Hz runs at three or more rates).
    pub intercepts: usize,
    /// The slope, ns per sample, with its 95 % t interval on `df`.
    pub cost_ns: Estimate,
    pub df: f64,
    /// The scatter between rates beyond the points' errors, pp^2.
    pub tau2: f64,
    /// One-sided p of o above the materiality margin
    /// ([`LossModel::material_ns`]), and Holm's adjusted p over the classes.
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
    /// One class resolved: its slope.
    OneClass,
    /// Both resolved: the one with the larger upper bound (the
    /// conservative reading).
    Larger,
}

/// The outside term charged: a cost per sample at every rate.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct OutsideTerm {
    /// ns per sample, 95 % interval.
    pub cost_ns: Estimate,
    /// The class it comes from.
    pub class: Class,
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
    /// The materiality margin, ns per sample: [`MATERIAL_SHARE`] of the
    /// within-run designs' total cost per sample (0 without them).
    pub material_ns: f64,
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

/// The design matrix of a class's points: the dose (achieved rate, in
/// units where loss % = dose x cost ns), and for the between-run class an
/// intercept per source with three or more rates. A between-run point is
/// a comparison against the same 0 Hz runs at every rate, so that
/// reference's own error is an offset common to all its rates, which a
/// slope through the origin would read as growth (a low 0 Hz mean makes
/// every rate's point positive). With its own intercept, only growth
/// across the rates counts.
fn design(class: Class, pts: &[&Evidence]) -> DMatrix<f64> {
    let mut sources: Vec<Source> = Vec::new();
    if class == Class::BetweenRuns {
        for s in [Source::SplitVsZero, Source::LongEpisodes] {
            if pts.iter().filter(|e| e.source == s).count() >= 3 {
                sources.push(s);
            }
        }
    }
    DMatrix::from_fn(pts.len(), 1 + sources.len(), |i, j| match j {
        0 => pts[i].achieved_hz * 1e-7,
        _ => f64::from(u8::from(pts[i].source == sources[j - 1])),
    })
}

/// Weighted least squares: the coefficients, (X' W X)^-1 and the weighted
/// residual sum of squares; None where X' W X is singular.
fn wls(
    x: &DMatrix<f64>,
    y: &DVector<f64>,
    w: &DVector<f64>,
) -> Option<(DVector<f64>, DMatrix<f64>, f64)> {
    let xtw = x.transpose() * DMatrix::from_diagonal(w);
    let inv = (&xtw * x).try_inverse()?;
    let b = &inv * (&xtw * y);
    let r = y - x * &b;
    let rss = (0..r.len()).map(|i| w[i] * r[i] * r[i]).sum();
    Some((b, inv, rss))
}

/// The class's random-effects slope, ns per sample (with the intercepts
/// of `design`: the dose, and an intercept per between-run source of three
/// or more rates); None without points.
///
/// Degrees of freedom: where the scatter between rates is estimated
/// (tau^2 above 0, or the residuals wider than the points' errors, the
/// Knapp-Hartung factor applied), n - p (p the coefficients); otherwise
/// the points' own errors carry the uncertainty, on their Satterthwaite
/// degrees of freedom (each point's runs or blocks less one). One rate:
/// the slope is its contrast against 0 Hz, on that point's own degrees of
/// freedom.
pub fn fit_class(class: Class, pts: &[&Evidence], margin_ns: f64) -> Option<ClassFit> {
    let n = pts.len();
    if n == 0 {
        return None;
    }
    let x = design(class, pts);
    let p = x.ncols();
    let y = DVector::from_iterator(n, pts.iter().map(|e| e.excess_pct));
    let v = DVector::from_iterator(n, pts.iter().map(|e| e.se_pct * e.se_pct));
    let own_df: Vec<f64> = pts.iter().map(|e| (e.n.max(2) - 1) as f64).collect();
    let w = v.map(|v| 1.0 / v);
    let (_, inv, q_fe) = wls(&x, &y, &w)?;
    let resid_df = n.saturating_sub(p);
    let tau2 = if resid_df >= 1 {
        // DerSimonian-Laird for a meta-regression:
        // c = tr(W) - tr((X'WX)^-1 X'W^2X).
        let w2 = w.map(|w| w * w);
        let xtw2x = x.transpose() * DMatrix::from_diagonal(&w2) * &x;
        let c = w.sum() - (&inv * xtw2x).trace();
        if c > 0.0 {
            ((q_fe - resid_df as f64) / c).max(0.0)
        } else {
            0.0
        }
    } else {
        0.0
    };
    let ws = v.map(|v| 1.0 / (v + tau2));
    let (b, inv_s, rss) = wls(&x, &y, &ws)?;
    let slope = b[0];
    let se_re = inv_s[(0, 0)].sqrt();
    let q = if resid_df >= 1 {
        rss / resid_df as f64
    } else {
        0.0
    };
    let (se, df) = if tau2 > 0.0 || q > 1.0 {
        (se_re * q.max(1.0).sqrt(), resid_df as f64)
    } else {
        // Satterthwaite: b = sum c_i y_i, var = sum c_i^2 v_i.
        let c = inv_s.row(0) * x.transpose() * DMatrix::from_diagonal(&ws);
        let parts: Vec<f64> = (0..n).map(|i| c[i] * c[i] * v[i]).collect();
        let num = parts.iter().sum::<f64>().powi(2);
        let den: f64 = (0..n).map(|i| parts[i] * parts[i] / own_df[i]).sum();
        (se_re, if den > 0.0 { num / den } else { own_df[0] })
    };
    let h = t_crit95(df) * se;
    Some(ClassFit {
        class,
        points: n,
        intercepts: p - 1,
        cost_ns: Estimate::around(slope, h, se, n),
        df,
        tau2,
        p: t_sf((slope - margin_ns) / se, df),
        p_holm: f64::NAN,
    })
}

/// The two-sided p that two classes' slopes differ (t on the smaller df).
fn heterogeneity(a: &ClassFit, b: &ClassFit) -> f64 {
    let d = a.cost_ns.value - b.cost_ns.value;
    let se = a.cost_ns.se.hypot(b.cost_ns.se);
    2.0 * t_sf(d.abs() / se, a.df.min(b.df))
}

/// The outside term from the class fits: none unless one resolves; the
/// resolved class with the larger upper bound where both do. The classes
/// are not pooled: the within-run class cannot see a part that outlasts a
/// phase (it slows the off phases too and cancels), so it measures part
/// of what the between-run class measures, and a pooled estimate would
/// lean on the precise class and miss the rest.
fn outside_term(fits: &[ClassFit]) -> Option<OutsideTerm> {
    let resolved: Vec<&ClassFit> = fits.iter().filter(|f| f.resolved()).collect();
    let f = resolved
        .iter()
        .max_by(|a, b| a.cost_ns.hi.total_cmp(&b.cost_ns.hi))?;
    Some(OutsideTerm {
        cost_ns: f.cost_ns,
        class: f.class,
        reading: if resolved.len() > 1 {
            Reading::Larger
        } else {
            Reading::OneClass
        },
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
        let evidence = evidence::collect(per_sample, loss, split, (&gaps, &gaps_mean));
        let material_ns = MATERIAL_SHARE * evidence::throughput_cost_ns(loss, split).unwrap_or(0.0);
        let by_class = grouped(evidence.iter().map(|e| (e.class(), e)));
        let mut fits: Vec<ClassFit> = by_class
            .iter()
            .filter_map(|(&class, pts)| fit_class(class, pts, material_ns))
            .filter(|f| f.cost_ns.se.is_finite() && f.cost_ns.se > 0.0)
            .collect();
        let p: Vec<f64> = fits.iter().map(|f| f.p).collect();
        for (f, p_holm) in fits.iter_mut().zip(holm(&p)) {
            f.p_holm = p_holm;
        }
        let heterogeneity_p = match fits.as_slice() {
            [a, b] => Some(heterogeneity(a, b)),
            _ => None,
        };
        let outside = outside_term(&fits);
        Ok(Self {
            gaps,
            gaps_mean,
            evidence,
            fits,
            heterogeneity_p,
            material_ns,
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
        let class_share =
            |c: Class| -> f64 { f64::from(u8::from(self.outside.is_some_and(|o| o.class == c))) };
        for (source, pts) in grouped(self.evidence.iter().map(|e| (e.source, e))) {
            let class = source.class();
            let fit = self.fits.iter().find(|f| f.class == class);
            let tau2 = fit.map_or(0.0, |f| f.tau2);
            let info = |e: &Evidence| (e.achieved_hz * 1e-7).powi(2) / (e.se_pct.powi(2) + tau2);
            let in_class = self.evidence.iter().filter(|e| e.class() == class);
            let total: f64 = in_class.map(info).sum();
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
            let in_class = self.evidence.iter().filter(|e| e.class() == f.class);
            let rates = distinct_sorted(in_class.map(|e| e.freq_hz));
            v.push(format!(
                "Loss outside the gaps term, {}: {:.0} ns per sample [{:.0}, {:.0}] as {} (between-rate scatter tau^2 {:.3} pp^2, {:.1} degrees of freedom), one-sided p {:.3} that it exceeds {:.0} ns, Holm-adjusted over {k} test{} {:.3}: {}.",
                f.class.words(),
                f.cost_ns.value,
                f.cost_ns.lo,
                f.cost_ns.hi,
                match (f.points, rates.len()) {
                    (1, _) => "its one rate's contrast against 0 Hz (one rate: the scatter between rates cannot be estimated)".to_string(),
                    (p, r) if p == r && f.intercepts == 0 => format!("a slope through {r} rates"),
                    (p, r) if f.intercepts == 0 => format!("a slope through {p} points at {r} rates"),
                    (p, r) => format!("a slope through {p} points at {r} rates, each 0 Hz comparison with its own intercept"),
                },
                f.tau2,
                f.df,
                f.p,
                self.material_ns,
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
                format!("HETEROGENEITY: the within-run and between-run slopes disagree beyond their joint uncertainty (p {p:.3}): a part that outlasts a phase (between runs only), or a hog that inflates the between-run comparisons; the rule is the same either way: the resolved class with the larger upper bound is charged.")
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
                    Reading::OneClass => format!("the {} class, the one that resolves", o.class.words()),
                    Reading::Larger => format!("the {} class: both resolve, and its upper bound is the larger", o.class.words()),
                }
            ),
            None => format!("Not charged: no class's slope resolves above the materiality margin ({:.0} ns, {:.0} % of the {:.0} ns per sample that the paired and split totals measure) with the family of tests held at 5 %.", self.material_ns, MATERIAL_SHARE * 100.0, self.material_ns / MATERIAL_SHARE),
        });
        v
    }
}
