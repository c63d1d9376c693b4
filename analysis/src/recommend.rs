//! `analysis recommend DIR --budget 1%`: the highest sampling frequency
//! whose loss stays within a budget at the upper end of its 95 % interval.
//!
//! Two bases: the gaps design's per-sample cost model (`percost`) when it
//! exists and agrees with the paired throughput loss wherever that
//! resolves; otherwise the measured throughput loss (paired design where
//! present, else classic) and its fitted line.

use crate::error::AnalysisError;
use crate::percost::{Agreement, PerSampleRow, predicted_loss_pct};
use crate::stats::Estimate;
use crate::tables::Analysis;

mod curve;
mod fallback;
mod throughput;

pub use curve::{CostCurve, CostPoint, CostSource};
pub use fallback::{BOUND_BASIS, CONSERVATIVE_BASIS};
use fallback::{conservative, without_model};
use throughput::recommend_throughput;

/// `basis` of a recommendation from the gaps design.
pub const MODEL_BASIS: &str = "per-sample cost model (gaps design)";

/// `interval` of a recommendation whose costs are per-run predictions.
pub const PREDICTION_INTERVAL: &str =
    "95% prediction interval over runs (the next run's cost), upper end";
/// `interval` of a recommendation from throughput loss intervals.
pub const MEAN_INTERVAL: &str = "95% interval of the mean loss over runs, upper end";

/// Budget used in the report's summary.
pub const DEFAULT_BUDGET_PCT: f64 = 1.0;

/// A recommendation and its reasoning.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Recommendation {
    pub budget_pct: f64,
    /// Highest frequency (Hz) within budget; None when no measured rate is.
    pub max_hz: Option<f64>,
    /// Whether `max_hz` lies between measured frequencies, read off the
    /// fitted loss line's upper 95 % band.
    pub interpolated: bool,
    /// Highest measured frequency within budget.
    pub measured_hz: Option<u64>,
    /// Loss upper bound (%) at `measured_hz`.
    pub measured_upper_pct: Option<f64>,
    /// A prime just below max_hz (rounded to 2 significant figures).
    pub suggested_hz: Option<u64>,
    /// False when the data cannot resolve the budget (interval too wide).
    pub resolvable: bool,
    /// The rate recommended (`suggested_hz`), Hz.
    pub rate_hz: Option<u64>,
    /// Loss predicted at `rate_hz`, %, with its 95 % interval.
    pub predicted_loss_pct: Option<f64>,
    pub predicted_loss_lo_pct: Option<f64>,
    pub predicted_loss_hi_pct: Option<f64>,
    /// What the answer rests on: [`MODEL_BASIS`] or the throughput loss.
    pub basis: String,
    /// Which interval the answer's bounds are: [`PREDICTION_INTERVAL`] or
    /// [`MEAN_INTERVAL`].
    pub interval: String,
    /// True when the model and the throughput loss disagree and the more
    /// conservative of the two decided.
    pub conservative: bool,
    /// True when nothing resolves and the answer is the range of rates
    /// within budget from upper bounds alone.
    pub bound_only: bool,
    /// The model's cost per sample that governs the rate (prediction
    /// interval over runs), ns, where a model exists.
    pub model_cost_ns: Option<Estimate>,
    /// The cost per sample the paired throughput loss implies (loss /
    /// achieved rate), ns, where it was charged.
    pub throughput_cost_ns: Option<Estimate>,
    /// True when every measured rate is within budget, so the answer is
    /// the highest measured rate (rates above it were not measured): the
    /// budget allows at least this much.
    pub at_highest_measured: bool,
    /// The rate each basis alone would recommend, Hz.
    pub model_rate_hz: Option<u64>,
    pub throughput_rate_hz: Option<u64>,
    /// The reasoning, one sentence group per line.
    #[serde(rename = "reasons")]
    pub reasoning: Vec<String>,
}

impl Recommendation {
    /// A recommendation for `budget_pct` on `basis` that recommends nothing
    /// yet: resolvable, no rate, no prediction, no reasoning.
    pub(crate) fn nothing_yet(budget_pct: f64, basis: String) -> Self {
        Self {
            budget_pct,
            max_hz: None,
            interpolated: false,
            measured_hz: None,
            measured_upper_pct: None,
            suggested_hz: None,
            resolvable: true,
            rate_hz: None,
            predicted_loss_pct: None,
            predicted_loss_lo_pct: None,
            predicted_loss_hi_pct: None,
            basis,
            interval: MEAN_INTERVAL.to_string(),
            conservative: false,
            bound_only: false,
            at_highest_measured: false,
            model_cost_ns: None,
            throughput_cost_ns: None,
            model_rate_hz: None,
            throughput_rate_hz: None,
            reasoning: Vec::new(),
        }
    }

