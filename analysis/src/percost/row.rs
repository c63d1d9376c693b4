//! One frequency's row of the per-sample table and each run's cost: the
//! capped direct cost, the part above the cap and the long episodes (each
//! charged where it resolves), the after-effect (or its bound), and the
//! tracing and paired figures beside them.

use super::background::{Draw, aa_control, coincidence_by_run_capped, coincidence_exact};
use super::{
    GapsRun, LONG_EPISODE_NS, PerSampleRow, Remainder, after_effect_ns, agreement, nan_est,
    predicted_loss_pct, recovery_horizon_ns,
};
use crate::row_types::{LossRow, UtilRow};
use crate::stats::{
    Estimate, mean, mean_of, quantile_sorted, t_interval, t_interval_of, t_prediction,
};
use results_format::Design;

/// One gaps run's cost per sample, ns.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RunCost {
    pub run_id: u32,
    pub block: u32,
    pub freq_hz: u64,
    /// runs.csv `started_at_ns` (CLOCK_MONOTONIC_RAW).
    pub started_at_ns: u64,
    /// Achieved rate, Hz.
    pub rate_hz: f64,
    /// Matched excess capped at the row's cap, minus the capped b.
    pub direct_ns: f64,
    /// Matched excess above the cap, minus b's part above it.
    pub above_cap_ns: f64,
    /// Long episodes' share of the window over the 0 Hz runs' mean share
    /// in episodes that would be long at the rate ([`long_threshold_ns`]),
    /// per sample.
    pub long_ns: f64,
    pub after_effect_ns: f64,
    /// Whether `after_effect_ns` is the bound charged where the run could
    /// not measure its own (see `PerSampleRow::after_effect_bound_ns`).
    pub after_effect_bounded: bool,
    /// direct + after-effect, plus the part above the cap and the long
    /// episodes where those are charged at this rate.
    pub total_ns: f64,
}

/// The 0 Hz runs' background at one rate.
pub(super) struct Background {
    /// The cap on each episode's excess at this rate, ns ([`cap_at`]).
    pub cap_ns: f64,
    /// b: the capped excess a sampler would match by coincidence, per
    /// timestamp (exact expectation), t interval over the 0 Hz runs.
    pub b_ns: Estimate,
    /// b's excess above the cap, likewise.
    pub above_ns: Estimate,
    pub aa_null_ns: Option<Estimate>,
}

/// The background at frequency `freq_hz` (achieved `rate_hz`) over the
/// 0 Hz runs `zero` with episodes capped at `cap_ns`, and the A/A null
/// control (a random draw on each run against the others' exact b); NaN
/// and None without 0 Hz runs (intervals over no run).
pub(super) fn background_at(
    zero: &[&GapsRun],
    freq_hz: u64,
    rate_hz: f64,
    cap_ns: f64,
) -> Background {
    let (b, above): (Vec<f64>, Vec<f64>) = zero
        .iter()
        .map(|r| coincidence_exact(&r.episodes, r.window(), rate_hz, cap_ns))
        .unzip();
    let own = coincidence_by_run_capped(zero, freq_hz, rate_hz, Draw::Null, cap_ns);
    Background {
        cap_ns,
        b_ns: t_interval(&b),
        above_ns: t_interval(&above),
        aa_null_ns: aa_control(&own, &b),
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
        let short = |r: &&GapsRun| -> Vec<f64> { r.short_matched().map(|(e, _)| e).collect() };
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

/// What the tracing measured at `freq_hz` beside the direct cost, ns:
/// the handler's time per sample (util runs), the whole timer interrupt's
/// (local_timer) per handler call, and `direct_ns` less the interrupt (or
/// less the handler without local_timer).
fn traced_times(util: &[UtilRow], freq_hz: u64, direct_ns: f64) -> [Option<f64>; 3] {
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
    [handler_ns, interrupt_ns, remainder_ns]
}

/// Whether a part of the cost is charged: its interval lies above 0
/// (sampling measurably adds it).
fn resolves_above_zero(e: &Estimate) -> bool {
    e.lo.is_finite() && e.lo > 0.0
}

/// What every row is computed against: the 0 Hz runs (and their mean gap
/// share, %), the util and loss tables.
pub(super) struct RowContext<'a> {
    pub zero: &'a [&'a GapsRun],
    pub zero_gap: f64,
    pub util: &'a [UtilRow],
    pub loss: &'a [LossRow],
}

/// The 0 Hz episode that would be long at a rate: its samples join it
/// (a sample due inside an episode waits for its end, and its own gap
/// extends it), so at a share `s` of the time in samples' direct cost an
/// episode of excess L grows to L / (1 - s), and one of 1 ms (1 - s) or
/// more crosses [`LONG_EPISODE_NS`]. The long episodes at a rate are
/// compared with the 0 Hz runs' episodes above this threshold, not above
/// 1 ms: otherwise another task's 0.8 ms slices, short at 0 Hz, become
/// long at 20 kHz through the samples that join them, and their whole
/// length reads as an extra time of sampling.
pub fn long_threshold_ns(rate_hz: f64, direct_ns: f64) -> f64 {
    let s = (rate_hz * direct_ns * 1e-9).clamp(0.0, 0.9);
    if s.is_finite() {
        LONG_EPISODE_NS as f64 * (1.0 - s)
    } else {
        LONG_EPISODE_NS as f64
    }
}

