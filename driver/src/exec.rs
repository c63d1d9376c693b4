//! Running a plan: the executor walks the planned runs, asks a [`Backend`]
//! to make each one, and writes each result as soon as the run ends.
//!
//! The backend is a trait so the scheduling, bookkeeping, failure handling
//! and interruption are tested deterministically with a mock; the real
//! backend (workload child process + perf sampler) is in `sweep`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use results_format::RunStatus;
use results_format::timeline::{
    Gap, RECOVERY_CSV, RecoveryRow, TIMELINE_CSV, TimelineRow, gaps_path, samples_path,
    write_gaps_parquet, write_samples_parquet,
};

use crate::config::{Design, SweepOptions};
use crate::plan::{PlannedRun, RunKind, phase_schedule};
use crate::results::{Manifest, PhaseRow, ResultsDir, ResultsError, RunRow, Status};
use crate::sampler::ContentsStats;
use crate::system::{PerfLimits, QuietReport};

/// A run is flagged noisy when steal exceeds this share of its wall time.
pub const NOISY_STEAL_FRACTION: f64 = 0.01;
/// A run is flagged noisy above this many involuntary context switches of
/// the workload per second of wall time.
pub const NOISY_NIVCSW_PER_S: f64 = 10.0;
/// The sweep stops after this many failed runs in a row (something
/// systematic, e.g. perf refused, rather than a one-off crash).
pub const MAX_CONSECUTIVE_FAILURES: u32 = 5;

/// One handler interval (one row of events/run-<id>.parquet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interval {
    /// CPU the handler ran on.
    pub cpu: u32,
    /// Entry, CLOCK_MONOTONIC_RAW ns.
    pub entry_ns: u64,
    /// exit - entry, ns.
    pub duration_ns: u64,
    /// `nmi`, `hrtimer` or `local_timer` (static: a 100 kHz util run has
    /// two million intervals, and one allocation each showed in profiles).
    pub source: &'static str,
}

/// What the backend is asked to run.
#[derive(Debug, Clone)]
pub struct RunSpec<'a> {
    /// The planned run.
    pub run: &'a PlannedRun,
    /// Sweep options.
    pub opts: &'a SweepOptions,
    /// Sampling event to open (after fallback); unused at 0 Hz.
    pub event: &'a str,
    /// Paired design: the phase schedule (true = sampling on); empty for
    /// the other designs.
    pub phases: Vec<bool>,
    /// Paired design: time from the loop's start to the first phase.
    pub settle_ns: u64,
}

/// What a run measured.
#[derive(Debug, Clone, Default)]
pub struct RunOutcome {
    pub iterations: u64,
    pub wall_ns: u64,
    pub window_ns: u64,
    pub samples: u64,
    pub samples_all_cpus: u64,
    pub throttled: u64,
    pub unthrottled: u64,
    pub lost: u64,
    pub lost_samples: u64,
    pub duplicates: u64,
    pub unmatched: u64,
    pub foreign_intervals: u64,
    pub steal_ns: u64,
    pub nvcsw: u64,
    pub nivcsw: u64,
    pub user_ns: u64,
    pub sys_ns: u64,
    pub overrun_ns: u64,
    pub started_at_ns: u64,
    pub ended_at_ns: u64,
    /// The driver's CPU time while sampling was enabled.
    pub driver_cpu_sampling_ns: u64,
    /// Record bytes decoded while sampling was enabled.
    pub decoded_while_sampling_bytes: u64,
    /// What the measured CPU's samples carried.
    pub contents: ContentsStats,
    /// Handler intervals (util runs).
    pub intervals: Vec<Interval>,
    /// Phases (paired runs); `run_id`/`freq_hz` are filled by the executor.
    pub phases: Vec<PhaseRow>,
    /// The workload's own JSON report.
    pub workload_json: String,
    /// Gaps design: the timeline, its matches and its recovery histogram.
    pub timeline: Option<TimelineOutcome>,
}

