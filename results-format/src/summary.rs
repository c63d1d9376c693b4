//! `summary.parquet`: a result set's answer in one small flat table, one
//! row per configuration (sample contents x work kind) and rate, the unit
//! a fleet dataset is made of (docs/results-format.md, "summary.parquet").
//!
//! Every column is nullable: an older set, a `--profiler` set or a rate the
//! analysis could not resolve leaves the columns it has no value for null,
//! never NaN. Integers are Int64 and the time is a µs timestamp (Spark and
//! DuckDB read both); no column is named `host` or `date`, the fleet
//! layout's partition keys.

use std::path::Path;

use polars::prelude::*;
use serde::{Deserialize, Serialize};

use crate::FormatError;

/// The summary's own version, apart from the results directory's
/// `format_version`: a reader takes any version up to this one (a column
/// it lacks is null) and refuses a later one, naming it.
pub const SUMMARY_VERSION: i64 = 2;

/// The file's name inside a result set.
pub const SUMMARY_PARQUET: &str = "summary.parquet";

/// The loss budgets each row answers, % (the report's), and their column
/// stems: `budget_1_max_hz` answers 1 %.
pub const SUMMARY_BUDGETS: [(f64, &str); 3] = [(0.1, "0p1"), (1.0, "1"), (5.0, "5")];

/// A column's type in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// Int64.
    I,
    /// Float64.
    F,
    /// Boolean.
    B,
    /// String.
    S,
    /// Timestamp, µs since the Unix epoch, UTC.
    T,
}

impl ColumnKind {
    /// The polars type written.
    pub fn dtype(self) -> DataType {
        match self {
            Self::I => DataType::Int64,
            Self::F => DataType::Float64,
            Self::B => DataType::Boolean,
            Self::S => DataType::String,
            Self::T => DataType::Datetime(TimeUnit::Microseconds, None),
        }
    }
}

// Each column kind's value in a [`SummaryRow`], named as the kind.
type I = i64;
type F = f64;
type B = bool;
type S = String;
/// µs since the Unix epoch, UTC.
type T = i64;