    /// One-line answer.
    pub fn headline(&self) -> String {
        match (self.suggested_hz, self.max_hz) {
            (Some(s), Some(m)) if self.bound_only => format!(
                "sample at {s} Hz or less: from the loss upper bounds alone, every rate up to {m:.0} Hz is within budget"
            ),
            (Some(s), Some(m)) if self.conservative => format!(
                "sample at {s} Hz (conservative: model and throughput disagree; highest rate within budget: {m:.0} Hz)"
            ),
            (Some(s), Some(m)) => {
                format!("sample at {s} Hz (highest rate within budget: {m:.0} Hz)")
            }
            (None, Some(m)) => format!("highest rate within budget: {m:.0} Hz"),
            _ if !self.resolvable => {
                "budget below what the data can resolve; no rate recommended".to_string()
            }
            _ => "no measured rate stays within the budget".to_string(),
        }
    }
}

/// Parse `1%`, `1`, `0.5 %` as a budget in percent.
pub fn parse_budget(s: &str) -> Result<f64, AnalysisError> {
    let t = s.trim().trim_end_matches('%').trim();
    match t.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 100.0 && v.is_finite() => Ok(v),
        _ => Err(AnalysisError::Invalid(format!(
            "--budget `{s}`: expected a loss budget in percent, above 0 and below 100, e.g. `--budget 1%`"
        ))),
    }
}

fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    let mut d = 2;
    while d * d <= n {
        if n.is_multiple_of(d) {
            return false;
        }
        d += 1;
    }
    true
}

/// The largest prime <= `hz` rounded down to two significant figures
/// (1000 -> 997, 100 -> 97, 4000 -> 3989): profilers use such rates so that
/// sampling does not fall into lock-step with periodic work.
pub fn nice_prime_below(hz: f64) -> Option<u64> {
    if hz.is_nan() || hz < 2.0 {
        return None;
    }
    // Tolerate bisection round-off just below a round number.
    let h = (hz + 1e-6).floor() as u64;
    let digits = h.to_string().len() as u32;
    let scale = 10u64.pow(digits.saturating_sub(2));
    let nice = (h / scale) * scale;
    (2..=nice).rev().find(|&n| is_prime(n))
}

/// The loss budgets every report answers, %.
pub const BUDGETS_PCT: [f64; 3] = [0.1, 1.0, 5.0];

/// A budget, %, and its recommendation.
pub type Budgeted = (f64, Result<Recommendation, AnalysisError>);

/// A report's recommendations: [`recommend`] at each of [`BUDGETS_PCT`],
/// worked out once for the answer box, the budget plot and report.md;
/// none for a `--profiler` set, whose table answers instead
/// ([`crate::subject::profiler::recommend`]).
pub fn at_report_budgets(a: &Analysis) -> Vec<Budgeted> {
    if a.profiler.is_some() {
        return Vec::new();
    }
    BUDGETS_PCT.iter().map(|&b| (b, recommend(a, b))).collect()
}

/// Recommend a rate for `budget_pct`.
///
/// - The per-sample cost model where it exists ([`model_rows`]), its cost
///   taken at the upper end of the 95 % prediction interval over runs.
/// - Where its prediction disagrees with a paired throughput loss that
///   resolves, the conservative branch: at every rate the larger of the
///   model's cost and the cost per sample that throughput loss implies,
///   and never above the throughput basis' own answer; both are shown.
/// - Without a model, the throughput loss; where that resolves nothing,
///   the range certainly within budget from the loss upper bounds.
pub fn recommend(a: &Analysis, budget_pct: f64) -> Result<Recommendation, AnalysisError> {
    let throughput = recommend_throughput(a, budget_pct);
    let rows = match model_rows(a) {
        Ok(rows) => rows,
        Err(why) => return without_model(a, budget_pct, throughput, why),
    };
    let model_curve = CostCurve::model(&rows);
    let disagree = disagreeing(&rows);
    if disagree.is_empty() {
        let mut rec = recommend_on(&model_curve, budget_pct, MODEL_BASIS);
        rec.reasoning.push(model_check_sentence(&rows));
        rec.model_rate_hz = rec.rate_hz;
        rec.throughput_rate_hz = throughput.ok().and_then(|t| t.rate_hz);
        return Ok(rec);
    }
    Ok(conservative(
        a,
        &model_curve,
        &disagree,
        throughput.ok(),
        budget_pct,
    ))
}

