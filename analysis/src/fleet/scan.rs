//! Reading a fleet dataset: every `summary.parquet` under a root, read in
//! one polars lazy scan with the `key=value` folder names (`host=`,
//! `date=`) as columns (docs/results-format.md, "A fleet dataset"); the sets
//! without a summary made from their tables or listed as skipped; the
//! hosts the playbook could not measure (`missing.json`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use polars::prelude::*;
use results_format::MANIFEST_JSON;
use results_format::summary::{DAY_TABLE, read_day_frame};
use results_format::summary::{SUMMARY_PARQUET, SummaryRow, check_versions, read_summary};
use results_format::summary::{fill_from_frame, rows_from_frame, summary_schema};

use super::cache::{CACHE_DIR, Cache, CacheKey, Entry, Stamp, stamp};
use super::pick::{Standing, in_scope, representative};
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

impl Scan {
    fn skip(&mut self, path: &Path, reason: impl Into<String>) {
        let (path, reason) = (path.to_path_buf(), reason.into());
        self.skipped.push(Skipped { path, reason });
    }
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
    /// Day tables (`analysis fleet --compact`'s).
    tables: Vec<PathBuf>,
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
        let mut kind = entry.file_type()?;
        if kind.is_symlink() {
            kind = std::fs::metadata(entry.path())?.file_type();
        }
        match entry.file_name().to_string_lossy().as_ref() {
            name if kind.is_dir() && !skip_dir(name) => subdirs.push(entry.path()),
            _ if kind.is_dir() => {}
            SUMMARY_PARQUET => summary = true,
            DAY_TABLE => found.tables.push(entry.path()),
            MANIFEST_JSON => manifest = true,
            "missing.json" => missing = true,
            _ => {}
        }
    }
    if summary {
        found.summaries.push(dir.join(SUMMARY_PARQUET));
    } else if manifest {
        found.without_summary.push(dir.to_path_buf());
    } else {
        if missing {
            found.missing.push(dir.join("missing.json"));
        }
        subdirs.sort();
        for d in subdirs {
            walk(&d, found)?;
        }
    }
    Ok(())
}

