//! The results directory (docs/results-format.md): manifest.json, runs.csv,
//! phases.csv, workload/run-<id>.json, events/run-<id>.parquet.
//!
//! Written as the sweep goes: a runs.csv row is appended, flushed and synced
//! when each run ends, and the manifest is replaced atomically (write to a
//! temporary file, then rename), so a crash or Ctrl-C loses at most the run
//! in progress.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::SweepOptions;
use crate::plan::PlannedRun;

/// Version of the on-disk format.
pub const FORMAT_VERSION: u32 = 1;

/// A results-directory error: always names the path.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// An I/O error on a file of the results directory.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The output directory exists and this is not a resume.
    #[error("output directory {} already exists; results are never overwritten: give a new --out, or --resume {} to finish it", path.display(), path.display())]
    Exists {
        /// The directory.
        path: PathBuf,
    },
    /// A CSV file could not be written or read.
    #[error("{}: {source}", path.display())]
    Csv {
        /// The file.
        path: PathBuf,
        /// The CSV error.
        source: csv::Error,
    },
    /// A JSON file could not be written or read.
    #[error("{}: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// A manifest of another format version.
    #[error("{}: format_version {found}, this driver writes {FORMAT_VERSION}; resume it with the driver that started it", path.display())]
    Version {
        /// The manifest.
        path: PathBuf,
        /// Its version.
        found: u32,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ResultsError + '_ {
    move |source| ResultsError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Sweep status in the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Runs in progress (or the driver died).
    Running,
    /// Every planned run done.
    Complete,
    /// Stopped by Ctrl-C/SIGTERM or an error; resumable.
    Interrupted,
}

/// A system setting the sweep changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingChange {
    /// The file (e.g. /proc/sys/kernel/perf_event_max_sample_rate).
    pub path: String,
    /// Value before.
    pub old: String,
    /// Value set.
    pub new: String,
    /// Whether the old value has been written back.
    pub restored: bool,
}

/// manifest.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Driver crate version.
    pub tool_version: String,
    /// `git rev-parse HEAD` of the source tree, if known.
    pub git_revision: Option<String>,
    /// running / complete / interrupted.
    pub status: Status,
    /// UTC RFC 3339.
    pub started_at: String,
    /// UTC RFC 3339, set when the sweep stops.
    pub ended_at: Option<String>,
    /// `driver probe --json` facts.
    pub host: serde_json::Value,
    /// The options as resolved.
    pub options: SweepOptions,
    /// Seed of the randomised order (also in `options`).
    pub seed: u64,
    /// Sampling event actually used (after a fallback).
    pub event: String,
    /// Every planned run.
    pub plan: Vec<PlannedRun>,
    /// Everything switched or doubtful.
    pub warnings: Vec<String>,
    /// System settings changed and whether they were restored.
    pub settings_changed: Vec<SettingChange>,
    /// The command line of the first invocation (and of resumes).
    #[serde(default)]
    pub command: Vec<String>,
}

/// One runs.csv row. Column order = field order; documented in
/// docs/results-format.md.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub run_id: u32,
    pub kind: String,
    pub design: String,
    pub block: u32,
    pub freq_hz: u64,
    pub rep: u32,
    pub event: String,
    pub requested_event: String,
    pub scope: String,
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
    pub status: String,
    pub error: String,
    // Optional in format 1: a reader takes a missing column as 0 or empty.
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
    pub driver_cpu_sampling_ns: u64,
    pub decoded_while_sampling_bytes: u64,
    /// What each sample carried (`--sample`); rows written before contents
    /// were a dimension ran with `time`.
    #[serde(default)]
    pub sample: String,
    /// Mean call-chain entries per sample on the measured CPU (empty
    /// without PERF_SAMPLE_CALLCHAIN).
    #[serde(default)]
    pub callchain_mean: Option<f64>,
    /// Mean user-stack bytes copied per sample (empty without
    /// PERF_SAMPLE_STACK_USER).
    #[serde(default)]
    pub stack_user_mean_bytes: Option<f64>,
    /// Mean of those bytes that were really stack (dyn_size).
    #[serde(default)]
    pub stack_dyn_mean_bytes: Option<f64>,
    /// What the workload's loop did (`--workload`); empty in older rows:
    /// `loop`.
    #[serde(default)]
    pub workload: String,
    /// The perf sysctls just before and just after the run (the kernel
    /// lowers the rate on its own when handlers run long); empty when
    /// unreadable.
    #[serde(default)]
    pub perf_event_max_sample_rate_before: Option<u64>,
    pub perf_event_max_sample_rate_after: Option<u64>,
    pub perf_cpu_time_max_percent_before: Option<u64>,
    pub perf_cpu_time_max_percent_after: Option<u64>,
}

