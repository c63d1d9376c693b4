//! The crate's one error type. Every variant names the file (or value) it is
//! about and, where there is one, the fix.

use std::path::PathBuf;

/// Everything that can go wrong while reading a results directory or writing
/// its report.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    /// The path given as a results directory does not exist.
    #[error("{path}: no such results directory: give the directory `driver sweep` wrote")]
    NoSuchDirectory { path: PathBuf },

    /// The path given as a results directory is a file.
    #[error(
        "{path} is a file, not a results directory: give the directory `driver sweep` wrote (it holds manifest.json and runs.csv)"
    )]
    NotADirectory { path: PathBuf },

    /// A file exists but could not be read or parsed.
    #[error("{path}: corrupt or unreadable: {reason}")]
    Corrupt { path: PathBuf, reason: String },

    /// A file of the results directory could not be read.
    #[error(transparent)]
    Format(#[from] results_format::FormatError),

    /// Writing an output file failed.
    #[error("{path}: cannot write: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The data do not allow the requested computation.
    #[error("{0}")]
    Insufficient(String),

    /// A bad argument (budget, etc.), naming the flag.
    #[error("{0}")]
    Invalid(String),

    /// `analysis fleet ROOT` found no host with a summary (bad input).
    #[error(
        "{root}: no result set with a usable summary under it ({skipped} skipped, {missing} hosts missing); give the fleet dataset's root (it holds host=NAME/date=DAY/<set>/summary.parquet) or result directories"
    )]
    NoSummary {
        root: PathBuf,
        skipped: usize,
        missing: usize,
    },

    /// Drawing a plot failed (the message names the plot file).
    #[error(transparent)]
    Plot(#[from] PlotError),
}

impl AnalysisError {
    pub(crate) fn corrupt(path: impl Into<PathBuf>, reason: impl std::fmt::Display) -> Self {
        Self::Corrupt {
            path: path.into(),
            reason: reason.to_string(),
        }
    }

    pub(crate) fn write(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Write {
            path: path.into(),
            source,
        }
    }
}

/// Why a plot could not be written. `file` is the output path without its
/// `.svg`/`.png` extension, unless the error concerns one of the two files.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("cannot plot {}.{{svg,png}}: nothing to draw: {detail}", file.display())]
    NoData { file: PathBuf, detail: String },
    #[error(
        "cannot plot {}.{{svg,png}}: {what}[{index}] is {value}; every value must be finite \
         (drop or fix that row in the input)",
        file.display()
    )]
    NonFinite {
        file: PathBuf,
        what: String,
        index: usize,
        value: f64,
    },
    #[error("cannot plot {}.{{svg,png}}: {what}: {detail}", file.display())]
    InvalidData {
        file: PathBuf,
        what: String,
        detail: String,
    },
    #[error("cannot create directory {} for plot {}: {source}", dir.display(), file.display())]
    CreateDir {
        file: PathBuf,
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write plot {}: {message}", file.display())]
    Render { file: PathBuf, message: String },
    #[error(
        "the embedded font analysis/assets/DejaVuSans.ttf is not a valid TrueType font \
         (restore the file from git and rebuild)"
    )]
    Font,
}
