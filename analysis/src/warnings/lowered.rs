//! The check for a kernel-lowered perf_event_max_sample_rate: which runs
//! started under a lowered limit, which saw it go down, which asked for
//! more than it.

use super::{Rule, Warning, ids};
use crate::load::Run;

/// A run's perf_event_max_sample_rate before and after it, where known (0
/// means the column was absent).
fn limits(r: &Run) -> (Option<u64>, Option<u64>) {
    let known = |v: Option<u64>| v.filter(|&v| v > 0);
    (
        known(r.perf_event_max_sample_rate_before),
        known(r.perf_event_max_sample_rate_after),
    )
}

/// The runs touched by a lowered perf_event_max_sample_rate.
struct LoweredRuns<'a> {
    /// Runs that started under a limit below the sweep's highest.
    under: Vec<&'a Run>,
    /// Runs that started at the highest and saw it go down.
    during: Vec<&'a Run>,
    /// Runs of either kind that asked for more than their lower limit.
    above: Vec<&'a Run>,
    /// The lowest limit any of them saw.
    lowest: u64,
}

impl<'a> LoweredRuns<'a> {
    /// Sort `runs` against the sweep's `highest` limit.
    fn of(runs: &'a [Run], highest: u64) -> Self {
        let mut lowered = Self {
            under: Vec::new(),
            during: Vec::new(),
            above: Vec::new(),
            lowest: highest,
        };
        for r in runs {
            let (Some(b), a) = limits(r) else {
                continue;
            };
            let a = a.unwrap_or(b);
            if b < highest {
                lowered.under.push(r);
            } else if a < b {
                lowered.during.push(r);
            } else {
                continue;
            }
            lowered.lowest = lowered.lowest.min(a.min(b));
            if r.freq_hz > a.min(b) {
                lowered.above.push(r);
            }
        }
        lowered
    }

    /// Every run concerned, once, by id.
    fn run_ids(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .under
            .iter()
            .chain(&self.during)
            .chain(&self.above)
            .map(|r| r.run_id)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Where it went down ("during ... runs (run N at F Hz: before ->
    /// after)") and which runs started under it, as clauses of the warning.
    fn clauses(&self) -> Vec<String> {
        let mut parts = Vec::new();
        if !self.during.is_empty() {
            let detail: Vec<String> = self
                .during
                .iter()
                .map(|r| {
                    format!(
                        "run {} at {} Hz: {} -> {}",
                        r.run_id,
                        r.freq_hz,
                        r.perf_event_max_sample_rate_before.unwrap_or(0),
                        r.perf_event_max_sample_rate_after.unwrap_or(0)
                    )
                })
                .collect();
            parts.push(format!(
                "it went down during {} runs ({})",
                self.during.len(),
                detail.join("; ")
            ));
        }
        if !self.under.is_empty() {
            parts.push(format!(
                "{} runs started under a lowered limit (run_id {})",
                self.under.len(),
                ids(&self.under)
            ));
        }
        parts
    }
}

/// Which runs ran under a perf_event_max_sample_rate below the highest the
/// sweep saw (the kernel lowers it on its own when sampling interrupts run
/// long), or saw it go down while they ran; None when it never went down
/// (or the columns are absent).
pub(crate) fn lowered_limit(runs: &[Run]) -> Option<Warning> {
    let highest = runs
        .iter()
        .flat_map(|r| <[Option<u64>; 2]>::from(limits(r)))
        .flatten()
        .max()?;
    let lowered = LoweredRuns::of(runs, highest);
    if lowered.under.is_empty() && lowered.during.is_empty() {
        return None;
    }
    Some(Warning::new(
        Rule::LoweredLimit,
        format!(
            "kernel-lowered sample rate: perf_event_max_sample_rate was {highest} at its highest \
             in this sweep and went down to {} (the kernel lowers it when sampling interrupts \
             take more than perf_cpu_time_max_percent of a CPU: \"perf: interrupt took too \
             long\"); {}{}",
            lowered.lowest,
            lowered.clauses().join("; "),
            if lowered.above.is_empty() {
                String::new()
            } else {
                format!(
                    "; runs asking for more than their limit (run_id {}) were throttled or refused",
                    ids(&lowered.above)
                )
            }
        ),
    )
    .with_runs(lowered.run_ids()))
}
