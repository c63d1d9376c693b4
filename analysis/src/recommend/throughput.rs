//! A set with no gaps design (old sets, `--command`): its measured
//! throughput loss (paired design where present, else classic) is the
//! model's only term, against the budget, read between measured rates off
//! the fitted loss line's upper 95 % band; where that resolves no rate,
//! the range certainly within budget from the upper bounds alone.

use super::search::{CostCurve, CostPoint, nice_prime_below, search};
use super::{MEAN_INTERVAL, Recommendation};
use crate::error::AnalysisError;
use crate::findings::Measured;
use crate::row_types::LossRow;
use crate::stats::Estimate;

/// `basis` of an answer from upper bounds alone.
pub const BOUND_BASIS: &str = "upper bounds of the throughput loss (nothing resolves)";

/// Why nothing is recommended when the loss interval at the `lowest`
/// measured rate is wider (`half_width`, percentage points) than the budget.
fn unresolvable_reasons(lowest: &LossRow, half_width: f64, budget_pct: f64) -> Vec<String> {
    vec![
        format!(
            "The 95% interval of the loss at the lowest measured rate, {} Hz, is +-{:.2} percentage points wide, more than the {budget_pct}% budget.",
            lowest.freq_hz, half_width
        ),
        "The data cannot tell whether any rate stays within this budget: measure more repetitions or longer runs (the paired design cancels drift), or give a larger budget.".to_string(),
    ]
}

/// Why nothing is recommended when even the `lowest` measured rate exceeds
/// the budget.
fn none_safe_reasons(lowest: &LossRow, budget_pct: f64) -> Vec<String> {
    vec![
        format!(
            "Even at the lowest measured rate, {} Hz, the loss is {:.3}% with a 95% upper bound of {:.3}%, above the {budget_pct}% budget.",
            lowest.freq_hz, lowest.trusted().value, lowest.trusted().hi
        ),
        "No measured rate is certainly within budget; a lower rate may be, but it was not measured (the fixed cost of having perf on may already exceed the budget).".to_string(),
    ]
}

/// The throughput basis: the analysis' primary loss rows (paired design
/// where present) and the fitted loss line.
fn recommend_throughput(a: &Measured, budget_pct: f64) -> Result<Recommendation, AnalysisError> {
    let mut pts = a.tables.primary_loss();
    pts.retain(|r| r.trusted().hi.is_finite());
    if pts.is_empty() {
        return Err(AnalysisError::Insufficient(
            "no loss measurement with a 95% interval (need loss runs at 0 Hz and at least one \
             frequency, two or more repetitions each, or paired runs)"
                .to_string(),
        ));
    }
    let mut rec = Recommendation::nothing_yet(
        budget_pct,
        "throughput loss (paired design where measured, else classic)".to_string(),
    );
    let lowest = pts[0];
    let hw = lowest.trusted().half_width();
    // Unresolvable only where the lowest rate's upper bound is above the
    // budget too: an interval wider than the budget that still lies below
    // it answers the budget (a tighter budget answered from upper bounds
    // alone could otherwise get a higher rate than a looser one).
    if hw > budget_pct && lowest.trusted().hi > budget_pct {
        rec.resolvable = false;
        rec.reasoning = unresolvable_reasons(lowest, hw, budget_pct);
        return Ok(rec);
    }
    // The highest row within budget below which every measured one is too
    // (conservative against a noisy dip), and the first row above it.
    let above = pts
        .iter()
        .position(|r| r.trusted().hi > budget_pct)
        .unwrap_or(pts.len());
    let (safe, next) = (
        above.checked_sub(1).map(|i| pts[i]),
        pts.get(above).copied(),
    );
    let Some(safe) = safe else {
        rec.reasoning = none_safe_reasons(lowest, budget_pct);
        return Ok(rec);
    };
    rec.measured_hz = Some(safe.freq_hz);
    rec.measured_upper_pct = Some(safe.trusted().hi);
    let (max_hz, how) = match (next, a.tables.fits.loss_line) {
        (Some(next), Some(fit)) => budget_on_fit(safe, next, &fit, budget_pct),
        _ => None,
    }
    .map_or((safe.freq_hz as f64, String::new()), |(hz, how)| {
        rec.interpolated = true;
        (hz, how)
    });
    rec.max_hz = Some(max_hz);
    rec.at_highest_measured = next.is_none();
    rec.rate_hz = nice_prime_below(max_hz);
    rec.basis = format!("throughput loss ({} design)", safe.design);
    let predicted = predicted_loss(&rec, a, safe);
    if rec.rate_hz.is_some() {
        rec.predicted_loss_pct = Some(predicted.value);
        rec.predicted_loss_lo_pct = Some(predicted.lo);
        rec.predicted_loss_hi_pct = Some(predicted.hi);
    }
    rec.reasoning = reasoning(&pts, safe, next, &rec, max_hz, &how, budget_pct);
    Ok(rec)
}

