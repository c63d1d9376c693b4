//! The split design (issue 32): the paired design's ABBA phases in a run
//! whose loop stamps its timeline. Per phase, the work done, the time in
//! gaps and the loop's speed outside them; per kept group, sampling on
//! against off, the loss splits into
//!
//! - **in the gaps**: 1 - mean(1 - g_on) / mean(1 - g_off), g a phase's
//!   share of time in gaps (each gap's excess, by its start). Where the
//!   run's raw files were thinned (runs.csv `raw_keep_every` > 1: whole
//!   10 ms slices kept), g is the share inside the phase's kept slices;
//! - **outside the gaps**: 1 - mean(s_on) / mean(s_off), s the loop's
//!   speed outside the gaps (iterations / (phase - gap time));
//! - **the total**: the paired loss of the same groups,
//!   1 - mean(r_on) / mean(r_off) ([`crate::tables::abba_losses`]).
//!
//! Two checks of what a within-run comparison cannot see:
//!
//! - **a speed-mode change inside a phase**: the driver reads the counter
//!   halfway through each phase (phases.csv `mid_ns`); a phase whose two
//!   halves' speeds outside the gaps differ by [`MODE_CHANGE_RATIO`] or
//!   more is counted as such ([`SplitPhase::mode_change`]), kept, and
//!   shown;
//! - **a slowdown that outlasts the phase** (a slow mode that sampling
//!   starts and the off phases inherit): per block, the off phases' speed
//!   outside the gaps against the same block's 0 Hz split runs
//!   ([`SplitRow::carryover`]), and the on phases' against them
//!   ([`SplitRow::outside_vs_zero`]). Between runs, so the run-to-run
//!   noise is back in these two, with a t interval over blocks.
//!
//! Since r = s (1 - g) in every phase, (1 - in)(1 - out) is the total
//! up to the covariance of s and g across a group's two phases:
//! [`SplitRow::closure_pp`] shows how far. Each part is the mean of the
//! runs' group means with a t interval over runs, as the paired loss.

use std::collections::BTreeMap;

use results_format::phase_check::judge_run;
use results_format::timeline::{gaps_path, read_gaps_parquet};
use results_format::{Design, RunKind};
use serde::Serialize;

use crate::columns::lo_hi_se;
use crate::error::AnalysisError;
use crate::load::{Phase, ResultSet};
use crate::stats::{Estimate, mean, mean_of, on_off_loss, t_interval_of};

mod outlast;
use outlast::{against_zero_hz, off_recovery};

/// A phase whose two halves' speeds outside the gaps differ by this
/// factor or more changed speed mode inside it. The modes seen differ by
/// 2x or more (the development VM's speed steps, the Xeon guest's 0.4
/// against 1-2.4 iterations/ns); two halves of an ordinary phase differ by
/// about 1 %.
pub const MODE_CHANGE_RATIO: f64 = 1.5;

/// One kept phase of a split run (a row of split_phases.csv).
#[derive(Debug, Clone, Default, Serialize)]
pub struct SplitPhase {
    pub run_id: u32,
    pub freq_hz: u64,
    pub phase: u32,
    pub group: u32,
    pub sampling: bool,
    pub duration_ns: u64,
    pub iterations: u64,
    /// Samples in the phase (phases.csv).
    pub samples: u64,
    /// Gaps that start in the phase, and the episodes they belong to.
    pub gaps: u64,
    pub episodes: u64,
    /// The gaps' summed excess, ns.
    pub gap_ns: u64,
    /// The phase's time in kept slices, ns: its duration unless the run's
    /// raw files were thinned; the gaps counted are those in it.
    pub kept_ns: u64,
    /// Iterations per ns outside the gaps.
    pub speed_outside: f64,
    /// The same in the phase's first and second halves (NaN where the
    /// driver did not read the counter halfway: older sets).
    pub speed_first: f64,
    pub speed_second: f64,
    /// The halves' speeds differ by [`MODE_CHANGE_RATIO`] or more.
    pub mode_change: bool,
}

