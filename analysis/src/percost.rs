//! The gaps design's answer: what one sample costs the application, per
//! sampling frequency (docs/methodology.md, "Gaps design").
//!
//! Pure numerics over already loaded runs ([`GapsRun`]); reading the
//! results directory is `load::gaps`, the report section
//! `report::per_sample`, drawing the background b (and its A/A control) the
//! submodule `background`. Per run at F > 0:
//!
//! - direct cost per sample = matched excess (each episode capped) /
//!   samples - b(F), where
//!   b(F) is the excess a sampler at F would match on the 0 Hz runs by
//!   coincidence alone (background episodes it happens to land in);
//! - after-effect per sample = the run's after-effect per episode (the
//!   recovery excess within the horizon, over the run's own speed beyond
//!   it, / episodes) x matched episodes / samples;
//! - episodes of [`LONG_EPISODE_NS`] or more (the CPU taken away) are left
//!   out of the matched cost and of b, with the samples inside them;
//! - total = direct + after-effect; predicted loss % = samples / window x
//!   total x 100.
//!
//! Every interval is a Student-t interval over the runs at F (so it covers
//! the variation between runs); b and the 0 Hz baselines enter as
//! constants, their own intervals are reported beside.

use crate::columns::lo_hi_se;
use crate::load::gaps::{GapsRun, LONG_EPISODE_NS};
use crate::row_types::{LossRow, UtilRow};
use crate::stats::{Estimate, distinct_sorted, mean_of, t_interval_of};

mod background;
mod drift;
mod remainder;
mod row;

pub use background::{
    COINCIDENCE_TIMESTAMPS, Draw, MIN_REPLICATIONS, aa_control, coincidence_by_run_capped,
    coincidence_capped, coincidence_exact, draw_rng, replications_for,
};

pub use drift::{CostDrift, cost_drift};
pub use remainder::Remainder;
pub use results_format::timeline::UNMATCHED_WARN;
pub use row::{CAP_MEDIAN_FACTOR, CAP_QUANTILE, RunCost, episode_cap_ns, long_threshold_ns};
use row::{RowContext, background_at, cap_at};
/// The after-effect of a gap is looked for in the recovery bins that end
/// within this time after it (at most half the sampling interval, see
/// [`recovery_horizon_ns`]); the bins from there on are the reference
/// speed of the same run.
pub const RECOVERY_HORIZON_NS: f64 = 50_000.0;

/// The recovery horizon at `rate_hz`: [`RECOVERY_HORIZON_NS`], or half the
/// sampling interval when that is shorter (beyond it, chunks are as close
/// to the next sample as to the last).
pub fn recovery_horizon_ns(rate_hz: f64) -> f64 {
    if rate_hz > 0.0 {
        RECOVERY_HORIZON_NS.min(0.5e9 / rate_hz)
    } else {
        RECOVERY_HORIZON_NS
    }
}

/// After-effect per sample of one run, ns: its after-effect per episode
/// within `horizon_ns` x the matched episodes per sample (both under
/// [`LONG_EPISODE_NS`]). Every episode of the run, sample or background,
/// is charged the same after-effect: at 100 Hz the background's ~1300
/// episodes per second would otherwise drown the samples' own (the
/// difference from the 0 Hz runs' after-effect time, tried first, gave
/// +-1100 ns at 100 Hz for an effect of ~50 ns).
pub fn after_effect_ns(run: &GapsRun, horizon_ns: f64) -> f64 {
    let n = run.raw_samples().saturating_sub(run.samples_in_long) as f64;
    run.after_per_episode_ns(horizon_ns) * run.short_matched().count() as f64 / n
}

/// Loss (%) predicted for a run: achieved rate (Hz) x cost (ns) x 100 / 1e9.
pub fn predicted_loss_pct(rate_hz: f64, cost_ns: f64) -> f64 {
    rate_hz * cost_ns * 1e-7
}

