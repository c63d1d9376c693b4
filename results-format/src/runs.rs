//! runs.csv and phases.csv: the row types, their columns, and the one
//! reader of each (the writer is [`crate::ResultsDir`]).
//!
//! Column order = field order. Every column but the required ones (see
//! [`RUN_REQUIRED`], [`PHASE_REQUIRED`]) may be absent in an older result
//! set and reads as its default (0, empty, false; `design` classic,
//! `sample` time, `workload` loop).

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

use crate::{Design, FormatError, RunKind, RunStatus, ScopeName};

/// runs.csv in a results directory.
pub const RUNS_CSV: &str = "runs.csv";
/// phases.csv in a results directory.
pub const PHASES_CSV: &str = "phases.csv";

/// The sample contents of rows written before contents were a dimension
/// (they ran with it).
pub const LEGACY_SAMPLE: &str = "time";
/// The workload of rows written before workload kinds existed.
pub const LEGACY_WORKLOAD: &str = "loop";

/// Columns a runs.csv must have.
pub const RUN_REQUIRED: [&str; 5] = ["run_id", "kind", "freq_hz", "iterations", "status"];
/// Columns a phases.csv must have.
pub const PHASE_REQUIRED: [&str; 6] = [
    "run_id",
    "phase",
    "sampling",
    "start_ns",
    "end_ns",
    "iterations",
];

/// An empty field reads as the default (older rows left `design` empty).
fn empty_is_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let s = String::deserialize(d)?;
    if s.is_empty() {
        return Ok(T::default());
    }
    T::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(&s))
}

/// One runs.csv row (docs/results-format.md, "runs.csv").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunRow {
    pub run_id: u32,
    pub kind: RunKind,
    #[serde(deserialize_with = "empty_is_default")]
    pub design: Design,
    pub block: u32,
    pub freq_hz: u64,
    pub rep: u32,
    pub event: String,
    pub requested_event: String,
    pub scope: ScopeName,
    pub cpu: u32,
    pub duration_ns: u64,
    pub iterations: u64,
    pub wall_ns: u64,
    pub window_ns: u64,
    pub samples: u64,
    pub achieved_hz: f64,
    pub throttled: u64,
    pub lost: u64,
    pub duplicates: u64,
    pub handler_intervals: u64,
    pub unmatched: u64,
    pub steal_ns: u64,
    pub nvcsw: u64,
    pub nivcsw: u64,
    pub quiet: bool,
    pub noisy: bool,
    pub driver_cpu_ns: u64,
    pub started_at_ns: u64,
    pub ended_at_ns: u64,
    pub status: RunStatus,
    pub error: String,
    pub samples_all_cpus: u64,
    pub unthrottled: u64,
    pub lost_samples: u64,
    pub foreign_intervals: u64,
    pub idle_busy_pct: f64,
    pub procs_running: u64,
    pub quiet_wait_ns: u64,
    pub user_ns: u64,
    pub sys_ns: u64,
    pub overrun_ns: u64,
    pub noise_reasons: String,
    /// The driver's own CPU time while sampling was enabled (0 when absent).
    pub driver_cpu_sampling_ns: u64,
    pub decoded_while_sampling_bytes: u64,
    /// What each sample carried (`--sample`); [`LEGACY_SAMPLE`] for rows
    /// written before contents were a dimension (the reader fills it in).
    /// The column is `sample`.
    #[serde(rename = "sample")]
    pub contents: String,
    /// Mean call-chain entries per sample on the measured CPU (empty
    /// without PERF_SAMPLE_CALLCHAIN).
    pub callchain_mean: Option<f64>,
    /// Mean user-stack bytes copied per sample (empty without
    /// PERF_SAMPLE_STACK_USER).
    pub stack_user_mean_bytes: Option<f64>,
    /// Mean of those bytes that were really stack (dyn_size).
    pub stack_dyn_mean_bytes: Option<f64>,
    /// What the workload's loop did (`--workload`); [`LEGACY_WORKLOAD`] in
    /// older rows (the reader fills it in).
    pub workload: String,
    /// The perf sysctls just before and just after the run (the kernel
    /// lowers the rate on its own when handlers run long); empty when
    /// unreadable or absent.
    pub perf_event_max_sample_rate_before: Option<u64>,
    pub perf_event_max_sample_rate_after: Option<u64>,
    pub perf_cpu_time_max_percent_before: Option<u64>,
    pub perf_cpu_time_max_percent_after: Option<u64>,
    /// The workload's time on the run queue while runnable during the run
    /// (`/proc/<pid>/schedstat`): what other tasks on its CPU took; for a
    /// command, its main process only. Empty when not measured.
    pub wait_ns: Option<u64>,
    /// `--profiler` runs: the profiler's process tree's CPU time over the
    /// loop's window, ns (every thread's schedstat run time); empty for
    /// runs without a profiler.
    pub profiler_cpu_ns: Option<u64>,
    /// The CPUs its threads last ran on at the end of the window,
    /// `;`-separated.
    pub profiler_cpus: String,
    /// Its peak resident memory (the sum of its processes' VmHWM), kB.
    pub profiler_peak_rss_kb: Option<u64>,
    /// Bytes its tree wrote over the window (/proc/PID/io write_bytes).
    pub profiler_write_bytes: Option<u64>,
    /// The raw files keep the records of every this many time slices
    /// ([`crate::thinning::Thinning`]); 1 or empty: every record.
    pub raw_keep_every: Option<u64>,
    /// The time the raw files cover, ns: the kept slices inside the window
    /// (the sampling window of a util run, the loop's timeline window of a
    /// gaps run); empty: the whole window.
    pub raw_kept_ns: Option<u64>,
}

