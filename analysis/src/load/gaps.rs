//! Reading the gaps design's files of a results directory into
//! [`GapsRun`]s (docs/results-format.md, "gaps design").

use std::collections::BTreeMap;

use crate::error::AnalysisError;
use crate::load::{ResultSet, Run};
use results_format::timeline::Episode;
use results_format::timeline::{
    RECOVERY_CSV, RecoveryRow, TIMELINE_CSV, TimelineRow, episodes_of, gaps_path,
    read_gaps_parquet, read_samples_parquet, samples_path,
};
use results_format::{Design, RunKind, read_csv_rows};

/// An episode with more excess than this is not an interrupt's cost but
/// the CPU taken away (another task, the host descheduling the vCPU: on
/// the development VM such episodes last 1-4 ms). It is left out of the
/// matched cost and of the background b alike, and a sample (or a random
/// timestamp) inside one is left out of the mean: the cost is the mean over
/// samples that did not land in such a stretch. Without this, one 4 ms
/// episode that a 100 Hz sample happens to land in moves a 10 s run's
/// mean by 4 us per sample, more than the cost itself.
pub const LONG_EPISODE_NS: u64 = 1_000_000;

/// A run measures its own after-effect only with at least this many chunks
/// beyond the horizon: they give its reference speed, which every chunk
/// near a gap is compared with, so a handful would let their noise through
/// (at 100 kHz runs see 0-81 such chunks and gave -181 to +6 ns; every
/// sparser rate sees millions). Below it the run is charged the bound.
pub const MIN_REFERENCE_CHUNKS: u64 = 10_000;

/// One gaps run, loaded.
#[derive(Debug, Clone, Default)]
pub struct GapsRun {
    /// Its `timeline.csv` row.
    pub row: TimelineRow,
    /// Its recovery bins (`recovery.csv`), in bin order.
    pub recovery: Vec<RecoveryRow>,
    /// Excess of each episode that holds at least one sample, ns.
    pub matched_excess_ns: Vec<u64>,
    /// The samples in each of those episodes (same order; empty means one
    /// each). At dense rates one episode holds several samples' gaps.
    pub matched_samples_per_episode: Vec<u32>,
    /// Samples inside an episode of [`LONG_EPISODE_NS`] or more.
    pub samples_in_long: u64,
    /// Its episodes (the coincidence draws on 0 Hz runs; request latency,
    /// crate::latency, on every run).
    pub episodes: Vec<Episode>,
    /// Its sample times, CLOCK_MONOTONIC_RAW ns, sorted (empty at 0 Hz).
    pub sample_times_ns: Vec<u64>,
    /// runs.csv `raw_keep_every`: its raw files keep every this-many-th
    /// slice (1: every record).
    pub keep_every: u64,
    /// When the run started (runs.csv `started_at_ns`, CLOCK_MONOTONIC_RAW)
    /// and its block: its place in the sweep, for the cost over time.
    pub started_at_ns: u64,
    pub block: u32,
    /// Episodes of [`LONG_EPISODE_NS`] or more, and their summed excess,
    /// ns (every run: the long episodes are measured, not only left out).
    pub long_episodes: u64,
    pub long_excess_ns: u64,
    /// Where the raw files were thinned (runs.csv `raw_keep_every` > 1,
    /// results-format `thinning`): the time they cover (`raw_kept_ns`) and
    /// the samples they hold. None: they hold every record.
    pub thinned: Option<Thinned>,
}

/// What a thinned run's raw files cover.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Thinned {
    /// The time of the kept slices inside the loop's window, ns.
    pub kept_ns: f64,
    /// The samples in the samples file.
    pub samples: u64,
}

impl GapsRun {
    /// The loop's window: where it starts and ends, ns.
    pub fn window(&self) -> (u64, u64) {
        (self.row.loop_start_ns, self.row.loop_end_ns)
    }

    /// The loop's window, ns (0 when the timeline is empty).
    pub fn window_ns(&self) -> f64 {
        self.row.loop_end_ns.saturating_sub(self.row.loop_start_ns) as f64
    }

    /// The time the raw files cover, ns: the window, or the kept slices'
    /// time inside it where they were thinned.
    pub fn raw_window_ns(&self) -> f64 {
        self.thinned.map_or_else(|| self.window_ns(), |t| t.kept_ns)
    }

    /// The samples the raw files hold: timeline.csv's count, or the samples
    /// file's where it was thinned.
    pub fn raw_samples(&self) -> u64 {
        self.thinned.map_or(self.row.samples, |t| t.samples)
    }

