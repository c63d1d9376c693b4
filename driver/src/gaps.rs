//! The gaps design after a run: the workload's timeline (its gaps file and
//! report) and the sampler's sample times become the run's episodes and
//! matches (results_format::timeline defines the files they are written to).
//!
//! Gaps are joined into episodes ([`join_episodes`]); each sample of the
//! measured CPU inside the loop's window is matched to the episode that
//! holds its timestamp ([`match_times`]). Nothing is dropped: samples
//! outside every episode are counted (`unmatched_samples`), gaps the
//! workload could not store are counted (`gaps_dropped`), the workload's
//! problems are sentences in the row's `warnings`, and too many samples in
//! no gap is logged (`TimelineRow::unmatched_warning`).

use results_format::timeline::{
    Episode, Gap, RecoveryRow, TimelineRow, join_episodes, match_times,
};
use workload::timeline::TimelineReport;

/// What a gaps-design run adds: written to gaps/, samples/, timeline.csv
/// and recovery.csv (results_format::timeline defines them).
#[derive(Debug, Clone, Default)]
pub struct TimelineOutcome {
    /// The gaps, joined into episodes.
    pub gaps: Vec<Gap>,
    /// Sample times in the loop's window, sorted, and the episode holding
    /// each (-1: none).
    pub sample_times_ns: Vec<u64>,
    /// See `sample_times_ns`.
    pub sample_episodes: Vec<i64>,
    /// The timeline.csv row (`run_id`, `freq_hz`, `rep` filled by the executor).
    pub row: TimelineRow,
    /// The recovery.csv rows (likewise).
    pub recovery: Vec<RecoveryRow>,
}

/// The workload's gaps file rows (start_ns, end_ns, excess_ns) as gaps,
/// not yet joined into episodes.
pub fn gaps_of(raw_gaps: &[[u64; 3]]) -> Vec<Gap> {
    raw_gaps
        .iter()
        .map(|&[start_ns, end_ns, excess_ns]| Gap {
            start_ns,
            end_ns,
            excess_ns,
            episode: 0,
        })
        .collect()
}

/// Builds a gaps run's outcome from the workload's timeline report, its
/// gaps (start_ns, end_ns, excess_ns, in time order) and the sample times
/// of the measured CPU (any order; those outside the loop are left out).
pub fn timeline_outcome(
    report: &TimelineReport,
    raw_gaps: &[[u64; 3]],
    sample_times_ns: &[u64],
) -> TimelineOutcome {
    let mut gaps = gaps_of(raw_gaps);
    let episodes = join_episodes(&mut gaps);
    let times = samples_in_loop(report, sample_times_ns);
    let matched = match_times(&episodes, &times);
    let row = timeline_row(report, &episodes, &matched);
    TimelineOutcome {
        gaps,
        sample_times_ns: times,
        sample_episodes: matched,
        row,
        recovery: recovery_rows(report),
    }
}

/// The sample times within the loop's window, sorted.
fn samples_in_loop(report: &TimelineReport, sample_times_ns: &[u64]) -> Vec<u64> {
    let mut times: Vec<u64> = sample_times_ns
        .iter()
        .copied()
        .filter(|&t| t >= report.loop_start_ns && t <= report.loop_end_ns)
        .collect();
    times.sort_unstable();
    times
}

