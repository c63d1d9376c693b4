//! The report's sections on sample contents and the kernel's throttle, and
//! their CSV files (by_contents.csv, throttle.csv).

use std::fmt::Write as _;
use std::path::Path;

use crate::contents::{ContentsRow, REFERENCE, ThrottleLimits, ThrottlePrediction};
use crate::error::AnalysisError;
use crate::report::fmt_est;
use crate::stats::Estimate;
use crate::tables::Analysis;

fn opt_est(e: Option<&Estimate>, d: usize) -> String {
    e.filter(|e| e.value.is_finite())
        .map_or_else(|| "-".to_string(), |e| fmt_est(e, d))
}

fn num(v: f64, d: usize) -> String {
    if v.is_finite() && v != 0.0 {
        format!("{v:.d$}")
    } else {
        "-".to_string()
    }
}

fn ratio_cell(r: &ContentsRow, e: Option<&Estimate>) -> String {
    if r.sample == REFERENCE {
        "1 (reference)".to_string()
    } else {
        opt_est(e, 2)
    }
}

/// The markdown of both sections.
pub fn render(a: &Analysis) -> String {
    let mut s = String::new();
    if a.by_contents.is_empty() {
        return s;
    }
    let _ = writeln!(s, "## What a sample costs, by sample contents\n");
    let _ = writeln!(
        s,
        "Each contents' runs analysed alone (with the shared 0 Hz runs): handler ns per sample from its util runs (t interval over runs), application cost per sample from its gaps runs (direct + after-effect, t interval over runs), the call-chain entries and user-stack bytes its samples carried (mean over runs), and the ratio to {REFERENCE} at the same rate (95% normal interval, delta method on independent estimates). The tables above are those of {}.\n",
        a.contents.first().map_or("-", String::as_str)
    );
    let _ = writeln!(
        s,
        "| contents | freq_hz | achieved_hz | handler ns/sample [95% CI] | x {REFERENCE} | application ns/sample [95% CI] | x {REFERENCE} | call-chain entries | stack bytes | throttled |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
    for r in &a.by_contents {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.sample,
            r.freq_hz,
            num(r.achieved_hz, 0),
            opt_est(r.handler_ns.as_ref(), 0),
            ratio_cell(r, r.handler_ratio.as_ref()),
            opt_est(r.total_ns.as_ref(), 0),
            ratio_cell(r, r.total_ratio.as_ref()),
            num(r.callchain_mean, 1),
            num(r.stack_user_mean_bytes, 0),
            r.throttled
        );
    }
    s.push('\n');
    if let Some((limits, preds)) = &a.throttle {
        s.push_str(&render_throttle(limits, preds));
    }
    s
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
    let _ = writeln!(
        s,
        "| contents | handler ns/sample | at Hz | kernel lowers max rate to | throttled above Hz | applies to this host's event | observed: throttle records (mean achieved Hz) by requested Hz |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for p in preds {
        let observed: Vec<String> = p
            .observed
            .iter()
            .map(|(f, t, a)| format!("{f}: {t} ({a:.0})"))
            .collect();
        let _ = writeln!(
            s,
            "| {} | {:.0} | {} | {} | {} | {} | {} |",
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
        );
    }
    s.push('\n');
    s
}

/// by_contents.csv: one row per contents and rate.
pub fn write_csv(path: &Path, rows: &[ContentsRow]) -> Result<(), AnalysisError> {
    let mut w = csv::Writer::from_path(path).map_err(|e| csv_err(path, e))?;
    w.write_record([
        "sample",
        "freq_hz",
        "achieved_hz",
        "handler_ns",
        "handler_ns_lo",
        "handler_ns_hi",
        "handler_ratio",
        "application_ns",
        "application_ns_lo",
        "application_ns_hi",
        "application_ratio",
        "callchain_mean",
        "stack_user_mean_bytes",
        "throttled",
    ])
    .map_err(|e| csv_err(path, e))?;
    let e3 = |e: Option<Estimate>| match e {
        Some(e) => [e.value, e.lo, e.hi].map(|v| v.to_string()),
        None => [String::new(), String::new(), String::new()],
    };
    let v = |e: Option<Estimate>| e.map_or(String::new(), |e| e.value.to_string());
    for r in rows {
        let [h, hl, hh] = e3(r.handler_ns);
        let [t, tl, th] = e3(r.total_ns);
        w.write_record([
            r.sample.clone(),
            r.freq_hz.to_string(),
            r.achieved_hz.to_string(),
            h,
            hl,
            hh,
            v(r.handler_ratio),
            t,
            tl,
            th,
            v(r.total_ratio),
            r.callchain_mean.to_string(),
            r.stack_user_mean_bytes.to_string(),
            r.throttled.to_string(),
        ])
        .map_err(|e| csv_err(path, e))?;
    }
    w.flush().map_err(|e| AnalysisError::write(path, e))
}

fn csv_err(path: &Path, e: csv::Error) -> AnalysisError {
    AnalysisError::write(path, std::io::Error::other(e))
}
