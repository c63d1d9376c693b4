//! The `--json` answer: what a command answers for one budget, in one
//! shape for every kind (docs/results-format.md, "--json answers"), as
//! `driver check --json` and `analysis recommend --json` print it.

use serde::{Deserialize, Serialize};

use crate::summary::SummaryRow;

/// The answer's own version: a reader refuses a later one.
pub const ANSWER_VERSION: u32 = 1;

/// Which command answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    /// `analysis recommend` on a set of our sampler's runs.
    Sampler,
    /// `analysis recommend` on a `--profiler` set.
    Profiler,
    /// `driver check`.
    Check,
}

/// One answer for one budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// [`ANSWER_VERSION`].
    pub format_version: u32,
    /// Which command answered.
    pub kind: AnswerKind,
    /// The loss budget, %.
    pub budget_pct: f64,
    /// The rate to set (a prime below `max_hz`, as perf's 99 is), Hz; null
    /// when nothing is within the budget or nothing resolves.
    pub rate_hz: Option<u64>,
    /// The highest rate within the budget, Hz.
    pub max_hz: Option<f64>,
    /// The basis of `max_hz`, one word (summary.parquet's `budget_*_basis`).
    pub basis: String,
    /// The basis in a sentence.
    pub basis_text: String,
    /// Whether `max_hz` is the highest rate measured (the budget may allow more).
    pub at_highest_measured: Option<bool>,
    /// Whether the data resolve an answer at all.
    pub resolvable: bool,
    /// A check's verdict on the rate it measured: true within budget,
    /// false over, null unresolved (and for recommend).
    pub within_budget: Option<bool>,
    /// Why the answer is what it is: each unresolved or doubtful point, with
    /// what would resolve it.
    pub reasons: Vec<String>,
    /// The summary rows the answer rests on.
    pub rows: Vec<SummaryRow>,
    /// Each kind's own fields (a check: `measured_hz`, `exit_code`, `dir`).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}