    /// Achieved sample rate over the window, Hz.
    pub fn rate_hz(&self) -> f64 {
        self.row.samples as f64 / (self.window_ns() * 1e-9)
    }

    /// Matched excess per sample split at `cap_ns` per sample, ns (before
    /// subtracting b): each matched episode under [`LONG_EPISODE_NS`]
    /// counts up to the cap times the samples it holds in the first part
    /// and the rest in the second, over the samples not in a long episode.
    pub fn matched_split_per_sample_ns(&self, cap_ns: f64) -> (f64, f64) {
        let n = self.raw_samples().saturating_sub(self.samples_in_long) as f64;
        let (capped, above) = self.short_matched().fold((0f64, 0f64), |(c, a), (x, k)| {
            // The cap is per sample: an episode that holds k samples'
            // interrupts (dense rates join them) is capped at k caps.
            let cap = cap_ns * f64::from(k);
            (c + x.min(cap), a + (x - cap).max(0.0))
        });
        (capped / n, above / n)
    }

    /// The matched episodes under [`LONG_EPISODE_NS`]: each one's excess,
    /// ns, and the samples it holds (one where not recorded).
    pub fn short_matched(&self) -> impl Iterator<Item = (f64, u32)> + '_ {
        let samples = |i: usize| self.matched_samples_per_episode.get(i).copied();
        (self.matched_excess_ns.iter().enumerate())
            .filter(|&(_, &e)| e < LONG_EPISODE_NS)
            .map(move |(i, &e)| (e as f64, samples(i).unwrap_or(1).max(1)))
    }

    /// Long episodes per second of window.
    pub fn long_per_s(&self) -> f64 {
        self.long_episodes as f64 / (self.raw_window_ns() * 1e-9)
    }

    /// Share of the window in long episodes (their excess), %.
    pub fn long_share_pct(&self) -> f64 {
        self.long_excess_ns as f64 / self.raw_window_ns() * 100.0
    }

    /// After-effect time per ns of window: over the recovery bins that end
    /// within `horizon_ns` of a gap, the chunks' summed excess minus what
    /// the same chunks would have had at the run's reference (the mean
    /// excess per chunk in the bins from `horizon_ns` on), / window. The
    /// reference removes the constant offset of the per-gap reference
    /// length (a median of three chunks is not their mean) and the speed
    /// of the host at the time. NaN with fewer than
    /// [`MIN_REFERENCE_CHUNKS`] chunks beyond the horizon.
    pub fn after_share(&self, horizon_ns: f64) -> f64 {
        let far = self
            .recovery
            .iter()
            .filter(|b| b.from_ns as f64 >= horizon_ns);
        let (far_chunks, far_excess) = far.fold((0u64, 0f64), |(c, e), b| {
            (c + b.chunks, e + b.excess_ns_sum)
        });
        if far_chunks < MIN_REFERENCE_CHUNKS {
            return f64::NAN;
        }
        let reference = far_excess / far_chunks as f64;
        let near: f64 = self
            .recovery
            .iter()
            .filter(|b| (b.to_ns as f64) <= horizon_ns)
            .map(|b| b.excess_ns_sum - b.chunks as f64 * reference)
            .sum();
        near / self.window_ns()
    }

    /// After-effect per episode of this run within `horizon_ns`, ns: the
    /// after-effect time ([`Self::after_share`] x window) over all its
    /// episodes, sample and background alike.
    pub fn after_per_episode_ns(&self, horizon_ns: f64) -> f64 {
        if self.row.episodes == 0 {
            return f64::NAN;
        }
        self.after_share(horizon_ns) * self.window_ns() / self.row.episodes as f64
    }

    /// Share of the window in gaps (excess only), %.
    pub fn gap_share_pct(&self) -> f64 {
        self.row.gap_time_ns as f64 / self.window_ns() * 100.0
    }
}

/// The design's runs.csv rows: `design == gaps`, `kind == loss`.
pub fn is_gaps_run(r: &Run) -> bool {
    r.design == Design::Gaps && r.kind == RunKind::Loss
}

/// Loaded gaps runs plus what was wrong with the files.
#[derive(Debug, Default)]
pub struct GapsLoad {
    pub runs: Vec<GapsRun>,
    pub warnings: Vec<String>,
    /// Runs whose gaps or samples file is unreadable: left out.
    pub excluded: Vec<crate::load::ExcludedRun>,
}

