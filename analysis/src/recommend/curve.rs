//! The cost per sample a recommendation charges at a candidate rate, from
//! measured points: the gaps design's total cost (its prediction interval
//! over runs) and, where the paired throughput loss resolves, the cost per
//! sample that loss implies (loss / achieved rate).

use crate::percost::{PerSampleRow, predicted_loss_pct};
use crate::row_types::LossRow;
use crate::stats::Estimate;

/// Where a cost per sample was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CostSource {
    /// The gaps design's per-sample model: direct + after-effect, 95 %
    /// prediction interval over runs.
    Model,
    /// The throughput loss (paired design where measured) over the
    /// achieved rate.
    Throughput,
    /// The split design's loss in and outside the gaps over the achieved
    /// rate, where its outside part resolves above 0
    /// ([`super::outside`]).
    Split,
}

/// One measured cost per sample, ns.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CostPoint {
    pub freq_hz: u64,
    pub cost_ns: Estimate,
    pub source: CostSource,
}

impl CostPoint {
    /// The model's point at one rate: its total with the prediction
    /// interval over runs.
    pub fn model(r: &PerSampleRow) -> Self {
        Self {
            freq_hz: r.freq_hz,
            cost_ns: r.total_pred_ns,
            source: CostSource::Model,
        }
    }

    /// The cost per sample a loss row implies: loss % / (achieved rate x
    /// 1e-7) ns, interval scaled alike. None without a positive achieved
    /// rate.
    pub fn throughput(l: &LossRow) -> Option<Self> {
        let rate = if l.achieved_hz > 0.0 {
            l.achieved_hz
        } else {
            l.freq_hz as f64
        };
        if rate.is_nan() || rate <= 0.0 {
            return None;
        }
        let k = 1.0 / predicted_loss_pct(rate, 1.0);
        let e = l.trusted();
        Some(Self {
            freq_hz: l.freq_hz,
            cost_ns: Estimate {
                value: e.value * k,
                lo: e.lo * k,
                hi: e.hi * k,
                se: e.se * k,
                n: e.n,
            },
            source: CostSource::Throughput,
        })
    }
}

/// Measured cost points by rate, and optionally a floor charged at every
/// rate (the conservative branch: a throughput-implied cost where the
/// model under-predicted).
#[derive(Debug, Clone)]
pub struct CostCurve {
    /// By frequency, ascending; not empty.
    pub points: Vec<CostPoint>,
    pub floor: Option<CostPoint>,
}

impl CostCurve {
    /// The model's curve: each rate's total cost with the prediction
    /// interval over runs, no floor. `rows` is not empty
    /// ([`super::model_rows`]).
    pub fn model(rows: &[&PerSampleRow]) -> Self {
        CostCurve {
            points: rows.iter().map(|r| CostPoint::model(r)).collect(),
            floor: None,
        }
    }

    /// The cost charged at `rate_hz`: the largest upper bound among the
    /// measured rates <= `rate_hz` (the lowest rate's below it: costs per
    /// sample are higher at low rates, so a cost measured at a higher rate
    /// is not used for a lower one), or the floor when that is larger.
    pub fn at(&self, rate_hz: f64) -> CostPoint {
        let mut gov = self.points[0];
        for p in self.points.iter().filter(|p| p.freq_hz as f64 <= rate_hz) {
            if p.cost_ns.hi > gov.cost_ns.hi {
                gov = *p;
            }
        }
        match self.floor {
            Some(f) if f.cost_ns.hi > gov.cost_ns.hi => f,
            _ => gov,
        }
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