/// Between the highest measured rate within budget (`safe`) and the first
/// above it (`next`): where the fitted line's upper 95 % band reaches the
/// budget, by bisection, and the sentence that says so; None when the fit
/// does not place it strictly between them.
fn budget_on_fit(
    safe: &LossRow,
    next: &LossRow,
    fit: &crate::fit::LineFit,
    budget_pct: f64,
) -> Option<(f64, String)> {
    let upper = |f_hz: f64| {
        let x = f_hz / 1000.0;
        fit.at(x) + fit.band_half_width(x)
    };
    let (f0, f1) = (safe.freq_hz as f64, next.freq_hz as f64);
    if upper(f0) > budget_pct || fit.slope <= 0.0 {
        return None;
    }
    // Where the fit's upper band reaches the budget, at most `next` (the
    // fit may stay below a budget the measured `next` exceeds).
    let lo = if upper(f1) <= budget_pct {
        f1
    } else {
        crate::stats::bisect(f0, f1, 100, |f| upper(f) <= budget_pct)
    };
    // Where the straight line between the two measured upper bounds
    // reaches it: below `next`, since `next`'s bound exceeds the budget.
    let (u0, u1) = (safe.trusted().hi, next.trusted().hi);
    let on_bounds = f0 + (budget_pct - u0) / (u1 - u0) * (f1 - f0);
    // The lower of the two: each grows with the budget, so a looser budget
    // never gets a lower rate (the fit alone, where it stayed below the
    // budget up to `next`, fell back to `safe` and broke that).
    let at = lo.min(on_bounds);
    let by_fit = lo <= on_bounds;
    (at > f0 && at < f1).then(|| {
        let how = if by_fit {
            format!(
                " Between them, the fitted line loss = {:.3}% + {:.4} %/kHz x f reaches the budget with its upper 95% band at {at:.0} Hz (below where the line between the two upper bounds does).",
                fit.intercept, fit.slope
            )
        } else {
            format!(
                " Between them, the line between the two measured upper bounds reaches the budget at {at:.0} Hz (below where the fitted line's upper band does)."
            )
        };
        (at, how)
    })
}

/// The loss at the suggested rate: on the fitted line when it was
/// interpolated, else the measured loss of the rate within budget.
fn predicted_loss(rec: &Recommendation, a: &Measured, safe: &LossRow) -> Estimate {
    match (rec.rate_hz, a.tables.fits.loss_line) {
        (Some(hz), Some(fit)) if rec.interpolated => {
            let x = hz as f64 / 1000.0;
            let (v, h) = (fit.at(x), fit.band_half_width(x));
            Estimate::around(v, h, f64::NAN, fit.n)
        }
        // At or below the measured rate within budget: its measured loss
        // (an upper estimate for a lower rate).
        _ => safe.trusted(),
    }
}

