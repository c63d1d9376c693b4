//! The latency model at any rate and request size, for the answer box and
//! `analysis recommend --latency-budget`: each block's 0 Hz run with the
//! samples of a rate, their costs those measured at the nearest rate.

use std::collections::BTreeMap;

use super::model::{MODEL_REQUESTS, Timing, predict, thinned};
use super::{LostTime, measure, spans};
use crate::load::gaps::GapsRun;
use crate::stats::{Estimate, quantile_sorted, t_interval};

/// One run's block and what each of its samples cost, ns.
type BlockCosts = (u32, Vec<f64>);

/// What the model needs from a set's gaps runs.
#[derive(Debug, Clone, Default)]
pub struct Model {
    /// Each block's first 0 Hz run: its lost time and where it is whole.
    zero: Vec<ZeroRun>,
    /// Each measured rate (Hz requested) and its runs: block and
    /// per-sample costs, ns.
    rates: BTreeMap<u64, Vec<BlockCosts>>,
    /// The loop's stamp period (its chunk at calibration), ns, the longest
    /// over the 0 Hz runs: no request is shorter.
    pub stamp_ns: f64,
    /// The shortest 0 Hz run's window, ns: no request is longer.
    pub window_ns: u64,
}

#[derive(Debug, Clone)]
struct ZeroRun {
    run_id: u32,
    block: u32,
    lost: LostTime,
    spans: Vec<(u64, u64)>,
}

impl Model {
    /// The model of `runs`; `costs`: each run at a rate's (rate, block,
    /// what each of its samples cost).
    pub fn of<'a>(runs: &[GapsRun], costs: impl Iterator<Item = (u64, u32, &'a [f64])>) -> Self {
        let mut zero: Vec<ZeroRun> = Vec::new();
        for r in runs.iter().filter(|r| r.row.freq_hz == 0) {
            if zero.iter().any(|z| z.block == r.block) {
                continue;
            }
            zero.push(ZeroRun {
                run_id: r.row.run_id,
                block: r.block,
                lost: LostTime::new(&r.episodes),
                spans: spans(r.window(), r.keep_every),
            });
        }
        let costs = costs.filter(|(f, _, c)| *f > 0 && !c.is_empty());
        let rates = crate::stats::grouped(costs.map(|(f, block, c)| (f, (block, c.to_vec()))));
        let zero_runs = || runs.iter().filter(|r| r.row.freq_hz == 0);
        Model {
            zero,
            rates,
            stamp_ns: zero_runs()
                .map(|r| r.row.stamp_chunk_ns)
                .filter(|x| x.is_finite())
                .fold(0.0, f64::max),
            window_ns: zero_runs()
                .map(|r| r.row.loop_end_ns.saturating_sub(r.row.loop_start_ns))
                .min()
                .unwrap_or(0),
        }
    }

    /// The measured rate whose costs stand for `rate_hz`: the nearest on
    /// a log scale.
    pub fn basis_hz(&self, rate_hz: f64) -> Option<u64> {
        let d = |f: u64| (f as f64).ln() - rate_hz.max(1e-9).ln();
        self.rates
            .keys()
            .copied()
            .min_by(|&a, &b| d(a).abs().total_cmp(&d(b).abs()))
    }

    /// The 0 Hz requests of `size_ns` of every block that resolves the
    /// `p`-th percentile, ready for [`AtSize::added`] at many rates.
    pub fn at_size(&self, size_ns: u64, p: f64) -> AtSize<'_> {
        let blocks = self
            .zero
            .iter()
            .filter_map(|z| {
                let seed = (u64::from(z.run_id) << 16) ^ size_ns;
                let base = measure(&z.lost, &z.spans, &[], size_ns, seed, true);
                base.resolves(p).then(|| {
                    let b = thinned(&base.sorted_ns, MODEL_REQUESTS);
                    (z.block, seed, quantile_sorted(&b, p / 100.0), b)
                })
            })
            .collect();
        AtSize {
            model: self,
            p,
            blocks,
        }
    }

    /// Refuses a size the runs cannot hold (exit 2): shorter than the loop's
    /// stamp period or as long as the runs. `what` names the input in the
    /// message.
    pub fn check_size(&self, size_ns: u64, what: &str) -> Result<(), String> {
        let w = size_ns as f64;
        if w < self.stamp_ns {
            return Err(format!(
                "{what}: a {w:.0} ns request is shorter than the loop's stamp period ({:.0} ns), the finest time its timeline resolves; use a size of {:.0} ns or more",
                self.stamp_ns, self.stamp_ns
            ));
        }
        if self.window_ns > 0 && size_ns >= self.window_ns {
            return Err(format!(
                "{what}: a {:.3} s request is longer than the runs ({:.3} s); use a smaller size, or longer runs (driver sweep --duration)",
                w * 1e-9,
                self.window_ns as f64 * 1e-9
            ));
        }
        Ok(())
    }

    /// The highest measured rate, Hz.
    pub fn highest_hz(&self) -> Option<u64> {
        self.rates.keys().next_back().copied()
    }
}

