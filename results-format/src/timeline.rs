//! The gaps design's files: the driver writes them with these types and
//! functions, the analysis reads them with the same ones
//! (docs/results-format.md, "gaps design").
//!
//! - `gaps/run-<id>.parquet`: every gap the workload's timeline saw, one row
//!   each ([`Gap`]: `start_ns`, `end_ns`, `excess_ns`, `episode`).
//! - `samples/run-<id>.parquet`: every sample record of the measured CPU
//!   inside the loop's window, one row each (`time_ns`, `episode`: the
//!   episode that contains it, -1 when none does).
//! - `timeline.csv`: one [`TimelineRow`] per gaps run (0 Hz included).
//! - `recovery.csv`: the speed-recovery histogram, one [`RecoveryRow`] per
//!   run and distance bin.
//!
//! A *gap* is one stamped chunk of the workload's loop that took longer than
//! the calibrated threshold: something (an interrupt, the host) took the CPU
//! away inside it. Its `excess_ns` is the chunk's length minus the median
//! length of the three ordinary chunks just before it. One interrupt can
//! show as two gaps a few ns of loop progress apart (the guest resumes briefly between two exits
//! to the host), so gaps closer than [`JOIN_NS`] are joined into one
//! *episode*; a sample's cost to the application is the excess of the
//! episode that contains its timestamp.

use std::path::{Path, PathBuf};

use polars::prelude::*;
use serde::{Deserialize, Serialize};

use crate::FormatError;

/// Gaps whose loop progress between them is shorter than this are one
/// episode (on the development VM split gaps were a few ns of progress apart;
/// 2 us is well below the shortest interval between two samples, 10 us).
pub const JOIN_NS: u64 = 2_000;

/// A sample timestamp this close outside an episode still matches it: the
/// TSC -> CLOCK_MONOTONIC_RAW mapping is good to well under 1 us, and a
/// stamped chunk ends up to one chunk (~100 ns) after the interrupt.
pub const MATCH_SLACK_NS: u64 = 1_000;

/// One gap of the workload's timeline (a row of `gaps/run-<id>.parquet`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gap {
    /// Start of the stamped chunk that held the gap, CLOCK_MONOTONIC_RAW ns.
    pub start_ns: u64,
    /// End of that chunk, CLOCK_MONOTONIC_RAW ns.
    pub end_ns: u64,
    /// Time the loop lost in the chunk: its length minus the median length
    /// of the three ordinary chunks just before it, ns.
    pub excess_ns: u64,
    /// Episode index within the run (gaps joined by [`JOIN_NS`]).
    pub episode: u32,
}

/// An episode: consecutive gaps closer than [`JOIN_NS`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Episode {
    /// Start of its first gap, ns.
    pub start_ns: u64,
    /// End of its last gap, ns.
    pub end_ns: u64,
    /// Sum of its gaps' excess, ns.
    pub excess_ns: u64,
    /// Gaps joined.
    pub gaps: u32,
}

/// Joins time-sorted gaps into episodes, writing each gap's `episode`.
/// Gaps must be sorted by `start_ns` (the workload writes them in order).
pub fn join_episodes(gaps: &mut [Gap]) -> Vec<Episode> {
    let mut episodes: Vec<Episode> = Vec::new();
    for g in gaps.iter_mut() {
        match episodes.last_mut() {
            Some(e) if g.start_ns <= e.end_ns.saturating_add(JOIN_NS) => {
                e.end_ns = e.end_ns.max(g.end_ns);
                e.excess_ns += g.excess_ns;
                e.gaps += 1;
            }
            _ => episodes.push(Episode {
                start_ns: g.start_ns,
                end_ns: g.end_ns,
                excess_ns: g.excess_ns,
                gaps: 1,
            }),
        }
        g.episode = u32::try_from(episodes.len() - 1).unwrap_or(u32::MAX);
    }
    episodes
}

/// For each sorted timestamp, the index of the episode that contains it
/// (within [`MATCH_SLACK_NS`] either side), or -1. Episodes are sorted and
/// disjoint (as [`join_episodes`] makes them).
pub fn match_times(episodes: &[Episode], sorted_times_ns: &[u64]) -> Vec<i64> {
    let mut out = Vec::with_capacity(sorted_times_ns.len());
    let mut k = 0usize;
    for &t in sorted_times_ns {
        // Skip episodes that end (with slack) before t.
        while k < episodes.len() && episodes[k].end_ns.saturating_add(MATCH_SLACK_NS) < t {
            k += 1;
        }
        let hit = episodes
            .get(k)
            .is_some_and(|e| e.start_ns.saturating_sub(MATCH_SLACK_NS) <= t);
        out.push(if hit {
            i64::try_from(k).unwrap_or(-1)
        } else {
            -1
        });
    }
    out
}

