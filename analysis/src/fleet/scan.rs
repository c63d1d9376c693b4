//! Reading a fleet dataset: every `summary.parquet` under a root, read in
//! one polars lazy scan with the `key=value` folder names (`host=`,
//! `date=`) as columns (docs/results-format.md, "A fleet dataset"); the sets
//! without a summary made from their tables or listed as skipped; the
//! hosts the playbook could not measure (`missing.json`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use polars::prelude::*;
use results_format::summary::{SUMMARY_PARQUET, SummaryRow, check_versions, rows_from_frame};

pub use super::row::FleetRow;

/// A host the playbook wrote `missing.json` for.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Missing {
    pub host: String,
    #[serde(default)]
    pub date: String,
    /// `unreachable`, `probe`, `sweep` or `fetch`.
    #[serde(default)]
    pub stage: String,
    #[serde(default)]
    pub reason: String,
}

/// A folder that holds a set, or looked like one, and was not used.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// Everything read under a root.
#[derive(Debug, Default)]
pub struct Scan {
    pub rows: Vec<FleetRow>,
    pub missing: Vec<Missing>,
    pub skipped: Vec<Skipped>,
    /// Sets read (with a summary, or made).
    pub sets: usize,
    /// Of those, made from their tables.
    pub made: usize,
    /// Rows not read on, when the scan keeps one row per set: other
    /// subjects and configurations ([`super::pick::in_scope`]).
    pub left_out: usize,
    /// Summaries taken from the cache, not read.
    pub cached: usize,
    /// Rows left out per summary file (for the cache).
    left_out_by_file: BTreeMap<PathBuf, usize>,
}

/// What a scan reads of each summary, and how much of it it keeps.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// Make a summary from the tables of a set without one.
    pub make: bool,
    /// Only these columns (None: all; one not read is null).
    pub columns: Option<Vec<String>>,
    /// Keep of each set only the row standing for it at this rate
    /// ([`super::pick::representative`]; None: every row).
    pub one_row_at: Option<f64>,
    /// Take unchanged summaries from, and write, ROOT/.fleet-cache
    /// ([`super::cache`]; only with `one_row_at` and `columns`).
    pub cache: bool,
}

/// Summaries read in one lazy scan: bounds the memory of a scan of
/// 100 000 files (polars holds each file's metadata until the collect).
const BATCH: usize = 4096;

/// What the walk found.
#[derive(Debug, Default)]
struct Found {
    summaries: Vec<PathBuf>,
    without_summary: Vec<PathBuf>,
    missing: Vec<PathBuf>,
}

/// Folders a walk never enters: a partial fetch (`.partial-*`), a report
/// being written, any hidden folder; a set's own `report/`, raw folders.
fn skip_dir(name: &str) -> bool {
    name.starts_with('.') || matches!(name, "report" | "events" | "gaps" | "samples")
}

/// Every set, summary and missing.json under `dir`. One `read_dir` per
/// folder and no `stat`: the entries' names and types say what it holds
/// (100 000 hosts are 300 000 folders).
fn walk(dir: &Path, found: &mut Found) -> std::io::Result<()> {
    let mut subdirs: Vec<PathBuf> = Vec::new();
    let (mut summary, mut manifest, mut missing) = (false, false, false);
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let kind = entry.file_type()?;
        let kind = if kind.is_symlink() {
            std::fs::metadata(entry.path())?.file_type()
        } else {
            kind
        };
        if kind.is_dir() {
            if !skip_dir(&name) {
                subdirs.push(entry.path());
            }
        } else if name == SUMMARY_PARQUET {
            summary = true;
        } else if name == results_format::MANIFEST_JSON {
            manifest = true;
        } else if name == "missing.json" {
            missing = true;
        }
    }
    if summary {
        found.summaries.push(dir.join(SUMMARY_PARQUET));
        return Ok(());
    }
    if manifest {
        found.without_summary.push(dir.to_path_buf());
        return Ok(());
    }
    if missing {
        found.missing.push(dir.join("missing.json"));
    }
    subdirs.sort();
    for d in subdirs {
        walk(&d, found)?;
    }
    Ok(())
}

