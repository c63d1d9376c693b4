//! `analysis history`'s outputs: the answer box, history.md, checks.csv,
//! periods.csv and the cost over time (history_cost.svg/png).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{History, Period};
use crate::columns::{markdown_table, write_rows_or_empty};
use crate::error::AnalysisError;
use crate::plot::{Axes, FitLine, PointSeries, plot_vs_freq};

fn us(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{:.1}", x / 1000.0))
}

fn hz(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.0} Hz"))
}

fn set_hz(v: Option<f64>) -> String {
    v.and_then(crate::recommend::nice_prime_below)
        .map_or_else(|| "-".into(), |p| format!("{p} Hz"))
}

fn word(p: Period) -> &'static str {
    match p {
        Period::Day => "day",
        Period::Hour => "hour",
    }
}

/// The answer, first: the rate that held on every period and on 95 % of
/// them, the cost's spread, the periods that moved.
pub fn answer_box(h: &History) -> Vec<String> {
    let w = word(h.period);
    let budget = (h.budget_pct).map_or_else(|| "no budget".into(), |b| format!("{b} %"));
    let (host, rate, subject) = (h.hostname.as_deref().unwrap_or("?"), h.rate_hz, &h.subject);
    let (checks, span) = (h.checks.len(), h.span_hours);
    let periods = crate::format::plural(h.periods.len(), w);
    let (every, every_set) = (hz(h.held_every_hz), set_hz(h.held_every_hz));
    let (p95, p95_set) = (hz(h.held_95_hz), set_hz(h.held_95_hz));
    let (median, lo, hi) = (us(h.median_cost_ns), us(h.cost_min_ns), us(h.cost_max_ns));
    let cv = (h.cost_cv).map_or_else(|| "-".into(), |c| format!("{:.1} %", c * 100.0));
    let moved: Vec<String> = h
        .periods
        .iter()
        .filter_map(|p| Some((&p.period, p.moved?, p.ratio_to_median.unwrap_or(f64::NAN))))
        .map(|(period, m, ratio)| format!("{period} {m} (x{ratio:.2})"))
        .collect();
    let moved = match moved.is_empty() {
        true => format!("  no {w} moved beyond the run-to-run spread"),
        false => format!("  moved beyond the run-to-run spread: {}", moved.join(", ")),
    };
    let mut lines = vec![
        format!(
            "History of {host} at {rate} Hz, {subject}: {checks} checks over {span:.1} h, {periods}; budget {budget}"
        ),
        format!(
            "  held on every {w} measured: {every} (set {every_set}); on 95 % of {w}s: {p95} (set {p95_set})"
        ),
        format!("  cost per sample over the checks: median {median} us, {lo} to {hi} us (CV {cv})"),
        moved,
    ];
    lines.extend(h.notes.iter().map(|n| format!("  ! {n}")));
    lines
}

/// Writes the report into `out`; returns history.md's path.
pub fn write(out: &Path, h: &History) -> Result<PathBuf, AnalysisError> {
    std::fs::create_dir_all(out).map_err(|e| AnalysisError::write(out, e))?;
    write_rows_or_empty(&out.join("checks.csv"), &h.checks)?;
    write_rows_or_empty(&out.join("periods.csv"), &h.periods)?;
    let figure = figure(out, h);
    let p = out.join("history.md");
    std::fs::write(&p, markdown(h, figure.err())).map_err(|e| AnalysisError::write(&p, e))?;
    Ok(p)
}