impl GapsLoad {
    /// The part of the load that belongs to `rs`'s runs (a subset of the
    /// result set it was loaded from).
    pub fn restricted_to(&self, rs: &ResultSet) -> GapsLoad {
        let ids: std::collections::BTreeSet<u32> = rs.runs.iter().map(|r| r.run_id).collect();
        GapsLoad {
            runs: self
                .runs
                .iter()
                .filter(|g| ids.contains(&g.row.run_id))
                .cloned()
                .collect(),
            warnings: self.warnings.clone(),
            excluded: self
                .excluded
                .iter()
                .filter(|x| ids.contains(&x.run_id))
                .cloned()
                .collect(),
        }
    }
}

/// timeline.csv's rows, one per run, and recovery.csv's, one per run and
/// bin. A resumed sweep may have appended a run twice: the last rows win,
/// and a warning says so.
fn last_rows(
    rs: &ResultSet,
    warnings: &mut Vec<String>,
) -> Result<(Vec<TimelineRow>, Vec<RecoveryRow>), AnalysisError> {
    let timeline_all: Vec<TimelineRow> = read_csv_rows(&rs.dir.join(TIMELINE_CSV))?;
    let recovery_all: Vec<RecoveryRow> = read_csv_rows(&rs.dir.join(RECOVERY_CSV))?;
    let n_rows = timeline_all.len();
    let timeline = last_by_key(timeline_all, |r| r.run_id);
    let recovery = last_by_key(recovery_all, |r| (r.run_id, r.bin));
    if timeline.len() < n_rows {
        warnings.push(format!(
            "timeline.csv holds {} rows for {} runs (a resumed sweep repeated runs): the last \
             row of each run is used, and its last recovery.csv row per bin",
            n_rows,
            timeline.len()
        ));
    }
    Ok((timeline, recovery))
}

/// The last of the rows with the same key, by key.
fn last_by_key<K: Ord, T>(rows: Vec<T>, key: impl Fn(&T) -> K) -> Vec<T> {
    let by_key: BTreeMap<K, T> = rows.into_iter().map(|r| (key(&r), r)).collect();
    by_key.into_values().collect()
}

/// Gaps run `id`, whose files could not be read (`e`), as an excluded run:
/// the file the error names, or its gaps file when the error names none.
fn excluded_run(rs: &ResultSet, id: u32, e: AnalysisError) -> crate::load::ExcludedRun {
    crate::load::ExcludedRun {
        run_id: id,
        path: match &e {
            AnalysisError::Format(f) => f.path().to_path_buf(),
            AnalysisError::Corrupt { path, .. } => path.clone(),
            _ => gaps_path(&rs.dir, id),
        },
        reason: e.to_string(),
    }
}

/// The warning for ok gaps runs (`ok`) that were never loaded (not in
/// `seen`), if there are any.
fn missing_runs_warning(ok: &BTreeMap<u32, &Run>, seen: &[u32]) -> Option<String> {
    let missing: Vec<String> = ok
        .keys()
        .filter(|id| !seen.contains(id))
        .map(|id| id.to_string())
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "{} ok gaps runs have no usable row in timeline.csv (run_id {}): left out of the \
             per-sample table",
            missing.len(),
            missing.join(", ")
        )
    })
}

