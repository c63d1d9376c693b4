//! The report's section "what one sample costs the application" (gaps
//! design); its table is `report/per_sample.csv` (`PerSampleRow`).

use std::fmt::Write as _;

use crate::format::fmt_est;
use crate::percost::{PerSample, PerSampleRow};

fn ns(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.0}"),
        _ => "n/a".to_string(),
    }
}

/// The headline lines for the report's summary.
pub fn key_lines(ps: &PerSample) -> Vec<String> {
    let mut v = Vec::new();
    let costs: Vec<String> = ps
        .rows
        .iter()
        .filter(|r| r.total_ns.value.is_finite())
        .map(|r| {
            format!(
                "{} Hz: {} ns -> {} % loss{}",
                r.freq_hz,
                fmt_est(&r.total_ns, 0),
                fmt_est(&r.predicted_loss_pct, 4),
                bound_words(r)
            )
        })
        .collect();
    if costs.is_empty() {
        v.push(
            "Cost of one sample to the application (gaps design): not computed (see warnings)."
                .to_string(),
        );
    } else {
        v.push(format!(
            "Cost of one sample to the application (gaps design; direct + after-effect + the tail parts that resolve, 95% CI over runs): {}.",
            costs.join("; ")
        ));
    }
    let verdicts: Vec<String> = ps
        .rows
        .iter()
        .filter_map(|r| {
            r.agreement
                .map(|a| format!("{} Hz {}", r.freq_hz, a.word()))
        })
        .collect();
    if !verdicts.is_empty() {
        v.push(format!(
            "Predicted vs paired throughput loss: {}.",
            verdicts.join(", ")
        ));
    }
    v
}

/// Where the after-effect is a bound, what the total holds.
fn bound_words(r: &PerSampleRow) -> String {
    r.after_effect_bound_ns.map_or(String::new(), |b| {
        format!(
            " (direct + an after-effect this rate cannot measure, bounded by {b:.0} ns and by the time between samples)"
        )
    })
}

/// The per-sample figures as three tables that each fit a laptop screen:
/// what a sample costs and the loss it predicts, how the cost is made up,
/// and how the samples matched their episodes. Each is (title, header,
/// one row per frequency).
fn tables(ps: &PerSample) -> [(&'static str, &'static str, Vec<String>); 3] {
    let rows = |f: &dyn Fn(&PerSampleRow) -> String| ps.rows.iter().map(f).collect::<Vec<_>>();
    [
        (
            "What one sample costs and the loss it predicts",
            "| freq_hz | runs | total ns/sample [95% CI] | next run's total ns [95% PI] | predicted loss % [95% CI] | paired loss % [95% CI] | agreement |",
            rows(&|r| {
                format!(
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    r.freq_hz,
                    r.runs,
                    fmt_est(&r.total_ns, 0),
                    fmt_pred(&r.total_pred_ns),
                    fmt_est(&r.predicted_loss_pct, 4),
                    r.paired_loss_pct
                        .map_or("not measured".to_string(), |e| fmt_est(&e, 3)),
                    r.agreement.map_or("-", |a| a.word()),
                )
            }),
        ),
        (
            "How the cost is made up",
            "| freq_hz | direct ns [95% CI] | b (ns) | after-effect ns [95% CI] | handler ns | whole interrupt ns | remainder ns |",
            rows(&|r| {
                format!(
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    r.freq_hz,
                    fmt_est(&r.direct_ns, 0),
                    fmt_est(&r.background_ns, 1),
                    r.after_effect_bound_ns.map_or_else(
                        || fmt_est(&r.after_effect_ns, 0),
                        |b| format!("not measurable; bound {b:.0}")
                    ),
                    ns(r.handler_ns),
                    ns(r.interrupt_ns),
                    ns(r.remainder_ns),
                )
            }),
        ),
        (
            "How the samples matched",
            "| freq_hz | achieved_hz | matched episodes | episode excess median / mean / p99 (ns) | mean of run means [95% CI] |",
            rows(&|r| {
                format!(
                    "| {} | {:.0} | {} | {:.0} / {:.0} / {:.0} | {} |",
                    r.freq_hz,
                    r.achieved_hz,
                    r.matched_episodes,
                    r.matched_median_ns,
                    r.matched_mean_ns,
                    r.matched_p99_ns,
                    fmt_est(&r.matched_mean_by_run_ns, 0),
                )
            }),
        ),
    ]
}