macro_rules! summary_columns {
    ($( $(#[$doc:meta])* $name:ident : $kind:ident ),* $(,)?) => {
        /// One row of `summary.parquet` (each field one column, in order).
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        pub struct SummaryRow {
            $( $(#[$doc])* pub $name: Option<$kind>, )*
        }

        /// Every column, in the order written, with its type.
        pub const SUMMARY_COLUMNS: &[(&str, ColumnKind)] =
            &[ $( (stringify!($name), ColumnKind::$kind) ),* ];

        fn to_columns(rows: &[SummaryRow]) -> PolarsResult<Vec<Column>> {
            Ok(vec![ $( summary_columns!(@col $kind, stringify!($name), rows, $name) ),* ])
        }

        /// The rows of `df`, whose columns are a subset of
        /// [`SUMMARY_COLUMNS`] (a missing one reads as null) of any type
        /// that casts to the written one.
        pub fn rows_from_frame(df: &DataFrame) -> PolarsResult<Vec<SummaryRow>> {
            let mut rows = vec![SummaryRow::default(); df.height()];
            fill_from_frame(df, &mut rows.iter_mut().collect::<Vec<_>>())?;
            Ok(rows)
        }

        /// [`rows_from_frame`] into rows that live elsewhere (one per row
        /// of `df`), so a reader that wraps them builds each once.
        pub fn fill_from_frame(df: &DataFrame, rows: &mut [&mut SummaryRow]) -> PolarsResult<()> {
            $( summary_columns!(@read $kind, stringify!($name), df, rows, $name); )*
            Ok(())
        }
    };
    (@col $kind:ident, $n:expr, $rows:ident, $f:ident) => {
        Column::new($n.into(), $rows.iter().map(|r| summary_columns!(@cell $kind, r.$f)).collect::<Vec<_>>())
            .cast(&ColumnKind::$kind.dtype())?
    };
    (@cell F, $v:expr) => { $v.filter(|v| v.is_finite()) };
    (@cell S, $v:expr) => { $v.clone() };
    (@cell $kind:ident, $v:expr) => { $v };
    (@read $kind:ident, $n:expr, $df:ident, $rows:ident, $f:ident) => {
        if let Ok(c) = $df.column($n) {
            let c = c.cast(&ColumnKind::$kind.dtype())?;
            for (row, v) in $rows.iter_mut().zip(summary_columns!(@values $kind, c)) {
                row.$f = v;
            }
        }
    };
    (@values I, $c:ident) => { $c.i64()?.iter() };
    (@values T, $c:ident) => { $c.cast(&DataType::Int64)?.i64()?.iter() };
    (@values F, $c:ident) => { $c.f64()?.iter().map(|v| v.filter(|x| x.is_finite())) };
    (@values B, $c:ident) => { $c.bool()?.iter() };
    (@values S, $c:ident) => { $c.str()?.iter().map(|v| v.map(str::to_owned)) };
}

summary_columns! {
    /// [`SUMMARY_VERSION`] of the writer.
    format_version: I,
    /// The result set's folder name.
    set: S,
    /// The driver's version (manifest `tool_version`).
    tool_version: S,
    /// When the sweep started (manifest `started_at`).
    started_at: T,
    /// What was measured: `loop`, `command` or `profiler`.
    subject: S,
    /// The set's primary configuration (the first contents and work kind).
    config_primary: B,
    /// The host's own name (the manifest's).
    hostname: S,
    /// `uname -r`.
    kernel: S,
    /// /proc/cpuinfo `model name`.
    cpu_model_name: S,
    /// The hypervisor, where known.
    hypervisor: S,
    /// /proc/cpuinfo has the `hypervisor` flag.
    virtualised: B,
    /// A hardware PMU event (cycles) opens.
    pmu: B,
    /// Online CPUs.
    cpus: I,
    /// /proc/cpuinfo `vendor_id`.
    cpu_vendor: S,
    /// /proc/cpuinfo `cpu family`.
    cpu_family: I,
    /// /proc/cpuinfo `model` (a number).
    cpu_model: I,
    /// The host traits that move the cost per sample beside the CPU model
    /// ([`HOST_TRAITS`]): the clocksource.
    clocksource: S,
    /// /sys/devices/system/cpu/smt/active.
    smt_active: B,
    /// The kernel's tick rate HZ.
    kernel_hz: I,
    /// The preemption model (`none`, `voluntary`, `full`, `lazy`, `rt`,
    /// `dynamic(MODE)`).
    preempt: S,
    /// cpuidle's driver and governor.
    cpuidle_driver: S,
    cpuidle_governor: S,
    /// /proc/cpuinfo `microcode`.
    microcode: S,
    /// `native`, `virtualised` or `absent` ([`pmu_kind`]).
    pmu_kind: S,
    /// The vulnerabilities in one word ([`mitigations_word`]).
    mitigations: S,
    /// Every vulnerabilities file as `name=text`, by name, joined by `|`.
    vulnerabilities: S,
    /// The sampling event opened.
    event: S,
    /// `cpu` or `system`.
    scope: S,
    /// What each sample carries.
    contents: S,
    /// What the workload's loop did.
    work_kind: S,
    /// The `--profiler` template (profiler sets).
    profiler: S,
    /// The `--command`, shell-quoted (command sets).
    command: S,
    /// The requested rate, Hz.
    freq_hz: I,
    /// Runs at this rate.
    runs: I,
    /// The rate delivered, Hz.
    achieved_hz: F,
    /// Cost per sample, ns, and its 95 % CI over runs.
    cost_per_sample_ns: F,
    cost_per_sample_lo_ns: F,
    cost_per_sample_hi_ns: F,
    /// 95 % prediction interval of the next run's cost, ns.
    cost_per_sample_pred_lo_ns: F,
    cost_per_sample_pred_hi_ns: F,
    /// The cost is an upper estimate (an after-effect bound charged).
    cost_bounded: B,
    /// Loss predicted from the cost, %, with its 95 % CI.
    predicted_loss_pct: F,
    predicted_loss_lo_pct: F,
    predicted_loss_hi_pct: F,
    /// Throughput loss measured (paired design), %, with its 95 % CI.
    throughput_loss_pct: F,
    throughput_loss_lo_pct: F,
    throughput_loss_hi_pct: F,
    /// The prediction against the throughput loss.
    agreement: S,
    /// How far the runs' costs moved over the sweep, % from each rate's mean.
    drift_low_pct: F,
    drift_high_pct: F,
    /// The cost's trend over the sweep, % per hour, with its 95 % CI.
    drift_trend_pct_per_h: F,
    drift_trend_lo_pct_per_h: F,
    drift_trend_hi_pct_per_h: F,
    /// The cost moved during the sweep.
    drift_moved: B,
    /// Runs at this rate marked noisy, and throttled.
    noisy_runs: I,
    throttled_runs: I,
    /// 0.1 % budget: the highest rate within it, the rate to set, the
    /// answer's basis, whether every measured rate was within it, and
    /// whether the data resolve it.
    budget_0p1_max_hz: F,
    budget_0p1_rate_hz: I,
    budget_0p1_basis: S,
    budget_0p1_at_highest_measured: B,
    budget_0p1_resolvable: B,
    /// 1 % budget (as 0.1 %).
    budget_1_max_hz: F,
    budget_1_rate_hz: I,
    budget_1_basis: S,
    budget_1_at_highest_measured: B,
    budget_1_resolvable: B,
    /// 5 % budget (as 0.1 %).
    budget_5_max_hz: F,
    budget_5_rate_hz: I,
    budget_5_basis: S,
    budget_5_at_highest_measured: B,
    budget_5_resolvable: B,
    /// The budget asked (a check or a recommendation), %.
    budget_pct: F,
    /// The rate is within that budget.
    within_budget: B,
    /// The highest rate within that budget, Hz.
    budget_max_hz: F,
}

/// How a trait column's value in a row reads as text.
pub type TraitOf = fn(&SummaryRow) -> Option<String>;

/// The host traits, each a column, with its value as text: what `analysis
/// fleet --explain` ranks and a report compares with its reference host.
pub const HOST_TRAITS: [(&str, TraitOf); 10] = [
    ("mitigations", |r| r.mitigations.clone()),
    ("preempt", |r| r.preempt.clone()),
    ("cpuidle_driver", |r| r.cpuidle_driver.clone()),
    ("cpuidle_governor", |r| r.cpuidle_governor.clone()),
    ("kernel_hz", |r| r.kernel_hz.map(|v| format!("{v} Hz"))),
    ("clocksource", |r| r.clocksource.clone()),
    ("smt_active", |r| {
        r.smt_active
            .map(|v| if v { "smt on" } else { "smt off" }.into())
    }),
    ("microcode", |r| r.microcode.clone()),
    // Made from `pmu` and `virtualised` in a summary older than the column.
    ("pmu_kind", |r| {
        (r.pmu_kind.clone()).or_else(|| Some(pmu_kind(r.pmu?, r.virtualised?).into()))
    }),
    ("kernel", |r| r.kernel.clone()),
];

/// The PMU in one word: `native` (cycles opens, no hypervisor flag),
/// `virtualised` (cycles opens under a hypervisor) or `absent`.
pub fn pmu_kind(pmu: bool, virtualised: bool) -> &'static str {
    match (pmu, virtualised) {
        (false, _) => "absent",
        (true, true) => "virtualised",
        (true, false) => "native",
    }
}

/// The vulnerabilities files' lines in one word: each line starting
/// `Not affected` is not affected, `Vulnerable` vulnerable, `Mitigation`
/// (or `KVM: Mitigation`) mitigated; any other (`Unknown: ...`) counts
/// for none. `not_affected` (none mitigated or vulnerable), `mitigated`
/// (some mitigated, none vulnerable), `vulnerable` (some vulnerable, none
/// mitigated), `mixed` (both); None for no lines.
pub fn mitigations_word<'a>(lines: impl IntoIterator<Item = &'a str>) -> Option<&'static str> {
    let (mut any, mut mitigated, mut vulnerable) = (false, false, false);
    for l in lines {
        any = true;
        vulnerable |= l.starts_with("Vulnerable");
        mitigated |= l.trim_start_matches("KVM: ").starts_with("Mitigation");
    }
    any.then_some(match (mitigated, vulnerable) {
        (true, true) => "mixed",
        (true, false) => "mitigated",
        (false, true) => "vulnerable",
        (false, false) => "not_affected",
    })
}

/// One budget's answer as the summary holds it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BudgetAnswer {
    pub max_hz: Option<f64>,
    pub rate_hz: Option<i64>,
    pub basis: Option<String>,
    pub at_highest_measured: Option<bool>,
    pub resolvable: Option<bool>,
}

