//! `analysis recommend --json`: a recommendation in the one answer shape
//! every `--json` answer has (`results_format::answer::Answer`,
//! docs/results-format.md "--json answers"), `driver check`'s too. What
//! only a sampler's or a profiler's answer says is kept beside the shared
//! fields, under its own key.

use results_format::answer::{ANSWER_VERSION, Answer, AnswerKind};
use results_format::summary::SummaryRow;

use crate::recommend::{Recommendation, nice_prime_below};
use crate::subject::profiler::{ProfilerRecommendation, ProfilerTable};

/// The shared fields' keys: taken out of a kind's own fields, which keep
/// the rest.
const SHARED: [&str; 7] = [
    "budget_pct",
    "rate_hz",
    "max_hz",
    "basis",
    "at_highest_measured",
    "resolvable",
    "reasons",
];

fn extras(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    let serde_json::Value::Object(mut m) = v else {
        return serde_json::Map::new();
    };
    for k in SHARED {
        m.remove(k);
    }
    m
}

/// Our sampler's recommendation as the answer, on `rows` (the set's
/// primary summary rows).
pub fn sampler(rec: &Recommendation, rows: Vec<SummaryRow>) -> Answer {
    Answer {
        format_version: ANSWER_VERSION,
        kind: AnswerKind::Sampler,
        budget_pct: rec.budget_pct,
        rate_hz: rec.rate_hz,
        max_hz: rec.max_hz,
        basis: crate::summary::basis_word(rec).to_string(),
        basis_text: rec.basis.clone(),
        at_highest_measured: Some(rec.at_highest_measured),
        resolvable: rec.resolvable,
        within_budget: None,
        reasons: rec.reasoning.clone(),
        rows,
        extra: extras(serde_json::to_value(rec).unwrap_or_default()),
    }
}

/// A `--profiler` set's recommendation as the answer.
pub fn profiler(rec: &ProfilerRecommendation, t: &ProfilerTable, rows: Vec<SummaryRow>) -> Answer {
    Answer {
        format_version: ANSWER_VERSION,
        kind: AnswerKind::Profiler,
        budget_pct: rec.budget_pct,
        rate_hz: rec.max_hz.and_then(nice_prime_below),
        max_hz: rec.max_hz,
        basis: crate::summary::profiler_basis_word(rec).to_string(),
        basis_text: rec.basis.clone(),
        at_highest_measured: Some(rec.at_highest_measured),
        resolvable: t.rows.iter().any(|x| x.resolved()),
        within_budget: None,
        reasons: Vec::new(),
        rows,
        extra: extras(serde_json::to_value(rec).unwrap_or_default()),
    }
}

/// `answer` with a latency budget's answer `l`: `rate_hz` becomes the lower
/// of the two budgets' rates, the loss budget's own stays as
/// `loss_rate_hz`, and `l` whole goes under `latency`.
pub fn with_latency(mut answer: Answer, l: &crate::recommend::latency::LatencyAnswer) -> Answer {
    let (rate, latency) = (serde_json::json!(answer.rate_hz), serde_json::to_value(l));
    answer.extra.insert("loss_rate_hz".into(), rate);
    answer
        .extra
        .insert("latency".into(), latency.unwrap_or_default());
    answer.rate_hz = l.combined(answer.rate_hz);
    answer.reasons.extend(l.reasons.iter().cloned());
    answer
}