/// The two sentences of the recommendation: what was measured against the
/// budget, and the suggested rate with the method behind it.
fn reasoning(
    pts: &[&LossRow],
    safe: &LossRow,
    next: Option<&LossRow>,
    rec: &Recommendation,
    max_hz: f64,
    how: &str,
    budget_pct: f64,
) -> Vec<String> {
    let first = match next {
        Some(n) => format!(
            "At {} Hz the loss is {:.3}% (95% upper bound {:.3}% <= {budget_pct}%); at {} Hz the upper bound {:.3}% exceeds the budget.{how}",
            safe.freq_hz,
            safe.trusted().value,
            safe.trusted().hi,
            n.freq_hz,
            n.trusted().hi
        ),
        None => format!(
            "Every measured rate is within budget; the highest, {} Hz, loses {:.3}% (95% upper bound {:.3}%); rates above it were not measured, so none above it is recommended: the budget allows at least this much.",
            safe.freq_hz,
            safe.trusted().value,
            safe.trusted().hi
        ),
    };
    let method = if pts.iter().any(|r| r.runs_disagree()) {
        format!(
            "{}; the interval over runs decides (at {} Hz the runs disagree: ANOVA p < 0.05)",
            safe.method,
            pts.iter()
                .filter(|r| r.runs_disagree())
                .map(|r| r.freq_hz.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        safe.method.clone()
    };
    let second = match rec.rate_hz {
        Some(p) => format!(
            "Suggested {p} Hz: a prime just below {max_hz:.0} Hz (like perf's 97/997 Hz) so samples do not run in lock-step with periodic work; loss from the {} design ({method}).",
            safe.design
        ),
        None => format!("Loss from the {} design ({method}).", safe.design),
    };
    vec![first, second]
}

/// Without a gaps term (`why` says why, where there is a gaps design):
/// the throughput basis; where it gives no rate, the range within budget
/// from the upper bounds of the loss per sample.
pub(super) fn recommend(
    a: &Measured,
    budget_pct: f64,
    why: Option<String>,
) -> Result<Recommendation, AnalysisError> {
    // Nothing to answer from: the error says why there is no gaps term too.
    let mut rec = recommend_throughput(a, budget_pct).map_err(|e| match (e, &why) {
        (AnalysisError::Insufficient(e), Some(w)) => {
            AnalysisError::Insufficient(format!("{e}. {w}"))
        }
        (e, _) => e,
    })?;
    if rec.rate_hz.is_none()
        && let Some(b) = from_upper_bounds(a, budget_pct, &rec)
    {
        rec = b;
    }
    rec.reasoning.extend(why);
    Ok(rec)
}

/// The rates within budget from upper bounds alone: each loss row's upper
/// bound over its rate is a bound on the cost per sample there, charged
/// as the model's costs are (the lowest rate's below it). None when no row
/// has a finite bound or even 2 Hz exceeds the budget.
fn from_upper_bounds(
    a: &Measured,
    budget_pct: f64,
    unresolved: &Recommendation,
) -> Option<Recommendation> {
    let mut points: Vec<CostPoint> = a
        .tables
        .primary_loss()
        .into_iter()
        .filter_map(CostPoint::throughput)
        .filter(|p| p.cost_ns.hi.is_finite())
        .collect();
    if points.is_empty() {
        return None;
    }
    // Only the upper bound matters here, and a bound below 0 says nothing.
    for p in &mut points {
        p.cost_ns.hi = p.cost_ns.hi.max(0.0);
    }
    let curve = CostCurve { points };
    let mut rec = search(&curve, budget_pct, BOUND_BASIS);
    rec.rate_hz?;
    rec.bound_only = true;
    rec.resolvable = unresolved.resolvable;
    rec.interval = MEAN_INTERVAL.to_string();
    let mut reasons = unresolved.reasoning.clone();
    reasons.push(
        "From the upper bounds alone: the loss at a rate r is at most r x the largest upper bound of the loss per sample among the measured rates at or below r (the lowest rate's below it), assuming a sample costs no more below the lowest measured rate than at it:"
            .to_string(),
    );
    reasons.append(&mut rec.reasoning);
    if !unresolved.resolvable {
        reasons.push(what_would_resolve(&a.tables.primary_loss(), budget_pct));
    }
    rec.reasoning = reasons;
    Some(rec)
}

/// What would resolve the budget at the lowest measured rate: how many
/// times more runs its interval needs.
pub fn what_would_resolve(rows: &[&LossRow], budget_pct: f64) -> String {
    let Some(low) = rows.first() else {
        return "Measure loss runs at 0 Hz and at the rates of interest.".to_string();
    };
    let e = low.trusted();
    let hw = e.half_width();
    let factor = (hw / (0.5 * budget_pct)).powi(2).ceil();
    format!(
        "To resolve a {budget_pct}% budget the interval at {} Hz (+-{:.2} pp over {} runs) must shrink to about +-{:.2} pp: about {factor:.0} times the runs (--reps) or runs that long, or a quieter CPU (--cpu: the host look before the sweep says how steady each is).",
        low.freq_hz,
        hw,
        e.n,
        0.5 * budget_pct
    )
}
