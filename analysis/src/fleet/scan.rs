//! Reading a fleet dataset: every `summary.parquet` under a root, read in
//! one polars lazy scan with the `key=value` folder names (`host=`,
//! `date=`) as columns (docs/results-format.md, "A fleet dataset"), or
//! from the cache ([`super::cache`]); the day tables of a compacted fleet;
//! the sets without a summary made from their tables or listed as skipped;
//! the hosts the playbook could not measure (`missing.json`). Every source
//! is read as a frame whose rows standing for their sets are chosen on its
//! columns (`kept`), so only those become [`SummaryRow`]s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use polars::prelude::*;
use results_format::MANIFEST_JSON;
use results_format::summary::{DAY_TABLE, SUMMARY_VERSION, read_day_frame};
use results_format::summary::{SUMMARY_PARQUET, SummaryError, SummaryRow, read_summary};
use results_format::summary::{fill_from_frame, summary_frame, summary_schema};

use super::cache::{self, CACHE_DIR, CacheKey, PATH_COLUMN, Stamps, stamp};
use super::pick::{Standing, in_scope, representative};

/// One summary row with the host, date and set it came from.
#[derive(Debug, Clone, Default)]
pub struct FleetRow {
    /// The `host=` folder, else the row's hostname.
    pub host: String,
    /// The `date=` folder, else the UTC day the sweep started.
    pub date: String,
    /// The result set's folder.
    pub set_dir: PathBuf,
    /// True when the set had no summary and it was made from its tables.
    pub made: bool,
    pub row: SummaryRow,
}

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
    /// With the cache: the rows it keeps, as each frame read gave them.
    to_cache: Option<Vec<DataFrame>>,
}

impl Scan {
    fn skip(&mut self, path: &Path, reason: impl Into<String>) {
        let (path, reason) = (path.to_path_buf(), reason.into());
        self.skipped.push(Skipped { path, reason });
    }

