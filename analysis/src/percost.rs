//! The gaps design's answer: what one sample costs the application, per
//! sampling frequency (docs/methodology.md, "Gaps design").
//!
//! Pure numerics over already loaded runs ([`GapsRun`]); reading the
//! results directory is `percost_load`, the report section
//! `percost_report`, drawing the background b (and its A/A control) the
//! submodule `background`. Per run at F > 0:
//!
//! - direct cost per sample = matched_excess_ns / samples - b(F), where
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

use crate::stats::{Estimate, mean, quantile_sorted, t_interval};
use crate::tables::{LossRow, UtilRow};
use results_format::Design;
use results_format::timeline::{Episode, RecoveryRow, TimelineRow};

mod background;

pub use background::{
    COINCIDENCE_TIMESTAMPS, Draw, MIN_REPLICATIONS, aa_control, coincidence_by_run,
    coincidence_per_timestamp, draw_rng, replications_for,
};

pub use results_format::timeline::UNMATCHED_WARN;
/// z for the agreement test (two-sided 95 %).
pub const AGREE_Z: f64 = 1.96;
/// An episode with more excess than this is not an interrupt's cost but
/// the CPU taken away (another task, the host descheduling the vCPU: on
/// the development VM such episodes last 1-4 ms). It is left out of the
/// matched cost and of the background b alike, and a sample (or a random
/// timestamp) inside one is left out of the mean: the cost is the mean over
/// samples that did not land in such a stretch. Without this, one 4 ms
/// episode that a 100 Hz sample happens to land in moves a 10 s run's
/// mean by 4 us per sample, more than the cost itself.
pub const LONG_EPISODE_NS: u64 = 1_000_000;
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

/// One gaps run, loaded.
#[derive(Debug, Clone, Default)]
pub struct GapsRun {
    /// Its `timeline.csv` row.
    pub row: TimelineRow,
    /// Its recovery bins (`recovery.csv`), in bin order.
    pub recovery: Vec<RecoveryRow>,
    /// Excess of each episode that holds at least one sample, ns.
    pub matched_excess_ns: Vec<u64>,
    /// Samples inside an episode of [`LONG_EPISODE_NS`] or more.
    pub samples_in_long: u64,
    /// Its episodes (kept for 0 Hz runs, for the coincidence draws).
    pub episodes: Vec<Episode>,
}

impl GapsRun {
    /// The loop's window, ns (0 when the timeline is empty).
    pub fn window_ns(&self) -> f64 {
        self.row.loop_end_ns.saturating_sub(self.row.loop_start_ns) as f64
    }

    /// Achieved sample rate over the window, Hz.
    pub fn rate_hz(&self) -> f64 {
        self.row.samples as f64 / (self.window_ns() * 1e-9)
    }

    /// Excess matched per sample, ns (before subtracting b): the matched
    /// episodes under [`LONG_EPISODE_NS`] over the samples not in a longer
    /// one.
    pub fn matched_per_sample_ns(&self) -> f64 {
        let short: u64 = self
            .matched_excess_ns
            .iter()
            .filter(|&&e| e < LONG_EPISODE_NS)
            .sum();
        short as f64 / self.row.samples.saturating_sub(self.samples_in_long) as f64
    }

    /// After-effect time per ns of window: over the recovery bins that end
    /// within `horizon_ns` of a gap, the chunks' summed excess minus what
    /// the same chunks would have had at the run's reference (the mean
    /// excess per chunk in the bins from `horizon_ns` on), / window. The
    /// reference removes the constant offset of the per-gap reference
    /// length (a median of three chunks is not their mean) and the speed
    /// of the host at the time. NaN without chunks beyond the horizon.
    pub fn after_share(&self, horizon_ns: f64) -> f64 {
        let far = self
            .recovery
            .iter()
            .filter(|b| b.from_ns as f64 >= horizon_ns);
        let (far_chunks, far_excess) = far.fold((0u64, 0f64), |(c, e), b| {
            (c + b.chunks, e + b.excess_ns_sum)
        });
        if far_chunks == 0 {
            return f64::NAN;
        }
        let reference = far_excess / far_chunks as f64;
        let near: f64 = self
            .recovery
            .iter()
            .filter(|b| (b.to_ns as f64) <= horizon_ns)
            .map(|b| b.excess_ns_sum - b.chunks as f64 * reference)
            .sum();
        near / self.window_ns()
    }

