//! `analysis history DIR`: a host's `driver check` history (history.csv,
//! the summary's columns) read, grouped by day (or hour), and judged: the
//! rate that held on every period measured and on 95 % of them, and the
//! periods whose cost moved beyond the run-to-run spread. `present.rs`
//! writes it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use results_format::summary::SummaryRow;
use serde::Serialize;

use crate::error::AnalysisError;
use crate::fleet::classes::quantile;
use crate::fleet::days::moved;
use crate::stats::{grouped, mean, sorted, std_dev};

pub mod present;

/// How the checks are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Period {
    /// Calendar days, UTC.
    Day,
    /// Hours, UTC (a history of one day).
    Hour,
}

/// What `analysis history` is asked.
#[derive(Debug, Clone)]
pub struct HistoryOptions {
    /// The rate whose checks are read; None: the rate checked most often.
    pub rate_hz: Option<u64>,
    /// The budget, %; None: the one the checks judged against.
    pub budget_pct: Option<f64>,
    /// Grouping.
    pub period: Period,
}

/// One check at the rate.
#[derive(Debug, Clone, Serialize)]
pub struct CheckPoint {
    /// The check's set (its folder under checks/).
    pub set: String,
    /// When it started, UTC, RFC 3339.
    pub started_at: String,
    /// Its period's label.
    pub period: String,
    pub cost_ns: Option<f64>,
    pub cost_lo_ns: Option<f64>,
    pub cost_hi_ns: Option<f64>,
    pub cost_pred_hi_ns: Option<f64>,
    /// The highest rate within the budget this check supports.
    pub max_hz: Option<f64>,
    pub within_budget: Option<bool>,
    pub runs: Option<i64>,
    pub noisy_runs: Option<i64>,
}

/// One period's checks.
#[derive(Debug, Clone, Serialize)]
pub struct PeriodRow {
    pub period: String,
    pub checks: usize,
    pub cost_median_ns: Option<f64>,
    pub cost_min_ns: Option<f64>,
    pub cost_max_ns: Option<f64>,
    /// The rate that held on every check of the period (their lowest).
    pub max_hz: Option<f64>,
    /// Every check of the period within budget.
    pub within_budget: bool,
    /// "up" or "down" when every check's 95 % CI that period lies above
    /// (below) the history's median cost: it moved beyond the run-to-run
    /// spread. None otherwise.
    pub moved: Option<&'static str>,
    /// The period's median over the history's.
    pub ratio_to_median: Option<f64>,
}

/// A host's history at one rate.
#[derive(Debug, Clone, Serialize)]
pub struct History {
    pub dir: PathBuf,
    pub hostname: Option<String>,
    pub rate_hz: u64,
    pub budget_pct: Option<f64>,
    pub period: Period,
    /// What the checks sampled (the most common subject; others are named
    /// in `notes`).
    pub subject: String,
    pub checks: Vec<CheckPoint>,
    pub periods: Vec<PeriodRow>,
    /// The median cost over every check.
    pub median_cost_ns: Option<f64>,
    /// The cost's spread over the checks: lowest, highest, coefficient of
    /// variation of the checks' means.
    pub cost_min_ns: Option<f64>,
    pub cost_max_ns: Option<f64>,
    pub cost_cv: Option<f64>,
    /// The rate that held on every period measured.
    pub held_every_hz: Option<f64>,
    /// The rate that held on 95 % of periods (type-7 5th percentile of
    /// the periods' rates).
    pub held_95_hz: Option<f64>,
    /// Hours from the first check to the last.
    pub span_hours: f64,
    /// Damaged history files and rows left out, each a line.
    pub notes: Vec<String>,
}

fn subject_of(r: &SummaryRow) -> String {
    match r.profiler.as_deref().filter(|p| !p.is_empty()) {
        Some(p) => format!("profiler `{p}`"),
        None => {
            let (subject, event) = (r.subject.as_deref(), r.event.as_deref());
            let (subject, event) = (subject.unwrap_or("loop"), event.unwrap_or("?"));
            format!("{subject} ({event}, {})", r.scope.as_deref().unwrap_or("?"))
        }
    }
}

fn most_common<T: Ord + Clone>(items: impl Iterator<Item = T>) -> Option<T> {
    let mut counts: BTreeMap<T, usize> = BTreeMap::new();
    for i in items {
        *counts.entry(i).or_default() += 1;
    }
    let most = counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)));
    most.map(|(k, _)| k)
}

