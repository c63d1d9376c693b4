//! `analysis fleet ROOT --compact OUT`: each date's per-host summaries
//! under ROOT (the landing zone, as the playbook and the Kubernetes
//! collector write it) rewritten into one table per date,
//! `OUT/date=DAY/summaries.parquet` (docs/results-format.md, "A fleet
//! dataset"), which `analysis fleet OUT`, DuckDB and Spark read as they
//! read the landing zone.
//!
//! - **Atomic**: a day's table is written beside itself and renamed over
//!   the old one; a reader sees the old day or the new, never half. A
//!   compaction killed halfway leaves the days it finished, the others as
//!   they were, and at most a hidden `.parquet-*` file that readers skip
//!   and the next compaction removes.
//! - **Idempotent and merging**: a day's table is the union of what it
//!   held and the landing zone's sets of that day, a set (its folder)
//!   taken from the landing zone where both have it, ordered by host and
//!   folder: compacting twice writes the same bytes; a host that lands
//!   later is added by the next compaction; a set whose landing files were
//!   since removed stays.
//! - **One schema**: rows of older summaries are written with every
//!   column of this version (null where they had none), so a reader needs
//!   no `union_by_name`.
//! - A summary that cannot be read is named and left out; its day still
//!   compacts.

use std::path::{Path, PathBuf};

use results_format::summary::{DAY_TABLE, DayRow, write_day_table};

use super::scan::{FleetRow, Scan, ScanOptions, Skipped, read_table, scan};
use crate::error::AnalysisError;
use crate::stats::{distinct_sorted, grouped};

/// What one day's compaction did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DayCompacted {
    pub date: String,
    pub table: PathBuf,
    /// Sets (and rows) in the table written.
    pub sets: usize,
    pub rows: usize,
    /// Of those sets, taken from the landing zone, and kept from the
    /// table as it was.
    pub from_landing: usize,
    pub kept: usize,
    pub bytes: u64,
}

/// The compaction of a fleet: its days, and the files left out.
#[derive(Debug, Default, serde::Serialize)]
pub struct Compaction {
    pub days: Vec<DayCompacted>,
    pub skipped: Vec<Skipped>,
}

/// Compacts the dates `dates` (all when empty) of the fleet under `root`
/// into `out`.
pub fn compact(root: &Path, out: &Path, dates: &[String]) -> Result<Compaction, AnalysisError> {
    if !root.is_dir() {
        let path = root.to_path_buf();
        return Err(AnalysisError::NoSuchDirectory { path });
    }
    if out.starts_with(root) || root.starts_with(out) {
        return Err(AnalysisError::Invalid(format!(
            "--compact {}: inside the fleet's root {} (or holding it), where a reader of either would count each set twice; give a folder beside it",
            out.display(),
            root.display()
        )));
    }
    if let Some(bad) = dates.iter().find(|d| !is_day(d)) {
        return Err(AnalysisError::Invalid(format!(
            "--date `{bad}`: expected a day as YYYY-MM-DD, e.g. --date 2026-11-27"
        )));
    }
    let read = ScanOptions::default();
    let landing = scan(root, &read).map_err(|e| AnalysisError::corrupt(root, e))?;
    let wanted = landing
        .rows
        .into_iter()
        .filter(|r| dates.is_empty() || dates.contains(&r.date));
    let by_day = grouped(wanted.map(|r| (r.date.clone(), day_row(root, r))));
    let mut done = Compaction {
        skipped: landing.skipped,
        ..Default::default()
    };
    for (date, rows) in by_day {
        done.days.push(compact_day(out, &date, rows)?);
    }
    Ok(done)
}

/// A row as its day's table holds it: its set's folder relative to `root`.
fn day_row(root: &Path, r: FleetRow) -> DayRow {
    let rel = r.set_dir.strip_prefix(root).unwrap_or(&r.set_dir);
    DayRow {
        host: r.host,
        set_dir: rel.display().to_string(),
        row: r.row,
    }
}

/// Whether `s` reads as `YYYY-MM-DD`.
fn is_day(s: &str) -> bool {
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok()
}

/// Merges `landing` (one day's rows from the landing zone) with the day's
/// table under `out` and writes it.
fn compact_day(
    out: &Path,
    date: &str,
    landing: Vec<DayRow>,
) -> Result<DayCompacted, AnalysisError> {
    let dir = out.join(format!("date={date}"));
    std::fs::create_dir_all(&dir).map_err(|e| AnalysisError::write(&dir, e))?;
    remove_stale_temporaries(&dir);
    let table = dir.join(DAY_TABLE);
    let mut old = Scan::default();
    if table.exists() {
        read_table(out, &table, &ScanOptions::default(), &mut old);
    }
    if let Some(s) = old.skipped.pop() {
        return Err(AnalysisError::corrupt(&table, s.reason));
    }
    let new_sets: std::collections::BTreeSet<&str> =
        landing.iter().map(|d| d.set_dir.as_str()).collect();
    let kept: Vec<DayRow> = old
        .rows
        .into_iter()
        .map(|r| day_row(out, r))
        .filter(|d| !new_sets.contains(d.set_dir.as_str()))
        .collect();
    let count_sets =
        |rows: &[DayRow]| distinct_sorted(rows.iter().map(|d| d.set_dir.as_str())).len();
    let (from_landing, kept_sets) = (count_sets(&landing), count_sets(&kept));
    let mut rows = landing;
    rows.extend(kept);
    // Stable: a set's rows keep their order.
    rows.sort_by(|a, b| (&a.host, &a.set_dir).cmp(&(&b.host, &b.set_dir)));
    write_day_table(&table, &rows)?;
    let bytes = std::fs::metadata(&table).map(|m| m.len()).unwrap_or(0);
    Ok(DayCompacted {
        date: date.to_string(),
        sets: count_sets(&rows),
        rows: rows.len(),
        table,
        from_landing,
        kept: kept_sets,
        bytes,
    })
}

/// A compaction killed mid-write leaves its temporary file (results_format's
/// `.parquet-*`) beside the table: removed, named in the log.
fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(".parquet-") {
            tracing::info!(
                "removing {}, left by a compaction that did not finish",
                e.path().display()
            );
            let _ = std::fs::remove_file(e.path());
        }
    }
}
