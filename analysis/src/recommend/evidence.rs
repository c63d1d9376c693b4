//! What each design measured of the loss beyond the gaps term, as points
//! of one kind ([`Evidence`]): the loss model ([`super::model`]) fits its
//! outside term through them.
//!
//! - **paired**: the paired design's total loss minus the gaps term at the
//!   paired runs' achieved rate (within runs: sampling on against off).
//! - **split**: the split design's loss outside the gaps, on phases against
//!   off phases of the same runs (within runs), less the gaps term's
//!   after-effect at that rate.
//! - **long episodes**: the gaps design's episodes of 1 ms or more (the
//!   CPU taken away), their extra time at the rate over the 0 Hz runs'
//!   (between runs: a hog inflates it most);
//! - **split vs 0 Hz**: the split design's on phases outside the gaps
//!   against the same block's 0 Hz split run (between runs: what outlasts
//!   a phase, and what a hog that slows whole runs inflates), less the
//!   after-effect alike.
//!
//! The split's parts are losses of speed on the time outside the gaps;
//! each point takes them to the total loss's scale first (times the share
//! of the time outside the gaps).
//!
//! The after-effect (the loop's slow recovery just after a gap) lies
//! outside the gaps in time but inside the gaps term (its total per sample
//! is direct + after-effect): the split points take it off so that no
//! point counts it twice. A point is left out where its total loss is
//! above [`LINEAR_LOSS_MAX_PCT`]: there the loop has lost most of its
//! time and the loss no longer grows in proportion to the rate.

use results_format::Design;

use super::search::CostPoint;
use crate::percost::{PerSample, PerSampleRow, predicted_loss_pct};
use crate::row_types::LossRow;
use crate::split::SplitRow;
use crate::stats::{Estimate, positive_or, t_crit95};

/// Above this total loss, % of the loop's work, a rate's point is left out
/// of the outside term's fit: the loss is proportional to the rate only
/// while the loop keeps most of its time (budgets are at most 5 %; the
/// densest rates lose 95 % and more).
pub const LINEAR_LOSS_MAX_PCT: f64 = 50.0;

/// A loss, %, at or below [`LINEAR_LOSS_MAX_PCT`] (false for NaN).
fn in_linear_range(loss_pct: f64) -> bool {
    loss_pct <= LINEAR_LOSS_MAX_PCT
}

/// How a point compares: within runs (sampling on against off in the same
/// run) or between runs (against other runs, which whole-run noise such
/// as a hog inflates). Each class keeps its own variance in the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    WithinRuns,
    BetweenRuns,
}

impl Class {
    pub fn words(self) -> &'static str {
        match self {
            Class::WithinRuns => "within runs",
            Class::BetweenRuns => "between runs",
        }
    }
}

/// Which measurement a point comes from (in the order the model lists
/// them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Paired total loss minus the gaps term.
    Paired,
    /// Split design, outside the gaps, on against off phases.
    Split,
    /// Split design, outside the gaps, on phases against the block's 0 Hz
    /// split run.
    SplitVsZero,
    /// Gaps design: the long episodes' (1 ms or more) extra time at the
    /// rate over the 0 Hz runs'.
    LongEpisodes,
}

impl Source {
    pub fn class(self) -> Class {
        match self {
            Source::Paired | Source::Split => Class::WithinRuns,
            Source::SplitVsZero | Source::LongEpisodes => Class::BetweenRuns,
        }
    }

    pub fn words(self) -> &'static str {
        match self {
            Source::Paired => "paired total minus the gaps term",
            Source::Split => "split, outside the gaps, within runs",
            Source::SplitVsZero => "split, outside the gaps, against 0 Hz runs",
            Source::LongEpisodes => "gaps, long episodes' extra time against 0 Hz runs",
        }
    }
}

/// One rate's measurement of the loss beyond the gaps term.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Evidence {
    pub source: Source,
    pub freq_hz: u64,
    /// The rate the kernel delivered, Hz: the dose.
    pub achieved_hz: f64,
    /// The loss beyond the gaps term, % of the loop's work.
    pub excess_pct: f64,
    /// Its standard error, percentage points.
    pub se_pct: f64,
    /// Runs or blocks behind it.
    pub n: usize,
}

impl Evidence {
    pub fn class(&self) -> Class {
        self.source.class()
    }
}

/// The standard error behind a 95 % t interval: its half-width over the t
/// quantile of its n - 1 degrees of freedom (the interval is what each
/// table reports; `se` is not always filled).
pub fn se_of(e: &Estimate) -> f64 {
    let hw = e.half_width();
    if e.n >= 2 && hw.is_finite() {
        hw / t_crit95((e.n - 1) as f64)
    } else {
        e.se
    }
}

fn usable(e: &Evidence) -> bool {
    e.excess_pct.is_finite() && e.se_pct.is_finite() && e.se_pct > 0.0 && e.achieved_hz > 0.0
}

