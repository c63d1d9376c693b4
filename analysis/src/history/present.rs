//! `analysis history`'s outputs: the answer box, history.md, checks.csv,
//! periods.csv and the cost over time (history_cost.svg/png).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{History, Period};
use crate::error::AnalysisError;
use crate::plot::{Axes, FitLine, PointSeries};

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

/// "a day", "an hour".
fn a_word(p: Period) -> &'static str {
    match p {
        Period::Day => "a day",
        Period::Hour => "an hour",
    }
}

/// "1 day", "3 hours".
fn count(n: usize, p: Period) -> String {
    format!("{n} {}{}", word(p), if n == 1 { "" } else { "s" })
}

/// The answer, first: the rate that held on every period and on 95 % of
/// them, the cost's spread, the periods that moved.
pub fn answer_box(h: &History) -> Vec<String> {
    let w = word(h.period);
    let budget = h
        .budget_pct
        .map_or_else(|| "no budget".into(), |b| format!("{b} %"));
    let mut lines = vec![
        format!(
            "History of {} at {} Hz, {}: {} checks over {:.1} h, {}; budget {budget}",
            h.hostname.as_deref().unwrap_or("?"),
            h.rate_hz,
            h.subject,
            h.checks.len(),
            h.span_hours,
            count(h.periods.len(), h.period)
        ),
        format!(
            "  held on every {w} measured: {} (set {}); on 95 % of {w}s: {} (set {})",
            hz(h.held_every_hz),
            set_hz(h.held_every_hz),
            hz(h.held_95_hz),
            set_hz(h.held_95_hz)
        ),
        format!(
            "  cost per sample over the checks: median {} us, {} to {} us (CV {})",
            us(h.median_cost_ns),
            us(h.cost_min_ns),
            us(h.cost_max_ns),
            h.cost_cv
                .map_or_else(|| "-".into(), |c| format!("{:.1} %", c * 100.0))
        ),
    ];
    let moved: Vec<String> = h
        .periods
        .iter()
        .filter_map(|p| {
            p.moved.map(|m| {
                format!(
                    "{} {m} (x{:.2})",
                    p.period,
                    p.ratio_to_median.unwrap_or(f64::NAN)
                )
            })
        })
        .collect();
    lines.push(if moved.is_empty() {
        format!("  no {w} moved beyond the run-to-run spread")
    } else {
        format!("  moved beyond the run-to-run spread: {}", moved.join(", "))
    });
    for n in &h.notes {
        lines.push(format!("  ! {n}"));
    }
    lines
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Rows as CSV, the header from their fields (an empty field is null).
fn write_csv<T: serde::Serialize>(path: &Path, rows: &[T]) -> Result<(), AnalysisError> {
    let fail = |e: csv::Error| AnalysisError::Write {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    };
    let mut w = csv::Writer::from_path(path).map_err(fail)?;
    for r in rows {
        w.serialize(r).map_err(fail)?;
    }
    w.flush().map_err(|e| AnalysisError::Write {
        path: path.to_path_buf(),
        source: e,
    })
}

/// Writes the report into `out`; returns history.md's path.
pub fn write(out: &Path, h: &History) -> Result<PathBuf, AnalysisError> {
    std::fs::create_dir_all(out).map_err(|e| AnalysisError::Write {
        path: out.to_path_buf(),
        source: e,
    })?;
    write_csv(&out.join("checks.csv"), &h.checks)?;
    write_csv(&out.join("periods.csv"), &h.periods)?;
    let figure = figure(out, h);
    let md = markdown(h, figure.as_ref().err());
    let p = out.join("history.md");
    std::fs::write(&p, md).map_err(|e| AnalysisError::Write {
        path: p.clone(),
        source: e,
    })?;
    Ok(p)
}

fn markdown(h: &History, figure_error: Option<&AnalysisError>) -> String {
    let w = word(h.period);
    let mut md = format!(
        "# Check history: {} at {} Hz\n\n",
        h.hostname.as_deref().unwrap_or("?"),
        h.rate_hz
    );
    md.push_str("```\n");
    for l in answer_box(h) {
        md.push_str(&l);
        md.push('\n');
    }
    md.push_str("```\n\n");
    let _ = writeln!(
        md,
        "Each check's cost per sample is the gaps design's against 0 Hz (`driver check`), with its 95 % confidence interval over its runs. \
         {A}'s rate is the lowest that any of its checks supports at the budget (the check's prediction interval's upper end); \
         the rate that held on every {w} is the lowest of those, and on 95 % of {w}s their type-7 5th percentile. \
         {A} moved beyond the run-to-run spread when every check's interval that {w} lies above (or below) the median of all checks.\n",
        A = capital(a_word(h.period))
    );
    match figure_error {
        None => md.push_str("![cost per sample over time](history_cost.svg)\n\n"),
        Some(e) => {
            let _ = writeln!(md, "(the figure could not be drawn: {e})\n");
        }
    }
    let _ = writeln!(
        md,
        "## By {w}\n\n| {w} | checks | median cost, us | lowest-highest, us | rate that held | within budget | moved |\n|---|---|---|---|---|---|---|"
    );
    for p in &h.periods {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {}-{} | {} | {} | {} |",
            p.period,
            p.checks,
            us(p.cost_median_ns),
            us(p.cost_min_ns),
            us(p.cost_max_ns),
            hz(p.max_hz),
            if p.within_budget { "yes" } else { "no" },
            p.moved.map_or_else(
                || "-".into(),
                |m| format!("{m} x{:.2}", p.ratio_to_median.unwrap_or(f64::NAN))
            ),
        );
    }
    md.push_str("\n## Every check\n\n| started | cost, us [95 % CI] | PI upper, us | rate within budget | within | runs (noisy) |\n|---|---|---|---|---|---|\n");
    for c in &h.checks {
        let _ = writeln!(
            md,
            "| {} | {} [{}, {}] | {} | {} | {} | {} ({}) |",
            c.started_at,
            us(c.cost_ns),
            us(c.cost_lo_ns),
            us(c.cost_hi_ns),
            us(c.cost_pred_hi_ns),
            hz(c.max_hz),
            match c.within_budget {
                Some(true) => "yes",
                Some(false) => "no",
                None => "unresolved",
            },
            c.runs.unwrap_or(0),
            c.noisy_runs.unwrap_or(0)
        );
    }
    md.push_str("\nFiles: checks.csv (one row per check), periods.csv (one per period), history_cost.svg/png.\n");
    md
}

