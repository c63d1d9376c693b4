//! The fleet's day table: a day's summaries in one file, with each row's
//! host and set folder (`analysis fleet ROOT --compact OUT`).

use std::path::Path;

use polars::prelude::*;

use super::{SUMMARY_VERSION, SummaryError, SummaryRow, summary_frame};
use crate::FormatError;

/// A fleet day's summaries in one table (`analysis fleet ROOT --compact
/// OUT` writes `OUT/date=DAY/summaries.parquet`): every summary column of
/// this version, after two of its own. No `date` column: the folder is the
/// partition key.
pub const DAY_TABLE: &str = "summaries.parquet";
/// The day table's own columns, before the summary's: the host (its
/// `host=` folder) and the set's folder relative to the fleet's root.
pub const DAY_TABLE_KEYS: [&str; 2] = ["host", "set_dir"];

/// One row of a day table: a summary row with its host and set folder.
#[derive(Debug, Clone, PartialEq)]
pub struct DayRow {
    /// The `host=` folder's value.
    pub host: String,
    /// The set's folder, relative to the fleet's root.
    pub set_dir: String,
    /// The summary row, unified to this version.
    pub row: SummaryRow,
}

/// Writes a day table atomically (a temporary file beside it, then a
/// rename: a reader sees the old table or the new one, never half), zstd
/// with statistics as lake engines expect; every row's `format_version`
/// is this version's, since every column of it is written.
pub fn write_day_table(path: &Path, rows: &[DayRow]) -> Result<(), FormatError> {
    let summary: Vec<SummaryRow> = rows
        .iter()
        .map(|d| SummaryRow {
            format_version: Some(SUMMARY_VERSION),
            ..d.row.clone()
        })
        .collect();
    let as_err = |e: PolarsError| FormatError::write(path, std::io::Error::other(e.to_string()));
    let mut df = summary_frame(&summary).map_err(as_err)?;
    let keys = [
        Column::new(
            "host".into(),
            rows.iter().map(|d| d.host.as_str()).collect::<Vec<_>>(),
        ),
        Column::new(
            "set_dir".into(),
            rows.iter().map(|d| d.set_dir.as_str()).collect::<Vec<_>>(),
        ),
    ];
    for (i, c) in keys.into_iter().enumerate() {
        df.insert_column(i, c).map_err(as_err)?;
    }
    crate::parquet::write_atomic(path, df)
}

/// Reads a day table as a frame: only `columns` of the summary where
/// given, with its keys, checked for both keys and for a newer version.
pub fn read_day_frame(path: &Path, columns: Option<&[String]>) -> Result<DataFrame, SummaryError> {
    let corrupt = |e: PolarsError| FormatError::Corrupt {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let file = std::fs::File::open(path).map_err(FormatError::io(path))?;
    let mut reader = ParquetReader::new(file);
    if let Some(cols) = columns {
        let mut want: Vec<String> = DAY_TABLE_KEYS.iter().map(|k| k.to_string()).collect();
        want.extend(cols.iter().cloned());
        reader = reader.with_columns(Some(want));
    }
    let df = reader.finish().map_err(corrupt)?;
    for k in DAY_TABLE_KEYS {
        if !df.column(k).is_ok_and(|c| c.dtype() == &DataType::String) {
            let (path, column) = (path.to_path_buf(), k.to_string());
            return Err(FormatError::MissingColumn { path, column }.into());
        }
    }
    if let Ok(v) = df.column("format_version") {
        let newest = v
            .cast(&DataType::Int64)
            .map_err(corrupt)?
            .i64()
            .map_err(corrupt)?
            .max();
        if let Some(found) = newest.filter(|&v| v > SUMMARY_VERSION) {
            let path = path.to_path_buf();
            return Err(SummaryError::Version { path, found });
        }
    }
    Ok(df)
}
