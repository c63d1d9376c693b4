//! Rewrites a results directory's raw Parquet files (events/, gaps/,
//! samples/) from the earlier form (LZ4, absolute times) into the current
//! one (zstd, times as steps), file by file. A file is replaced only where
//! its rewritten copy reads back exactly the same; otherwise it is left as
//! it was and named. `analysis compact DIR` runs it.

use std::path::{Path, PathBuf};

use crate::FormatError;
use crate::events;
use crate::timeline::{self, StoredForm};

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compacted {
    /// Already in the current form: untouched.
    AlreadyCompact,
    /// Rewritten: its size before and after, bytes.
    Rewritten {
        /// Size before.
        before: u64,
        /// Size after.
        after: u64,
    },
    /// Its rewritten copy did not read back the same: left as it was.
    Differs(String),
}

/// The raw Parquet files of a results directory, in path order.
pub fn raw_files(dir: &Path) -> Result<Vec<PathBuf>, FormatError> {
    let mut out = Vec::new();
    for sub in ["events", "gaps", "samples"] {
        let d = dir.join(sub);
        if !d.is_dir() {
            continue;
        }
        let entries = std::fs::read_dir(&d).map_err(FormatError::io(&d))?;
        for e in entries {
            let p = e.map_err(FormatError::io(&d))?.path();
            if p.extension().is_some_and(|x| x == "parquet") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn size(p: &Path) -> Result<u64, FormatError> {
    std::fs::metadata(p)
        .map(|m| m.len())
        .map_err(FormatError::io(p))
}

/// Brings one raw file into the current form (see the module doc).
pub fn compact_file(path: &Path) -> Result<Compacted, FormatError> {
    let kind = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let copy = {
        let mut n = path.as_os_str().to_owned();
        n.push(".compact");
        PathBuf::from(n)
    };
    let before = size(path)?;
    let same = match kind {
        "events" => {
            let (old, form) = events::read_intervals_form(path)?;
            if form == StoredForm::Steps {
                return Ok(Compacted::AlreadyCompact);
            }
            events::write_intervals(&copy, &old)?;
            events::read_intervals_form(&copy)?.0 == old
        }
        "gaps" => {
            let (old, form) = timeline::read_gaps_form(path)?;
            if form == StoredForm::Steps {
                return Ok(Compacted::AlreadyCompact);
            }
            timeline::write_gaps_parquet(&copy, &old)?;
            timeline::read_gaps_form(&copy)?.0 == old
        }
        "samples" => {
            let (t, e, form) = timeline::read_samples_form(path)?;
            if form == StoredForm::Steps {
                return Ok(Compacted::AlreadyCompact);
            }
            timeline::write_samples_parquet(&copy, &t, &e)?;
            let (t2, e2, _) = timeline::read_samples_form(&copy)?;
            t2 == t && e2 == e
        }
        other => {
            return Ok(Compacted::Differs(format!(
                "not in events/, gaps/ or samples/ (in {other:?})"
            )));
        }
    };
    if !same {
        let _ = std::fs::remove_file(&copy);
        return Ok(Compacted::Differs(
            "its rewritten copy read back differently".into(),
        ));
    }
    let after = size(&copy)?;
    // The copy is a real file (written atomically, then read back and
    // compared) before it replaces the original: a rename, not a temporary.
    std::fs::rename(&copy, path).map_err(|e| {
        let _ = std::fs::remove_file(&copy);
        FormatError::write(path, e)
    })?;
    Ok(Compacted::Rewritten { before, after })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::timeline::{Gap, join_episodes};
    use polars::prelude::*;

    fn legacy(path: &Path, cols: Vec<Column>) {
        let n = cols[0].len();
        let mut df = DataFrame::new(n, cols).unwrap();
        ParquetWriter::new(std::fs::File::create(path).unwrap())
            .with_compression(ParquetCompression::Lz4Raw)
            .finish(&mut df)
            .unwrap();
    }

    #[test]
    fn earlier_files_are_rewritten_and_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["events", "gaps", "samples"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        let ev = dir.path().join("events/run-1.parquet");
        legacy(
            &ev,
            vec![
                Column::new("cpu".into(), vec![1u32, 0, 1]),
                Column::new("entry_ns".into(), vec![500u64, 400, 900]),
                Column::new("duration_ns".into(), vec![3u64, 4, 5]),
                Column::new("source".into(), vec!["hrtimer", "local_timer", "hrtimer"]),
            ],
        );
        let mut g: Vec<Gap> = [(100u64, 200u64, 90u64), (250, 300, 40), (9_000, 9_900, 800)]
            .iter()
            .map(|&(s, e, x)| Gap {
                start_ns: s,
                end_ns: e,
                excess_ns: x,
                episode: 0,
            })
            .collect();
        join_episodes(&mut g);
        let gp = dir.path().join("gaps/run-2.parquet");
        crate::timeline::tests::write_legacy_gaps(&gp, &g);
        let sp = dir.path().join("samples/run-2.parquet");
        legacy(
            &sp,
            vec![
                Column::new("time_ns".into(), vec![150u64, 5_000, 9_100]),
                Column::new("episode".into(), vec![0i64, -1, 1]),
            ],
        );
        let files = raw_files(dir.path()).unwrap();
        assert_eq!(files, vec![ev.clone(), gp.clone(), sp.clone()]);
        for f in &files {
            let out = compact_file(f).unwrap();
            assert!(matches!(out, Compacted::Rewritten { .. }), "{f:?}: {out:?}");
            assert_eq!(compact_file(f).unwrap(), Compacted::AlreadyCompact);
        }
        assert_eq!(timeline::read_gaps_parquet(&gp).unwrap(), g);
        assert_eq!(
            timeline::read_samples_parquet(&sp).unwrap(),
            (vec![150, 5_000, 9_100], vec![0, -1, 1])
        );
        let df = events::read_intervals(&ev, &["cpu", events::ENTRY_NS]).unwrap();
        assert_eq!(
            crate::parquet::u64_column(&df, events::ENTRY_NS, &ev).unwrap(),
            vec![500, 400, 900]
        );
        assert!(!dir.path().join("gaps/run-2.parquet.compact").exists());
    }
}