impl RowContext<'_> {
    /// The 0 Hz runs' mean share of their time in episodes of
    /// `threshold_ns` or more, % (NaN without 0 Hz runs).
    fn zero_long_share_pct(&self, threshold_ns: f64) -> f64 {
        let share = |z: &&GapsRun| {
            let long = z
                .episodes
                .iter()
                .filter(|e| e.excess_ns as f64 >= threshold_ns);
            long.map(|e| e.excess_ns).sum::<u64>() as f64 / z.raw_window_ns() * 100.0
        };
        mean_of(self.zero.iter().map(share))
    }

    /// Each run's parts before the charges are decided: (direct, above the
    /// cap, long episodes, after-effect measured), ns per sample.
    fn parts(&self, r: &GapsRun, bg: &Background, horizon: f64) -> [f64; 4] {
        let (capped, above) = r.matched_split_per_sample_ns(bg.cap_ns);
        // The samples inside long episodes are charged the direct cost like
        // the others (the prediction multiplies by every sample): only the
        // long episodes' excess beyond those samples' own is extra (at
        // 100 kHz a long episode is nothing but joined samples).
        let own = r.samples_in_long as f64 * (capped + above);
        let extra_pct = (r.long_excess_ns as f64 - own).max(0.0) / r.raw_window_ns() * 100.0;
        let zero = self.zero_long_share_pct(long_threshold_ns(r.rate_hz(), capped + above));
        let long = (extra_pct - zero) / 100.0 * 1e9 / r.rate_hz();
        [
            capped - bg.b_ns.value,
            above - bg.above_ns.value,
            long,
            after_effect_ns(r, horizon),
        ]
    }

    /// The row at frequency `f` from its usable runs `at` and its
    /// background `bg`, and each run's cost. With `after_bound`, a run
    /// whose after-effect is unmeasurable is charged that bound instead
    /// (at most its time between samples outside the direct cost).
    pub fn row_at(
        &self,
        f: u64,
        at: &[&GapsRun],
        bg: &Background,
        after_bound: Option<f64>,
    ) -> (PerSampleRow, Vec<RunCost>) {
        let n = at.len();
        let achieved_hz = mean_of(at.iter().map(|r| r.rate_hz()));
        let horizon = recovery_horizon_ns(achieved_hz);
        // Every per-run quantity needs b: none without 0 Hz runs.
        let with_b = at.iter().filter(|_| !self.zero.is_empty());
        let parts: Vec<[f64; 4]> = with_b.map(|r| self.parts(r, bg, horizon)).collect();
        let part = |k: usize| over_runs(n, parts.iter().map(|p| p[k]), t_interval);
        let (above_cap_ns, long_ns) = (part(1), part(2));
        let charge = (
            resolves_above_zero(&above_cap_ns),
            resolves_above_zero(&long_ns),
        );
        // One cost per run of `at`, in its order (or none, without b).
        let costs: Vec<RunCost> = at
            .iter()
            .zip(&parts)
            .map(|(r, p)| run_cost(r, p, charge, after_bound))
            .collect();
        let over = |g: &dyn Fn(&RunCost) -> f64| over_runs(n, costs.iter().map(g), t_interval);
        let matched = MatchedEpisodes::of(at);
        let direct_ns = over(&|c| c.direct_ns);
        let predicted = over(&|c| predicted_loss_pct(c.rate_hz, c.total_ns));
        let [handler_ns, interrupt_ns, remainder_ns] = traced_times(self.util, f, direct_ns.value);
        let paired_loss_pct = self
            .loss
            .iter()
            .find(|l| l.freq_hz == f && l.design == Design::Paired)
            .map(|l| l.trusted());
        // The prediction's part inside gaps: all of it but the after-effect.
        let in_gaps_of =
            |c: &RunCost| predicted_loss_pct(c.rate_hz, c.total_ns - c.after_effect_ns);
        // Per run, the gap share over 0 Hz, the unexplained part of it, and
        // what the samples explain with that part (prediction + it): from
        // the same runs, so one interval over their sum carries the two
        // parts' covariance.
        let gap_parts: Vec<[f64; 3]> = (at.iter().zip(&costs))
            .map(|(r, c)| {
                let excess = r.gap_share_pct() - self.zero_gap;
                let in_gaps = excess - in_gaps_of(c);
                let explained = predicted_loss_pct(c.rate_hz, c.total_ns) + in_gaps;
                [excess, in_gaps, explained]
            })
            .collect();
        let gap_part = |k: usize| over_runs(n, gap_parts.iter().map(|p| p[k]), t_interval);
        let (in_gaps, explained) = (gap_part(1), gap_part(2));
        let pooled = &matched.pooled_ns;
        let row = PerSampleRow {
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
            background_ns: bg.b_ns,
            cap_ns: bg.cap_ns,
            above_cap_ns,
            above_cap_charged: charge.0,
            long_per_s: t_interval_of(at.iter().map(|r| r.long_per_s())),
            long_ns,
            long_charged: charge.1,
            after_effect_ns: part(3),
            after_effect_bound_ns: after_bound,
            total_ns: over(&|c| c.total_ns),
            total_pred_ns: over_runs(n, costs.iter().map(|c| c.total_ns), t_prediction),
            direct_ns,
            handler_ns,
            interrupt_ns,
            remainder_ns,
            agreement: paired_loss_pct
                .filter(|_| predicted.value.is_finite())
                .map(|p| agreement(&predicted, &p, after_bound.is_some())),
            remainder: paired_loss_pct
                .and_then(|p| Remainder::of(&p, &predicted, in_gaps, &explained)),
            paired_loss_pct,
            predicted_loss_pct: predicted,
            excess_gap_share_pct: gap_part(0),
            predicted_direct_loss_pct: over(&in_gaps_of),
            aa_null_ns: bg.aa_null_ns,
        };
        (row, costs)
    }
}