/// One rate's split: each part in % of the loop's work, over runs (a row
/// of split.csv).
#[derive(Debug, Clone, Default, Serialize)]
pub struct SplitRow {
    pub freq_hz: u64,
    pub runs: usize,
    pub groups: usize,
    /// Samples per second of sampling-on time.
    pub achieved_hz: f64,
    /// The paired loss of the same groups.
    #[serde(rename = "total_pct", serialize_with = "lo_hi_se")]
    pub total: Estimate,
    #[serde(rename = "in_gaps_pct", serialize_with = "lo_hi_se")]
    pub in_gaps: Estimate,
    #[serde(rename = "outside_pct", serialize_with = "lo_hi_se")]
    pub outside: Estimate,
    /// total - (1 - (1 - in)(1 - out)), percentage points, mean over runs.
    pub closure_pp: f64,
    /// Per block, 1 - s_off / s_0Hz, %: the off phases' speed outside the
    /// gaps against the same block's 0 Hz split runs; above 0 where a
    /// slowdown outlasts the phase. NaN without 0 Hz split runs (and at
    /// 0 Hz).
    #[serde(rename = "carryover_pct", serialize_with = "lo_hi_se")]
    pub carryover: Estimate,
    /// Per block, 1 - s_on / s_0Hz, %: the loss outside the gaps against
    /// the 0 Hz runs, the part that outlasts the phase included.
    #[serde(rename = "outside_vs_zero_pct", serialize_with = "lo_hi_se")]
    pub outside_vs_zero: Estimate,
    /// Kept phases whose halves were read, and those of them that changed
    /// speed mode inside, with sampling on and off.
    pub halved: usize,
    pub mode_changes_on: usize,
    pub mode_changes_off: usize,
    /// In the off phases that follow an on phase, 100 (s_second /
    /// s_first - 1), mean per run, t interval over runs: above 0 where the loop
    /// recovers inside the off phase, a slowdown that outlasts the on
    /// phase by part of a phase, which the within-run outside part
    /// undercounts (a longer `--phase` holds more of it).
    #[serde(rename = "off_recovery_pct", serialize_with = "lo_hi_se")]
    pub off_recovery: Estimate,
}

/// The split design's table and its phases; empty without split runs, or
/// where the gaps files were removed (`gaps_removed`).
#[derive(Debug, Clone, Default)]
pub struct SplitTable {
    pub rows: Vec<SplitRow>,
    pub phases: Vec<SplitPhase>,
}

/// A group's three parts, %: (total, in the gaps, outside them).
fn group_parts(g: &[&SplitPhase]) -> Option<(f64, f64, f64)> {
    let part = |f: &dyn Fn(&SplitPhase) -> f64| on_off_loss(g, |p| p.sampling, |p| f(p));
    let rate = |p: &SplitPhase| p.iterations as f64 / p.duration_ns as f64;
    let outside_share = |p: &SplitPhase| 1.0 - p.gap_ns as f64 / p.kept_ns as f64;
    let total = part(&rate)?;
    let in_gaps = part(&outside_share)?;
    let outside = part(&|p: &SplitPhase| p.speed_outside)?;
    [total, in_gaps, outside]
        .iter()
        .all(|x| x.is_finite())
        .then_some((total, in_gaps, outside))
}

/// The gaps that start in [lo, hi) within the `kept` stretches: (their
/// summed excess, their count, the kept time of [lo, hi)), pushing their
/// episodes onto `episodes`.
fn gaps_within(
    (lo, hi): (u64, u64),
    gaps: &[results_format::timeline::Gap],
    kept: &[(u64, u64)],
    episodes: &mut Vec<u32>,
) -> (u64, u64, u64) {
    let (mut gap_ns, mut n, mut kept_ns) = (0u64, 0u64, 0u64);
    let first = kept.partition_point(|&(_, h)| h <= lo);
    for &(a, b) in kept[first..].iter().take_while(|&&(a, _)| a < hi) {
        let (a, b) = (a.max(lo), b.min(hi));
        kept_ns += b.saturating_sub(a);
        let from = gaps.partition_point(|g| g.start_ns < a);
        let to = gaps.partition_point(|g| g.start_ns < b);
        for g in &gaps[from..to] {
            gap_ns += g.excess_ns;
            n += 1;
            episodes.push(g.episode);
        }
    }
    (gap_ns, n, kept_ns)
}

