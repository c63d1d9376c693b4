//! The report's sections on sample contents and the kernel's throttle, and
//! their CSV files (by_contents.csv, throttle.csv).

use std::fmt::Write as _;
use std::path::Path;

use crate::contents::{ContentsRow, REFERENCE, ThrottleLimits, ThrottlePrediction};
use crate::error::AnalysisError;
use crate::format::{fmt_est, opt_est, table_head};
use crate::stats::Estimate;
use crate::tables::Analysis;

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
    table_head(
        &mut s,
        &format!(
            "| contents | freq_hz | achieved_hz | handler ns/sample [95% CI] | x {REFERENCE} | application ns/sample [95% CI] | x {REFERENCE} | of which after-effect ns [95% CI] | call-chain entries | stack bytes | throttled |"
        ),
    );
    for r in &a.by_contents {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
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
        );
    }
    s.push('\n');
    if let Some((limits, preds)) = &a.throttle {
        s.push_str(&render_throttle(limits, preds));
    }
    s
}

/// The section on the after-effect from throughput (empty without rows).
pub fn render_after(rows: &[crate::aftereffect::AfterRow]) -> String {
    let mut s = String::new();
    if rows.is_empty() {
        return s;
    }
    let _ = writeln!(s, "## The after-effect, from throughput\n");
    let _ = writeln!(
        s,
        "What the workload loses per sample in the paired design (throughput loss with its interval over runs, / the achieved rate) minus the gaps design's direct cost per sample (the time inside the interrupt's episode): the remainder is what the interrupt costs after it returns (caches and TLB refilled, a slower core), with a normal 95% interval (independent runs, errors in quadrature). The timeline's own after-effect (chunks after a gap against the run's speed beyond a horizon) is beside it. This one needs no model of the loop's recovery, so it also holds for loops whose chunk times are irregular (a pointer chase beyond the caches), but its interval is the paired design's: narrow per sample only at high rates.\n"
    );
    table_head(
        &mut s,
        "| configuration | freq_hz | achieved_hz | throughput ns/sample [95% CI] | direct ns/sample [95% CI] | after-effect ns/sample [95% CI] | timeline's after-effect ns [95% CI] |",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} | {} | {} | {} | {} |",
            r.sample,
            r.freq_hz,
            r.achieved_hz,
            fmt_est(&r.throughput_ns, 0),
            fmt_est(&r.direct_ns, 0),
            fmt_est(&r.after_ns, 0),
            fmt_est(&r.timeline_after_ns, 0),
        );
    }
    s.push('\n');
    s
}

/// after_effect.csv: one row per configuration and rate.
pub fn write_after_csv(
    path: &Path,
    rows: &[crate::aftereffect::AfterRow],
) -> Result<(), AnalysisError> {
    let mut w = csv::Writer::from_path(path).map_err(|e| csv_err(path, e))?;
    w.write_record([
        "sample",
        "freq_hz",
        "achieved_hz",
        "throughput_ns",
        "throughput_ns_lo",
        "throughput_ns_hi",
        "direct_ns",
        "direct_ns_lo",
        "direct_ns_hi",
        "after_ns",
        "after_ns_lo",
        "after_ns_hi",
        "timeline_after_ns",
        "timeline_after_ns_lo",
        "timeline_after_ns_hi",
    ])
    .map_err(|e| csv_err(path, e))?;
    for r in rows {
        let mut rec = vec![
            r.sample.clone(),
            r.freq_hz.to_string(),
            r.achieved_hz.to_string(),
        ];
        for e in [
            &r.throughput_ns,
            &r.direct_ns,
            &r.after_ns,
            &r.timeline_after_ns,
        ] {
            rec.extend([e.value, e.lo, e.hi].map(|v| v.to_string()));
        }
        w.write_record(&rec).map_err(|e| csv_err(path, e))?;
    }
    w.flush().map_err(|e| AnalysisError::write(path, e))
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
    table_head(
        &mut s,
        "| contents | handler ns/sample | at Hz | kernel lowers max rate to | throttled above Hz | applies to this host's event | observed: throttle records (mean achieved Hz) by requested Hz |",
    );
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
        "after_effect_ns",
        "after_effect_ns_lo",
        "after_effect_ns_hi",
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
        let [a, al, ah] = e3(r.after_ns);
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
            a,
            al,
            ah,
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
