//! A real profiler's cost (`driver sweep --profiler`): the profiler samples
//! while the built-in loop runs in the gaps design, whose timeline times
//! every interruption of the loop, whoever causes it. We do not see the
//! profiler's samples, so its interruptions are what it adds over the 0 Hz
//! runs of the same randomised block: per block b and rate F,
//!
//! - the excess episode rate x_b = episodes/s (F) - episodes/s (0 Hz), to
//!   compare with the requested rate (perf record's own wake-ups, an agent
//!   that does not sample an idle CPU and throttling all show here);
//! - the excess gap time y_b = gap time/s (F) - gap time/s (0 Hz), the share
//!   of the CPU the application lost inside the interruptions;
//! - the cost of one interruption c_b = y_b / x_b;
//! - the throughput loss 1 - exp(-mean ln(rate_0 / rate_F)), the loop's own
//!   count, which also holds what happens outside the gaps (the after-effect
//!   of polluted caches).
//!
//! Each with its 95 % t interval over blocks: drift of the host between
//! blocks cancels. The profiler's own CPU (its whole process tree), memory
//! and writes come from runs.csv's `profiler_*` columns.

pub mod report;

use std::collections::BTreeMap;

use results_format::read_csv_rows;
use results_format::timeline::{TIMELINE_CSV, TimelineRow};

use crate::columns::{lo_hi, lo_hi_unit};
use crate::error::AnalysisError;
use crate::load::gaps::is_gaps_run;
use crate::load::{ResultSet, Run};
use crate::stats::{Estimate, distinct_sorted, grouped, mean, mean_of, t_interval};

/// The excess episode rate may differ from the request by this share before
/// the report says why.
pub const TRACKING_TOLERANCE: f64 = 0.05;

/// One rate of the profiler (a row of profiler.csv).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ProfilerRow {
    /// Requested rate, Hz.
    pub freq_hz: u64,
    /// Blocks with a run at this rate and a 0 Hz run (the estimates' n).
    pub blocks: usize,
    /// Interruptions of the loop per second over 0 Hz.
    #[serde(serialize_with = "lo_hi")]
    pub excess_episodes_per_s: Estimate,
    /// That rate over the requested one, %.
    pub tracking_pct: f64,
    /// What one interruption costs the application, ns.
    #[serde(serialize_with = "lo_hi_unit")]
    pub cost_per_interruption_ns: Estimate,
    /// Excess gap time: the loop's time lost inside interruptions, % of the
    /// CPU.
    #[serde(serialize_with = "lo_hi_unit")]
    pub gap_loss_pct: Estimate,
    /// The loop's throughput loss against 0 Hz, %.
    #[serde(serialize_with = "lo_hi_unit")]
    pub throughput_loss_pct: Estimate,
    /// The profiler's own CPU time over the loop's window, % of one CPU.
    #[serde(serialize_with = "lo_hi_unit")]
    pub profiler_cpu_pct: Estimate,
    /// The CPUs its threads ran on (union over runs).
    #[serde(serialize_with = "semicolons")]
    pub profiler_cpus: String,
    /// Its largest peak resident memory over the runs, kB.
    pub profiler_peak_rss_kb: u64,
    /// What it wrote, bytes per second of sampling (mean over runs).
    pub profiler_write_bytes_per_s: f64,
    /// Whether the profiler sampled from the loop's start: the extra
    /// interruptions per second in the first quarter of each run's window
    /// over those in the rest (both over the block's 0 Hz rate), the
    /// median over runs, % (100: as many from the start; NaN where the
    /// gaps files are absent or the rest shows none).
    pub first_quarter_pct: f64,
    /// Failed runs at this rate (the profiler exited early, the loop
    /// failed): left out, named in the table's `failed`.
    pub failed_runs: usize,
}

/// profiler.csv's CPUs, `;`-separated.
fn semicolons<S: serde::Serializer>(cpus: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&cpus.replace(',', ";"))
}

/// The profiler's table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProfilerTable {
    /// The `--profiler` template.
    pub template: String,
    /// 0 Hz runs (the baseline).
    pub zero_runs: usize,
    /// One row per rate above 0 Hz, ascending.
    pub rows: Vec<ProfilerRow>,
    /// Failed runs: (run id, its error).
    pub failed: Vec<(u32, String)>,
}

/// One gaps run's counts per second of its loop's window.
#[derive(Debug, Clone, Copy)]
struct PerSecond {
    window_s: f64,
    episodes: f64,
    gap_share: f64,
    loop_rate: f64,
}

