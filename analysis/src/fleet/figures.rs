//! The fleet's figures: every host's cost per sample by class, and with
//! `--all` each class over time.

use std::path::{Path, PathBuf};

use results_format::summary::SUMMARY_BUDGETS;

use super::Fleet;
use crate::error::AnalysisError;
use crate::plot::{Axes, FitLine, PointSeries};

fn hz(v: f64) -> String {
    format!("{v:.0} Hz")
}

/// The first figure: every host's cost per sample with its 95 % interval,
/// grouped by class (hosts in cost order within each), and the cost each
/// budget allows at `--rate`.
pub fn write_figure(out: &Path, f: &Fleet) -> Result<Vec<PathBuf>, AnalysisError> {
    let mut series = Vec::new();
    let mut x = 0.0;
    for c in &f.classes {
        let mut members: Vec<&super::hosts::HostObs> = f
            .hosts
            .iter()
            .filter(|o| super::classes::label(o) == c.class)
            .collect();
        members.sort_by(|a, b| {
            a.cost_ns
                .unwrap_or(f64::NAN)
                .total_cmp(&b.cost_ns.unwrap_or(f64::NAN))
        });
        let mut s = PointSeries {
            label: format!("{} ({})", c.class, c.hosts),
            x: Vec::new(),
            y: Vec::new(),
            y_lo: Vec::new(),
            y_hi: Vec::new(),
        };
        for o in members {
            let Some(cost) = o.cost_ns else { continue };
            x += 1.0;
            let y = cost / 1000.0;
            s.x.push(x);
            s.y.push(y);
            s.y_lo.push(o.cost_lo_ns.map_or(y, |v| v / 1000.0));
            s.y_hi.push(o.cost_hi_ns.map_or(y, |v| v / 1000.0));
        }
        x += 1.0;
        if !s.x.is_empty() {
            series.push(s);
        }
    }
    let lines: Vec<FitLine> = SUMMARY_BUDGETS
        .iter()
        .map(|&(pct, _)| FitLine {
            label: format!("{pct} % at {}", hz(f.rate_hz)),
            intercept: pct / 100.0 / f.rate_hz * 1e6,
            slope: 0.0,
            label_at_end: true,
            colour: Some((120, 120, 120)),
            ..Default::default()
        })
        .filter(|l| l.intercept <= f.fleet.cost_max_ns / 1000.0 * 20.0)
        .collect();
    let stem = out.join("fleet_cost_per_sample");
    let title = format!(
        "Cost per sample by host ({} hosts, {} classes)",
        f.hosts.len(),
        f.classes.len()
    );
    crate::plot::plot_vs_freq_axes(
        &title,
        (
            "hosts, by class, in cost order",
            "cost per sample, us (95 % CI)",
        ),
        &series,
        &lines,
        Axes {
            log_x: false,
            log_y: true,
            y_include: None,
        },
        &stem,
    )
    .map_err(AnalysisError::from)
}

/// With `--all`: each class's median cost per sample by date.
pub fn write_over_time(out: &Path, f: &Fleet) -> Result<Option<Vec<PathBuf>>, AnalysisError> {
    use std::collections::BTreeMap;
    let dates: Vec<String> = {
        let mut d: Vec<String> = f.hosts.iter().map(|o| o.date.clone()).collect();
        d.sort();
        d.dedup();
        d
    };
    if !f.all || dates.len() < 2 {
        return Ok(None);
    }
    let day0 = day_number(&dates[0]);
    let mut series = Vec::new();
    for c in &f.classes {
        let mut by_date: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for o in f
            .hosts
            .iter()
            .filter(|o| super::classes::label(o) == c.class)
        {
            if let Some(cost) = o.cost_ns {
                by_date.entry(&o.date).or_default().push(cost);
            }
        }
        let mut s = PointSeries {
            label: c.class.clone(),
            x: Vec::new(),
            y: Vec::new(),
            y_lo: Vec::new(),
            y_hi: Vec::new(),
        };
        for (d, mut v) in by_date {
            v.sort_by(f64::total_cmp);
            let (Some(x0), Some(x)) = (day0, day_number(d)) else {
                continue;
            };
            s.x.push((x - x0) as f64);
            s.y.push(super::classes::quantile(&v, 0.5).unwrap_or(f64::NAN) / 1000.0);
            s.y_lo.push(v[0] / 1000.0);
            s.y_hi.push(v[v.len() - 1] / 1000.0);
        }
        if !s.x.is_empty() {
            series.push(s);
        }
    }
    let stem = out.join("fleet_over_time");
    crate::plot::plot_vs_freq_axes(
        &format!("Cost per sample by class over time (from {})", dates[0]),
        (
            &format!("days since {}", dates[0]),
            "cost per sample, us (median; bars: min to max host)",
        ),
        &series,
        &[],
        Axes {
            log_x: false,
            log_y: true,
            y_include: None,
        },
        &stem,
    )
    .map(Some)
    .map_err(AnalysisError::from)
}

fn day_number(d: &str) -> Option<i64> {
    chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d")
        .ok()
        .map(|d| d.signed_duration_since(chrono::NaiveDate::MIN).num_days())
}
