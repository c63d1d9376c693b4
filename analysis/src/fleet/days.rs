//! `analysis fleet --all` over many days: each class's cost per sample
//! day by day, and the days it moved.
//!
//! A day's median cost has a distribution-free interval from its order
//! statistics (the normal approximation to the binomial ranks, as in
//! Conover's *Practical Nonparametric Statistics*): ranks
//! `floor((n - z sqrt(n)) / 2)` and `ceil(1 + (n + z sqrt(n)) / 2)`. Its
//! confidence is 1 - 0.05 / (the class's days), so over a whole history
//! the chance that any day of a class reads as moved by chance is at most
//! 5 % (Bonferroni). A day **moved** when that interval lies wholly above
//! (up) or below (down) the class's reference: the median of its daily
//! medians. A day of fewer than [`SPREAD_MIN_HOSTS`] hosts with a cost is
//! not judged. deploy/spark/fleet_answer.py `--days` computes the same.

use results_format::summary::SUMMARY_BUDGETS;
use statrs::distribution::{ContinuousCDF, Normal};

use super::classes::{SPREAD_MIN_HOSTS, label, quantile};
use super::hosts::HostObs;
use crate::stats::{grouped, sorted};

/// The familywise error rate of a class's history.
pub const HISTORY_ALPHA: f64 = 0.05;

/// One class on one day.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ClassDay {
    pub class: String,
    pub date: String,
    pub hosts: usize,
    pub with_cost: usize,
    pub cost_median_ns: Option<f64>,
    /// The median's interval (see the module's text), ns.
    pub cost_median_lo_ns: Option<f64>,
    pub cost_median_hi_ns: Option<f64>,
    pub cost_p95_ns: Option<f64>,
    /// The highest rate within 1 % of the 95th-percentile host (the 5th
    /// percentile of the hosts' own; a host without one counts 0 Hz), Hz.
    pub p95_host_1pct_max_hz: f64,
    /// The day's median over the class's reference.
    pub ratio_to_reference: Option<f64>,
    /// `up` or `down` when the day moved, else None.
    pub moved: Option<&'static str>,
}

/// The interval's ranks (1-based) for a median of `n` at `z`.
pub fn median_ranks(n: usize, z: f64) -> (usize, usize) {
    let (nf, half) = (n as f64, z * (n as f64).sqrt());
    let lo = ((nf - half) / 2.0).floor().max(1.0) as usize;
    let hi = (1.0 + (nf + half) / 2.0).ceil().min(nf) as usize;
    (lo.min(n), hi.max(lo.min(n)))
}

/// `up` when the interval `lo` to `hi` lies wholly above `reference`,
/// `down` when wholly below, else None: a day's median here, a period's
/// checks in `analysis history`.
pub fn moved(lo: Option<f64>, hi: Option<f64>, reference: f64) -> Option<&'static str> {
    match (lo, hi) {
        (Some(lo), _) if lo > reference => Some("up"),
        (_, Some(hi)) if hi < reference => Some("down"),
        _ => None,
    }
}

/// Every class's days, by class then date.
pub fn class_days(obs: &[HostObs]) -> Vec<ClassDay> {
    let one = SUMMARY_BUDGETS.iter().position(|(p, _)| *p == 1.0);
    let mut out = Vec::new();
    for (class, members) in grouped(obs.iter().map(|o| (label(o), o))) {
        let days = grouped(members.into_iter().map(|o| (o.date.as_str(), o)));
        let z = Normal::standard().inverse_cdf(1.0 - HISTORY_ALPHA / days.len() as f64 / 2.0);
        let first = out.len();
        for (date, members) in days {
            let costs = sorted(members.iter().filter_map(|o| o.cost_ns));
            let rate = |o: &HostObs| one.and_then(|i| o.max_hz.get(i).copied().flatten());
            let rates = sorted(members.iter().map(|o| rate(o).unwrap_or(0.0)));
            let (lo, hi) = median_ranks(costs.len(), z);
            let judged = costs.len() >= SPREAD_MIN_HOSTS;
            out.push(ClassDay {
                class: class.clone(),
                date: date.to_string(),
                hosts: members.len(),
                with_cost: costs.len(),
                cost_median_ns: quantile(&costs, 0.5),
                cost_median_lo_ns: judged.then(|| costs[lo - 1]),
                cost_median_hi_ns: judged.then(|| costs[hi - 1]),
                cost_p95_ns: quantile(&costs, 0.95),
                p95_host_1pct_max_hz: quantile(&rates, 0.05).unwrap_or(0.0),
                ratio_to_reference: None,
                moved: None,
            });
        }
        let medians = sorted(out[first..].iter().filter_map(|d| d.cost_median_ns));
        let Some(reference) = quantile(&medians, 0.5).filter(|_| medians.len() > 1) else {
            continue;
        };
        for d in &mut out[first..] {
            d.ratio_to_reference = d.cost_median_ns.map(|m| m / reference);
            d.moved = moved(d.cost_median_lo_ns, d.cost_median_hi_ns, reference);
        }
    }
    out
}