/// [`SummaryRow::set_budget`] and [`SummaryRow::budget`] over each budget's
/// five columns, by stem.
macro_rules! budget_columns {
    ($($stem:literal => $max:ident $rate:ident $basis:ident $top:ident $res:ident),*) => {
        impl SummaryRow {
            /// Sets the answer for the budget with stem `stem` (`0p1`, `1`, `5`).
            pub fn set_budget(&mut self, stem: &str, a: BudgetAnswer) {
                match stem {
                    $($stem => {
                        self.$max = a.max_hz.filter(|v| v.is_finite());
                        self.$rate = a.rate_hz;
                        self.$basis = a.basis;
                        self.$top = a.at_highest_measured;
                        self.$res = a.resolvable;
                    })*
                    _ => {}
                }
            }

            /// The answer for the budget with stem `stem`.
            pub fn budget(&self, stem: &str) -> BudgetAnswer {
                match stem {
                    $($stem => BudgetAnswer {
                        max_hz: self.$max,
                        rate_hz: self.$rate,
                        basis: self.$basis.clone(),
                        at_highest_measured: self.$top,
                        resolvable: self.$res,
                    },)*
                    _ => BudgetAnswer::default(),
                }
            }
        }
    };
}

budget_columns! {
    "0p1" => budget_0p1_max_hz budget_0p1_rate_hz budget_0p1_basis
        budget_0p1_at_highest_measured budget_0p1_resolvable,
    "1" => budget_1_max_hz budget_1_rate_hz budget_1_basis
        budget_1_at_highest_measured budget_1_resolvable,
    "5" => budget_5_max_hz budget_5_rate_hz budget_5_basis
        budget_5_at_highest_measured budget_5_resolvable
}

