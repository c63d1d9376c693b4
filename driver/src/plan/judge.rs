//! The look at the host before a sweep, summarised and judged against the
//! plan: pure functions over what `backend/host_look.rs` measured.
//!
//! The look runs the counting loop on the measured CPU with no sampling
//! event, in timeline mode, and reads its counter at the end of each slice
//! (the paired design's phase length). From that:
//! - the loop's speed per slice, its coefficient of variation and its
//!   min/max ratio, and the ABBA contrast of every four consecutive slices
//!   with nothing switched, whose spread is the paired design's noise per
//!   group of phases on this host (linear drift cancels in it as it does in
//!   a real group; a speed step inside four slices does not);
//! - the background episodes (the gaps design's joined gaps): their rate,
//!   median, 99th percentile and longest excess, and the share of time in
//!   long ones;
//! - steal.
//!
//! [`judge`] turns these into the smallest throughput loss the plan can
//! resolve ([`resolvable_loss`]) and warnings.

use results_format::HostLook;

use crate::config::Subject;
use crate::config::{Design, SweepOptions};
use crate::plan::phase_schedule;
use analysis::stats::mean;

/// How long the look's loop runs: 3 s, a quarter of a default run's
/// length plus its start-up, enough for ~26 slices of 100 ms.
pub const LOOK_NS: u64 = 3_000_000_000;
/// Slices discarded at the loop's start (runs start slow: the paired
/// design discards its first four phases for the same reason).
pub const SETTLE_SLICES: u64 = 4;
/// Shortest and longest slice, ns.
pub const SLICE_RANGE_NS: (u64, u64) = (20_000_000, 1_000_000_000);
/// A throughput design that cannot resolve a loss below this many
/// percentage points is warned of: the 1 % budget is the report's middle
/// one, and a design that cannot tell 1 % from 0 cannot check it.
pub const MAX_RESOLVABLE_PP: f64 = 1.0;
/// Steal above this share of the look's time is warned of (the runs'
/// own noise threshold, `exec::NOISY_STEAL_FRACTION`).
pub const MAX_STEAL_PCT: f64 = 1.0;
/// Time in background episodes of 1 ms or more above this share is a heavy
/// tail: a sample that lands in one is charged all of it (150 times a
/// ~6 us sample), so at 0.1 % of the time they add about 1 us or more to
/// the cost of a random sample, a sixth of it, and most of its spread.
pub const MAX_LONG_EPISODE_SHARE_PCT: f64 = 0.1;

/// What the look measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LookMeasure {
    /// The CPU looked at.
    pub cpu: u32,
    /// The loop's length as the workload reports it, ns.
    pub duration_ns: u64,
    /// The slice length asked for, ns.
    pub slice_ns: u64,
    /// (CLOCK_MONOTONIC_RAW ns, loop count) read at each slice boundary
    /// after the settling period; consecutive reads bound one slice.
    pub reads: Vec<(u64, u64)>,
    /// Each background episode's excess, ns.
    pub episode_excess_ns: Vec<u64>,
    /// Steal of the CPU over the look, ns.
    pub steal_ns: u64,
    /// The look's wall time over which steal was read, ns.
    pub wall_ns: u64,
}

/// The slice length for `opts`: its phase length, held within
/// [`SLICE_RANGE_NS`], so the slices' noise is the phases' noise.
pub fn slice_ns_for(opts: &SweepOptions) -> u64 {
    opts.phase_ns.clamp(SLICE_RANGE_NS.0, SLICE_RANGE_NS.1)
}

/// Iterations per ns in each slice between consecutive reads.
pub fn slice_rates(reads: &[(u64, u64)]) -> Vec<f64> {
    reads
        .windows(2)
        .filter(|w| w[1].0 > w[0].0)
        .map(|w| w[1].1.saturating_sub(w[0].1) as f64 / (w[1].0 - w[0].0) as f64)
        .collect()
}

/// Sample standard deviation (n - 1); 0 below two values.
fn sd(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return 0.0;
    }
    analysis::stats::std_dev(x)
}

/// The ABBA "loss" of every four consecutive slices, nothing switched:
/// 1 - mean(middle two) / mean(outer two).
pub fn abba_contrasts(rates: &[f64]) -> Vec<f64> {
    rates
        .windows(4)
        .filter(|w| w[0] + w[3] > 0.0)
        .map(|w| 1.0 - (w[1] + w[2]) / (w[0] + w[3]))
        .collect()
}