/// One gaps run's summary (a row of `timeline.csv`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelineRow {
    /// The run (runs.csv `run_id`).
    pub run_id: u32,
    /// Requested sample_freq (0 = no sampling event: background only).
    pub freq_hz: u64,
    /// Repetition.
    pub rep: u32,
    /// Loop iterations between two stamps.
    pub stamp_chunk_iterations: u64,
    /// Median length of a stamped chunk at calibration, ns.
    pub stamp_chunk_ns: f64,
    /// What one stamp (TSC read, compare, histogram update) adds to a
    /// chunk, ns (median stamped chunk minus the same iterations unstamped).
    pub stamp_cost_ns: f64,
    /// A chunk longer than this is a gap, ns.
    pub gap_threshold_ns: u64,
    /// The timeline's first and last stamp, CLOCK_MONOTONIC_RAW ns.
    pub loop_start_ns: u64,
    /// See `loop_start_ns`.
    pub loop_end_ns: u64,
    /// TSC ticks per ns of CLOCK_MONOTONIC_RAW over the run.
    pub tsc_per_ns: f64,
    /// Gaps seen (stored or not).
    pub gaps: u64,
    /// Gaps not stored because the buffer was full (their time is still in
    /// `gap_time_ns`).
    pub gaps_dropped: u64,
    /// Episodes (stored gaps joined).
    pub episodes: u64,
    /// Sum of every gap's excess, ns (dropped gaps included).
    pub gap_time_ns: u64,
    /// Sample records of the measured CPU inside the loop's window.
    pub samples: u64,
    /// Of those, inside an episode.
    pub matched_samples: u64,
    /// Of those, inside no episode (a sample that cost the loop nothing
    /// visible, or a gap that was dropped).
    pub unmatched_samples: u64,
    /// Episodes holding at least one sample.
    pub matched_episodes: u64,
    /// Sum of the excess of the matched episodes, ns.
    pub matched_excess_ns: u64,
    /// Problems with this run's timeline, `; `-separated (empty when none).
    pub warnings: String,
}

/// A gaps run is warned about when more than this share of its samples
/// fall in no gap (on the development VM every sample fell in one).
pub const UNMATCHED_WARN: f64 = 0.01;

impl TimelineRow {
    /// More than [`UNMATCHED_WARN`] of the run's samples fell in no gap:
    /// their cost is not in the direct cost (the driver logs it, the
    /// analysis warns of it).
    pub fn too_many_unmatched(&self) -> bool {
        self.samples > 0 && self.unmatched_samples as f64 > UNMATCHED_WARN * self.samples as f64
    }

    /// The driver's log line when [`TimelineRow::too_many_unmatched`]:
    /// their cost is not in the direct cost.
    pub fn unmatched_warning(&self) -> Option<String> {
        self.too_many_unmatched().then(|| {
            format!(
                "{} of {} samples fell in no gap of the loop's timeline (the gap threshold is {} ns)",
                self.unmatched_samples, self.samples, self.gap_threshold_ns
            )
        })
    }
}

/// One bin of one run's speed-recovery histogram (a row of `recovery.csv`):
/// the stamped chunks that ended between `from_ns` and `to_ns` after the end
/// of the last gap.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecoveryRow {
    /// The run.
    pub run_id: u32,
    /// Requested sample_freq.
    pub freq_hz: u64,
    /// Bin index (0 = closest to the gap).
    pub bin: u32,
    /// Lower edge, ns after the end of the last gap.
    pub from_ns: u64,
    /// Upper edge, ns (u64::MAX for the open last bin).
    pub to_ns: u64,
    /// Ordinary chunks (not gaps) in the bin.
    pub chunks: u64,
    /// Sum of their lengths, ns.
    pub chunk_ns_sum: f64,
    /// Sum over them of (length - the reference length at the last gap: the
    /// median of the three ordinary chunks before it), ns: the time lost to
    /// the gap's after-effect in this bin.
    pub excess_ns_sum: f64,
}

