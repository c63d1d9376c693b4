//! The report's CSV files as row types. Each file's header is made from its
//! row type's field names (`csv_row!`): an interval field gives its
//! columns by its type ([`Columns`]), so a column is added in one place,
//! the row type, and docs/results-format.md's tables are checked against
//! the header (analysis/tests/all/report_docs.rs).

use std::path::Path;

use crate::error::AnalysisError;
use crate::stats::Estimate;

/// How a field's type names its CSV columns from the field's name:
/// one column for a plain value, several for an interval.
pub trait Columns {
    /// Appends the columns of a field called `field` to `out`; `width` is
    /// the number of per-run columns ([`PerRun`]) of this file.
    fn names(field: &str, width: usize, out: &mut Vec<String>);
}

macro_rules! one_column {
    ($($t:ty),*) => {$(
        impl Columns for $t {
            fn names(field: &str, _: usize, out: &mut Vec<String>) {
                out.push(field.to_string());
            }
        }
    )*};
}
one_column!(
    u64,
    u32,
    usize,
    bool,
    String,
    &'static str,
    CsvNum,
    Shown,
    Option<usize>
);

/// Declares a report CSV's row type and its `header(width)`: the fields'
/// columns in order ([`Columns`]).
macro_rules! csv_row {
    (
        $(#[$m:meta])*
        pub struct $name:ident {
            $( $(#[$fm:meta])* pub $field:ident : $ty:ty, )*
        }
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, serde::Serialize)]
        pub struct $name {
            $( $(#[$fm])* pub $field: $ty, )*
        }

        impl $name {
            /// The CSV header: each field's columns in order; `width` is
            /// the number of per-run columns (0 where there are none).
            pub fn header(width: usize) -> Vec<String> {
                let mut out = Vec::new();
                $( <$ty as $crate::report::csv_row::Columns>::names(
                    stringify!($field), width, &mut out); )*
                out
            }
        }
    };
}
pub(crate) use csv_row;

/// A number as Rust writes it, empty when not finite (csv's own float
/// formatting would write 1e-7 where the files have always had 0.0000001).
#[derive(Debug, Clone, Copy)]
pub struct CsvNum(pub f64);

impl CsvNum {
    /// An optional number: empty when absent.
    pub fn opt(v: Option<f64>) -> Self {
        CsvNum(v.unwrap_or(f64::NAN))
    }
}

impl serde::Serialize for CsvNum {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&finite(self.0))
    }
}

/// A number as Rust displays it, NaN included (by_contents.csv,
/// after_effect.csv and command.csv have always written `NaN` there);
/// empty when absent.
#[derive(Debug, Clone, Copy)]
pub struct Shown(pub Option<f64>);

impl Shown {
    /// A number that is always there.
    pub fn of(v: f64) -> Self {
        Shown(Some(v))
    }
}

impl serde::Serialize for Shown {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.map(|v| v.to_string()).unwrap_or_default())
    }
}

fn finite(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        String::new()
    }
}

/// An interval as four columns, `name`, `base_lo_unit`, `base_hi_unit`,
/// `base_se_unit` (per_sample.csv: `direct_ns`, `direct_lo_ns`, ...),
/// each empty when not finite.
#[derive(Debug, Clone, Copy)]
pub struct LoHiSe(pub Estimate);

impl Columns for LoHiSe {
    fn names(field: &str, _: usize, out: &mut Vec<String>) {
        let (base, unit) = field.rsplit_once('_').unwrap_or((field, ""));
        out.push(field.to_string());
        for part in ["lo", "hi", "se"] {
            out.push(format!("{base}_{part}_{unit}"));
        }
    }
}

impl serde::Serialize for LoHiSe {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let e = &self.0;
        let mut t = s.serialize_tuple(4)?;
        for v in [e.value, e.lo, e.hi, e.se] {
            t.serialize_element(&CsvNum(v))?;
        }
        t.end()
    }
}

/// An interval as three columns, `name`, `base_lo_unit`, `base_hi_unit`
/// (util.csv: `util_pct`, `util_lo_pct`, `util_hi_pct`), each empty when
/// not finite: [`LoHiSe`] without the standard error.
#[derive(Debug, Clone, Copy)]
pub struct LoHiUnit(pub Estimate);

impl Columns for LoHiUnit {
    fn names(field: &str, width: usize, out: &mut Vec<String>) {
        LoHiSe::names(field, width, out);
        out.pop();
    }
}

impl serde::Serialize for LoHiUnit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let e = &self.0;
        let mut t = s.serialize_tuple(3)?;
        for v in [e.value, e.lo, e.hi] {
            t.serialize_element(&CsvNum(v))?;
        }
        t.end()
    }
}

