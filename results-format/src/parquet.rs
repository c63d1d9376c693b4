//! Parquet files of a results directory: written atomically, read by
//! columns. One place for both, used by `events` (handler intervals) and
//! `timeline` (the gaps design).

use std::fs::File;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use crate::FormatError;

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Writes `df` to `path` atomically: under a temporary name (removed if
/// the write fails), then renamed, so a reader never sees half a file.
pub fn write_atomic(path: &Path, mut df: DataFrame) -> Result<(), FormatError> {
    let tmp = tmp_path(path);
    let file = File::create(&tmp).map_err(|e| FormatError::write(&tmp, e))?;
    let written = ParquetWriter::new(file)
        .with_compression(ParquetCompression::Lz4Raw)
        .finish(&mut df);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(FormatError::write(
            &tmp,
            std::io::Error::other(e.to_string()),
        ));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        FormatError::write(path, e)
    })
}

/// Lazily scans `cols` of a parquet file; a missing file is
/// [`FormatError::Missing`], naming `what` it should have held.
pub fn read_columns(
    path: &Path,
    what: &'static str,
    cols: &[&str],
) -> Result<DataFrame, FormatError> {
    FormatError::require_file(path, what)?;
    let corrupt = |e: PolarsError| FormatError::corrupt(path, e);
    let pl_path = PlRefPath::try_from_path(path).map_err(corrupt)?;
    LazyFrame::scan_parquet(pl_path, ScanArgsParquet::default())
        .map_err(corrupt)?
        .select(cols.iter().map(|c| col(*c)).collect::<Vec<_>>())
        .collect()
        .map_err(corrupt)
}