/// The timeline.csv row: the workload's report, the match counts and the
/// workload's warnings. Too many samples in no gap is not among them: the
/// row's counts hold it, the analysis warns of it from them, and the
/// driver logs it (`TimelineRow::unmatched_warning`).
fn timeline_row(report: &TimelineReport, episodes: &[Episode], matched: &[i64]) -> TimelineRow {
    // Episodes holding at least one sample (`matched`: each sample's
    // episode, -1 for none).
    let mut hit = vec![false; episodes.len()];
    for &m in matched {
        if let Some(h) = usize::try_from(m).ok().and_then(|i| hit.get_mut(i)) {
            *h = true;
        }
    }
    let samples = matched.len() as u64;
    let matched_samples = matched.iter().filter(|&&m| m >= 0).count() as u64;
    TimelineRow {
        stamp_chunk_iterations: report.stamp_chunk_iterations,
        stamp_chunk_ns: report.stamp_chunk_ns,
        stamp_cost_ns: report.stamp_cost_ns,
        gap_threshold_ns: report.gap_threshold_ns,
        loop_start_ns: report.loop_start_ns,
        loop_end_ns: report.loop_end_ns,
        tsc_per_ns: report.tsc_per_ns,
        gaps: report.gaps,
        gaps_dropped: report.gaps_dropped,
        episodes: episodes.len() as u64,
        gap_time_ns: report.gap_time_ns,
        samples,
        matched_samples,
        unmatched_samples: samples - matched_samples,
        matched_episodes: hit.iter().filter(|&&h| h).count() as u64,
        matched_excess_ns: episodes
            .iter()
            .zip(&hit)
            .filter(|(_, h)| **h)
            .map(|(e, _)| e.excess_ns)
            .sum(),
        warnings: report.warnings.join("; "),
        ..TimelineRow::default()
    }
}

/// The recovery.csv rows: the workload's recovery histogram, one row a bin.
fn recovery_rows(report: &TimelineReport) -> Vec<RecoveryRow> {
    report
        .recovery
        .iter()
        .enumerate()
        .map(|(bin, b)| RecoveryRow {
            bin: u32::try_from(bin).unwrap_or(u32::MAX),
            from_ns: b.from_ns,
            to_ns: b.to_ns,
            chunks: b.chunks,
            chunk_ns_sum: b.chunk_ns_sum,
            excess_ns_sum: b.excess_ns_sum,
            ..RecoveryRow::default()
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn report() -> TimelineReport {
        TimelineReport {
            loop_start_ns: 1_000,
            loop_end_ns: 1_000_000,
            gap_threshold_ns: 1_000,
            gaps: 4,
            gaps_dropped: 1,
            ..TimelineReport::default()
        }
    }

    #[test]
    fn samples_are_matched_to_episodes_and_the_rest_counted() {
        let gaps = [
            [10_000, 20_000, 9_000],
            [20_100, 21_000, 800], // joins the first
            [100_000, 112_000, 11_000],
        ];
        // 500: before the loop (left out); 15_000 and 20_500: the first
        // episode (once); 50_000: no gap; 2_000_000: after the loop.
        let out = timeline_outcome(&report(), &gaps, &[50_000, 15_000, 500, 20_500, 2_000_000]);
        assert_eq!(out.sample_times_ns, vec![15_000, 20_500, 50_000]);
        assert_eq!(out.sample_episodes, vec![0, 0, -1]);
        let r = &out.row;
        assert_eq!(
            (r.samples, r.matched_samples, r.unmatched_samples),
            (3, 2, 1)
        );
        assert_eq!(r.episodes, 2);
        assert_eq!(r.matched_episodes, 1);
        assert_eq!(r.matched_excess_ns, 9_800);
        assert_eq!(r.gaps_dropped, 1);
        // Logged, not stored: the analysis warns of it from the counts.
        assert!(!r.warnings.contains("fell in no gap"), "{}", r.warnings);
        let w = r.unmatched_warning().unwrap();
        assert!(w.starts_with("1 of 3 samples fell in no gap"), "{w}");
        assert_eq!(
            out.gaps.iter().map(|g| g.episode).collect::<Vec<_>>(),
            vec![0, 0, 1]
        );
    }

    #[test]
    fn a_background_run_has_no_samples_and_no_warning() {
        let out = timeline_outcome(&report(), &[[10_000, 20_000, 9_000]], &[]);
        assert_eq!(out.row.samples, 0);
        assert!(out.row.warnings.is_empty());
        assert_eq!(out.row.unmatched_warning(), None);
        assert_eq!(out.row.episodes, 1);
    }
}