/// Reads every ok gaps run's timeline row, recovery bins, gaps and (at F >
/// 0) samples. A results directory without gaps runs, or whose gaps or
/// samples folder was removed on purpose (`gaps_removed`,
/// [`crate::load::RawRemoved`]), gives an empty load.
pub fn load_gaps(rs: &ResultSet, gaps_removed: bool) -> Result<GapsLoad, AnalysisError> {
    let ok: BTreeMap<u32, &Run> = rs
        .runs
        .iter()
        .filter(|r| r.ok() && is_gaps_run(r))
        .map(|r| (r.run_id, r))
        .collect();
    let mut out = GapsLoad::default();
    // A --profiler set's runs have no samples of ours to match: its gaps
    // are read by the profiler table (crate::subject::profiler) instead.
    if ok.is_empty() || gaps_removed || rs.loop_profiler_template().is_some() {
        return Ok(out);
    }
    let (timeline, recovery) = last_rows(rs, &mut out.warnings)?;
    let mut rec_by_run = crate::stats::grouped(recovery.into_iter().map(|r| (r.run_id, r)));
    let mut seen = Vec::new();
    for mut row in timeline {
        let id = row.run_id;
        let Some(run) = ok.get(&id) else {
            continue;
        };
        if run.freq_hz != row.freq_hz {
            out.warnings.push(format!(
                "gaps run {id}: timeline.csv says {} Hz, runs.csv {} Hz; runs.csv's is used",
                row.freq_hz, run.freq_hz
            ));
        }
        let Some(run_recovery) = rec_by_run.remove(&row.run_id) else {
            out.warnings.push(format!(
                "gaps run {id} has no rows in recovery.csv: its after-effect is unknown, the run \
                 is left out of the per-sample table"
            ));
            continue;
        };
        row.freq_hz = run.freq_hz;
        seen.push(id);
        let thinned = run.is_thinned().then(|| Thinned {
            kept_ns: run.raw_kept_ns.unwrap_or_default() as f64,
            samples: 0,
        });
        match read_run(rs, row, run_recovery, thinned, &mut out.warnings) {
            Ok(r) => out.runs.push(GapsRun {
                started_at_ns: run.started_at_ns,
                block: run.block,
                keep_every: run.raw_keep_every.unwrap_or(1).max(1),
                ..r
            }),
            Err(e) => out.excluded.push(excluded_run(rs, id, e)),
        }
    }
    out.warnings.extend(missing_runs_warning(&ok, &seen));
    Ok(out)
}

/// Read gaps run `row`'s files: at F = 0 its episodes (gaps file); at F > 0
/// the excess of each episode its samples matched and how many samples fell
/// in long episodes (gaps and samples files), checked against timeline.csv's
/// totals, a disagreement being a warning.
fn read_run(
    rs: &ResultSet,
    row: TimelineRow,
    recovery: Vec<RecoveryRow>,
    thinned: Option<Thinned>,
    warnings: &mut Vec<String>,
) -> Result<GapsRun, AnalysisError> {
    let id = row.run_id;
    let gaps = read_gaps_parquet(&gaps_path(&rs.dir, id))?;
    let episodes = episodes_of(&gaps);
    let mut run = GapsRun {
        row,
        recovery,
        thinned,
        ..GapsRun::default()
    };
    let long = episodes.iter().filter(|e| e.excess_ns >= LONG_EPISODE_NS);
    run.long_episodes = long.clone().count() as u64;
    run.long_excess_ns = long.map(|e| e.excess_ns).sum();
    if run.row.freq_hz == 0 {
        run.episodes = episodes;
        return Ok(run);
    }
    let (mut times, ep) = read_samples_parquet(&samples_path(&rs.dir, id))?;
    if let Some(t) = &mut run.thinned {
        t.samples = ep.len() as u64;
    }
    let mut idx: Vec<usize> = ep.iter().filter_map(|&e| usize::try_from(e).ok()).collect();
    let sampled = idx.iter().filter_map(|&i| episodes.get(i));
    run.samples_in_long = sampled.filter(|e| e.excess_ns >= LONG_EPISODE_NS).count() as u64;
    let matched = idx.len() as u64;
    idx.sort_unstable();
    let mut out_of_range = 0usize;
    for same in idx.chunk_by(|a, b| a == b) {
        match episodes.get(same[0]) {
            Some(e) => {
                run.matched_excess_ns.push(e.excess_ns);
                run.matched_samples_per_episode
                    .push(u32::try_from(same.len()).unwrap_or(u32::MAX));
            }
            None => out_of_range += 1,
        }
    }
    let sum: u64 = run.matched_excess_ns.iter().sum();
    // A thinned run's files hold part of what timeline.csv counts.
    let disagree = match run.thinned {
        None => matched != run.row.matched_samples || sum != run.row.matched_excess_ns,
        Some(_) => matched > run.row.matched_samples || sum > run.row.matched_excess_ns,
    };
    if out_of_range > 0 || disagree {
        warnings.push(format!(
            "gaps run {id}: samples/run-{id}.parquet and gaps/run-{id}.parquet give {matched} \
             matched samples, {} matched episodes, {sum} ns matched excess ({out_of_range} \
             episode numbers not in the gaps file); timeline.csv (the driver's count of the \
             same) says {}, {}, {} ns: the table uses the files",
            run.matched_excess_ns.len(),
            run.row.matched_samples,
            run.row.matched_episodes,
            run.row.matched_excess_ns
        ));
    }
    times.sort_unstable();
    run.sample_times_ns = times;
    run.episodes = episodes;
    Ok(run)
}
