//! What an earlier `analysis fleet` read, kept in `ROOT/.fleet-cache/` so
//! that the next run scans only the summaries that are new or changed: a
//! fleet grows by a day's sets, and reading 100 000 small Parquet files
//! costs 20 s where the cache costs about one.
//!
//! The cache is the rows the scan kept, as the scan frames them (the
//! columns read, each row's `host` and `date` folder and its file), and
//! each file's rows of other subjects and configurations, so that the
//! scan keeps the same rows from it again. A summary is taken from the
//! cache only when its path, size and modification time (ns) are those
//! recorded, and the cache was made with the same columns, rate (`--at`)
//! and summary version; anything else is read again. The cache is a
//! hidden folder, so no scan ever reads it as a set, and it is written
//! atomically; a root that is not writable simply has none (`--no-cache`
//! neither reads nor writes it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use polars::prelude::*;
use results_format::summary::SUMMARY_VERSION;

/// The cache folder under a fleet's root.
pub const CACHE_DIR: &str = ".fleet-cache";
const ROWS: &str = "rows.parquet";
const META: &str = "meta.json";
const CACHE_VERSION: u32 = 2;
/// The column a scan's frame names each row's summary file in.
pub const PATH_COLUMN: &str = "__summary_path";
/// Each row's file's size and modification time (ns) when it was read.
const STAMP_COLUMNS: [&str; 2] = ["__len", "__mtime_ns"];

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

/// A summary file's identity on disk: its size and modification time, ns.
pub type Stamp = [i64; 2];
/// The stamps of the summary files a scan reads.
pub type Stamps = BTreeMap<PathBuf, Stamp>;

/// The stamp of `path`, None when it cannot be read.
pub fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    let modified = m.modified().ok()?;
    let mtime = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some([m.len() as i64, i64::try_from(mtime.as_nanos()).ok()?])
}

/// The cached rows under `root` made with `key` whose files have the
/// stamps `now` holds, and those files; None when there is no cache, it
/// was made otherwise, or it cannot be read (logged).
pub fn load(root: &Path, key: &CacheKey, now: &Stamps) -> Option<(DataFrame, BTreeSet<PathBuf>)> {
    let dir = root.join(CACHE_DIR);
    let meta: Option<CacheKey> = std::fs::read_to_string(dir.join(META))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok());
    if meta.as_ref() != Some(key) {
        if meta.is_some() {
            tracing::info!("{}: made with other options; read again", dir.display());
        }
        return None;
    }
    match read(&dir.join(ROWS), now) {
        Ok(cached) => Some(cached),
        Err(e) => {
            tracing::warn!(
                "{}: unreadable ({e}); every summary is read again",
                dir.display()
            );
            None
        }
    }
}

fn read(path: &Path, now: &Stamps) -> PolarsResult<(DataFrame, BTreeSet<PathBuf>)> {
    let df = ParquetReader::new(std::fs::File::open(path)?).finish()?;
    let paths = df.column(PATH_COLUMN)?.str()?;
    let [lens, mtimes] = STAMP_COLUMNS;
    let (lens, mtimes) = (df.column(lens)?.i64()?, df.column(mtimes)?.i64()?);
    let mut files = BTreeSet::new();
    let mut unchanged = Vec::with_capacity(df.height());
    for i in 0..df.height() {
        let was = lens.get(i).zip(mtimes.get(i)).map(|(l, m)| [l, m]);
        let file = paths.get(i).map(PathBuf::from).unwrap_or_default();
        let same = was.is_some() && was.as_ref() == now.get(&file);
        unchanged.push(same);
        if same {
            files.insert(file);
        }
    }
    let unchanged = BooleanChunked::from_slice("".into(), &unchanged);
    Ok((df.filter(&unchanged)?.drop_many(STAMP_COLUMNS), files))
}

/// Writes `frames` (the scan's, each with `columns`, [`PATH_COLUMN`] and
/// the stamps `now` holds) as the cache of `root`, atomically; a failure
/// is logged, never fatal: the next run reads every summary again.
pub fn save(root: &Path, key: &CacheKey, frames: &[DataFrame], now: &Stamps) {
    let dir = root.join(CACHE_DIR);
    if let Err(e) = write(&dir, key, frames, now) {
        tracing::info!(
            "{}: not written ({e}); the next run reads every summary",
            dir.display()
        );
    }
}

fn write(
    dir: &Path,
    key: &CacheKey,
    frames: &[DataFrame],
    now: &Stamps,
) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let columns = key.columns.iter().map(String::as_str);
    let columns: Vec<&str> = columns.chain(["host", "date", PATH_COLUMN]).collect();
    let mut df = DataFrame::empty();
    for f in frames {
        df.vstack_mut_owned(f.select(columns.iter().copied())?)?;
    }
    let paths = df.column(PATH_COLUMN)?.str()?;
    let stamps: Vec<Option<&Stamp>> = paths.iter().map(|p| now.get(Path::new(p?))).collect();
    for (k, name) in STAMP_COLUMNS.iter().enumerate() {
        let values: Vec<Option<i64>> = stamps.iter().map(|s| s.map(|s| s[k])).collect();
        df.with_column(Column::new((*name).into(), values))?;
    }
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