/// The columns of `gaps/run-<id>.parquet`, in order: each gap's start as
/// its step from the gap before (the first from 0), its length (end -
/// start), its excess, and its episode as its step from the gap before.
pub const GAP_COLUMNS: [&str; 4] = ["start_step_ns", "length_ns", "excess_ns", "episode_step"];
/// The columns of `samples/run-<id>.parquet`, in order: each sample's time
/// as its step from the sample before, its episode (-1: none) likewise.
pub const SAMPLE_COLUMNS: [&str; 2] = ["time_step_ns", "episode_step"];
/// The earlier form of `gaps/run-<id>.parquet` (LZ4, absolute times),
/// still read: the committed sets before 2026-11-26 hold it.
pub const LEGACY_GAP_COLUMNS: [&str; 4] = ["start_ns", "end_ns", "excess_ns", "episode"];
/// The earlier form of `samples/run-<id>.parquet`; see
/// [`LEGACY_GAP_COLUMNS`].
pub const LEGACY_SAMPLE_COLUMNS: [&str; 2] = ["time_ns", "episode"];

const GAPS_WHAT: &str = "timeline gaps of a gaps run";
const SAMPLES_WHAT: &str = "sample times of a gaps run";

/// Writes `gaps/run-<id>.parquet` (atomically: temporary name, then rename).
pub fn write_gaps_parquet(path: &Path, gaps: &[Gap]) -> Result<(), FormatError> {
    let starts: Vec<u64> = gaps.iter().map(|g| g.start_ns).collect();
    let episodes: Vec<i64> = gaps.iter().map(|g| i64::from(g.episode)).collect();
    let df = DataFrame::new(
        gaps.len(),
        vec![
            Column::new(GAP_COLUMNS[0].into(), crate::parquet::to_steps(&starts)),
            Column::new(
                GAP_COLUMNS[1].into(),
                gaps.iter()
                    .map(|g| g.end_ns.wrapping_sub(g.start_ns))
                    .collect::<Vec<u64>>(),
            ),
            Column::new(
                GAP_COLUMNS[2].into(),
                gaps.iter().map(|g| g.excess_ns).collect::<Vec<u64>>(),
            ),
            Column::new(
                GAP_COLUMNS[3].into(),
                crate::parquet::to_steps_i64(&episodes),
            ),
        ],
    )
    .map_err(|e| FormatError::corrupt(path, format!("building the gap table: {e}")))?;
    crate::parquet::write_atomic(path, df)
}

/// Writes `samples/run-<id>.parquet`: sample times and their episode (-1:
/// none), each as its step from the row before.
pub fn write_samples_parquet(
    path: &Path,
    time_ns: &[u64],
    episode: &[i64],
) -> Result<(), FormatError> {
    let df = DataFrame::new(
        time_ns.len(),
        vec![
            Column::new(SAMPLE_COLUMNS[0].into(), crate::parquet::to_steps(time_ns)),
            Column::new(
                SAMPLE_COLUMNS[1].into(),
                crate::parquet::to_steps_i64(episode),
            ),
        ],
    )
    .map_err(|e| FormatError::corrupt(path, format!("building the sample table: {e}")))?;
    crate::parquet::write_atomic(path, df)
}

/// Which form a raw file was read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredForm {
    /// Steps and zstd ([`GAP_COLUMNS`], [`SAMPLE_COLUMNS`]).
    Steps,
    /// Absolute values ([`LEGACY_GAP_COLUMNS`], [`LEGACY_SAMPLE_COLUMNS`]).
    Legacy,
}

/// Reads `gaps/run-<id>.parquet`, in either form.
pub fn read_gaps_parquet(path: &Path) -> Result<Vec<Gap>, FormatError> {
    read_gaps_form(path).map(|(g, _)| g)
}