/// The `interval` over runs of `x` (one value per run of `n`: the t
/// interval of the mean, or the prediction interval); NaN without values
/// (no 0 Hz runs, so no b).
fn over_runs(
    n: usize,
    x: impl IntoIterator<Item = f64>,
    interval: fn(&[f64]) -> Estimate,
) -> Estimate {
    let x: Vec<f64> = x.into_iter().collect();
    if x.is_empty() {
        nan_est(n)
    } else {
        interval(&x)
    }
}

/// Run `r`'s cost from its `parts` (direct, above the cap, long, measured
/// after-effect), with the parts above the cap and long charged as
/// `charge` says; where the after-effect is unmeasurable and `after_bound`
/// is given, the bound, at most the run's time between samples outside its
/// direct cost.
fn run_cost(r: &GapsRun, p: &[f64; 4], charge: (bool, bool), after_bound: Option<f64>) -> RunCost {
    let [direct_ns, above_cap_ns, long_ns, measured] = *p;
    let rate_hz = r.rate_hz();
    let (after, bounded) = match after_bound {
        Some(bound) if !measured.is_finite() => {
            let spare = (1e9 / rate_hz - direct_ns).max(0.0);
            (bound.min(spare).max(0.0), true)
        }
        _ => (measured, false),
    };
    let charged = |on: bool, v: f64| if on { v } else { 0.0 };
    RunCost {
        run_id: r.row.run_id,
        block: r.block,
        freq_hz: r.row.freq_hz,
        started_at_ns: r.started_at_ns,
        rate_hz,
        direct_ns,
        above_cap_ns,
        long_ns,
        after_effect_ns: after,
        after_effect_bounded: bounded,
        total_ns: direct_ns + after + charged(charge.0, above_cap_ns) + charged(charge.1, long_ns),
    }
}

/// The cap on an episode's excess: the 99.9th percentile of the 0 Hz
/// runs' episode excess (episodes under [`LONG_EPISODE_NS`], pooled).
/// Infinite (no cap) without 0 Hz episodes.
pub fn episode_cap_ns(zero: &[&GapsRun]) -> f64 {
    let mut x: Vec<f64> = zero
        .iter()
        .flat_map(|r| r.episodes.iter())
        .filter(|e| e.excess_ns < LONG_EPISODE_NS)
        .map(|e| e.excess_ns as f64)
        .collect();
    if x.is_empty() {
        return f64::INFINITY;
    }
    x.sort_by(f64::total_cmp);
    quantile_sorted(&x, CAP_QUANTILE)
}

/// The quantile of the background's episode excess that caps every
/// episode (see [`episode_cap_ns`]).
pub const CAP_QUANTILE: f64 = 0.999;
/// The cap is never below this many times the median matched episode at
/// the rate: it trims the rare host interruption a sample coincides with,
/// never a typical sample's cost (on a quiet host the background's
/// episodes may all be shorter than one sample's).
pub const CAP_MEDIAN_FACTOR: f64 = 10.0;

/// The cap at one rate: the background's ([`episode_cap_ns`]) or
/// [`CAP_MEDIAN_FACTOR`] x the median matched excess of the runs `at`,
/// whichever is larger.
pub(super) fn cap_at(background_cap_ns: f64, at: &[&GapsRun]) -> f64 {
    let m = MatchedEpisodes::of(at);
    let median = quantile_sorted(&m.pooled_ns, 0.5);
    if median.is_finite() {
        background_cap_ns.max(CAP_MEDIAN_FACTOR * median)
    } else {
        background_cap_ns
    }
}
