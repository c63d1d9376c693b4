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

/// One run's handler intervals, every column.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Intervals {
    pub cpu: Vec<u32>,
    /// Absolute entry times, ns, whichever way they are stored.
    pub entry_ns: Vec<u64>,
    pub duration_ns: Vec<u64>,
    pub source: Vec<String>,
}

/// Reads every column of one run's interval file and the form it is
/// stored in, opening it once (for `analysis compact` and the thinning
/// example, which rewrite the file whole).
pub fn read_intervals_form(
    path: &Path,
) -> Result<(Intervals, crate::timeline::StoredForm), FormatError> {
    use crate::parquet::{from_steps, i64_column, u64_column};
    use crate::timeline::StoredForm;
    let (k, df) = crate::parquet::read_first_form(
        path,
        "handler intervals of a util run",
        &[&EVENT_COLUMNS, &LEGACY_EVENT_COLUMNS],
    )?;
    let corrupt = |e: PolarsError| FormatError::corrupt(path, e);
    let (entry_ns, form) = if k == 0 {
        (
            from_steps(&i64_column(&df, EVENT_COLUMNS[1], path)?),
            StoredForm::Steps,
        )
    } else {
        (u64_column(&df, ENTRY_NS, path)?, StoredForm::Legacy)
    };
    let intervals = Intervals {
        cpu: u64_column(&df, "cpu", path)?
            .into_iter()
            .map(|c| u32::try_from(c).unwrap_or(u32::MAX))
            .collect(),
        entry_ns,
        duration_ns: u64_column(&df, "duration_ns", path)?,
        source: df
            .column("source")
            .map_err(corrupt)?
            .str()
            .map_err(corrupt)?
            .iter()
            .map(|s| s.unwrap_or_default().to_string())
            .collect(),
    };
    Ok((intervals, form))
}

/// Writes `iv` as an interval file ([`write_intervals_parquet`]).
pub fn write_intervals(path: &Path, iv: &Intervals) -> Result<(), FormatError> {
    let source: Vec<&str> = iv.source.iter().map(String::as_str).collect();
    write_intervals_parquet(path, &iv.cpu, &iv.entry_ns, &iv.duration_ns, &source)
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
        assert_eq!(
            read_intervals_form(&p).unwrap().1,
            crate::timeline::StoredForm::Steps
        );
        let e = write_intervals_parquet(&p, &[1], &[], &[3], &["nmi"]).unwrap_err();
        assert!(e.to_string().contains("entry_ns 0"), "{e}");
        let e = read_intervals(&dir.path().join("none.parquet"), &["cpu"]).unwrap_err();
        assert!(matches!(e, FormatError::Missing { .. }), "{e}");
    }
}