    /// Matched episodes under [`LONG_EPISODE_NS`].
    pub fn matched_short_episodes(&self) -> usize {
        self.matched_excess_ns
            .iter()
            .filter(|&&e| e < LONG_EPISODE_NS)
            .count()
    }

    /// After-effect per episode of this run within `horizon_ns`, ns: the
    /// after-effect time ([`Self::after_share`] x window) over all its
    /// episodes, sample and background alike.
    pub fn after_per_episode_ns(&self, horizon_ns: f64) -> f64 {
        if self.row.episodes == 0 {
            return f64::NAN;
        }
        self.after_share(horizon_ns) * self.window_ns() / self.row.episodes as f64
    }

    /// Share of the window in gaps (excess only), %.
    pub fn gap_share_pct(&self) -> f64 {
        self.row.gap_time_ns as f64 / self.window_ns() * 100.0
    }
}

/// Direct cost per sample of one run, ns.
pub fn direct_cost_ns(run: &GapsRun, b_ns: f64) -> f64 {
    run.matched_per_sample_ns() - b_ns
}

/// After-effect per sample of one run, ns: its after-effect per episode
/// within `horizon_ns` x the matched episodes per sample (both under
/// [`LONG_EPISODE_NS`]). Every episode of the run, sample or background,
/// is charged the same after-effect: at 100 Hz the background's ~1300
/// episodes per second would otherwise drown the samples' own (the
/// difference from the 0 Hz runs' after-effect time, tried first, gave
/// +-1100 ns at 100 Hz for an effect of ~50 ns).
pub fn after_effect_ns(run: &GapsRun, horizon_ns: f64) -> f64 {
    let n = run.row.samples.saturating_sub(run.samples_in_long) as f64;
    run.after_per_episode_ns(horizon_ns) * run.matched_short_episodes() as f64 / n
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
/// <= 1.96 sqrt(se_pred^2 + se_paired^2).
pub fn agreement(pred: &Estimate, paired: &Estimate) -> Agreement {
    let resolves =
        paired.lo.is_finite() && paired.hi.is_finite() && (paired.lo > 0.0 || paired.hi < 0.0);
    if !resolves {
        return Agreement::PairedNotResolved;
    }
    if !pred.se.is_finite() {
        return Agreement::NoPredictionInterval;
    }
    let se = (pred.se.powi(2) + paired.se.powi(2)).sqrt();
    if se.is_finite() && (pred.value - paired.value).abs() <= AGREE_Z * se {
        Agreement::Agree
    } else {
        Agreement::Disagree
    }
}

/// One frequency's row of the table "what one sample costs the application".
#[derive(Debug, Clone, serde::Serialize)]
pub struct PerSampleRow {
    pub freq_hz: u64,
    pub runs: usize,
    /// Mean achieved rate over the runs (samples / window), Hz.
    pub achieved_hz: f64,
    pub samples: u64,
    /// Samples left out: inside an episode of [`LONG_EPISODE_NS`] or more.
    pub samples_in_long: u64,
    pub matched_episodes: usize,
    /// Matched episode excess, pooled over the runs, ns.
    pub matched_median_ns: f64,
    pub matched_mean_ns: f64,
    pub matched_p99_ns: f64,
    /// Mean matched episode excess, t interval over the runs' means.
    pub matched_mean_by_run_ns: Estimate,
    /// Background coincidence b at this rate (mean over 0 Hz runs, t
    /// interval over them), ns per sample.
    pub background_ns: Estimate,
    /// The after-effect's horizon at this rate, ns.
    pub recovery_horizon_ns: f64,
    pub direct_ns: Estimate,
    pub after_effect_ns: Estimate,
    pub total_ns: Estimate,
    /// Handler time per sample (util runs at F), ns.
    pub handler_ns: Option<f64>,
    /// Whole timer interrupt (local_timer) time per handler call, ns.
    pub interrupt_ns: Option<f64>,
    /// direct - interrupt (or direct - handler without local_timer), ns.
    pub remainder_ns: Option<f64>,
    pub predicted_loss_pct: Estimate,
    /// Paired design's throughput loss at F (its trusted interval).
    pub paired_loss_pct: Option<Estimate>,
    pub agreement: Option<Agreement>,
    /// Gap time share at F minus at 0 Hz, percentage points, over runs.
    pub excess_gap_share_pct: Estimate,
    /// Achieved rate x direct cost, %, over runs.
    pub predicted_direct_loss_pct: Estimate,
    /// The A/A null control at this rate (excess per timestamp on a 0 Hz
    /// run minus the other 0 Hz runs' b), ns.
    pub aa_null_ns: Option<Estimate>,
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
    /// Problems, for the report's warnings.
    pub warnings: Vec<String>,
}

/// A missing estimate over `n` runs.
fn nan_est(n: usize) -> Estimate {
    Estimate::point(f64::NAN, n)
}

/// A run with a loop window and, at F > 0, samples.
fn usable(r: &GapsRun) -> bool {
    r.window_ns() > 0.0 && (r.row.freq_hz == 0 || r.row.samples > 0)
}

/// Build the table from loaded runs, the util table and the loss table.
pub fn build(runs: &[GapsRun], util: &[UtilRow], loss: &[LossRow]) -> PerSample {
    let mut warnings = run_warnings(runs);
    let zero: Vec<&GapsRun> = runs
        .iter()
        .filter(|r| r.row.freq_hz == 0 && usable(r))
        .collect();
    let zero_after = t_interval(
        &zero
            .iter()
            .map(|r| r.after_per_episode_ns(RECOVERY_HORIZON_NS))
            .collect::<Vec<_>>(),
    );
    let zero_gap = t_interval(&zero.iter().map(|r| r.gap_share_pct()).collect::<Vec<_>>());
    if zero.is_empty() {
        warnings.push(
            "gaps design: no usable 0 Hz gaps runs: the background coincidence b and the \
             after-effect baseline are unavailable, so the direct, after-effect and total cost \
             per sample (and the loss they predict) are not computed; run the gaps design with \
             0 Hz included"
                .to_string(),
        );
    }
    let mut freqs: Vec<u64> = runs
        .iter()
        .map(|r| r.row.freq_hz)
        .filter(|&f| f > 0)
        .collect();
    freqs.sort_unstable();
    freqs.dedup();
    let rows = freqs
        .into_iter()
        .filter_map(|f| {
            let at: Vec<&GapsRun> = runs
                .iter()
                .filter(|r| r.row.freq_hz == f && usable(r))
                .collect();
            (!at.is_empty()).then(|| row_at(f, &at, &zero, zero_gap.value, util, loss))
        })
        .collect::<Vec<PerSampleRow>>();
    for r in &rows {
        if let Some(e) = r.aa_null_ns.filter(|e| e.lo > 0.0 || e.hi < 0.0) {
            warnings.push(format!(
                "gaps design: the A/A null control at {} Hz excludes 0 ({:.2} ns [{:.2}, {:.2}]): \
                 random timestamps on the 0 Hz runs seem to cost something, so b is off by about \
                 that much; the direct cost at that rate is suspect",
                r.freq_hz, e.value, e.lo, e.hi
            ));
        }
    }
    PerSample {
        rows,
        zero_runs: zero.len(),
        zero_after_per_episode_ns: zero_after,
        zero_gap_share_pct: zero_gap,
        warnings,
    }
}

/// The matched episodes under [`LONG_EPISODE_NS`] of the runs at one
/// frequency: pooled over the runs, and each run's mean.
struct MatchedEpisodes {
    /// Every run's matched episode excess, ns, sorted.
    pooled_ns: Vec<f64>,
    /// The mean of each run that matched any, ns.
    run_means_ns: Vec<f64>,
}

impl MatchedEpisodes {
    /// The short matched episodes of the runs `at`.
    fn of(at: &[&GapsRun]) -> Self {
        let short = |r: &&GapsRun| -> Vec<f64> {
            r.matched_excess_ns
                .iter()
                .filter(|&&e| e < LONG_EPISODE_NS)
                .map(|&e| e as f64)
                .collect()
        };
        let mut pooled_ns: Vec<f64> = at.iter().flat_map(short).collect();
        pooled_ns.sort_by(f64::total_cmp);
        let run_means_ns = at
            .iter()
            .map(short)
            .filter(|v| !v.is_empty())
            .map(|v| mean(&v))
            .collect();
        Self {
            pooled_ns,
            run_means_ns,
        }
    }
}

/// The background b at frequency `freq_hz` (achieved `rate_hz`) over the
/// 0 Hz runs `zero`, and the A/A null control beside it; NaN and None
/// without 0 Hz runs.
fn background_at(zero: &[&GapsRun], freq_hz: u64, rate_hz: f64) -> (Estimate, Option<Estimate>) {
    if zero.is_empty() {
        return (nan_est(0), None);
    }
    let b = coincidence_by_run(zero, freq_hz, rate_hz, Draw::Background);
    let own = coincidence_by_run(zero, freq_hz, rate_hz, Draw::Null);
    (t_interval(&b), aa_control(&own, &b))
}

/// What the tracing measured at one frequency, beside the direct cost.
struct TracedTimes {
    /// Handler time per sample (util runs at F), ns.
    handler_ns: Option<f64>,
    /// Whole timer interrupt (local_timer) time per handler call, ns.
    interrupt_ns: Option<f64>,
    /// `direct_ns` - interrupt (or - handler without local_timer), ns.
    remainder_ns: Option<f64>,
}

impl TracedTimes {
    /// The util table's times at `freq_hz`, and what of `direct_ns` they
    /// leave.
    fn at(util: &[UtilRow], freq_hz: u64, direct_ns: f64) -> Self {
        let util_row = util.iter().find(|u| u.freq_hz == freq_hz);
        let handler_ns = util_row.map(|u| u.mean_ns).filter(|v| v.is_finite());
        let interrupt_ns = util_row
            .and_then(|u| {
                u.local_timer_util_pct
                    .map(|lt| lt.value / 100.0 * 1e9 / u.calls_per_s)
            })
            .filter(|v| v.is_finite());
        let remainder_ns = interrupt_ns
            .or(handler_ns)
            .map(|x| direct_ns - x)
            .filter(|v| v.is_finite());
        Self {
            handler_ns,
            interrupt_ns,
            remainder_ns,
        }
    }
}

/// The row at frequency `f` from its usable runs `at`, the 0 Hz runs
/// `zero` (with their mean gap share `zero_gap`, %), and the util and loss
/// tables' rows at `f`.
fn row_at(
    f: u64,
    at: &[&GapsRun],
    zero: &[&GapsRun],
    zero_gap: f64,
    util: &[UtilRow],
    loss: &[LossRow],
) -> PerSampleRow {
    let n = at.len();
    let rates: Vec<f64> = at.iter().map(|r| r.rate_hz()).collect();
    let achieved_hz = mean(&rates);
    let matched = MatchedEpisodes::of(at);
    let horizon = recovery_horizon_ns(achieved_hz);
    let (background_ns, aa_null_ns) = background_at(zero, f, achieved_hz);
    // Every per-run quantity needs b: NaN without 0 Hz runs.
    let per_run = |g: &dyn Fn(&GapsRun) -> f64| -> Estimate {
        if zero.is_empty() {
            return nan_est(n);
        }
        t_interval(&at.iter().map(|r| g(r)).collect::<Vec<_>>())
    };
    let b = background_ns.value;
    let total = |r: &GapsRun| direct_cost_ns(r, b) + after_effect_ns(r, horizon);
    let direct_ns = per_run(&|r| direct_cost_ns(r, b));
    let predicted = per_run(&|r| predicted_loss_pct(r.rate_hz(), total(r)));
    let traced = TracedTimes::at(util, f, direct_ns.value);
    let paired_loss_pct = loss
        .iter()
        .find(|l| l.freq_hz == f && l.design == Design::Paired)
        .map(|l| l.trusted());
    let pooled = &matched.pooled_ns;
    PerSampleRow {
        freq_hz: f,
        runs: n,
        achieved_hz,
        samples: at.iter().map(|r| r.row.samples).sum(),
        samples_in_long: at.iter().map(|r| r.samples_in_long).sum(),
        recovery_horizon_ns: horizon,
        matched_episodes: pooled.len(),
        matched_median_ns: quantile_sorted(pooled, 0.5),
        matched_mean_ns: mean(pooled),
        matched_p99_ns: quantile_sorted(pooled, 0.99),
        matched_mean_by_run_ns: t_interval(&matched.run_means_ns),
        background_ns,
        after_effect_ns: per_run(&|r| after_effect_ns(r, horizon)),
        total_ns: per_run(&total),
        direct_ns,
        handler_ns: traced.handler_ns,
        interrupt_ns: traced.interrupt_ns,
        remainder_ns: traced.remainder_ns,
        agreement: paired_loss_pct
            .filter(|_| predicted.value.is_finite())
            .map(|p| agreement(&predicted, &p)),
        paired_loss_pct,
        predicted_loss_pct: predicted,
        excess_gap_share_pct: per_run(&|r| r.gap_share_pct() - zero_gap),
        predicted_direct_loss_pct: per_run(&|r| {
            predicted_loss_pct(r.rate_hz(), direct_cost_ns(r, b))
        }),
        aa_null_ns,
    }
}

/// Problems of single runs: unmatched samples, dropped gaps, the run's own
/// warnings, exclusion.
fn run_warnings(runs: &[GapsRun]) -> Vec<String> {
    let mut w = Vec::new();
    for r in runs {
        let t = &r.row;
        if t.too_many_unmatched() {
            w.push(format!(
                "gaps run {} at {} Hz: {} of {} samples ({:.1}%) fell in no gap of the workload's \
                 timeline (more than {:.0}%): their cost is not in the direct cost; check the \
                 clock mapping and the gap threshold ({} ns)",
                t.run_id,
                t.freq_hz,
                t.unmatched_samples,
                t.samples,
                100.0 * t.unmatched_samples as f64 / t.samples as f64,
                UNMATCHED_WARN * 100.0,
                t.gap_threshold_ns
            ));
        }
        if t.gaps_dropped > 0 {
            w.push(format!(
                "gaps run {} at {} Hz: {} of {} gaps not stored (gap buffer full): their time is \
                 in gap_time_ns but samples inside them count as unmatched",
                t.run_id, t.freq_hz, t.gaps_dropped, t.gaps
            ));
        }
        if !t.warnings.trim().is_empty() {
            w.push(format!(
                "gaps run {} at {} Hz: {}",
                t.run_id,
                t.freq_hz,
                t.warnings.trim()
            ));
        }
        if !usable(r) {
            w.push(format!(
                "gaps run {} at {} Hz excluded: empty loop window ({}..{} ns) or no samples",
                t.run_id, t.freq_hz, t.loop_start_ns, t.loop_end_ns
            ));
        }
    }
    w
}