/// [`read_gaps_parquet`], saying which form the file holds.
pub fn read_gaps_form(path: &Path) -> Result<(Vec<Gap>, StoredForm), FormatError> {
    use crate::parquet::{from_steps, from_steps_i64, i64_column, u64_column};
    let (k, df) =
        crate::parquet::read_first_form(path, GAPS_WHAT, &[&GAP_COLUMNS, &LEGACY_GAP_COLUMNS])?;
    let (start, end, excess, episode, form) = if k == 0 {
        let start = from_steps(&i64_column(&df, GAP_COLUMNS[0], path)?);
        let len = u64_column(&df, GAP_COLUMNS[1], path)?;
        let end = start
            .iter()
            .zip(&len)
            .map(|(s, l)| s.wrapping_add(*l))
            .collect();
        let episode = from_steps_i64(&i64_column(&df, GAP_COLUMNS[3], path)?);
        let excess = u64_column(&df, GAP_COLUMNS[2], path)?;
        (start, end, excess, episode, StoredForm::Steps)
    } else {
        let [start, end, excess, episode] = LEGACY_GAP_COLUMNS;
        (
            u64_column(&df, start, path)?,
            u64_column(&df, end, path)?,
            u64_column(&df, excess, path)?,
            i64_column(&df, episode, path)?,
            StoredForm::Legacy,
        )
    };
    let gaps = (0..start.len())
        .map(|i| Gap {
            start_ns: start[i],
            end_ns: end[i],
            excess_ns: excess[i],
            episode: u32::try_from(episode[i]).unwrap_or(u32::MAX),
        })
        .collect();
    Ok((gaps, form))
}

/// Reads `samples/run-<id>.parquet`, in either form: (time_ns, episode)
/// pairs.
pub fn read_samples_parquet(path: &Path) -> Result<(Vec<u64>, Vec<i64>), FormatError> {
    read_samples_form(path).map(|(t, e, _)| (t, e))
}

/// [`read_samples_parquet`], saying which form the file holds.
pub fn read_samples_form(path: &Path) -> Result<(Vec<u64>, Vec<i64>, StoredForm), FormatError> {
    use crate::parquet::{from_steps, from_steps_i64, i64_column, u64_column};
    let (k, df) = crate::parquet::read_first_form(
        path,
        SAMPLES_WHAT,
        &[&SAMPLE_COLUMNS, &LEGACY_SAMPLE_COLUMNS],
    )?;
    if k == 0 {
        let time = from_steps(&i64_column(&df, SAMPLE_COLUMNS[0], path)?);
        let ep = from_steps_i64(&i64_column(&df, SAMPLE_COLUMNS[1], path)?);
        Ok((time, ep, StoredForm::Steps))
    } else {
        let time = u64_column(&df, LEGACY_SAMPLE_COLUMNS[0], path)?;
        let ep = i64_column(&df, LEGACY_SAMPLE_COLUMNS[1], path)?;
        Ok((time, ep, StoredForm::Legacy))
    }
}

/// Episodes rebuilt from stored gaps (by their `episode` column).
pub fn episodes_of(gaps: &[Gap]) -> Vec<Episode> {
    let mut out: Vec<Episode> = Vec::new();
    for g in gaps {
        let idx = g.episode as usize;
        if idx >= out.len() {
            out.resize(idx + 1, Episode::default());
        }
        let e = &mut out[idx];
        if e.gaps == 0 {
            e.start_ns = g.start_ns;
        }
        e.start_ns = e.start_ns.min(g.start_ns);
        e.end_ns = e.end_ns.max(g.end_ns);
        e.excess_ns += g.excess_ns;
        e.gaps += 1;
    }
    out
}

/// Paths of a run's gaps and samples files inside a results directory.
pub fn gaps_path(dir: &Path, run_id: u32) -> PathBuf {
    dir.join("gaps").join(format!("run-{run_id}.parquet"))
}

/// See [`gaps_path`].
pub fn samples_path(dir: &Path, run_id: u32) -> PathBuf {
    dir.join("samples").join(format!("run-{run_id}.parquet"))
}

/// `timeline.csv` in a results directory.
pub const TIMELINE_CSV: &str = "timeline.csv";
/// `recovery.csv` in a results directory.
pub const RECOVERY_CSV: &str = "recovery.csv";

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
pub(crate) mod tests {
    use super::*;
    use crate::read_csv_rows;

    fn gap(start_ns: u64, end_ns: u64, excess_ns: u64) -> Gap {
        Gap {
            start_ns,
            end_ns,
            excess_ns,
            episode: 0,
        }
    }

