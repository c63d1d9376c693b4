//! Reading a results directory (docs/results-format.md, format_version 1):
//! manifest.json, runs.csv and phases.csv through lazy polars scans.

use std::path::{Path, PathBuf};

use polars::prelude::*;

use crate::error::AnalysisError;

/// The results format version this crate reads.
pub const FORMAT_VERSION: u64 = 1;

/// manifest.json, with the keys the analysis uses pulled out.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub format_version: u64,
    pub status: String,
    pub warnings: Vec<String>,
    pub raw: serde_json::Value,
}

impl Manifest {
    /// A short label for the host: `host.hostname`, else the directory name.
    pub fn host_label(&self, dir: &Path) -> String {
        let host = &self.raw["host"];
        for key in ["hostname", "host", "name"] {
            if let Some(s) = host[key].as_str() {
                return s.to_string();
            }
        }
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.display().to_string())
    }

    /// A string field of `host` (e.g. `cpu_model`, `kernel`), if present.
    pub fn host_str(&self, key: &str) -> Option<String> {
        match &self.raw["host"][key] {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Null => None,
            v => Some(v.to_string()),
        }
    }
}

/// One row of runs.csv.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Run {
    pub run_id: i64,
    pub kind: String,
    pub design: String,
    pub block: i64,
    pub freq_hz: u64,
    pub rep: i64,
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
    pub nivcsw: u64,
    pub quiet: bool,
    pub noisy: bool,
    pub status: String,
    pub error: String,
    /// Optional in format 1: a missing column reads as 0 or empty.
    pub lost_samples: u64,
    pub unthrottled: u64,
    pub foreign_intervals: u64,
    pub noise_reasons: String,
    /// The driver's own CPU time while sampling was enabled (0 when absent).
    pub driver_cpu_sampling_ns: u64,
    /// What each sample carried (`--sample`); `time` for result sets
    /// written before contents were a dimension (they ran with it).
    pub sample: String,
    /// Mean call-chain entries per sample (0 when absent).
    pub callchain_mean: f64,
    /// Mean user-stack bytes copied per sample (0 when absent).
    pub stack_user_mean_bytes: f64,
    /// What the workload's loop did (`loop` when absent).
    pub workload: String,
    /// kernel.perf_event_max_sample_rate just before / after the run (0 when
    /// unknown: unreadable, or a result set older than these columns).
    pub perf_event_max_sample_rate_before: u64,
    pub perf_event_max_sample_rate_after: u64,
    /// kernel.perf_cpu_time_max_percent just before / after the run (0 when
    /// unknown).
    pub perf_cpu_time_max_percent_before: u64,
    pub perf_cpu_time_max_percent_after: u64,
}

impl Run {
    /// The run finished and its numbers can be used.
    pub fn ok(&self) -> bool {
        self.status == "ok"
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
}

/// One row of phases.csv.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Phase {
    pub run_id: i64,
    pub phase: i64,
    pub sampling: bool,
    pub start_ns: u64,
    pub end_ns: u64,
    pub iterations: u64,
    pub samples: u64,
}

impl Phase {
    /// Loops per second in this phase (NaN for an empty phase).
    pub fn rate(&self) -> f64 {
        let d = self.end_ns.saturating_sub(self.start_ns);
        if d == 0 {
            return f64::NAN;
        }
        self.iterations as f64 / (d as f64 * 1e-9)
    }
}

/// A loaded results directory.
#[derive(Debug, Clone)]
pub struct ResultSet {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub runs: Vec<Run>,
    pub phases: Vec<Phase>,
}

impl ResultSet {
    /// Path of a run's interval file.
    pub fn events_path(&self, run_id: i64) -> PathBuf {
        self.dir
            .join("events")
            .join(format!("run-{run_id}.parquet"))
    }
}

/// Load manifest.json (checking format_version), runs.csv and, if present,
/// phases.csv.
pub fn load(dir: &Path) -> Result<ResultSet, AnalysisError> {
    if !dir.is_dir() {
        return Err(AnalysisError::Missing {
            path: dir.to_path_buf(),
            what: "results directory",
        });
    }
    let manifest = read_manifest(&dir.join("manifest.json"))?;
    let runs = read_runs(&dir.join("runs.csv"))?;
    let phases_path = dir.join("phases.csv");
    let phases = if phases_path.exists() {
        read_phases(&phases_path)?
    } else {
        Vec::new()
    };
    Ok(ResultSet {
        dir: dir.to_path_buf(),
        manifest,
        runs,
        phases,
    })
}