impl RunRow {
    /// The run finished and its numbers can be used.
    pub fn ok(&self) -> bool {
        self.status == RunStatus::Ok
    }

    /// Loop rate in loops per second of requested duration (the workload
    /// runs for a fixed duration, so this is the article's loop count scaled
    /// to one second; equal durations give exactly the article's ratios).
    pub fn rate(&self) -> f64 {
        let d = if self.duration_ns > 0 {
            self.duration_ns
        } else {
            self.wall_ns
        };
        self.iterations as f64 / (d as f64 * 1e-9)
    }

    /// Whether the run's raw files keep only some slices of it
    /// (`raw_keep_every` > 1, see [`crate::thinning`]).
    pub fn is_thinned(&self) -> bool {
        self.raw_keep_every.is_some_and(|k| k > 1)
    }

    /// What the older rows left empty, filled in as documented.
    fn fill_legacy(&mut self) {
        if self.contents.is_empty() {
            self.contents = LEGACY_SAMPLE.to_string();
        }
        if self.workload.is_empty() {
            self.workload = LEGACY_WORKLOAD.to_string();
        }
    }
}

/// One phases.csv row (paired design).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PhaseRow {
    pub run_id: u32,
    pub phase: u32,
    pub sampling: bool,
    pub start_ns: u64,
    pub end_ns: u64,
    pub iterations: u64,
    pub samples: u64,
    /// The run's frequency, to group phases without a join.
    pub freq_hz: u64,
    /// The workload's CPU time and run-queue wait in the phase
    /// (`/proc/<pid>/schedstat`), to see contention from other tasks.
    pub task_ns: u64,
    pub wait_ns: u64,
    /// The phase's group of four, its order (ABBA or BAAB), and the run's
    /// settling time before phase 0.
    pub group: u32,
    pub order: String,
    pub settle_ns: u64,
    /// The driver's read of the counter halfway through the phase: its
    /// time (the same clock as `start_ns`) and the iterations from the
    /// phase's start to it, so that a speed change inside the phase shows
    /// (0 in sets written before it existed).
    pub mid_ns: u64,
    pub mid_iterations: u64,
    /// Set by the reader, never written: why this row could not be read
    /// (its `run_id` and `phase` are those of the cells that did parse).
    /// The row's group is left out of the analysis, and named.
    #[serde(skip)]
    pub unreadable: Option<String>,
}

impl PhaseRow {
    /// Loops per second in this phase (NaN for an empty phase).
    pub fn rate(&self) -> f64 {
        let d = self.end_ns.saturating_sub(self.start_ns);
        if d == 0 {
            return f64::NAN;
        }
        self.iterations as f64 / (d as f64 * 1e-9)
    }
}

/// Column names of a serde row type, in order.
pub fn header_of<T: Serialize + Default>() -> Vec<String> {
    // Serialising a default row with headers gives the header line.
    let mut w = csv::Writer::from_writer(Vec::new());
    if w.serialize(T::default()).is_err() {
        return Vec::new();
    }
    let bytes = w.into_inner().unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    text.lines()
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::to_owned)
        .collect()
}

/// Reads a results CSV whose `required` columns must be present; the other
/// columns may be absent (they read as defaults). A row that does not parse
/// is an error naming the file, except the last one when `torn_last`: a
/// crash mid-write leaves a torn last line, skipped with a warning.
fn read_rows<T: DeserializeOwned + Serialize + Default>(
    path: &Path,
    what: &'static str,
    required: &[&str],
    torn_last: bool,
) -> Result<Vec<T>, FormatError> {
    let (mut r, headers) = open_csv::<T>(path, what, required)?;
    let mut rows = Vec::new();
    let mut records = r.deserialize::<T>().peekable();
    while let Some(rec) = records.next() {
        match rec {
            Ok(row) => rows.push(row),
            Err(e) if torn_last && records.peek().is_none() => {
                tracing::warn!(
                    "{}: ignoring the unreadable last row (torn by a crash?): {}",
                    path.display(),
                    csv_problem(&e, &headers)
                );
            }
            Err(e) => return Err(FormatError::corrupt(path, csv_problem(&e, &headers))),
        }
    }
    Ok(rows)
}

