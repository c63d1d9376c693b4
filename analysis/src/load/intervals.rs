//! `events/run-<id>.parquet` (written and read by `results_format::events`):
//! aggregating the handler intervals per run (the hot path of a report).

use std::path::Path;

use polars::prelude::*;

use results_format::events::{SOURCE_HRTIMER, SOURCE_LOCAL_TIMER, SOURCE_NMI, read_intervals};

use crate::error::AnalysisError;

/// Most handler durations kept per run for the duration plot.
const PLOT_SAMPLE_PER_RUN: usize = 20_000;

/// Summary of a set of interval durations (ns).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct IntervalStats {
    pub count: u64,
    pub sum_ns: u64,
    pub mean_ns: f64,
    /// Quantiles interpolate linearly between order statistics (numpy's
    /// default, "type 7").
    pub median_ns: f64,
    pub p99_ns: f64,
    pub max_ns: u64,
}

/// Durations below this many ns are counted in 1-ns bins; longer ones are
/// kept and sorted (handlers take ~1-5 us, so the overflow is tiny).
const HIST_BINS: usize = 1 << 16;

/// Exact single-pass summary of durations: a 1-ns histogram below
/// `HIST_BINS` ns plus the rare longer values. Quantiles are the same
/// type-7 values as sorting the durations would give, without storing or
/// reordering them.
#[derive(Debug, Clone)]
pub struct DurationHistogram {
    bins: Vec<u32>,
    overflow: Vec<u64>,
    count: u64,
    sum: u64,
    max: u64,
}

impl Default for DurationHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl DurationHistogram {
    pub fn new() -> Self {
        Self {
            bins: vec![0; HIST_BINS],
            overflow: Vec::new(),
            count: 0,
            sum: 0,
            max: 0,
        }
    }

    /// Add one duration.
    #[inline]
    pub fn push(&mut self, d: u64) {
        self.count += 1;
        self.sum += d;
        self.max = self.max.max(d);
        // u32 bins: a run has far fewer than 2^32 intervals of one length
        // (100 kHz for 10 s is 10^6 in all).
        if d < HIST_BINS as u64 {
            self.bins[d as usize] += 1;
        } else {
            self.overflow.push(d);
        }
    }

    /// Number of durations added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The k-th smallest value (0-based); `overflow` must be sorted.
    fn kth(&self, k: u64) -> u64 {
        let mut seen = 0u64;
        for (v, &c) in self.bins.iter().enumerate() {
            seen += u64::from(c);
            if seen > k {
                return v as u64;
            }
        }
        let i = (k - seen) as usize;
        self.overflow.get(i).copied().unwrap_or(self.max)
    }

    fn quantile(&self, q: f64) -> f64 {
        let n = usize::try_from(self.count).unwrap_or(usize::MAX);
        crate::stats::quantile_type7(n, q, |k| self.kth(k as u64) as f64)
    }

    /// The summary.
    pub fn finish(mut self) -> IntervalStats {
        if self.count == 0 {
            return IntervalStats::default();
        }
        self.overflow.sort_unstable();
        IntervalStats {
            count: self.count,
            sum_ns: self.sum,
            mean_ns: self.sum as f64 / self.count as f64,
            median_ns: self.quantile(0.5),
            p99_ns: self.quantile(0.99),
            max_ns: self.max,
        }
    }
}

/// Per-run aggregate of the handler intervals on the measured CPU.
#[derive(Debug, Clone, Default)]
pub struct RunIntervals {
    /// Sampling handler (`hrtimer` or `nmi`) on the measured CPU.
    pub handler: IntervalStats,
    /// Whole timer interrupt (`local_timer`) on the measured CPU, if captured.
    pub local_timer: Option<IntervalStats>,
    /// A strided sample of handler durations (ns) for plots.
    pub sample_ns: Vec<u64>,
}

/// Aggregate an interval table (columns `cpu`, `duration_ns`, `source`) for
/// the measured CPU `cpu`. Other columns are ignored.
pub fn aggregate_intervals(df: &mut DataFrame, cpu: u32) -> PolarsResult<RunIntervals> {
    if df.should_rechunk() {
        df.rechunk_mut_par();
    }
    let cpus = df.column("cpu")?.cast(&DataType::UInt32)?;
    let durs = df.column("duration_ns")?.cast(&DataType::UInt64)?;
    let cpus = cpus.u32()?.rechunk();
    let durs = durs.u64()?.rechunk();
    let cpus = cpus.cont_slice()?;
    let durs = durs.cont_slice()?;
    let sources = df.column("source")?.str()?.rechunk();

    let mut handler = DurationHistogram::new();
    let mut local = DurationHistogram::new();
    let mut sample_ns = Vec::new();
    // Stride of the plot sample, from the row count (an upper bound of the
    // handler count), so at most PLOT_SAMPLE_PER_RUN are kept.
    let step = (durs.len().div_ceil(PLOT_SAMPLE_PER_RUN) as u64).max(1);
    let mut offset = 0usize;
    for arr in sources.downcast_iter() {
        let len = arr.len();
        let c = &cpus[offset..offset + len];
        let d = &durs[offset..offset + len];
        for ((src, &cpu_i), &dur) in arr.values_iter().zip(c).zip(d) {
            if cpu_i != cpu {
                continue;
            }
            if src == SOURCE_NMI || src == SOURCE_HRTIMER {
                if handler.count().is_multiple_of(step) {
                    sample_ns.push(dur);
                }
                handler.push(dur);
            } else if src == SOURCE_LOCAL_TIMER {
                local.push(dur);
            }
        }
        offset += len;
    }

    Ok(RunIntervals {
        handler: handler.finish(),
        local_timer: (local.count() > 0).then(|| local.finish()),
        sample_ns,
    })
}

/// Lazily scan one run's parquet file (projection: cpu, duration_ns,
/// source) and aggregate it for the measured CPU.
pub fn read_run_intervals(path: &Path, cpu: u32) -> Result<RunIntervals, AnalysisError> {
    let mut df = read_intervals(path, &["cpu", "duration_ns", "source"])?;
    aggregate_intervals(&mut df, cpu).map_err(|e| AnalysisError::corrupt(path, e))
}
