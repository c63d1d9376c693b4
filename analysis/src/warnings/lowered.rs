//! The check for a kernel-lowered perf_event_max_sample_rate: which runs
//! started under a lowered limit, which saw it go down, which asked for
//! more than it.

use super::{Rule, Warning};
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

    /// Every run concerned, once, with its limit before and after it.
    fn notes(&self) -> Vec<(u32, String)> {
        let mut v: Vec<&Run> = self.under.iter().chain(&self.during).copied().collect();
        v.sort_by_key(|r| r.run_id);
        v.iter()
            .map(|r| {
                let (b, a) = limits(r);
                let b = b.unwrap_or(0);
                let a = a.unwrap_or(b);
                let refused = if r.freq_hz > a.min(b) {
                    ", asked for more: throttled or refused"
                } else {
                    ""
                };
                (r.run_id, format!("{} Hz: {b} -> {a}{refused}", r.freq_hz))
            })
            .collect()
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
    Some(
        Warning::with_remedy(
            Rule::LoweredLimit,
            format!(
                "perf_event_max_sample_rate went from {highest} down to {} (\"perf: interrupt \
                 took too long\"): during {} runs, {} started under it, {} asked for more",
                lowered.lowest,
                lowered.during.len(),
                lowered.under.len(),
                lowered.above.len()
            ),
            "the kernel lowers it when sampling interrupts take more than \
             perf_cpu_time_max_percent of a CPU; runs asking for more than it were throttled or \
             refused",
        )
        .with_values(lowered.notes()),
    )
}