fn markdown(h: &History, figure_error: Option<AnalysisError>) -> String {
    let w = word(h.period);
    let mut md = format!(
        "# Check history: {} at {} Hz\n\n```\n{}\n```\n\n",
        h.hostname.as_deref().unwrap_or("?"),
        h.rate_hz,
        answer_box(h).join("\n")
    );
    let _ = writeln!(
        md,
        "Each check's cost per sample is the gaps design's against 0 Hz (`driver check`), with its 95 % confidence interval over its runs. \
         {A}'s rate is the lowest that any of its checks supports at the budget (the check's prediction interval's upper end); \
         the rate that held on every {w} is the lowest of those, and on 95 % of {w}s their type-7 5th percentile. \
         {A} moved beyond the run-to-run spread when every check's interval that {w} lies above (or below) the median of all checks.\n",
        A = if h.period == Period::Day {
            "A day"
        } else {
            "An hour"
        }
    );
    match figure_error {
        None => md.push_str("![cost per sample over time](history_cost.svg)\n\n"),
        Some(e) => {
            let _ = writeln!(md, "(the figure could not be drawn: {e})\n");
        }
    }
    let _ = writeln!(md, "## By {w}\n");
    let header =
        " | checks | median cost, us | lowest-highest, us | rate that held | within budget | moved";
    md += &markdown_table(
        &format!("{w}{header}"),
        h.periods.iter().map(|p| {
            let moved = p.moved.map_or_else(
                || "-".into(),
                |m| format!("{m} x{:.2}", p.ratio_to_median.unwrap_or(f64::NAN)),
            );
            let (period, checks, median) = (&p.period, p.checks, us(p.cost_median_ns));
            let (lo, hi, rate) = (us(p.cost_min_ns), us(p.cost_max_ns), hz(p.max_hz));
            let within = if p.within_budget { "yes" } else { "no" };
            format!("{period} | {checks} | {median} | {lo}-{hi} | {rate} | {within} | {moved}")
        }),
    );
    md.push_str("\n## Every check\n\n");
    let header =
        "started | cost, us [95 % CI] | PI upper, us | rate within budget | within | runs (noisy)";
    md += &markdown_table(
        header,
        h.checks.iter().map(|c| {
            let (cost, lo, hi) = (us(c.cost_ns), us(c.cost_lo_ns), us(c.cost_hi_ns));
            let (pred, rate) = (us(c.cost_pred_hi_ns), hz(c.max_hz));
            let within = match c.within_budget {
                Some(true) => "yes",
                Some(false) => "no",
                None => "unresolved",
            };
            let (runs, noisy) = (c.runs.unwrap_or(0), c.noisy_runs.unwrap_or(0));
            let started = &c.started_at;
            format!(
                "{started} | {cost} [{lo}, {hi}] | {pred} | {rate} | {within} | {runs} ({noisy})"
            )
        }),
    );
    md.push_str("\nFiles: checks.csv (one row per check), periods.csv (one per period), history_cost.svg/png.\n");
    md
}

/// The cost per sample of every check with its 95 % CI against hours
/// since the first, the median, and the cost that spends the whole budget
/// at the rate.
fn figure(out: &Path, h: &History) -> Result<Vec<PathBuf>, AnalysisError> {
    let time = |c: &super::CheckPoint| chrono::DateTime::parse_from_rfc3339(&c.started_at).ok();
    let t0 = h.checks.iter().filter_map(time).min();
    let points = h.checks.iter().filter_map(|c| {
        let (t, y) = (time(c)?, c.cost_ns?);
        let x = (t - t0?).num_seconds() as f64 / 3600.0;
        let (lo, hi) = (c.cost_lo_ns.unwrap_or(y), c.cost_hi_ns.unwrap_or(y));
        Some([x, y / 1000.0, lo / 1000.0, hi / 1000.0])
    });
    let s = PointSeries::with_bars(
        format!("cost per sample at {} Hz (95 % CI)", h.rate_hz),
        points,
    );
    let mut lines = Vec::new();
    if let Some(m) = h.median_cost_ns {
        let label = format!("median {:.1} us", m / 1000.0);
        lines.push(FitLine::level(label, m / 1000.0, (120, 120, 120)));
    }
    if let (Some(b), Some(max)) = (h.budget_pct, h.cost_max_ns) {
        let whole = b / 100.0 / h.rate_hz as f64 * 1e6;
        if whole <= max / 1000.0 * 3.0 {
            let label = format!("{b} % at {} Hz", h.rate_hz);
            lines.push(FitLine::level(label, whole, (200, 60, 60)));
        }
    }
    let t0_text = t0.map_or_else(String::new, |t| t.format("%Y-%m-%d %H:%M UTC").to_string());
    let host = h.hostname.as_deref().unwrap_or("?");
    let x_label = format!("hours since {t0_text}");
    let labels = (x_label.as_str(), "cost per sample, us (95 % CI)");
    let title = format!("Cost per sample per check, {host}");
    let stem = out.join("history_cost");
    let axes = Axes {
        y_include: Some(0.0),
        ..Axes::LINEAR
    };
    plot_vs_freq(&title, labels, &[s], &lines, axes, &stem).map_err(AnalysisError::from)
}
