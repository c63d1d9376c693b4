//! `analysis recommend DIR --budget 1%`: the highest sampling frequency
//! whose loss stays within a budget at the upper end of its 95 % interval.
//!
//! Two bases: the gaps design's per-sample cost model (`percost`) when it
//! exists and agrees with the paired throughput loss wherever that
//! resolves; otherwise the measured throughput loss (paired design where
//! present, else classic) and its fitted line.

use results_format::summary::SUMMARY_BUDGETS;

use crate::error::AnalysisError;
use crate::findings::Findings;
use crate::percost::{Agreement, PerSampleRow, predicted_loss_pct};

pub mod curve;
mod fallback;
pub mod outside;
pub mod recommendation;
mod throughput;

pub use curve::{CostCurve, CostPoint, CostSource};
pub use fallback::{BOUND_BASIS, CONSERVATIVE_BASIS};
use fallback::{conservative, without_model};
pub use recommendation::{Budgeted, MEAN_INTERVAL, PREDICTION_INTERVAL, Recommendation};
use throughput::recommend_throughput;

/// `basis` of a recommendation from the gaps design.
pub const MODEL_BASIS: &str = "per-sample cost model (gaps design)";

/// Budget used in the report's summary.
pub const DEFAULT_BUDGET_PCT: f64 = 1.0;

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

/// The highest rate a suggestion starts from, Hz: 100 times the kernel's
/// default ceiling (perf_event_max_sample_rate, 100 kHz). A cost per
/// sample near 0 (a degenerate set) puts a budget's rate near 1e19 Hz, and
/// trial division near there takes seconds per prime: a generated case of
/// analysis/tests/all/degenerate.rs spent minutes here.
pub const MAX_SUGGESTED_HZ: f64 = 1e7;

/// The largest prime <= `hz` (at most [`MAX_SUGGESTED_HZ`]) rounded down to
/// two significant figures (1000 -> 997, 100 -> 97, 4000 -> 3989):
/// profilers use such rates so that sampling does not fall into lock-step
/// with periodic work.
pub fn nice_prime_below(hz: f64) -> Option<u64> {
    if hz.is_nan() || hz < 2.0 {
        return None;
    }
    let hz = hz.min(MAX_SUGGESTED_HZ);
    // Tolerate bisection round-off just below a round number.
    let h = (hz + 1e-6).floor() as u64;
    let digits = h.to_string().len() as u32;
    let scale = 10u64.pow(digits.saturating_sub(2));
    let nice = (h / scale) * scale;
    (2..=nice).rev().find(|&n| is_prime(n))
}

/// The loss budgets every report answers, %: the summary's
/// ([`SUMMARY_BUDGETS`], whose budget columns the same answers fill).
pub const BUDGETS_PCT: [f64; 3] = [
    SUMMARY_BUDGETS[0].0,
    SUMMARY_BUDGETS[1].0,
    SUMMARY_BUDGETS[2].0,
];

/// A report's recommendations: [`recommend`] at each of [`BUDGETS_PCT`],
/// worked out once by the pipeline ([`Findings::budgets`]) for the answer
/// box, the budget plot, report.md, the summary and `compare`; none for a
/// `--profiler` set, whose table answers instead
/// ([`crate::subject::profiler::recommend`]).
pub fn at_report_budgets(a: &Findings) -> Vec<Budgeted> {
    if a.subject.profiler.is_some() {
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
pub fn recommend(a: &Findings, budget_pct: f64) -> Result<Recommendation, AnalysisError> {
    Ok(outside::charge(
        a,
        recommend_on_bases(a, budget_pct)?,
        budget_pct,
    ))
}

/// [`recommend`] before the loss outside the gaps is charged.
fn recommend_on_bases(a: &Findings, budget_pct: f64) -> Result<Recommendation, AnalysisError> {
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
/// implies where the model under-predicts it (the conservative branch) or
/// to the split design's where its loss outside the gaps resolves
/// ([`outside`]).
/// None without a model.
pub fn charged_curve(a: &Findings) -> Option<CostCurve> {
    let rows = model_rows(a).ok()?;
    let floor = [
        fallback::throughput_floor(a, &disagreeing(&rows)),
        outside::outside_floor(a).map(|f| f.0),
    ]
    .into_iter()
    .flatten()
    .max_by(|x, y| x.cost_ns.hi.total_cmp(&y.cost_ns.hi));
    Some(CostCurve {
        floor,
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
pub fn model_rows(a: &Findings) -> Result<Vec<&PerSampleRow>, Option<String>> {
    let Some(ps) = &a.gaps.per_sample else {
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
        CostSource::Split => {
            "cost per sample implied by the split design's loss in and outside the gaps (loss / achieved rate, the two parts' 95% intervals over runs added)"
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
        assert_eq!(nice_prime_below(1e300), Some(9_999_991));
        assert_eq!(nice_prime_below(f64::INFINITY), Some(9_999_991));
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
