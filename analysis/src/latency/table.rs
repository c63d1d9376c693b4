//! The request-latency table: per rate, size and percentile, what sampling
//! adds to the elapsed time over the 0 Hz runs of the same blocks,
//! measured and predicted, each with a 95 % t interval over blocks.

use std::collections::BTreeMap;

use rayon::prelude::*;

use super::model::{MODEL_REQUESTS, Timing, predict, thinned};
use super::{LostTime, PERCENTILES, SIZES_NS, SizeLatency, measure, spans};
use crate::columns::{lo_hi_se, yes_no};
use crate::load::gaps::GapsRun;
use crate::stats::{Estimate, distinct_sorted, mean, mean_of, quantile_sorted, t_interval};

/// One gaps run's requests.
#[derive(Debug, Clone)]
pub struct RunLatency<'a> {
    pub run: &'a GapsRun,
    /// One per size of [`SIZES_NS`].
    pub sizes: Vec<SizeLatency>,
    /// What each sample cost: each matched episode under
    /// [`LONG_EPISODE_NS`](crate::load::gaps::LONG_EPISODE_NS) shared
    /// among the samples it holds, ns.
    pub costs_ns: Vec<f64>,
}

/// The request latency of a set's gaps runs: the table, each run's
/// requests (report/latency_runs.csv), and the model at any rate and size.
#[derive(Debug, Clone, Default)]
pub struct LatencyTable {
    pub rows: Vec<LatencyRow>,
    pub runs: Vec<LatencyRunRow>,
    pub model: super::at_rate::Model,
}

/// One run and request size (a row of report/latency_runs.csv).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct LatencyRunRow {
    pub run_id: u32,
    pub freq_hz: u64,
    pub block: u32,
    pub size: SizeLatency,
}

/// The latency of every gaps run in `runs` (sorted by run).
pub fn of_runs(runs: &[GapsRun]) -> LatencyTable {
    let measured: Vec<RunLatency> = runs.iter().map(of_run).collect();
    let rows = build(&measured);
    let costs = measured
        .iter()
        .map(|m| (m.run.row.freq_hz, m.run.block, m.costs_ns.as_slice()));
    let model = super::at_rate::Model::of(runs, costs);
    let mut out: Vec<LatencyRunRow> = measured
        .into_iter()
        .flat_map(|r| {
            r.sizes.into_iter().map(move |size| LatencyRunRow {
                run_id: r.run.row.run_id,
                freq_hz: r.run.row.freq_hz,
                block: r.run.block,
                size: SizeLatency {
                    sorted_ns: Vec::new(),
                    ..size
                },
            })
        })
        .collect();
    out.sort_by_key(|r| (r.run_id, r.size.size_ns));
    LatencyTable {
        rows,
        runs: out,
        model,
    }
}

/// The requests of `run` (its episodes, sample times and thinning).
pub fn of_run(run: &GapsRun) -> RunLatency<'_> {
    let lost = LostTime::new(&run.episodes);
    let sp = spans(run.window(), run.keep_every);
    let zero = run.row.freq_hz == 0;
    let sizes = SIZES_NS
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            let seed = (u64::from(run.row.run_id) << 8) | i as u64;
            measure(&lost, &sp, &run.sample_times_ns, w, seed, zero)
        })
        .collect();
    RunLatency {
        run,
        sizes,
        costs_ns: costs_of(run),
    }
}

/// What each of `run`'s samples cost: each matched episode under
/// [`LONG_EPISODE_NS`](crate::load::gaps::LONG_EPISODE_NS) shared among
/// the samples it holds ([`GapsRun::short_matched`]), ns.
pub fn costs_of(run: &GapsRun) -> Vec<f64> {
    let shared = |(e, k): (f64, u32)| std::iter::repeat_n(e / f64::from(k), k as usize);
    run.short_matched().flat_map(shared).collect()
}

/// One rate, size and percentile (a row of report/latency.csv).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct LatencyRow {
    pub freq_hz: u64,
    pub size_ns: u64,
    pub percentile: f64,
    /// Blocks behind the measured or the predicted time, the larger.
    pub blocks: usize,
    /// The 0 Hz runs' elapsed time at the percentile, mean over blocks, ns.
    pub baseline_ns: f64,
    /// Added over 0 Hz, measured, ns.
    #[serde(rename = "added_ns", serialize_with = "lo_hi_se")]
    pub measured: Estimate,
    /// Added over 0 Hz, predicted with periodic samples, ns.
    #[serde(rename = "predicted_ns", serialize_with = "lo_hi_se")]
    pub predicted: Estimate,
    /// The same with Poisson samples, ns.
    #[serde(rename = "poisson_ns", serialize_with = "lo_hi_se")]
    pub poisson: Estimate,
    /// Measured - predicted (periodic) per block, ns.
    #[serde(rename = "difference_ns", serialize_with = "lo_hi_se")]
    pub difference: Estimate,
    #[serde(serialize_with = "yes_no")]
    agrees: Option<bool>,
    /// Share of requests a sample fell in: measured, and predicted.
    pub hit_share: f64,
    pub hit_share_predicted: f64,
}