fn per_second(run: &Run, tl: &TimelineRow) -> Option<PerSecond> {
    let w = tl.loop_end_ns.checked_sub(tl.loop_start_ns)? as f64;
    (w > 0.0 && run.iterations > 0).then(|| PerSecond {
        window_s: w / 1e9,
        episodes: tl.episodes as f64 * 1e9 / w,
        gap_share: tl.gap_time_ns as f64 / w,
        loop_rate: run.iterations as f64 / w,
    })
}

/// The profiler's table of `rs`; None when `rs` measured no profiler.
pub fn profiler_table(rs: &ResultSet) -> Result<Option<ProfilerTable>, AnalysisError> {
    let Some(template) = rs.loop_profiler_template() else {
        return Ok(None);
    };
    let timeline: Vec<TimelineRow> = read_csv_rows(&rs.dir.join(TIMELINE_CSV))?;
    let tl: BTreeMap<u32, &TimelineRow> = timeline.iter().map(|t| (t.run_id, t)).collect();
    let gaps: Vec<&Run> = rs.runs.iter().filter(|r| is_gaps_run(r)).collect();
    let failed: Vec<(u32, String)> = gaps
        .iter()
        .filter(|r| !r.ok())
        .map(|r| (r.run_id, r.error.clone()))
        .collect();
    let ok: Vec<(&Run, PerSecond)> = (gaps.iter().filter(|r| r.ok()))
        .filter_map(|r| Some((*r, per_second(r, tl.get(&r.run_id)?)?)))
        .collect();
    // The 0 Hz run of each block (the mean, should a resume have added one).
    let at_zero = ok.iter().filter(|(r, _)| r.freq_hz == 0);
    let zero = grouped(at_zero.map(|(r, p)| (r.block, *p)));
    let zero_runs = zero.values().map(Vec::len).sum();
    let base: BTreeMap<u32, PerSecond> = zero
        .iter()
        .map(|(b, v)| {
            let m = |f: fn(&PerSecond) -> f64| mean_of(v.iter().map(f));
            (
                *b,
                PerSecond {
                    window_s: m(|p| p.window_s),
                    episodes: m(|p| p.episodes),
                    gap_share: m(|p| p.gap_share),
                    loop_rate: m(|p| p.loop_rate),
                },
            )
        })
        .collect();
    let rows = distinct_sorted(gaps.iter().map(|r| r.freq_hz).filter(|&f| f > 0))
        .into_iter()
        .map(|f| row_at(rs, f, &ok, &tl, &base, &gaps))
        .collect();
    Ok(Some(ProfilerTable {
        template,
        zero_runs,
        rows,
        failed,
    }))
}

