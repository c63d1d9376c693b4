//! A recommendation and its reasoning ([`Recommendation`]), a leaf: the
//! analysed result (`pipeline::Findings::budgets`) holds them, the
//! parent module works them out.

use crate::error::AnalysisError;
use crate::stats::Estimate;

/// `interval` of a recommendation whose costs are per-run predictions.
pub const PREDICTION_INTERVAL: &str =
    "95% prediction interval over runs (the next run's cost), upper end";
/// `interval` of a recommendation from throughput loss intervals.
pub const MEAN_INTERVAL: &str = "95% interval of the mean loss over runs, upper end";

/// A recommendation and its reasoning.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Recommendation {
    pub budget_pct: f64,
    /// Highest frequency (Hz) within budget; None when no measured rate is.
    pub max_hz: Option<f64>,
    /// Whether `max_hz` lies between measured frequencies, read off the
    /// fitted loss line's upper 95 % band.
    pub interpolated: bool,
    /// Highest measured frequency within budget.
    pub measured_hz: Option<u64>,
    /// Loss upper bound (%) at `measured_hz`.
    pub measured_upper_pct: Option<f64>,
    /// False when the data cannot resolve the budget (interval too wide).
    pub resolvable: bool,
    /// The rate recommended, Hz: a prime just below max_hz (rounded to 2
    /// significant figures).
    pub rate_hz: Option<u64>,
    /// Loss predicted at `rate_hz`, %, with its 95 % interval.
    pub predicted_loss_pct: Option<f64>,
    pub predicted_loss_lo_pct: Option<f64>,
    pub predicted_loss_hi_pct: Option<f64>,
    /// What the answer rests on: [`crate::recommend::MODEL_BASIS`], the
    /// throughput loss or its bounds.
    pub basis: String,
    /// Which interval the answer's bounds are: [`PREDICTION_INTERVAL`] or
    /// [`MEAN_INTERVAL`].
    pub interval: String,
    /// True when nothing resolves and the answer is the range of rates
    /// within budget from upper bounds alone.
    pub bound_only: bool,
    /// The gaps term's cost per sample at the rate (prediction interval
    /// over runs), ns, where the loss model answered.
    pub model_cost_ns: Option<Estimate>,
    /// The loss model's outside term charged at every rate, as a cost per
    /// sample, ns; None where none is charged.
    pub outside_ns: Option<Estimate>,
    /// The loss model's within-run and between-run estimates of the
    /// outside term disagree beyond their joint uncertainty.
    pub heterogeneity: bool,
    /// Each instrument's part in the answer and its weight.
    pub contributions: Vec<crate::recommend::Contribution>,
    /// True when every measured rate is within budget, so the answer is
    /// the highest measured rate (rates above it were not measured): the
    /// budget allows at least this much.
    pub at_highest_measured: bool,
    /// The rate the gaps term alone would recommend, Hz.
    pub model_rate_hz: Option<u64>,
    /// The reasoning, one sentence group per line.
    #[serde(rename = "reasons")]
    pub reasoning: Vec<String>,
}

impl Recommendation {
    /// A recommendation for `budget_pct` on `basis` that recommends nothing
    /// yet: resolvable, no rate, no prediction, no reasoning.
    pub(crate) fn nothing_yet(budget_pct: f64, basis: String) -> Self {
        Self {
            budget_pct,
            resolvable: true,
            basis,
            interval: MEAN_INTERVAL.to_string(),
            ..Self::default()
        }
    }

    /// One-line answer.
    pub fn headline(&self) -> String {
        match (self.rate_hz, self.max_hz) {
            (Some(s), Some(m)) if self.bound_only => format!(
                "sample at {s} Hz or less: from the loss upper bounds alone, every rate up to {m:.0} Hz is within budget"
            ),
            (Some(s), Some(m)) => {
                format!("sample at {s} Hz (highest rate within budget: {m:.0} Hz)")
            }
            (None, Some(m)) => format!("highest rate within budget: {m:.0} Hz"),
            _ if !self.resolvable => {
                "budget below what the data can resolve; no rate recommended".to_string()
            }
            _ => "no measured rate stays within the budget".to_string(),
        }
    }
}

/// A budget, %, and its recommendation.
pub type Budgeted = (f64, Result<Recommendation, AnalysisError>);
