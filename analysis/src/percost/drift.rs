//! The cost per sample over the sweep: each run's cost in the order the
//! sweep ran them, and how much it moved (docs/methodology.md, "The cost
//! over time"). A sweep sees the host in one state; this says how steady
//! that state was while it measured.

use std::collections::BTreeMap;

use super::{PerSampleRow, RunCost};
use crate::fit::ols_slope;
use crate::stats::{Estimate, grouped, mean};

/// How much the cost per sample moved during the sweep: each run's total
/// relative to the mean total at its rate, so rates compare.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CostDrift {
    /// Runs with a relative cost.
    pub runs: usize,
    /// From the first run's start to the last run's start, s.
    pub span_s: f64,
    /// The lowest and highest run, % above (+) or below (-) the mean at
    /// its rate.
    pub low_pct: f64,
    pub high_pct: f64,
    /// Mean relative cost per block, % from the mean at each rate, by
    /// block number.
    pub by_block_pct: Vec<(u32, f64)>,
    /// Least-squares trend of the relative cost against the time into the
    /// sweep, % per hour, with its 95 % interval (None below three runs or
    /// when all started at once).
    pub trend_pct_per_h: Option<Estimate>,
}

impl CostDrift {
    /// Whether the cost moved: a trend whose interval excludes 0, or a
    /// block whose mean is more than 25 % off.
    pub fn moved(&self) -> bool {
        self.trend_pct_per_h
            .is_some_and(|t| t.lo > 0.0 || t.hi < 0.0)
            || self.by_block_pct.iter().any(|(_, v)| v.abs() > 25.0)
    }
}

/// The drift of `costs` (sweep order) against each rate's mean total in
/// `rows`. None with fewer than two runs that have a finite cost at a rate
/// whose mean cost is positive.
pub fn cost_drift(costs: &[RunCost], rows: &[PerSampleRow]) -> Option<CostDrift> {
    let mean_at: BTreeMap<u64, f64> = rows
        .iter()
        .filter(|r| r.total_ns.value.is_finite() && r.total_ns.value > 0.0)
        .map(|r| (r.freq_hz, r.total_ns.value))
        .collect();
    let rel: Vec<(&RunCost, f64)> = costs
        .iter()
        .filter(|c| c.total_ns.is_finite())
        .filter_map(|c| {
            mean_at
                .get(&c.freq_hz)
                .map(|m| (c, (c.total_ns / m - 1.0) * 100.0))
        })
        .collect();
    if rel.len() < 2 {
        return None;
    }
    let t0 = rel.iter().map(|(c, _)| c.started_at_ns).min().unwrap_or(0);
    let hours: Vec<f64> = rel
        .iter()
        .map(|(c, _)| c.started_at_ns.saturating_sub(t0) as f64 / 3.6e12)
        .collect();
    let pct: Vec<f64> = rel.iter().map(|(_, v)| *v).collect();
    let blocks = grouped(rel.iter().map(|(c, v)| (c.block, *v)));
    Some(CostDrift {
        runs: rel.len(),
        span_s: hours.iter().copied().fold(0.0, f64::max) * 3600.0,
        low_pct: pct.iter().copied().fold(f64::INFINITY, f64::min),
        high_pct: pct.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        by_block_pct: blocks.into_iter().map(|(b, v)| (b, mean(&v))).collect(),
        trend_pct_per_h: ols_slope(&hours, &pct),
    })
}