/// The model's rows that disagree with a resolving paired loss.
fn disagreeing<'a>(rows: &[&'a PerSampleRow]) -> Vec<&'a PerSampleRow> {
    rows.iter()
        .copied()
        .filter(|r| r.agreement == Some(Agreement::Disagree))
        .collect()
}

/// The cost per sample the recommendation charges at each rate
/// ([`CostCurve::at`]): the model's, raised to the cost the paired loss
/// implies where the model under-predicts it (the conservative branch).
/// None without a model.
pub fn charged_curve(a: &Analysis) -> Option<CostCurve> {
    let rows = model_rows(a).ok()?;
    Some(CostCurve {
        floor: fallback::throughput_floor(a, &disagreeing(&rows)),
        ..CostCurve::model(&rows)
    })
}

/// Whether the paired loss lies above the model's prediction (the model
/// under-predicts there).
pub fn under_predicts(r: &PerSampleRow) -> bool {
    r.paired_loss_pct
        .is_some_and(|p| p.value > r.predicted_loss_pct.value)
}

/// The model's rows with a total-cost prediction interval, by frequency,
/// when the model exists. Err(why) otherwise (None: no gaps design here).
pub fn model_rows(a: &Analysis) -> Result<Vec<&PerSampleRow>, Option<String>> {
    let Some(ps) = &a.per_sample else {
        return Err(None);
    };
    let rows: Vec<&PerSampleRow> = ps
        .rows
        .iter()
        .filter(|r| r.total_pred_ns.hi.is_finite() && r.total_pred_ns.lo.is_finite())
        .collect();
    if rows.is_empty() {
        return Err(Some(
            "The per-sample cost model (gaps design) is not used: no frequency has a total cost \
             per sample with an interval (it needs 0 Hz gaps runs and two or more runs at a \
             frequency)."
                .to_string(),
        ));
    }
    Ok(rows)
}

/// The highest rate within `budget_pct` on the model's cost `rows` alone
/// (upper ends of their prediction intervals); see [`CostCurve::max_rate`].
pub fn model_max_rate(rows: &[&PerSampleRow], budget_pct: f64) -> f64 {
    CostCurve::model(rows).max_rate(budget_pct)
}

/// The prime suggested below `max_hz` on `curve`. At a measured frequency
/// the cost may step up: a prime that lands on it must satisfy the budget
/// with that frequency's cost too.
fn suggestion(curve: &CostCurve, budget_pct: f64, max_hz: f64) -> Option<u64> {
    let mut suggested = nice_prime_below(max_hz);
    while let Some(p) = suggested.filter(|&p| !curve.within(p as f64, budget_pct)) {
        suggested = nice_prime_below((p - 1) as f64);
    }
    suggested
}

/// The first sentence at the suggested `rate`: the predicted loss with the
/// cost that governs it, and what lies outside the measured rates.
fn prediction_sentence(curve: &CostCurve, rate: u64, max_hz: f64, budget_pct: f64) -> String {
    let gov = curve.at(rate as f64);
    let c = gov.cost_ns;
    let loss = |c: f64| predicted_loss_pct(rate as f64, c);
    let highest = curve.highest_hz();
    let what = match gov.source {
        CostSource::Model => {
            "total cost per sample (95% prediction interval over runs: where the next run's cost lands, so the rate holds for the worst part of the sweep, not only its mean)"
        }
        CostSource::Throughput => {
            "cost per sample implied by the measured throughput loss (loss / achieved rate, 95% interval over runs)"
        }
    };
    let mut first = format!(
        "Predicted loss = rate x {what}; at {rate} Hz with the cost measured at {} Hz, {:.0} ns [{:.0}, {:.0}]: {:.4}% [{:.4}, {:.4}], within the {budget_pct}% budget up to {max_hz:.0} Hz.",
        gov.freq_hz,
        c.value,
        c.lo,
        c.hi,
        loss(c.value),
        loss(c.lo),
        loss(c.hi)
    );
    if curve.within(highest as f64, budget_pct) {
        first.push_str(&format!(
            " Every measured rate is within budget; rates above the highest measured, {highest} Hz, were not measured, so none above it is recommended: the budget allows at least this much."
        ));
    } else if (rate as f64) < curve.points[0].freq_hz as f64 {
        first.push_str(&format!(
            " {rate} Hz is below the lowest measured rate, {} Hz: its cost per sample is used, and the cost may be higher at lower rates (colder caches); measure there to confirm.",
            curve.points[0].freq_hz
        ));
    }
    first
}