/// An interval as three columns, `name`, `name_lo`, `name_hi`
/// (by_contents.csv, after_effect.csv, command.csv), as Rust displays each
/// number; all three empty when absent.
#[derive(Debug, Clone, Copy)]
pub struct LoHi(pub Option<Estimate>);

impl Columns for LoHi {
    fn names(field: &str, _: usize, out: &mut Vec<String>) {
        out.push(field.to_string());
        out.push(format!("{field}_lo"));
        out.push(format!("{field}_hi"));
    }
}

impl serde::Serialize for LoHi {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut t = s.serialize_tuple(3)?;
        for v in self.0.map(|e| [e.value, e.lo, e.hi]).into_iter().flatten() {
            t.serialize_element(&Shown::of(v))?;
        }
        if self.0.is_none() {
            for _ in 0..3 {
                t.serialize_element("")?;
            }
        }
        t.end()
    }
}

/// One column per run (`run1`, `run2`, ...: loss.csv's iterations), empty
/// past a row's own runs; the file's width is its longest row's.
#[derive(Debug, Clone)]
pub struct PerRun(pub Vec<Option<u64>>);

impl PerRun {
    /// `values` padded with empty columns to `width`.
    pub fn padded(values: &[u64], width: usize) -> Self {
        PerRun(
            (0..width.max(values.len()))
                .map(|i| values.get(i).copied())
                .collect(),
        )
    }
}

impl Columns for PerRun {
    fn names(field: &str, width: usize, out: &mut Vec<String>) {
        out.extend((1..=width).map(|i| format!("{field}{i}")));
    }
}

impl serde::Serialize for PerRun {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut t = s.serialize_tuple(self.0.len())?;
        for v in &self.0 {
            t.serialize_element(v)?;
        }
        t.end()
    }
}

/// Writes `rows` under `header` (the row type's `header(width)`); an empty
/// table is the header alone.
pub fn write_rows<T: serde::Serialize>(
    path: &Path,
    rows: &[T],
    header: &[String],
) -> Result<(), AnalysisError> {
    let err = |e: csv::Error| AnalysisError::write(path, std::io::Error::other(e));
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_path(path)
        .map_err(err)?;
    w.write_record(header).map_err(err)?;
    for row in rows {
        w.serialize(row).map_err(err)?;
    }
    w.flush().map_err(|e| AnalysisError::write(path, e))
}

/// A row as CSV text without a header (tests: the columns a row writes
/// must be as many as its header's).
#[cfg(test)]
#[allow(clippy::expect_used)]
pub(crate) fn row_text<T: serde::Serialize>(row: &T) -> String {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    w.serialize(row).expect("a report row serialises");
    String::from_utf8(w.into_inner().expect("in memory")).expect("CSV is UTF-8")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    csv_row! {
        /// A row with every kind of column.
        pub struct Every {
            pub freq_hz: u64,
            pub run: PerRun,
            pub direct_ns: LoHiSe,
            pub handler_ns: LoHi,
            pub mean: CsvNum,
            pub ratio: Shown,
            pub n_runs: Option<usize>,
            pub method: String,
        }
    }

    #[test]
    fn the_header_follows_the_fields_and_each_row_fills_it() {
        assert_eq!(
            Every::header(2).join(","),
            "freq_hz,run1,run2,direct_ns,direct_lo_ns,direct_hi_ns,direct_se_ns,\
             handler_ns,handler_ns_lo,handler_ns_hi,mean,ratio,n_runs,method"
        );
        let row = Every {
            freq_hz: 100,
            run: PerRun::padded(&[7], 2),
            direct_ns: LoHiSe(Estimate {
                value: 1.5,
                lo: f64::NAN,
                hi: 2.0,
                se: 0.0000001,
                n: 3,
            }),
            handler_ns: LoHi(None),
            mean: CsvNum(f64::INFINITY),
            ratio: Shown::of(f64::NAN),
            n_runs: None,
            method: "t, by run".to_string(),
        };
        assert_eq!(
            row_text(&row),
            "100,7,,1.5,,2,0.0000001,,,,,NaN,,\"t, by run\"\n"
        );
        let with = LoHi(Some(Estimate {
            value: 1.0,
            lo: 0.5,
            hi: f64::NAN,
            se: 0.0,
            n: 2,
        }));
        let mut w = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(Vec::new());
        w.serialize((1u8, with)).unwrap();
        assert_eq!(
            String::from_utf8(w.into_inner().unwrap()).unwrap(),
            "1,1,0.5,NaN\n"
        );
    }
}
