//! `analysis recommend --latency-budget 'p99:1ms:+5%'`: the highest rate
//! whose predicted added latency (the upper end of its 95 % interval over
//! blocks) stays within a budget.

use serde::Serialize;

use super::search::prime_within;
use crate::latency::at_rate::{AtSize, Model};
use crate::latency::predict::time_ns;
use crate::stats::Estimate;

/// The form a latency budget takes, for error messages and `--help`.
pub const FORM: &str = "PERCENTILE:SIZE:+LIMIT, e.g. 'p99:1ms:+5%': a percentile from p1 to \
p99.99, a request size with its unit (ns, us, ms, s), and what sampling may add to that \
percentile, in % of its value at 0 Hz (+5%) or as a time (+50us)";

/// What sampling may add.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Limit {
    /// % of the percentile at 0 Hz.
    Percent(f64),
    /// ns.
    Ns(f64),
}

/// A parsed latency budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencyBudget {
    pub percentile: f64,
    pub size_ns: u64,
    pub limit: Limit,
}

/// Parses `p99:1ms:+5%`; the error names the part that is wrong and the
/// form.
pub fn parse(text: &str) -> Result<LatencyBudget, String> {
    let bad = |what: String| format!("--latency-budget `{text}`: {what}; expected {FORM}");
    let parts: Vec<&str> = text.split(':').map(str::trim).collect();
    let [p, size, limit] = parts[..] else {
        return Err(bad(format!("{} parts, not 3", parts.len())));
    };
    let percentile = p
        .strip_prefix(['p', 'P'])
        .and_then(|x| x.parse::<f64>().ok())
        .filter(|x| (1.0..=99.99).contains(x))
        .ok_or_else(|| bad(format!("unknown percentile `{p}`")))?;
    let size =
        time_ns(size).ok_or_else(|| bad(format!("size `{size}` is not a number with a unit")))?;
    if size < 1.0 {
        return Err(bad(format!("size `{}` is not above 0", parts[1])));
    }
    let limit_text = limit.strip_prefix('+').unwrap_or(limit);
    let limit = if let Some(pct) = limit_text.strip_suffix('%') {
        Limit::Percent(
            pct.trim()
                .parse::<f64>()
                .map_err(|_| bad(format!("limit `{limit}` is not a number")))?,
        )
    } else {
        Limit::Ns(
            time_ns(limit_text)
                .ok_or_else(|| bad(format!("limit `{limit}` is neither % nor a time")))?,
        )
    };
    let v = match limit {
        Limit::Percent(v) | Limit::Ns(v) => v,
    };
    if !(v.is_finite() && v > 0.0) {
        return Err(bad(format!("limit `{limit_text}` is not above 0")));
    }
    Ok(LatencyBudget {
        percentile,
        size_ns: size.round() as u64,
        limit,
    })
}

/// The answer to a latency budget.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LatencyAnswer {
    /// The budget as given.
    pub budget: String,
    pub percentile: f64,
    pub size_ns: u64,
    /// The percentile at 0 Hz, mean over blocks, ns.
    pub baseline_ns: f64,
    /// What sampling may add, ns.
    pub limit_ns: f64,
    /// The highest rate within it, Hz (the highest measured rate when even
    /// that is within).
    pub max_hz: Option<f64>,
    /// The rate suggested: a prime below `max_hz`.
    pub rate_hz: Option<u64>,
    /// What sampling at `rate_hz` adds, predicted, ns.
    pub added_ns: Option<Estimate>,
    /// Whether the highest measured rate is within the budget (the answer
    /// does not go above it).
    pub at_highest_measured: bool,
    /// Whether the runs resolve the percentile at this size at all.
    pub resolved: bool,
    /// Why, in sentences.
    pub reasons: Vec<String>,
}

