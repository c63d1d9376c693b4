//! Per set and budget, what the analysis recommended against the truth;
//! per scenario and budget, the table: coverage, false charges (or the
//! power to charge a true outside part) and the median ratio of the
//! recommended rate to the true highest rate, each with its simulation
//! error.

use std::fmt::Write as _;

use statrs::distribution::{Binomial, DiscreteCDF};

/// One set's answer at one budget.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub scenario: &'static str,
    pub set: usize,
    pub seed: u64,
    pub budget_pct: f64,
    pub true_max_hz: f64,
    pub rate_hz: Option<u64>,
    /// True loss at the recommended rate, %; None without a rate.
    pub true_loss_pct: Option<f64>,
    pub covered: bool,
    pub charged: bool,
    pub basis: &'static str,
}

impl Outcome {
    /// Recommended rate over the true highest rate (0 without a rate).
    pub fn ratio(&self) -> f64 {
        self.rate_hz.map_or(0.0, |r| r as f64 / self.true_max_hz)
    }
}

/// simulation.csv's header.
pub const CSV_HEADER: &str =
    "scenario,set,seed,budget_pct,true_max_hz,rate_hz,true_loss_at_rate_pct,covered,charged,basis";

/// One simulation.csv line.
pub fn csv_line(o: &Outcome) -> String {
    format!(
        "{},{},{},{},{:.1},{},{},{},{},{}",
        o.scenario,
        o.set,
        o.seed,
        o.budget_pct,
        o.true_max_hz,
        o.rate_hz.map_or(String::new(), |r| r.to_string()),
        o.true_loss_pct.map_or(String::new(), |l| format!("{l:.4}")),
        o.covered,
        o.charged,
        o.basis
    )
}

/// A share with its simulation standard error sqrt(p (1 - p) / n).
#[derive(Debug, Clone, Copy)]
pub struct Share {
    pub p: f64,
    pub se: f64,
}

impl Share {
    fn of(hits: usize, n: usize) -> Self {
        let p = hits as f64 / n.max(1) as f64;
        Share {
            p,
            se: (p * (1.0 - p) / n.max(1) as f64).sqrt(),
        }
    }

    fn text(&self) -> String {
        format!("{:.3} ± {:.3}", self.p, self.se)
    }
}

/// The median of `v` with a distribution-free 95 % interval from order
/// statistics: [x_(l), x_(n+1-l)] with l the largest rank such that
/// P(Bin(n, 1/2) < l) <= 0.025 (coverage at least 95 %); the whole range
/// where n is too small for that.
pub fn median_interval(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let median = if n % 2 == 1 {
        s[n / 2]
    } else {
        0.5 * (s[n / 2 - 1] + s[n / 2])
    };
    let Ok(bin) = Binomial::new(0.5, n as u64) else {
        return (median, s[0], s[n - 1]);
    };
    // l (1-based): P(X <= l - 1) <= 0.025.
    let mut l = 0usize;
    while l < n / 2 && bin.cdf(l as u64) <= 0.025 {
        l += 1;
    }
    if l == 0 {
        return (median, s[0], s[n - 1]);
    }
    (median, s[l - 1], s[n - l])
}

/// One cell of the table: a scenario at a budget.
#[derive(Debug, Clone)]
pub struct Cell {
    pub scenario: &'static str,
    pub budget_pct: f64,
    pub true_max_hz: f64,
    pub n: usize,
    pub coverage: Share,
    pub no_rate: usize,
    /// Sets charged an outside part: false charges, or the power where
    /// the truth has one.
    pub charged: Share,
    pub truly_outside: bool,
    pub median_ratio: (f64, f64, f64),
}

/// The cells of `outcomes` of scenario `name` (truly outside or not), one
/// per budget in order.
pub fn cells(
    outcomes: &[Outcome],
    name: &'static str,
    outside: bool,
    budgets: &[f64],
) -> Vec<Cell> {
    budgets
        .iter()
        .map(|&b| {
            let at: Vec<&Outcome> = outcomes
                .iter()
                .filter(|o| o.scenario == name && o.budget_pct == b)
                .collect();
            let n = at.len();
            let ratios: Vec<f64> = at.iter().map(|o| o.ratio()).collect();
            Cell {
                scenario: name,
                budget_pct: b,
                true_max_hz: at.first().map_or(f64::NAN, |o| o.true_max_hz),
                n,
                coverage: Share::of(at.iter().filter(|o| o.covered).count(), n),
                no_rate: at.iter().filter(|o| o.rate_hz.is_none()).count(),
                charged: Share::of(at.iter().filter(|o| o.charged).count(), n),
                truly_outside: outside,
                median_ratio: median_interval(&ratios),
            }
        })
        .collect()
}

/// The markdown table of `cells`.
pub fn markdown(cells: &[Cell]) -> String {
    let mut s = String::from(
        "| scenario | budget % | true max Hz | sets | coverage ± SE | no rate | false charges ± SE (xeon: power) | median rate / true max [95 % CI] |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for c in cells {
        let (m, lo, hi) = c.median_ratio;
        let charged = if c.truly_outside {
            format!("power {}", c.charged.text())
        } else {
            c.charged.text()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} | {} | {} | {} | {} | {:.3} [{:.3}, {:.3}] |",
            c.scenario,
            c.budget_pct,
            c.true_max_hz,
            c.n,
            c.coverage.text(),
            c.no_rate,
            charged,
            m,
            lo,
            hi
        );
    }
    s
}

/// `--check-loose`: the cells that fail it, each named with why.
pub fn loose_failures(cells: &[Cell]) -> Vec<String> {
    let mut out = Vec::new();
    for c in cells {
        let name = format!("{} at {} %", c.scenario, c.budget_pct);
        if c.coverage.p < 0.85 {
            out.push(format!("{name}: coverage {:.3} < 0.85", c.coverage.p));
        }
        // Loose: 0.15 is three simulation errors above the target of 5 %
        // at 50 sets; the power where the truth has an outside part.
        if !c.truly_outside && c.charged.p > 0.15 {
            out.push(format!("{name}: false charges {:.3} > 0.15", c.charged.p));
        }
        if c.truly_outside && c.charged.p < 0.8 {
            out.push(format!("{name}: power {:.3} < 0.8", c.charged.p));
        }
        if c.scenario == "quiet" && c.median_ratio.0 < 0.6 {
            out.push(format!(
                "{name}: median rate / true max {:.3} < 0.6",
                c.median_ratio.0
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_interval_of_one_to_hundred() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let (m, lo, hi) = median_interval(&v);
        // The textbook ranks for n = 100: 40 and 61.
        assert_eq!((m, lo, hi), (50.5, 40.0, 61.0));
    }
}