/// The cost per sample of every check with its 95 % CI against hours
/// since the first, the median, and the cost that spends the whole budget
/// at the rate.
fn figure(out: &Path, h: &History) -> Result<Vec<PathBuf>, AnalysisError> {
    let t0 = h
        .checks
        .iter()
        .filter_map(|c| chrono::DateTime::parse_from_rfc3339(&c.started_at).ok())
        .min();
    let mut s = PointSeries {
        label: format!("cost per sample at {} Hz (95 % CI)", h.rate_hz),
        x: Vec::new(),
        y: Vec::new(),
        y_lo: Vec::new(),
        y_hi: Vec::new(),
    };
    for c in &h.checks {
        let (Some(t0), Ok(t), Some(y)) = (
            t0,
            chrono::DateTime::parse_from_rfc3339(&c.started_at),
            c.cost_ns,
        ) else {
            continue;
        };
        let x = (t - t0).num_seconds() as f64 / 3600.0;
        s.x.push(x);
        s.y.push(y / 1000.0);
        s.y_lo.push(c.cost_lo_ns.map_or(y, |v| v) / 1000.0);
        s.y_hi.push(c.cost_hi_ns.map_or(y, |v| v) / 1000.0);
    }
    let mut lines = Vec::new();
    if let Some(m) = h.median_cost_ns {
        lines.push(FitLine {
            label: format!("median {:.1} us", m / 1000.0),
            intercept: m / 1000.0,
            slope: 0.0,
            label_at_end: true,
            colour: Some((120, 120, 120)),
            ..Default::default()
        });
    }
    if let (Some(b), Some(max)) = (h.budget_pct, h.cost_max_ns) {
        let whole = b / 100.0 / h.rate_hz as f64 * 1e6;
        if whole <= max / 1000.0 * 3.0 {
            lines.push(FitLine {
                label: format!("{b} % at {} Hz", h.rate_hz),
                intercept: whole,
                slope: 0.0,
                label_at_end: true,
                colour: Some((200, 60, 60)),
                ..Default::default()
            });
        }
    }
    let t0_text = t0.map_or_else(String::new, |t| t.format("%Y-%m-%d %H:%M UTC").to_string());
    crate::plot::plot_vs_freq_axes(
        &format!(
            "Cost per sample per check, {}",
            h.hostname.as_deref().unwrap_or("?")
        ),
        (
            &format!("hours since {t0_text}"),
            "cost per sample, us (95 % CI)",
        ),
        &[s],
        &lines,
        Axes {
            log_x: false,
            log_y: false,
            y_include: Some(0.0),
        },
        &out.join("history_cost"),
    )
    .map_err(AnalysisError::from)
}
