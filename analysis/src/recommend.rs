//! `analysis recommend DIR --budget 1%`: the highest sampling frequency
//! whose loss stays within a budget at the upper end of its 95 % interval.
//!
//! Two bases: the gaps design's per-sample cost model (`percost`) when it
//! exists and agrees with the paired throughput loss wherever that
//! resolves; otherwise the measured throughput loss (paired design where
//! present, else classic) and its fitted line.

use crate::error::AnalysisError;
use crate::percost::{Agreement, PerSampleRow, predicted_loss_pct};
use crate::tables::Analysis;

mod throughput;

use throughput::recommend_throughput;

/// `basis` of a recommendation from the gaps design.
pub const MODEL_BASIS: &str = "per-sample cost model (gaps design)";

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
    /// The reasoning, one sentence group per line.
    #[serde(rename = "reasons")]
    pub reasoning: Vec<String>,
}

impl Recommendation {
    /// A recommendation for `budget_pct` on `basis` that recommends nothing
    /// yet: resolvable, no rate, no prediction, no reasoning.
    fn nothing_yet(budget_pct: f64, basis: String) -> Self {
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
            reasoning: Vec::new(),
        }
    }

    /// One-line answer.
    pub fn headline(&self) -> String {
        match (self.suggested_hz, self.max_hz) {
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
            "--budget `{s}`: expected a loss budget in percent between 0 and 100, e.g. `--budget 1%`"
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

/// Recommend a rate for `budget_pct`: from the per-sample cost model when
/// it is usable ([`model_rows`]), else from the throughput loss, saying why.
pub fn recommend(a: &Analysis, budget_pct: f64) -> Result<Recommendation, AnalysisError> {
    match model_rows(a) {
        Ok(rows) => Ok(recommend_model(&rows, budget_pct)),
        Err(why) => match recommend_throughput(a, budget_pct) {
            Ok(mut rec) => {
                rec.reasoning.extend(why);
                Ok(rec)
            }
            Err(AnalysisError::Insufficient(e)) => Err(AnalysisError::Insufficient(match why {
                Some(w) => format!("{e}. {w}"),
                None => e,
            })),
            Err(e) => Err(e),
        },
    }
}

/// The model's rows with a total-cost interval, by frequency, when the
/// model may be used: it exists and agrees with the paired throughput loss
/// wherever that resolves. Err(why) otherwise (None: no gaps design here).
pub fn model_rows(a: &Analysis) -> Result<Vec<&PerSampleRow>, Option<String>> {
    let Some(ps) = &a.per_sample else {
        return Err(None);
    };
    let rows: Vec<&PerSampleRow> = ps
        .rows
        .iter()
        .filter(|r| r.total_ns.hi.is_finite() && r.total_ns.lo.is_finite())
        .collect();
    if rows.is_empty() {
        return Err(Some(
            "The per-sample cost model (gaps design) is not used: no frequency has a total cost \
             per sample with an interval (it needs 0 Hz gaps runs and two or more runs at a \
             frequency)."
                .to_string(),
        ));
    }
    let bad: Vec<String> = ps
        .rows
        .iter()
        .filter(|r| r.agreement == Some(Agreement::Disagree))
        .map(|r| r.freq_hz.to_string())
        .collect();
    if !bad.is_empty() {
        return Err(Some(format!(
            "The per-sample cost model (gaps design) is not used: its predicted loss disagrees \
             with the paired throughput loss at {} Hz.",
            bad.join(", ")
        )));
    }
    Ok(rows)
}

/// The conservative cost at a candidate rate: the largest total-cost upper
/// bound among measured frequencies <= `rate_hz` (the lowest frequency's
/// below it), and the row it comes from.
fn cost_at<'a>(rows: &[&'a PerSampleRow], rate_hz: f64) -> &'a PerSampleRow {
    let mut gov = rows[0];
    for r in rows.iter().filter(|r| r.freq_hz as f64 <= rate_hz) {
        if r.total_ns.hi > gov.total_ns.hi {
            gov = r;
        }
    }
    gov
}

/// The highest rate r <= the highest measured frequency with r x
/// `cost_at(r).hi` within the budget. The loss bound is non-decreasing in
/// r, so walk the segments between measured frequencies.
pub fn model_max_rate(rows: &[&PerSampleRow], budget_pct: f64) -> f64 {
    let last = rows.len() - 1;
    for k in 0..=last {
        let from = if k == 0 { 0.0 } else { rows[k].freq_hz as f64 };
        let c = cost_at(rows, rows[k].freq_hz as f64).total_ns.hi;
        // A cost bound <= 0 (noise around a free sample) limits nothing.
        let r_budget = if c > 0.0 {
            budget_pct / predicted_loss_pct(1.0, c)
        } else {
            f64::INFINITY
        };
        if r_budget < from {
            return from;
        }
        if k == last {
            return r_budget.min(rows[k].freq_hz as f64);
        }
        if r_budget < rows[k + 1].freq_hz as f64 {
            return r_budget;
        }
    }
    0.0
}

