//! What is recorded of a run: its runs.csv row (the plan's columns, the
//! host's state around the run, what it measured or why it failed), its
//! noise verdict, and the warnings the log gives about it.

use results_format::RunStatus;
use results_format::thinning::Thinning;

use super::{
    MadeRun, NOISY_NIVCSW_PER_S, NOISY_STEAL_FRACTION, NOISY_WAIT_FRACTION, RunOutcome, RunSpec,
};
use crate::config::Subject;
use crate::plan::PlannedRun;
use crate::results::RunRow;
use crate::system::quiet::QuietReport;
use crate::system::settings::PerfLimits;

/// Noise verdict of a run from its measured columns (`row`): reasons,
/// empty when clean. Other tasks on the workload's CPU are judged by the
/// time they took from it (run-queue wait); only when that is not
/// measured, by its involuntary switches.
pub fn noise_reasons(quiet: &QuietReport, row: &RunRow) -> Vec<String> {
    let mut reasons = Vec::new();
    if !quiet.quiet {
        reasons.push(format!("cpu busy {:.1}% before the run", quiet.busy_pct));
    }
    let wall = row.wall_ns.max(1) as f64;
    if row.steal_ns as f64 > NOISY_STEAL_FRACTION * wall {
        reasons.push(format!(
            "steal {:.2}% of wall",
            100.0 * row.steal_ns as f64 / wall
        ));
    }
    match row.wait_ns {
        Some(wait) if wait as f64 > NOISY_WAIT_FRACTION * wall => reasons.push(format!(
            "run-queue wait {:.2}% of wall (other tasks on its CPU)",
            100.0 * wait as f64 / wall
        )),
        Some(_) => {}
        None if row.nivcsw as f64 > NOISY_NIVCSW_PER_S * wall / 1e9 => reasons.push(format!(
            "{} involuntary context switches (no schedstat to time them)",
            row.nivcsw
        )),
        None => {}
    }
    reasons
}

/// A run's row: the plan's columns (what ran, where, with which event),
/// the perf sysctls, the idle check and the driver's CPU, over `measured`
/// (what the run told; nothing for a failed run).
fn row(spec: &RunSpec<'_>, made: &MadeRun, measured: RunRow, intervals: usize) -> RunRow {
    let (run, opts) = (spec.run, spec.opts);
    let (samples, window_ns) = (measured.samples, measured.window_ns);
    let (before, after, quiet) = (&made.limits_before, &made.limits_after, &made.quiet);
    RunRow {
        run_id: run.run_id,
        kind: run.kind,
        design: run.design,
        block: run.block,
        freq_hz: run.freq_hz,
        rep: run.rep,
        // The paired null control (0 Hz) opens a sampler that never fires;
        // with --profiler ours opens none (the profiler's event is its own).
        event: if crate::plan::opens_sampler(run, opts) {
            spec.event.to_owned()
        } else {
            String::new()
        },
        requested_event: opts.event.to_string(),
        contents: run.contents.name(),
        workload: run.workload.name(),
        scope: opts.scope,
        cpu: opts.cpu,
        // A command runs to completion: no requested duration, and its
        // wall time is the measurement.
        duration_ns: match opts.subject {
            Subject::Command { .. } => 0,
            Subject::Loop => opts.duration_ns,
        },
        perf_event_max_sample_rate_before: before.max_sample_rate,
        perf_event_max_sample_rate_after: after.max_sample_rate,
        perf_cpu_time_max_percent_before: before.cpu_time_max_percent,
        perf_cpu_time_max_percent_after: after.cpu_time_max_percent,
        quiet: quiet.quiet,
        idle_busy_pct: quiet.busy_pct,
        procs_running: quiet.procs_running,
        quiet_wait_ns: quiet.waited_ns,
        driver_cpu_ns: made.driver_cpu_ns,
        achieved_hz: if window_ns > 0 {
            samples as f64 * 1e9 / window_ns as f64
        } else {
            0.0
        },
        handler_intervals: u64::try_from(intervals).unwrap_or(u64::MAX),
        ..measured
    }
}

/// A failed run's row: its error, status failed, noisy when the CPU was
/// busy before it.
pub(super) fn failed_row(spec: &RunSpec<'_>, made: &MadeRun, message: &str) -> RunRow {
    RunRow {
        status: RunStatus::Failed,
        error: message.to_owned(),
        noisy: !made.quiet.quiet,
        ..row(spec, made, RunRow::default(), 0)
    }
}