/// The value at quantile `q` of sorted `x` (nearest rank); 0 when empty.
fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The look's numbers, without the plan's judgement.
pub fn summarize(m: &LookMeasure) -> HostLook {
    // `a / b`, 0 where `b` is not above 0 (no slices, no time).
    let per = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    let rates = slice_rates(&m.reads);
    let max = rates.iter().copied().fold(f64::MIN, f64::max);
    let min = rates.iter().copied().fold(f64::MAX, f64::min);
    let mut ep = m.episode_excess_ns.clone();
    ep.sort_unstable();
    let loop_ns = m.duration_ns as f64;
    let share = |from: u64| {
        let t: u64 = ep.iter().filter(|&&e| e >= from).sum();
        per(100.0 * t as f64, loop_ns)
    };
    HostLook {
        cpu: m.cpu,
        duration_ns: m.duration_ns,
        slice_ns: m.slice_ns,
        slice_cv_pct: per(100.0 * sd(&rates), mean(&rates)),
        slice_min_max_ratio: per(min, max),
        abba_sd_pct: 100.0 * sd(&abba_contrasts(&rates)),
        slice_rates: rates,
        episodes_per_s: per(ep.len() as f64, loop_ns / 1e9),
        episode_median_ns: quantile(&ep, 0.5),
        episode_p99_ns: quantile(&ep, 0.99),
        episode_max_ns: ep.last().copied().unwrap_or(0),
        episode_share_100us_pct: share(100_000),
        episode_share_1ms_pct: share(1_000_000),
        steal_pct: per(100.0 * m.steal_ns as f64, m.wall_ns as f64),
        ..HostLook::default()
    }
}

/// The half-width of the 95 % interval over `reps` runs of a loss whose
/// noise per unit is `sd_pct` with `units` units per run (groups for the
/// paired design, 1 for whole runs), pp; None below two runs.
fn half_width(sd_pct: f64, units: u64, reps: u32) -> Option<f64> {
    if reps < 2 || units == 0 {
        return None;
    }
    let t = analysis::stats::t_crit95(f64::from(reps - 1));
    Some(t * sd_pct / ((units * u64::from(reps)) as f64).sqrt())
}

/// The repetitions at which `half_width` reaches [`MAX_RESOLVABLE_PP`]
/// (at most 1000), for the warning.
fn reps_for_1pp(sd_pct: f64, units: u64, from: u32) -> Option<u32> {
    (from.max(2)..=1000)
        .find(|&r| half_width(sd_pct, units, r).is_some_and(|h| h <= MAX_RESOLVABLE_PP))
}

/// The smallest loss the plan's throughput design resolves on this host.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolvable {
    /// The 95 % interval's half-width over the plan's runs, pp (None: the
    /// plan has no throughput design, or it is a command's).
    pub half_width_pp: Option<f64>,
    /// What it rests on, in words.
    pub basis: String,
    /// The repetitions that would bring it to 1 pp.
    pub reps_for_1pp: Option<u32>,
}

/// How well the plan's throughput design resolves a loss on this host.
///
/// Paired design: a group's loss is the difference of two means of two
/// phases; with independent phases of coefficient of variation c its SE
/// is sqrt(c^2/2 + c^2/2) = c, but neighbouring phases are not independent
/// here (slow drift, which ABBA cancels; speed steps, which it does not),
/// so the SE per group is taken from the look's own ABBA contrasts
/// (`abba_sd_pct`), c only when the look has too few slices for them. A
/// run's loss averages its g groups and the interval is over the reps
/// runs: half-width = t(0.975, reps - 1) x SE / sqrt(g x reps). This is
/// the best case: it leaves out differences between runs, which the
/// analysis's interval over runs carries.
///
/// Classic design: a run's loss against the 0 Hz run of its block is a
/// difference of two runs of CV c (the slices' CV, not averaged down: the
/// host's noise is slow): SE sqrt(2) x c per block, over reps blocks.
pub fn resolvable_loss(look: &HostLook, opts: &SweepOptions) -> Resolvable {
    if matches!(opts.subject, Subject::Command { .. }) {
        return Resolvable {
            half_width_pp: None,
            basis: "none: a command's loss comes from its whole runs, whose own spread decides"
                .into(),
            reps_for_1pp: None,
        };
    }
    if opts.designs.iter().any(|d| d.has_phases()) {
        let groups = (phase_schedule(opts.duration_ns, opts.phase_ns, 0, 0)
            .on
            .len()
            / 4) as u64;
        let contrasts = look.slice_rates.len().saturating_sub(3);
        let (sd, what) = if contrasts >= 2 {
            (look.abba_sd_pct, "ABBA sd")
        } else {
            (look.slice_cv_pct, "slice CV")
        };
        let basis = format!(
            "paired: {what} {sd:.2} % / sqrt({groups} groups x {} runs) x t",
            opts.reps
        );
        return Resolvable {
            half_width_pp: half_width(sd, groups, opts.reps),
            basis,
            reps_for_1pp: reps_for_1pp(sd, groups, opts.reps),
        };
    }
    if opts.designs.contains(&Design::Classic) {
        let sd = std::f64::consts::SQRT_2 * look.slice_cv_pct;
        let basis = format!(
            "classic: sqrt(2) x slice CV {:.2} % / sqrt({} runs) x t",
            look.slice_cv_pct, opts.reps
        );
        return Resolvable {
            half_width_pp: half_width(sd, 1, opts.reps),
            basis,
            reps_for_1pp: reps_for_1pp(sd, 1, opts.reps),
        };
    }
    Resolvable {
        half_width_pp: None,
        basis: "none: the plan has no throughput design (gaps only)".into(),
        reps_for_1pp: None,
    }
}