/// The `key=value` folders of `path` below `root`, in order.
pub fn hive_keys(root: &Path, path: &Path) -> Vec<(String, String)> {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .filter_map(|c| {
            let s = c.as_os_str().to_string_lossy();
            s.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

/// The UTC day of a µs timestamp, `YYYY-MM-DD`.
pub fn day_of(us: i64) -> Option<String> {
    chrono::DateTime::from_timestamp_micros(us).map(|t| t.format("%Y-%m-%d").to_string())
}

/// `rows` of the set in `set_dir`, with its host and date: from `keys`
/// (the scan's hive columns), else from the set's path below `root`, else
/// the rows' own hostname and start day.
fn place(
    root: &Path,
    set_dir: &Path,
    made: bool,
    rows: Vec<SummaryRow>,
    keys: Option<BTreeMap<String, String>>,
) -> Vec<FleetRow> {
    let keys = keys.unwrap_or_else(|| hive_keys(root, set_dir).into_iter().collect());
    rows.into_iter()
        .map(|row| FleetRow {
            host: keys
                .get("host")
                .cloned()
                .or_else(|| row.hostname.clone())
                .unwrap_or_else(|| "(unknown)".to_string()),
            date: keys
                .get("date")
                .cloned()
                .or_else(|| row.started_at.and_then(day_of))
                .unwrap_or_default(),
            set_dir: set_dir.to_path_buf(),
            made,
            row,
        })
        .collect()
}

/// The column polars' scan adds with each row's file.
const PATH_COLUMN: &str = "__summary_path";

/// One lazy scan over `paths` (whose `key=value` folders below `root` are
/// the same keys): the summary's columns, a file written by an earlier
/// version lacking some (null), the hive keys and each row's file.
fn scan_group(
    root: &Path,
    paths: &[PathBuf],
    keys: &[String],
    columns: Option<&[String]>,
) -> PolarsResult<DataFrame> {
    let mut hive_schema = Schema::default();
    for k in keys {
        hive_schema.insert(k.as_str().into(), DataType::String);
    }
    let sources: Vec<PlRefPath> = paths
        .iter()
        .map(|p| PlRefPath::new(p.to_string_lossy().as_ref()))
        .collect();
    let root_len = root.to_string_lossy().len();
    let args = ScanArgsParquet {
        hive_options: HiveOptions {
            enabled: Some(!keys.is_empty()),
            hive_start_idx: root_len,
            schema: (!keys.is_empty()).then(|| Arc::new(hive_schema)),
            try_parse_dates: false,
        },
        schema: Some(Arc::new(results_format::summary::summary_schema())),
        allow_missing_columns: true,
        include_file_paths: Some(PATH_COLUMN.into()),
        glob: false,
        cache: false,
        ..Default::default()
    };
    let lf = LazyFrame::scan_parquet_files(sources.into_iter().collect(), args)?;
    let lf = match columns {
        // Only what the caller reads (projection pushdown: the other
        // columns are never decoded), with the hive keys and the file.
        Some(cols) => lf.select(
            cols.iter()
                .map(String::as_str)
                .chain(keys.iter().map(String::as_str))
                .chain([PATH_COLUMN])
                .map(col)
                .collect::<Vec<_>>(),
        ),
        None => lf,
    };
    lf.collect()
}

/// Reads every summary in `paths` with one lazy scan per set of hive keys;
/// a scan that fails (a file of another shape) is redone file by file, so
/// one bad file is named and skipped, not the fleet.
fn read_summaries(root: &Path, paths: &[PathBuf], opts: &ScanOptions, scan: &mut Scan) {
    let mut groups: BTreeMap<Vec<String>, Vec<PathBuf>> = BTreeMap::new();
    for p in paths {
        let keys: Vec<String> = hive_keys(root, p.parent().unwrap_or(p))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        groups.entry(keys).or_default().push(p.clone());
    }
    for (keys, group) in groups {
        for batch in group.chunks(BATCH) {
            read_batch(root, batch, &keys, opts, scan);
        }
    }
}

fn read_batch(
    root: &Path,
    group: &[PathBuf],
    keys: &[String],
    opts: &ScanOptions,
    scan: &mut Scan,
) {
    match scan_group(root, group, keys, opts.columns.as_deref())
        .and_then(|df| split_by_file(&df, keys))
    {
        Ok(by_file) => {
            for (path, (rows, hive)) in by_file {
                accept(root, &path, rows, Some(hive), opts, scan);
            }
        }
        Err(e) => {
            tracing::warn!(
                "one scan of {} summaries failed ({e}); reading them one by one",
                group.len()
            );
            for path in group {
                match results_format::summary::read_summary(path) {
                    Ok(rows) => accept(root, path, rows, None, opts, scan),
                    Err(e) => scan.skipped.push(Skipped {
                        path: path.clone(),
                        reason: e.to_string(),
                    }),
                }
            }
        }
    }
}

/// A file's rows and its hive columns' values.
type FileRows = (Vec<SummaryRow>, BTreeMap<String, String>);

/// The scanned frame's rows, by the file they came from, with the values
/// of the hive columns `keys` that polars read off each file's path.
fn split_by_file(df: &DataFrame, keys: &[String]) -> PolarsResult<BTreeMap<PathBuf, FileRows>> {
    let rows = rows_from_frame(df)?;
    let paths = df.column(PATH_COLUMN)?.str()?.clone();
    let hive: Vec<(String, StringChunked)> = keys
        .iter()
        .map(|k| {
            Ok((
                k.clone(),
                df.column(k)?.cast(&DataType::String)?.str()?.clone(),
            ))
        })
        .collect::<PolarsResult<_>>()?;
    let mut by_file: BTreeMap<PathBuf, FileRows> = BTreeMap::new();
    for (i, (row, path)) in rows.into_iter().zip(paths.iter()).enumerate() {
        let entry = by_file
            .entry(PathBuf::from(path.unwrap_or_default()))
            .or_insert_with(|| {
                let values = hive
                    .iter()
                    .filter_map(|(k, c)| c.get(i).map(|v| (k.clone(), v.to_string())))
                    .collect();
                (Vec::new(), values)
            });
        entry.0.push(row);
    }
    Ok(by_file)
}

/// `rows` with, when the scan keeps one row per set, only the in-scope
/// row standing for it (the others counted in `left_out`).
fn kept(rows: Vec<SummaryRow>, opts: &ScanOptions, left_out: &mut usize) -> Vec<SummaryRow> {
    let Some(at) = opts.one_row_at else {
        return rows;
    };
    let n = rows.len();
    let scoped: Vec<SummaryRow> = rows.into_iter().filter(super::pick::in_scope).collect();
    *left_out += n - scoped.len();
    let refs: Vec<&SummaryRow> = scoped.iter().collect();
    match super::pick::representative(&refs, at) {
        Some(i) => vec![scoped[i].clone()],
        None => scoped,
    }
}

fn accept(
    root: &Path,
    path: &Path,
    rows: Vec<SummaryRow>,
    hive: Option<BTreeMap<String, String>>,
    opts: &ScanOptions,
    scan: &mut Scan,
) {
    let set_dir = path.parent().unwrap_or(path).to_path_buf();
    if let Err(e) = check_versions(path, &rows) {
        scan.skipped.push(Skipped {
            path: path.to_path_buf(),
            reason: e.to_string(),
        });
        return;
    }
    if rows.is_empty() {
        scan.skipped.push(Skipped {
            path: path.to_path_buf(),
            reason: "the summary has no rows (no rate above 0 Hz was analysed)".to_string(),
        });
        return;
    }
    scan.sets += 1;
    let mut left_out = 0;
    let rows = kept(rows, opts, &mut left_out);
    scan.left_out += left_out;
    scan.left_out_by_file.insert(path.to_path_buf(), left_out);
    scan.rows.extend(place(root, &set_dir, false, rows, hive));
}

/// [`read_summaries`] for the summaries that are new or changed since the
/// cache under `root`; the others from it. The cache is then rewritten
/// with what this scan holds.
fn read_with_cache(
    root: &Path,
    paths: &[PathBuf],
    opts: &ScanOptions,
    key: &super::cache::CacheKey,
    scan: &mut Scan,
) {
    use super::cache::{Cache, Entry, stamp};
    let mut old = Cache::load(root, key);
    let mut stamps: BTreeMap<PathBuf, super::cache::Stamp> = BTreeMap::new();
    let mut to_read: Vec<PathBuf> = Vec::new();
    for p in paths {
        let Some(st) = stamp(p) else {
            to_read.push(p.clone());
            continue;
        };
        stamps.insert(p.clone(), st);
        match old.entries.remove(p) {
            Some(e) if e.stamp == st => {
                scan.sets += 1;
                scan.cached += 1;
                scan.left_out += e.left_out;
                scan.left_out_by_file.insert(p.clone(), e.left_out);
                scan.rows.extend(e.rows);
            }
            _ => to_read.push(p.clone()),
        }
    }
    if scan.cached > 0 {
        tracing::info!(
            "{} summaries from {}, {} read",
            scan.cached,
            root.join(super::cache::CACHE_DIR).display(),
            to_read.len()
        );
    }
    read_summaries(root, &to_read, opts, scan);
    let mut new = Cache::default();
    for r in scan.rows.iter().filter(|r| !r.made) {
        let path = r.set_dir.join(SUMMARY_PARQUET);
        let Some(st) = stamps.get(&path) else {
            continue;
        };
        new.entries
            .entry(path.clone())
            .or_insert_with(|| Entry {
                stamp: *st,
                rows: Vec::new(),
                left_out: scan.left_out_by_file.get(&path).copied().unwrap_or(0),
            })
            .rows
            .push(r.clone());
    }
    new.save(root, key);
}

/// Reads everything under `root` as `opts` says: which columns, one row
/// per set or all, and whether a set without a summary is analysed to
/// make its rows (older sets) or skipped.
pub fn scan(root: &Path, opts: &ScanOptions) -> std::io::Result<Scan> {
    let mut found = Found::default();
    walk(root, &mut found)?;
    let mut scan = Scan::default();
    let key = match (&opts.columns, opts.one_row_at) {
        (Some(cols), Some(at)) if opts.cache => Some(super::cache::CacheKey::new(at, cols)),
        _ => None,
    };
    match &key {
        None => read_summaries(root, &found.summaries, opts, &mut scan),
        Some(key) => read_with_cache(root, &found.summaries, opts, key, &mut scan),
    }
    for dir in &found.without_summary {
        if !opts.make {
            scan.skipped.push(Skipped {
                path: dir.clone(),
                reason: "no summary.parquet (written before summaries; `analysis summary DIR` \
                         makes one, or drop --no-make)"
                    .to_string(),
            });
            continue;
        }
        match crate::summary_of(dir) {
            Ok((rows, _)) if !rows.is_empty() => {
                scan.sets += 1;
                scan.made += 1;
                let rows = kept(rows, opts, &mut scan.left_out);
                scan.rows.extend(place(root, dir, true, rows, None));
            }
            Ok(_) => scan.skipped.push(Skipped {
                path: dir.clone(),
                reason: "no summary.parquet, and its tables give no rate above 0 Hz".to_string(),
            }),
            Err(e) => scan.skipped.push(Skipped {
                path: dir.clone(),
                reason: format!(
                    "no summary.parquet, and it could not be made from its tables: {}",
                    results_format::message_chain(&e)
                ),
            }),
        }
    }
    for path in &found.missing {
        let keys: BTreeMap<String, String> = hive_keys(root, path.parent().unwrap_or(path))
            .into_iter()
            .collect();
        let read = std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|s| serde_json::from_str::<Missing>(&s).map_err(|e| e.to_string()));
        match read {
            Ok(mut m) => {
                if m.date.is_empty() {
                    m.date = keys.get("date").cloned().unwrap_or_default();
                }
                scan.missing.push(m);
            }
            Err(e) => scan.skipped.push(Skipped {
                path: path.clone(),
                reason: format!("missing.json unreadable: {e}"),
            }),
        }
    }
    Ok(scan)
}
