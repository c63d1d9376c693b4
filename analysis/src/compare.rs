//! `analysis compare DIR DIR...`: result sets side by side, always with the
//! 2014 reference as one column.

use std::collections::BTreeSet;
use std::path::Path;

use crate::answer::budget_answers;
use crate::columns::{csv_records, markdown_table};
use crate::error::AnalysisError;
use crate::format::fmt_est;
use crate::load::load;
use crate::pipeline::Findings;
use crate::pipeline::analyse;
use crate::recommend::BUDGETS_PCT;
use crate::reference::{ARTICLE_DELTA_PCT_PER_KHZ, Reference};
use crate::row_types::LossRow;
use crate::stats::Estimate;
use crate::tables::Fits;

/// A comparison table: a header and rows of cells (first cell = quantity).
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// One result set's column: its label, its CPU and its analysis.
struct Column {
    label: String,
    cpu: String,
    a: Findings,
}

impl Column {
    /// Load and analyse the results directory `dir`; the label is the
    /// directory's name, with the host in front unless the name has it.
    fn load(dir: &Path) -> Result<Self, AnalysisError> {
        let rs = load(dir)?;
        let a = analyse(&rs)?;
        let name = (dir.file_name()).map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let host = rs.manifest.host_label(dir);
        let label = if name.contains(&host) {
            name
        } else {
            format!("{host} ({name})")
        };
        let cpu = rs.manifest.host_str("cpu_model").unwrap_or_default();
        Ok(Self { label, cpu, a })
    }

    /// At `f`: the throughput loss (the primary loss row, paired else
    /// whole runs, with the interval over runs), the loss the cost per
    /// sample gives (rate x cost, the gaps design's model: what the answer
    /// box shows as the loss where it exists) and what one sample costs
    /// the application, ns; for a profiler its throughput loss, its excess
    /// gap time and the cost of one interruption; then the handler's
    /// utilisation.
    fn at(&self, f: u64) -> [Option<Estimate>; 4] {
        let util = self.a.tables.util.iter().find(|r| r.freq_hz == f);
        let util = util.map(|r| r.util_pct);
        if let Some(t) = &self.a.subject.profiler {
            let r = t.rows.iter().find(|r| r.freq_hz == f);
            let (loss, gap) = (r.map(|r| r.throughput_loss_pct), r.map(|r| r.gap_loss_pct));
            return [loss, gap, r.map(|r| r.cost_per_interruption_ns), util];
        }
        let loss = self
            .a
            .tables
            .primary_loss()
            .into_iter()
            .find(|r| r.freq_hz == f);
        let ps = self.a.gaps.per_sample.as_ref();
        let row = ps.and_then(|ps| ps.rows.iter().find(|r| r.freq_hz == f));
        [
            loss.map(LossRow::trusted),
            row.map(|r| r.predicted_loss_pct),
            row.map(|r| r.total_ns),
            util,
        ]
    }

    /// The frequencies its loss or cost rows have.
    fn freqs(&self) -> BTreeSet<u64> {
        let mut freqs: BTreeSet<u64> = self.a.tables.util.iter().map(|r| r.freq_hz).collect();
        freqs.extend(self.a.tables.loss.iter().map(|r| r.freq_hz));
        if let Some(ps) = &self.a.gaps.per_sample {
            freqs.extend(ps.rows.iter().map(|r| r.freq_hz));
        }
        if let Some(t) = &self.a.subject.profiler {
            freqs.extend(t.rows.iter().map(|r| r.freq_hz));
        }
        freqs.retain(|&f| f > 0);
        freqs
    }
}

/// `v` with `d` decimals; empty when absent or not finite.
fn opt(v: Option<f64>, d: usize) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.d$}"),
        _ => String::new(),
    }
}

/// One row: the quantity, a cell per column, the 2014 reference's cell.
fn row(name: impl Into<String>, cells: Vec<String>, reference: impl Into<String>) -> Vec<String> {
    let name = std::iter::once(name.into());
    name.chain(cells).chain([reference.into()]).collect()
}

