//! What an earlier `analysis fleet` read, kept in `ROOT/.fleet-cache/` so
//! that the next run scans only the summaries that are new or changed: a
//! fleet grows by a day's sets, and reading 100 000 small Parquet files
//! costs 20 s where the cache costs about one.
//!
//! A summary is taken from the cache only when its path, size and
//! modification time (ns) are those recorded, and the cache was made with
//! the same columns, rate (`--at`) and summary version; anything else is
//! read again. The cache is a hidden folder, so no scan ever reads it as a
//! set, and it is written atomically; a root that is not writable simply
//! has none (`--no-cache` neither reads nor writes it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use polars::prelude::*;
use results_format::summary::{SUMMARY_VERSION, rows_from_frame, summary_frame};

use super::row::FleetRow;

/// The cache folder under a fleet's root.
pub const CACHE_DIR: &str = ".fleet-cache";
const ROWS: &str = "rows.parquet";
const META: &str = "meta.json";
const CACHE_VERSION: u32 = 1;

/// What the cached rows were read with: any difference voids the cache.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CacheKey {
    pub cache_version: u32,
    pub summary_version: i64,
    pub at_hz: f64,
    pub columns: Vec<String>,
}

impl CacheKey {
    pub fn new(at_hz: f64, columns: &[String]) -> Self {
        Self {
            cache_version: CACHE_VERSION,
            summary_version: SUMMARY_VERSION,
            at_hz,
            columns: columns.to_vec(),
        }
    }
}

/// A summary file's identity on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub len: i64,
    pub mtime_ns: i64,
}

/// The stamp of `path`, None when it cannot be read.
pub fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    let mtime = m
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(Stamp {
        len: m.len() as i64,
        mtime_ns: i64::try_from(mtime.as_nanos()).ok()?,
    })
}

/// One summary file's kept rows and rows left out.
#[derive(Debug, Clone)]
pub struct Entry {
    pub stamp: Stamp,
    pub rows: Vec<FleetRow>,
    pub left_out: usize,
}

/// The cache of one root, by summary path.
#[derive(Debug, Default)]
pub struct Cache {
    pub entries: BTreeMap<PathBuf, Entry>,
}

impl Cache {
    /// The cache under `root` made with `key`; empty when there is none,
    /// it was made otherwise, or it cannot be read (logged).
    pub fn load(root: &Path, key: &CacheKey) -> Cache {
        let dir = root.join(CACHE_DIR);
        let meta: Option<CacheKey> = std::fs::read_to_string(dir.join(META))
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok());
        if meta.as_ref() != Some(key) {
            if meta.is_some() {
                tracing::info!("{}: made with other options; read again", dir.display());
            }
            return Cache::default();
        }
        match Self::read(&dir.join(ROWS)) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(
                    "{}: unreadable ({e}); every summary is read again",
                    dir.display()
                );
                Cache::default()
            }
        }
    }

    fn read(path: &Path) -> PolarsResult<Cache> {
        let df = ParquetReader::new(std::fs::File::open(path)?).finish()?;
        let rows = rows_from_frame(&df)?;
        let text = |name: &str| -> PolarsResult<Vec<Option<&str>>> {
            Ok(df.column(name)?.str()?.iter().collect())
        };
        let int = |name: &str| -> PolarsResult<Vec<Option<i64>>> {
            Ok(df.column(name)?.i64()?.iter().collect())
        };
        let (paths, hosts, dates) = (text("__path")?, text("__host")?, text("__date")?);
        let (lens, mtimes, left) = (int("__len")?, int("__mtime_ns")?, int("__left_out")?);
        let mut c = Cache::default();
        for (i, row) in rows.into_iter().enumerate() {
            let path = PathBuf::from(paths[i].unwrap_or_default());
            let set_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            let (len, mtime_ns) = (lens[i].unwrap_or(-1), mtimes[i].unwrap_or(-1));
            let (stamp, left_out) = (Stamp { len, mtime_ns }, left[i].unwrap_or(0) as usize);
            let entry = c.entries.entry(path).or_insert_with(|| Entry {
                stamp,
                rows: vec![],
                left_out,
            });
            entry.rows.push(FleetRow {
                host: hosts[i].unwrap_or_default().to_string(),
                date: dates[i].unwrap_or_default().to_string(),
                set_dir,
                made: false,
                row,
            });
        }
        Ok(c)
    }

    /// Writes the cache of `root` (atomically); a failure is logged, never
    /// fatal: the next run reads every summary again.
    pub fn save(&self, root: &Path, key: &CacheKey) {
        let dir = root.join(CACHE_DIR);
        if let Err(e) = self.write(&dir, key) {
            tracing::info!(
                "{}: not written ({e}); the next run reads every summary",
                dir.display()
            );
        }
    }

    fn write(&self, dir: &Path, key: &CacheKey) -> Result<(), Box<dyn std::error::Error>> {
        std::fs::create_dir_all(dir)?;
        let (mut rows, mut paths, mut hosts, mut dates) = (vec![], vec![], vec![], vec![]);
        let (mut lens, mut mtimes, mut left) = (vec![], vec![], vec![]);
        for (path, e) in &self.entries {
            for r in &e.rows {
                rows.push(r.row.clone());
                paths.push(path.display().to_string());
                lens.push(e.stamp.len);
                mtimes.push(e.stamp.mtime_ns);
                left.push(e.left_out as i64);
                hosts.push(r.host.clone());
                dates.push(r.date.clone());
            }
        }
        let mut df = summary_frame(&rows)?;
        df.with_column(Column::new("__path".into(), paths))?;
        df.with_column(Column::new("__len".into(), lens))?;
        df.with_column(Column::new("__mtime_ns".into(), mtimes))?;
        df.with_column(Column::new("__left_out".into(), left))?;
        df.with_column(Column::new("__host".into(), hosts))?;
        df.with_column(Column::new("__date".into(), dates))?;
        // The meta goes last: a cache whose rows were not written whole is
        // never taken for one made with this key (the old meta is removed
        // first).
        let _ = std::fs::remove_file(dir.join(META));
        results_format::write_parquet_atomic(&dir.join(ROWS), df)?;
        results_format::write_atomic(
            &dir.join(META),
            serde_json::to_string_pretty(key)?.as_bytes(),
        )?;
        Ok(())
    }
}
