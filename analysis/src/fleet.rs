//! `analysis fleet ROOT`: one answer for many hosts, from the summaries of
//! a fleet dataset (docs/results-format.md, "A fleet dataset"): read
//! ([`scan`]), one observation per host ([`hosts`]), the figures per class
//! and for the fleet ([`classes`]), then the answer box and report
//! ([`present`]) with its CSVs ([`tables`]) and figures ([`figures`]).

pub mod cache;
pub mod classes;
pub mod compact;
pub mod days;
pub mod explain;
pub mod figures;
pub mod hosts;
pub mod pick;
pub mod present;
pub mod scan;
pub mod tables;

use std::path::{Path, PathBuf};

use crate::error::AnalysisError;

/// How the fleet is read and grouped: `analysis fleet`'s flags.
#[derive(Debug, Clone, clap::Args, serde::Serialize)]
pub struct FleetOptions {
    /// Class columns, comma-separated: cpu_model_name, virtualised,
    /// event, cpu_vendor, cpu_family, cpu_model, hypervisor, pmu,
    /// scope, contents, work_kind, cpus, tool_version, and the host
    /// traits: mitigations, preempt, cpuidle_driver, cpuidle_governor,
    /// kernel_hz, clocksource, smt_active, microcode, pmu_kind, kernel.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "cpu_model_name,virtualised,event"
    )]
    pub by: Vec<String>,
    /// A host's cost per sample is taken at its measured rate nearest
    /// this, Hz.
    #[arg(long = "at", value_name = "HZ", default_value_t = 1000.0)]
    pub at_hz: f64,
    /// The production rate every host is checked against, Hz (perf -F
    /// 99; Parca samples at 19, Pyroscope at 97).
    #[arg(long = "rate", value_name = "HZ", default_value_t = 99.0)]
    pub rate_hz: f64,
    /// Keep every date per host (the report then shows each class over
    /// time), not only the newest set.
    #[arg(long)]
    pub all: bool,
    /// Rank the host traits by how much of the spread in cost per sample
    /// between hosts of one class each explains (explain.csv; the
    /// method: docs/methodology.md).
    #[arg(long)]
    pub explain: bool,
    /// Skip sets without a summary instead of making one from their
    /// tables (that analyses each such set: slow for many).
    #[arg(long = "no-make", action = clap::ArgAction::SetFalse)]
    #[serde(skip)]
    pub make: bool,
    /// Read every summary, neither reading nor writing
    /// ROOT/.fleet-cache (by default a summary whose size and
    /// modification time are unchanged since the last run is taken
    /// from there).
    #[arg(long = "no-cache", action = clap::ArgAction::SetFalse)]
    #[serde(skip)]
    pub cache: bool,
    /// Compact instead of answering: each date's summaries under ROOT
    /// into one table, OUT/date=DAY/summaries.parquet, merged with what
    /// OUT holds, atomically per day. `analysis fleet OUT` reads it.
    #[arg(long, value_name = "OUT")]
    #[serde(skip)]
    pub compact: Option<PathBuf>,
    /// With --compact: only these days (YYYY-MM-DD, comma-separated).
    #[arg(
        long = "date",
        value_name = "DAY",
        value_delimiter = ',',
        requires = "compact"
    )]
    #[serde(skip)]
    pub dates: Vec<String>,
}

/// The fleet's answer and what it rests on.
#[derive(Debug, serde::Serialize)]
pub struct Fleet {
    pub root: PathBuf,
    /// `--by`, `--at`, `--rate` and `--all`.
    #[serde(flatten)]
    pub opts: FleetOptions,
    /// Result sets read, of those made from their tables, and taken from
    /// the cache of an earlier run.
    pub sets: usize,
    pub made: usize,
    pub cached: usize,
    pub fleet: classes::ClassFigures,
    pub classes: Vec<classes::ClassFigures>,
    pub hosts: Vec<hosts::HostObs>,
    /// With `--all`: each class's cost day by day, and the days it moved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub days: Vec<days::ClassDay>,
    /// With `--explain`: the host traits, ranked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<explain::Explain>,
    pub missing: Vec<scan::Missing>,
    pub skipped: Vec<scan::Skipped>,
    pub notes: Vec<String>,
}

/// Reads `root` and works out the fleet's answer. An error when a `--by`
/// column is unknown, `root` is no directory, or no host has a summary.
pub fn analyse(root: &Path, opts: &FleetOptions) -> Result<Fleet, AnalysisError> {
    let known = |c: &str| hosts::class_columns().any(|k| k == c);
    if let Some(bad) = opts.by.iter().find(|c| !known(c)) {
        let known: Vec<&str> = hosts::class_columns().collect();
        return Err(AnalysisError::Invalid(format!(
            "--by `{bad}`: not a class column; use any of {}",
            known.join(", ")
        )));
    }
    if !root.is_dir() {
        let path = root.to_path_buf();
        return Err(AnalysisError::NoSuchDirectory { path });
    }
    let read = scan::ScanOptions {
        make: opts.make,
        columns: Some(hosts::columns_read(&opts.by, opts.explain)),
        one_row_at: Some(opts.at_hz),
        cache: opts.cache,
    };
    let scan = scan::scan(root, &read).map_err(|e| AnalysisError::corrupt(root, e))?;
    let hosts = hosts::hosts(&scan.rows, scan.left_out, &scan.missing, opts);
    if hosts.obs.is_empty() {
        return Err(AnalysisError::NoSummary {
            root: root.to_path_buf(),
            skipped: scan.skipped.len(),
            missing: hosts.missing.len(),
        });
    }
    let (classes, fleet) = classes::all_figures(&hosts.obs);
    let explain = opts.explain.then(|| explain::explain(&hosts.obs));
    let days = opts.all.then(|| days::class_days(&hosts.obs));
    Ok(Fleet {
        root: root.to_path_buf(),
        opts: opts.clone(),
        sets: scan.sets,
        made: scan.made,
        cached: scan.cached,
        fleet,
        classes,
        hosts: hosts.obs,
        days: days.unwrap_or_default(),
        explain,
        missing: hosts.missing,
        skipped: scan.skipped,
        notes: hosts.notes,
    })
}