/// The prediction next to the paired design's throughput loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Agreement {
    /// Paired interval excludes 0 and the two agree within 1.96 x the
    /// combined standard error.
    Agree,
    /// Paired interval excludes 0 and they do not agree.
    Disagree,
    /// The paired interval contains 0 (or has none): nothing to test.
    PairedNotResolved,
    /// The paired interval resolves but the prediction has no interval
    /// (one run): nothing to test either.
    NoPredictionInterval,
}

impl Agreement {
    /// The report's word for it.
    pub fn word(self) -> &'static str {
        match self {
            Self::Agree => "agree",
            Self::Disagree => "disagree",
            Self::PairedNotResolved => "paired not resolved",
            Self::NoPredictionInterval => "prediction has no interval (one run)",
        }
    }
}

/// Agreement rule: where the paired interval excludes 0, |pred - paired|
/// <= t sqrt(se_pred^2 + se_paired^2), t the 95 % Welch-Satterthwaite
/// critical value of the two ([`crate::stats::satterthwaite_crit95`]: each
/// estimate's runs, not the normal 1.96, which with 2-5 runs would call
/// overlapping intervals different).
///
/// Where the prediction is an upper estimate (`upper`: a rate charged the
/// after-effect bound), the test is one-sided: it agrees unless the paired
/// loss lies above the prediction by more than that, since a bound that
/// holds is all it claims.
pub fn agreement(pred: &Estimate, paired: &Estimate, upper: bool) -> Agreement {
    let resolves =
        paired.lo.is_finite() && paired.hi.is_finite() && (paired.lo > 0.0 || paired.hi < 0.0);
    if !resolves {
        return Agreement::PairedNotResolved;
    }
    if !pred.se.is_finite() {
        return Agreement::NoPredictionInterval;
    }
    let se = (pred.se.powi(2) + paired.se.powi(2)).sqrt();
    let off = if upper {
        (paired.value - pred.value).max(0.0)
    } else {
        (pred.value - paired.value).abs()
    };
    if se.is_finite() && off <= crate::stats::satterthwaite_crit95(&[pred, paired]) * se {
        Agreement::Agree
    } else {
        Agreement::Disagree
    }
}