/// Iterations per ns outside the gaps of a stretch `duration_ns` long
/// whose kept part of `kept_ns` holds `gap_ns` of gaps: the gap share of
/// the kept time stands for the stretch's. NaN where nothing is left.
fn speed_outside(iterations: u64, duration_ns: u64, gap_ns: u64, kept_ns: u64) -> f64 {
    // Nothing kept makes the share NaN or infinite, so no time outside.
    let outside_ns = duration_ns as f64 * (1.0 - gap_ns as f64 / kept_ns as f64);
    if outside_ns > 0.0 {
        iterations as f64 / outside_ns
    } else {
        f64::NAN
    }
}

/// A kept phase with its gaps (sorted by start) in `kept`, the run's
/// stretches whose gaps its raw files hold (sorted; the whole run unless
/// thinned).
fn split_phase(
    p: &Phase,
    gaps: &[results_format::timeline::Gap],
    kept: &[(u64, u64)],
) -> SplitPhase {
    let mut episodes: Vec<u32> = Vec::new();
    let (gap_ns, n, kept_ns) = gaps_within((p.start_ns, p.end_ns), gaps, kept, &mut episodes);
    episodes.dedup();
    let duration_ns = p.end_ns.saturating_sub(p.start_ns);
    // Each half's speed, where the driver read the counter halfway.
    let (speed_first, speed_second) =
        if p.mid_ns > p.start_ns && p.mid_ns < p.end_ns && p.mid_iterations <= p.iterations {
            let half = |(lo, hi): (u64, u64), it: u64| {
                let (g, _, k) = gaps_within((lo, hi), gaps, kept, &mut Vec::new());
                speed_outside(it, hi - lo, g, k)
            };
            (
                half((p.start_ns, p.mid_ns), p.mid_iterations),
                half((p.mid_ns, p.end_ns), p.iterations - p.mid_iterations),
            )
        } else {
            (f64::NAN, f64::NAN)
        };
    let ratio = speed_first.max(speed_second) / speed_first.min(speed_second);
    SplitPhase {
        run_id: p.run_id,
        freq_hz: p.freq_hz,
        phase: p.phase,
        group: p.group,
        sampling: p.sampling,
        duration_ns,
        iterations: p.iterations,
        samples: p.samples,
        gaps: n,
        episodes: episodes.len() as u64,
        gap_ns,
        kept_ns,
        speed_outside: speed_outside(p.iterations, duration_ns, gap_ns, kept_ns),
        speed_first,
        speed_second,
        // A half without work (speed 0) gives an infinite ratio: a change.
        mode_change: speed_first.is_finite()
            && speed_second.is_finite()
            && ratio >= MODE_CHANGE_RATIO,
    }
}