/// One phases.csv row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseRow {
    pub run_id: u32,
    pub phase: u32,
    pub sampling: bool,
    pub start_ns: u64,
    pub end_ns: u64,
    pub iterations: u64,
    pub samples: u64,
    // The run's frequency, to group phases without a join.
    pub freq_hz: u64,
    // The workload's CPU time and run-queue wait in the phase
    // (/proc/<pid>/schedstat), to see contention from other tasks.
    pub task_ns: u64,
    pub wait_ns: u64,
    // The phase's group of four, its order (ABBA or BAAB), and the run's
    // settling time before phase 0.
    pub group: u32,
    pub order: String,
    pub settle_ns: u64,
}

/// Column names of a serde row type, in order.
fn header_of<T: Serialize + Default>() -> Vec<String> {
    // Serialising a default row with headers gives the header line.
    let mut w = csv::WriterBuilder::new()
        .has_headers(true)
        .from_writer(Vec::new());
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

/// runs.csv column names, in order.
pub fn run_columns() -> Vec<String> {
    header_of::<RunRow>()
}

/// phases.csv column names, in order.
pub fn phase_columns() -> Vec<String> {
    header_of::<PhaseRow>()
}

/// An open results directory.
#[derive(Debug)]
pub struct ResultsDir {
    root: PathBuf,
    runs: csv::Writer<File>,
    phases: csv::Writer<File>,
}

impl ResultsDir {
    /// Creates a new results directory; refuses an existing one.
    pub fn create(root: &Path) -> Result<Self, ResultsError> {
        if root.exists() {
            return Err(ResultsError::Exists {
                path: root.to_owned(),
            });
        }
        if let Some(parent) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        std::fs::create_dir(root).map_err(|source| {
            if source.kind() == std::io::ErrorKind::AlreadyExists {
                ResultsError::Exists {
                    path: root.to_owned(),
                }
            } else {
                ResultsError::Io {
                    path: root.to_owned(),
                    source,
                }
            }
        })?;
        for sub in ["events", "workload"] {
            let p = root.join(sub);
            std::fs::create_dir(&p).map_err(io_err(&p))?;
        }
        let runs_path = root.join("runs.csv");
        let phases_path = root.join("phases.csv");
        let mut runs = csv_appender(&runs_path)?;
        runs.write_record(run_columns())
            .map_err(|source| ResultsError::Csv {
                path: runs_path.clone(),
                source,
            })?;
        flush(&mut runs, &runs_path)?;
        let mut phases = csv_appender(&phases_path)?;
        phases
            .write_record(phase_columns())
            .map_err(|source| ResultsError::Csv {
                path: phases_path.clone(),
                source,
            })?;
        flush(&mut phases, &phases_path)?;
        Ok(ResultsDir {
            root: root.to_owned(),
            runs,
            phases,
        })
    }

    /// Opens an existing directory to append to (`--resume`).
    pub fn open_existing(root: &Path) -> Result<Self, ResultsError> {
        for sub in ["events", "workload"] {
            let p = root.join(sub);
            std::fs::create_dir_all(&p).map_err(io_err(&p))?;
        }
        Ok(ResultsDir {
            root: root.to_owned(),
            runs: csv_appender(&root.join("runs.csv"))?,
            phases: csv_appender(&root.join("phases.csv"))?,
        })
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Path of a util run's handler intervals.
    pub fn events_path(&self, run_id: u32) -> PathBuf {
        self.root
            .join("events")
            .join(format!("run-{run_id}.parquet"))
    }

    /// Path of a run's workload report.
    pub fn workload_path(&self, run_id: u32) -> PathBuf {
        self.root
            .join("workload")
            .join(format!("run-{run_id}.json"))
    }

    /// Appends one runs.csv row, flushed and synced.
    pub fn append_run(&mut self, row: &RunRow) -> Result<(), ResultsError> {
        let path = self.root.join("runs.csv");
        self.runs
            .serialize(row)
            .map_err(|source| ResultsError::Csv {
                path: path.clone(),
                source,
            })?;
        flush(&mut self.runs, &path)
    }

    /// Appends phases.csv rows, flushed and synced.
    pub fn append_phases(&mut self, rows: &[PhaseRow]) -> Result<(), ResultsError> {
        let path = self.root.join("phases.csv");
        for row in rows {
            self.phases
                .serialize(row)
                .map_err(|source| ResultsError::Csv {
                    path: path.clone(),
                    source,
                })?;
        }
        flush(&mut self.phases, &path)
    }

    /// Appends rows to `<root>/<name>` (a CSV with a header row, created on
    /// first use: the gaps design's timeline.csv and recovery.csv exist
    /// only in sweeps that run it), flushed and synced.
    pub fn append_rows<T: Serialize + Default>(
        &self,
        name: &str,
        rows: &[T],
    ) -> Result<(), ResultsError> {
        let path = self.root.join(name);
        let new = std::fs::metadata(&path)
            .map(|m| m.len() == 0)
            .unwrap_or(true);
        let mut w = csv_appender(&path)?;
        let csv_err = |source| ResultsError::Csv {
            path: path.clone(),
            source,
        };
        if new {
            w.write_record(header_of::<T>()).map_err(csv_err)?;
        }
        for row in rows {
            w.serialize(row).map_err(csv_err)?;
        }
        flush(&mut w, &path)
    }

    /// Creates the directory that will hold `path` (the gaps design's
    /// `gaps/` and `samples/` exist only in sweeps that run it).
    pub fn ensure_parent(&self, path: &Path) -> Result<(), ResultsError> {
        match path.parent() {
            Some(dir) => std::fs::create_dir_all(dir).map_err(io_err(dir)),
            None => Ok(()),
        }
    }

    /// Writes a run's workload report (the workload's own JSON).
    pub fn write_workload(&self, run_id: u32, json: &str) -> Result<(), ResultsError> {
        let path = self.workload_path(run_id);
        std::fs::write(&path, json).map_err(io_err(&path))
    }

    /// Replaces manifest.json atomically.
    pub fn write_manifest(&self, manifest: &Manifest) -> Result<(), ResultsError> {
        write_manifest(&self.root, manifest)
    }
}

fn csv_appender(path: &Path) -> Result<csv::Writer<File>, ResultsError> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io_err(path))?;
    Ok(csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(file))
}

