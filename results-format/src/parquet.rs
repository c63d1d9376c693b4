//! Parquet files of a results directory: written atomically with zstd,
//! read by columns. One place for both, used by `events` (handler
//! intervals) and `timeline` (the gaps design).
//!
//! Timestamps are stored as their steps (`X_step_ns`: each value minus the
//! one before, the first minus 0): a sorted nanosecond clock's steps are
//! small and repetitive where the times themselves are not, so zstd packs
//! them to a third (docs/results-format.md, "Raw files on disk"). A running
//! sum gives the times back exactly; the steps wrap, so any u64 sequence
//! survives the round trip, sorted or not.

use std::fs::File;
use std::path::Path;

use polars::prelude::*;

use crate::FormatError;

/// Each value minus the one before (the first minus 0), wrapping: the
/// stored form of a timestamp column ([`to_steps_i64`] on the same bits).
pub fn to_steps(values: &[u64]) -> Vec<i64> {
    let signed: Vec<i64> = values.iter().map(|&v| v as i64).collect();
    to_steps_i64(&signed)
}

/// The running sum of [`to_steps`]' output: the values back, exactly.
pub fn from_steps(steps: &[i64]) -> Vec<u64> {
    from_steps_i64(steps)
        .into_iter()
        .map(|v| v as u64)
        .collect()
}

/// [`to_steps`] for a signed column (an episode index with -1 for none).
pub fn to_steps_i64(values: &[i64]) -> Vec<i64> {
    let mut prev = 0i64;
    values
        .iter()
        .map(|&v| {
            let step = v.wrapping_sub(prev);
            prev = v;
            step
        })
        .collect()
}

/// The running sum of [`to_steps_i64`]' output.
pub fn from_steps_i64(steps: &[i64]) -> Vec<i64> {
    let mut acc = 0i64;
    steps
        .iter()
        .map(|&s| {
            acc = acc.wrapping_add(s);
            acc
        })
        .collect()
}

/// Writes `df` to `path` atomically: under a temporary name (removed if
/// the write fails), then renamed, so a reader never sees half a file.
pub fn write_atomic(path: &Path, mut df: DataFrame) -> Result<(), FormatError> {
    let mut tmp =
        crate::dir::temporary_beside(path, ".parquet-").map_err(|e| FormatError::write(path, e))?;
    ParquetWriter::new(tmp.as_file_mut())
        .with_compression(ParquetCompression::Zstd(None))
        .finish(&mut df)
        .map_err(|e| FormatError::write(path, std::io::Error::other(e.to_string())))?;
    tmp.persist(path)
        .map(drop)
        .map_err(|e| FormatError::write(path, e.error))
}

/// [`write_atomic`] for a small table read many at a time (a fleet's
/// summaries): no compression and no statistics, since for a few rows
/// both only cost the reader (a zstd context per page, a longer footer).
pub fn write_atomic_small(path: &Path, mut df: DataFrame) -> Result<(), FormatError> {
    let mut tmp =
        crate::dir::temporary_beside(path, ".parquet-").map_err(|e| FormatError::write(path, e))?;
    ParquetWriter::new(tmp.as_file_mut())
        .with_compression(ParquetCompression::Uncompressed)
        .with_statistics(StatisticsOptions::empty())
        .finish(&mut df)
        .map_err(|e| FormatError::write(path, std::io::Error::other(e.to_string())))?;
    tmp.persist(path)
        .map(drop)
        .map_err(|e| FormatError::write(path, e.error))
}

/// Reads the first of `forms` (each a list of columns) that the file holds
/// whole, opening it once: the index of that form and its columns. A file
/// that holds none of them is [`FormatError::MissingColumn`] for the first
/// column of the first form it lacks.
pub fn read_first_form(
    path: &Path,
    what: &'static str,
    forms: &[&[&str]],
) -> Result<(usize, DataFrame), FormatError> {
    FormatError::require_file(path, what)?;
    let corrupt = |e: PolarsError| FormatError::corrupt(path, e);
    let file = File::open(path).map_err(|e| FormatError::corrupt(path, e))?;
    let mut reader = ParquetReader::new(file);
    let schema = reader.schema().map_err(corrupt)?;
    let has = |c: &str| schema.iter_names().any(|n| n.as_str() == c);
    let Some(k) = forms.iter().position(|f| f.iter().all(|c| has(c))) else {
        let missing = forms
            .first()
            .and_then(|f| f.iter().find(|c| !has(c)))
            .map_or_else(String::new, |c| c.to_string());
        return Err(FormatError::MissingColumn {
            path: path.to_path_buf(),
            column: missing,
        });
    };
    let df = reader
        .with_columns(Some(forms[k].iter().map(|c| c.to_string()).collect()))
        .finish()
        .map_err(corrupt)?;
    Ok((k, df))
}

/// Column `name` of `df` as u64 values (nulls are a corrupt file).
pub fn u64_column(df: &DataFrame, name: &str, path: &Path) -> Result<Vec<u64>, FormatError> {
    let corrupt = |e: PolarsError| FormatError::corrupt(path, e);
    let c = df.column(name).map_err(corrupt)?;
    let c = c.cast(&DataType::UInt64).map_err(corrupt)?;
    let c = c.u64().map_err(corrupt)?;
    if c.null_count() > 0 {
        return Err(FormatError::corrupt(path, format!("nulls in {name}")));
    }
    Ok(c.into_no_null_iter().collect())
}

/// Column `name` of `df` as i64 values (nulls are a corrupt file).
pub fn i64_column(df: &DataFrame, name: &str, path: &Path) -> Result<Vec<i64>, FormatError> {
    let corrupt = |e: PolarsError| FormatError::corrupt(path, e);
    let c = df.column(name).map_err(corrupt)?;
    let c = c.cast(&DataType::Int64).map_err(corrupt)?;
    let c = c.i64().map_err(corrupt)?;
    if c.null_count() > 0 {
        return Err(FormatError::corrupt(path, format!("nulls in {name}")));
    }
    Ok(c.into_no_null_iter().collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn steps_round_trip_any_sequence(v in proptest::collection::vec(any::<u64>(), 0..200)) {
            prop_assert_eq!(from_steps(&to_steps(&v)), v);
        }

        #[test]
        fn signed_steps_round_trip(v in proptest::collection::vec(any::<i64>(), 0..200)) {
            prop_assert_eq!(from_steps_i64(&to_steps_i64(&v)), v);
        }
    }

    #[test]
    fn sorted_times_have_small_steps() {
        assert_eq!(to_steps(&[1_000, 1_010, 1_030]), vec![1_000, 10, 20]);
        assert_eq!(to_steps_i64(&[0, 0, 1, -1, 3]), vec![0, 0, 1, -2, 4]);
    }
}