    /// What a frame's read kept.
    fn keep(&mut self, k: &Kept, rows: Vec<FleetRow>) {
        self.sets += k.sets;
        self.left_out += k.left_out;
        self.rows.extend(rows);
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

/// One lazy scan over `paths` (whose `key=value` folders below `root` are
/// the same keys): the summary's columns, a file written by an earlier
/// version lacking some (null), the hive keys and each row's file.
fn scan_group(
    root: &Path,
    paths: &[PathBuf],
    keys: &[String],
    columns: Option<&[String]>,
) -> PolarsResult<DataFrame> {
    let hive_schema: Schema = keys
        .iter()
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

/// `df` (a scan's) with a `host` and a `date` column as text, null where
/// the files' folders name none.
fn with_host_and_date(mut df: DataFrame) -> PolarsResult<DataFrame> {
    for key in ["host", "date"] {
        let c = match df.column(key) {
            Ok(c) => c.cast(&DataType::String)?,
            Err(_) => Column::full_null(key.into(), df.height(), &DataType::String),
        };
        df.with_column(c)?;
    }
    Ok(df)
}

/// The rows of the summary `path` framed as a scan frames them: its host
/// and date from its `key=value` folders below `root`, and its file.
fn frame_of(root: &Path, path: &Path, rows: &[SummaryRow]) -> PolarsResult<DataFrame> {
    let keys: BTreeMap<String, String> = hive_keys(root, path.parent().unwrap_or(path))
        .into_iter()
        .collect();
    let mut df = summary_frame(rows)?;
    for key in ["host", "date"] {
        df.with_column(Column::new(
            key.into(),
            vec![keys.get(key).cloned(); rows.len()],
        ))?;
    }
    let file = path.to_string_lossy().into_owned();
    df.with_column(Column::new(PATH_COLUMN.into(), vec![file; rows.len()]))?;
    Ok(df)
}

/// Reads every summary in `paths`: with `opts.cache` those unchanged
/// since the last run from the cache, the others with one lazy scan per
/// set of hive keys (and per [`BATCH`]); a scan that fails (a file of
/// another shape) is redone file by file, so one bad file is named and
/// skipped, not the fleet. The cache is then rewritten with what this
/// scan kept.
fn read_summaries(root: &Path, paths: &[PathBuf], opts: &ScanOptions, scan: &mut Scan) {
    let key = match (&opts.columns, opts.one_row_at) {
        (Some(cols), Some(at)) if opts.cache => Some(CacheKey::new(at, cols)),
        _ => None,
    };
    let stamps: Stamps = match key {
        Some(_) => paths
            .iter()
            .filter_map(|p| Some((p.clone(), stamp(p)?)))
            .collect(),
        None => BTreeMap::new(),
    };
    let mut to_read = paths.to_vec();
    scan.to_cache = key.is_some().then(Vec::new);
    if let Some((df, cached)) = key.as_ref().and_then(|k| cache::load(root, k, &stamps)) {
        let dir = root.join(CACHE_DIR);
        let dir = dir.display();
        match read_frame(df, false, opts, scan) {
            Ok(()) => {
                to_read.retain(|p| !cached.contains(p));
                scan.cached = cached.len();
                let (n, left) = (cached.len(), to_read.len());
                if n > 0 {
                    tracing::info!("{n} summaries from {dir}, {left} read");
                }
            }
            Err(e) => tracing::warn!("{dir}: unreadable ({e}); every summary is read again"),
        }
    }
    let mut groups: BTreeMap<Vec<String>, Vec<PathBuf>> = BTreeMap::new();
    for p in to_read {
        let keys = hive_keys(root, p.parent().unwrap_or(&p))
            .into_iter()
            .map(|(k, _)| k);
        groups.entry(keys.collect()).or_default().push(p);
    }
    for (keys, group) in &groups {
        for batch in group.chunks(BATCH) {
            let read = scan_group(root, batch, keys, opts.columns.as_deref())
                .and_then(with_host_and_date)
                .and_then(|df| read_frame(df, false, opts, scan));
            if let Err(e) = read {
                let n = batch.len();
                tracing::warn!("one scan of {n} summaries failed ({e}); reading them one by one");
                for path in batch {
                    if let Err(e) = read_one(root, path, opts, scan) {
                        scan.skip(path, e);
                    }
                }
            }
        }
    }
    if let (Some(key), Some(frames)) = (&key, scan.to_cache.take()) {
        cache::save(root, key, &frames, &stamps);
    }
}

/// One summary read on its own (when a scan of many failed) into the
/// scan.
fn read_one(root: &Path, path: &Path, opts: &ScanOptions, scan: &mut Scan) -> Result<(), String> {
    let rows = read_summary(path).map_err(|e| e.to_string())?;
    if rows.is_empty() {
        return Err("the summary has no rows (no rate above 0 Hz was analysed)".into());
    }
    let df = frame_of(root, path, &rows).map_err(|e| e.to_string())?;
    read_frame(df, false, opts, scan).map_err(|e| e.to_string())
}

/// The rows a scan keeps of a frame, chosen on its columns.
#[derive(Debug, Default)]
struct Kept {
    /// Sets: runs of rows with one key.
    sets: usize,
    /// Every row, or with one row per set the in-scope row standing for
    /// it ([`representative`]); a set's rows in their order.
    take: Vec<usize>,
    /// Rows of other subjects and configurations left out
    /// ([`in_scope`]), and those of them in sets that kept a row.
    left_out: usize,
    others: Vec<usize>,
}

/// The rows of `df` the scan keeps, the sets told apart by `set_of`.
fn kept<K: Ord>(
    df: &DataFrame,
    set_of: impl Fn(usize) -> K,
    opts: &ScanOptions,
) -> PolarsResult<Kept> {
    let mut order: Vec<usize> = (0..df.height()).collect();
    order.sort_by_key(|&i| set_of(i));
    let standing = match opts.one_row_at {
        Some(_) => standings(df)?,
        None => Vec::new(),
    };
    let mut k = Kept::default();
    for run in order.chunk_by(|&a, &b| set_of(a) == set_of(b)) {
        k.sets += 1;
        let Some(at) = opts.one_row_at else {
            k.take.extend_from_slice(run);
            continue;
        };
        let (scoped, others): (Vec<usize>, Vec<usize>) =
            run.iter().copied().partition(|&i| in_scope(standing[i]));
        k.left_out += others.len();
        let of: Vec<Standing> = scoped.iter().map(|&i| standing[i]).collect();
        match representative(&of, at) {
            Some(i) => k.take.push(scoped[i]),
            None => k.take.extend(&scoped),
        }
        if !scoped.is_empty() {
            k.others.extend(others);
        }
    }
    Ok(k)
}

/// The rows `take` of `df` as [`FleetRow`]s, each summary row built once:
/// `place(i)` says row `i`'s host and date where it knows them (else the
/// row's hostname and start day) and its set's folder.
fn fleet_rows(
    df: &DataFrame,
    take: &[usize],
    place: impl Fn(usize) -> (Option<String>, Option<String>, PathBuf),
) -> PolarsResult<Vec<FleetRow>> {
    let mut rows = vec![FleetRow::default(); take.len()];
    let mut summary: Vec<&mut SummaryRow> = rows.iter_mut().map(|r| &mut r.row).collect();
    fill_from_frame(&df.take(&indices(take))?, &mut summary)?;
    for (r, &i) in rows.iter_mut().zip(take) {
        let (host, date, set_dir) = place(i);
        let host = host.or_else(|| r.row.hostname.clone());
        r.host = host.unwrap_or_else(|| "(unknown)".to_string());
        r.date = (date.or_else(|| r.row.started_at.and_then(day_of))).unwrap_or_default();
        r.set_dir = set_dir;
    }
    Ok(rows)
}

fn indices(rows: &[usize]) -> IdxCa {
    IdxCa::from_vec("".into(), rows.iter().map(|&i| i as IdxSize).collect())
}

/// `df` without the rows of files a later version wrote, and those files
/// with the version of their first such row.
fn without_newer(df: DataFrame) -> PolarsResult<(DataFrame, BTreeMap<String, i64>)> {
    let Ok(versions) = df.column("format_version") else {
        return Ok((df, BTreeMap::new()));
    };
    let versions = versions.cast(&DataType::Int64)?;
    let paths = df.column(PATH_COLUMN)?.str()?;
    let mut newer = BTreeMap::new();
    for (p, v) in paths.iter().zip(versions.i64()?.iter()) {
        if let (Some(p), Some(v)) = (p, v.filter(|&v| v > SUMMARY_VERSION)) {
            newer.entry(p.to_string()).or_insert(v);
        }
    }
    if newer.is_empty() {
        return Ok((df, newer));
    }
    let older: BooleanChunked = paths
        .iter()
        .map(|p| !newer.contains_key(p.unwrap_or_default()))
        .collect();
    Ok((df.filter(&older)?, newer))
}

/// A frame of summaries' rows, each with its `host` and `date` folder
/// (null: none) and its file, into the scan (`made`: made from their
/// tables), a file a later version wrote into `skipped`. With the cache,
/// the rows it keeps: those kept, and the others of their sets.
fn read_frame(df: DataFrame, made: bool, opts: &ScanOptions, scan: &mut Scan) -> PolarsResult<()> {
    let (df, newer) = without_newer(df)?;
    let paths = df.column(PATH_COLUMN)?.str()?;
    let (hosts, dates) = (df.column("host")?.str()?, df.column("date")?.str()?);
    let k = kept(&df, |i| paths.get(i), opts)?;
    let mut rows = fleet_rows(&df, &k.take, |i| {
        let file = Path::new(paths.get(i).unwrap_or_default());
        let (host, date) = (hosts.get(i), dates.get(i));
        let set_dir = file.parent().unwrap_or(file).to_path_buf();
        (host.map(str::to_string), date.map(str::to_string), set_dir)
    })?;
    rows.iter_mut().for_each(|r| r.made = made);
    if let Some(frames) = &mut scan.to_cache {
        let mut cached = [&k.take[..], &k.others[..]].concat();
        cached.sort_unstable();
        frames.push(df.take(&indices(&cached))?);
    }
    for (path, found) in newer {
        let path = PathBuf::from(path);
        let why = SummaryError::Version {
            path: path.clone(),
            found,
        };
        scan.skip(&path, why.to_string());
    }
    scan.keep(&k, rows);
    Ok(())
}

/// A day table's sets into the scan (each as if read from its own
/// summary: its host and folder from the table, its date from the
/// table's `date=` folder, else its start), or the table into `skipped`.
/// With one row per set, the standing rows are chosen on the table's
/// columns, so only they become [`SummaryRow`]s, each built once.
pub fn read_table(root: &Path, path: &Path, opts: &ScanOptions, scan: &mut Scan) {
    let date = hive_date(root, path);
    let read = read_day_frame(path, opts.columns.as_deref())
        .map_err(|e| e.to_string())
        .and_then(|df| table_rows(&df, date, opts).map_err(|e| e.to_string()));
    match read {
        Ok((k, rows)) => scan.keep(&k, rows),
        Err(e) => scan.skip(path, e),
    }
}

/// A table's rows as [`kept`] keeps them, a set being a host's folder.
fn table_rows(
    df: &DataFrame,
    date: Option<String>,
    opts: &ScanOptions,
) -> PolarsResult<(Kept, Vec<FleetRow>)> {
    let (hosts, dirs) = (df.column("host")?.str()?, df.column("set_dir")?.str()?);
    let k = kept(df, |i| (hosts.get(i), dirs.get(i)), opts)?;
    let rows = fleet_rows(df, &k.take, |i| {
        let host = hosts.get(i).unwrap_or_default().to_string();
        (
            Some(host),
            date.clone(),
            dirs.get(i).unwrap_or_default().into(),
        )
    })?;
    Ok((k, rows))
}

/// Each row's [`Standing`], read from the frame's columns (a column the
/// frame lacks leaves its part unknown).
fn standings(df: &DataFrame) -> PolarsResult<Vec<Standing<'_>>> {
    let mut out = vec![Standing::default(); df.height()];
    if let Ok(c) = df.column("subject") {
        (out.iter_mut().zip(c.str()?.iter())).for_each(|(s, v)| s.subject = v);
    }
    if let Ok(c) = df.column("config_primary") {
        (out.iter_mut().zip(c.bool()?.iter())).for_each(|(s, v)| s.config_primary = v);
    }
    if let Ok(c) = df.column("freq_hz") {
        let f = c.cast(&DataType::Int64)?;
        (out.iter_mut().zip(f.i64()?.iter())).for_each(|(s, v)| s.freq_hz = v);
    }
    if let Ok(c) = df.column("cost_per_sample_ns") {
        let has = c.cast(&DataType::Float64)?.is_not_null();
        (out.iter_mut().zip(has.iter())).for_each(|(s, v)| s.has_cost = v == Some(true));
    }
    Ok(out)
}

/// Reads everything under `root` as `opts` says: which columns, one row
/// per set or all, and whether a set without a summary is analysed to
/// make its rows (older sets) or skipped.
pub fn scan(root: &Path, opts: &ScanOptions) -> std::io::Result<Scan> {
    let mut found = Found::default();
    walk(root, &mut found)?;
    let mut scan = Scan::default();
    read_summaries(root, &found.summaries, opts, &mut scan);
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
                let path = dir.join(SUMMARY_PARQUET);
                let made = frame_of(root, &path, &rows)
                    .and_then(|df| read_frame(df, true, opts, &mut scan));
                match made {
                    Ok(()) => scan.made += 1,
                    Err(e) => scan.skip(dir, e.to_string()),
                }
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