fn flush(w: &mut csv::Writer<File>, path: &Path) -> Result<(), ResultsError> {
    w.flush().map_err(io_err(path))?;
    w.get_ref().sync_data().map_err(io_err(path))
}

/// Replaces `<root>/manifest.json` atomically.
pub fn write_manifest(root: &Path, manifest: &Manifest) -> Result<(), ResultsError> {
    let path = root.join("manifest.json");
    let mut text = serde_json::to_string_pretty(manifest).map_err(|source| ResultsError::Json {
        path: path.clone(),
        source,
    })?;
    text.push('\n');
    // Through `.manifest.json.tmp`, removed when any step fails (a full
    // disk left a zero-byte one behind before).
    crate::hoststate::write_atomic(&path, text.as_bytes()).map_err(io_err(&path))
}

/// Reads `<root>/manifest.json`.
pub fn read_manifest(root: &Path) -> Result<Manifest, ResultsError> {
    let path = root.join("manifest.json");
    let text = std::fs::read_to_string(&path).map_err(io_err(&path))?;
    let m: Manifest = serde_json::from_str(&text).map_err(|source| ResultsError::Json {
        path: path.clone(),
        source,
    })?;
    if m.format_version != FORMAT_VERSION {
        return Err(ResultsError::Version {
            path,
            found: m.format_version,
        });
    }
    Ok(m)
}

/// Opens a results CSV with its header row; errors name the file.
fn open_csv(path: &Path) -> Result<csv::Reader<std::fs::File>, ResultsError> {
    csv::ReaderBuilder::new()
        .has_headers(true)
        .from_path(path)
        .map_err(|source| ResultsError::Csv {
            path: path.to_path_buf(),
            source,
        })
}

/// Reads every runs.csv row. A torn last line (crash mid-write) is ignored.
pub fn read_runs(root: &Path) -> Result<Vec<RunRow>, ResultsError> {
    let path = root.join("runs.csv");
    let mut r = open_csv(&path)?;
    let mut rows = Vec::new();
    for rec in r.deserialize::<RunRow>() {
        match rec {
            Ok(row) => rows.push(row),
            Err(e) => {
                tracing::warn!("{}: ignoring unreadable row: {e}", path.display());
            }
        }
    }
    Ok(rows)
}

/// Reads every phases.csv row.
pub fn read_phases(root: &Path) -> Result<Vec<PhaseRow>, ResultsError> {
    let path = root.join("phases.csv");
    let mut r = open_csv(&path)?;
    r.deserialize::<PhaseRow>()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| ResultsError::Csv { path, source })
}