/// The median of the finite values of `v`.
fn median(v: &[f64]) -> Option<f64> {
    quantile(&sorted(v.iter().copied().filter(|x| x.is_finite())), 0.5)
}

/// Reads DIR's history files and judges them.
pub fn analyse(dir: &Path, opts: &HistoryOptions) -> Result<History, AnalysisError> {
    if !dir.is_dir() {
        let path = dir.to_path_buf();
        return Err(AnalysisError::NoSuchDirectory { path });
    }
    let (rows, damage) = results_format::history::read_dir(dir);
    let mut notes: Vec<String> = damage
        .iter()
        .map(|d| format!("{d}: its rows are left out (the file is never rewritten)"))
        .collect();
    let rows: Vec<SummaryRow> = rows
        .into_iter()
        .filter(|r| r.config_primary != Some(false) && r.freq_hz.is_some())
        .collect();
    let often = || most_common(rows.iter().filter_map(|r| r.freq_hz)).map(|f| f as u64);
    let Some(rate) = opts.rate_hz.or_else(often) else {
        let dir = dir.display();
        return Err(AnalysisError::Invalid(format!(
            "{dir} holds no check history (history.csv): run `driver check --history {dir}` first"
        )));
    };
    let at_rate: Vec<&SummaryRow> = rows
        .iter()
        .filter(|r| r.freq_hz == Some(rate as i64))
        .collect();
    let Some(subject) = most_common(at_rate.iter().map(|r| subject_of(r))) else {
        return Err(AnalysisError::Invalid(format!(
            "{} holds no check at {rate} Hz: give --rate with a rate it checked",
            dir.display()
        )));
    };
    let (mut picked, others): (Vec<&SummaryRow>, Vec<_>) =
        at_rate.into_iter().partition(|r| subject_of(r) == subject);
    if !others.is_empty() {
        let n = others.len();
        notes.push(format!(
            "{n} checks at {rate} Hz of another subject are left out (this history is of {subject})"
        ));
    }
    let budgets = picked
        .iter()
        .chain(&others)
        .filter_map(|r| r.budget_pct.map(f64::to_bits));
    let budget = opts
        .budget_pct
        .or_else(|| most_common(budgets).map(f64::from_bits));
    picked.sort_by_key(|r| r.started_at);
    let checks: Vec<CheckPoint> = picked
        .iter()
        .map(|r| check(r, budget, opts.period))
        .collect();
    let costs: Vec<f64> = checks.iter().filter_map(|c| c.cost_ns).collect();
    let med = median(&costs);
    let periods = period_rows(&checks, med);
    let rates = sorted(periods.iter().filter_map(|p| p.max_hz));
    let (cost_cv, cost_min_ns, cost_max_ns) = spread(&costs);
    let times: Vec<i64> = picked.iter().filter_map(|r| r.started_at).collect();
    let span_hours = match (times.first(), times.last()) {
        (Some(a), Some(b)) => (b - a) as f64 / 3.6e9,
        _ => 0.0,
    };
    Ok(History {
        dir: dir.to_path_buf(),
        hostname: picked.first().and_then(|r| r.hostname.clone()),
        rate_hz: rate,
        budget_pct: budget,
        period: opts.period,
        subject,
        checks,
        periods,
        median_cost_ns: med,
        cost_min_ns,
        cost_max_ns,
        cost_cv,
        held_every_hz: rates.first().copied(),
        held_95_hz: quantile(&rates, 0.05),
        span_hours,
        notes,
    })
}

/// One check's point, judged against `budget`.
fn check(r: &SummaryRow, budget: Option<f64>, period: Period) -> CheckPoint {
    let t = r
        .started_at
        .and_then(chrono::DateTime::from_timestamp_micros);
    let label = |t: chrono::DateTime<chrono::Utc>| match period {
        Period::Day => t.format("%Y-%m-%d").to_string(),
        Period::Hour => t.format("%Y-%m-%d %H:00").to_string(),
    };
    let v = budget.map(|b| crate::summary::check_verdict(r, b));
    CheckPoint {
        set: r.set.clone().unwrap_or_default(),
        started_at: t.map(|t| t.to_rfc3339()).unwrap_or_default(),
        period: t.map(label).unwrap_or_else(|| "?".into()),
        cost_ns: r.cost_per_sample_ns,
        cost_lo_ns: r.cost_per_sample_lo_ns,
        cost_hi_ns: r.cost_per_sample_hi_ns,
        cost_pred_hi_ns: r.cost_per_sample_pred_hi_ns,
        max_hz: v.and_then(|v| v.max_hz),
        within_budget: v.and_then(|v| v.within),
        noisy_runs: r.noisy_runs,
        runs: r.runs,
    }
}