/// One line per class that moved: how many of its days, which way, the
/// first, and the largest ratio.
pub fn moved_lines(days: &[ClassDay]) -> Vec<String> {
    let mut out = Vec::new();
    for (class, days) in grouped(days.iter().map(|d| (d.class.as_str(), d))) {
        let moved: Vec<&ClassDay> = days.iter().copied().filter(|d| d.moved.is_some()).collect();
        let Some(first) = moved.first() else { continue };
        let (up, down) = (
            moved.iter().filter(|d| d.moved == Some("up")).count(),
            moved.iter().filter(|d| d.moved == Some("down")).count(),
        );
        let far = moved
            .iter()
            .filter_map(|d| d.ratio_to_reference)
            .max_by(|a, b| (a.ln().abs()).total_cmp(&b.ln().abs()))
            .unwrap_or(f64::NAN);
        out.push(format!(
            "class {class} moved on {} of {} days ({up} up, {down} down; first {}, furthest x{far:.2} its median day)",
            moved.len(),
            days.len(),
            first.date
        ));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_median_interval_has_conovers_ranks() {
        // Conover's table (95 %, n = 100): the 40th and 61st values.
        assert_eq!(median_ranks(100, 1.959964), (40, 61));
        // Small n: clamped to the sample.
        assert_eq!(median_ranks(5, 3.0), (1, 5));
        assert_eq!(median_ranks(1, 1.96), (1, 1));
    }

    fn obs(class: &str, date: &str, cost: f64) -> HostObs {
        HostObs {
            host: format!("h{cost}"),
            date: date.into(),
            set: String::new(),
            set_dir: String::new(),
            class: vec![class.into()],
            traits: Vec::new(),
            hostname: String::new(),
            freq_hz: 1000,
            cost_ns: Some(cost),
            cost_lo_ns: None,
            cost_hi_ns: None,
            cost_pred_hi_ns: None,
            budgets: Vec::new(),
            max_hz: vec![None, Some(1e9 / cost / 100.0), None],
            conservative: false,
            drifted: false,
            bounds_only: false,
            made: false,
            started_at_us: None,
        }
    }

    #[test]
    fn a_planted_step_moves_its_days_and_no_other() {
        // 20 days of 50 hosts each; class a costs 1.3 times as much from
        // day 14, class b never moves; a 1 % spread inside a day.
        let mut all = Vec::new();
        for day in 0..20 {
            let date = format!("2026-01-{:02}", day + 1);
            for h in 0..50 {
                let spread = 1.0 + 0.01 * (h as f64 / 49.0 - 0.5);
                let step = if day >= 14 { 1.3 } else { 1.0 };
                all.push(obs("a", &date, 5000.0 * spread * step));
                all.push(obs("b", &date, 8000.0 * spread));
            }
        }
        let days = class_days(&all);
        assert_eq!(days.len(), 40);
        let moved: Vec<(&str, &str)> = days
            .iter()
            .filter(|d| d.moved.is_some())
            .map(|d| (d.class.as_str(), d.date.as_str()))
            .collect();
        assert_eq!(moved.len(), 6, "{moved:?}");
        assert!(moved.iter().all(|(c, d)| *c == "a" && *d >= "2026-01-15"));
        assert!(days.iter().all(|d| d.moved != Some("down")));
        let lines = moved_lines(&days);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].contains("moved on 6 of 20 days (6 up, 0 down; first 2026-01-15"),
            "{}",
            lines[0]
        );
    }
}
