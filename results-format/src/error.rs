//! The crate's one error type. Every variant names the file it is about and,
//! where there is one, the fix.

use std::path::{Path, PathBuf};

use crate::FORMAT_VERSION;

/// Reading or writing a file of a results directory failed.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// A file the results format requires is absent.
    #[error("{path}: missing ({what}); is this a results directory written by `driver sweep`?")]
    Missing {
        /// The file.
        path: PathBuf,
        /// What it should have held.
        what: &'static str,
    },

    /// A file exists but could not be read or parsed.
    #[error("{path}: corrupt or unreadable: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The parser's complaint.
        reason: String,
    },

    /// A CSV to append to (`--resume`) has other columns than this build
    /// writes: rows appended to it would land under the wrong names.
    #[error(
        "{path}: its columns are not the ones this driver writes (first difference: `{found}` where this driver writes `{expected}`); another driver version started this sweep: finish it with that driver, or start a new sweep"
    )]
    Columns {
        /// The file.
        path: PathBuf,
        /// The file's column at the first difference (empty: fewer columns).
        found: String,
        /// This build's column there (empty: fewer columns).
        expected: String,
    },

    /// A required column is absent from a table.
    #[error("{path}: no column `{column}` (see docs/results-format.md)")]
    MissingColumn {
        /// The file.
        path: PathBuf,
        /// The column.
        column: String,
    },

    /// manifest.json has a format_version this build does not know.
    #[error(
        "{path}: format_version {found} is not supported (this build reads version {FORMAT_VERSION}); \
         use the driver and analysis built from the same source revision as the driver that wrote it"
    )]
    FormatVersion {
        /// The manifest.
        path: PathBuf,
        /// The version found (as written, it may not even be a number).
        found: String,
    },

    /// The output directory exists and this is not a resume.
    #[error("output directory {} already exists; results are never overwritten: give a new --out, or --resume {} to finish it", path.display(), path.display())]
    Exists {
        /// The directory.
        path: PathBuf,
    },

    /// An I/O error on a file of the results directory.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },

    /// A CSV file could not be written.
    #[error("{}: {source}", path.display())]
    Csv {
        /// The file.
        path: PathBuf,
        /// The CSV error.
        source: csv::Error,
    },

    /// A JSON file could not be written.
    #[error("{}: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },

    /// Writing a Parquet file failed.
    #[error("{path}: cannot write: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS or encoder error.
        #[source]
        source: std::io::Error,
    },

    /// The caller passed columns of different lengths.
    #[error(
        "write_intervals_parquet({path}): columns differ in length (cpu {cpu}, entry_ns {entry}, \
         duration_ns {duration}, source {source_len}); pass one value per interval in every column"
    )]
    LengthMismatch {
        /// The file.
        path: PathBuf,
        /// Length of `cpu`.
        cpu: usize,
        /// Length of `entry_ns`.
        entry: usize,
        /// Length of `duration_ns`.
        duration: usize,
        /// Length of `source`.
        source_len: usize,
    },
}

impl FormatError {
    /// [`FormatError::Corrupt`] for `path`.
    pub fn corrupt(path: impl Into<PathBuf>, reason: impl std::fmt::Display) -> Self {
        Self::Corrupt {
            path: path.into(),
            reason: reason.to_string(),
        }
    }

    /// The file this error is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::Missing { path, .. }
            | Self::Corrupt { path, .. }
            | Self::MissingColumn { path, .. }
            | Self::Columns { path, .. }
            | Self::FormatVersion { path, .. }
            | Self::Exists { path }
            | Self::Io { path, .. }
            | Self::Csv { path, .. }
            | Self::Json { path, .. }
            | Self::Write { path, .. }
            | Self::LengthMismatch { path, .. } => path,
        }
    }

    /// [`FormatError::Missing`] unless `path` exists: a file the results
    /// format requires, holding `what`.
    pub(crate) fn require_file(path: &Path, what: &'static str) -> Result<(), Self> {
        if path.exists() {
            Ok(())
        } else {
            Err(Self::Missing {
                path: path.to_path_buf(),
                what,
            })
        }
    }

    pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |source| Self::Io {
            path: path.to_owned(),
            source,
        }
    }

    pub(crate) fn csv(path: &Path) -> impl Fn(csv::Error) -> Self + '_ {
        move |source| Self::Csv {
            path: path.to_owned(),
            source,
        }
    }

    pub(crate) fn write(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Write {
            path: path.into(),
            source,
        }
    }
}

/// An error and its causes on one line, as `{:#}` writes an anyhow chain,
/// but a cause whose text the line already holds is not said again (an
/// error that shows its OS error in its own message, and also returns it
/// as its source, would otherwise print it twice).
pub fn message_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut line = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        cause = c.source();
    }
    line
}

/// A caught panic's message: its `&str` or `String` payload, else "no
/// message". The one reading of a payload for the boundaries that catch
/// panics (the analysis CLI, the sweep's report step).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}

#[cfg(test)]
mod chain_tests {
    use super::*;

    #[test]
    fn a_cause_already_in_the_message_is_said_once() {
        let e = FormatError::Io {
            path: "/proc/nope".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let line = message_chain(&e);
        assert_eq!(line.matches("not found").count(), 1, "{line}");
        assert!(line.starts_with("/proc/nope: "), "{line}");
    }
}