/// A successful run's row: what it measured, its noise verdict, status ok.
/// `thinned` is how its raw files were written (`files::thinning_of`).
pub(super) fn ok_row(
    spec: &RunSpec<'_>,
    made: &MadeRun,
    out: RunOutcome,
    (thinning, kept_ns): (Thinning, Option<u64>),
) -> RunRow {
    let reasons = noise_reasons(&made.quiet, &out.row);
    let thinned = !thinning.is_all();
    RunRow {
        raw_keep_every: thinned.then_some(thinning.every),
        raw_kept_ns: kept_ns.filter(|_| thinned),
        noisy: !reasons.is_empty(),
        noise_reasons: reasons.join("; "),
        status: RunStatus::Ok,
        ..row(spec, made, out.row, out.intervals.len())
    }
}

/// What the log says about a finished run's sampling: a rate the kernel
/// did not deliver, lost records, throttling.
pub(super) fn warn_about(run: &PlannedRun, row: &RunRow) {
    if run.freq_hz > 0 && row.window_ns > 0 && row.achieved_hz < 0.9 * run.freq_hz as f64 {
        tracing::warn!(
            "run {}: achieved {:.0} Hz of the requested {} Hz (the kernel clamps the \
             hrtimer period to 10 us and throttles above ~50 kHz; a busy host delays expiries)",
            run.run_id,
            row.achieved_hz,
            run.freq_hz
        );
    }
    if row.lost > 0 {
        tracing::warn!("run {} lost {} records", run.run_id, row.lost);
    }
    if row.throttled > 0 {
        tracing::warn!(
            "run {}: the kernel throttled sampling {} times",
            run.run_id,
            row.throttled
        );
    }
}

/// The warning when perf_event_max_sample_rate went down during a run: the
/// kernel lowers it on its own ("perf: interrupt took too long") when the
/// sampling interrupt's time exceeds perf_cpu_time_max_percent. None when it
/// did not go down (or was unreadable).
pub fn lowered_limit_warning(
    run: &PlannedRun,
    before: &PerfLimits,
    after: &PerfLimits,
) -> Option<String> {
    let (b, a) = (before.max_sample_rate?, after.max_sample_rate?);
    if a >= b {
        return None;
    }
    Some(format!(
        "run {} ({} Hz): perf_event_max_sample_rate went down from {b} to {a} during the run \
         (the kernel lowers it when sampling interrupts take more than \
         perf_cpu_time_max_percent = {} of the CPU; `dmesg` shows \"perf: interrupt took too \
         long\"){}",
        run.run_id,
        run.freq_hz,
        after
            .cpu_time_max_percent
            .map_or("?".to_string(), |p| format!("{p}%")),
        if run.freq_hz > a {
            format!(": later runs above {a} Hz will be refused or throttled")
        } else {
            String::new()
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(wall_ns: u64, wait_ns: Option<u64>, nivcsw: u64) -> RunRow {
        RunRow {
            wall_ns,
            wait_ns,
            nivcsw,
            ..RunRow::default()
        }
    }

    #[test]
    fn other_tasks_are_judged_by_the_time_they_took_and_by_switches_only_without_it() {
        let quiet = QuietReport {
            quiet: true,
            ..QuietReport::default()
        };
        // 8 s with 150 switches (18/s) that took 2.4 ms (0.03 %): clean.
        assert!(noise_reasons(&quiet, &run(8_000_000_000, Some(2_400_000), 150)).is_empty());
        // The same switches taking 16 ms (0.2 %): noisy, said in time.
        let r = noise_reasons(&quiet, &run(8_000_000_000, Some(16_000_000), 150));
        assert_eq!(
            r,
            vec!["run-queue wait 0.20% of wall (other tasks on its CPU)"]
        );
        // No schedstat: the count decides, and says why.
        let r = noise_reasons(&quiet, &run(8_000_000_000, None, 150));
        assert_eq!(
            r,
            vec!["150 involuntary context switches (no schedstat to time them)"]
        );
        assert!(noise_reasons(&quiet, &run(8_000_000_000, None, 50)).is_empty());
    }
}