/// The rows that describe each result set as a whole: host and sampling
/// set-up, then the fitted cost and loss lines.
fn setup_and_fit_rows(cols: &[Column]) -> Vec<Vec<String>> {
    let cells = |cell: &dyn Fn(&Column) -> String| cols.iter().map(cell).collect::<Vec<_>>();
    let fit = |value: &dyn Fn(&Fits) -> Option<f64>, d| cells(&|c| opt(value(&c.a.tables.fits), d));
    let delta = format!("{ARTICLE_DELTA_PCT_PER_KHZ:.4}");
    vec![
        row(
            "cpu",
            cells(&|c| c.cpu.clone()),
            "Intel Xeon E5530 @ 2.40GHz",
        ),
        row(
            "sampling event",
            cells(&|c| match &c.a.subject.profiler {
                Some(t) => format!("profiler: {}", t.template),
                None => c.a.tables.events.join(", "),
            }),
            "cycles (PMU NMI)",
        ),
        row(
            "scope",
            cells(&|c| c.a.tables.scopes.join(", ")),
            "system (-a)",
        ),
        row(
            "delta util %/kHz (fit through origin)",
            cells(&|c| {
                c.a.tables.fits.util_origin.map_or(String::new(), |f| {
                    let (lo, hi) = f.slope_ci();
                    format!("{:.4} [{lo:.4}, {hi:.4}]", f.slope)
                })
            }),
            &delta,
        ),
        row(
            "delta, mean of util/kHz (article's estimator)",
            fit(&|f| f.delta_mean_ratio, 4),
            &delta,
        ),
        row(
            "handler ns per sample",
            fit(&|f| f.cost_per_sample_ns, 0),
            format!("{:.0}", ARTICLE_DELTA_PCT_PER_KHZ * 1e4),
        ),
        row(
            "loss % = a + b f: a (%)",
            fit(&|f| f.loss_line.map(|l| l.intercept), 3),
            "",
        ),
        row(
            "loss % = a + b f: b (%/kHz)",
            fit(&|f| f.loss_line.map(|l| l.slope), 4),
            "",
        ),
        row(
            "loss slope / util slope",
            fit(&|f| f.loss_to_util_slope_ratio, 2),
            "",
        ),
    ]
}

/// The answer first: the highest rate within each report budget, as each
/// set's answer box gives it.
fn answer_rows(cols: &[Column]) -> Vec<Vec<String>> {
    let answers: Vec<Vec<(f64, String)>> = cols.iter().map(|c| budget_answers(&c.a)).collect();
    let answer = |a: &Vec<(f64, String)>, b: f64| {
        let words = a.iter().find(|(budget, _)| *budget == b);
        words.map(|(_, words)| words.clone()).unwrap_or_default()
    };
    let cells = |b: f64| answers.iter().map(|a| answer(a, b)).collect();
    let rows = BUDGETS_PCT.iter();
    rows.map(|&b| row(format!("highest rate within {b} % loss"), cells(b), ""))
        .collect()
}

/// A row per frequency that the reference or any result set measured:
/// first what one sample costs (gaps design), then the loss it predicts,
/// then every utilisation, then every loss (the interval each report
/// uses: over runs); a row only where some set or the reference has a
/// value (a profiler's 19 Hz has no util row anywhere).
fn per_freq_rows(cols: &[Column], reference: &Reference) -> Vec<Vec<String>> {
    let mut freqs: BTreeSet<u64> = reference.util.iter().map(|(f, _)| *f).collect();
    for c in cols {
        freqs.extend(c.freqs());
    }
    let at = |i: usize, f: u64, d: usize| -> Vec<String> {
        let cell = |c: &Column| c.at(f)[i].map_or(String::new(), |e| fmt_est(&e, d));
        cols.iter().map(cell).collect()
    };
    let rows =
        |name: &str, cells: &dyn Fn(u64) -> Vec<String>, reference: &dyn Fn(u64) -> String| {
            let name = |f: u64| name.replace("{f}", &f.to_string());
            let rows = freqs.iter().map(|&f| row(name(f), cells(f), reference(f)));
            rows.collect::<Vec<_>>()
        };
    let none = |_: u64| String::new();
    let predicted = "predicted loss % at {f} Hz (rate x cost; a profiler's gap time)";
    [
        rows("cost per sample ns at {f} Hz", &|f| at(2, f, 0), &none),
        rows(predicted, &|f| at(1, f, 3), &none),
        rows("util % at {f} Hz", &|f| at(3, f, 4), &|f| {
            opt(reference.util_at(f), 4)
        }),
        rows("throughput loss % at {f} Hz", &|f| at(0, f, 3), &|f| {
            opt(reference.loss_at(f), 2)
        }),
    ]
    .into_iter()
    .flatten()
    .filter(|r| r[1..].iter().any(|c| !c.is_empty()))
    .collect()
}

/// Build the comparison of `dirs` (each a results directory).
pub fn compare(dirs: &[&Path]) -> Result<Comparison, AnalysisError> {
    let reference = Reference::article_2014()?;
    let cols = dirs.iter().map(|dir| Column::load(dir));
    let cols: Vec<Column> = cols.collect::<Result<_, _>>()?;
    let header = row(
        "quantity",
        cols.iter().map(|c| c.label.clone()).collect(),
        "2014 reference",
    );
    let mut rows = answer_rows(&cols);
    rows.extend(setup_and_fit_rows(&cols));
    rows.extend(per_freq_rows(&cols, &reference));
    Ok(Comparison { header, rows })
}

impl Comparison {
    /// Markdown table.
    pub fn to_markdown(&self) -> String {
        let esc = |r: &Vec<String>| r.iter().map(|c| c.replace('|', "\\|")).collect::<Vec<_>>();
        let rows = self.rows.iter().map(|r| esc(r).join(" | "));
        markdown_table(&esc(&self.header).join(" | "), rows)
    }

    /// CSV.
    pub fn to_csv(&self) -> Result<String, AnalysisError> {
        let bytes = csv_records(&self.header, &self.rows)
            .map_err(|e| AnalysisError::write("CSV output", std::io::Error::other(e)))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}
