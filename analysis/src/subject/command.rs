//! The user's own program (`driver sweep --command`): what sampling at F Hz
//! costs it, from whole runs.
//!
//! Each randomised block holds one run of the command at 0 Hz and one at
//! each (contents, F). The loss is estimated within blocks, so drift of the
//! host between blocks cancels: per block b, d_b = ln(wall_F,b /
//! wall_0,b); the loss is 1 - exp(-mean d) (the throughput lost, as for the
//! loop: 1 - rate(F) / rate(0)), with the 95 % t interval over blocks
//! carried through the same monotone map. The cost of one sample from
//! whole runs is the mean over blocks of (wall_F,b - wall_0,b) / samples_b,
//! with its t interval.
//!
//! Outliers are flagged as hyperfine flags them: a run whose modified
//! z-score (0.6745 (x - median) / MAD, Iglewicz and Hoaglin) exceeds
//! [`OUTLIER_Z`] among the runs of its configuration (of at least
//! [`OUTLIER_MIN_RUNS`]). They stay in the estimate; the report names them.

pub mod report;

use std::collections::BTreeMap;

use crate::columns::{lo_hi, spaced};
use crate::load::Run;
use crate::stats::{Estimate, grouped, mean, mean_of, median, std_dev, t_interval};

/// The modified z-score above which a run is flagged (Iglewicz and
/// Hoaglin's 3.5).
pub const OUTLIER_Z: f64 = 3.5;
/// Fewest runs of a configuration among which outliers are looked for
/// (with fewer, the median absolute deviation is one or two of the
/// values themselves and flags half of them).
pub const OUTLIER_MIN_RUNS: usize = 5;

/// One configuration (contents, frequency) of the command's runs (a row
/// of command.csv).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CommandRow {
    /// Sample contents (empty at 0 Hz).
    pub sample: String,
    /// Requested rate, Hz.
    pub freq_hz: u64,
    /// Successful runs.
    pub runs: usize,
    /// Failed runs (non-zero exit, killed, time-out).
    pub failed: usize,
    /// Mean achieved rate, Hz (NaN at 0 Hz).
    pub achieved_hz: f64,
    /// Mean samples per run on the measured CPU.
    pub samples_per_run: f64,
    /// Wall time per run: mean, standard deviation, median, min, max, s.
    pub wall_mean_s: f64,
    pub wall_sd_s: f64,
    pub wall_median_s: f64,
    pub wall_min_s: f64,
    pub wall_max_s: f64,
    /// Throughput loss against 0 Hz in the same blocks, % (None at 0 Hz);
    /// command.csv gives its blocks after it.
    #[serde(serialize_with = "with_blocks")]
    pub loss_pct: Option<Estimate>,
    /// The whole-run cost of one sample, ns (None at 0 Hz).
    #[serde(serialize_with = "lo_hi")]
    pub cost_per_sample_ns: Option<Estimate>,
    /// Run ids whose modified z-score exceeds [`OUTLIER_Z`].
    #[serde(rename = "outlier_run_ids", serialize_with = "spaced")]
    pub outliers: Vec<u32>,
}

/// command.csv's loss, its interval and the blocks behind it.
fn with_blocks<S: serde::Serializer>(e: &Option<Estimate>, s: S) -> Result<S::Ok, S::Error> {
    let v = e.map(|e| [e.value, e.lo, e.hi, e.n as f64]);
    crate::columns::cells(s, "{k} {k}_lo {k}_hi blocks", v)
}

/// Whether a run is one of the command's measured runs.
pub fn is_command_loss_run(r: &Run) -> bool {
    crate::contents::work_kind(&r.workload) == Some(workload::work::WorkKind::Command)
        && r.kind == results_format::RunKind::Loss
}

/// The table: 0 Hz first, then each contents by rate.
pub fn command_table(runs: &[Run]) -> Vec<CommandRow> {
    let groups = grouped(runs.iter().filter(|r| is_command_loss_run(r)).map(|r| {
        let sample = if r.freq_hz == 0 {
            String::new()
        } else {
            r.contents.clone()
        };
        ((r.freq_hz, sample), r)
    }));
    let baseline = groups
        .get(&(0, String::new()))
        .map(|v| baseline_by_block(v))
        .unwrap_or_default();
    let mut rows: Vec<CommandRow> = groups
        .iter()
        .map(|((freq_hz, sample), runs)| row(*freq_hz, sample, runs, &baseline))
        .collect();
    rows.sort_by_key(|r| (r.freq_hz > 0, r.sample.clone(), r.freq_hz));
    rows
}