/// One frequency's row of the table "what one sample costs the application"
/// (a row of per_sample.csv).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PerSampleRow {
    pub freq_hz: u64,
    pub runs: usize,
    /// Mean achieved rate over the runs (samples / window), Hz.
    pub achieved_hz: f64,
    pub samples: u64,
    /// Samples left out: inside an episode of [`LONG_EPISODE_NS`] or more.
    pub samples_in_long: u64,
    /// The after-effect's horizon at this rate, ns.
    pub recovery_horizon_ns: f64,
    pub matched_episodes: usize,
    /// Matched episode excess, pooled over the runs, ns.
    pub matched_median_ns: f64,
    pub matched_mean_ns: f64,
    pub matched_p99_ns: f64,
    /// Mean matched episode excess, t interval over the runs' means.
    #[serde(serialize_with = "lo_hi_se")]
    pub matched_mean_by_run_ns: Estimate,
    /// Background coincidence b at this rate (mean over 0 Hz runs, t
    /// interval over them), ns per sample.
    #[serde(serialize_with = "lo_hi_se")]
    pub background_ns: Estimate,
    /// Matched excess above the cap per sample minus b's part above it, ns,
    /// t interval over runs: the heavy tail, measured apart so that the
    /// direct cost stays precise; charged to the total where its interval
    /// lies above 0.
    #[serde(serialize_with = "lo_hi_se")]
    pub above_cap_ns: Estimate,
    /// Long episodes (the CPU taken away, left out of the direct cost) per
    /// second at this rate, t interval over runs.
    #[serde(serialize_with = "lo_hi_se")]
    pub long_per_s: Estimate,
    /// Their share of the window (less the matched excess per sample,
    /// above-cap part included and b not taken off, times the samples
    /// inside them, which are charged the direct cost anyway) over the
    /// 0 Hz runs' mean share in episodes that would be long at the rate
    /// ([`long_threshold_ns`]), per sample, ns: what sampling adds in
    /// long episodes; charged where its interval lies above 0.
    #[serde(serialize_with = "lo_hi_se")]
    pub long_ns: Estimate,
    #[serde(serialize_with = "lo_hi_se")]
    pub direct_ns: Estimate,
    #[serde(serialize_with = "lo_hi_se")]
    pub after_effect_ns: Estimate,
    #[serde(serialize_with = "lo_hi_se")]
    pub total_ns: Estimate,
    /// The total with a 95 % prediction interval over runs (where the next
    /// run's cost will land): what the recommendation uses, so that it
    /// holds for the worst part of the sweep, not only its mean.
    #[serde(serialize_with = "lo_hi_se")]
    pub total_pred_ns: Estimate,
    #[serde(serialize_with = "lo_hi_se")]
    pub predicted_loss_pct: Estimate,
    /// Paired design's throughput loss at F (its trusted interval).
    #[serde(serialize_with = "lo_hi_se")]
    pub paired_loss_pct: Option<Estimate>,
    /// Gap time share at F minus at 0 Hz, percentage points, over runs.
    #[serde(serialize_with = "lo_hi_se")]
    pub excess_gap_share_pct: Estimate,
    /// Achieved rate x direct cost, %, over runs.
    #[serde(serialize_with = "lo_hi_se")]
    pub predicted_direct_loss_pct: Estimate,
    /// The A/A null control at this rate (excess per timestamp on a 0 Hz
    /// run minus the other 0 Hz runs' b), ns.
    #[serde(serialize_with = "lo_hi_se")]
    pub aa_null_ns: Option<Estimate>,
    /// Handler time per sample (util runs at F), ns.
    pub handler_ns: Option<f64>,
    /// Whole timer interrupt (local_timer) time per handler call, ns.
    pub interrupt_ns: Option<f64>,
    /// direct - interrupt (or direct - handler without local_timer), ns.
    pub remainder_ns: Option<f64>,
    #[serde(serialize_with = "word")]
    pub agreement: Option<Agreement>,
    /// Where the after-effect could not be measured at this rate (no
    /// chunks beyond the horizon: dense rates), the bound charged instead,
    /// ns per sample: the largest after-effect upper bound measured at
    /// another rate, never more than a run's time between samples outside
    /// its direct cost (0 when no rate measured one). `total_ns` then is
    /// direct + this bound, an upper estimate.
    pub after_effect_bound_ns: Option<f64>,
    pub above_cap_charged: bool,
    pub long_charged: bool,
    /// The cap on each episode's excess (per sample it holds) at this
    /// rate, ns: the background's 99.9th percentile or 10 x the median
    /// matched excess, whichever is larger.
    pub cap_ns: f64,
    /// Where the paired loss and the prediction differ, split into gaps
    /// and outside them (where the paired loss has an interval).
    #[serde(skip)]
    pub remainder: Option<Remainder>,
}

/// per_sample.csv's `agreement`: its word, empty without one.
fn word<S: serde::Serializer>(a: &Option<Agreement>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(a.map_or("", Agreement::word))
}

/// The whole table plus what could not be computed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PerSample {
    pub rows: Vec<PerSampleRow>,
    /// 0 Hz gaps runs used as the background.
    pub zero_runs: usize,
    /// After-effect per episode of the 0 Hz runs (the background's), ns,
    /// t interval over them: beside the samples' for comparison.
    pub zero_after_per_episode_ns: Estimate,
    /// Gap time share of the 0 Hz runs, %.
    pub zero_gap_share_pct: Estimate,
    /// The background's cap on each episode's excess in the direct cost and
    /// b: the 99.9th percentile of the 0 Hz runs' episode excess, ns (each
    /// row's `cap_ns` is at least this).
    pub background_cap_ns: f64,
    /// Long episodes per second in the 0 Hz runs, and their share of the
    /// window, %.
    pub zero_long_per_s: Estimate,
    pub zero_long_share_pct: Estimate,
    /// Every run's cost at F > 0, in sweep order (start time).
    pub run_costs: Vec<RunCost>,
    /// How much the cost per sample moved during the sweep.
    pub drift: Option<CostDrift>,
}

