//! Which runs a sweep makes, and in which order.
//!
//! Runs are grouped in randomised blocks, one block per repetition: every
//! block holds each planned (kind, design, sample contents, frequency) once,
//! 0 Hz included (once per design: with no samples, contents do not apply),
//! shuffled with a ChaCha8 RNG seeded from the recorded seed, so slow drift
//! of the host spreads over all frequencies instead of biasing the ones run
//! last, and the same seed reproduces the same order.
//!
//! A block holds:
//! - `classic` design: one `loss` run per frequency (0 Hz included);
//! - `paired` design: one `loss` run per frequency, 0 Hz included as a null
//!   control (phases alternate and a sampler that never fires is toggled
//!   with them, so its "loss" estimates the design's own bias);
//! - `gaps` design: one `loss` run per frequency with the workload's
//!   timeline on, 0 Hz included (the background gaps);
//! - one `util` run per frequency > 0 (handler tracepoints on), whatever the
//!   design, unless util runs are switched off.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::{Sampling, SweepOptions};

pub use results_format::RunKind;

/// Whether a planned run opens a sampler of ours: every run above 0 Hz,
/// and the paired design's null control (a sampler that never fires);
/// none in a `--profiler` sweep (loop or command), whose profiler samples
/// instead. Here, in
/// the plan, so that the executor and the pre-run checks ask it without
/// importing the runtime backend.
pub(crate) fn opens_sampler(run: &PlannedRun, opts: &SweepOptions) -> bool {
    matches!(opts.sampling, Sampling::Ours)
        && (run.freq_hz > 0 || (run.design.has_phases() && run.kind == RunKind::Loss))
}

pub mod judge;

/// Builds the plan of a sweep: `reps` randomised blocks of its lists,
/// shuffled from its seed ([`crate::block::plan`]).
pub fn build_plan(opts: &SweepOptions) -> Vec<PlannedRun> {
    crate::block::plan(opts.block_spec(), opts.reps, opts.seed)
}

/// A paired run's phases: a settling period with sampling off, then
/// groups of four phases, each ABBA (off, on, on, off) or BAAB (on, off,
/// off, on), chosen at random per group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseSchedule {
    /// Time from the loop's start to the first phase, not measured: runs
    /// start slow (the first ABBA group of a run lost 6.6 pp less than the
    /// rest, p = 0.03, on the development VM), so the first phases are
    /// discarded.
    pub settle_ns: u64,
    /// Sampling on (true) or off in each phase.
    pub on: Vec<bool>,
}

impl PhaseSchedule {
    /// "ABBA" or "BAAB" for the group holding phase `i`.
    pub fn order_of(&self, i: usize) -> &'static str {
        match self.on.get(i - i % 4) {
            Some(true) => "BAAB",
            _ => "ABBA",
        }
    }
}