/// The planned runs that have no row in runs.csv yet (what `--resume` runs).
pub fn missing_runs(plan: &[PlannedRun], done: &[RunRow]) -> Vec<PlannedRun> {
    let done: std::collections::HashSet<u32> = done.iter().map(|r| r.run_id).collect();
    plan.iter()
        .filter(|p| !done.contains(&p.run_id))
        .cloned()
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::config::{FlagSettings, SweepOptions};
    use crate::plan::build_plan;

    fn manifest() -> Manifest {
        let opts = SweepOptions::resolve(&FlagSettings::default(), None, 2, 5).unwrap();
        Manifest {
            format_version: FORMAT_VERSION,
            tool_version: "0".into(),
            git_revision: None,
            status: Status::Running,
            started_at: "2026-01-01T00:00:00Z".into(),
            ended_at: None,
            host: serde_json::json!({"kernel": "x"}),
            plan: build_plan(&opts),
            seed: opts.seed,
            event: "cpu-clock".into(),
            options: opts,
            warnings: vec!["w".into()],
            settings_changed: vec![],
            command: vec![],
        }
    }

    #[test]
    fn round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("r");
        let mut dir = ResultsDir::create(&root).unwrap();
        let m = manifest();
        dir.write_manifest(&m).unwrap();
        let row = RunRow {
            run_id: 3,
            kind: "loss".into(),
            freq_hz: 4000,
            achieved_hz: 3998.5,
            quiet: true,
            error: "boom, \"quoted\"\nline".into(),
            status: "failed".into(),
            ..RunRow::default()
        };
        dir.append_run(&row).unwrap();
        dir.append_run(&RunRow {
            run_id: 4,
            ..row.clone()
        })
        .unwrap();
        let ph = PhaseRow {
            run_id: 3,
            phase: 1,
            sampling: true,
            iterations: 10,
            ..PhaseRow::default()
        };
        dir.append_phases(&[ph.clone(), ph.clone()]).unwrap();
        drop(dir);
        let rows = read_runs(&root).unwrap();
        assert_eq!(
            rows,
            vec![
                row.clone(),
                RunRow {
                    run_id: 4,
                    ..row.clone()
                }
            ]
        );
        assert_eq!(read_phases(&root).unwrap(), vec![ph.clone(), ph]);
        let back = read_manifest(&root).unwrap();
        assert_eq!(back.plan, m.plan);
        assert_eq!(back.options, m.options);
        // Appending after reopening keeps one header.
        let mut dir = ResultsDir::open_existing(&root).unwrap();
        dir.append_run(&RunRow { run_id: 5, ..row }).unwrap();
        assert_eq!(read_runs(&root).unwrap().len(), 3);
        let text = std::fs::read_to_string(root.join("runs.csv")).unwrap();
        assert_eq!(text.matches("run_id,kind").count(), 1);
    }

    #[test]
    fn a_failed_manifest_write_leaves_no_temporary() {
        let tmp = tempfile::tempdir().unwrap();
        // manifest.json is a non-empty directory: the rename fails.
        std::fs::create_dir_all(tmp.path().join("manifest.json").join("x")).unwrap();
        let e = write_manifest(tmp.path(), &manifest())
            .unwrap_err()
            .to_string();
        assert!(e.contains("manifest.json"), "{e}");
        assert!(!tmp.path().join(".manifest.json.tmp").exists());
    }

    #[test]
    fn refuses_existing_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let e = ResultsDir::create(tmp.path()).unwrap_err().to_string();
        assert!(
            e.contains("already exists") && e.contains("--resume"),
            "{e}"
        );
    }

    #[test]
    fn missing_runs_are_the_plan_minus_rows() {
        let m = manifest();
        let done: Vec<RunRow> = [0u32, 2, 5]
            .iter()
            .map(|&run_id| RunRow {
                run_id,
                ..RunRow::default()
            })
            .collect();
        let missing = missing_runs(&m.plan, &done);
        assert_eq!(missing.len(), m.plan.len() - 3);
        assert!(missing.iter().all(|p| ![0, 2, 5].contains(&p.run_id)));
        assert_eq!(missing[0].run_id, 1);
    }

    #[test]
    fn columns_start_with_the_documented_order() {
        let cols = run_columns();
        assert_eq!(&cols[..3], &["run_id", "kind", "design"]);
        assert!(cols.contains(&"noisy".to_owned()));
        assert_eq!(phase_columns()[..3], ["run_id", "phase", "sampling"]);
    }
}
