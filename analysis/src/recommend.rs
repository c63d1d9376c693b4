//! `analysis recommend DIR --budget 1%`: the highest sampling rate whose
//! loss stays within a budget at the upper end of the loss model's 95 %
//! prediction for a next run.
//!
//! One model ([`model::LossModel`]) that every design feeds: the gaps
//! design's cost per sample, and a cost outside the gaps fitted through
//! what the paired and split designs measured beyond it, charged only
//! where it grows with the rate. One search ([`search`]) reads it. A set
//! with no gaps design answers from its throughput loss
//! (`throughput.rs`).

use results_format::summary::SUMMARY_BUDGETS;

use crate::error::AnalysisError;
use crate::findings::Measured;

pub mod evidence;
pub mod latency;
pub mod model;
pub mod recommendation;
pub mod search;
mod throughput;

pub use model::{Contribution, LossModel};
pub use recommendation::{Budgeted, MEAN_INTERVAL, PREDICTION_INTERVAL, Recommendation};
pub use search::{CostCurve, CostPoint, CostSource, MAX_SUGGESTED_HZ, nice_prime_below};
pub use throughput::{BOUND_BASIS, what_would_resolve};

/// `basis` of a recommendation from the loss model.
pub const MODEL_BASIS: &str = "loss model: the gaps design's cost per sample, and the loss outside the gaps where it grows with the rate";

/// Parse `1%`, `1`, `0.5 %` as a budget in percent.
pub fn parse_budget(s: &str) -> Result<f64, AnalysisError> {
    let t = s.trim().trim_end_matches('%').trim();
    match t.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 100.0 && v.is_finite() => Ok(v),
        _ => Err(AnalysisError::Invalid(format!(
            "--budget `{s}`: expected a loss budget in percent, above 0 and below 100, e.g. `--budget 1%`"
        ))),
    }
}

/// The loss budgets every report answers, %: the summary's
/// ([`SUMMARY_BUDGETS`], whose budget columns the same answers fill).
pub const BUDGETS_PCT: [f64; 3] = [
    SUMMARY_BUDGETS[0].0,
    SUMMARY_BUDGETS[1].0,
    SUMMARY_BUDGETS[2].0,
];

/// Recommend a rate for `budget_pct`: the search on the loss model's
/// curve, with the gaps term alone's rate, each instrument's part and the
/// outside term's tests beside it; without a gaps term, the throughput
/// loss.
pub fn recommend(a: &Measured, budget_pct: f64) -> Result<Recommendation, AnalysisError> {
    recommend_with(a, &loss_model(a), budget_pct)
}

/// [`recommend`] on the set's loss model fitted already (the pipeline
/// fits it once for all the report budgets, [`BUDGETS_PCT`]).
pub fn recommend_with(
    a: &Measured,
    model: &Result<LossModel, Option<String>>,
    budget_pct: f64,
) -> Result<Recommendation, AnalysisError> {
    match model {
        Ok(m) => Ok(on_model(m, budget_pct)),
        Err(why) => throughput::recommend(a, budget_pct, why.clone()),
    }
}

/// The loss model of a set's findings ([`LossModel::fit`] on its tables);
/// Err(why) without a gaps term (None: no gaps design at all).
pub fn loss_model(a: &Measured) -> Result<LossModel, Option<String>> {
    LossModel::fit(
        a.gaps.per_sample.as_ref(),
        &a.tables.loss,
        &a.gaps.split.rows,
    )
}

fn on_model(m: &LossModel, budget_pct: f64) -> Recommendation {
    let alone = search::search(&m.gaps_curve(), budget_pct, MODEL_BASIS);
    let mut rec = search::search(&m.curve(), budget_pct, MODEL_BASIS);
    let gaps_at = rec.rate_hz.unwrap_or(0) as f64;
    rec.model_cost_ns = rec.rate_hz.map(|_| m.gaps_curve().at(gaps_at).cost_ns);
    rec.model_rate_hz = alone.rate_hz;
    rec.outside_ns = m.outside.map(|o| o.cost_ns);
    rec.heterogeneity = m.heterogeneous();
    rec.contributions = m.contributions();
    rec.reasoning
        .push(basis_sentence(&rec.contributions, m.outside.is_some()));
    rec.reasoning.extend(m.sentences());
    if m.outside.is_some() {
        rec.reasoning.push(format!(
            "The gaps term alone would recommend {}.",
            alone
                .rate_hz
                .map_or("no rate".to_string(), |r| format!("{r} Hz"))
        ));
    }
    rec
}

/// "Basis: model (...); its instruments and their weights: ...".
fn basis_sentence(parts: &[Contribution], charged: bool) -> String {
    let outside: Vec<String> = parts
        .iter()
        .skip(1)
        .map(|c| format!("{} {:.2}", c.instrument, c.weight))
        .collect();
    let term = if outside.is_empty() {
        "no design measured an outside term".to_string()
    } else {
        format!(
            "the outside term ({}) weighs {}",
            if charged { "charged" } else { "not charged" },
            outside.join(", ")
        )
    };
    format!("Basis: model ({MODEL_BASIS}); the gaps term is the cost per sample, weight 1; {term}.")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn budgets() {
        assert_eq!(parse_budget("1%").unwrap(), 1.0);
        assert_eq!(parse_budget(" 0.5 % ").unwrap(), 0.5);
        assert!(parse_budget("abc").is_err());
        assert!(parse_budget("0").is_err());
        assert!(parse_budget("150%").is_err());
    }
}