/// The row at rate `f` from the ok gaps runs (with their timeline rows)
/// against their blocks' 0 Hz runs (`base`); `gaps`, every gaps run.
fn row_at(
    rs: &ResultSet,
    f: u64,
    ok: &[(&Run, PerSecond)],
    tl: &BTreeMap<u32, &TimelineRow>,
    base: &BTreeMap<u32, PerSecond>,
    gaps: &[&Run],
) -> ProfilerRow {
    let [mut x, mut y, mut c, mut d, mut cpu, mut wps, mut quarters]: [Vec<f64>; 7] =
        Default::default();
    let mut cpus: Vec<String> = Vec::new();
    let mut rss = 0u64;
    for (r, p) in ok.iter().filter(|(r, _)| r.freq_hz == f) {
        let share_pct = |ns: u64| ns as f64 / 1e9 / p.window_s * 100.0;
        cpu.extend(r.profiler_cpu_ns.map(share_pct));
        wps.extend(r.profiler_write_bytes.map(|b| b as f64 / p.window_s));
        rss = rss.max(r.profiler_peak_rss_kb.unwrap_or(0));
        cpus.extend(
            r.profiler_cpus
                .split(';')
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
        let Some(b) = base.get(&r.block) else {
            continue;
        };
        let xb = p.episodes - b.episodes;
        let yb = p.gap_share - b.gap_share;
        x.push(xb);
        y.push(yb * 100.0);
        if xb > 0.0 {
            c.push(yb / xb * 1e9);
        }
        d.push((b.loop_rate / p.loop_rate).ln());
        let t = tl.get(&r.run_id);
        quarters.extend(t.and_then(|t| first_quarter(rs, r.run_id, t, b)));
    }
    cpus.sort_by_key(|c| c.parse::<u32>().unwrap_or(u32::MAX));
    cpus.dedup();
    let throughput = crate::subject::command::loss_from_log_ratios(&d);
    let xe = t_interval(&x);
    ProfilerRow {
        freq_hz: f,
        blocks: x.len(),
        tracking_pct: xe.value / f as f64 * 100.0,
        excess_episodes_per_s: xe,
        gap_loss_pct: t_interval(&y),
        cost_per_interruption_ns: t_interval(&c),
        throughput_loss_pct: throughput,
        profiler_cpu_pct: t_interval(&cpu),
        profiler_cpus: cpus.join(","),
        profiler_peak_rss_kb: rss,
        profiler_write_bytes_per_s: mean(&wps),
        first_quarter_pct: crate::stats::median(&quarters),
        failed_runs: gaps.iter().filter(|r| !r.ok() && r.freq_hz == f).count(),
    }
}

/// Run `id`'s extra interruptions per second in the first quarter of its
/// window over those in the rest (both over its block's 0 Hz rate, `b`),
/// %, from its gaps file (episodes joined as the driver joins them); None
/// where the file cannot be read or the rest shows none
/// ([`ProfilerRow::first_quarter_pct`] is their median).
fn first_quarter(rs: &ResultSet, id: u32, t: &TimelineRow, b: &PerSecond) -> Option<f64> {
    use results_format::timeline::{episodes_of, gaps_path, read_gaps_parquet};
    let gaps = read_gaps_parquet(&gaps_path(&rs.dir, id)).ok()?;
    let w = t.loop_end_ns.saturating_sub(t.loop_start_ns) as f64;
    let split = t.loop_start_ns + (w / 4.0) as u64;
    let eps = episodes_of(&gaps);
    let first = eps.iter().filter(|e| e.start_ns < split).count() as f64;
    let rest = eps.len() as f64 - first;
    let first_x = first / (w / 4.0 * 1e-9) - b.episodes;
    let rest_x = rest / (w * 0.75 * 1e-9) - b.episodes;
    (rest_x > 0.0).then(|| first_x / rest_x * 100.0)
}

impl ProfilerRow {
    /// Why the extra interruptions do not show the requested rate within
    /// [`TRACKING_TOLERANCE`], or None when they do: the interval lies
    /// above or below the band around the rate, or it is too wide to tell
    /// (the background's spread between runs hides a low rate).
    pub fn tracking_note(&self) -> Option<String> {
        let f = self.freq_hz as f64;
        let e = &self.excess_episodes_per_s;
        let (lo, hi) = (
            f * (1.0 - TRACKING_TOLERANCE),
            f * (1.0 + TRACKING_TOLERANCE),
        );
        if e.lo.is_finite() && e.hi.is_finite() {
            if e.lo > hi {
                return Some(format!(
                    "at {} Hz the loop saw {:.0} % of the requested rate in extra interruptions (interval {:.0}-{:.0} /s): the profiler interrupts more than it samples (perf record's ring wake-ups, a timer of its own, interrupts on the measured CPU from its work elsewhere)",
                    self.freq_hz, self.tracking_pct, e.lo, e.hi
                ));
            }
            if e.hi < lo {
                return Some(format!(
                    "at {} Hz the loop saw only {:.0} % of the requested rate in extra interruptions (interval {:.0}-{:.0} /s): the profiler samples less than asked (the kernel throttled it, it does not sample this CPU, or its event does not fire while the CPU is busy), or its interrupts coincide with others",
                    self.freq_hz, self.tracking_pct, e.lo, e.hi
                ));
            }
            if e.lo >= lo && e.hi <= hi {
                return None;
            }
            return Some(format!(
                "at {} Hz the extra interruptions, {:.0} /s [{:.0}, {:.0}], cannot show the rate within {:.0} %: the background's interruptions vary between runs by more than the profiler adds; more --reps or a longer --duration narrow it",
                self.freq_hz,
                e.value,
                e.lo,
                e.hi,
                TRACKING_TOLERANCE * 100.0
            ));
        }
        (!(self.tracking_pct / 100.0 - 1.0).abs().le(&TRACKING_TOLERANCE)).then(|| {
            format!(
                "at {} Hz the loop saw {:.0} % of the requested rate in extra interruptions (one block: no interval)",
                self.freq_hz, self.tracking_pct
            )
        })
    }

    /// Whether this rate's loss is resolved: both the extra interruptions
    /// and the time lost in them have intervals above 0.
    pub fn resolved(&self) -> bool {
        self.excess_episodes_per_s.lo > 0.0 && self.gap_loss_pct.lo > 0.0
    }
}

/// The highest rate within a loss budget for the profiler measured.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProfilerRecommendation {
    /// The budget, % of the application's throughput.
    pub budget_pct: f64,
    /// The highest rate within it, Hz (None when nothing measured says).
    pub max_hz: Option<f64>,
    /// The loss per kHz it was computed with, % (the upper end of the 95 %
    /// interval, the most costly measured rate).
    pub loss_per_khz_pct: f64,
    /// What that loss per kHz came from.
    pub basis: String,
    /// True when the budget would allow more than the highest measured
    /// rate: `max_hz` is that rate, as in the built-in sampler's
    /// recommendation (no rate above the measured ones is recommended).
    pub at_highest_measured: bool,
}

