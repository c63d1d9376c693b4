//! A host's check history: `history.csv`, one [`SummaryRow`] per rate of
//! every `driver check`, the summary's columns as CSV under one header
//! (docs/results-format.md, "history.csv").
//!
//! A row is appended and synced per check. A file whose last line was cut
//! (a crash mid-write) or whose header is another version's is never
//! rewritten: a damaged one is named with its line, and the new rows go
//! to the next free `history.N.csv`. A reader reads every file in order,
//! an earlier version's (a header of fewer summary columns) by its own
//! header, the columns it lacks null.

use std::path::{Path, PathBuf};

use crate::summary::{SUMMARY_COLUMNS, SummaryRow};
use crate::{FormatError, header_of};

/// The first history file's name in a history directory.
pub const HISTORY_CSV: &str = "history.csv";

/// What is wrong with a history file, with where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: line {line}: {why}", path.display())]
pub struct Damage {
    /// The file.
    pub path: PathBuf,
    /// The line (from 1).
    pub line: usize,
    /// What is wrong there.
    pub why: String,
}

/// A failure to read or write a history file.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The file cannot be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is damaged.
    #[error(transparent)]
    Damaged(#[from] Damage),
    /// Appending the rows failed.
    #[error(transparent)]
    Format(#[from] FormatError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> HistoryError + '_ {
    move |source| HistoryError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The header line every history file starts with.
pub fn header() -> String {
    header_of::<SummaryRow>().join(",")
}

/// The history files of `dir`, in order: `history.csv`, then
/// `history.1.csv`, `history.2.csv`... while they exist.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    (0..)
        .map(|n| dir.join(file_name(n)))
        .take_while(|p| p.exists())
        .collect()
}

fn file_name(n: usize) -> String {
    if n == 0 {
        HISTORY_CSV.to_string()
    } else {
        format!("history.{n}.csv")
    }
}

/// Every row of one history file, or the first damage found: a header
/// with a name that is no summary column (a later version's), a last line
/// with no newline, a line that does not parse as a row.
pub fn read(path: &Path) -> Result<Vec<SummaryRow>, HistoryError> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    let damage = |line: usize, why: String| {
        HistoryError::Damaged(Damage {
            path: path.to_path_buf(),
            line,
            why,
        })
    };
    let mut lines = text.split_inclusive('\n').enumerate();
    let Some((_, first)) = lines.next() else {
        return Ok(Vec::new());
    };
    let names = csv::StringRecord::from(
        first
            .trim_end_matches(['\n', '\r'])
            .split(',')
            .collect::<Vec<_>>(),
    );
    if let Some(n) = names
        .iter()
        .find(|n| !SUMMARY_COLUMNS.iter().any(|(c, _)| c == n))
    {
        return Err(damage(
            1,
            format!(
                "the header's `{n}` is no summary column of this version (a later version wrote it)"
            ),
        ));
    }
    let mut rows = Vec::new();
    for (i, line) in lines {
        if !line.ends_with('\n') {
            return Err(damage(
                i + 1,
                "the last line is cut short (no newline: a write was interrupted)".into(),
            ));
        }
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(line.as_bytes());
        let record = reader
            .records()
            .next()
            .transpose()
            .map_err(|e| damage(i + 1, e.to_string()))?;
        let Some(record) = record else { continue };
        if record.len() != names.len() {
            return Err(damage(
                i + 1,
                format!(
                    "{} fields where the header has {}",
                    record.len(),
                    names.len()
                ),
            ));
        }
        let row: SummaryRow = record
            .deserialize(Some(&names))
            .map_err(|e| damage(i + 1, e.to_string()))?;
        rows.push(row);
    }
    Ok(rows)
}

/// Every row of every history file of `dir`, and the damage met (a
/// damaged file's rows are left out, named in the damage).
pub fn read_dir(dir: &Path) -> (Vec<SummaryRow>, Vec<HistoryError>) {
    let mut rows = Vec::new();
    let mut damage = Vec::new();
    for f in files(dir) {
        match read(&f) {
            Ok(r) => rows.extend(r),
            Err(e) => damage.push(e),
        }
    }
    (rows, damage)
}

/// Where rows were appended, and the damaged files passed over.
#[derive(Debug)]
pub struct Appended {
    /// The file written.
    pub path: PathBuf,
    /// The damaged files before it, each left as it was.
    pub passed_over: Vec<Damage>,
}