fn row(freq_hz: u64, sample: &str, runs: &[&Run], baseline: &BTreeMap<u32, &Run>) -> CommandRow {
    let ok: Vec<&Run> = runs
        .iter()
        .copied()
        .filter(|r| r.ok() && r.wall_ns > 0)
        .collect();
    let walls: Vec<f64> = ok.iter().map(|r| r.wall_ns as f64 * 1e-9).collect();
    let z = modified_z(&walls);
    let enough = ok.len() >= OUTLIER_MIN_RUNS;
    let outliers = (ok.iter().zip(&z))
        .filter(|(_, z)| enough && z.abs() > OUTLIER_Z)
        .map(|(r, _)| r.run_id)
        .collect();
    let (loss_pct, cost_per_sample_ns) = if freq_hz == 0 {
        (None, None)
    } else {
        let cost: Vec<f64> = (ok.iter().filter(|r| r.samples > 0))
            .filter_map(|r| {
                let b = baseline.get(&r.block)?;
                Some((r.wall_ns as f64 - b.wall_ns as f64) / r.samples as f64)
            })
            .collect();
        (
            Some(block_paired_loss(&ok, baseline)),
            Some(t_interval(&cost)),
        )
    };
    let extreme =
        |pick: fn(f64, f64) -> f64| walls.iter().copied().reduce(pick).unwrap_or(f64::NAN);
    CommandRow {
        sample: sample.to_string(),
        freq_hz,
        runs: ok.len(),
        failed: runs.len() - ok.len(),
        achieved_hz: if freq_hz == 0 {
            f64::NAN
        } else {
            mean_of(ok.iter().map(|r| r.achieved_hz))
        },
        samples_per_run: mean_of(ok.iter().map(|r| r.samples as f64)),
        wall_mean_s: mean(&walls),
        wall_sd_s: std_dev(&walls),
        wall_median_s: median(&walls),
        wall_min_s: extreme(f64::min),
        wall_max_s: extreme(f64::max),
        outliers,
        loss_pct,
        cost_per_sample_ns,
    }
}

/// The command's loss at one configuration: per block with a 0 Hz run
/// (`baseline`, by block), d = ln(wall_F / wall_0), through
/// [`loss_from_log_ratios`].
pub fn block_paired_loss(runs: &[&Run], baseline: &BTreeMap<u32, &Run>) -> Estimate {
    let d: Vec<f64> = runs
        .iter()
        .filter(|r| r.ok() && r.wall_ns > 0)
        .filter_map(|r| {
            let b = baseline.get(&r.block)?;
            Some((r.wall_ns as f64 / b.wall_ns as f64).ln())
        })
        .collect();
    loss_from_log_ratios(&d)
}

/// The 0 Hz runs usable as a baseline, by block.
pub fn baseline_by_block<'a>(zero: &[&'a Run]) -> BTreeMap<u32, &'a Run> {
    zero.iter()
        .filter(|r| r.ok() && r.wall_ns > 0)
        .map(|r| (r.block, *r))
        .collect()
}

/// Loss % = 100 (1 - exp(-mean d)) from per-block log ratios d = ln(wall_F
/// / wall_0), with the t interval of mean d mapped through the same
/// (increasing) function and the standard error by the delta method.
pub fn loss_from_log_ratios(d: &[f64]) -> Estimate {
    let e = t_interval(d);
    let to_loss = |x: f64| 100.0 * (1.0 - (-x).exp());
    Estimate {
        value: to_loss(e.value),
        lo: to_loss(e.lo),
        hi: to_loss(e.hi),
        se: 100.0 * (-e.value).exp() * e.se,
        n: e.n,
    }
}

