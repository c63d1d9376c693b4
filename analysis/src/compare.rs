//! `analysis compare DIR DIR...`: result sets side by side, always with the
//! 2014 reference as one column.

use std::collections::BTreeSet;
use std::path::Path;

use crate::answer::budget_answers;
use crate::error::AnalysisError;
use crate::format::fmt_est;
use crate::load::load;
use crate::pipeline::Findings;
use crate::pipeline::analyse;
use crate::recommend::BUDGETS_PCT;
use crate::reference::{ARTICLE_DELTA_PCT_PER_KHZ, Reference};
use crate::row_types::LossRow;
use crate::stats::Estimate;

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
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.display().to_string());
        let host = rs.manifest.host_label(dir);
        let label = if name.contains(&host) {
            name
        } else {
            format!("{host} ({name})")
        };
        Ok(Self {
            label,
            cpu: rs.manifest.host_str("cpu_model").unwrap_or_default(),
            a,
        })
    }

    /// The profiler table's row at `f` (a `--profiler` set).
    fn profiler_row(&self, f: u64) -> Option<&crate::subject::profiler::ProfilerRow> {
        let t = self.a.subject.profiler.as_ref()?;
        t.rows.iter().find(|r| r.freq_hz == f)
    }

    /// The per-sample table's row at `f` (the gaps design).
    fn per_sample_row(&self, f: u64) -> Option<&crate::percost::PerSampleRow> {
        let ps = self.a.gaps.per_sample.as_ref()?;
        ps.rows.iter().find(|r| r.freq_hz == f)
    }

    /// The throughput loss at `f`: the primary loss row (paired, else whole
    /// runs) with the interval over runs, or a profiler's throughput loss.
    fn throughput_loss_at(&self, f: u64) -> Option<Estimate> {
        if self.a.subject.profiler.is_some() {
            return self.profiler_row(f).map(|r| r.throughput_loss_pct);
        }
        self.a
            .tables
            .primary_loss()
            .into_iter()
            .find(|r| r.freq_hz == f)
            .map(LossRow::trusted)
    }

    /// The loss the cost per sample gives at `f` (rate x cost, the gaps
    /// design's model), or a profiler's excess gap time: what the answer
    /// box shows as the loss where it exists.
    fn predicted_loss_at(&self, f: u64) -> Option<Estimate> {
        if self.a.subject.profiler.is_some() {
            return self.profiler_row(f).map(|r| r.gap_loss_pct);
        }
        self.per_sample_row(f).map(|r| r.predicted_loss_pct)
    }

    /// What one sample (a profiler's interruption) costs the application
    /// at `f`, ns: the gaps design's total.
    fn cost_at(&self, f: u64) -> Option<Estimate> {
        if self.a.subject.profiler.is_some() {
            return self.profiler_row(f).map(|r| r.cost_per_interruption_ns);
        }
        self.per_sample_row(f).map(|r| r.total_ns)
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
fn row(name: String, cells: Vec<String>, reference: String) -> Vec<String> {
    let mut row = vec![name];
    row.extend(cells);
    row.push(reference);
    row
}

/// The rows that describe each result set as a whole: host and sampling
/// set-up, then the fitted cost and loss lines.
fn setup_and_fit_rows(cols: &[Column]) -> Vec<Vec<String>> {
    let cells = |cell: &dyn Fn(&Column) -> String| cols.iter().map(cell).collect::<Vec<_>>();
    vec![
        row(
            "cpu".to_string(),
            cells(&|c| c.cpu.clone()),
            "Intel Xeon E5530 @ 2.40GHz".to_string(),
        ),
        row(
            "sampling event".to_string(),
            cells(&|c| match &c.a.subject.profiler {
                Some(t) => format!("profiler: {}", t.template),
                None => c.a.tables.events.join(", "),
            }),
            "cycles (PMU NMI)".to_string(),
        ),
        row(
            "scope".to_string(),
            cells(&|c| c.a.tables.scopes.join(", ")),
            "system (-a)".to_string(),
        ),
        row(
            "delta util %/kHz (fit through origin)".to_string(),
            cells(&|c| {
                c.a.tables.fits.util_origin.map_or(String::new(), |f| {
                    let (lo, hi) = f.slope_ci();
                    format!("{:.4} [{lo:.4}, {hi:.4}]", f.slope)
                })
            }),
            format!("{ARTICLE_DELTA_PCT_PER_KHZ:.4}"),
        ),
        row(
            "delta, mean of util/kHz (article's estimator)".to_string(),
            cells(&|c| opt(c.a.tables.fits.delta_mean_ratio, 4)),
            format!("{ARTICLE_DELTA_PCT_PER_KHZ:.4}"),
        ),
        row(
            "handler ns per sample".to_string(),
            cells(&|c| opt(c.a.tables.fits.cost_per_sample_ns, 0)),
            format!("{:.0}", ARTICLE_DELTA_PCT_PER_KHZ * 1e4),
        ),
        row(
            "loss % = a + b f: a (%)".to_string(),
            cells(&|c| opt(c.a.tables.fits.loss_line.map(|f| f.intercept), 3)),
            String::new(),
        ),
        row(
            "loss % = a + b f: b (%/kHz)".to_string(),
            cells(&|c| opt(c.a.tables.fits.loss_line.map(|f| f.slope), 4)),
            String::new(),
        ),
        row(
            "loss slope / util slope".to_string(),
            cells(&|c| opt(c.a.tables.fits.loss_to_util_slope_ratio, 2)),
            String::new(),
        ),
    ]
}

/// The answer first: the highest rate within each report budget, as each
/// set's answer box gives it.
fn answer_rows(cols: &[Column]) -> Vec<Vec<String>> {
    let answers: Vec<Vec<(f64, String)>> = cols.iter().map(|c| budget_answers(&c.a)).collect();
    BUDGETS_PCT
        .iter()
        .map(|&b| {
            let cells = answers
                .iter()
                .map(|a| {
                    a.iter()
                        .find(|(budget, _)| *budget == b)
                        .map_or(String::new(), |(_, words)| words.clone())
                })
                .collect();
            row(
                format!("highest rate within {b} % loss"),
                cells,
                String::new(),
            )
        })
        .collect()
}

/// A row per frequency that the reference or any result set measured:
/// first what one sample costs (gaps design), then every utilisation, then
/// every loss (the interval each report uses: over runs).
fn per_freq_rows(cols: &[Column], reference: &Reference) -> Vec<Vec<String>> {
    let mut freqs: BTreeSet<u64> = reference.util.iter().map(|(f, _)| *f).collect();
    for c in cols {
        freqs.extend(c.freqs());
    }
    let cost_row = |f: u64| {
        let cells = cols
            .iter()
            .map(|c| c.cost_at(f).map_or(String::new(), |e| fmt_est(&e, 0)));
        row(
            format!("cost per sample ns at {f} Hz"),
            cells.collect(),
            String::new(),
        )
    };
    let util_row = |f: u64| {
        let cells = cols.iter().map(|c| {
            c.a.tables
                .util
                .iter()
                .find(|r| r.freq_hz == f)
                .map_or(String::new(), |r| fmt_est(&r.util_pct, 4))
        });
        row(
            format!("util % at {f} Hz"),
            cells.collect(),
            opt(reference.util_at(f), 4),
        )
    };
    let predicted_row = |f: u64| {
        let cells = cols.iter().map(|c| {
            c.predicted_loss_at(f)
                .map_or(String::new(), |e| fmt_est(&e, 3))
        });
        row(
            format!("predicted loss % at {f} Hz (rate x cost; a profiler's gap time)"),
            cells.collect(),
            String::new(),
        )
    };
    let loss_row = |f: u64| {
        let cells = cols.iter().map(|c| {
            c.throughput_loss_at(f)
                .map_or(String::new(), |e| fmt_est(&e, 3))
        });
        row(
            format!("throughput loss % at {f} Hz"),
            cells.collect(),
            opt(reference.loss_at(f), 2),
        )
    };
    // A row only where some set or the reference has a value (a profiler's
    // 19 Hz has no util row anywhere).
    let cost_rows = freqs.iter().map(|&f| cost_row(f));
    cost_rows
        .chain(freqs.iter().map(|&f| predicted_row(f)))
        .chain(freqs.iter().map(|&f| util_row(f)))
        .chain(freqs.iter().map(|&f| loss_row(f)))
        .filter(|r| r[1..].iter().any(|c| !c.is_empty()))
        .collect()
}

/// Build the comparison of `dirs` (each a results directory).
pub fn compare(dirs: &[&Path]) -> Result<Comparison, AnalysisError> {
    let reference = Reference::article_2014()?;
    let cols = dirs
        .iter()
        .map(|dir| Column::load(dir))
        .collect::<Result<Vec<_>, _>>()?;
    let mut header = vec!["quantity".to_string()];
    header.extend(cols.iter().map(|c| c.label.clone()));
    header.push("2014 reference".to_string());
    let mut rows = answer_rows(&cols);
    rows.extend(setup_and_fit_rows(&cols));
    rows.extend(per_freq_rows(&cols, &reference));
    Ok(Comparison { header, rows })
}

impl Comparison {
    /// Markdown table.
    pub fn to_markdown(&self) -> String {
        let esc = |s: &str| s.replace('|', "\\|");
        let mut s = format!(
            "| {} |\n|{}\n",
            self.header
                .iter()
                .map(|h| esc(h))
                .collect::<Vec<_>>()
                .join(" | "),
            "---|".repeat(self.header.len())
        );
        for row in &self.rows {
            s.push_str(&format!(
                "| {} |\n",
                row.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
            ));
        }
        s
    }

    /// CSV.
    pub fn to_csv(&self) -> Result<String, AnalysisError> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let err = |e: csv::Error| AnalysisError::write("CSV output", std::io::Error::other(e));
        w.write_record(&self.header).map_err(err)?;
        for row in &self.rows {
            w.write_record(row).map_err(err)?;
        }
        let bytes = w.into_inner().map_err(|e| {
            AnalysisError::write("CSV output", std::io::Error::other(e.to_string()))
        })?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}
