//! Reading a results directory (docs/results-format.md): the files are
//! defined, and read, by the `results-format` crate; this module gathers
//! manifest.json, runs.csv and phases.csv into one [`ResultSet`]. The raw
//! files are read by its two submodules: `intervals` (events/, the handler
//! intervals, aggregated per run as they are read) and `gaps` (the gaps
//! design's timeline.csv, recovery.csv, gaps/ and samples/ into
//! [`gaps::GapsRun`]s).

use std::path::{Path, PathBuf};

pub mod gaps;
pub mod intervals;

use crate::error::AnalysisError;

/// manifest.json as the analysis reads it (options and plan as JSON).
pub type Manifest = results_format::Manifest;
/// One row of runs.csv.
pub type Run = results_format::RunRow;
/// One row of phases.csv.
pub type Phase = results_format::PhaseRow;

/// A loaded results directory.
#[derive(Debug, Clone)]
pub struct ResultSet {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub runs: Vec<Run>,
    pub phases: Vec<Phase>,
    /// The manifest's planned runs that runs.csv does not hold (the whole
    /// file's, also in a subset of it): an unfinished sweep, or a file cut.
    pub unrecorded: Unrecorded,
}

/// The planned runs runs.csv lacks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unrecorded {
    /// How many runs the manifest plans (0: a manifest without a plan).
    pub planned: usize,
    /// The planned run_ids with no row.
    pub run_ids: Vec<u64>,
}

impl Unrecorded {
    fn of(manifest: &Manifest, runs: &[Run]) -> Self {
        let have: std::collections::HashSet<u64> =
            runs.iter().map(|r| u64::from(r.run_id)).collect();
        let planned: Vec<u64> = manifest
            .plan
            .iter()
            .filter_map(|p| p["run_id"].as_u64())
            .collect();
        Unrecorded {
            planned: planned.len(),
            run_ids: planned
                .into_iter()
                .filter(|id| !have.contains(id))
                .collect(),
        }
    }
}

impl ResultSet {
    /// The `--command` the set measured, shell-quoted, if it measured one.
    pub fn command_line(&self) -> Option<String> {
        let argv = self.manifest.options["command"].as_array()?;
        Some(shell_words::join(
            argv.iter().map(|w| w.as_str().unwrap_or_default()),
        ))
    }

    /// The `--profiler` template the set measured, if it measured one
    /// (on the built-in loop or on the `--command`).
    pub fn profiler_template(&self) -> Option<String> {
        self.manifest.options["profiler"]
            .as_str()
            .map(str::to_owned)
    }

    /// The `--profiler` template when it sampled the built-in loop, whose
    /// gaps runs time each of its interruptions (None on a `--command`,
    /// whose runs are whole runs of the command).
    pub fn loop_profiler_template(&self) -> Option<String> {
        self.profiler_template()
            .filter(|_| self.command_line().is_none())
    }

    /// Each run's phases (phases.csv), in phase order.
    pub fn phases_by_run(&self) -> std::collections::BTreeMap<u32, Vec<&Phase>> {
        let mut by_run = crate::stats::grouped(self.phases.iter().map(|p| (p.run_id, p)));
        for v in by_run.values_mut() {
            v.sort_by_key(|p| p.phase);
        }
        by_run
    }
}

/// Load manifest.json (checking format_version), runs.csv and, if present,
/// phases.csv.
pub fn load(dir: &Path) -> Result<ResultSet, AnalysisError> {
    let path = dir.to_path_buf();
    if dir.exists() && !dir.is_dir() {
        return Err(AnalysisError::NotADirectory { path });
    }
    if !dir.is_dir() {
        return Err(AnalysisError::NoSuchDirectory { path });
    }
    let manifest = results_format::read_manifest(dir)?;
    let runs = results_format::read_runs(dir)?;
    let phases = if dir.join(results_format::PHASES_CSV).exists() {
        results_format::read_phases(dir)?
    } else {
        Vec::new()
    };
    let unrecorded = Unrecorded::of(&manifest, &runs);
    Ok(ResultSet {
        dir: path,
        manifest,
        runs,
        phases,
        unrecorded,
    })
}

/// Raw folders a result set's runs wrote into that are now absent or hold
/// no Parquet file: removed on purpose (to keep a repository small, see the
/// docs/measurements.md, "Size on disk"). The tables that need them are skipped, the
/// rest is reported; one missing file among several is still a fault (that
/// run is excluded and named).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawRemoved {
    /// `events/`: the handler intervals of the util runs (the util table,
    /// Table 1, and its fits and plots).
    pub events: bool,
    /// `gaps/` or `samples/`: the gaps design's timelines (the per-sample
    /// table and everything built on it).
    pub gaps: bool,
}

impl RawRemoved {
    /// Whether anything was removed.
    pub fn any(&self) -> bool {
        self.events || self.gaps
    }

    /// One line per skipped part: the folder, what needs it, and how to get
    /// it back.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.events {
            out.push(
                "events/ (handler intervals) was removed: the util table (Table 1), the handler \
                 utilisation fits and the handler-duration plot are skipped; restore the folder \
                 (it is in the set's history) to report them"
                    .to_string(),
            );
        }
        if self.gaps {
            out.push(
                "gaps/ or samples/ (the gaps design's timelines) was removed: the per-sample \
                 table and what is built on it (the cost of one sample, its drift, the after-effect \
                 and the model's prediction) are skipped, and the recommendation rests on the \
                 throughput loss; restore the folders to report them"
                    .to_string(),
            );
        }
        out
    }
}

/// Whether `dir/sub` is absent or holds no `.parquet` file.
fn folder_gone(dir: &Path, sub: &str) -> bool {
    match std::fs::read_dir(dir.join(sub)) {
        Err(_) => true,
        Ok(mut entries) => {
            !entries.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "parquet")))
        }
    }
}

/// Which raw folders of `rs` were removed on purpose ([`RawRemoved`]): a
/// folder counts only where an ok run of `rs` wrote into it.
pub fn raw_removed(rs: &ResultSet) -> RawRemoved {
    use results_format::RunKind;
    let util = rs
        .runs
        .iter()
        .any(|r| r.ok() && r.kind == RunKind::Util && r.freq_hz > 0);
    let gaps = |sampled: bool| {
        rs.runs
            .iter()
            .any(|r| r.ok() && gaps::is_gaps_run(r) && (!sampled || r.freq_hz > 0))
    };
    RawRemoved {
        events: util && folder_gone(&rs.dir, "events"),
        gaps: (gaps(false) && folder_gone(&rs.dir, "gaps"))
            || (gaps(true) && folder_gone(&rs.dir, "samples")),
    }
}

/// A run left out of the analysis because one of its files is unreadable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExcludedRun {
    pub run_id: u32,
    /// The file.
    pub path: std::path::PathBuf,
    /// Why it could not be used (the reader's error).
    pub reason: String,
}

impl ExcludedRun {
    /// One line for the report and stderr.
    pub fn line(&self) -> String {
        format!("run {} excluded: {}", self.run_id, self.reason)
    }
}
