//! The one search: the highest rate whose predicted loss bound stays
//! within a budget on a curve of costs per sample, and the prime suggested
//! below it. The loss model ([`super::model`]) and the throughput basis
//! (`throughput.rs`) each give a curve; nothing else searches.

use super::recommendation::{PREDICTION_INTERVAL, Recommendation};
use crate::percost::predicted_loss_pct;
use crate::row_types::LossRow;
use crate::stats::{Estimate, positive_or};

/// Where a cost per sample on a curve comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CostSource {
    /// The loss model's gaps term: direct + after-effect, 95 % prediction
    /// interval over runs.
    Model,
    /// The gaps term with the model's outside term added
    /// ([`super::model::OutsideTerm`]).
    ModelOutside,
    /// The throughput loss (paired design where measured) over the
    /// achieved rate: a set with no gaps design.
    Throughput,
}

/// One cost per sample at a measured rate, ns.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CostPoint {
    pub freq_hz: u64,
    pub cost_ns: Estimate,
    pub source: CostSource,
}

impl CostPoint {
    /// The cost per sample a loss row implies: loss % / (achieved rate x
    /// 1e-7) ns, interval scaled alike. None without a positive achieved
    /// rate.
    pub fn throughput(l: &LossRow) -> Option<Self> {
        let rate = positive_or(l.achieved_hz, l.freq_hz as f64);
        if rate.is_nan() || rate <= 0.0 {
            return None;
        }
        let k = 1.0 / predicted_loss_pct(rate, 1.0);
        Some(Self {
            freq_hz: l.freq_hz,
            cost_ns: l.trusted().scaled(k),
            source: CostSource::Throughput,
        })
    }
}

/// Costs per sample by measured rate, ascending; not empty.
#[derive(Debug, Clone)]
pub struct CostCurve {
    pub points: Vec<CostPoint>,
}

impl CostCurve {
    /// The cost charged at `rate_hz`: the largest upper bound among the
    /// measured rates <= `rate_hz` (the lowest rate's below it: costs per
    /// sample are higher at low rates, so a cost measured at a higher rate
    /// is not used for a lower one).
    pub fn at(&self, rate_hz: f64) -> CostPoint {
        let mut gov = self.points[0];
        for p in self.points.iter().filter(|p| p.freq_hz as f64 <= rate_hz) {
            if p.cost_ns.hi > gov.cost_ns.hi {
                gov = *p;
            }
        }
        gov
    }

    /// Whether the loss bound at `hz` (rate x the cost's upper bound) is
    /// within `budget_pct`.
    pub fn within(&self, hz: f64, budget_pct: f64) -> bool {
        predicted_loss_pct(hz, self.at(hz).cost_ns.hi) <= budget_pct
    }

    /// The highest rate r <= the highest measured frequency with r x
    /// `at(r).hi` within the budget. The loss bound is non-decreasing in
    /// r, so walk the segments between measured frequencies.
    pub fn max_rate(&self, budget_pct: f64) -> f64 {
        let pts = &self.points;
        let last = pts.len() - 1;
        for k in 0..=last {
            let from = if k == 0 { 0.0 } else { pts[k].freq_hz as f64 };
            let c = self.at(pts[k].freq_hz as f64).cost_ns.hi;
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
                return r_budget.min(pts[k].freq_hz as f64);
            }
            if r_budget < pts[k + 1].freq_hz as f64 {
                return r_budget;
            }
        }
        0.0
    }

    /// The highest measured frequency.
    pub fn highest_hz(&self) -> u64 {
        self.points[self.points.len() - 1].freq_hz
    }
}

fn is_prime(n: u64) -> bool {
    n >= 2
        && (2..)
            .take_while(|d| d * d <= n)
            .all(|d| !n.is_multiple_of(d))
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

/// The prime suggested below `max_hz`: the first of [`nice_prime_below`]'s
/// primes downwards at which `within` holds. At a measured frequency the
/// cost may step up: a prime that lands on it must satisfy the budget with
/// that frequency's cost too.
pub(super) fn prime_within(max_hz: f64, within: impl Fn(f64) -> bool) -> Option<u64> {
    let below = |&p: &u64| nice_prime_below((p - 1) as f64);
    std::iter::successors(nice_prime_below(max_hz), below).find(|&p| within(p as f64))
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
        CostSource::ModelOutside => {
            "cost per sample of the loss model: the gaps' total (95% prediction interval over runs) plus the loss outside the gaps per sample (its 95% interval), the two widths added in quadrature"
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

/// The recommendation on `curve`: the highest rate within budget, the
/// prime below it and the loss predicted there, with `basis`.
pub(super) fn search(curve: &CostCurve, budget_pct: f64, basis: &str) -> Recommendation {
    let max_hz = curve.max_rate(budget_pct);
    let suggested = prime_within(max_hz, |hz| curve.within(hz, budget_pct));
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
}
