//! The planned runs, from the options' lists, in randomised blocks: what a
//! sweep runs, and what the options' validation counts (a leaf that
//! imports no options, so `config` counts the plan's runs without
//! `plan`). A [`PlannedRun`] is one run, as in the manifest.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use results_format::{Design, RunKind};
use serde::{Deserialize, Serialize};
use workload::work::WorkKind;

use crate::contents::SampleContents;

/// The options a block is made of.
#[derive(Debug, Clone, Copy)]
pub struct BlockSpec<'a> {
    pub rates_hz: &'a [u64],
    pub designs: &'a [Design],
    pub contents: &'a [SampleContents],
    pub workloads: &'a [WorkKind],
    pub util: bool,
}

/// The plan: `reps` randomised blocks, each holding per work kind, per
/// design, each frequency with each sample contents (0 Hz once, with the
/// first contents), then one util run per frequency above 0 and contents;
/// each block shuffled with a ChaCha8 RNG seeded from `seed` (the same
/// seed gives the same plan), the runs numbered in execution order.
pub fn plan(spec: BlockSpec<'_>, reps: u32, seed: u64) -> Vec<PlannedRun> {
    let first = spec
        .contents
        .first()
        .copied()
        .unwrap_or(SampleContents::DEFAULT);
    let workloads: &[WorkKind] = if spec.workloads.is_empty() {
        &[WorkKind::Loop]
    } else {
        spec.workloads
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut plan = Vec::new();
    for rep in 0..reps {
        let mut block = Vec::new();
        let mut push = |kind, design, contents, workload: WorkKind, freq_hz| {
            block.push(PlannedRun {
                run_id: 0,
                kind,
                design,
                freq_hz,
                contents,
                workload,
                rep,
                block: rep,
            });
        };
        for &w in workloads {
            for &design in spec.designs {
                for &f in spec.rates_hz {
                    if f == 0 {
                        push(RunKind::Loss, design, first, w, f);
                        continue;
                    }
                    for &c in spec.contents {
                        push(RunKind::Loss, design, c, w, f);
                    }
                }
            }
            if spec.util {
                // Util runs do not depend on the design; tag them with the first one.
                let design = spec.designs.first().copied().unwrap_or(Design::Classic);
                for &f in spec.rates_hz.iter().filter(|&&f| f > 0) {
                    for &c in spec.contents {
                        push(RunKind::Util, design, c, w, f);
                    }
                }
            }
        }
        block.shuffle(&mut rng);
        plan.extend(block);
    }
    for (run_id, run) in (0u32..).zip(plan.iter_mut()) {
        run.run_id = run_id;
    }
    plan
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
    /// What each sample carries (at 0 Hz: the sweep's first contents).
    /// Plans written before contents were a dimension ran with `time`.
    #[serde(default = "legacy_contents", rename = "sample")]
    pub contents: SampleContents,
    /// What the workload's loop does (plans before kinds existed: loop).
    #[serde(default)]
    pub workload: WorkKind,
    /// Repetition, 0-based.
    pub rep: u32,
    /// Randomised block (= repetition).
    pub block: u32,
}

fn legacy_contents() -> SampleContents {
    SampleContents::Time
}

/// The loop time of `runs` runs of `duration_ns`, ns.
pub fn planned_loop_ns(runs: usize, duration_ns: u64) -> u128 {
    u128::try_from(runs)
        .unwrap_or(u128::MAX)
        .saturating_mul(u128::from(duration_ns))
}

/// What one randomised block holds, with the flags that set each factor:
/// "2 designs (--design) x 6 frequencies with 0 Hz (--rates) + 5 util runs
/// (--no-util drops them)".
pub fn block_text(spec: BlockSpec<'_>) -> String {
    let nf = spec.rates_hz.iter().filter(|&&f| f > 0).count();
    let nc = spec.contents.len().max(1);
    let nd = spec.designs.len();
    let mut t = format!(
        "{nd} design{} (--design) x ",
        if nd == 1 { "" } else { "s" }
    );
    if nc == 1 {
        t.push_str(&format!("{} frequencies with 0 Hz (--rates)", nf + 1));
    } else {
        t.push_str(&format!(
            "({nf} frequencies (--rates) x {nc} sample contents (--sample) + 0 Hz)"
        ));
    }
    if spec.util && nf > 0 {
        t.push_str(&format!(" + {} util runs (--no-util drops them)", nf * nc));
    }
    let nw = spec.workloads.len();
    if nw > 1 {
        t = format!("{nw} work kinds (--work) x [{t}]");
    }
    t
}
