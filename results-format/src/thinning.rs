//! Which records a run's raw Parquet files keep at dense rates.
//!
//! A run with more records than [`RAW_RECORDS_PER_RUN`] in one of its raw
//! files (events/, gaps/, samples/) keeps the records of every `every`-th
//! time slice of [`RAW_SLICE_NS`] (slices counted from clock zero, so that
//! the choice depends on nothing but the timestamp), enough slices to stay
//! near the cap. Whole slices spread over the run, not a prefix: the records
//! kept are the run's own, with their local structure intact, from its
//! start to its end. The run's totals are still over every record (runs.csv,
//! timeline.csv, recovery.csv); the tables that need the raw files scale
//! them by the time they cover ([`Thinning::kept_ns`], runs.csv
//! `raw_kept_ns`). At 100 kHz this keeps one slice in eight of an 8 s run:
//! the default sweep's raw files go from 29 to under 10 MB.

/// Most records one raw file of a run keeps before slices are dropped.
pub const RAW_RECORDS_PER_RUN: u64 = 100_000;

/// The length of a slice, ns.
pub const RAW_SLICE_NS: u64 = 10_000_000;

/// A run's thinning: the raw files keep the records whose timestamp falls
/// in a slice `k` with `k % every == 0` (every record when `every` is 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thinning {
    pub every: u64,
}

impl Thinning {
    /// Every record kept.
    pub const ALL: Thinning = Thinning { every: 1 };

    /// The thinning that keeps about [`RAW_RECORDS_PER_RUN`] of `records`
    /// (the largest raw file's record count).
    pub fn for_records(records: u64) -> Self {
        Thinning {
            every: records.div_ceil(RAW_RECORDS_PER_RUN).max(1),
        }
    }

    /// Whether every record is kept.
    pub fn is_all(&self) -> bool {
        self.every <= 1
    }

    /// Whether the record at `t_ns` is kept.
    pub fn keeps(&self, t_ns: u64) -> bool {
        self.is_all() || (t_ns / RAW_SLICE_NS).is_multiple_of(self.every)
    }

    /// The time in `[from_ns, to_ns)` whose records are kept, ns.
    pub fn kept_ns(&self, from_ns: u64, to_ns: u64) -> u64 {
        self.kept_spans(from_ns, to_ns, usize::MAX)
            .iter()
            .map(|(lo, hi)| hi - lo)
            .sum()
    }

    /// The kept stretches of `[from_ns, to_ns)`, in order, at most `max` of
    /// them: the whole range when every record is kept, else each kept
    /// slice cut to the range.
    pub fn kept_spans(&self, from_ns: u64, to_ns: u64, max: usize) -> Vec<(u64, u64)> {
        if to_ns <= from_ns || max == 0 {
            return Vec::new();
        }
        if self.is_all() {
            return vec![(from_ns, to_ns)];
        }
        let mut out = Vec::new();
        let mut k = (from_ns / RAW_SLICE_NS)
            .div_ceil(self.every)
            .saturating_mul(self.every);
        while k.saturating_mul(RAW_SLICE_NS) < to_ns && out.len() < max {
            let lo = (k * RAW_SLICE_NS).max(from_ns);
            let hi = (k + 1).saturating_mul(RAW_SLICE_NS).min(to_ns);
            if hi > lo {
                out.push((lo, hi));
            }
            k = k.saturating_add(self.every);
        }
        out
    }
}

