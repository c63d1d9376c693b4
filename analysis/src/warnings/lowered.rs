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
    // Runs that started under a lower limit, runs that started at the
    // highest and saw it go down, runs of either kind that asked for more
    // than their lower limit, and the lowest limit any of them saw.
    let (mut under, mut during, mut above, mut lowest) = (0, 0, 0, highest);
    let mut notes = Vec::new();
    for r in runs {
        let (Some(b), a) = limits(r) else {
            continue;
        };
        let a = a.unwrap_or(b);
        if b < highest {
            under += 1;
        } else if a < b {
            during += 1;
        } else {
            continue;
        }
        lowest = lowest.min(a.min(b));
        let refused = if r.freq_hz > a.min(b) {
            above += 1;
            ", asked for more: throttled or refused"
        } else {
            ""
        };
        notes.push((r.run_id, format!("{} Hz: {b} -> {a}{refused}", r.freq_hz)));
    }
    if notes.is_empty() {
        return None;
    }
    notes.sort_by_key(|(run_id, _)| *run_id);
    Some(
        Warning::with_remedy(
            Rule::LoweredLimit,
            format!(
                "perf_event_max_sample_rate went from {highest} down to {lowest} (\"perf: \
                 interrupt took too long\"): during {during} runs, {under} started under it, \
                 {above} asked for more"
            ),
            "the kernel lowers it when sampling interrupts take more than \
             perf_cpu_time_max_percent of a CPU; runs asking for more than it were throttled or \
             refused",
        )
        .with_values(notes),
    )
}