impl LatencyRow {
    /// Whether the measured and predicted added latency agree: the
    /// interval of their difference per block holds 0 (None without one).
    pub fn agrees(&self) -> Option<bool> {
        self.agrees
    }
}

/// The table from every gaps run's requests: blocks that hold a 0 Hz run
/// and a run at the rate, the rate runs of a block against its first 0 Hz
/// run.
pub fn build(runs: &[RunLatency<'_>]) -> Vec<LatencyRow> {
    let mut zero_by_block: BTreeMap<u32, &RunLatency> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.run.row.freq_hz == 0) {
        zero_by_block.entry(r.run.block).or_insert(r);
    }
    let freqs = distinct_sorted(runs.iter().map(|r| r.run.row.freq_hz).filter(|&f| f > 0));
    let mut rows = Vec::new();
    for f in freqs {
        let pairs: Vec<(&RunLatency, &RunLatency)> = runs
            .iter()
            .filter(|r| r.run.row.freq_hz == f)
            .filter_map(|r| zero_by_block.get(&r.run.block).map(|z| (*z, r)))
            .collect();
        for (si, &size) in SIZES_NS.iter().enumerate() {
            // The blocks in parallel: the model draws 20,000 requests each.
            // A block whose draw panicked is left out.
            let one = |(z, r): &(&RunLatency, &RunLatency)| {
                std::panic::catch_unwind(|| cell(z, r, si)).ok()
            };
            let cells: Vec<Cell> = pairs.par_iter().filter_map(one).collect();
            for (pi, &p) in PERCENTILES.iter().enumerate() {
                rows.push(row(f, size, p, pi, &cells));
            }
        }
    }
    rows
}

/// One block's pair at one size: the 0 Hz and rate runs' percentiles, the
/// added times predicted, and the hit shares.
struct Cell {
    zero: [f64; 3],
    rate: [f64; 3],
    periodic: [f64; 3],
    poisson: [f64; 3],
    hit: f64,
    hit_predicted: f64,
}

fn cell(zero: &RunLatency, run: &RunLatency, si: usize) -> Cell {
    let z = &zero.sizes[si];
    let r = &run.sizes[si];
    let seed = (u64::from(run.run.row.run_id) << 8) | si as u64;
    let (costs, rate_hz) = (&run.costs_ns, run.run.rate_hz());
    let base = thinned(&z.sorted_ns, MODEL_REQUESTS);
    let (periodic, hit_predicted) = predict(&base, costs, rate_hz, Timing::Periodic, seed);
    // Poisson timing only shows what periodic timing changes: a quarter of
    // the requests.
    let few = thinned(&z.sorted_ns, MODEL_REQUESTS / 4);
    let (poisson, _) = predict(&few, costs, rate_hz, Timing::Poisson, seed);
    // The model's percentiles where the 0 Hz run resolves them.
    let at = |v: &[f64]| {
        let mut out = [f64::NAN; 3];
        for (i, p) in PERCENTILES.iter().enumerate() {
            if z.elapsed_ns[i].is_finite() && !v.is_empty() {
                out[i] = quantile_sorted(v, p / 100.0);
            }
        }
        out
    };
    // Each prediction against its own 0 Hz requests (the thinned ranks),
    // so that sampling never lowers a percentile.
    let minus = |with: [f64; 3], base: [f64; 3]| std::array::from_fn(|i| with[i] - base[i]);
    Cell {
        zero: z.elapsed_ns,
        rate: r.elapsed_ns,
        periodic: minus(at(&periodic), at(&base)),
        poisson: minus(at(&poisson), at(&few)),
        hit: r.hit_share,
        hit_predicted,
    }
}

fn row(freq_hz: u64, size_ns: u64, percentile: f64, pi: usize, cells: &[Cell]) -> LatencyRow {
    let finite = |f: &dyn Fn(&Cell) -> f64| -> Vec<f64> {
        cells.iter().map(f).filter(|x| x.is_finite()).collect()
    };
    let measured = t_interval(&finite(&|c| c.rate[pi] - c.zero[pi]));
    let predicted = t_interval(&finite(&|c| c.periodic[pi]));
    let d = t_interval(&finite(&|c| c.rate[pi] - c.zero[pi] - c.periodic[pi]));
    LatencyRow {
        freq_hz,
        size_ns,
        percentile,
        blocks: measured.n.max(predicted.n),
        baseline_ns: mean(&finite(&|c| c.zero[pi])),
        measured,
        predicted,
        poisson: t_interval(&finite(&|c| c.poisson[pi])),
        difference: d,
        agrees: (d.lo.is_finite() && d.hi.is_finite()).then_some(d.lo <= 0.0 && d.hi >= 0.0),
        hit_share: mean(&finite(&|c| c.hit)),
        hit_share_predicted: mean_of(cells.iter().map(|c| c.hit_predicted)),
    }
}
