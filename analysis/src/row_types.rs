//! The rows of Table 1 (handler utilisation), Table 2 (performance loss)
//! and the tracing cost, with the judgements that belong to one row: a
//! leaf, so that every computation can build on them without reaching
//! into the pipeline that assembles them.

use results_format::Design;
use serde::{Serialize, Serializer};

use crate::columns::{cells, lo_hi_unit, value};
use crate::stats::Estimate;

/// Warn when a paired row's group losses differ between runs at this
/// significance (one-way ANOVA by run).
pub const BETWEEN_RUNS_P: f64 = 0.05;
/// Loss in util runs above loss runs by more than this (percentage points)
/// is a tracing-overhead warning.
pub const TRACING_WARN_PP: f64 = 1.0;

/// Table 1 row: handler utilisation at one frequency (a row of util.csv,
/// the 2014 article's utilisation beside it).
#[derive(Debug, Clone, Default, Serialize)]
pub struct UtilRow {
    pub freq_hz: u64,
    pub runs: usize,
    /// Handler calls per second of window on the measured CPU (mean over runs).
    pub calls_per_s: f64,
    /// Pooled mean handler duration (sum of durations / number of calls).
    pub mean_ns: f64,
    /// The handler's time per sample at this rate: each run's mean handler
    /// duration, t interval over runs. The primary result of the util runs
    /// (the cost per sample changes with the rate; see the fits' lack of
    /// fit).
    #[serde(serialize_with = "lo_hi_unit")]
    pub per_sample_ns: Estimate,
    /// Median over runs of each run's median / p99 handler duration.
    pub median_ns: f64,
    pub p99_ns: f64,
    /// Handler utilisation, % of the window, t interval over runs.
    #[serde(serialize_with = "lo_hi_unit")]
    pub util_pct: Estimate,
    /// Whole timer interrupt (local_timer) utilisation, when captured.
    #[serde(serialize_with = "lo_hi_unit")]
    pub local_timer_util_pct: Option<Estimate>,
    /// Mean achieved sample rate (runs.csv achieved_hz).
    pub achieved_hz: f64,
}

/// Table 2 row: performance loss at one frequency for one design (a row
/// of loss.csv: one `run` column per run, as many as the rate with the
/// most runs).
#[derive(Debug, Clone, Default, Serialize)]
pub struct LossRow {
    pub freq_hz: u64,
    /// The sample rate the kernel delivered, Hz: classic, the mean of the
    /// runs' `achieved_hz`; paired, the on phases' samples over their time.
    /// The fits use it, not the request (at "100 kHz" the kernel delivered
    /// 63 kHz in one sweep here).
    pub achieved_hz: f64,
    pub design: Design,
    /// Loop counts of the runs, in repetition order.
    #[serde(rename = "run")]
    pub iterations: Vec<u64>,
    #[serde(rename = "mean")]
    pub mean_iterations: f64,
    /// Loss in %, with its 95 % interval (NaN value for a design without
    /// a baseline).
    #[serde(serialize_with = "with_n")]
    pub loss_pct: Estimate,
    /// Paired design: the loss from each run's mean over its ABBA groups,
    /// t interval over runs (n = runs). Wider than `loss_pct` when the loss
    /// itself varies between runs, which the interval over groups ignores.
    #[serde(serialize_with = "by_run")]
    pub loss_by_run_pct: Option<Estimate>,
    /// Paired design: one-way ANOVA of the group losses by run, (F, p).
    #[serde(serialize_with = "p_only")]
    pub between_runs: Option<(f64, f64)>,
    /// How the interval was computed.
    pub method: String,
}

/// loss.csv's `loss_pct`, its interval and `n`.
fn with_n<S: Serializer>(e: &Estimate, s: S) -> Result<S::Ok, S::Error> {
    let v = [e.value, e.lo, e.hi, e.n as f64];
    cells(s, "{k} {b}_lo_{u} {b}_hi_{u} n", Some(v))
}

/// loss.csv's interval over runs: its bounds and runs.
fn by_run<S: Serializer>(e: &Option<Estimate>, s: S) -> Result<S::Ok, S::Error> {
    let v = e.map(|e| [e.lo, e.hi, e.n as f64]);
    cells(s, "loss_lo_by_run_pct loss_hi_by_run_pct n_runs", v)
}

/// loss.csv's `between_runs_p`.
fn p_only<S: Serializer>(f_p: &Option<(f64, f64)>, s: S) -> Result<S::Ok, S::Error> {
    cells(s, "{k}_p", f_p.map(|(_, p)| [p]))
}

impl LossRow {
    /// The interval to decide with, always one that covers the variation
    /// between runs: for the paired design the t interval over runs (of
    /// each run's mean group loss) whenever there are two runs or more; the
    /// classic design's interval is over runs already. Choosing it only
    /// when a pre-test (ANOVA by run) rejected would be anti-conservative:
    /// the interval over groups ignores that the loss itself varies between
    /// runs (on the development VM that rule took a -6.2 % "speed-up" at
    /// 500 Hz as significant).
    pub fn trusted(&self) -> Estimate {
        match self.loss_by_run_pct {
            Some(e) if e.hi.is_finite() => e,
            _ => self.loss_pct,
        }
    }

    /// The runs disagree (ANOVA p < [`BETWEEN_RUNS_P`]) and the interval
    /// over runs exists: reported as a warning; it does not change which
    /// interval is used ([`LossRow::trusted`]).
    pub fn runs_disagree(&self) -> bool {
        self.between_runs.is_some_and(|(_, p)| p < BETWEEN_RUNS_P)
            && self.loss_by_run_pct.is_some_and(|e| e.hi.is_finite())
    }
}

/// Loss with tracepoints on (util runs) next to loss without (a row of
/// tracing.csv).
#[derive(Debug, Clone, Default, Serialize)]
pub struct TracepointCostRow {
    pub freq_hz: u64,
    #[serde(serialize_with = "value")]
    pub loss_pct: Option<Estimate>,
    #[serde(serialize_with = "value")]
    pub loss_util_runs_pct: Estimate,
    /// `loss_util_runs_pct - loss_pct`, percentage points.
    tracing_cost_pp: f64,
}

impl TracepointCostRow {
    /// The row of one rate.
    pub fn new(freq_hz: u64, loss_pct: Option<Estimate>, loss_util_runs_pct: Estimate) -> Self {
        let tracing_cost_pp = loss_pct.map_or(f64::NAN, |l| loss_util_runs_pct.value - l.value);
        Self {
            freq_hz,
            loss_pct,
            loss_util_runs_pct,
            tracing_cost_pp,
        }
    }

    /// Extra loss caused by tracing the handler (percentage points).
    pub fn tracing_cost_pp(&self) -> f64 {
        self.tracing_cost_pp
    }

    /// The extra loss is above [`TRACING_WARN_PP`] and significant: larger
    /// than 1.96 standard errors of the difference (the two estimates'
    /// errors combined). Point estimates with SEs of 7-10 pp against a 1 pp
    /// threshold made the warning fire on noise.
    pub fn significant(&self) -> bool {
        let Some(l) = self.loss_pct else {
            return false;
        };
        let se = (l.se.powi(2) + self.loss_util_runs_pct.se.powi(2)).sqrt();
        let cost = self.tracing_cost_pp();
        cost > TRACING_WARN_PP && se.is_finite() && cost > 1.96 * se
    }
}