/// Appends `rows` to the history in `dir` (created if missing): to the
/// last history file when it is sound and this version's, else to a new
/// `history.N.csv` after it (which is never rewritten). Synced before it
/// returns.
pub fn append(dir: &Path, rows: &[SummaryRow]) -> Result<Appended, HistoryError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let existing = files(dir);
    let mut passed_over = Vec::new();
    for f in &existing {
        if let Err(HistoryError::Damaged(d)) = read(f) {
            passed_over.push(d);
        }
    }
    // The last file, when sound and this version's; else a new one after
    // every file there.
    let ours = |f: &Path| {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        text.lines().next() == Some(header().as_str())
    };
    let last_sound = existing
        .last()
        .filter(|f| !passed_over.iter().any(|d| &d.path == *f) && ours(f));
    let path = match last_sound {
        Some(f) => f.clone(),
        None => dir.join(file_name(existing.len())),
    };
    crate::dir::append_csv(&path, &header_of::<SummaryRow>(), rows)?;
    Ok(Appended { path, passed_over })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn row(cost: f64) -> SummaryRow {
        SummaryRow {
            set: Some("20261127T0400Z-vm".into()),
            freq_hz: Some(1000),
            cost_per_sample_ns: Some(cost),
            within_budget: Some(true),
            started_at: Some(1_795_000_000_000_000),
            ..SummaryRow::default()
        }
    }

    #[test]
    fn rows_round_trip_and_append_under_one_header() {
        let d = tempfile::tempdir().unwrap();
        append(d.path(), &[row(13_000.5)]).unwrap();
        let a = append(d.path(), &[row(14_000.25), row(9.0)]).unwrap();
        assert_eq!(a.path, d.path().join(HISTORY_CSV));
        let text = std::fs::read_to_string(&a.path).unwrap();
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("format_version"))
                .count(),
            1
        );
        let back = read(&a.path).unwrap();
        assert_eq!(back, vec![row(13_000.5), row(14_000.25), row(9.0)]);
    }

    /// A cut last line is named with its line and never rewritten: the
    /// next row goes to history.1.csv, and the reader still reads both.
    #[test]
    fn a_cut_file_is_named_and_left_and_the_row_goes_to_a_new_file() {
        let d = tempfile::tempdir().unwrap();
        append(d.path(), &[row(1.0), row(2.0)]).unwrap();
        let first = d.path().join(HISTORY_CSV);
        let text = std::fs::read_to_string(&first).unwrap();
        let cut = &text[..text.len() - 7];
        std::fs::write(&first, cut).unwrap();
        let e = read(&first).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("cut short"), "{e}");
        let a = append(d.path(), &[row(3.0)]).unwrap();
        assert_eq!(a.path, d.path().join("history.1.csv"));
        assert_eq!(a.passed_over.len(), 1);
        assert_eq!(a.passed_over[0].line, 3);
        assert_eq!(std::fs::read_to_string(&first).unwrap(), cut);
        let (rows, damage) = read_dir(d.path());
        assert_eq!(rows, vec![row(3.0)]);
        assert_eq!(damage.len(), 1);
        // The next check appends to the sound new file.
        let a = append(d.path(), &[row(4.0)]).unwrap();
        assert_eq!(a.path, d.path().join("history.1.csv"));
    }

    #[test]
    fn an_earlier_header_reads_and_a_later_one_is_refused_on_line_1() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(HISTORY_CSV);
        std::fs::write(&p, "format_version,set,freq_hz\n1,x,99\n").unwrap();
        let back = read(&p).unwrap();
        assert_eq!(
            (back[0].set.as_deref(), back[0].freq_hz),
            (Some("x"), Some(99))
        );
        // Never appended to: this version's rows go to a file of their own.
        let a = append(d.path(), &[row(1.0)]).unwrap();
        assert_eq!(a.path, d.path().join("history.1.csv"));
        assert_eq!(read_dir(d.path()).0.len(), 2);
        std::fs::write(&p, "format_version,set,later_column\n1,x,2\n").unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("later_column"), "{e}");
    }

    #[test]
    fn a_line_that_does_not_parse_is_named() {
        let d = tempfile::tempdir().unwrap();
        append(d.path(), &[row(1.0)]).unwrap();
        let p = d.path().join(HISTORY_CSV);
        let mut text = std::fs::read_to_string(&p).unwrap();
        text.push_str("x,y\n");
        std::fs::write(&p, text).unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("line 3"), "{e}");
    }
}
