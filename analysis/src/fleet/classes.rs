//! The fleet's figures per class and for the whole fleet: hosts, the cost
//! per sample (median, p95, max), the highest rate within each budget for
//! the 95th-percentile host and for every host, and the hosts to look at
//! (outside their class's spread, conservative, drifted, bounds only).
//!
//! Quantiles interpolate linearly between order statistics (Hyndman and
//! Fan's type 7: numpy's default, DuckDB's `quantile_cont`), so that
//! analysis/validate/fleet_duckdb.py gets the same figures from SQL.

use results_format::summary::SUMMARY_BUDGETS;

use super::hosts::HostObs;
use crate::stats::{distinct_sorted, grouped, sorted};

/// A host whose modified z-score of cost in its class exceeds this is
/// outside the class's spread (Iglewicz and Hoaglin's 3.5, as the command
/// table's outlier runs).
pub const OUTLIER_Z: f64 = 3.5;
/// Fewest hosts in a class whose spread is judged.
pub const SPREAD_MIN_HOSTS: usize = 5;

/// The q-quantile of `sorted` (ascending), type 7; None when empty.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    (!sorted.is_empty()).then(|| crate::stats::quantile_sorted(sorted, q))
}

/// One budget's answer over a class.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BudgetOver {
    pub budget_pct: f64,
    /// The highest rate within budget on the 95th-percentile host: the 5th
    /// percentile of the hosts' own highest rates (a host with none counts
    /// 0 Hz), Hz.
    pub p95_host_max_hz: f64,
    /// The same for every host: the lowest, Hz.
    pub every_host_max_hz: f64,
    /// The rate to set for the 95th-percentile host (a prime just below).
    pub p95_host_rate_hz: Option<u64>,
    /// Hosts with no rate within budget (or no answer).
    pub hosts_without_answer: usize,
    /// Hosts whose answer is the highest rate they measured (a lower
    /// bound of theirs).
    pub hosts_at_highest_measured: usize,
    /// Hosts whose answer rests on loss upper bounds only.
    pub hosts_bounds_only: usize,
}

/// A host outside its class's spread.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outlier {
    pub host: String,
    pub cost_ns: f64,
    /// Its cost over the class median.
    pub ratio: f64,
    /// Its modified z-score.
    pub z: f64,
}

/// A class's (or the fleet's) figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ClassFigures {
    /// `fleet` for the whole fleet, else the class's values joined by ` / `.
    pub class: String,
    /// Observations: hosts, or with `--all` host-dates.
    pub hosts: usize,
    /// Distinct hosts among them.
    pub distinct_hosts: usize,
    /// Observations with a cost per sample (the cost figures' n).
    pub with_cost: usize,
    pub cost_median_ns: f64,
    pub cost_p95_ns: f64,
    pub cost_max_ns: f64,
    pub budgets: Vec<BudgetOver>,
    /// A class of one host: its figures are that host's.
    pub single: bool,
    /// Whether the spread was judged (enough hosts).
    pub spread_judged: bool,
    pub outliers: Vec<Outlier>,
    pub conservative: Vec<String>,
    pub drifted: Vec<String>,
}

/// The figures of `obs` under the name `class`.
pub fn figures(class: &str, obs: &[&HostObs]) -> ClassFigures {
    let costs = sorted(obs.iter().filter_map(|o| o.cost_ns));
    let median = quantile(&costs, 0.5).unwrap_or(f64::NAN);
    let count = |is: &dyn Fn(&HostObs) -> bool| obs.iter().filter(|&&o| is(o)).count();
    let budgets = (SUMMARY_BUDGETS.iter().enumerate())
        .map(|(i, &(pct, _))| {
            let max_hz = |o: &HostObs| o.max_hz.get(i).copied().flatten();
            let rates = sorted(obs.iter().map(|&o| max_hz(o).unwrap_or(0.0)));
            let p95 = quantile(&rates, 0.05).unwrap_or(0.0);
            BudgetOver {
                budget_pct: pct,
                p95_host_max_hz: p95,
                every_host_max_hz: rates.first().copied().unwrap_or(0.0),
                p95_host_rate_hz: crate::recommend::nice_prime_below(p95),
                hosts_without_answer: count(&|o| max_hz(o).is_none()),
                hosts_at_highest_measured: count(&|o| {
                    o.budgets.get(i).and_then(|b| b.at_highest_measured) == Some(true)
                }),
                hosts_bounds_only: count(&|o| {
                    o.budgets.get(i).and_then(|b| b.basis.as_deref()) == Some("bounds")
                }),
            }
        })
        .collect();
    let spread_judged = costs.len() >= SPREAD_MIN_HOSTS;
    let distinct_hosts = distinct_sorted(obs.iter().map(|o| o.host.as_str())).len();
    let name = |o: &&HostObs| match distinct_hosts == obs.len() || o.date.is_empty() {
        true => o.host.clone(),
        false => format!("{} ({})", o.host, o.date),
    };
    let mut outliers = Vec::new();
    if spread_judged {
        let deviations = sorted(costs.iter().map(|c| (c - median).abs()));
        let mad = quantile(&deviations, 0.5).unwrap_or(f64::NAN);
        for o in obs {
            let Some(cost) = o.cost_ns else { continue };
            let z = if mad > 0.0 {
                0.6745 * (cost - median) / mad
            } else if cost == median {
                0.0
            } else {
                f64::INFINITY.copysign(cost - median)
            };
            if z.abs() > OUTLIER_Z {
                let (host, ratio) = (o.host.clone(), cost / median);
                outliers.push(Outlier {
                    host,
                    cost_ns: cost,
                    ratio,
                    z,
                });
            }
        }
        outliers.sort_by(|a, b| b.z.abs().total_cmp(&a.z.abs()));
    }
    ClassFigures {
        class: class.to_string(),
        hosts: obs.len(),
        distinct_hosts,
        with_cost: costs.len(),
        cost_median_ns: median,
        cost_p95_ns: quantile(&costs, 0.95).unwrap_or(f64::NAN),
        cost_max_ns: costs.last().copied().unwrap_or(f64::NAN),
        budgets,
        single: obs.len() == 1,
        spread_judged,
        outliers,
        conservative: obs.iter().filter(|o| o.conservative).map(name).collect(),
        drifted: obs.iter().filter(|o| o.drifted).map(name).collect(),
    }
}

/// The class label of an observation.
pub fn label(o: &HostObs) -> String {
    o.class.join(" / ")
}

/// Every class's figures (by label), then the whole fleet's.
pub fn all_figures(obs: &[HostObs]) -> (Vec<ClassFigures>, ClassFigures) {
    let by_class = grouped(obs.iter().map(|o| (label(o), o)));
    let classes = by_class
        .iter()
        .map(|(name, members)| figures(name, members))
        .collect();
    let all: Vec<&HostObs> = obs.iter().collect();
    (classes, figures("fleet", &all))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_as_numpy_does() {
        let v = [1.0, 2.0, 3.0, 4.0, 10.0];
        assert_eq!(quantile(&v, 0.5), Some(3.0));
        // numpy.quantile([1,2,3,4,10], 0.95) = 8.8
        assert!((quantile(&v, 0.95).unwrap_or(0.0) - 8.8).abs() < 1e-12);
        assert!((quantile(&v, 0.05).unwrap_or(0.0) - 1.2).abs() < 1e-12);
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[7.0], 0.05), Some(7.0));
    }
}