/// What the model was checked against: the paired throughput losses it
/// agrees with, or none that resolves.
fn model_check_sentence(rows: &[&PerSampleRow]) -> String {
    let checked: Vec<String> = rows
        .iter()
        .filter(|r| r.agreement == Some(Agreement::Agree))
        .map(|r| r.freq_hz.to_string())
        .collect();
    if checked.is_empty() {
        "Basis: per-sample cost model (gaps design); no paired throughput loss resolves to check it against.".to_string()
    } else {
        format!(
            "Basis: per-sample cost model (gaps design), which agrees with the paired throughput loss at {} Hz.",
            checked.join(", ")
        )
    }
}

/// The recommendation on `curve`: the highest rate within budget, the
/// prime below it and the loss predicted there, with `basis`.
fn recommend_on(curve: &CostCurve, budget_pct: f64, basis: &str) -> Recommendation {
    let max_hz = curve.max_rate(budget_pct);
    let suggested = suggestion(curve, budget_pct, max_hz);
    let measured = curve
        .points
        .iter()
        .rev()
        .find(|p| p.freq_hz as f64 <= max_hz && curve.within(p.freq_hz as f64, budget_pct));
    let mut rec = Recommendation {
        max_hz: Some(max_hz),
        interpolated: !curve.points.iter().any(|p| p.freq_hz as f64 == max_hz),
        measured_hz: measured.map(|p| p.freq_hz),
        measured_upper_pct: measured
            .map(|p| predicted_loss_pct(p.freq_hz as f64, curve.at(p.freq_hz as f64).cost_ns.hi)),
        suggested_hz: suggested,
        rate_hz: suggested,
        interval: PREDICTION_INTERVAL.to_string(),
        at_highest_measured: curve.within(curve.highest_hz() as f64, budget_pct),
        ..Recommendation::nothing_yet(budget_pct, basis.to_string())
    };
    let Some(rate) = suggested else {
        let c = curve.at(0.0);
        rec.reasoning = vec![format!(
            "The highest rate within the {budget_pct}% budget is {} Hz, below 2 Hz, the \
             lowest rate suggested (the smallest prime), at the cost per sample measured at {} Hz \
             ({:.0} ns, 95% upper bound {:.0} ns).",
            if max_hz >= 0.01 {
                format!("{max_hz:.2}")
            } else {
                format!("{max_hz:.1e}")
            },
            c.freq_hz,
            c.cost_ns.value,
            c.cost_ns.hi
        )];
        return rec;
    };
    let gov = curve.at(rate as f64);
    let loss = |c: f64| predicted_loss_pct(rate as f64, c);
    rec.predicted_loss_pct = Some(loss(gov.cost_ns.value));
    rec.predicted_loss_lo_pct = Some(loss(gov.cost_ns.lo));
    rec.predicted_loss_hi_pct = Some(loss(gov.cost_ns.hi));
    rec.model_cost_ns = (curve.points[0].source == CostSource::Model).then(|| {
        CostCurve {
            points: curve.points.clone(),
            floor: None,
        }
        .at(rate as f64)
        .cost_ns
    });
    rec.throughput_cost_ns = curve.floor.map(|p| p.cost_ns);
    rec.reasoning = vec![
        prediction_sentence(curve, rate, max_hz, budget_pct),
        format!(
            "Suggested {rate} Hz: a prime just below {max_hz:.0} Hz (like perf's 97/997 Hz) so samples do not run in lock-step with periodic work."
        ),
    ];
    rec
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn primes() {
        assert_eq!(nice_prime_below(1000.0), Some(997));
        assert_eq!(nice_prime_below(100.0), Some(97));
        assert_eq!(nice_prime_below(4000.0), Some(3989));
        assert_eq!(nice_prime_below(3456.7), Some(3391));
        assert_eq!(nice_prime_below(1.0), None);
        assert_eq!(nice_prime_below(7199.999999999893), Some(7193));
    }

    #[test]
    fn budgets() {
        assert_eq!(parse_budget("1%").unwrap(), 1.0);
        assert_eq!(parse_budget(" 0.5 % ").unwrap(), 0.5);
        assert!(parse_budget("abc").is_err());
        assert!(parse_budget("0").is_err());
        assert!(parse_budget("150%").is_err());
    }
}