/// The schema written, for a scan that reads many files as one table.
pub fn summary_schema() -> Schema {
    SUMMARY_COLUMNS
        .iter()
        .map(|(n, k)| Field::new((*n).into(), k.dtype()))
        .collect()
}

/// The rows as a data frame with every column of [`SUMMARY_COLUMNS`].
pub fn summary_frame(rows: &[SummaryRow]) -> PolarsResult<DataFrame> {
    DataFrame::new(rows.len(), to_columns(rows)?)
}

/// Writes `rows` to `path` atomically (uncompressed, no statistics: a
/// fleet reads thousands of these), [`SUMMARY_VERSION`] in every row's
/// `format_version`.
pub fn write_summary(path: &Path, rows: &[SummaryRow]) -> Result<(), FormatError> {
    let rows: Vec<SummaryRow> = rows
        .iter()
        .cloned()
        .map(|mut r| {
            r.format_version = Some(SUMMARY_VERSION);
            r
        })
        .collect();
    let df = summary_frame(&rows)
        .map_err(|e| FormatError::write(path, std::io::Error::other(e.to_string())))?;
    crate::parquet::write_atomic_small(path, df)
}

mod day_table;
pub use day_table::write_day_table;
pub use day_table::{DAY_TABLE, DAY_TABLE_KEYS, DayRow, read_day_frame};

/// Why a summary is not read.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// Written by a later version than this build reads.
    #[error(
        "{path}: summary format_version {found} is newer than this build reads ({SUMMARY_VERSION}); use an analysis built from the same or a later revision than the driver that wrote it"
    )]
    Version {
        /// The file.
        path: std::path::PathBuf,
        /// The version found.
        found: i64,
    },
    /// The file could not be read.
    #[error(transparent)]
    Format(#[from] FormatError),
}

/// Reads a summary written by this or an earlier version.
pub fn read_summary(path: &Path) -> Result<Vec<SummaryRow>, SummaryError> {
    let corrupt = |e: PolarsError| FormatError::corrupt(path, e);
    let file = std::fs::File::open(path).map_err(FormatError::io(path))?;
    let df = ParquetReader::new(file).finish().map_err(corrupt)?;
    let rows = rows_from_frame(&df).map_err(corrupt)?;
    check_versions(path, &rows)?;
    Ok(rows)
}

