//! The report's plots, drawn through the plotting helper's `plot` module.

use std::path::{Path, PathBuf};

use crate::error::AnalysisError;
use crate::reference::Reference;
use crate::tables::Analysis;

/// Draw every plot into `out`; returns the files written.
pub fn write_plots(
    _out: &Path,
    _a: &Analysis,
    _reference: &Reference,
) -> Result<Vec<PathBuf>, AnalysisError> {
    // The plotting module (src/plot.rs) has not landed yet.
    Ok(Vec::new())
}