/// One request size and percentile of a [`Model`].
#[derive(Debug)]
pub struct AtSize<'a> {
    model: &'a Model,
    p: f64,
    /// Per block that resolves it: block, seed, the 0 Hz percentile and
    /// the 0 Hz requests (sorted).
    blocks: Vec<(u32, u64, f64, Vec<f64>)>,
}

impl AtSize<'_> {
    /// Whether any block's 0 Hz run resolves the percentile.
    pub fn is_resolved(&self) -> bool {
        !self.blocks.is_empty()
    }

    /// The 0 Hz percentile, mean over blocks, ns.
    pub fn baseline_ns(&self) -> f64 {
        crate::stats::mean_of(self.blocks.iter().map(|b| b.2))
    }

    /// What sampling at `rate_hz` adds to the percentile, ns: per block,
    /// its 0 Hz run with periodic samples at `rate_hz` costing what the
    /// runs at [`Model::basis_hz`] measured in that block; t interval over
    /// blocks. None where no block's 0 Hz run resolves the percentile.
    pub fn added(&self, rate_hz: f64) -> Option<Estimate> {
        let basis = self.model.basis_hz(rate_hz)?;
        let runs = self.model.rates.get(&basis)?;
        let q = self.p / 100.0;
        let added: Vec<f64> = runs
            .iter()
            .filter_map(|(block, costs)| {
                let (_, seed, q0, base) = self.blocks.iter().find(|b| b.0 == *block)?;
                let (with, _) = predict(base, costs, rate_hz, Timing::Periodic, *seed);
                Some(quantile_sorted(&with, q) - q0)
            })
            .filter(|x| x.is_finite())
            .collect();
        (!added.is_empty()).then(|| t_interval(&added))
    }
}

/// The request the answer box speaks of: p99 of 1 ms of work.
pub const LINE_SIZE_NS: u64 = 1_000_000;
/// See [`LINE_SIZE_NS`].
pub const LINE_PERCENTILE: f64 = 99.0;

/// The answer box's latency line: what sampling at a rate adds to the p99
/// of a 1 ms request, predicted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyLine {
    pub rate_hz: u64,
    pub added: Estimate,
    /// The p99 at 0 Hz, ns.
    pub baseline_ns: f64,
}

impl Model {
    /// The line at `rate_hz` (None where the runs do not resolve it).
    pub fn line(&self, rate_hz: u64) -> Option<LatencyLine> {
        let at = self.at_size(LINE_SIZE_NS, LINE_PERCENTILE);
        let added = at.added(rate_hz as f64)?;
        Some(LatencyLine {
            rate_hz,
            added,
            baseline_ns: at.baseline_ns(),
        })
    }
}
