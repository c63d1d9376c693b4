//! The crate's one error type. Every variant names the file (or value) it is
//! about and, where there is one, the fix.

use std::path::PathBuf;

/// Everything that can go wrong while reading a results directory or writing
/// its report.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    /// A file the results format requires is absent.
    #[error("{path}: missing ({what}); is this a results directory written by `driver sweep`?")]
    Missing { path: PathBuf, what: &'static str },

    /// A file exists but could not be read or parsed.
    #[error("{path}: corrupt or unreadable: {reason}")]
    Corrupt { path: PathBuf, reason: String },

    /// A required column is absent from a table.
    #[error("{path}: no column `{column}` (see docs/results-format.md)")]
    MissingColumn { path: PathBuf, column: String },

    /// manifest.json has a format_version this reader does not know.
    #[error(
        "{path}: format_version {found} is not supported (this analysis reads version {supported}); \
         use the analysis built from the same source revision as the driver"
    )]
    FormatVersion {
        path: PathBuf,
        found: String,
        supported: u64,
    },

    /// Writing an output file failed.
    #[error("{path}: cannot write: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The caller passed columns of different lengths.
    #[error(
        "write_intervals_parquet({path}): columns differ in length (cpu {cpu}, entry_ns {entry}, \
         duration_ns {duration}, source {source_len}); pass one value per interval in every column"
    )]
    LengthMismatch {
        path: PathBuf,
        cpu: usize,
        entry: usize,
        duration: usize,
        source_len: usize,
    },

    /// The data do not allow the requested computation.
    #[error("{0}")]
    Insufficient(String),

    /// A bad argument (budget, etc.), naming the flag.
    #[error("{0}")]
    Invalid(String),

    /// Drawing a plot failed (the message names the plot file).
    #[error(transparent)]
    Plot(#[from] crate::plot::PlotError),
}

impl AnalysisError {
    pub(crate) fn corrupt(path: impl Into<PathBuf>, reason: impl std::fmt::Display) -> Self {
        Self::Corrupt {
            path: path.into(),
            reason: reason.to_string(),
        }
    }

    /// [`AnalysisError::Missing`] unless `path` exists: a file the results
    /// format requires, holding `what`.
    pub(crate) fn require_file(path: &std::path::Path, what: &'static str) -> Result<(), Self> {
        if path.exists() {
            Ok(())
        } else {
            Err(Self::Missing {
                path: path.to_path_buf(),
                what,
            })
        }
    }

    pub(crate) fn write(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Write {
            path: path.into(),
            source,
        }
    }
}