/// The highest rate within `b` on `model`; Err (bad input, exit 2) where
/// the size cannot be a request of these runs.
pub fn answer(model: &Model, b: &LatencyBudget, text: &str) -> Result<LatencyAnswer, String> {
    model.check_size(b.size_ns, &format!("--latency-budget `{text}`"))?;
    let at = model.at_size(b.size_ns, b.percentile);
    let baseline_ns = at.baseline_ns();
    let limit_ns = match b.limit {
        Limit::Percent(v) => baseline_ns * v / 100.0,
        Limit::Ns(v) => v,
    };
    let mut out = LatencyAnswer {
        budget: text.to_string(),
        percentile: b.percentile,
        size_ns: b.size_ns,
        baseline_ns,
        limit_ns,
        ..Default::default()
    };
    let Some(highest) = model.highest_hz().filter(|_| at.is_resolved()) else {
        out.reasons.push(format!(
            "Not resolved: the 0 Hz runs hold too few {} requests for their p{} (one beyond it per run at least), or the set has no gaps runs at a rate.",
            crate::latency::size_label(b.size_ns),
            b.percentile
        ));
        return Ok(out);
    };
    out.resolved = true;
    let within = |rate: f64| {
        at.added(rate)
            .is_some_and(|e| e.hi.is_finite() && e.hi <= limit_ns)
    };
    let max_hz = if within(highest as f64) {
        out.at_highest_measured = true;
        Some(highest as f64)
    } else if !within(1.0) {
        None
    } else {
        // Bisection on a log scale: within at lo, not at hi.
        let hi = (highest as f64).ln();
        Some(crate::stats::bisect(0.0, hi, 16, |x| within(x.exp())).exp())
    };
    out.max_hz = max_hz;
    let rate = max_hz.and_then(|hz| prime_within(hz, within));
    out.rate_hz = rate;
    out.added_ns = rate.and_then(|r| at.added(r as f64));
    out.reasons = reasons(&at, &out, highest, model.basis_hz(rate.unwrap_or(1) as f64));
    Ok(out)
}

fn reasons(at: &AtSize<'_>, a: &LatencyAnswer, highest: u64, basis: Option<u64>) -> Vec<String> {
    let what = format!(
        "p{} of a {} request (at 0 Hz {:.1} us)",
        a.percentile,
        crate::latency::size_label(a.size_ns),
        a.baseline_ns / 1e3
    );
    let Some(rate) = a.rate_hz else {
        let at1 = at.added(1.0).map_or(f64::NAN, |e| e.hi);
        return vec![format!(
            "Even 1 Hz may add up to {:.1} us to the {what}, above the {:.1} us allowed.",
            at1 / 1e3,
            a.limit_ns / 1e3
        )];
    };
    let e = a.added_ns.unwrap_or(Estimate::point(f64::NAN, 0));
    let mut out = vec![format!(
        "At {rate} Hz sampling adds {:+.1} us [{:+.1}, {:+.1}] to the {what}, predicted from {} blocks: within the {:.1} us allowed at the interval's upper end.",
        e.value / 1e3,
        e.lo / 1e3,
        e.hi / 1e3,
        e.n,
        a.limit_ns / 1e3
    )];
    if let Some(b) = basis {
        out.push(format!(
            "Each sample costs what a sample measured at {b} Hz cost (the measured rate nearest on a log scale); samples are periodic."
        ));
    }
    if a.at_highest_measured {
        out.push(format!(
            "{highest} Hz, the highest rate measured, is within the budget too: rates above it were not measured."
        ));
    }
    out
}

impl LatencyAnswer {
    /// The rate both budgets allow: the lower of the loss budget's
    /// `loss_rate` and this one's; the loss budget's alone where this one
    /// is not resolved.
    pub fn combined(&self, loss_rate: Option<u64>) -> Option<u64> {
        if !self.resolved {
            return loss_rate;
        }
        match (loss_rate, self.rate_hz) {
            (Some(a), Some(b)) => Some(a.min(b)),
            _ => None,
        }
    }

    /// The answer in one line.
    pub fn headline(&self) -> String {
        match (self.resolved, self.rate_hz) {
            (false, _) => format!("latency budget {}: not resolved by this set", self.budget),
            (true, None) => format!("latency budget {}: no rate is within it", self.budget),
            (true, Some(r)) => format!("latency budget {}: {r} Hz", self.budget),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_parse_and_bad_ones_name_the_part() {
        assert_eq!(
            parse("p99:1ms:+5%"),
            Ok(LatencyBudget {
                percentile: 99.0,
                size_ns: 1_000_000,
                limit: Limit::Percent(5.0)
            })
        );
        assert_eq!(
            parse("p99.9:100us:+50us").map(|b| (b.percentile, b.size_ns, b.limit)),
            Ok((99.9, 100_000, Limit::Ns(50_000.0)))
        );
        for (bad, names) in [
            ("p100:1ms:+5%", "unknown percentile `p100`"),
            ("q99:1ms:+5%", "unknown percentile `q99`"),
            ("p99:1:+5%", "size `1` is not a number with a unit"),
            ("p99:0ms:+5%", "size `0ms` is not above 0"),
            ("p99:1ms:-5%", "not above 0"),
            ("p99:1ms:+0us", "not above 0"),
            ("p99:1ms", "2 parts, not 3"),
        ] {
            let Err(e) = parse(bad) else {
                panic!("{bad} parsed");
            };
            assert!(
                e.contains(names) && e.contains("e.g. 'p99:1ms:+5%'"),
                "{bad}: {e}"
            );
        }
    }
}