/// Read and check manifest.json.
pub fn read_manifest(path: &Path) -> Result<Manifest, AnalysisError> {
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => AnalysisError::Missing {
            path: path.to_path_buf(),
            what: "manifest.json of the results directory",
        },
        _ => AnalysisError::corrupt(path, e),
    })?;
    let raw: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| AnalysisError::corrupt(path, e))?;
    let version = &raw["format_version"];
    let format_version = version
        .as_u64()
        .ok_or_else(|| AnalysisError::FormatVersion {
            path: path.to_path_buf(),
            found: version.to_string(),
            supported: FORMAT_VERSION,
        })?;
    if format_version != FORMAT_VERSION {
        return Err(AnalysisError::FormatVersion {
            path: path.to_path_buf(),
            found: format_version.to_string(),
            supported: FORMAT_VERSION,
        });
    }
    let warnings = raw["warnings"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|w| {
                    w.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| w.to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let status = raw["status"].as_str().unwrap_or("unknown").to_string();
    Ok(Manifest {
        format_version,
        status,
        warnings,
        raw,
    })
}

fn scan_csv(path: &Path, what: &'static str) -> Result<DataFrame, AnalysisError> {
    AnalysisError::require_file(path, what)?;
    let corrupt = |e: PolarsError| AnalysisError::corrupt(path, e);
    let pl_path = PlRefPath::try_from_path(path).map_err(corrupt)?;
    LazyCsvReader::new(pl_path)
        .with_has_header(true)
        .with_infer_schema_length(None)
        .finish()
        .map_err(corrupt)?
        .collect()
        .map_err(corrupt)
}

/// Typed access to the columns of a small table, with defaults for the
/// optional ones and a clear error for the required ones.
struct Cols<'a> {
    df: &'a DataFrame,
    path: &'a Path,
}

impl Cols<'_> {
    fn column(&self, name: &str, required: bool) -> Result<Option<&Column>, AnalysisError> {
        match self.df.column(name) {
            Ok(c) => Ok(Some(c)),
            Err(_) if !required => Ok(None),
            Err(_) => Err(AnalysisError::MissingColumn {
                path: self.path.to_path_buf(),
                column: name.to_string(),
            }),
        }
    }

    fn bad(&self, name: &str, e: PolarsError) -> AnalysisError {
        AnalysisError::corrupt(self.path, format!("column `{name}`: {e}"))
    }

    fn i64(&self, name: &str, required: bool) -> Result<Vec<i64>, AnalysisError> {
        let h = self.df.height();
        let Some(c) = self.column(name, required)? else {
            return Ok(vec![0; h]);
        };
        let c = c.cast(&DataType::Int64).map_err(|e| self.bad(name, e))?;
        let ca = c.i64().map_err(|e| self.bad(name, e))?;
        Ok(ca.iter().map(|v| v.unwrap_or(0)).collect())
    }

    fn u64(&self, name: &str, required: bool) -> Result<Vec<u64>, AnalysisError> {
        Ok(self
            .i64(name, required)?
            .into_iter()
            .map(|v| v.max(0) as u64)
            .collect())
    }

    fn f64(&self, name: &str, required: bool) -> Result<Vec<f64>, AnalysisError> {
        let h = self.df.height();
        let Some(c) = self.column(name, required)? else {
            return Ok(vec![f64::NAN; h]);
        };
        let c = c.cast(&DataType::Float64).map_err(|e| self.bad(name, e))?;
        let ca = c.f64().map_err(|e| self.bad(name, e))?;
        Ok(ca.iter().map(|v| v.unwrap_or(f64::NAN)).collect())
    }

    fn str(&self, name: &str, required: bool) -> Result<Vec<String>, AnalysisError> {
        let h = self.df.height();
        let Some(c) = self.column(name, required)? else {
            return Ok(vec![String::new(); h]);
        };
        let c = c.cast(&DataType::String).map_err(|e| self.bad(name, e))?;
        let ca = c.str().map_err(|e| self.bad(name, e))?;
        Ok(ca.iter().map(|v| v.unwrap_or("").to_string()).collect())
    }

    fn bool(&self, name: &str, required: bool) -> Result<Vec<bool>, AnalysisError> {
        let h = self.df.height();
        let Some(c) = self.column(name, required)? else {
            return Ok(vec![false; h]);
        };
        if c.dtype() == &DataType::Boolean {
            let ca = c.bool().map_err(|e| self.bad(name, e))?;
            return Ok(ca.iter().map(|v| v.unwrap_or(false)).collect());
        }
        Ok(self
            .str(name, required)?
            .iter()
            .map(|s| matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "1" | "yes"))
            .collect())
    }
}

/// The sample contents of result sets that predate the `sample` column.
pub const LEGACY_SAMPLE: &str = "time";

