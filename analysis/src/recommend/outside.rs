//! The loss outside the gaps, charged: where the split design's part
//! outside the gaps resolves above 0 (within runs, or against the 0 Hz
//! runs where a slowdown outlasts the phase:
//! [`crate::split::SplitRow::resolved_outside`]), the cost per sample it
//! implies with the loss in the gaps is charged at every rate, on top of
//! whichever basis answered. The per-sample model holds the gaps and the
//! after-effect it measures; a slower speed mode between interrupts lies
//! in neither.

use super::{CostCurve, CostPoint, CostSource, MEAN_INTERVAL, Recommendation};
use crate::findings::Findings;
use crate::percost::predicted_loss_pct;
use crate::split::{OutsideBasis, SplitRow};
use crate::stats::Estimate;

/// `basis` of an answer that the loss outside the gaps lowered.
pub const OUTSIDE_BASIS: &str =
    "the loss in and outside the gaps (split design), charged above the other bases";

/// The cost per sample one split row implies, ns: (in the gaps + outside
/// them) / achieved rate, the bounds added (a conservative interval), and
/// how the outside part was measured. None where the outside part does not
/// resolve above 0.
fn split_cost(r: &SplitRow) -> Option<(CostPoint, Estimate, OutsideBasis)> {
    let (out, basis) = r.resolved_outside()?;
    let rate = if r.achieved_hz > 0.0 {
        r.achieved_hz
    } else {
        r.freq_hz as f64
    };
    let k = 1.0 / predicted_loss_pct(rate, 1.0);
    let i = r.in_gaps;
    let cost = Estimate {
        value: (i.value + out.value) * k,
        lo: (i.lo + out.lo) * k,
        hi: (i.hi + out.hi) * k,
        se: i.se.hypot(out.se) * k,
        n: out.n.min(i.n),
    };
    cost.hi.is_finite().then_some((
        CostPoint {
            freq_hz: r.freq_hz,
            cost_ns: cost,
            source: CostSource::Split,
        },
        out,
        basis,
    ))
}

/// The largest cost per sample (by upper bound) that a split row with a
/// resolved outside part implies, with that part and its basis.
pub fn outside_floor(a: &Findings) -> Option<(CostPoint, Estimate, OutsideBasis)> {
    a.gaps
        .split
        .rows
        .iter()
        .filter(|r| r.freq_hz > 0)
        .filter_map(split_cost)
        .max_by(|x, y| x.0.cost_ns.hi.total_cmp(&y.0.cost_ns.hi))
}

/// `rec` with the loss outside the gaps charged: where the cost per sample
/// the split design implies puts `rec`'s rate over the budget, the rate
/// it allows instead (basis [`OUTSIDE_BASIS`]); either way, a sentence
/// saying what was charged. Unchanged without a resolved outside part.
pub fn charge(a: &Findings, rec: Recommendation, budget_pct: f64) -> Recommendation {
    let Some((point, out, basis)) = outside_floor(a) else {
        return rec;
    };
    let c = point.cost_ns;
    let said = format!(
        "The loss outside the gaps resolves above 0 at {} Hz ({}): {:.3}% [{:.3}, {:.3}]; with the loss in the gaps it is {:.0} ns [{:.0}, {:.0}] per sample, charged at every rate.",
        point.freq_hz,
        basis.words(),
        out.value,
        out.lo,
        out.hi,
        c.value,
        c.lo,
        c.hi
    );
    // The rate the charge allows: rate x its upper cost within budget.
    let cap_hz = if c.hi > 0.0 {
        budget_pct / predicted_loss_pct(1.0, c.hi)
    } else {
        f64::INFINITY
    };
    let Some(rate) = rec.rate_hz.filter(|&r| r as f64 > cap_hz) else {
        let mut rec = rec;
        rec.reasoning.push(format!(
            "{said} It does not lower the rate: {} stands.",
            rec.headline()
        ));
        return rec;
    };
    let alone = CostCurve {
        points: vec![point],
        floor: None,
    };
    let suggested = super::suggestion(&alone, budget_pct, cap_hz);
    let loss = |cost: f64, r: u64| predicted_loss_pct(r as f64, cost);
    let mut reasons = vec![format!(
        "{said} It lowers the rate: the other bases alone gave {rate} Hz ({}); with this cost the {budget_pct}% budget holds up to {cap_hz:.0} Hz.",
        rec.basis
    )];
    if let Some(s) = suggested {
        reasons.push(format!(
            "Suggested {s} Hz: a prime just below {cap_hz:.0} Hz, where the loss in and outside the gaps is {:.4}% [{:.4}, {:.4}].",
            loss(c.value, s),
            loss(c.lo, s),
            loss(c.hi, s)
        ));
    }
    reasons.extend(rec.reasoning.iter().cloned());
    let measured_hz = rec.measured_hz.filter(|&m| m as f64 <= cap_hz);
    Recommendation {
        max_hz: Some(cap_hz),
        interpolated: true,
        measured_hz,
        measured_upper_pct: measured_hz.map(|m| loss(c.hi, m)),
        suggested_hz: suggested,
        rate_hz: suggested,
        predicted_loss_pct: suggested.map(|s| loss(c.value, s)),
        predicted_loss_lo_pct: suggested.map(|s| loss(c.lo, s)),
        predicted_loss_hi_pct: suggested.map(|s| loss(c.hi, s)),
        basis: OUTSIDE_BASIS.to_string(),
        outside_ns: Some(c),
        // The split parts' intervals are over runs, of the mean.
        interval: MEAN_INTERVAL.to_string(),
        conservative: false,
        bound_only: false,
        resolvable: true,
        at_highest_measured: false,
        model_rate_hz: rec.model_rate_hz.or(rec.rate_hz),
        reasoning: reasons,
        ..rec
    }
}
