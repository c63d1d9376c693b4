//! `analysis fleet ROOT`: one answer for many hosts, from the summaries of
//! a fleet dataset (docs/layout.md, "The fleet dataset"): read
//! ([`scan`]), one observation per host ([`hosts`]), the figures per class
//! and for the fleet ([`classes`]), then the answer box and report
//! ([`present`]) with its CSVs ([`tables`]) and figures ([`figures`]).

pub mod cache;
pub mod classes;
pub mod figures;
pub mod hosts;
pub mod pick;
pub mod present;
pub mod row;
pub mod scan;
pub mod tables;

use std::path::{Path, PathBuf};

use crate::error::AnalysisError;

/// How the fleet is read and grouped.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    /// Class columns ([`hosts::CLASS_COLUMNS`]).
    pub by: Vec<String>,
    /// The rate whose cost stands for a host: its measured rate nearest
    /// this, Hz.
    pub at_hz: f64,
    /// The production rate the report checks every host against, Hz.
    pub rate_hz: f64,
    /// Every date per host, not only the newest.
    pub all: bool,
    /// Make a summary from the tables of a set without one.
    pub make: bool,
    /// Use ROOT/.fleet-cache (unchanged summaries are not read again).
    pub cache: bool,
}

impl Default for FleetOptions {
    fn default() -> Self {
        Self {
            by: hosts::DEFAULT_BY.iter().map(|s| s.to_string()).collect(),
            at_hz: 1000.0,
            rate_hz: 99.0,
            all: false,
            make: true,
            cache: true,
        }
    }
}

/// The fleet's answer and what it rests on.
#[derive(Debug, serde::Serialize)]
pub struct Fleet {
    pub root: PathBuf,
    pub by: Vec<String>,
    pub at_hz: f64,
    pub rate_hz: f64,
    pub all: bool,
    /// Result sets read, of those made from their tables, and taken from
    /// the cache of an earlier run.
    pub sets: usize,
    pub made: usize,
    pub cached: usize,
    pub fleet: classes::ClassFigures,
    pub classes: Vec<classes::ClassFigures>,
    pub hosts: Vec<hosts::HostObs>,
    pub missing: Vec<scan::Missing>,
    pub skipped: Vec<scan::Skipped>,
    pub notes: Vec<String>,
}

/// Reads `root` and works out the fleet's answer. An error when a `--by`
/// column is unknown, `root` is no directory, or no host has a summary.
pub fn analyse(root: &Path, opts: &FleetOptions) -> Result<Fleet, AnalysisError> {
    if let Some(bad) = opts
        .by
        .iter()
        .find(|c| !hosts::CLASS_COLUMNS.contains(&c.as_str()))
    {
        return Err(AnalysisError::Invalid(format!(
            "--by `{bad}`: not a class column; use any of {}",
            hosts::CLASS_COLUMNS.join(", ")
        )));
    }
    if !root.is_dir() {
        return Err(AnalysisError::NoSuchDirectory {
            path: root.to_path_buf(),
        });
    }
    let read = scan::ScanOptions {
        make: opts.make,
        columns: Some(hosts::columns_read(&opts.by)),
        one_row_at: Some(opts.at_hz),
        cache: opts.cache,
    };
    let scan = scan::scan(root, &read).map_err(|e| AnalysisError::corrupt(root, e))?;
    let hosts = hosts::hosts(
        &scan.rows,
        scan.left_out,
        &scan.missing,
        &opts.by,
        opts.at_hz,
        opts.all,
    );
    if hosts.obs.is_empty() {
        return Err(AnalysisError::NoSummary {
            root: root.to_path_buf(),
            skipped: scan.skipped.len(),
            missing: hosts.missing.len(),
        });
    }
    let (classes, fleet) = classes::all_figures(&hosts.obs);
    Ok(Fleet {
        root: root.to_path_buf(),
        by: opts.by.clone(),
        at_hz: opts.at_hz,
        rate_hz: opts.rate_hz,
        all: opts.all,
        sets: scan.sets,
        made: scan.made,
        cached: scan.cached,
        fleet,
        classes,
        hosts: hosts.obs,
        missing: hosts.missing,
        skipped: scan.skipped,
        notes: hosts.notes,
    })
}