/// The prime the model suggests below `max_hz`. At a measured frequency
/// the cost may step up: a prime that lands on it must satisfy the budget
/// with that frequency's cost too.
fn model_suggestion(rows: &[&PerSampleRow], budget_pct: f64, max_hz: f64) -> Option<u64> {
    let within =
        |hz: u64| predicted_loss_pct(hz as f64, cost_at(rows, hz as f64).total_ns.hi) <= budget_pct;
    let mut suggested = nice_prime_below(max_hz);
    while let Some(p) = suggested.filter(|&p| !within(p)) {
        suggested = nice_prime_below((p - 1) as f64);
    }
    suggested
}

/// The model's first sentence at the suggested `rate`: the predicted loss
/// with the cost that governs it, and what lies outside the measured rates.
fn model_prediction_sentence(
    rows: &[&PerSampleRow],
    rate: u64,
    max_hz: f64,
    budget_pct: f64,
) -> String {
    let gov = cost_at(rows, rate as f64);
    let loss = |c: f64| predicted_loss_pct(rate as f64, c);
    let highest = rows[rows.len() - 1].freq_hz;
    let mut first = format!(
        "Predicted loss = rate x total cost per sample; at {rate} Hz with the cost measured at {} Hz, {:.0} ns [{:.0}, {:.0}] (the largest upper bound among measured rates <= {rate} Hz): {:.4}% [{:.4}, {:.4}], within the {budget_pct}% budget up to {max_hz:.0} Hz.",
        gov.freq_hz,
        gov.total_ns.value,
        gov.total_ns.lo,
        gov.total_ns.hi,
        loss(gov.total_ns.value),
        loss(gov.total_ns.lo),
        loss(gov.total_ns.hi)
    );
    if max_hz >= highest as f64 {
        first.push_str(&format!(
            " Every measured rate is within budget; rates above the highest measured, {highest} Hz, were not measured, so none is recommended."
        ));
    } else if (rate as f64) < rows[0].freq_hz as f64 {
        first.push_str(&format!(
            " {rate} Hz is below the lowest measured rate, {} Hz: its cost per sample is used, and the cost may be higher at lower rates (colder caches); measure there to confirm.",
            rows[0].freq_hz
        ));
    }
    first
}

/// The model's second sentence: the suggested `rate` and the paired
/// throughput losses the model agrees with.
fn model_basis_sentence(rows: &[&PerSampleRow], rate: u64, max_hz: f64) -> String {
    let checked: Vec<String> = rows
        .iter()
        .filter(|r| r.agreement == Some(Agreement::Agree))
        .map(|r| r.freq_hz.to_string())
        .collect();
    format!(
        "Suggested {rate} Hz: a prime just below {max_hz:.0} Hz (like perf's 97/997 Hz) so samples do not run in lock-step with periodic work; basis: {MODEL_BASIS}, {}.",
        if checked.is_empty() {
            "no paired throughput loss resolves to check it against".to_string()
        } else {
            format!(
                "which agrees with the paired throughput loss at {} Hz",
                checked.join(", ")
            )
        }
    )
}

/// The model basis: the highest rate within budget on the per-sample cost
/// `rows`, the prime suggested below it, and the loss predicted there.
fn recommend_model(rows: &[&PerSampleRow], budget_pct: f64) -> Recommendation {
    let max_hz = model_max_rate(rows, budget_pct);
    let suggested = model_suggestion(rows, budget_pct, max_hz);
    let measured = rows.iter().rev().find(|r| r.freq_hz as f64 <= max_hz);
    let mut rec = Recommendation {
        max_hz: Some(max_hz),
        interpolated: !rows.iter().any(|r| r.freq_hz as f64 == max_hz),
        measured_hz: measured.map(|r| r.freq_hz),
        measured_upper_pct: measured.map(|r| {
            predicted_loss_pct(
                r.freq_hz as f64,
                cost_at(rows, r.freq_hz as f64).total_ns.hi,
            )
        }),
        suggested_hz: suggested,
        rate_hz: suggested,
        ..Recommendation::nothing_yet(budget_pct, MODEL_BASIS.to_string())
    };
    let Some(rate) = suggested else {
        rec.reasoning = vec![format!(
            "Even 2 Hz would exceed the {budget_pct}% budget at the cost per sample measured at \
             {} Hz ({:.0} ns, 95% upper bound {:.0} ns).",
            rows[0].freq_hz, rows[0].total_ns.value, rows[0].total_ns.hi
        )];
        return rec;
    };
    let gov = cost_at(rows, rate as f64);
    let loss = |c: f64| predicted_loss_pct(rate as f64, c);
    rec.predicted_loss_pct = Some(loss(gov.total_ns.value));
    rec.predicted_loss_lo_pct = Some(loss(gov.total_ns.lo));
    rec.predicted_loss_hi_pct = Some(loss(gov.total_ns.hi));
    rec.reasoning = vec![
        model_prediction_sentence(rows, rate, max_hz, budget_pct),
        model_basis_sentence(rows, rate, max_hz),
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