/// What a gaps-design run adds: written to gaps/, samples/, timeline.csv
/// and recovery.csv (results_format::timeline defines them).
#[derive(Debug, Clone, Default)]
pub struct TimelineOutcome {
    /// The gaps, joined into episodes.
    pub gaps: Vec<Gap>,
    /// Sample times in the loop's window, sorted, and the episode holding
    /// each (-1: none).
    pub sample_times_ns: Vec<u64>,
    /// See `sample_times_ns`.
    pub sample_episodes: Vec<i64>,
    /// The timeline.csv row (`run_id`, `freq_hz`, `rep` filled by the executor).
    pub row: TimelineRow,
    /// The recovery.csv rows (likewise).
    pub recovery: Vec<RecoveryRow>,
}

/// Why a run produced no outcome.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The run failed (workload crashed or was killed, perf refused ...):
    /// recorded with status `failed`, the sweep goes on.
    #[error("{0}")]
    Failed(String),
    /// Ctrl-C/SIGTERM during the run: the child was stopped; not recorded.
    #[error("interrupted")]
    Interrupted,
}

/// Makes runs. The real one spawns the workload and opens the sampler.
pub trait Backend {
    /// Waits (bounded) for the measured CPU to be idle and reports; returns
    /// early when `interrupt` is set.
    fn quiet_check(&mut self, cpu: u32, interrupt: &AtomicBool) -> QuietReport;
    /// Makes one run; polls `interrupt` and stops early when it is set.
    fn run(&mut self, spec: &RunSpec<'_>, interrupt: &AtomicBool) -> Result<RunOutcome, RunError>;
    /// The driver's own CPU time so far, ns.
    fn driver_cpu_ns(&mut self) -> u64 {
        crate::system::process_cpu_ns()
    }
    /// The perf sysctls now (read before and after every run).
    fn perf_limits(&mut self) -> PerfLimits {
        PerfLimits::read()
    }
}

/// Writes a util run's intervals (events/run-<id>.parquet); pluggable so
/// tests need not write parquet.
pub type IntervalWriter<'a> = &'a dyn Fn(&std::path::Path, &[Interval]) -> Result<(), String>;

/// A fatal executor error: the sweep stops (data written so far stays).
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// Writing the results failed.
    #[error(transparent)]
    Results(#[from] ResultsError),
    /// Writing a parquet file failed.
    #[error("{}: {message}", path.display())]
    Intervals {
        /// The file.
        path: std::path::PathBuf,
        /// The error.
        message: String,
    },
}

/// How the execution ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecSummary {
    /// Runs recorded (ok or failed) in this invocation.
    pub recorded: u32,
    /// Of those, failed.
    pub failed: u32,
    /// Of those, flagged noisy.
    pub noisy: u32,
    /// Stopped before the end of the plan (Ctrl-C or too many failures).
    pub interrupted: bool,
    /// Why it stopped early, if it did.
    pub stop_reason: Option<String>,
}

/// Noise verdict of a run: reasons, empty when clean.
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
    if outcome.nivcsw as f64 > NOISY_NIVCSW_PER_S * wall / 1e9 {
        reasons.push(format!("{} involuntary context switches", outcome.nivcsw));
    }
    reasons
}

fn base_row(spec: &RunSpec<'_>) -> RunRow {
    let run = spec.run;
    RunRow {
        run_id: run.run_id,
        kind: run.kind,
        design: run.design,
        block: run.block,
        freq_hz: run.freq_hz,
        rep: run.rep,
        // The paired null control (0 Hz) opens a sampler that never fires.
        event: if run.freq_hz > 0 || !spec.phases.is_empty() {
            spec.event.to_owned()
        } else {
            String::new()
        },
        requested_event: spec.opts.event.to_string(),
        sample: run.sample.name(),
        workload: run.workload.name(),
        scope: spec.opts.scope,
        cpu: spec.opts.cpu,
        // A command runs to completion: no requested duration, and its
        // wall time is the measurement.
        duration_ns: if spec.opts.command.is_some() {
            0
        } else {
            spec.opts.duration_ns
        },
        ..RunRow::default()
    }
}

fn progress_bar(total: u64) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(total);
    let style = indicatif::ProgressStyle::with_template(
        "{bar:30} {pos}/{len} runs, {msg}, elapsed {elapsed}, ETA {eta}",
    );
    if let Ok(style) = style {
        pb.set_style(style);
    }
    pb
}

