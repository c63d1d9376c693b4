//! What is recorded of a run: its runs.csv row (the plan's columns, the
//! host's state around the run, what it measured or why it failed), its
//! noise verdict, and the warnings the log gives about it.

use results_format::RunStatus;
use results_format::thinning::Thinning;

use super::{
    MadeRun, NOISY_NIVCSW_PER_S, NOISY_STEAL_FRACTION, NOISY_WAIT_FRACTION, RunOutcome, RunSpec,
};
use crate::plan::PlannedRun;
use crate::results::RunRow;
use crate::system::quiet::QuietReport;
use crate::system::settings::PerfLimits;

/// Noise verdict of a run: reasons, empty when clean. Other tasks on the
/// workload's CPU are judged by the time they took from it (run-queue
/// wait); only when that is not measured, by its involuntary switches.
pub fn noise_reasons(quiet: &QuietReport, outcome: &RunOutcome) -> Vec<String> {
    let mut reasons = Vec::new();
    if !quiet.quiet {
        reasons.push(format!("cpu busy {:.1}% before the run", quiet.busy_pct));
    }
    let wall = outcome.wall_ns.max(1) as f64;
    if outcome.steal_ns as f64 > NOISY_STEAL_FRACTION * wall {
        reasons.push(format!(
            "steal {:.2}% of wall",
            100.0 * outcome.steal_ns as f64 / wall
        ));
    }
    match outcome.wait_ns {
        Some(wait) if wait as f64 > NOISY_WAIT_FRACTION * wall => reasons.push(format!(
            "run-queue wait {:.2}% of wall (other tasks on its CPU)",
            100.0 * wait as f64 / wall
        )),
        Some(_) => {}
        None if outcome.nivcsw as f64 > NOISY_NIVCSW_PER_S * wall / 1e9 => reasons.push(format!(
            "{} involuntary context switches (no schedstat to time them)",
            outcome.nivcsw
        )),
        None => {}
    }
    reasons
}

/// The plan's columns of a run's row: what ran, where, with which event.
fn base_row(spec: &RunSpec<'_>) -> RunRow {
    let run = spec.run;
    RunRow {
        run_id: run.run_id,
        kind: run.kind,
        design: run.design,
        block: run.block,
        freq_hz: run.freq_hz,
        rep: run.rep,
        // The paired null control (0 Hz) opens a sampler that never fires;
        // with --profiler ours opens none (the profiler's event is its own).
        event: if crate::plan::opens_sampler(run, spec.opts) {
            spec.event.to_owned()
        } else {
            String::new()
        },
        requested_event: spec.opts.event.to_string(),
        contents: run.contents.name(),
        workload: run.workload.name(),
        scope: spec.opts.scope,
        cpu: spec.opts.cpu,
        // A command runs to completion: no requested duration, and its
        // wall time is the measurement.
        duration_ns: if spec.opts.subject.command().is_some() {
            0
        } else {
            spec.opts.duration_ns
        },
        ..RunRow::default()
    }
}

/// The run's runs.csv row with what is known whether it failed or not: the
/// plan's columns, the perf sysctls, the idle check, the driver's CPU.
pub(super) fn host_row(spec: &RunSpec<'_>, made: &MadeRun) -> RunRow {
    let (before, after, quiet) = (&made.limits_before, &made.limits_after, &made.quiet);
    RunRow {
        perf_event_max_sample_rate_before: before.max_sample_rate,
        perf_event_max_sample_rate_after: after.max_sample_rate,
        perf_cpu_time_max_percent_before: before.cpu_time_max_percent,
        perf_cpu_time_max_percent_after: after.cpu_time_max_percent,
        quiet: quiet.quiet,
        idle_busy_pct: quiet.busy_pct,
        procs_running: quiet.procs_running,
        quiet_wait_ns: quiet.waited_ns,
        driver_cpu_ns: made.driver_cpu_ns,
        ..base_row(spec)
    }
}

/// A failed run's row: its error, status failed, noisy when the CPU was
/// busy before it.
pub(super) fn fill_failed_row(row: &mut RunRow, quiet: &QuietReport, message: &str) {
    row.status = RunStatus::Failed;
    row.error = message.to_owned();
    row.noisy = !quiet.quiet;
}

/// A successful run's row: what it measured, its noise verdict, status ok.
/// `thinned` is how its raw files were written (`files::thinning_of`).
pub(super) fn fill_ok_row(
    row: &mut RunRow,
    quiet: &QuietReport,
    out: &RunOutcome,
    thinned: (Thinning, Option<u64>),
) {
    let reasons = noise_reasons(quiet, out);
    fill_row(row, out);
    let (thinning, kept_ns) = thinned;
    if !thinning.is_all() {
        row.raw_keep_every = Some(thinning.every);
        row.raw_kept_ns = kept_ns;
    }
    row.noisy = !reasons.is_empty();
    row.noise_reasons = reasons.join("; ");
    row.status = RunStatus::Ok;
}

/// What a successful run measured, into its row.
fn fill_row(row: &mut RunRow, out: &RunOutcome) {
    row.iterations = out.iterations;
    row.wall_ns = out.wall_ns;
    row.window_ns = out.window_ns;
    row.samples = out.samples;
    row.samples_all_cpus = out.samples_all_cpus;
    row.achieved_hz = if out.window_ns > 0 {
        out.samples as f64 * 1e9 / out.window_ns as f64
    } else {
        0.0
    };
    row.throttled = out.throttled;
    row.unthrottled = out.unthrottled;
    row.lost = out.lost;
    row.lost_samples = out.lost_samples;
    row.duplicates = out.duplicates;
    row.handler_intervals = u64::try_from(out.intervals.len()).unwrap_or(u64::MAX);
    row.unmatched = out.unmatched;
    row.foreign_intervals = out.foreign_intervals;
    row.steal_ns = out.steal_ns;
    row.nvcsw = out.nvcsw;
    row.nivcsw = out.nivcsw;
    row.wait_ns = out.wait_ns;
    row.user_ns = out.user_ns;
    row.sys_ns = out.sys_ns;
    row.overrun_ns = out.overrun_ns;
    row.started_at_ns = out.started_at_ns;
    row.ended_at_ns = out.ended_at_ns;
    row.driver_cpu_sampling_ns = out.driver_cpu_sampling_ns;
    row.decoded_while_sampling_bytes = out.decoded_while_sampling_bytes;
    if let Some(p) = &out.profiler {
        row.profiler_cpu_ns = Some(p.cpu_ns);
        row.profiler_cpus = p
            .cpus
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(";");
        row.profiler_peak_rss_kb = Some(p.peak_rss_kb);
        row.profiler_write_bytes = Some(p.write_bytes);
    }
    let c = &out.contents;
    let per_sample = |sum: u64| (c.samples > 0).then(|| sum as f64 / c.samples as f64);
    if c.callchains > 0 {
        row.callchain_mean = per_sample(c.callchain_entries);
    }
    if c.stack_copies > 0 {
        row.stack_user_mean_bytes = per_sample(c.stack_user_bytes);
        row.stack_dyn_mean_bytes = per_sample(c.stack_dyn_bytes);
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

    fn run(wall_ns: u64, wait_ns: Option<u64>, nivcsw: u64) -> RunOutcome {
        RunOutcome {
            wall_ns,
            wait_ns,
            nivcsw,
            ..RunOutcome::default()
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