/// The phase schedule of paired run `run_id`: a settling period of four
/// phases (at most what leaves one group), then a whole number of groups
/// (at least one) in the rest of the run, so on and off phases are equally
/// many and, within each group, their mean times coincide, which cancels
/// linear drift. The order of each group is drawn from a ChaCha8 RNG
/// seeded from the sweep's seed and the run id, so phase 0 is not always
/// off and the same seed gives the same schedule.
pub fn phase_schedule(duration_ns: u64, phase_ns: u64, seed: u64, run_id: u32) -> PhaseSchedule {
    let settle_ns = phase_ns
        .saturating_mul(4)
        .min(duration_ns.saturating_sub(phase_ns.saturating_mul(4)));
    let phases = duration_ns
        .saturating_sub(settle_ns)
        .checked_div(phase_ns)
        .unwrap_or(0);
    let groups = (phases / 4).max(1);
    let mut rng =
        ChaCha8Rng::seed_from_u64(seed ^ u64::from(run_id).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut on = Vec::new();
    for _ in 0..groups {
        let abba = rng.random::<bool>();
        on.extend([!abba, abba, abba, !abba]);
    }
    PhaseSchedule { settle_ns, on }
}

pub use crate::block::{BlockSpec, PlannedRun, block_text, planned_loop_ns};

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod long_tests {
    use super::*;

    #[test]
    fn long_plans_read_in_their_unit() {
        // 85 runs of 1000000 h: beyond u64 nanoseconds, still exact.
        let ns = planned_loop_ns(85, 1_000_000 * 3_600_000_000_000);
        assert!(ns > u128::from(u64::MAX));
        assert_eq!(workload::duration::format_long_ns(ns), "85000000 h");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::config::{Design, FlagSettings, SweepOptions};
    use crate::contents::SampleContents;

    fn opts(seed: u64, designs: &str) -> SweepOptions {
        let f = FlagSettings::from_args(&[
            "--freqs=100,500,2000,4000,100000",
            "--design",
            designs,
            "--seed",
            &seed.to_string(),
            "--duration=1s",
        ])
        .unwrap();
        SweepOptions::resolve(&f, None, &[0, 1], 0)
            .and_then(|r| r.finish(None))
            .unwrap()
    }

    #[test]
    fn every_block_holds_each_run_once() {
        let o = opts(1, "classic,paired");
        let plan = build_plan(&o);
        // 6 freqs x 2 designs loss + 5 util, per rep.
        assert_eq!(plan.len(), 5 * (6 * 2 + 5));
        for rep in 0..5 {
            let block: Vec<_> = plan.iter().filter(|r| r.block == rep).collect();
            let set: HashSet<_> = block
                .iter()
                .map(|r| (r.kind, r.design, r.freq_hz))
                .collect();
            assert_eq!(set.len(), block.len(), "duplicate in block {rep}");
            for f in &o.rates_hz {
                for d in [Design::Classic, Design::Paired] {
                    assert!(set.contains(&(RunKind::Loss, d, *f)));
                }
            }
            assert!(set.contains(&(RunKind::Loss, Design::Classic, 0)));
            assert!(
                !block
                    .iter()
                    .any(|r| r.kind == RunKind::Util && r.freq_hz == 0)
            );
            assert!(block.iter().all(|r| r.rep == rep));
        }
        let ids: Vec<u32> = plan.iter().map(|r| r.run_id).collect();
        assert_eq!(
            ids,
            (0..u32::try_from(plan.len()).unwrap()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn seed_reproduces_and_different_seeds_differ() {
        let a = build_plan(&opts(42, "classic"));
        let b = build_plan(&opts(42, "classic"));
        let c = build_plan(&opts(43, "classic"));
        assert_eq!(a, b);
        assert_ne!(a, c);
        // Blocks are really shuffled, not in frequency order.
        let first: Vec<u64> = a.iter().take(11).map(|r| r.freq_hz).collect();
        let mut sorted = first.clone();
        sorted.sort_unstable();
        assert_ne!(first, sorted);
    }

    #[test]
    fn contents_are_a_dimension_except_at_0_hz() {
        let mut o = opts(1, "gaps");
        o.contents = vec![SampleContents::PerfDefault, SampleContents::Callchain];
        let plan = build_plan(&o);
        // Per block: 0 Hz once, 5 freqs x 2 contents loss, 5 x 2 util.
        assert_eq!(plan.len(), 5 * (1 + 10 + 10));
        for rep in 0..5 {
            let block: Vec<_> = plan.iter().filter(|r| r.block == rep).collect();
            let set: HashSet<_> = block
                .iter()
                .map(|r| (r.kind, r.contents, r.freq_hz))
                .collect();
            assert_eq!(set.len(), block.len());
            for c in &o.contents {
                assert!(set.contains(&(RunKind::Loss, *c, 4000)));
                assert!(set.contains(&(RunKind::Util, *c, 100_000)));
            }
            let zero: Vec<_> = block.iter().filter(|r| r.freq_hz == 0).collect();
            assert_eq!(zero.len(), 1);
            assert_eq!(zero[0].contents, SampleContents::PerfDefault);
        }
    }

    #[test]
    fn no_util_runs_when_switched_off() {
        let mut o = opts(1, "classic");
        o.util = false;
        let plan = build_plan(&o);
        assert_eq!(plan.len(), 5 * 6);
        assert!(plan.iter().all(|r| r.kind == RunKind::Loss));
    }

    #[test]
    fn phase_schedule_settles_balances_and_randomises() {
        let s = phase_schedule(10_000_000_000, 250_000_000, 7, 3);
        assert_eq!(s.settle_ns, 1_000_000_000);
        assert_eq!(s.on.len(), 36);
        assert_eq!(s, phase_schedule(10_000_000_000, 250_000_000, 7, 3));
        for (g, group) in s.on.chunks(4).enumerate() {
            // ABBA or BAAB: balanced, and the mean index of on phases
            // equals that of off phases (drift cancels in every group).
            assert!(
                group == [false, true, true, false] || group == [true, false, false, true],
                "group {g}: {group:?}"
            );
            assert_eq!(
                s.order_of(g * 4 + 2),
                if group[0] { "BAAB" } else { "ABBA" }
            );
        }
        // Both orders occur, and other runs get other orders.
        let first: Vec<bool> = s.on.chunks(4).map(|g| g[0]).collect();
        assert!(first.contains(&true) && first.contains(&false), "{first:?}");
        assert_ne!(s.on, phase_schedule(10_000_000_000, 250_000_000, 7, 4).on);
        // Short runs: the settling period leaves one whole group.
        let s = phase_schedule(1_000_000_000, 125_000_000, 1, 0);
        assert_eq!((s.settle_ns, s.on.len()), (500_000_000, 4));
        let s = phase_schedule(1_000_000_000, 250_000_000, 1, 0);
        assert_eq!((s.settle_ns, s.on.len()), (0, 4));
    }
}