/// Iglewicz and Hoaglin's modified z-scores, 0.6745 (x - median) / MAD
/// (all 0 when the MAD is 0, as hyperfine does).
pub fn modified_z(x: &[f64]) -> Vec<f64> {
    let m = median(x);
    let dev: Vec<f64> = x.iter().map(|v| (v - m).abs()).collect();
    let mad = median(&dev);
    x.iter()
        .map(|v| {
            if mad > 0.0 {
                0.6745 * (v - m) / mad
            } else {
                0.0
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn run(run_id: u32, block: u32, freq_hz: u64, wall_ns: u64, samples: u64) -> Run {
        Run {
            run_id,
            kind: results_format::RunKind::Loss,
            design: results_format::Design::Classic,
            block,
            freq_hz,
            rep: block,
            workload: "command".into(),
            contents: "perf-default".into(),
            status: results_format::RunStatus::Ok,
            wall_ns,
            samples,
            achieved_hz: samples as f64 / (wall_ns as f64 * 1e-9),
            iterations: 1,
            ..Run::default()
        }
    }

    #[test]
    fn modified_z_matches_hand_values_and_flags_one_outlier() {
        // median 11, |dev| = 1, 0, 2, 1, 29 -> MAD 1; z = 0.6745 (x - 11).
        let z = modified_z(&[10.0, 11.0, 9.0, 12.0, 40.0]);
        let want = [-0.6745, 0.0, -1.349, 0.6745, 19.5605];
        for (a, b) in z.iter().zip(want) {
            assert!((a - b).abs() < 1e-9, "{z:?}");
        }
        assert_eq!(modified_z(&[5.0, 5.0, 5.0]), vec![0.0; 3]);
    }

    #[test]
    fn loss_is_paired_within_blocks_so_drift_between_blocks_cancels() {
        // The host gets slower block by block (1.0, 1.5, 2.0 s at 0 Hz);
        // sampling costs exactly 2 % of throughput in every block:
        // wall_F = wall_0 / 0.98.
        let mut runs = Vec::new();
        for (b, w0) in [1.0e9, 1.5e9, 2.0e9].iter().enumerate() {
            let b = b as u32;
            runs.push(run(10 * b, b, 0, *w0 as u64, 0));
            runs.push(run(10 * b + 1, b, 1000, (*w0 / 0.98) as u64, 1000));
        }
        let t = command_table(&runs);
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].freq_hz, t[1].freq_hz), (0, 1000));
        let loss = t[1].loss_pct.unwrap();
        assert!((loss.value - 2.0).abs() < 1e-6, "{loss:?}");
        // No spread within blocks: the interval is (numerically) a point,
        // where an unpaired comparison would span the drift.
        assert!(loss.hi - loss.lo < 1e-6, "{loss:?}");
        assert_eq!(loss.n, 3);
        // (w0/0.98 - w0) / 1000 samples.
        let c = t[1].cost_per_sample_ns.unwrap();
        let want =
            (1.0e9 / 0.98 - 1.0e9 + 1.5e9 / 0.98 - 1.5e9 + 2.0e9 / 0.98 - 2.0e9) / 3.0 / 1000.0;
        assert!((c.value - want).abs() < 1.0, "{c:?} vs {want}");
        assert!(t[0].loss_pct.is_none());
    }

    #[test]
    fn interval_is_the_t_interval_of_the_log_ratios() {
        // numpy/scipy: d = log([1.01, 1.03, 1.02]); lo, hi =
        // scipy.stats.t.interval(0.95, 2, loc=d.mean(), scale=sem(d));
        // 100 (1 - exp(-x)) for x in (mean, lo, hi).
        let d = [1.01f64.ln(), 1.03f64.ln(), 1.02f64.ln()];
        let e = loss_from_log_ratios(&d);
        assert!((e.value - 1.957_643_037_988_443_5).abs() < 1e-9, "{e:?}");
        assert!((e.lo - -0.459_510_764_394_233_1).abs() < 1e-6, "{e:?}");
        assert!((e.hi - 4.316_637_762_550_457).abs() < 1e-6, "{e:?}");
        assert_eq!(e.n, 3);
    }

    #[test]
    fn failed_runs_are_counted_not_used_and_outliers_are_named() {
        let mut runs = Vec::new();
        for b in 0..6 {
            runs.push(run(
                10 * b,
                b,
                0,
                1_000_000_000 + u64::from(b) * 1_000_000,
                0,
            ));
            let wall = if b == 5 {
                3_000_000_000
            } else {
                1_010_000_000 + u64::from(b) * 1_000_000
            };
            runs.push(run(10 * b + 1, b, 100, wall, 100));
        }
        runs.push(Run {
            status: results_format::RunStatus::Failed,
            ..run(99, 6, 100, 0, 0)
        });
        // Not the command's: ignored.
        runs.push(Run {
            workload: "loop".into(),
            ..run(98, 0, 100, 5, 5)
        });
        let t = command_table(&runs);
        let r = t.iter().find(|r| r.freq_hz == 100).unwrap();
        assert_eq!((r.runs, r.failed), (6, 1));
        assert_eq!(r.outliers, vec![51]);
        assert_eq!(r.loss_pct.unwrap().n, 6);
        assert!((r.wall_max_s - 3.0).abs() < 1e-12);
        // Three runs are too few to call one an outlier.
        let few: Vec<Run> = runs.iter().filter(|r| r.block >= 3).cloned().collect();
        let r = command_table(&few)
            .into_iter()
            .find(|r| r.freq_hz == 100)
            .unwrap();
        assert_eq!((r.runs, r.outliers.len()), (3, 0));
    }
}
