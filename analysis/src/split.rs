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
//! Since r = s (1 - g) in every phase, (1 - in)(1 - out) is the total
//! up to the covariance of s and g across a group's two phases:
//! [`SplitRow::closure_pp`] shows how far. Each part is the mean of the
//! runs' group means with a t interval over runs, as the paired loss.

use std::collections::BTreeMap;

use results_format::phase_check::judge_run;
use results_format::timeline::{gaps_path, read_gaps_parquet};
use results_format::{Design, RunKind};
use serde::Serialize;

use crate::error::AnalysisError;
use crate::load::{Phase, ResultSet};
use crate::stats::{Estimate, mean, t_interval};

/// One kept phase of a split run.
#[derive(Debug, Clone, Serialize)]
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
}

/// One rate's split: each part in % of the loop's work, over runs.
#[derive(Debug, Clone, Serialize)]
pub struct SplitRow {
    pub freq_hz: u64,
    pub runs: usize,
    pub groups: usize,
    /// The paired loss of the same groups.
    pub total: Estimate,
    pub in_gaps: Estimate,
    pub outside: Estimate,
    /// total - (1 - (1 - in)(1 - out)), percentage points, mean over runs.
    pub closure_pp: f64,
    /// Samples per second of sampling-on time.
    pub achieved_hz: f64,
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
    let side = |on: bool, f: &dyn Fn(&SplitPhase) -> f64| -> Vec<f64> {
        g.iter()
            .filter(|p| p.sampling == on)
            .map(|p| f(p))
            .filter(|x| x.is_finite())
            .collect()
    };
    let part = |f: &dyn Fn(&SplitPhase) -> f64| {
        let (on, off) = (side(true, f), side(false, f));
        (!on.is_empty() && !off.is_empty()).then(|| 100.0 * (1.0 - mean(&on) / mean(&off)))
    };
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

/// A kept phase with its gaps (sorted by start) in `kept`, the run's
/// stretches whose gaps its raw files hold (sorted; the whole run unless
/// thinned).
fn split_phase(
    p: &Phase,
    gaps: &[results_format::timeline::Gap],
    kept: &[(u64, u64)],
) -> SplitPhase {
    let (mut gap_ns, mut n, mut kept_ns) = (0u64, 0u64, 0u64);
    let mut episodes: Vec<u32> = Vec::new();
    let first = kept.partition_point(|&(_, hi)| hi <= p.start_ns);
    for &(lo, hi) in kept[first..].iter().take_while(|&&(lo, _)| lo < p.end_ns) {
        let (lo, hi) = (lo.max(p.start_ns), hi.min(p.end_ns));
        kept_ns += hi.saturating_sub(lo);
        let from = gaps.partition_point(|g| g.start_ns < lo);
        let to = gaps.partition_point(|g| g.start_ns < hi);
        for g in &gaps[from..to] {
            gap_ns += g.excess_ns;
            n += 1;
            episodes.push(g.episode);
        }
    }
    episodes.dedup();
    let duration_ns = p.end_ns.saturating_sub(p.start_ns);
    // The gap share of the kept time stands for the phase's.
    let gap_share = if kept_ns > 0 {
        gap_ns as f64 / kept_ns as f64
    } else {
        f64::NAN
    };
    let outside_ns = duration_ns as f64 * (1.0 - gap_share);
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
        speed_outside: if outside_ns > 0.0 {
            p.iterations as f64 / outside_ns
        } else {
            f64::NAN
        },
    }
}

/// The split design's table of `rs`.
pub fn split_table(rs: &ResultSet) -> Result<SplitTable, AnalysisError> {
    let runs: Vec<_> = rs
        .runs
        .iter()
        .filter(|r| r.ok() && r.kind == RunKind::Loss && r.design == Design::Split)
        .collect();
    if runs.is_empty() {
        return Ok(SplitTable::default());
    }
    let phase_ns = rs.manifest.options["phase_ns"].as_u64().unwrap_or(0);
    let by_run = rs.phases_by_run();
    let mut table = SplitTable::default();
    // Per rate: each run's group means of (total, in, out), its groups,
    // and the sampling-on samples and time.
    type RunParts = Vec<(f64, f64, f64)>;
    let mut per_rate: BTreeMap<u64, (Vec<RunParts>, u64, u64)> = BTreeMap::new();
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
        let entry = per_rate.entry(r.freq_hz).or_default();
        for group in &judged.kept {
            let split: Vec<SplitPhase> =
                group.iter().map(|p| split_phase(p, &gaps, &kept)).collect();
            for p in split.iter().filter(|p| p.sampling) {
                entry.1 += p.samples;
                entry.2 += p.duration_ns;
            }
            if let Some(parts) = group_parts(&split.iter().collect::<Vec<_>>()) {
                groups.push(parts);
            }
            table.phases.extend(split);
        }
        entry.0.push(groups);
    }
    for (freq_hz, (runs, on_samples, on_ns)) in per_rate {
        let runs: Vec<RunParts> = runs.into_iter().filter(|g| !g.is_empty()).collect();
        if runs.is_empty() {
            continue;
        }
        let run_mean = |f: fn(&(f64, f64, f64)) -> f64| -> Vec<f64> {
            runs.iter()
                .map(|g| mean(&g.iter().map(f).collect::<Vec<_>>()))
                .collect()
        };
        let closure: Vec<f64> = runs
            .iter()
            .flatten()
            .map(|(t, i, o)| t - 100.0 * (1.0 - (1.0 - i / 100.0) * (1.0 - o / 100.0)))
            .collect();
        table.rows.push(SplitRow {
            freq_hz,
            runs: runs.len(),
            groups: runs.iter().map(Vec::len).sum(),
            total: t_interval(&run_mean(|x| x.0)),
            in_gaps: t_interval(&run_mean(|x| x.1)),
            outside: t_interval(&run_mean(|x| x.2)),
            closure_pp: mean(&closure),
            achieved_hz: if on_ns > 0 {
                on_samples as f64 * 1e9 / on_ns as f64
            } else {
                f64::NAN
            },
        });
    }
    Ok(table)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn phase(sampling: bool, gap_ns: u64, speed: f64) -> SplitPhase {
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
}
