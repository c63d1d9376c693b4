//! The report's CSV files, written from each table's own row type through
//! its serde derive: a field is a column named after it, and a field whose
//! value is several columns (an interval, the runs of a row) names them
//! through one of the `serialize_with` helpers below. The header is the
//! row type's columns in order, so a column is added in one place, the row
//! type, and docs/results-format.md's tables are checked against the
//! header (analysis/tests/all/report_docs.rs).
//!
//! One rule for numbers: a finite number as Rust writes it (`0.0000001`,
//! never csv's `1e-7`), a number that is not finite or absent an empty
//! cell; the files that have always written them otherwise say so
//! ([`Numbers`]).

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;
use serde::ser::{self, Impossible, SerializeStruct, SerializeTuple, SerializeTupleStruct};

use crate::error::AnalysisError;
use crate::stats::Estimate;

/// How a file writes its numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbers {
    /// As Rust writes them, one that is not finite an empty cell: the
    /// report's tables.
    Plain,
    /// The same with `NaN` written: by_contents.csv, after_effect.csv and
    /// command.csv have always; an absent value is still an empty cell.
    PlainNaN,
    /// csv's own form (`0.0`, `1e-7`, `NaN`), the results files':
    /// cost_by_run.csv.
    Csv,
}

/// Writes `rows` to `path` under their header: the widest row's columns
/// (`T::default()`'s for an empty table), a narrower row's missing ones
/// empty (loss.csv's runs).
pub fn write_rows<T: Serialize + Default>(
    path: &Path,
    rows: &[T],
    numbers: Numbers,
) -> Result<(), AnalysisError> {
    let header = || Cells::of(&T::default(), numbers).map(|c| c.names);
    write_records(path, records(rows, numbers, header))
}

/// `rows` as [`write_rows`] writes them with [`Numbers::Csv`], but no
/// rows an empty file (no header): the fleet's and history's tables,
/// which have always written nothing for none.
pub fn write_rows_or_empty<T: Serialize>(path: &Path, rows: &[T]) -> Result<(), AnalysisError> {
    write_records(path, records(rows, Numbers::Csv, || Ok(Vec::new())))
}

/// Writes `records` (an empty header: none) to `path` as CSV.
fn write_records(
    path: &Path,
    records: Result<Vec<Vec<String>>, std::io::Error>,
) -> Result<(), AnalysisError> {
    let records = records.map_err(|e| AnalysisError::write(path, e))?;
    let rows = records.iter().filter(|r| !r.is_empty());
    write_csv(
        path,
        csv_of(|w| rows.clone().try_for_each(|r| w.write_record(r))),
    )
}

/// The header [`write_rows`] writes above `rows`; for none, the row type's
/// columns in order.
pub fn header<T: Serialize + Default>(rows: &[T]) -> Vec<String> {
    let default = || Cells::of(&T::default(), Numbers::Plain).map(|c| c.names);
    records(rows, Numbers::Plain, default)
        .map(|mut r| r.swap_remove(0))
        .unwrap_or_default()
}

/// The header (`empty`'s for no rows), then each row's cells under it.
fn records<T: Serialize>(
    rows: &[T],
    numbers: Numbers,
    empty: impl FnOnce() -> Result<Vec<String>, Error>,
) -> Result<Vec<Vec<String>>, std::io::Error> {
    let other = |e: Error| std::io::Error::other(e.to_string());
    let cells = rows
        .iter()
        .map(|r| Cells::of(r, numbers))
        .collect::<Result<Vec<_>, _>>()
        .map_err(other)?;
    let header = match cells.iter().rev().max_by_key(|c| c.names.len()) {
        Some(widest) => widest.names.clone(),
        None => empty().map_err(other)?,
    };
    let mut out = vec![header.clone()];
    for c in cells {
        if let Some(n) = c.names.iter().find(|n| !header.contains(n)) {
            return Err(std::io::Error::other(format!(
                "column {n} is not in the header"
            )));
        }
        out.push(
            header
                .iter()
                .map(|h| {
                    let i = c.names.iter().position(|n| n == h);
                    i.map(|i| c.values[i].clone()).unwrap_or_default()
                })
                .collect(),
        );
    }
    Ok(out)
}