/// The coefficient of variation, lowest and highest of `costs`.
fn spread(costs: &[f64]) -> (Option<f64>, Option<f64>, Option<f64>) {
    let min = costs.iter().copied().min_by(f64::total_cmp);
    let max = costs.iter().copied().max_by(f64::total_cmp);
    let cv = (costs.len() >= 2).then(|| std_dev(costs) / mean(costs));
    (cv, min, max)
}

fn period_rows(checks: &[CheckPoint], med: Option<f64>) -> Vec<PeriodRow> {
    grouped(checks.iter().map(|c| (c.period.as_str(), c)))
        .into_iter()
        .map(|(period, cs)| {
            let costs: Vec<f64> = cs.iter().filter_map(|c| c.cost_ns).collect();
            let pm = median(&costs);
            // Every resolved check's interval above (below) the median.
            let resolved = cs.iter().filter_map(|c| c.cost_lo_ns.zip(c.cost_hi_ns));
            let lo = resolved.clone().map(|r| r.0).min_by(f64::total_cmp);
            let hi = resolved.map(|r| r.1).max_by(f64::total_cmp);
            let (_, cost_min_ns, cost_max_ns) = spread(&costs);
            let max_hz = cs.iter().map(|c| c.max_hz).collect::<Option<Vec<f64>>>();
            PeriodRow {
                period: period.to_string(),
                checks: cs.len(),
                cost_median_ns: pm,
                cost_min_ns,
                cost_max_ns,
                max_hz: max_hz.and_then(|v| v.into_iter().min_by(f64::total_cmp)),
                within_budget: cs.iter().all(|c| c.within_budget == Some(true)),
                moved: med.and_then(|m| moved(lo, hi, m)),
                ratio_to_median: pm.zip(med).map(|(p, m)| p / m),
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn row(day: u32, hour: u32, cost: f64, half: f64) -> SummaryRow {
        let t = chrono::NaiveDate::from_ymd_opt(2026, 11, day)
            .unwrap()
            .and_hms_opt(hour, 0, 0)
            .unwrap()
            .and_utc();
        SummaryRow {
            set: Some(format!("{day}-{hour}")),
            started_at: Some(t.timestamp_micros()),
            freq_hz: Some(99),
            config_primary: Some(true),
            subject: Some("loop".into()),
            event: Some("cpu-clock".into()),
            scope: Some("cpu".into()),
            achieved_hz: Some(99.0),
            cost_per_sample_ns: Some(cost),
            cost_per_sample_lo_ns: Some(cost - half),
            cost_per_sample_hi_ns: Some(cost + half),
            cost_per_sample_pred_hi_ns: Some(cost + 2.0 * half),
            budget_pct: Some(1.0),
            ..SummaryRow::default()
        }
    }

    /// Three days: the middle one costs 3x and every check's interval
    /// excludes the median, so it moved; the rate that held every day is
    /// the costly day's, and a day whose intervals straddle the median did
    /// not move.
    #[test]
    fn a_costly_day_moves_and_sets_the_rate_that_held_every_day() {
        let d = tempfile::tempdir().unwrap();
        let rows = vec![
            row(24, 1, 6_300.0, 400.0),
            row(24, 9, 6_500.0, 400.0),
            row(25, 1, 21_700.0, 900.0),
            row(25, 9, 20_900.0, 900.0),
            row(26, 1, 13_300.0, 700.0),
            row(26, 9, 6_400.0, 8_000.0),
        ];
        results_format::history::append(d.path(), &rows).unwrap();
        let h = analyse(
            d.path(),
            &HistoryOptions {
                rate_hz: None,
                budget_pct: None,
                period: Period::Day,
            },
        )
        .unwrap();
        assert_eq!(h.rate_hz, 99);
        assert_eq!(h.periods.len(), 3);
        assert_eq!(h.periods[1].moved, Some("up"));
        assert_eq!(h.periods[2].moved, None);
        // Day 25's worst check: its prediction interval's upper end.
        let worst = 1.0 / ((21_700.0 + 1_800.0) * 1e-7);
        assert!((h.held_every_hz.unwrap() - worst).abs() < 1e-6);
        assert!(h.held_95_hz.unwrap() >= h.held_every_hz.unwrap());
        assert!((h.span_hours - 56.0).abs() < 1e-9);
    }
}
