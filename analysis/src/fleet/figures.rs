//! The fleet's figures: every host's cost per sample by class, and with
//! `--all` each class over time.

use std::path::{Path, PathBuf};

use results_format::summary::SUMMARY_BUDGETS;

use super::Fleet;
use super::classes::{label, quantile};
use crate::error::AnalysisError;
use crate::plot::{Axes, FitLine, PointSeries, plot_vs_freq, svg_name};
use crate::stats::{distinct_sorted, grouped};

/// The fleet figures' axes: hosts or days against the cost, log.
const LOG_Y: Axes = Axes {
    log_y: true,
    ..Axes::LINEAR
};

/// Draws the fleet's figures into `out`; returns the SVGs' file names (a
/// figure that cannot be drawn is logged and left out).
pub fn write(out: &Path, f: &Fleet) -> Vec<String> {
    let mut names = Vec::new();
    for (what, drawn) in [
        ("fleet figure", by_host(out, f)),
        ("fleet figure over time", over_time(out, f)),
    ] {
        match drawn {
            Ok(files) => names.extend(files.iter().filter_map(|p| svg_name(p))),
            Err(e) => tracing::warn!("{what} not drawn: {e}"),
        }
    }
    names
}

/// The first figure: every host's cost per sample with its 95 % interval,
/// grouped by class (hosts in cost order within each), and the cost each
/// budget allows at `--rate`.
fn by_host(out: &Path, f: &Fleet) -> Result<Vec<PathBuf>, AnalysisError> {
    let (mut all, mut x, mut thinned) = (Vec::new(), 0.0, false);
    for c in &f.classes {
        let mut costs: Vec<[f64; 3]> = (f.hosts.iter().filter(|o| label(o) == c.class))
            .filter_map(|o| {
                let cost = o.cost_ns?;
                Some([
                    cost,
                    o.cost_lo_ns.unwrap_or(cost),
                    o.cost_hi_ns.unwrap_or(cost),
                ])
            })
            .collect();
        costs.sort_by(|a, b| a[0].total_cmp(&b[0]));
        thinned |= costs.len() > MOST_DRAWN;
        let points = drawn(costs.len()).map(|i| {
            let c = costs[i];
            [
                x + 1.0 + i as f64,
                c[0] / 1000.0,
                c[1] / 1000.0,
                c[2] / 1000.0,
            ]
        });
        let s = PointSeries::with_bars(format!("{} ({})", c.class, c.hosts), points);
        x += costs.len() as f64 + 1.0;
        if !s.points.is_empty() {
            all.push(s);
        }
    }
    let lines: Vec<FitLine> = SUMMARY_BUDGETS
        .iter()
        .map(|&(pct, _)| {
            let label = format!("{pct} % at {:.0} Hz", f.opts.rate_hz);
            FitLine::level(label, pct / 100.0 / f.opts.rate_hz * 1e6, (120, 120, 120))
        })
        .filter(|l| l.intercept <= f.fleet.cost_max_ns / 1000.0 * 20.0)
        .collect();
    let title = format!(
        "Cost per sample by host ({} hosts, {} classes)",
        f.hosts.len(),
        f.classes.len()
    );
    let x_label = match thinned {
        true => format!("hosts, by class, in cost order ({MOST_DRAWN} per class drawn)"),
        false => "hosts, by class, in cost order".to_string(),
    };
    let labels = (x_label.as_str(), "cost per sample, us (95 % CI)");
    let stem = out.join("fleet_cost_per_sample");
    plot_vs_freq(&title, labels, &all, &lines, LOG_Y, &stem).map_err(AnalysisError::from)
}

/// The most hosts of one class the first figure draws: beyond it, hosts
/// evenly spaced in cost order (the cheapest and dearest among them), so
/// a fleet of 100 000 hosts stays a figure a browser opens.
const MOST_DRAWN: usize = 1000;

/// The indices, in cost order, of the `n` hosts of a class drawn.
fn drawn(n: usize) -> impl Iterator<Item = usize> {
    let step = if n <= MOST_DRAWN {
        1.0
    } else {
        (n - 1) as f64 / (MOST_DRAWN - 1) as f64
    };
    let k = n.min(MOST_DRAWN);
    (0..k).map(move |j| (j as f64 * step).round() as usize)
}

/// With `--all`: each class's median cost per sample by date (none
/// otherwise, or with one date).
fn over_time(out: &Path, f: &Fleet) -> Result<Vec<PathBuf>, AnalysisError> {
    let dates = distinct_sorted(f.hosts.iter().map(|o| o.date.as_str()));
    if !f.opts.all || dates.len() < 2 {
        return Ok(Vec::new());
    }
    let day0 = day_number(dates[0]);
    let mut all = Vec::new();
    for c in &f.classes {
        let members = f.hosts.iter().filter(|o| label(o) == c.class);
        let by_date = grouped(members.filter_map(|o| Some((o.date.as_str(), o.cost_ns?))));
        let points = by_date.into_iter().filter_map(|(d, mut v)| {
            v.sort_by(f64::total_cmp);
            let x = (day_number(d)? - day0?) as f64;
            let median = quantile(&v, 0.5).unwrap_or(f64::NAN);
            Some([x, median / 1000.0, v[0] / 1000.0, v[v.len() - 1] / 1000.0])
        });
        let s = PointSeries::with_bars(c.class.clone(), points);
        if !s.points.is_empty() {
            all.push(s);
        }
    }
    let title = format!("Cost per sample by class over time (from {})", dates[0]);
    let x_label = format!("days since {}", dates[0]);
    let labels = (
        x_label.as_str(),
        "cost per sample, us (median; bars: min to max host)",
    );
    let stem = out.join("fleet_over_time");
    plot_vs_freq(&title, labels, &all, &[], LOG_Y, &stem).map_err(AnalysisError::from)
}

fn day_number(d: &str) -> Option<i64> {
    chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d")
        .ok()
        .map(|d| d.signed_duration_since(chrono::NaiveDate::MIN).num_days())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_class_is_drawn_from_its_cheapest_to_its_dearest_host() {
        assert_eq!(drawn(3).collect::<Vec<_>>(), [0, 1, 2]);
        for n in [MOST_DRAWN, MOST_DRAWN + 1, 79_527] {
            let d: Vec<usize> = drawn(n).collect();
            assert_eq!(d.len(), n.min(MOST_DRAWN));
            assert_eq!((d[0], d[d.len() - 1]), (0, n - 1));
            assert!(d.windows(2).all(|w| w[0] < w[1]), "{n}: not increasing");
        }
    }
}