/// A missing estimate over `n` runs.
pub(crate) fn nan_est(n: usize) -> Estimate {
    Estimate::point(f64::NAN, n)
}

/// A run with a loop window and, at F > 0, samples.
pub(crate) fn usable(r: &GapsRun) -> bool {
    r.window_ns() > 0.0 && (r.row.freq_hz == 0 || r.row.samples > 0)
}

/// Build the table from loaded runs, the util table and the loss table.
pub fn build(runs: &[GapsRun], util: &[UtilRow], loss: &[LossRow]) -> PerSample {
    // The usable runs at a rate.
    let at_rate = |f: u64| {
        let at = runs.iter().filter(move |r| r.row.freq_hz == f && usable(r));
        at.collect::<Vec<&GapsRun>>()
    };
    let zero = at_rate(0);
    let zero_after = t_interval_of(
        zero.iter()
            .map(|r| r.after_per_episode_ns(RECOVERY_HORIZON_NS)),
    );
    let zero_gap = t_interval_of(zero.iter().map(|r| r.gap_share_pct()));
    let freqs = distinct_sorted(runs.iter().map(|r| r.row.freq_hz).filter(|&f| f > 0));
    let background_cap_ns = episode_cap_ns(&zero);
    let zero_long_share = t_interval_of(zero.iter().map(|r| r.long_share_pct()));
    let zero_long_per_s = t_interval_of(zero.iter().map(|r| r.long_per_s()));
    let ctx = RowContext {
        zero: &zero,
        zero_gap: zero_gap.value,
        util,
        loss,
    };
    // First pass: every rate with what it measured; the after-effect bound
    // for the dense rates that could not measure theirs comes from the
    // others, so those rows are built again with it.
    let mut measured: Vec<_> = freqs
        .into_iter()
        .filter_map(|f| {
            let at = at_rate(f);
            if at.is_empty() {
                return None;
            }
            let rate = mean_of(at.iter().map(|r| r.rate_hz()));
            let bg = background_at(&zero, f, rate, cap_at(background_cap_ns, &at));
            let (row, costs) = ctx.row_at(f, &at, &bg, None);
            Some((at, bg, row, costs))
        })
        .collect();
    let bound = after_effect_bound(measured.iter().map(|m| &m.2));
    for (at, bg, row, costs) in &mut measured {
        if !row.after_effect_ns.value.is_finite() && row.direct_ns.value.is_finite() {
            (*row, *costs) = ctx.row_at(row.freq_hz, at, bg, Some(bound));
        }
    }
    let (rows, costs): (Vec<_>, Vec<_>) = measured.into_iter().map(|m| (m.2, m.3)).unzip();
    let mut run_costs: Vec<RunCost> = costs.concat();
    run_costs.sort_by_key(|c| (c.started_at_ns, c.run_id));
    let drift = cost_drift(&run_costs, &rows);
    PerSample {
        rows,
        zero_runs: zero.len(),
        zero_after_per_episode_ns: zero_after,
        zero_gap_share_pct: zero_gap,
        background_cap_ns,
        zero_long_per_s,
        zero_long_share_pct: zero_long_share,
        run_costs,
        drift,
    }
}

/// The after-effect charged where a rate could not measure its own: the
/// largest upper bound (>= 0) measured at any other rate, 0 when none did.
/// The after-effect is the refill of what an interrupt evicted; at denser
/// rates less is evicted between samples, so a sparser rate's bound is an
/// upper one.
fn after_effect_bound<'a>(rows: impl Iterator<Item = &'a PerSampleRow>) -> f64 {
    rows.filter(|r| r.after_effect_bound_ns.is_none())
        .map(|r| r.after_effect_ns.hi)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}
