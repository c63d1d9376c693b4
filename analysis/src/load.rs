//! Reading a results directory (docs/results-format.md): the files are
//! defined, and read, by the `results-format` crate; this module gathers
//! manifest.json, runs.csv and phases.csv into one [`ResultSet`].

use std::path::{Path, PathBuf};

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
}

impl ResultSet {
    /// Path of a run's interval file.
    pub fn events_path(&self, run_id: u32) -> PathBuf {
        results_format::events_path(&self.dir, run_id)
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
    let manifest = results_format::read_manifest(dir)?;
    let runs = results_format::read_runs(dir)?;
    let phases = if dir.join(results_format::PHASES_CSV).exists() {
        results_format::read_phases(dir)?
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
