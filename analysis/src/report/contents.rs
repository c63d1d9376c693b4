//! The report's sections on sample contents and the kernel's throttle, and
//! their CSV files (by_contents.csv, throttle.csv).

use std::fmt::Write as _;

use crate::columns::markdown_table;
use crate::contents::{ContentsRow, REFERENCE, ThrottleLimits, ThrottlePrediction};
use crate::format::opt_est;
use crate::pipeline::Findings;
use crate::stats::Estimate;

fn num(v: f64, d: usize) -> String {
    if v.is_finite() && v != 0.0 {
        format!("{v:.d$}")
    } else {
        "-".to_string()
    }
}

fn ratio_cell(r: &ContentsRow, e: Option<&Estimate>) -> String {
    if crate::contents::sample_of(&r.sample) == REFERENCE {
        "1 (reference)".to_string()
    } else {
        opt_est(e, 2)
    }
}

/// The markdown of both sections: the table by contents where there are
/// several (one restates the tables above: by_contents.csv), and the
/// throttle.
pub fn render(a: &Findings) -> String {
    let mut s = String::new();
    if a.contents.names.len() > 1 {
        by_contents(&mut s, a);
    }
    if let Some((limits, preds)) = &a.contents.throttle {
        s.push_str(&render_throttle(limits, preds));
    }
    s
}

/// The section comparing the sample contents.
fn by_contents(s: &mut String, a: &Findings) {
    let _ = writeln!(s, "## What a sample costs, by sample contents\n");
    let _ = writeln!(
        s,
        "Each contents' runs analysed alone (with the shared 0 Hz runs): handler ns per sample from its util runs (t interval over runs), application cost per sample from its gaps runs (direct + after-effect, t interval over runs), the call-chain entries and user-stack bytes its samples carried (mean over runs), and the ratio to {REFERENCE} at the same rate (95% normal interval, delta method on independent estimates). The tables above are those of {}.\n",
        a.contents.names.first().map_or("-", String::as_str)
    );
    let header = format!(
        "contents | freq_hz | achieved_hz | handler ns/sample [95% CI] | x {REFERENCE} | application ns/sample [95% CI] | x {REFERENCE} | of which after-effect ns [95% CI] | call-chain entries | stack bytes | throttled"
    );
    *s += &markdown_table(
        &header,
        a.contents.rows.iter().map(|r| {
            format!(
                "{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {}",
                r.sample,
                r.freq_hz,
                num(r.achieved_hz, 0),
                opt_est(r.handler_ns.as_ref(), 0),
                ratio_cell(r, r.handler_ratio.as_ref()),
                opt_est(r.total_ns.as_ref(), 0),
                ratio_cell(r, r.total_ratio.as_ref()),
                opt_est(r.after_ns.as_ref(), 0),
                num(r.callchain_mean, 1),
                num(r.stack_user_mean_bytes, 0),
                r.throttled
            )
        }),
    );
    s.push('\n');
}

fn render_throttle(l: &ThrottleLimits, preds: &[ThrottlePrediction]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## The kernel's throttle, predicted\n");
    let _ = writeln!(
        s,
        "Host limits when the sweep started: perf_event_max_sample_rate = {} Hz, perf_cpu_time_max_percent = {} %, HZ = {}. The kernel throttles an event that takes more than max_sample_rate / HZ samples in one tick (so above {} Hz), and, in PMU interrupt handlers only, averages the handler time over 128 samples and lowers perf_event_max_sample_rate when that average exceeds {} (\"perf: interrupt took too long\"): the new limit is HZ x floor((TICK_NSEC / 100 x percent) / (1.25 x average)). Prediction from the util runs' handler ns per sample at the highest rate measured.\n",
        l.max_sample_rate,
        l.cpu_time_max_percent,
        l.hz,
        l.max_sample_rate,
        l.allowed_ns()
            .map_or("(off: percent is 0 or 100)".to_string(), |a| format!(
                "{a:.0} ns (one period at the maximum rate x the percentage)"
            )),
    );
    let header = "contents | handler ns/sample | at Hz | kernel lowers max rate to | throttled above Hz | applies to this host's event | observed: throttle records (mean achieved Hz) by requested Hz";
    s += &markdown_table(
        header,
        preds.iter().map(|p| {
            let observed: Vec<String> = p
                .observed
                .iter()
                .map(|(f, t, a)| format!("{f}: {t} ({a:.0})"))
                .collect();
            format!(
                "{} | {:.0} | {} | {} | {} | {} | {}",
                p.sample,
                p.handler_ns,
                p.at_hz,
                p.lowered_rate_hz
                    .map_or("not lowered".to_string(), |r| r.to_string()),
                p.throttle_above_hz,
                if p.applies_here {
                    "yes"
                } else {
                    "per-tick throttle only (cpu-clock: the handler-time limit is a PMU host's)"
                },
                observed.join("; ")
            )
        }),
    );
    s.push('\n');
    s
}