/// Runs `todo` (a subset of `manifest.plan`, in plan order), writing every
/// result into `dir` as it comes. Updates `manifest.status`/`ended_at` and
/// rewrites it at the end (complete or interrupted).
pub fn execute(
    backend: &mut dyn Backend,
    dir: &mut ResultsDir,
    manifest: &mut Manifest,
    todo: &[PlannedRun],
    interrupt: &AtomicBool,
    write_intervals: IntervalWriter<'_>,
) -> Result<ExecSummary, ExecError> {
    let opts = manifest.options.clone();
    let event = manifest.event.clone();
    let mut summary = ExecSummary::default();
    let pb = progress_bar(u64::try_from(todo.len()).unwrap_or(0));
    let log_each = pb.is_hidden();
    let mut consecutive_failures = 0u32;
    let total = todo.len();

    for (i, run) in todo.iter().enumerate() {
        if interrupt.load(Ordering::SeqCst) {
            summary.interrupted = true;
            summary.stop_reason = Some("interrupted".into());
            break;
        }
        let span = tracing::info_span!(
            "run",
            id = run.run_id,
            kind = run.kind.as_str(),
            freq_hz = run.freq_hz,
            rep = run.rep
        );
        let _enter = span.enter();
        pb.set_message(format!(
            "{} {} {} Hz",
            run.design.as_str(),
            run.kind.as_str(),
            run.freq_hz
        ));
        let schedule = (run.design == Design::Paired && run.kind == RunKind::Loss)
            .then(|| phase_schedule(opts.duration_ns, opts.phase_ns, opts.seed, run.run_id));
        let spec = RunSpec {
            run,
            opts: &opts,
            event: &event,
            phases: schedule.as_ref().map(|s| s.on.clone()).unwrap_or_default(),
            settle_ns: schedule.as_ref().map_or(0, |s| s.settle_ns),
        };
        let quiet = backend.quiet_check(opts.cpu, interrupt);
        let limits_before = backend.perf_limits();
        let cpu_before = backend.driver_cpu_ns();
        let result = backend.run(&spec, interrupt);
        let driver_cpu_ns = backend.driver_cpu_ns().saturating_sub(cpu_before);
        let limits_after = backend.perf_limits();
        let mut row = base_row(&spec);
        row.perf_event_max_sample_rate_before = limits_before.max_sample_rate;
        row.perf_event_max_sample_rate_after = limits_after.max_sample_rate;
        row.perf_cpu_time_max_percent_before = limits_before.cpu_time_max_percent;
        row.perf_cpu_time_max_percent_after = limits_after.cpu_time_max_percent;
        if let Some(w) = lowered_limit_warning(run, &limits_before, &limits_after) {
            tracing::warn!("{w}");
            manifest.warnings.push(w);
        }
        row.quiet = quiet.quiet;
        row.idle_busy_pct = quiet.busy_pct;
        row.procs_running = quiet.procs_running;
        row.quiet_wait_ns = quiet.waited_ns;
        row.driver_cpu_ns = driver_cpu_ns;
        match result {
            Err(RunError::Interrupted) => {
                summary.interrupted = true;
                summary.stop_reason = Some("interrupted".into());
                break;
            }
            Err(RunError::Failed(message)) => {
                tracing::error!("run {} failed: {message}", run.run_id);
                row.status = RunStatus::Failed;
                row.error = message.clone();
                row.noisy = !quiet.quiet;
                dir.append_run(&row)?;
                summary.recorded += 1;
                summary.failed += 1;
                consecutive_failures += 1;
                if consecutive_failures >= MAX_CONSECUTIVE_FAILURES {
                    let reason = format!(
                        "{consecutive_failures} runs failed in a row, the last with: {message}"
                    );
                    tracing::error!("stopping the sweep: {reason}");
                    summary.interrupted = true;
                    summary.stop_reason = Some(reason);
                    break;
                }
            }
            Ok(out) => {
                consecutive_failures = 0;
                write_run_files(dir, &spec, schedule.as_ref(), &out, write_intervals)?;
                let reasons = noise_reasons(&quiet, &out);
                fill_row(&mut row, &out);
                row.noisy = !reasons.is_empty();
                row.noise_reasons = reasons.join("; ");
                row.status = RunStatus::Ok;
                dir.append_run(&row)?;
                summary.recorded += 1;
                if row.noisy {
                    summary.noisy += 1;
                    tracing::warn!("run {} is noisy: {}", run.run_id, row.noise_reasons);
                }
                warn_about(run, &row);
                let line = format!(
                    "run {}/{} id {} {} {} {} Hz rep {}: {} iterations, {} samples ({:.0} Hz){}",
                    i + 1,
                    total,
                    run.run_id,
                    run.design.as_str(),
                    run.kind.as_str(),
                    run.freq_hz,
                    run.rep,
                    row.iterations,
                    row.samples,
                    row.achieved_hz,
                    if row.noisy { ", noisy" } else { "" }
                );
                if log_each {
                    tracing::info!("{line}");
                } else {
                    pb.suspend(|| tracing::debug!("{line}"));
                }
            }
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    manifest.status = if summary.interrupted {
        Status::Interrupted
    } else {
        Status::Complete
    };
    manifest.ended_at = Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    dir.write_manifest(manifest)?;
    Ok(summary)
}

/// The files of a finished run other than its runs.csv row: the
/// workload's report, the util run's intervals, the gaps design's
/// timeline, the paired design's phases.
fn write_run_files(
    dir: &mut ResultsDir,
    spec: &RunSpec<'_>,
    schedule: Option<&crate::plan::PhaseSchedule>,
    out: &RunOutcome,
    write_intervals: IntervalWriter<'_>,
) -> Result<(), ExecError> {
    let run = spec.run;
    if !out.workload_json.is_empty() {
        dir.write_workload(run.run_id, &out.workload_json)?;
    }
    if run.kind == RunKind::Util {
        let path = dir.events_path(run.run_id);
        write_intervals(&path, &out.intervals).map_err(|message| ExecError::Intervals {
            path: path.clone(),
            message,
        })?;
    }
    if let Some(t) = &out.timeline {
        write_timeline(dir, run, t)?;
    }
    if !out.phases.is_empty() {
        let phases: Vec<PhaseRow> = out
            .phases
            .iter()
            .map(|p| PhaseRow {
                run_id: run.run_id,
                freq_hz: run.freq_hz,
                group: p.phase / 4,
                order: schedule
                    .map_or("", |s| s.order_of(p.phase as usize))
                    .to_owned(),
                settle_ns: spec.settle_ns,
                ..p.clone()
            })
            .collect();
        dir.append_phases(&phases)?;
    }
    Ok(())
}

/// What the log says about a finished run's sampling: a rate the kernel
/// did not deliver, lost records, throttling.
fn warn_about(run: &PlannedRun, row: &RunRow) {
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

/// Writes a gaps-design run's files.
fn write_timeline(
    dir: &ResultsDir,
    run: &PlannedRun,
    t: &TimelineOutcome,
) -> Result<(), ExecError> {
    let id = run.run_id;
    let parquet_err = |path: std::path::PathBuf| {
        move |e: ResultsError| ExecError::Intervals {
            path,
            message: e.to_string(),
        }
    };
    let gp = gaps_path(dir.root(), id);
    dir.ensure_parent(&gp)?;
    write_gaps_parquet(&gp, &t.gaps).map_err(parquet_err(gp.clone()))?;
    let sp = samples_path(dir.root(), id);
    dir.ensure_parent(&sp)?;
    write_samples_parquet(&sp, &t.sample_times_ns, &t.sample_episodes)
        .map_err(parquet_err(sp.clone()))?;
    let row = TimelineRow {
        run_id: run.run_id,
        freq_hz: run.freq_hz,
        rep: run.rep,
        ..t.row.clone()
    };
    for w in row.warnings.split("; ").filter(|w| !w.is_empty()) {
        tracing::warn!("run {} timeline: {w}", run.run_id);
    }
    dir.append_rows(TIMELINE_CSV, &[row])?;
    let recovery: Vec<RecoveryRow> = t
        .recovery
        .iter()
        .map(|r| RecoveryRow {
            run_id: run.run_id,
            freq_hz: run.freq_hz,
            ..r.clone()
        })
        .collect();
    dir.append_rows(RECOVERY_CSV, &recovery)?;
    Ok(())
}

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
    row.user_ns = out.user_ns;
    row.sys_ns = out.sys_ns;
    row.overrun_ns = out.overrun_ns;
    row.started_at_ns = out.started_at_ns;
    row.ended_at_ns = out.ended_at_ns;
    row.driver_cpu_sampling_ns = out.driver_cpu_sampling_ns;
    row.decoded_while_sampling_bytes = out.decoded_while_sampling_bytes;
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
