//! The gaps design's per-sample cost: every formula on hand-made data, the
//! A/A null control, the agreement rule, the model-based recommendation and
//! the report / `recommend --json` on a synthetic results directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod formulas;
pub(crate) mod model;
mod results_dir;
mod tail;
mod thinning;

use analysis::load::gaps::GapsRun;
use analysis::percost::*;
use analysis::stats::Estimate;
use results_format::timeline::{Episode, RecoveryRow, TimelineRow};

/// Recovery bins of a 1 s run: `near_excess_ns` in the first bin (within
/// every horizon), nothing beyond 100 us (the run's reference speed).
fn bins(near_excess_ns: f64) -> Vec<RecoveryRow> {
    [
        (0u64, 250u64, near_excess_ns),
        (250, 100_000, 0.0),
        (100_000, u64::MAX, 0.0),
    ]
    .iter()
    .enumerate()
    .map(|(bin, &(from_ns, to_ns, excess_ns_sum))| RecoveryRow {
        bin: bin as u32,
        from_ns,
        to_ns,
        chunks: 1_000_000,
        chunk_ns_sum: 1e8,
        excess_ns_sum,
        ..RecoveryRow::default()
    })
    .collect()
}

/// A 1 s run whose `samples` each matched an episode of the same excess.
fn run(freq_hz: u64, samples: u64, matched_excess_ns: u64, recovery_excess_ns: f64) -> GapsRun {
    GapsRun {
        row: TimelineRow {
            run_id: 1,
            freq_hz,
            loop_start_ns: 1_000_000_000,
            loop_end_ns: 2_000_000_000,
            samples,
            matched_samples: samples,
            matched_excess_ns,
            matched_episodes: samples,
            episodes: samples,
            gap_time_ns: 20_000_000,
            ..TimelineRow::default()
        },
        recovery: bins(recovery_excess_ns),
        matched_excess_ns: vec![matched_excess_ns / samples.max(1); samples as usize],
        ..GapsRun::default()
    }
}

fn est(value: f64, se: f64) -> Estimate {
    Estimate {
        value,
        lo: value - 1.96 * se,
        hi: value + 1.96 * se,
        se,
        n: 5,
    }
}

fn episode(start_ns: u64, len: u64, excess_ns: u64) -> Episode {
    Episode {
        start_ns,
        end_ns: start_ns + len,
        excess_ns,
        gaps: 1,
    }
}

fn zero_run(id: u32, episodes: Vec<Episode>) -> GapsRun {
    GapsRun {
        row: TimelineRow {
            run_id: id,
            loop_start_ns: 0,
            loop_end_ns: 1_000_000_000,
            ..TimelineRow::default()
        },
        episodes,
        recovery: bins(0.0),
        ..GapsRun::default()
    }
}
