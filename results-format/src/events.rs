//! `events/run-<id>.parquet`: the handler intervals of one util run,
//! written by the driver, read (by columns) by the analysis.

use std::path::Path;

use polars::prelude::*;

use crate::FormatError;

/// Handler interval sources, as written in the `source` column:
/// nmi:nmi_handler entry/exit.
pub const SOURCE_NMI: &str = "nmi";
/// perf_swevent_hrtimer expire entry/exit.
pub const SOURCE_HRTIMER: &str = "hrtimer";
/// irq_vectors:local_timer_entry/exit: the whole timer interrupt.
pub const SOURCE_LOCAL_TIMER: &str = "local_timer";

/// The file's columns, in order: the entry time is stored as its step from
/// the row before (the first from 0), as the gaps design's times are.
pub const EVENT_COLUMNS: [&str; 4] = ["cpu", "entry_step_ns", "duration_ns", "source"];
/// The earlier form (LZ4, absolute entry times), still read: the committed
/// sets before 2026-11-26 hold it.
pub const LEGACY_EVENT_COLUMNS: [&str; 4] = ["cpu", "entry_ns", "duration_ns", "source"];

/// The column a reader asks for to get entry times, in either form.
pub const ENTRY_NS: &str = "entry_ns";

/// Write the handler intervals of one util run as `events/run-<id>.parquet`
/// (docs/results-format.md). The file appears atomically: it is written
/// under a temporary name and renamed, so a reader never sees half a file.
pub fn write_intervals_parquet(
    path: &Path,
    cpu: &[u32],
    entry_ns: &[u64],
    duration_ns: &[u64],
    source: &[&str],
) -> Result<(), FormatError> {
    let n = cpu.len();
    if entry_ns.len() != n || duration_ns.len() != n || source.len() != n {
        return Err(FormatError::LengthMismatch {
            path: path.to_path_buf(),
            cpu: n,
            entry: entry_ns.len(),
            duration: duration_ns.len(),
            source_len: source.len(),
        });
    }
    let df = DataFrame::new(
        n,
        vec![
            Column::new(EVENT_COLUMNS[0].into(), cpu),
            Column::new(EVENT_COLUMNS[1].into(), crate::parquet::to_steps(entry_ns)),
            Column::new(EVENT_COLUMNS[2].into(), duration_ns),
            Column::new(EVENT_COLUMNS[3].into(), source),
        ],
    )
    .map_err(|e| FormatError::corrupt(path, format!("building the interval table: {e}")))?;
    crate::parquet::write_atomic(path, df)
}

/// Reads the columns `cols` of one run's interval file, in either form
/// (names from [`LEGACY_EVENT_COLUMNS`]: [`ENTRY_NS`] gives absolute entry
/// times whichever way they are stored); a missing file is
/// [`FormatError::Missing`].
pub fn read_intervals(path: &Path, cols: &[&str]) -> Result<DataFrame, FormatError> {
    let stepped: Vec<&str> = cols
        .iter()
        .map(|&c| if c == ENTRY_NS { EVENT_COLUMNS[1] } else { c })
        .collect();
    let (k, mut df) = crate::parquet::read_first_form(
        path,
        "handler intervals of a util run",
        &[&stepped, cols],
    )?;
    if k == 0 && cols.contains(&ENTRY_NS) {
        let steps = crate::parquet::i64_column(&df, EVENT_COLUMNS[1], path)?;
        let entry = Column::new(ENTRY_NS.into(), crate::parquet::from_steps(&steps));
        df.with_column(entry)
            .map_err(|e| FormatError::corrupt(path, e))?;
        df = df
            .select(cols.iter().copied())
            .map_err(|e| FormatError::corrupt(path, e))?;
    }
    Ok(df)
}

/// Whether an interval file is in the earlier form ([`LEGACY_EVENT_COLUMNS`]).
pub fn is_legacy(path: &Path) -> Result<bool, FormatError> {
    let (k, _) = crate::parquet::read_first_form(
        path,
        "handler intervals of a util run",
        &[&EVENT_COLUMNS[1..2], &LEGACY_EVENT_COLUMNS[1..2]],
    )?;
    Ok(k == 1)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn intervals_round_trip_and_lengths_must_agree() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run-1.parquet");
        write_intervals_parquet(
            &p,
            &[1, 0],
            &[10, 20],
            &[3, 4],
            &[SOURCE_NMI, SOURCE_HRTIMER],
        )
        .unwrap();
        let df = read_intervals(&p, &LEGACY_EVENT_COLUMNS).unwrap();
        assert_eq!(df.height(), 2);
        let names: Vec<String> = df
            .get_column_names()
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(names, LEGACY_EVENT_COLUMNS);
        let entry = crate::parquet::u64_column(&df, ENTRY_NS, &p).unwrap();
        assert_eq!(entry, vec![10, 20]);
        assert!(!is_legacy(&p).unwrap());
        let e = write_intervals_parquet(&p, &[1], &[], &[3], &["nmi"]).unwrap_err();
        assert!(e.to_string().contains("entry_ns 0"), "{e}");
        let e = read_intervals(&dir.path().join("none.parquet"), &["cpu"]).unwrap_err();
        assert!(matches!(e, FormatError::Missing { .. }), "{e}");
    }
}