/// The split design's table of `rs`.
pub fn split_table(rs: &ResultSet) -> Result<SplitTable, AnalysisError> {
    let runs: Vec<_> = rs
        .runs
        .iter()
        .filter(|r| r.ok() && r.kind == RunKind::Loss && r.design == Design::Split)
        .collect();
    let phase_ns = rs.manifest.options["phase_ns"].as_u64().unwrap_or(0);
    let by_run = rs.phases_by_run();
    let block_of: BTreeMap<u32, u32> = runs.iter().map(|r| (r.run_id, r.block)).collect();
    let mut table = SplitTable::default();
    // Per rate: each run's group means of (total, in, out).
    type RunParts = Vec<(f64, f64, f64)>;
    let mut per_rate: BTreeMap<u64, Vec<RunParts>> = BTreeMap::new();
    for r in runs {
        let Some(phases) = by_run.get(&r.run_id) else {
            continue;
        };
        let path = gaps_path(&rs.dir, r.run_id);
        if !path.exists() {
            continue;
        }
        let mut gaps = read_gaps_parquet(&path)?;
        gaps.sort_by_key(|g| g.start_ns);
        let judged = judge_run(phases, phase_ns);
        let (from, to) = phases.iter().fold((u64::MAX, 0), |(a, b), p| {
            (a.min(p.start_ns), b.max(p.end_ns))
        });
        let kept = crate::latency::spans((from, to), r.raw_keep_every.unwrap_or(1));
        let mut groups = Vec::new();
        for group in &judged.kept {
            let split: Vec<SplitPhase> =
                group.iter().map(|p| split_phase(p, &gaps, &kept)).collect();
            groups.extend(group_parts(&split.iter().collect::<Vec<_>>()));
            table.phases.extend(split);
        }
        per_rate.entry(r.freq_hz).or_default().push(groups);
    }
    for (freq_hz, runs) in per_rate {
        let runs: Vec<RunParts> = runs.into_iter().filter(|g| !g.is_empty()).collect();
        if runs.is_empty() {
            continue;
        }
        let run_mean = |f: fn(&(f64, f64, f64)) -> f64| {
            t_interval_of(runs.iter().map(|g| mean_of(g.iter().map(f))))
        };
        let closure: Vec<f64> = runs
            .iter()
            .flatten()
            .map(|(t, i, o)| t - 100.0 * (1.0 - (1.0 - i / 100.0) * (1.0 - o / 100.0)))
            .collect();
        let at = || table.phases.iter().filter(|p| p.freq_hz == freq_hz);
        // The sampling-on samples and time, and the phases whose halves
        // were read.
        let on = at().filter(|p| p.sampling);
        let (on_samples, on_ns) = on.fold((0, 0), |(s, t), p| (s + p.samples, t + p.duration_ns));
        let halved: Vec<&SplitPhase> = at().filter(|p| p.speed_first.is_finite()).collect();
        let changes = |on: bool| {
            halved
                .iter()
                .filter(|p| p.mode_change && p.sampling == on)
                .count()
        };
        table.rows.push(SplitRow {
            freq_hz,
            runs: runs.len(),
            groups: runs.iter().map(Vec::len).sum(),
            total: run_mean(|x| x.0),
            in_gaps: run_mean(|x| x.1),
            outside: run_mean(|x| x.2),
            closure_pp: mean(&closure),
            achieved_hz: if on_ns > 0 {
                on_samples as f64 * 1e9 / on_ns as f64
            } else {
                f64::NAN
            },
            halved: halved.len(),
            mode_changes_on: changes(true),
            mode_changes_off: changes(false),
            carryover: against_zero_hz(&table.phases, &block_of, freq_hz, |p| !p.sampling),
            outside_vs_zero: against_zero_hz(&table.phases, &block_of, freq_hz, |p| p.sampling),
            off_recovery: off_recovery(&table.phases, freq_hz),
        });
    }
    Ok(table)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(super) mod tests {
    use super::*;

    /// A 100 ms phase at 1 kHz with `gap_ns` of gaps, at `speed` outside
    /// them in both halves (the split modules' tests build on it).
    pub(crate) fn phase(sampling: bool, gap_ns: u64, speed: f64) -> SplitPhase {
        let duration_ns = 100_000_000;
        SplitPhase {
            run_id: 0,
            freq_hz: 1000,
            phase: 0,
            group: 0,
            sampling,
            duration_ns,
            iterations: (speed * (duration_ns - gap_ns) as f64).round() as u64,
            samples: 0,
            gaps: 1,
            episodes: 1,
            gap_ns,
            kept_ns: duration_ns,
            speed_outside: speed,
            speed_first: speed,
            speed_second: speed,
            mode_change: false,
        }
    }

    /// Off: 1 % of the time in gaps; on: 3 % and the loop 5 % slower
    /// outside them. In the gaps 1 - 0.97/0.99, outside 5 %, and the total
    /// is the product of the two, to rounding of the iteration counts.
    #[test]
    fn a_group_splits_into_its_known_parts() {
        let off = phase(false, 1_000_000, 2.0);
        let on = phase(true, 3_000_000, 1.9);
        let g = [&off, &on, &on, &off];
        let (total, in_gaps, outside) = group_parts(&g).unwrap();
        assert!(
            (in_gaps - 100.0 * (1.0 - 0.97 / 0.99)).abs() < 1e-9,
            "{in_gaps}"
        );
        assert!((outside - 5.0).abs() < 1e-9, "{outside}");
        let product = 100.0 * (1.0 - 0.95 * 0.97 / 0.99);
        assert!((total - product).abs() < 1e-6, "{total} vs {product}");
        // Without a slower loop the outside part is 0 and the total is the
        // gaps' alone.
        let on_same_speed = phase(true, 3_000_000, 2.0);
        let g = [&on_same_speed, &off, &off, &on_same_speed];
        let (total, in_gaps, outside) = group_parts(&g).unwrap();
        assert!(outside.abs() < 1e-12 && (total - in_gaps).abs() < 1e-6);
        // A group without both states gives nothing.
        assert!(group_parts(&[&off, &off, &off, &off]).is_none());
    }

    /// A phase's gaps are those that start in [start, end); their
    /// episodes are counted once each.
    #[test]
    fn a_phase_holds_the_gaps_that_start_in_it() {
        use results_format::timeline::Gap;
        let gap = |start_ns: u64, excess_ns: u64, episode: u32| Gap {
            start_ns,
            end_ns: start_ns + 10_000,
            excess_ns,
            episode,
        };
        let gaps = [
            gap(50, 7, 0),
            gap(100, 1_000, 1),
            gap(150, 2_000, 1),
            gap(300, 9, 2),
        ];
        let p = Phase {
            run_id: 3,
            phase: 1,
            sampling: true,
            start_ns: 100,
            end_ns: 300,
            iterations: 1_000,
            freq_hz: 4000,
            ..Phase::default()
        };
        let s = split_phase(&p, &gaps, &[(0, 1_000)]);
        assert_eq!(
            (s.gaps, s.episodes, s.gap_ns, s.kept_ns),
            (2, 1, 3_000, 200)
        );
        // 200 ns long, 3000 ns of excess: no time outside, no speed.
        assert!(s.speed_outside.is_nan());
    }

    /// A thinned run: the phase's gap share is that of its kept slices,
    /// and the speed outside the gaps is its work over the rest of it.
    #[test]
    fn a_thinned_phase_takes_the_gap_share_of_its_kept_slices() {
        use results_format::timeline::Gap;
        let ms = 1_000_000u64;
        // Slices of 10 ms, every other kept: [0, 10), [20, 30), ...
        let kept = crate::latency::spans((0, 100 * ms), 2);
        assert_eq!(kept.len(), 5);
        // 100 us of gaps in each 10 ms slice, kept or not.
        let gaps: Vec<Gap> = (0..10)
            .map(|k| Gap {
                start_ns: k * 10 * ms + ms,
                end_ns: k * 10 * ms + ms + 200_000,
                excess_ns: 100_000,
                episode: k as u32,
            })
            .collect();
        let p = Phase {
            sampling: true,
            start_ns: 0,
            end_ns: 100 * ms,
            iterations: 99_000_000,
            ..Phase::default()
        };
        let s = split_phase(&p, &gaps, &kept);
        assert_eq!((s.gaps, s.kept_ns, s.gap_ns), (5, 50 * ms, 500_000));
        // 1 % of the time in gaps: 99 ms outside, 1 iteration per ns.
        assert!((s.speed_outside - 1.0).abs() < 1e-12, "{}", s.speed_outside);
    }

    /// The driver's read halfway: a phase whose second half ran at 0.4
    /// of the first's changed mode; one with halves 1 % apart did not.
    /// Without the read (older sets) neither half has a speed.
    #[test]
    fn a_phase_whose_halves_differ_changed_mode() {
        let p = |mid_iterations: u64, iterations: u64| Phase {
            sampling: false,
            start_ns: 0,
            end_ns: 100_000_000,
            mid_ns: 50_000_000,
            mid_iterations,
            iterations,
            ..Phase::default()
        };
        let s = split_phase(&p(100_000_000, 140_000_000), &[], &[(0, 100_000_000)]);
        assert!((s.speed_first - 2.0).abs() < 1e-12 && (s.speed_second - 0.8).abs() < 1e-12);
        assert!(s.mode_change);
        let s = split_phase(&p(100_000_000, 199_000_000), &[], &[(0, 100_000_000)]);
        assert!(!s.mode_change, "{} {}", s.speed_first, s.speed_second);
        let old = Phase {
            mid_ns: 0,
            mid_iterations: 0,
            ..p(0, 140_000_000)
        };
        let s = split_phase(&old, &[], &[(0, 100_000_000)]);
        assert!(s.speed_first.is_nan() && !s.mode_change);
    }
}