/// The `key=value` folders of `path` below `root`, in order.
pub fn hive_keys(root: &Path, path: &Path) -> Vec<(String, String)> {
    let below = path.strip_prefix(root).unwrap_or(path).components();
    below
        .filter_map(|c| {
            let s = c.as_os_str().to_string_lossy();
            s.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

/// The last `date=` folder of `path` below `root`.
fn hive_date(root: &Path, path: &Path) -> Option<String> {
    let keys = hive_keys(root, path.parent().unwrap_or(path)).into_iter();
    keys.rev().find(|(k, _)| k == "date").map(|(_, v)| v)
}

/// The UTC day of a µs timestamp, `YYYY-MM-DD`.
pub fn day_of(us: i64) -> Option<String> {
    chrono::DateTime::from_timestamp_micros(us).map(|t| t.format("%Y-%m-%d").to_string())
}

/// `rows` of the set in `set_dir`, with its host and date: from `keys`
/// (the scan's hive columns), else from the set's path below `root`, else
/// the rows' own hostname and start day.
fn place(
    (root, set_dir, made): (&Path, &Path, bool),
    rows: Vec<SummaryRow>,
    keys: Option<BTreeMap<String, String>>,
) -> impl Iterator<Item = FleetRow> {
    let keys = keys.unwrap_or_else(|| hive_keys(root, set_dir).into_iter().collect());
    let set_dir = set_dir.to_path_buf();
    rows.into_iter().map(move |row| {
        let host = keys.get("host").cloned().or_else(|| row.hostname.clone());
        let date = keys.get("date").cloned();
        FleetRow {
            host: host.unwrap_or_else(|| "(unknown)".to_string()),
            date: (date.or_else(|| row.started_at.and_then(day_of))).unwrap_or_default(),
            set_dir: set_dir.clone(),
            made,
            row,
        }
    })
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
    let hive_schema: Schema = (keys.iter())
        .map(|k| Field::new(k.as_str().into(), DataType::String))
        .collect();
    let args = ScanArgsParquet {
        hive_options: HiveOptions {
            enabled: Some(!keys.is_empty()),
            hive_start_idx: root.to_string_lossy().len(),
            schema: (!keys.is_empty()).then(|| Arc::new(hive_schema)),
            try_parse_dates: false,
        },
        schema: Some(Arc::new(summary_schema())),
        allow_missing_columns: true,
        include_file_paths: Some(PATH_COLUMN.into()),
        glob: false,
        cache: false,
        ..Default::default()
    };
    let sources = paths
        .iter()
        .map(|p| PlRefPath::new(p.to_string_lossy().as_ref()));
    let lf = LazyFrame::scan_parquet_files(sources.collect(), args)?;
    let Some(cols) = columns else {
        return lf.collect();
    };
    // Only what the caller reads (projection pushdown: the other columns
    // are never decoded), with the hive keys and the file.
    let keys = keys.iter().map(String::as_str);
    let cols = cols
        .iter()
        .map(String::as_str)
        .chain(keys)
        .chain([PATH_COLUMN]);
    lf.select(cols.map(col).collect::<Vec<_>>()).collect()
}

/// Reads every summary in `paths` with one lazy scan per set of hive keys
/// (and per [`BATCH`]); a scan that fails (a file of another shape) is
/// redone file by file, so one bad file is named and skipped, not the
/// fleet.
fn read_summaries(root: &Path, paths: &[PathBuf], opts: &ScanOptions, scan: &mut Scan) {
    let mut groups: BTreeMap<Vec<String>, Vec<PathBuf>> = BTreeMap::new();
    for p in paths {
        let keys = hive_keys(root, p.parent().unwrap_or(p))
            .into_iter()
            .map(|(k, _)| k);
        groups.entry(keys.collect()).or_default().push(p.clone());
    }
    for (keys, group) in &groups {
        for batch in group.chunks(BATCH) {
            let read = scan_group(root, batch, keys, opts.columns.as_deref())
                .and_then(|df| split_by_file(&df, keys));
            match read {
                Ok(by_file) => {
                    for (path, (rows, hive)) in by_file {
                        accept(root, &path, rows, Some(hive), opts, scan);
                    }
                }
                Err(e) => {
                    let n = batch.len();
                    tracing::warn!(
                        "one scan of {n} summaries failed ({e}); reading them one by one"
                    );
                    for path in batch {
                        match read_summary(path) {
                            Ok(rows) => accept(root, path, rows, None, opts, scan),
                            Err(e) => scan.skip(path, e.to_string()),
                        }
                    }
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
    let hive: Vec<(&String, StringChunked)> = (keys.iter())
        .map(|k| Ok((k, df.column(k)?.cast(&DataType::String)?.str()?.clone())))
        .collect::<PolarsResult<_>>()?;
    let mut by_file: BTreeMap<PathBuf, FileRows> = BTreeMap::new();
    for (i, (row, path)) in rows.into_iter().zip(paths.iter()).enumerate() {
        let path = PathBuf::from(path.unwrap_or_default());
        let entry = by_file.entry(path).or_insert_with(|| {
            let values = hive
                .iter()
                .filter_map(|(k, c)| c.get(i).map(|v| (k.to_string(), v.to_string())));
            (Vec::new(), values.collect())
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
    let mut scoped: Vec<SummaryRow> = rows.into_iter().filter(|r| in_scope(r.into())).collect();
    *left_out += n - scoped.len();
    let of: Vec<Standing> = scoped.iter().map(Standing::from).collect();
    let standing = representative(&of, at);
    match standing {
        Some(i) => vec![scoped.swap_remove(i)],
        None => scoped,
    }
}

/// One summary's rows into the scan, or the file into `skipped`.
fn accept(
    root: &Path,
    path: &Path,
    rows: Vec<SummaryRow>,
    hive: Option<BTreeMap<String, String>>,
    opts: &ScanOptions,
    scan: &mut Scan,
) {
    if let Err(e) = check_versions(path, &rows) {
        return scan.skip(path, e.to_string());
    }
    if rows.is_empty() {
        return scan.skip(
            path,
            "the summary has no rows (no rate above 0 Hz was analysed)",
        );
    }
    scan.sets += 1;
    let mut left_out = 0;
    let rows = kept(rows, opts, &mut left_out);
    scan.left_out += left_out;
    scan.left_out_by_file.insert(path.to_path_buf(), left_out);
    let set_dir = path.parent().unwrap_or(path);
    scan.rows.extend(place((root, set_dir, false), rows, hive));
}

/// A day table's sets into the scan (each as if read from its own
/// summary: its host and folder from the table, its date from the
/// table's `date=` folder, else its start), or the table into `skipped`.
/// With one row per set, the standing rows are chosen on the table's
/// columns, so only they become [`SummaryRow`]s, each built once.
fn read_table(root: &Path, path: &Path, opts: &ScanOptions, scan: &mut Scan) {
    let date = hive_date(root, path);
    let read = read_day_frame(path, opts.columns.as_deref())
        .map_err(|e| e.to_string())
        .and_then(|df| table_rows(&df, opts, date.as_deref()).map_err(|e| e.to_string()));
    match read {
        Ok((sets, rows, left_out)) => {
            scan.sets += sets;
            scan.left_out += left_out;
            scan.rows.extend(rows);
        }
        Err(e) => scan.skip(path, e),
    }
}

/// A table's rows as [`kept`] keeps them, each set's with its host and
/// folder from the table and the table's `date`: how many sets, the
/// rows, how many were left out.
fn table_rows(
    df: &DataFrame,
    opts: &ScanOptions,
    date: Option<&str>,
) -> PolarsResult<(usize, Vec<FleetRow>, usize)> {
    let text = |name: &str| -> PolarsResult<Vec<Option<&str>>> {
        Ok(df.column(name)?.str()?.iter().collect())
    };
    let (hosts, dirs) = (text("host")?, text("set_dir")?);
    let mut order: Vec<usize> = (0..df.height()).collect();
    order.sort_by_key(|&i| (hosts[i], dirs[i]));
    let standing = match opts.one_row_at {
        Some(_) => standings(df)?,
        None => Vec::new(),
    };
    let (mut sets, mut take, mut left_out) = (0, Vec::new(), 0);
    for run in order.chunk_by(|&a, &b| (hosts[a], dirs[a]) == (hosts[b], dirs[b])) {
        sets += 1;
        let Some(at) = opts.one_row_at else {
            take.extend_from_slice(run);
            continue;
        };
        let scoped: Vec<usize> = (run.iter().copied())
            .filter(|&i| in_scope(standing[i]))
            .collect();
        left_out += run.len() - scoped.len();
        let of: Vec<Standing> = scoped.iter().map(|&i| standing[i]).collect();
        match representative(&of, at) {
            Some(k) => take.push(scoped[k]),
            None => take.extend(scoped),
        }
    }
    let mut rows: Vec<FleetRow> = (take.iter())
        .map(|&i| FleetRow {
            host: hosts[i].unwrap_or_default().to_string(),
            date: date.unwrap_or_default().to_string(),
            set_dir: PathBuf::from(dirs[i].unwrap_or_default()),
            made: false,
            row: SummaryRow::default(),
        })
        .collect();
    let idx = IdxCa::from_vec("".into(), take.iter().map(|&i| i as IdxSize).collect());
    let kept = df.take(&idx)?;
    fill_from_frame(
        &kept,
        &mut rows.iter_mut().map(|r| &mut r.row).collect::<Vec<_>>(),
    )?;
    if date.is_none() {
        for r in &mut rows {
            r.date = r.row.started_at.and_then(day_of).unwrap_or_default();
        }
    }
    Ok((sets, rows, left_out))
}

/// Each row's [`Standing`], read from the frame's columns.
fn standings(df: &DataFrame) -> PolarsResult<Vec<Standing<'_>>> {
    let n = df.height();
    let mut out = vec![Standing::default(); n];
    if let Ok(c) = df.column("subject") {
        for (s, v) in out.iter_mut().zip(c.str()?.iter()) {
            s.subject = v;
        }
    }
    if let Ok(c) = df.column("config_primary") {
        for (s, v) in out.iter_mut().zip(c.bool()?.iter()) {
            s.config_primary = v;
        }
    }
    if let Ok(c) = df.column("freq_hz") {
        for (s, v) in out.iter_mut().zip(c.cast(&DataType::Int64)?.i64()?.iter()) {
            s.freq_hz = v;
        }
    }
    if let Ok(c) = df.column("cost_per_sample_ns") {
        for (s, v) in out
            .iter_mut()
            .zip(c.cast(&DataType::Float64)?.f64()?.iter())
        {
            s.has_cost = v.is_some();
        }
    }
    Ok(out)
}

/// [`read_summaries`] for the summaries that are new or changed since the
/// cache under `root`; the others from it. The cache is then rewritten
/// with what this scan holds.
fn read_with_cache(
    root: &Path,
    paths: &[PathBuf],
    opts: &ScanOptions,
    key: &CacheKey,
    scan: &mut Scan,
) {
    let mut old = Cache::load(root, key);
    let mut stamps: BTreeMap<PathBuf, Stamp> = BTreeMap::new();
    let mut to_read: Vec<PathBuf> = Vec::new();
    for p in paths {
        let st = stamp(p);
        match (st, old.entries.remove(p)) {
            (Some(st), Some(e)) if e.stamp == st => {
                scan.sets += 1;
                scan.cached += 1;
                scan.left_out += e.left_out;
                scan.left_out_by_file.insert(p.clone(), e.left_out);
                scan.rows.extend(e.rows);
            }
            _ => to_read.push(p.clone()),
        }
        stamps.extend(st.map(|st| (p.clone(), st)));
    }
    if scan.cached > 0 {
        let (n, dir) = (scan.cached, root.join(CACHE_DIR));
        tracing::info!(
            "{n} summaries from {}, {} read",
            dir.display(),
            to_read.len()
        );
    }
    read_summaries(root, &to_read, opts, scan);
    let mut new = Cache::default();
    for r in scan.rows.iter().filter(|r| !r.made) {
        let path = r.set_dir.join(SUMMARY_PARQUET);
        let Some(&stamp) = stamps.get(&path) else {
            continue;
        };
        let left_out = scan.left_out_by_file.get(&path).copied().unwrap_or(0);
        let entry = new.entries.entry(path);
        let rows = Vec::new();
        entry
            .or_insert(Entry {
                stamp,
                rows,
                left_out,
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
    match (&opts.columns, opts.one_row_at) {
        (Some(cols), Some(at)) if opts.cache => {
            let key = CacheKey::new(at, cols);
            read_with_cache(root, &found.summaries, opts, &key, &mut scan);
        }
        _ => read_summaries(root, &found.summaries, opts, &mut scan),
    }
    for path in &found.tables {
        read_table(root, path, opts, &mut scan);
    }
    for dir in &found.without_summary {
        if !opts.make {
            scan.skip(
                dir,
                "no summary.parquet (written before summaries; `analysis summary DIR` \
                 makes one, or drop --no-make)",
            );
            continue;
        }
        match crate::summary_of(dir) {
            Ok((rows, _)) if !rows.is_empty() => {
                scan.sets += 1;
                scan.made += 1;
                let rows = kept(rows, opts, &mut scan.left_out);
                scan.rows.extend(place((root, dir, true), rows, None));
            }
            Ok(_) => scan.skip(
                dir,
                "no summary.parquet, and its tables give no rate above 0 Hz",
            ),
            Err(e) => scan.skip(
                dir,
                format!(
                    "no summary.parquet, and it could not be made from its tables: {}",
                    results_format::message_chain(&e)
                ),
            ),
        }
    }
    for path in &found.missing {
        let read = std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|s| serde_json::from_str::<Missing>(&s).map_err(|e| e.to_string()));
        match read {
            Ok(mut m) => {
                if m.date.is_empty() {
                    m.date = hive_date(root, path).unwrap_or_default();
                }
                scan.missing.push(m);
            }
            Err(e) => scan.skip(path, format!("missing.json unreadable: {e}")),
        }
    }
    Ok(scan)
}