/// What the interval helpers take: an `Estimate`, or an
/// `Option<Estimate>` (none: empty cells).
pub trait Interval: Copy + Into<Option<Estimate>> {}

impl<T: Copy + Into<Option<Estimate>>> Interval for T {}

/// Cells named by `names` (space-separated; in each, `{k}` is the field's
/// name, `{b}` and `{u}` its name before and after its last `_`), each
/// empty where `values` is `None`.
pub fn cells<S: ser::Serializer, const N: usize>(
    s: S,
    names: &'static str,
    values: Option<[f64; N]>,
) -> Result<S::Ok, S::Error> {
    let mut t = s.serialize_tuple_struct(names, N)?;
    for i in 0..N {
        t.serialize_field(&values.map(|v| v[i]))?;
    }
    t.end()
}

/// An interval as `name`, `base_lo_unit`, `base_hi_unit`, `base_se_unit`
/// (per_sample.csv: `direct_ns`, `direct_lo_ns`, ...).
pub fn lo_hi_se<S: ser::Serializer>(e: &impl Interval, s: S) -> Result<S::Ok, S::Error> {
    let v = (*e).into().map(|e| [e.value, e.lo, e.hi, e.se]);
    cells(s, "{k} {b}_lo_{u} {b}_hi_{u} {b}_se_{u}", v)
}

/// An interval as `name`, `base_lo_unit`, `base_hi_unit` (util.csv:
/// `util_pct`, `util_lo_pct`, `util_hi_pct`).
pub fn lo_hi_unit<S: ser::Serializer>(e: &impl Interval, s: S) -> Result<S::Ok, S::Error> {
    let v = (*e).into().map(|e| [e.value, e.lo, e.hi]);
    cells(s, "{k} {b}_lo_{u} {b}_hi_{u}", v)
}

/// An interval as `name`, `name_lo`, `name_hi` (by_contents.csv,
/// profiler.csv's `excess_episodes_per_s`).
pub fn lo_hi<S: ser::Serializer>(e: &impl Interval, s: S) -> Result<S::Ok, S::Error> {
    let v = (*e).into().map(|e| [e.value, e.lo, e.hi]);
    cells(s, "{k} {k}_lo {k}_hi", v)
}

/// An estimate's value alone.
pub fn value<S: ser::Serializer>(e: &impl Interval, s: S) -> Result<S::Ok, S::Error> {
    (*e).into().map(|e| e.value).serialize(s)
}

/// `yes`, `no`, or empty.
pub fn yes_no<S: ser::Serializer>(v: &Option<bool>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(v.map_or("", |y| if y { "yes" } else { "no" }))
}

/// Values space-separated in one cell.
pub fn spaced<S: ser::Serializer, T: ToString>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
    let words: Vec<String> = v.iter().map(T::to_string).collect();
    s.serialize_str(&words.join(" "))
}

/// One row as named cells: the serializer behind [`write_rows`].
#[derive(Debug)]
struct Cells {
    numbers: Numbers,
    /// The column the next value fills.
    key: String,
    names: Vec<String>,
    values: Vec<String>,
}

type Error = serde::de::value::Error;

impl Cells {
    fn of<T: Serialize>(row: &T, numbers: Numbers) -> Result<Self, Error> {
        let mut c = Cells {
            numbers,
            key: String::new(),
            names: Vec::new(),
            values: Vec::new(),
        };
        row.serialize(&mut c)?;
        Ok(c)
    }

    fn push(&mut self, v: String) -> Result<(), Error> {
        self.names.push(self.key.clone());
        self.values.push(v);
        Ok(())
    }