/// The paired point at one of the gaps term's rates: paired loss minus
/// achieved rate x the gaps term's mean per sample (`gaps_mean`).
fn paired(loss: &[LossRow], r: &PerSampleRow, gaps_mean: &Estimate) -> Option<Evidence> {
    let l = loss
        .iter()
        .find(|l| l.design == Design::Paired && l.freq_hz == r.freq_hz)?;
    let p = l.trusted();
    let rate = positive_or(l.achieved_hz, r.achieved_hz);
    if !in_linear_range(p.value) || !gaps_mean.value.is_finite() {
        return None;
    }
    let model = predicted_loss_pct(rate, gaps_mean.value);
    let model_se = predicted_loss_pct(rate, se_of(gaps_mean));
    Some(Evidence {
        source: Source::Paired,
        freq_hz: r.freq_hz,
        achieved_hz: rate,
        excess_pct: p.value - model,
        se_pct: se_of(&p).hypot(model_se),
        n: p.n,
    })
}

/// The gaps term's after-effect per sample at one rate and its standard
/// error, ns: the bound charged where it could not be measured (no
/// error then).
fn after_effect(r: &PerSampleRow) -> Option<(f64, f64)> {
    match r.after_effect_bound_ns {
        Some(b) => Some((b, 0.0)),
        None => {
            let e = r.after_effect_ns;
            e.value.is_finite().then(|| (e.value, se_of(&e).max(0.0)))
        }
    }
}

/// The long episodes' point at one rate: their extra time per sample over
/// the 0 Hz runs' (a t interval over runs), as a loss at the achieved rate.
fn long_episodes(r: &PerSampleRow) -> Option<Evidence> {
    let e = r.long_ns;
    if !e.value.is_finite() || !in_linear_range(r.predicted_loss_pct.value) {
        return None;
    }
    Some(Evidence {
        source: Source::LongEpisodes,
        freq_hz: r.freq_hz,
        achieved_hz: r.achieved_hz,
        excess_pct: predicted_loss_pct(r.achieved_hz, e.value),
        se_pct: predicted_loss_pct(r.achieved_hz, se_of(&e)),
        n: e.n,
    })
}

/// Every point the set holds, by source then rate; only those with a
/// finite value, a positive standard error and a loss in the linear range.
/// `(gaps, means)`: the gaps term's rates and its mean per sample at each
/// (same order); `loss`: Table 2's rows; `split`: the split design's.
pub fn collect(
    per_sample: Option<&PerSample>,
    loss: &[LossRow],
    split: &[SplitRow],
    (gaps, means): (&[CostPoint], &[Estimate]),
) -> Vec<Evidence> {
    let rows: &[PerSampleRow] = per_sample.map_or(&[], |ps| &ps.rows);
    let mut v: Vec<Evidence> = rows
        .iter()
        .filter_map(|r| {
            let i = gaps.iter().position(|p| p.freq_hz == r.freq_hz)?;
            paired(loss, r, means.get(i)?)
        })
        .collect();
    v.extend(rows.iter().filter_map(long_episodes));
    for r in split.iter().filter(|r| r.freq_hz > 0) {
        if !in_linear_range(r.total.value) {
            continue;
        }
        let Some(after) = rows
            .iter()
            .find(|p| p.freq_hz == r.freq_hz)
            .and_then(after_effect)
        else {
            continue;
        };
        let rate = positive_or(r.achieved_hz, r.freq_hz as f64);
        let (after_pct, after_se) = (
            predicted_loss_pct(rate, after.0),
            predicted_loss_pct(rate, after.1),
        );
        // The split's outside part is a loss of speed on the time outside
        // the gaps; its share of the total loss is that times the time
        // left outside them (total = i + o (1 - i)), the scale of the gaps
        // term. At 20 kHz a quarter of the time is in the gaps, and the
        // speed loss overstates the loss by a third.
        let scale = 1.0 - r.in_gaps.value / 100.0;
        if !(scale.is_finite() && scale > 0.0) {
            continue;
        }
        for (source, e) in [
            (Source::Split, r.outside),
            (Source::SplitVsZero, r.outside_vs_zero),
        ] {
            v.push(Evidence {
                source,
                freq_hz: r.freq_hz,
                achieved_hz: rate,
                excess_pct: e.value * scale - after_pct,
                se_pct: (se_of(&e) * scale).hypot(after_se),
                n: e.n,
            });
        }
    }
    v.retain(usable);
    v.sort_by_key(|e| (e.source, e.freq_hz));
    v
}

/// The total cost per sample the within-run designs measure, ns: the
/// slope through the origin (weights 1 / se^2) of the paired loss and the
/// split total against the achieved rate, over the rates in the linear
/// range. None without such rates. The materiality margin of the outside
/// term's tests is a share of it ([`super::model::MATERIAL_SHARE`]).
pub fn throughput_cost_ns(loss: &[LossRow], split: &[SplitRow]) -> Option<f64> {
    let paired = loss
        .iter()
        .filter(|l| l.design == Design::Paired && l.freq_hz > 0)
        .map(|l| (l.achieved_hz, l.trusted()));
    let split = split
        .iter()
        .filter(|r| r.freq_hz > 0)
        .map(|r| (r.achieved_hz, r.total));
    let (mut sxx, mut sxy) = (0.0, 0.0);
    for (rate, e) in paired.chain(split) {
        let (x, se) = (rate * 1e-7, se_of(&e));
        if !(in_linear_range(e.value) && x > 0.0 && se.is_finite() && se > 0.0) {
            continue;
        }
        sxx += x * x / (se * se);
        sxy += x * e.value / (se * se);
    }
    (sxx > 0.0).then(|| (sxy / sxx).max(0.0))
}