/// The section, Markdown.
pub fn render(ps: &PerSample) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## What one sample costs the application (gaps design)\n"
    );
    let _ = writeln!(
        s,
        "The workload's loop stamps its progress and records every chunk that took longer than usual (a gap); gaps closer than 2 us form an episode, and each sample is matched to the episode that holds it. Episodes of 1 ms or more (the CPU taken away: another task, the host) are left out, with the samples in them (column samples_in_long of per_sample.csv). Per run: direct cost = matched episode excess (each episode capped, see below) / samples - b, where b is the (capped) excess a sampler at the same rate would match on the 0 Hz runs by coincidence (its exact expectation over the sampler's phase); after-effect = the run's after-effect per episode (excess of the chunks within the horizon after a gap, min(50 us, half the sampling interval), over the run's own speed beyond it, / episodes; every episode, sample or background, charged alike) x matched episodes / samples; total = direct + after-effect, plus the part above the cap and the long episodes' extra time (over the 0 Hz runs' episodes from 1 ms x (1 - the samples' share of the time) up: samples due inside an episode join it) where their interval lies above 0 (where a dense rate leaves no chunks beyond the horizon to measure its after-effect, the largest after-effect upper bound of the other rates is charged instead, and the total is an upper estimate); predicted loss = achieved rate x total. Intervals: 95% t over the runs at each frequency; the next run's total is a 95% prediction interval over runs (mean +- t s sqrt(1 + 1/n): where one more run would land, what the recommendation uses) ({} 0 Hz runs give b and the baselines; their own intervals are in per_sample.csv). Handler: mean handler duration in the util runs; whole interrupt: local_timer time per handler call; remainder = direct - whole interrupt (or - handler): interrupt entry/exit and exits to the host that the tracepoints cannot see. Method: docs/methodology.md, \"Gaps design\".\n",
        ps.zero_runs
    );
    if ps.rows.is_empty() {
        let _ = writeln!(s, "No gaps runs above 0 Hz.\n");
    } else {
        for (title, header, rows) in tables(ps) {
            let _ = writeln!(s, "{title}:\n");
            crate::format::table_head(&mut s, header);
            for row in rows {
                let _ = writeln!(s, "{row}");
            }
            s.push('\n');
        }
    }
    for r in &ps.rows {
        let _ = writeln!(s, "- {}", aa_line(r, ps.zero_runs));
    }
    for line in tail_lines(ps) {
        let _ = writeln!(s, "- {line}");
    }
    if ps.zero_after_per_episode_ns.value.is_finite() {
        let _ = writeln!(
            s,
            "- After-effect per episode of the background (0 Hz runs, horizon 50 us): {} ns; the samples' episodes are charged their own run's per-episode value (column after-effect).",
            fmt_est(&ps.zero_after_per_episode_ns, 1)
        );
    }
    for r in &ps.rows {
        if let (Some(a), Some(p)) = (r.agreement, r.paired_loss_pct) {
            let _ = writeln!(
                s,
                "- Agreement at {} Hz: predicted {} % vs paired {} %: {} (agree when |difference| <= t x sqrt(se_pred^2 + se_paired^2), t the 95% Welch-Satterthwaite value for the two sets of runs, tested where the paired interval excludes 0){}.",
                r.freq_hz,
                fmt_est(&r.predicted_loss_pct, 4),
                fmt_est(&p, 3),
                a.word(),
                match (a, r.remainder) {
                    (crate::percost::Agreement::Disagree, Some(m)) => format!("; {}", m.words()),
                    (crate::percost::Agreement::PairedNotResolved, _)
                        if p.value > r.predicted_loss_pct.hi =>
                    {
                        "; but the paired point estimate lies above the prediction's interval: the model may miss a slowdown outside the interrupts, as it did on a host like this (docs/methodology.md, \"On a host unlike ours\"); more paired runs (--reps) would tell".to_string()
                    }
                    _ => String::new(),
                }
            );
        }
    }
    for r in &ps.rows {
        let _ = writeln!(
            s,
            "- Consistency at {} Hz: excess gap time over 0 Hz {} % of the CPU vs the predicted loss inside gaps {} % (achieved rate x (direct + the charged parts above the cap and in long episodes)).",
            r.freq_hz,
            fmt_est(&r.excess_gap_share_pct, 4),
            fmt_est(&r.predicted_direct_loss_pct, 4)
        );
    }
    s.push('\n');
    s
}