    fn number(&mut self, v: f64) -> Result<(), Error> {
        self.push(match self.numbers {
            Numbers::Csv => ryu::Buffer::new().format(v).to_owned(),
            Numbers::Plain if !v.is_finite() => String::new(),
            Numbers::Plain | Numbers::PlainNaN => v.to_string(),
        })
    }
}

fn unsupported(what: &str) -> Error {
    ser::Error::custom(format!("a CSV row cannot hold {what}"))
}

macro_rules! display {
    ($($f:ident: $t:ty),*) => {$(
        fn $f(self, v: $t) -> Result<(), Error> {
            self.push(v.to_string())
        }
    )*};
}

/// Serializer methods for what a row cannot hold: an error naming it.
macro_rules! unsupported {
    ($($f:ident($($a:ty),*) -> $r:ty: $what:literal),*) => {$(
        fn $f(self, $(_: $a),*) -> Result<$r, Error> {
            Err(unsupported($what))
        }
    )*};
}

/// Serializer methods that write an empty cell.
macro_rules! empty {
    ($($f:ident($($a:ty),*)),*) => {$(
        fn $f(self, $(_: $a),*) -> Result<(), Error> {
            self.push(String::new())
        }
    )*};
}

/// The `end` of a compound serializer: nothing left to write.
macro_rules! end {
    () => {
        fn end(self) -> Result<(), Error> {
            Ok(())
        }
    };
}

impl<'a> ser::Serializer for &'a mut Cells {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Runs<'a>;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Named<'a>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), Error>;

    display!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
        serialize_u64: u64, serialize_char: char, serialize_str: &str);

    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.number(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.number(v)
    }
    empty!(
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str)
    );
    unsupported!(serialize_bytes(&[u8]) -> (): "bytes",
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Self::SerializeTupleVariant:
            "an enum with data",
        serialize_map(Option<usize>) -> Self::SerializeMap: "a map",
        serialize_struct_variant(&'static str, u32, &'static str, usize)
            -> Self::SerializeStructVariant: "an enum with data");

    fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, v: &'static str) -> Result<(), Error> {
        self.push(v.to_string())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        Err(unsupported("an enum with data"))
    }
    /// A sequence is one column per element: `run1`, `run2`, ...
    fn serialize_seq(self, _: Option<usize>) -> Result<Runs<'a>, Error> {
        let base = self.key.clone();
        Ok(Runs {
            cells: self,
            base,
            i: 0,
        })
    }
    /// A tuple's elements in turn (a row written with an extra column).
    fn serialize_tuple(self, _: usize) -> Result<Self, Error> {
        Ok(self)
    }
    /// A tuple struct's name names its columns ([`cells`]).
    fn serialize_tuple_struct(self, names: &'static str, _: usize) -> Result<Named<'a>, Error> {
        let k = self.key.clone();
        let (b, u) = k.rsplit_once('_').unwrap_or((&k, ""));
        let names = names
            .split(' ')
            .map(|n| n.replace("{k}", &k).replace("{b}", b).replace("{u}", u))
            .collect::<Vec<_>>();
        Ok(Named {
            cells: self,
            names: names.into_iter(),
        })
    }
    /// A struct's fields, each named by its key; a struct inside a row
    /// adds its fields to the row's.
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Error> {
        Ok(self)
    }
}

impl SerializeStruct for &mut Cells {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        key.clone_into(&mut self.key);
        v.serialize(&mut **self)
    }
    end!();
}

impl SerializeTuple for &mut Cells {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, v: &T) -> Result<(), Error> {
        v.serialize(&mut **self)
    }
    end!();
}

/// The columns of a sequence field, `name1`, `name2`, ...
struct Runs<'a> {
    cells: &'a mut Cells,
    base: String,
    i: usize,
}

impl ser::SerializeSeq for Runs<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, v: &T) -> Result<(), Error> {
        self.i += 1;
        self.cells.key = format!("{}{}", self.base, self.i);
        v.serialize(&mut *self.cells)
    }
    end!();
}