impl ProfilerRecommendation {
    /// The rate in words: `602 Hz`, `>= 999 Hz (highest measured)`, or `no
    /// answer`.
    pub fn rate_words(&self) -> String {
        match self.max_hz {
            Some(h) if self.at_highest_measured => {
                format!(">= {h:.0} Hz (every measured rate within)")
            }
            Some(h) => format!("{h:.0} Hz"),
            None => "no answer".to_string(),
        }
    }

    /// The answer with what it rests on, one line.
    pub fn headline(&self) -> String {
        match self.max_hz {
            Some(h) if self.at_highest_measured => format!(
                "{h:.0} Hz or more with this profiler: every measured rate is within budget ({:.3} % per kHz, the upper 95 % bound of the {}), and none above {h:.0} Hz was measured",
                self.loss_per_khz_pct, self.basis
            ),
            Some(_) => format!(
                "at most {} with this profiler ({:.3} % per kHz, the upper 95 % bound of the {})",
                self.rate_words(),
                self.loss_per_khz_pct,
                self.basis
            ),
            None => format!("no answer ({})", self.basis),
        }
    }
}

/// The highest rate whose loss stays within `budget_pct`: the loss grows
/// with the rate at the largest upper bound per kHz among the rates whose
/// loss resolves ([`ProfilerRow::resolved`]: at a rate whose interruptions
/// the background hides, the bound per kHz is noise divided by a small
/// rate), from the excess gap time, or from the throughput loss where that
/// resolves too and is the larger (the after-effect outside the gaps).
/// Where no rate resolves, every rate's bound is used, and the basis says
/// so.
pub fn recommend(t: &ProfilerTable, budget_pct: f64) -> ProfilerRecommendation {
    let any_resolved = t.rows.iter().any(ProfilerRow::resolved);
    let mut worst: Option<(f64, String)> = None;
    for r in t.rows.iter().filter(|r| r.resolved() || !any_resolved) {
        let khz = r.freq_hz as f64 / 1000.0;
        let gap = r.gap_loss_pct.hi / khz;
        let mut cands = vec![(gap, format!("excess gap time at {} Hz", r.freq_hz))];
        if r.throughput_loss_pct.lo > 0.0 && r.throughput_loss_pct.hi.is_finite() {
            cands.push((
                r.throughput_loss_pct.hi / khz,
                format!("throughput loss at {} Hz", r.freq_hz),
            ));
        }
        for (k, why) in cands {
            if k.is_finite() && worst.as_ref().is_none_or(|(w, _)| k > *w) {
                worst = Some((k, why));
            }
        }
    }
    let unresolved = if any_resolved {
        ""
    } else {
        "; no rate's loss resolves, so this is the largest bound measured"
    };
    let highest = t.rows.iter().map(|r| r.freq_hz).max().unwrap_or(0) as f64;
    match worst {
        Some((k, basis)) if k > 0.0 => {
            let within = budget_pct / k * 1000.0;
            ProfilerRecommendation {
                budget_pct,
                max_hz: Some(within.min(highest)),
                loss_per_khz_pct: k,
                basis: format!("{basis}{unresolved}"),
                at_highest_measured: within > highest,
            }
        }
        _ => ProfilerRecommendation {
            budget_pct,
            max_hz: None,
            loss_per_khz_pct: f64::NAN,
            basis: "no rate measured a loss".to_string(),
            at_highest_measured: false,
        },
    }
}