/// A [`SummaryError::Version`] for the first row newer than this build.
pub fn check_versions(path: &Path, rows: &[SummaryRow]) -> Result<(), SummaryError> {
    let mut versions = rows.iter().filter_map(|r| r.format_version);
    match versions.find(|&v| v > SUMMARY_VERSION) {
        Some(found) => Err(SummaryError::Version {
            path: path.to_path_buf(),
            found,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn row() -> SummaryRow {
        let mut r = SummaryRow {
            set: Some("20261127T0100Z-vm".into()),
            started_at: Some(1_795_000_000_000_000),
            hostname: Some("vm".into()),
            virtualised: Some(true),
            freq_hz: Some(1000),
            cost_per_sample_ns: Some(5123.5),
            cost_per_sample_lo_ns: Some(f64::NAN),
            ..Default::default()
        };
        r.set_budget(
            "1",
            BudgetAnswer {
                max_hz: Some(1900.0),
                rate_hz: Some(1861),
                basis: Some("model".into()),
                at_highest_measured: Some(false),
                resolvable: Some(true),
            },
        );
        r
    }

    #[test]
    fn a_row_survives_the_file_and_nan_becomes_null() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SUMMARY_PARQUET);
        write_summary(&path, &[row()]).unwrap();
        let back = read_summary(&path).unwrap();
        let mut want = row();
        want.format_version = Some(SUMMARY_VERSION);
        want.cost_per_sample_lo_ns = None;
        assert_eq!(back, vec![want]);
        assert_eq!(back[0].budget("1").rate_hz, Some(1861));
        assert_eq!(back[0].budget("5"), BudgetAnswer::default());
    }

    #[test]
    fn mitigations_and_pmu_in_one_word() {
        let w = |l: &[&str]| mitigations_word(l.iter().copied());
        assert_eq!(w(&["Not affected", "Unknown: x"]), Some("not_affected"));
        assert_eq!(
            w(&["Not affected", "KVM: Mitigation: VMX disabled"]),
            Some("mitigated")
        );
        assert_eq!(
            w(&["Vulnerable: Safe RET, no microcode"]),
            Some("vulnerable")
        );
        assert_eq!(
            w(&["Vulnerable", "Mitigation: Retpolines; STIBP: disabled"]),
            Some("mixed")
        );
        assert_eq!(w(&[]), None);
        assert_eq!(
            [(true, false), (true, true), (false, true)].map(|(p, v)| pmu_kind(p, v)),
            ["native", "virtualised", "absent"]
        );
    }

    #[test]
    fn a_later_version_is_refused_by_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SUMMARY_PARQUET);
        let mut r = row();
        r.format_version = Some(SUMMARY_VERSION + 1);
        let df = summary_frame(&[r]).unwrap();
        crate::parquet::write_atomic(&path, df).unwrap();
        let e = read_summary(&path).unwrap_err().to_string();
        assert!(
            e.contains(&format!("format_version {}", SUMMARY_VERSION + 1)),
            "{e}"
        );
    }

    #[test]
    fn an_earlier_file_without_some_columns_reads_them_as_null() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SUMMARY_PARQUET);
        let mut df = summary_frame(&[row()]).unwrap();
        df = df
            .drop("cpu_vendor")
            .unwrap()
            .drop("budget_1_basis")
            .unwrap();
        crate::parquet::write_atomic(&path, df).unwrap();
        let back = read_summary(&path).unwrap();
        assert_eq!(back[0].cpu_vendor, None);
        assert_eq!(back[0].budget_1_basis, None);
        assert_eq!(back[0].budget_1_rate_hz, Some(1861));
    }

    #[test]
    fn the_schema_lists_every_column_once() {
        let s = summary_schema();
        assert_eq!(s.len(), SUMMARY_COLUMNS.len());
        for (stem_pct, stem) in SUMMARY_BUDGETS {
            assert!(stem_pct > 0.0);
            assert!(s.contains(&format!("budget_{stem}_max_hz")));
        }
        assert!(!s.contains("host") && !s.contains("date"));
    }
}
