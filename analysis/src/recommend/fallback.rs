//! The recommendations that are not the plain model: the conservative
//! branch where the model and the throughput loss disagree, and, without a
//! model, the throughput basis or, where nothing resolves, the range of
//! rates within budget from upper bounds alone.

use super::{CostCurve, CostPoint, MEAN_INTERVAL, Recommendation, recommend_on};
use crate::error::AnalysisError;
use crate::findings::Findings;
use crate::percost::PerSampleRow;
use crate::row_types::LossRow;

/// `basis` of the conservative branch.
pub const CONSERVATIVE_BASIS: &str =
    "the more conservative of the per-sample cost model and the paired throughput loss";
/// `basis` of an answer from upper bounds alone.
pub const BOUND_BASIS: &str = "upper bounds of the throughput loss (nothing resolves)";

/// The cost per sample the paired loss implies where the model
/// under-predicts it (the largest upper bound of those rates): the floor
/// the conservative branch charges. Only where the paired loss is the
/// higher one does it raise the cost; where the model predicts more, the
/// model is the conservative one.
pub(super) fn throughput_floor(a: &Findings, disagree: &[&PerSampleRow]) -> Option<CostPoint> {
    let primary = a.tables.primary_loss();
    disagree
        .iter()
        .filter(|r| super::under_predicts(r))
        .filter_map(|r| primary.iter().find(|l| l.freq_hz == r.freq_hz))
        .filter_map(|l| CostPoint::throughput(l))
        .filter(|p| p.cost_ns.hi.is_finite())
        .max_by(|x, y| x.cost_ns.hi.total_cmp(&y.cost_ns.hi))
}

/// Model and throughput disagree at the `disagree` rows: charge at every
/// rate the larger of the model's cost and the cost per sample the
/// throughput loss implies there, never recommend above the throughput
/// basis' own answer, and say both.
pub(super) fn conservative(
    a: &Findings,
    model_curve: &CostCurve,
    disagree: &[&PerSampleRow],
    throughput: Option<Recommendation>,
    budget_pct: f64,
) -> Recommendation {
    let floor = throughput_floor(a, disagree);
    let curve = CostCurve {
        points: model_curve.points.clone(),
        floor,
    };
    let model_alone = recommend_on(model_curve, budget_pct, super::MODEL_BASIS);
    let mut rec = recommend_on(&curve, budget_pct, CONSERVATIVE_BASIS);
    let thr_rate = throughput.as_ref().and_then(|t| t.rate_hz);
    let mut reasons = vec![disagreement_sentence(disagree)];
    if let (Some(t), Some(tr)) = (throughput.as_ref(), thr_rate)
        && rec.rate_hz.is_none_or(|r| tr < r)
    {
        // The throughput basis alone is stricter: it decides.
        let floor_cost = rec.throughput_cost_ns;
        rec = Recommendation {
            basis: CONSERVATIVE_BASIS.to_string(),
            throughput_cost_ns: floor_cost,
            model_cost_ns: model_alone.model_cost_ns,
            ..t.clone()
        };
        reasons.push(format!(
            "The throughput basis alone gives the lower rate, {tr} Hz, so it decides:"
        ));
    } else if floor.is_none() {
        reasons.push(
            "Where they disagree the paired loss is below the prediction: the model is the more conservative of the two and decides:"
                .to_string(),
        );
    } else if let Some(f) = floor {
        reasons.push(format!(
            "So at every rate the larger of the model's cost and the cost per sample the paired loss implies at {} Hz, {:.0} ns [{:.0}, {:.0}] (loss / achieved rate), is charged:",
            f.freq_hz, f.cost_ns.value, f.cost_ns.lo, f.cost_ns.hi
        ));
    }
    reasons.append(&mut rec.reasoning);
    reasons.push(format!(
        "The model alone would recommend {}; the throughput basis alone {}.",
        rate_words(model_alone.rate_hz),
        match (&throughput, thr_rate) {
            (_, Some(r)) => format!("{r} Hz"),
            (Some(t), None) => format!("nothing ({})", t.headline()),
            (None, None) => "nothing (no throughput loss with an interval)".to_string(),
        }
    ));
    rec.reasoning = reasons;
    rec.conservative = true;
    rec.model_rate_hz = model_alone.rate_hz;
    rec.throughput_rate_hz = thr_rate;
    rec
}

fn rate_words(r: Option<u64>) -> String {
    r.map_or("no rate".to_string(), |r| format!("{r} Hz"))
}

/// Where the model's prediction and the paired loss disagree, in one
/// sentence.
fn disagreement_sentence(disagree: &[&PerSampleRow]) -> String {
    let parts: Vec<String> = disagree
        .iter()
        .map(|r| {
            let p = r.paired_loss_pct.unwrap_or(r.predicted_loss_pct);
            format!(
                "at {} Hz the model predicts {:.3}% [{:.3}, {:.3}], the paired design measured {:.3}% [{:.3}, {:.3}]",
                r.freq_hz,
                r.predicted_loss_pct.value,
                r.predicted_loss_pct.lo,
                r.predicted_loss_pct.hi,
                p.value,
                p.lo,
                p.hi
            )
        })
        .collect();
    format!(
        "The per-sample cost model and the throughput loss disagree ({}), so the more conservative of the two is used.",
        parts.join("; ")
    )
}

/// Without a model: the throughput basis; where it gives no rate, the
/// range within budget from the upper bounds of the loss per sample.
pub(super) fn without_model(
    a: &Findings,
    budget_pct: f64,
    throughput: Result<Recommendation, AnalysisError>,
    why: Option<String>,
) -> Result<Recommendation, AnalysisError> {
    let mut rec = match throughput {
        Ok(rec) => rec,
        Err(AnalysisError::Insufficient(e)) => {
            return Err(AnalysisError::Insufficient(match why {
                Some(w) => format!("{e}. {w}"),
                None => e,
            }));
        }
        Err(e) => return Err(e),
    };
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
    a: &Findings,
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
    let curve = CostCurve {
        points,
        floor: None,
    };
    let mut rec = recommend_on(&curve, budget_pct, BOUND_BASIS);
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