/// Opens the CSV at `path` (a missing file is [`FormatError::Missing`],
/// holding `what`) and checks its header against its row type: a
/// `required` column absent is an error naming it; any other column of
/// the type that is absent (a set written before it existed) reads as its
/// default, and is named in the log rather than defaulted silently.
fn open_csv<T: Serialize + Default>(
    path: &Path,
    what: &'static str,
    required: &[&str],
) -> Result<(csv::Reader<std::fs::File>, csv::StringRecord), FormatError> {
    FormatError::require_file(path, what)?;
    let mut r = csv::Reader::from_path(path).map_err(|e| FormatError::corrupt(path, e))?;
    let headers = r
        .headers()
        .map_err(|e| FormatError::corrupt(path, e))?
        .clone();
    let has = |c: &str| headers.iter().any(|h| h == c);
    if let Some(column) = required.iter().find(|c| !has(c)) {
        return Err(FormatError::MissingColumn {
            path: path.to_path_buf(),
            column: (*column).to_string(),
        });
    }
    let absent: Vec<String> = header_of::<T>().into_iter().filter(|c| !has(c)).collect();
    if !absent.is_empty() {
        tracing::info!(
            "{}: no column {} (written before it existed): read as its default",
            path.display(),
            absent.join(", ")
        );
    }
    Ok((r, headers))
}

/// A CSV row's problem where an editor finds it: the line, and for a cell
/// that does not parse, its column's name ("line 4, column `freq_hz`:
/// invalid digit found in string").
fn csv_problem(e: &csv::Error, headers: &csv::StringRecord) -> String {
    match e.kind() {
        csv::ErrorKind::Deserialize { pos, err } => {
            let line = pos
                .as_ref()
                .map(|p| format!("line {}, ", p.line()))
                .unwrap_or_default();
            let column = err
                .field()
                .and_then(|i| headers.get(usize::try_from(i).ok()?))
                .map(|name| format!("column `{name}`: "))
                .unwrap_or_default();
            format!("{line}{column}{}", err.kind())
        }
        _ => e.to_string(),
    }
}

/// Reads every `<root>/runs.csv` row, in file order. A last row that does
/// not parse (torn by a crash mid-write) is skipped with a warning; any
/// other unreadable row is an error naming the file and the line.
pub fn read_runs(root: &Path) -> Result<Vec<RunRow>, FormatError> {
    let path = root.join(RUNS_CSV);
    let mut rows: Vec<RunRow> = read_rows(&path, "runs.csv, one row per run", &RUN_REQUIRED, true)?;
    for r in &mut rows {
        r.fill_legacy();
    }
    Ok(rows)
}

/// Reads every `<root>/phases.csv` row. A row that does not parse (a
/// negative or non-numeric cell, a hand edit) does not stop the read: it
/// comes back with [`PhaseRow::unreadable`] saying where and why, and with
/// the `run_id` and `phase` its cells give, so that only its run's group
/// is left out; a row whose `run_id` or `phase` cell does not parse either
/// cannot be placed and is an error naming the line.
pub fn read_phases(root: &Path) -> Result<Vec<PhaseRow>, FormatError> {
    let path = root.join(PHASES_CSV);
    let (mut r, headers) =
        open_csv::<PhaseRow>(&path, "phases.csv of the paired design", &PHASE_REQUIRED)?;
    let cell = |record: &csv::StringRecord, name: &str| -> Option<u32> {
        let i = headers.iter().position(|h| h == name)?;
        record.get(i)?.trim().parse().ok()
    };
    let mut rows = Vec::new();
    for record in r.records() {
        let record = record.map_err(|e| FormatError::corrupt(&path, e))?;
        match record.deserialize::<PhaseRow>(Some(&headers)) {
            Ok(row) => rows.push(row),
            Err(e) => {
                let problem = csv_problem(&e, &headers);
                let line = record.position().map_or(0, csv::Position::line);
                let (Some(run_id), Some(phase)) = (cell(&record, "run_id"), cell(&record, "phase"))
                else {
                    return Err(FormatError::corrupt(&path, problem));
                };
                rows.push(PhaseRow {
                    run_id,
                    phase,
                    unreadable: Some(if problem.starts_with("line ") {
                        problem
                    } else {
                        format!("line {line}, {problem}")
                    }),
                    ..PhaseRow::default()
                });
            }
        }
    }
    Ok(rows)
}

/// Reads every row of a CSV file written with one of this crate's row
/// types; a missing file is an empty list (e.g. a sweep without the gaps
/// design has no timeline.csv).
pub fn read_csv_rows<T: DeserializeOwned + Serialize + Default>(
    path: &Path,
) -> Result<Vec<T>, FormatError> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    read_rows(path, "", &[], false)
}