/// The look summarised and judged against the plan: the loss it can
/// resolve and the warnings.
pub fn judge(m: &LookMeasure, opts: &SweepOptions) -> HostLook {
    let mut look = summarize(m);
    let resolvable = resolvable_loss(&look, opts);
    look.resolvable_loss_pct = resolvable.half_width_pp;
    look.resolvable_basis = resolvable.basis;
    let throughput = !matches!(opts.subject, Subject::Command { .. })
        && opts
            .designs
            .iter()
            .any(|d| d.has_phases() || *d == Design::Classic);
    let unresolved = match look.resolvable_loss_pct {
        Some(x) if x >= 100.0 => Some(format!(
            "cannot resolve any loss here (the 95 % interval would be +-{x:.0} pp)"
        )),
        Some(x) if x > MAX_RESOLVABLE_PP => {
            Some(format!("cannot resolve a loss below {x:.1} % here"))
        }
        None if throughput && opts.reps < 2 => {
            Some("cannot put an interval on a loss from one repetition".to_owned())
        }
        _ => None,
    };
    if let Some(x) = unresolved {
        let model = if opts.designs.contains(&Design::Gaps) {
            "the recommendation will rest on the per-sample cost model (gaps design), with the throughput loss shown as an upper-bound check"
        } else {
            "the plan has no gaps design, whose per-sample cost model resolves small losses (--design paired,gaps)"
        };
        let more = resolvable.reps_for_1pp.map_or(String::new(), |r| {
            format!("; about --reps {r} would bring it to {MAX_RESOLVABLE_PP} pp")
        });
        look.warnings.push(format!(
            "the throughput designs {x}; {model}; \
             for a throughput check add runs (--reps N{more}) or longer runs"
        ));
    }
    if look.steal_pct > MAX_STEAL_PCT {
        look.warnings.push(format!(
            "steal was {:.1} % of CPU {}'s time during the look (over {MAX_STEAL_PCT} %): the host takes this vCPU away; runs will be flagged noisy and losses will scatter",
            look.steal_pct, look.cpu
        ));
    }
    if look.episode_share_1ms_pct > MAX_LONG_EPISODE_SHARE_PCT {
        look.warnings.push(format!(
            "{:.2} % of the loop's time went to background episodes of 1 ms or more (over {MAX_LONG_EPISODE_SHARE_PCT} %; the longest {:.1} ms): a sample that lands in one is charged all of it, which widens the per-sample cost's interval at every rate",
            look.episode_share_1ms_pct,
            look.episode_max_ns as f64 / 1e6
        ));
    }
    look
}

/// A duration in the unit that reads best: "850 ns", "3.1 us", "1.2 ms".
fn fmt_ns(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.1} us", ns as f64 / 1e3),
        _ => format!("{:.1} ms", ns as f64 / 1e6),
    }
}

/// The lines printed on stderr before the sweep (its warnings apart).
pub fn lines(look: &HostLook) -> Vec<String> {
    let mut out = vec![format!(
        "host look: cpu {}, {:.1} s of the counting loop, no sampling",
        look.cpu,
        look.duration_ns as f64 / 1e9
    )];
    if look.slice_rates.is_empty() {
        out.push("  loop speed   no whole slice was measured".into());
    } else {
        out.push(format!(
            "  loop speed   {} slices of {} ms: mean {:.3} iterations/ns, CV {:.2} %, min/max {:.3}, ABBA sd {:.2} %",
            look.slice_rates.len(),
            look.slice_ns / 1_000_000,
            mean(&look.slice_rates),
            look.slice_cv_pct,
            look.slice_min_max_ratio,
            look.abba_sd_pct
        ));
    }
    out.push(format!(
        "  background   {:.0} episodes/s, excess median {}, p99 {}, max {}; in episodes >= 100 us {:.3} % of the time, >= 1 ms {:.3} %",
        look.episodes_per_s,
        fmt_ns(look.episode_median_ns),
        fmt_ns(look.episode_p99_ns),
        fmt_ns(look.episode_max_ns),
        look.episode_share_100us_pct,
        look.episode_share_1ms_pct
    ));
    out.push(format!("  steal        {:.2} %", look.steal_pct));
    out.push(match look.resolvable_loss_pct {
        Some(x) => format!(
            "  resolvable   throughput loss >= {x:.2} pp ({})",
            look.resolvable_basis
        ),
        None => format!("  resolvable   {}", look.resolvable_basis),
    });
    out
}
