//! How a check spends its time: the gaps design at the checked rate(s)
//! against 0 Hz in randomised blocks, as many blocks of runs as `--time`
//! holds (docs/methodology.md, "The daily check").

use crate::config::{MIN_RUN_NS, MIN_SAMPLES_PER_RUN};

/// The default `--time`.
pub const DEFAULT_TIME_NS: u64 = 60_000_000_000;

/// Time a check spends outside its runs: starting (the host's facts, the
/// event, the lock) and the report at the end: 0.5 s on the development
/// VM (docs/methodology.md, "The daily check"), and room for the quiet
/// check's waits.
pub const FIXED_NS: u64 = 3_000_000_000;

/// Time between two runs of our loop (start the workload, the quiet
/// check, read its files): 0.12 s on the development VM.
pub const LOOP_RUN_OVERHEAD_NS: u64 = 150_000_000;

/// Time a `--profiler` run adds to the loop's: its settle second and its
/// stop (1.0 to 1.5 s with `perf record` on the development VM).
pub const PROFILER_RUN_EXTRA_NS: u64 = 1_600_000_000;

/// The run length a check prefers. The cost per sample moves from run to
/// run (a new process each time), so more, shorter runs narrow the
/// interval: at 1 kHz in a minute, 8 blocks of 3 s gave +-3.8 to 18 %,
/// 16 of 1.3 s +-5.8 to 9.5 %, 28 of 0.65 s +-4.0 to 6.9 % but a cost 8 %
/// higher (a run's start weighs more); docs/methodology.md, "The daily
/// check". 1.3 s holds 130 samples at 99 Hz.
pub const PREFERRED_RUN_NS: u64 = 1_300_000_000;

/// The fewest blocks: a confidence interval needs two runs per rate.
pub const MIN_BLOCKS: u32 = 2;

/// The check's runs: `blocks` randomised blocks, each one run of
/// `run_ns` per rate and one at 0 Hz.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckPlan {
    pub blocks: u32,
    pub run_ns: u64,
}

/// `--time` too short for two blocks of runs that each hold
/// [`MIN_SAMPLES_PER_RUN`] samples at the lowest rate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--time {given}: too short for a check at {lowest} Hz; it needs {MIN_BLOCKS} blocks of \
     {runs} runs, each of at least {} ms (10 samples at {lowest} Hz) plus {} ms to start it\
     {}, and {} s to set up and report; give --time {shortest} or more",
    min_run_ns / 1_000_000, overhead_ns / 1_000_000, profiler_text(*extra_ns),
    FIXED_NS / 1_000_000_000
)]
pub struct TooShort {
    pub given: String,
    pub lowest: u64,
    pub runs: u64,
    pub min_run_ns: u64,
    pub overhead_ns: u64,
    pub extra_ns: u64,
    pub shortest: String,
}

/// The profiler's share of a block, when there is one.
fn profiler_text(extra_ns: u64) -> String {
    if extra_ns == 0 {
        String::new()
    } else {
        format!(
            " (the profiler's start and stop add {} ms a block)",
            extra_ns / 1_000_000
        )
    }
}

fn secs(ns: u64) -> String {
    format!("{}s", ns.div_ceil(1_000_000_000))
}

/// The shortest run that holds [`MIN_SAMPLES_PER_RUN`] samples at `hz`.
pub fn min_run_ns(hz: u64) -> u64 {
    let for_samples = (u128::from(MIN_SAMPLES_PER_RUN) * 1_000_000_000).div_ceil(u128::from(hz));
    u64::try_from(for_samples)
        .unwrap_or(u64::MAX)
        .max(MIN_RUN_NS)
}

/// The plan for `time_ns` at `rates` (each above 0): the most blocks of
/// runs of the preferred length that fit, at least [`MIN_BLOCKS`]; with
/// fewer, shorter runs, down to the shortest that holds enough samples.
pub fn plan(time_ns: u64, rates: &[u64], profiler: bool) -> Result<CheckPlan, TooShort> {
    let lowest = rates.iter().copied().min().unwrap_or(1).max(1);
    let runs = rates.len() as u64 + 1;
    let overhead = LOOP_RUN_OVERHEAD_NS;
    // The profiler starts and stops around each run at a rate, not at 0 Hz.
    let extra = if profiler {
        rates.len() as u64 * PROFILER_RUN_EXTRA_NS
    } else {
        0
    };
    let min_run = min_run_ns(lowest);
    let usable = time_ns.saturating_sub(FIXED_NS);
    let per_block = |run_ns: u64| runs * (run_ns + overhead) + extra;
    let blocks = (usable / per_block(PREFERRED_RUN_NS)).max(u64::from(MIN_BLOCKS));
    let run_ns = ((usable / blocks).saturating_sub(extra) / runs).saturating_sub(overhead);
    if run_ns < min_run {
        let shortest = FIXED_NS + u64::from(MIN_BLOCKS) * per_block(min_run);
        return Err(TooShort {
            given: secs(time_ns),
            lowest,
            runs,
            min_run_ns: min_run,
            overhead_ns: overhead,
            extra_ns: extra,
            shortest: secs(shortest),
        });
    }
    // Whole milliseconds: the manifest and the plan read better.
    let run_ns = run_ns / 1_000_000 * 1_000_000;
    Ok(CheckPlan {
        blocks: u32::try_from(blocks).unwrap_or(u32::MAX),
        run_ns,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_minute_at_one_rate_is_many_blocks_of_short_runs() {
        let p = plan(DEFAULT_TIME_NS, &[1000], false).unwrap();
        assert_eq!(p.blocks, 19);
        assert!((1_300_000_000..1_400_000_000).contains(&p.run_ns), "{p:?}");
        let total = FIXED_NS + u64::from(p.blocks) * 2 * (p.run_ns + LOOP_RUN_OVERHEAD_NS);
        assert!(total <= DEFAULT_TIME_NS, "{total}");
    }

    #[test]
    fn a_short_time_gives_two_blocks_of_shorter_runs() {
        let p = plan(7_000_000_000, &[99], false).unwrap();
        assert_eq!(p.blocks, 2);
        assert!(
            p.run_ns >= min_run_ns(99) && p.run_ns < PREFERRED_RUN_NS,
            "{p:?}"
        );
    }

    /// Too short: the error names the shortest --time that works, and that
    /// time is accepted.
    #[test]
    fn too_short_names_the_shortest_time_that_works() {
        let e = plan(5_000_000_000, &[99, 999], true).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("--time 5s") && msg.contains("at 99 Hz"),
            "{msg}"
        );
        let shortest: u64 = e.shortest.trim_end_matches('s').parse().unwrap();
        assert!(plan(shortest * 1_000_000_000, &[99, 999], true).is_ok());
        assert!(plan((shortest - 1) * 1_000_000_000, &[99, 999], true).is_err());
    }

    /// A profiler's start and stop are charged to the runs at a rate only.
    #[test]
    fn a_profiler_check_has_fewer_blocks_of_the_same_runs() {
        let p = plan(DEFAULT_TIME_NS, &[999], true).unwrap();
        assert_eq!(p.blocks, 12);
        assert!((1_300_000_000..1_500_000_000).contains(&p.run_ns), "{p:?}");
    }

    #[test]
    fn a_low_rate_needs_longer_runs() {
        assert_eq!(min_run_ns(1), 10_000_000_000);
        assert_eq!(min_run_ns(1000), MIN_RUN_NS);
        assert!(plan(20_000_000_000, &[1], false).is_err());
    }
}
