//! The report's section "Request latency" and its files,
//! `report/latency.csv` (per rate, request size and percentile) and
//! `report/latency_runs.csv` (per run and size).

use std::fmt::Write as _;
use std::path::Path;

use crate::format::lines_after;
use crate::latency::size_label;
use crate::latency::table::{LatencyRow, LatencyTable};

fn hz(f: u64) -> String {
    format!("{f} Hz")
}

/// The section, Markdown: what the table shows, in sentences (the table is
/// latency.csv); for a set without gaps runs, the sentence that says how
/// to get it.
pub fn render(t: Option<&LatencyTable>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## Request latency\n");
    let Some(t) = t.filter(|t| !t.rows.is_empty()) else {
        let _ = writeln!(
            s,
            "Request latency needs the gaps design (its timeline times every interruption): `driver sweep --design gaps` (the default designs include it).\n"
        );
        return s;
    };
    let _ = writeln!(
        s,
        "Requests of W of the loop's work laid over each gaps run's timeline: the percentile added at each rate, measured against the same block's 0 Hz run and predicted from the costs measured (latency.csv; each run: latency_runs.csv; method: docs/methodology.md, \"Request latency\").\n"
    );
    lines_after(&mut s, "- ", findings(t));
    s.push('\n');
    s
}

/// What the table shows, in sentences: where measured and predicted
/// disagree, what the rates the runs could not resolve lack, and whether
/// periodic timing matters.
fn findings(t: &LatencyTable) -> Vec<String> {
    let mut out = Vec::new();
    let both: Vec<&LatencyRow> = t.rows.iter().filter(|r| r.agrees().is_some()).collect();
    let off = both.iter().filter(|r| r.agrees() == Some(false));
    let off: Vec<String> = (off)
        .map(|r| {
            let (d, p) = (r.difference, r.percentile);
            let (v, lo, hi) = (d.value / 1e3, d.lo / 1e3, d.hi / 1e3);
            let (f, size) = (hz(r.freq_hz), size_label(r.size_ns));
            format!("{f} {size} p{p} by {v:+.1} us [{lo:+.1}, {hi:+.1}]")
        })
        .collect();
    if off.is_empty() {
        out.push(format!(
            "Measured and predicted agree within their intervals at all {} rates, sizes and percentiles both resolve.",
            both.len()
        ));
    } else {
        out.push(format!(
            "Measured and predicted agree at {} of {}; measured - predicted where they do not: {}.",
            both.len() - off.len(),
            both.len(),
            off.join("; ")
        ));
    }
    let unresolved = t.rows.iter().filter(|r| {
        r.percentile == 50.0 && !r.measured.value.is_finite() && r.predicted.value.is_finite()
    });
    let unresolved: Vec<String> = (unresolved)
        .map(|r| format!("{} {}", hz(r.freq_hz), size_label(r.size_ns)))
        .collect();
    if !unresolved.is_empty() {
        out.push(format!(
            "Measured nowhere, predicted only: {} (the runs hold too few such requests, or their raw files were thinned to 10 ms slices that these requests outlast).",
            unresolved.join(", ")
        ));
    }
    // Periodic against Poisson: the largest difference in the added p99.
    let finite = |r: &&LatencyRow| {
        let values = [r.measured.value, r.predicted.value, r.poisson.value];
        r.percentile == 99.0 && values.iter().all(|v| v.is_finite())
    };
    let apart = |r: &&LatencyRow| (r.poisson.value - r.predicted.value).abs();
    let p99 = t.rows.iter().filter(finite);
    let gap = p99.max_by(|a, b| apart(a).total_cmp(&apart(b)));
    if let Some(r) = gap {
        out.push(format!(
            "Periodic or Poisson timing: the samples are periodic (a per-CPU timer); timed as Poisson arrivals instead, the added p99 would differ by up to {:+.1} us where it is measured ({} {} requests: {:+.1} against {:+.1} us): a periodic timer puts W x rate samples in a request, give or take one, where Poisson arrivals vary by their square root.",
            (r.poisson.value - r.predicted.value) / 1e3,
            hz(r.freq_hz),
            size_label(r.size_ns),
            r.poisson.value / 1e3,
            r.predicted.value / 1e3
        ));
    }
    out
}

/// The latency plot: the added p99 against the rate, one series per
/// request size (measured, with its interval), the model's prediction as
/// each size's line, and the budget of 5 % of a 1 ms request's p99 at 0 Hz
/// as a horizontal line. Log-log: points at or below 0 are left out, with
/// a note under the title. `latency.svg` and `latency.png` in `out`.
pub fn plot(
    out: &Path,
    t: &LatencyTable,
) -> Option<Result<Vec<std::path::PathBuf>, crate::plot::PlotError>> {
    use crate::plot::{Axes, FitLine, PointSeries, plot_vs_freq};
    let p99: Vec<&LatencyRow> = t.rows.iter().filter(|r| r.percentile == 99.0).collect();
    let sizes = crate::stats::distinct_sorted(p99.iter().map(|r| r.size_ns));
    let mut series = Vec::new();
    let mut lines = Vec::new();
    for &size in &sizes {
        let at = p99
            .iter()
            .filter(|r| r.size_ns == size && r.measured.value.is_finite());
        let at: Vec<&&LatencyRow> = at.collect();
        if !at.is_empty() {
            let us = (at.iter().map(|r| (r.freq_hz as f64, r.measured)))
                .map(|(f, e)| [f, e.value / 1e3, e.lo / 1e3, e.hi / 1e3]);
            let label = format!("{} requests, measured", size_label(size));
            series.push(PointSeries::with_bars(label, us));
        }
        let curve = p99
            .iter()
            .filter(|r| r.size_ns == size && r.predicted.value > 0.0);
        let curve: Vec<(f64, f64)> =
            (curve.map(|r| (r.freq_hz as f64, r.predicted.value / 1e3))).collect();
        if curve.len() >= 2 {
            // The measured series' colour, or the next free one.
            let colour = if at.is_empty() {
                crate::plot::series_colour(sizes.len() + lines.len())
            } else {
                crate::plot::series_colour(series.len() - 1)
            };
            lines.push(FitLine {
                label: format!("{} predicted", size_label(size)),
                curve,
                colour: Some(colour),
                ..FitLine::default()
            });
        }
    }
    if series.is_empty() && lines.is_empty() {
        return None;
    }
    let line = p99
        .iter()
        .find(|r| r.size_ns == crate::latency::at_rate::LINE_SIZE_NS);
    let budget_us = line.map(|r| r.baseline_ns * 0.05 / 1e3);
    let budget_us = budget_us.filter(|b| b.is_finite() && *b > 0.0);
    if let (Some(b), Some(lo), Some(hi)) = (
        budget_us,
        t.rows.iter().map(|r| r.freq_hz).min(),
        t.rows.iter().map(|r| r.freq_hz).max(),
    ) {
        lines.push(FitLine {
            label: "budget: +5 % of a 1 ms request's p99".into(),
            curve: vec![(lo as f64, b), (hi as f64, b)],
            label_at_end: true,
            colour: Some((230, 159, 0)),
            ..FitLine::default()
        });
    }
    Some(plot_vs_freq(
        "What sampling adds to a request's p99",
        ("sampling rate (Hz)", "added p99 over 0 Hz (us)"),
        &series,
        &lines,
        Axes::LOG_LOG,
        &out.join("latency"),
    ))
}
