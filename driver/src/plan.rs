//! Which runs a sweep makes, and in which order.
//!
//! Runs are grouped in randomised blocks, one block per repetition: every
//! block holds each planned (kind, design, frequency) once, 0 Hz included,
//! shuffled with a ChaCha8 RNG seeded from the recorded seed, so slow drift
//! of the host spreads over all frequencies instead of biasing the ones run
//! last, and the same seed reproduces the same order.
//!
//! A block holds:
//! - `classic` design: one `loss` run per frequency (0 Hz included);
//! - `paired` design: one `loss` run per frequency, 0 Hz included as a null
//!   control (phases alternate but nothing is switched on, so its "loss"
//!   estimates the design's own bias);
//! - one `util` run per frequency > 0 (handler tracepoints on), whatever the
//!   design, unless util runs are switched off.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::config::{Design, SweepOptions};

/// What a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// No tracepoints; the workload's loop count is the measurement.
    Loss,
    /// Handler tracepoints on; handler intervals are the measurement.
    Util,
}

impl RunKind {
    /// The name used in files.
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Loss => "loss",
            RunKind::Util => "util",
        }
    }
}

/// One planned run, as in the manifest's `plan`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedRun {
    /// Index in the plan (= execution order).
    pub run_id: u32,
    /// loss or util.
    pub kind: RunKind,
    /// classic or paired.
    pub design: Design,
    /// Requested sample_freq; 0 = no sampling event.
    pub freq_hz: u64,
    /// Repetition, 0-based.
    pub rep: u32,
    /// Randomised block (= repetition).
    pub block: u32,
}

/// Builds the plan of a sweep: `reps` randomised blocks.
pub fn build_plan(opts: &SweepOptions) -> Vec<PlannedRun> {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let mut plan = Vec::new();
    let mut run_id = 0u32;
    for rep in 0..opts.reps {
        let mut block: Vec<(RunKind, Design, u64)> = Vec::new();
        for &design in &opts.designs {
            for &f in &opts.freqs_hz {
                block.push((RunKind::Loss, design, f));
            }
        }
        if opts.util {
            // Util runs do not depend on the design; tag them with the first one.
            let design = opts.designs.first().copied().unwrap_or(Design::Classic);
            for &f in opts.freqs_hz.iter().filter(|&&f| f > 0) {
                block.push((RunKind::Util, design, f));
            }
        }
        block.shuffle(&mut rng);
        for (kind, design, freq_hz) in block {
            plan.push(PlannedRun {
                run_id,
                kind,
                design,
                freq_hz,
                rep,
                block: rep,
            });
            run_id += 1;
        }
    }
    plan
}

/// The ABBA phase schedule of a paired run: `true` = sampling on.
/// off, on, on, off, off, on, on, off, ... with a whole number of ABBA
/// cycles (at least one), so on and off phases are equally many and their
/// mean times coincide, which cancels linear drift.
pub fn abba_schedule(duration_ns: u64, phase_ns: u64) -> Vec<bool> {
    let phases = duration_ns.checked_div(phase_ns).unwrap_or(0);
    let n = (phases / 4).max(1) * 4;
    (0..n).map(|i| i.div_ceil(2) % 2 == 1).collect()
}

/// Expected wall time of the plan, for the ETA and the log.
pub fn planned_ns(plan: &[PlannedRun], duration_ns: u64) -> u64 {
    u64::try_from(plan.len())
        .unwrap_or(u64::MAX)
        .saturating_mul(duration_ns)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::config::{FlagSettings, SweepOptions};

    fn opts(seed: u64, designs: &str) -> SweepOptions {
        let f = FlagSettings {
            freqs: Some("100,500,2000,4000,100000".into()),
            design: Some(designs.into()),
            seed: Some(seed.to_string()),
            duration: Some("1s".into()),
            ..FlagSettings::default()
        };
        SweepOptions::resolve(&f, None, 2, 0).unwrap()
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
            for f in &o.freqs_hz {
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
    fn no_util_runs_when_switched_off() {
        let mut o = opts(1, "classic");
        o.util = false;
        let plan = build_plan(&o);
        assert_eq!(plan.len(), 5 * 6);
        assert!(plan.iter().all(|r| r.kind == RunKind::Loss));
    }

    #[test]
    fn abba_order_and_balance() {
        let s = abba_schedule(2_000_000_000, 250_000_000);
        assert_eq!(s, vec![false, true, true, false, false, true, true, false]);
        // Not a whole number of cycles: rounded down to one.
        let s = abba_schedule(1_900_000_000, 250_000_000);
        assert_eq!(s.len(), 4);
        let s = abba_schedule(10_000_000_000, 250_000_000);
        assert_eq!(s.len(), 40);
        assert_eq!(s.iter().filter(|&&on| on).count(), 20);
        // Mean index of on phases equals that of off phases (drift cancels).
        let mean = |on: bool| {
            let idx: Vec<usize> = (0..s.len()).filter(|&i| s[i] == on).collect();
            idx.iter().sum::<usize>() as f64 / idx.len() as f64
        };
        assert!((mean(true) - mean(false)).abs() < 1e-9);
    }
}