/// Whether a part is in the total, in words.
fn charged_words(charged: bool, e: &crate::stats::Estimate) -> &'static str {
    if charged {
        "resolves above 0: charged to the total"
    } else if e.lo.is_finite() {
        "not resolved above 0: not charged"
    } else {
        "no interval: not charged"
    }
}

/// The cap on episodes and what lies above it, and the long episodes at
/// each rate against 0 Hz.
fn tail_lines(ps: &PerSample) -> Vec<String> {
    let mut v = Vec::new();
    if ps.rows.iter().any(|r| r.cap_ns.is_finite()) {
        let parts: Vec<String> = ps
            .rows
            .iter()
            .map(|r| {
                format!(
                    "{} Hz: cap {:.0} ns, above it {} ns ({})",
                    r.freq_hz,
                    r.cap_ns,
                    fmt_est(&r.above_cap_ns, 0),
                    charged_words(r.above_cap_charged, &r.above_cap_ns)
                )
            })
            .collect();
        v.push(format!(
            "Episode cap: each episode's excess counts up to a cap per sample it holds, in the direct cost and in b alike, so that a rare host interruption a sample happens to coincide with does not swamp the mean; the cap is the 99.9th percentile of the 0 Hz runs' episodes ({:.0} ns) or 10 x the median matched episode at the rate, whichever is larger. The matched excess above the cap, minus b's, is measured apart, per sample: {}.",
            ps.background_cap_ns,
            parts.join("; ")
        ));
    }
    let parts: Vec<String> = ps
        .rows
        .iter()
        .map(|r| {
            format!(
                "{} Hz {}/s, {} ns per sample over 0 Hz ({})",
                r.freq_hz,
                fmt_est(&r.long_per_s, 2),
                fmt_est(&r.long_ns, 0),
                charged_words(r.long_charged, &r.long_ns)
            )
        })
        .collect();
    v.push(format!(
        "Long episodes (>= 1 ms of excess, left out of the direct cost as the CPU taken away) are measured against 0 Hz ({}/s, {} % of the CPU): {}.",
        fmt_est(&ps.zero_long_per_s, 2),
        fmt_est(&ps.zero_long_share_pct, 3),
        parts.join("; ")
    ));
    v
}

/// The prediction interval, `[lo, hi]` only.
fn fmt_pred(e: &crate::stats::Estimate) -> String {
    if e.lo.is_finite() && e.hi.is_finite() {
        format!("[{:.0}, {:.0}]", e.lo, e.hi)
    } else {
        "n/a".to_string()
    }
}

fn aa_line(r: &PerSampleRow, zero_runs: usize) -> String {
    match r.aa_null_ns {
        Some(e) if e.lo.is_finite() => format!(
            "A/A null control at {} Hz (random sampler timestamps on each 0 Hz run minus the other 0 Hz runs' b, {} runs): {} ns per sample: {}.",
            r.freq_hz,
            e.n,
            fmt_est(&e, 2),
            if e.lo <= 0.0 && 0.0 <= e.hi {
                "contains 0, as it should"
            } else {
                "does NOT contain 0: the 0 Hz runs' backgrounds differ more than the intervals allow"
            }
        ),
        _ => format!(
            "A/A null control at {} Hz: cannot be computed ({} 0 Hz gaps runs; it needs two or more).",
            r.freq_hz, zero_runs
        ),
    }
}