    #[test]
    fn close_gaps_join_into_one_episode() {
        let mut g = vec![
            gap(1_000, 6_000, 4_900),
            gap(6_050, 9_000, 2_800),     // 50 ns later: same episode
            gap(20_000, 25_000, 4_900),   // 11 us later: new
            gap(27_000 + 1, 28_000, 900), // 2001 ns after: new
        ];
        let e = join_episodes(&mut g);
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].excess_ns, 7_700);
        assert_eq!(e[0].gaps, 2);
        assert_eq!((e[0].start_ns, e[0].end_ns), (1_000, 9_000));
        assert_eq!(
            g.iter().map(|g| g.episode).collect::<Vec<_>>(),
            vec![0, 0, 1, 2]
        );
        assert_eq!(episodes_of(&g), e);
    }

    #[test]
    fn times_match_the_episode_that_holds_them() {
        let mut g = vec![gap(10_000, 15_000, 4_900), gap(50_000, 60_000, 9_900)];
        let e = join_episodes(&mut g);
        let t = [5_000, 9_500, 12_000, 15_900, 17_000, 55_000, 61_000, 70_000];
        assert_eq!(match_times(&e, &t), vec![-1, 0, 0, 0, -1, 1, 1, -1]);
        assert!(match_times(&[], &t).iter().all(|&m| m == -1));
    }

    #[test]
    fn parquet_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut g = vec![gap(1, 2, 1), gap(3, 9, 5), gap(100_000, 100_500, 400)];
        join_episodes(&mut g);
        let p = dir.path().join("g.parquet");
        write_gaps_parquet(&p, &g).unwrap();
        assert_eq!(read_gaps_parquet(&p).unwrap(), g);
        let s = dir.path().join("s.parquet");
        write_samples_parquet(&s, &[5, 7], &[0, -1]).unwrap();
        assert_eq!(read_samples_parquet(&s).unwrap(), (vec![5, 7], vec![0, -1]));
        // Nothing but the two files: no temporary file left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        assert_eq!(read_gaps_form(&p).unwrap().1, StoredForm::Steps);
    }

    /// Writes `gaps` as a set before 2026-11-26 stored them (LZ4,
    /// absolute times, the episode as it is).
    pub(crate) fn write_legacy_gaps(path: &Path, gaps: &[Gap]) {
        let col = |name: &str, v: Vec<u64>| Column::new(name.into(), v);
        let mut df = DataFrame::new(
            gaps.len(),
            vec![
                col("start_ns", gaps.iter().map(|g| g.start_ns).collect()),
                col("end_ns", gaps.iter().map(|g| g.end_ns).collect()),
                col("excess_ns", gaps.iter().map(|g| g.excess_ns).collect()),
                Column::new(
                    "episode".into(),
                    gaps.iter().map(|g| g.episode).collect::<Vec<u32>>(),
                ),
            ],
        )
        .unwrap();
        ParquetWriter::new(std::fs::File::create(path).unwrap())
            .with_compression(ParquetCompression::Lz4Raw)
            .finish(&mut df)
            .unwrap();
    }

    #[test]
    fn the_earlier_form_is_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut g = vec![gap(10, 20, 5), gap(30, 90, 50), gap(100_000, 100_500, 400)];
        join_episodes(&mut g);
        let p = dir.path().join("g.parquet");
        write_legacy_gaps(&p, &g);
        assert_eq!(read_gaps_form(&p).unwrap(), (g, StoredForm::Legacy));
        let s = dir.path().join("s.parquet");
        let mut df = DataFrame::new(
            2,
            vec![
                Column::new("time_ns".into(), vec![15u64, 95]),
                Column::new("episode".into(), vec![0i64, -1]),
            ],
        )
        .unwrap();
        ParquetWriter::new(std::fs::File::create(&s).unwrap())
            .finish(&mut df)
            .unwrap();
        assert_eq!(
            read_samples_form(&s).unwrap(),
            (vec![15, 95], vec![0, -1], StoredForm::Legacy)
        );
        let e = read_gaps_parquet(&s).unwrap_err();
        assert!(matches!(e, FormatError::MissingColumn { .. }), "{e}");
    }

    #[test]
    fn csv_rows_round_trip_and_missing_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(TIMELINE_CSV);
        let rows: Vec<TimelineRow> = read_csv_rows(&p).unwrap();
        assert!(rows.is_empty());
        let row = TimelineRow {
            run_id: 3,
            freq_hz: 1000,
            gaps: 12,
            warnings: "a; b".into(),
            tsc_per_ns: 2.5,
            ..TimelineRow::default()
        };
        let mut w = csv::Writer::from_path(&p).unwrap();
        w.serialize(&row).unwrap();
        w.flush().unwrap();
        drop(w);
        assert_eq!(read_csv_rows::<TimelineRow>(&p).unwrap(), vec![row]);
    }
}