/// The columns of a field written by [`cells`], named in turn.
struct Named<'a> {
    cells: &'a mut Cells,
    names: std::vec::IntoIter<String>,
}

impl SerializeTupleStruct for Named<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, v: &T) -> Result<(), Error> {
        self.cells.key = self
            .names
            .next()
            .ok_or_else(|| unsupported("an unnamed column"))?;
        v.serialize(&mut *self.cells)
    }
    end!();
}

/// The CSV that `fill` writes.
pub(crate) fn csv_of(
    fill: impl FnOnce(&mut csv::Writer<Vec<u8>>) -> csv::Result<()>,
) -> csv::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    fill(&mut w)?;
    w.into_inner().map_err(|e| e.into_error().into())
}

/// `header`, then `rows`, as CSV.
pub fn csv_records(header: &[String], rows: &[Vec<String>]) -> csv::Result<Vec<u8>> {
    csv_of(|w| {
        std::iter::once(header)
            .chain(rows.iter().map(Vec::as_slice))
            .try_for_each(|r| w.write_record(r))
    })
}

/// Writes `csv` to `path`.
pub(crate) fn write_csv(path: &Path, csv: csv::Result<Vec<u8>>) -> Result<(), AnalysisError> {
    let bytes = csv.map_err(|e| AnalysisError::write(path, std::io::Error::other(e)))?;
    std::fs::write(path, bytes).map_err(|e| AnalysisError::write(path, e))
}

/// A Markdown table: `header` (its cells joined by ` | `), its rule, then
/// a line per row (cells joined by ` | ` too).
pub fn markdown_table(header: &str, rows: impl IntoIterator<Item = String>) -> String {
    let rule = "---|".repeat(header.split(" | ").count());
    let mut s = format!("| {header} |\n|{rule}\n");
    for r in rows {
        let _ = writeln!(s, "| {r} |");
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A row with every kind of column.
    #[derive(Default, Serialize)]
    struct Every {
        freq_hz: u64,
        run: Vec<u64>,
        #[serde(serialize_with = "lo_hi_se")]
        direct_ns: Estimate,
        #[serde(serialize_with = "lo_hi")]
        handler_ns: Option<Estimate>,
        mean: f64,
        n_runs: Option<usize>,
        method: String,
    }

    fn text(rows: &[Every], numbers: Numbers) -> String {
        records(rows, numbers, || Ok(Vec::new()))
            .unwrap()
            .iter()
            .map(|r| r.join(","))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_header_follows_the_fields_and_each_row_fills_it() {
        assert_eq!(
            header::<Every>(&[]).join(","),
            "freq_hz,direct_ns,direct_lo_ns,direct_hi_ns,direct_se_ns,\
             handler_ns,handler_ns_lo,handler_ns_hi,mean,n_runs,method"
        );
        let e = Estimate {
            value: 1.5,
            lo: f64::NAN,
            hi: 2.0,
            se: 0.0000001,
            n: 3,
        };
        let rows = [
            Every {
                freq_hz: 100,
                run: vec![7],
                direct_ns: e,
                handler_ns: None,
                mean: f64::INFINITY,
                n_runs: None,
                method: "t".into(),
            },
            Every {
                run: vec![1, 2],
                handler_ns: Some(e),
                mean: f64::NAN,
                ..Every::default()
            },
        ];
        assert_eq!(
            text(&rows, Numbers::Plain),
            "freq_hz,run1,run2,direct_ns,direct_lo_ns,direct_hi_ns,direct_se_ns,\
             handler_ns,handler_ns_lo,handler_ns_hi,mean,n_runs,method\n\
             100,7,,1.5,,2,0.0000001,,,,,,t\n\
             0,1,2,0,0,0,0,1.5,,2,,,"
        );
        assert!(text(&rows, Numbers::PlainNaN).ends_with("0,1,2,0,0,0,0,1.5,NaN,2,NaN,,"));
    }
}