fn finite_or_zero(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

/// Read runs.csv. Required columns: run_id, kind, freq_hz, iterations,
/// status; the others default to 0 / empty / false when absent.
pub fn read_runs(path: &Path) -> Result<Vec<Run>, AnalysisError> {
    let df = scan_csv(path, "runs.csv, one row per run")?;
    let c = Cols { df: &df, path };
    let run_id = c.i64("run_id", true)?;
    let kind = c.str("kind", true)?;
    let design = c.str("design", false)?;
    let block = c.i64("block", false)?;
    let freq_hz = c.u64("freq_hz", true)?;
    let rep = c.i64("rep", false)?;
    let event = c.str("event", false)?;
    let requested_event = c.str("requested_event", false)?;
    let scope = c.str("scope", false)?;
    let cpu = c.u64("cpu", false)?;
    let duration_ns = c.u64("duration_ns", false)?;
    let iterations = c.u64("iterations", true)?;
    let wall_ns = c.u64("wall_ns", false)?;
    let window_ns = c.u64("window_ns", false)?;
    let samples = c.u64("samples", false)?;
    let achieved_hz = c.f64("achieved_hz", false)?;
    let throttled = c.u64("throttled", false)?;
    let lost = c.u64("lost", false)?;
    let duplicates = c.u64("duplicates", false)?;
    let handler_intervals = c.u64("handler_intervals", false)?;
    let unmatched = c.u64("unmatched", false)?;
    let steal_ns = c.u64("steal_ns", false)?;
    let nivcsw = c.u64("nivcsw", false)?;
    let quiet = c.bool("quiet", false)?;
    let noisy = c.bool("noisy", false)?;
    let status = c.str("status", true)?;
    let error = c.str("error", false)?;
    let lost_samples = c.u64("lost_samples", false)?;
    let unthrottled = c.u64("unthrottled", false)?;
    let foreign_intervals = c.u64("foreign_intervals", false)?;
    let noise_reasons = c.str("noise_reasons", false)?;
    let driver_cpu_sampling_ns = c.u64("driver_cpu_sampling_ns", false)?;
    let sample = c.str("sample", false)?;
    let callchain_mean = c.f64("callchain_mean", false)?;
    let stack_user_mean_bytes = c.f64("stack_user_mean_bytes", false)?;
    let workload = c.str("workload", false)?;
    let rate_before = c.u64("perf_event_max_sample_rate_before", false)?;
    let rate_after = c.u64("perf_event_max_sample_rate_after", false)?;
    let pct_before = c.u64("perf_cpu_time_max_percent_before", false)?;
    let pct_after = c.u64("perf_cpu_time_max_percent_after", false)?;
    let runs = (0..df.height())
        .map(|i| Run {
            run_id: run_id[i],
            kind: kind[i].clone(),
            design: if design[i].is_empty() {
                "classic".to_string()
            } else {
                design[i].clone()
            },
            block: block[i],
            freq_hz: freq_hz[i],
            rep: rep[i],
            event: event[i].clone(),
            requested_event: requested_event[i].clone(),
            scope: scope[i].clone(),
            cpu: u32::try_from(cpu[i]).unwrap_or(u32::MAX),
            duration_ns: duration_ns[i],
            iterations: iterations[i],
            wall_ns: wall_ns[i],
            window_ns: window_ns[i],
            samples: samples[i],
            achieved_hz: achieved_hz[i],
            throttled: throttled[i],
            lost: lost[i],
            duplicates: duplicates[i],
            handler_intervals: handler_intervals[i],
            unmatched: unmatched[i],
            steal_ns: steal_ns[i],
            nivcsw: nivcsw[i],
            quiet: quiet[i],
            noisy: noisy[i],
            status: status[i].clone(),
            error: error[i].clone(),
            lost_samples: lost_samples[i],
            unthrottled: unthrottled[i],
            foreign_intervals: foreign_intervals[i],
            noise_reasons: noise_reasons[i].clone(),
            driver_cpu_sampling_ns: driver_cpu_sampling_ns[i],
            sample: if sample[i].is_empty() {
                LEGACY_SAMPLE.to_string()
            } else {
                sample[i].clone()
            },
            callchain_mean: finite_or_zero(callchain_mean[i]),
            stack_user_mean_bytes: finite_or_zero(stack_user_mean_bytes[i]),
            workload: if workload[i].is_empty() {
                "loop".to_string()
            } else {
                workload[i].clone()
            },
            perf_event_max_sample_rate_before: rate_before[i],
            perf_event_max_sample_rate_after: rate_after[i],
            perf_cpu_time_max_percent_before: pct_before[i],
            perf_cpu_time_max_percent_after: pct_after[i],
        })
        .collect();
    Ok(runs)
}

/// Read phases.csv (paired design).
pub fn read_phases(path: &Path) -> Result<Vec<Phase>, AnalysisError> {
    let df = scan_csv(path, "phases.csv of the paired design")?;
    let c = Cols { df: &df, path };
    let run_id = c.i64("run_id", true)?;
    let phase = c.i64("phase", true)?;
    let sampling = c.bool("sampling", true)?;
    let start_ns = c.u64("start_ns", true)?;
    let end_ns = c.u64("end_ns", true)?;
    let iterations = c.u64("iterations", true)?;
    let samples = c.u64("samples", false)?;
    Ok((0..df.height())
        .map(|i| Phase {
            run_id: run_id[i],
            phase: phase[i],
            sampling: sampling[i],
            start_ns: start_ns[i],
            end_ns: end_ns[i],
            iterations: iterations[i],
            samples: samples[i],
        })
        .collect())
}