/// A gaps run's timeline as its raw files keep it under `t`: an episode is
/// kept whole when its first gap's start is kept, a sample with its
/// episode (a sample in no episode, `-1`, by its own time). Episode numbers
/// are left as they are, so that samples still name their episode.
pub fn thin_timeline(
    gaps: &[crate::timeline::Gap],
    sample_times_ns: &[u64],
    sample_episodes: &[i64],
    t: Thinning,
) -> (Vec<crate::timeline::Gap>, Vec<u64>, Vec<i64>) {
    if t.is_all() {
        return (
            gaps.to_vec(),
            sample_times_ns.to_vec(),
            sample_episodes.to_vec(),
        );
    }
    let episodes = crate::timeline::episodes_of(gaps);
    let kept = |ep: i64| {
        usize::try_from(ep)
            .ok()
            .and_then(|i| episodes.get(i))
            .is_some_and(|e| e.gaps > 0 && t.keeps(e.start_ns))
    };
    let gaps: Vec<_> = gaps
        .iter()
        .filter(|g| kept(i64::from(g.episode)))
        .cloned()
        .collect();
    let (times, eps): (Vec<u64>, Vec<i64>) = sample_times_ns
        .iter()
        .zip(sample_episodes)
        .filter(|&(&time, &ep)| if ep < 0 { t.keeps(time) } else { kept(ep) })
        .map(|(&time, &ep)| (time, ep))
        .unzip();
    (gaps, times, eps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_runs_keep_everything() {
        assert_eq!(Thinning::for_records(0), Thinning::ALL);
        assert_eq!(Thinning::for_records(RAW_RECORDS_PER_RUN), Thinning::ALL);
        assert_eq!(Thinning::for_records(RAW_RECORDS_PER_RUN + 1).every, 2);
        // 100 kHz for 8 s: one slice in eight.
        assert_eq!(Thinning::for_records(800_000).every, 8);
        assert!(Thinning::ALL.keeps(12_345));
        assert_eq!(Thinning::ALL.kept_ns(5, 17), 12);
    }

    #[test]
    fn kept_time_is_the_kept_slices_inside_the_window() {
        let t = Thinning { every: 4 };
        // Slices 0 and 4 of [0, 50 ms): 20 ms.
        assert_eq!(t.kept_ns(0, 50_000_000), 20_000_000);
        // From 5 ms into slice 0 to 2 ms into slice 4: 5 + 2 ms.
        assert_eq!(t.kept_ns(5_000_000, 42_000_000), 7_000_000);
        assert!(t.keeps(40_000_000) && !t.keeps(39_999_999));
    }

    #[test]
    fn a_thinned_timeline_keeps_whole_episodes_and_their_samples() {
        use crate::timeline::Gap;
        let ms = 1_000_000;
        let gap = |start: u64, episode: u32| Gap {
            start_ns: start,
            end_ns: start + 5_000,
            excess_ns: 4_000,
            episode,
        };
        // Episode 1 starts in slice 0 and runs into slice 1; episode 2 is
        // in slice 1; episode 3 in slice 2.
        let gaps = [
            gap(ms, 0),
            gap(9 * ms + 999_000, 1),
            gap(10 * ms + 500, 1),
            gap(15 * ms, 2),
            gap(25 * ms, 3),
        ];
        let times = [
            ms + 10,
            10 * ms + 600,
            15 * ms + 10,
            16 * ms,
            25 * ms + 10,
            26 * ms,
        ];
        let eps = [0, 1, 2, -1, 3, -1];
        let (g, t, e) = thin_timeline(&gaps, &times, &eps, Thinning { every: 2 });
        assert_eq!(
            g.iter().map(|g| g.episode).collect::<Vec<_>>(),
            [0, 1, 1, 3]
        );
        assert_eq!(e, [0, 1, 3, -1]);
        assert_eq!(t, [ms + 10, 10 * ms + 600, 25 * ms + 10, 26 * ms]);
        let all = thin_timeline(&gaps, &times, &eps, Thinning::ALL);
        assert_eq!((all.0.len(), all.1.len()), (5, 6));
    }

    proptest! {
        /// The kept time counts exactly the nanoseconds `keeps` keeps
        /// (checked on a coarse grid), and is 1/every of the window to within one slice.
        #[test]
        fn kept_ns_agrees_with_keeps(every in 1u64..10, from in 0u64..200, len in 0u64..400) {
            let t = Thinning { every };
            let (a, b) = (from * 1_000_000, (from + len) * 1_000_000);
            let by_ms = (from..from + len).filter(|ms| t.keeps(ms * 1_000_000)).count() as u64;
            prop_assert_eq!(t.kept_ns(a, b), by_ms * 1_000_000);
            // Within one slice of a 1/every share, whatever the window.
            let off = t.kept_ns(a, b) as f64 - (b - a) as f64 / every as f64;
            prop_assert!(off.abs() <= RAW_SLICE_NS as f64, "{off}");
        }
    }
}
