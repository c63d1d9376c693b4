//! Running a plan: the executor walks the planned runs, asks a [`Backend`]
//! to make each one, and writes each result as soon as the run ends.
//!
//! The backend is a trait so the scheduling, bookkeeping, failure handling
//! and interruption are tested deterministically with a mock; the real
//! backend (workload child process + perf sampler) is in `backend`.
//!
//! What is recorded of each run (its runs.csv row, noise verdict and
//! warnings) is in `exec/row.rs`; the other files a run writes in
//! `exec/files.rs`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::{Subject, SweepOptions};
use crate::handler::HandlerInterval;
use crate::plan::{PhaseSchedule, PlannedRun, RunKind, phase_schedule};
use crate::results::{Manifest, PhaseRow, ResultsDir, ResultsError, RunRow};
use crate::system::quiet::QuietReport;
use crate::system::settings::PerfLimits;

mod files;
mod row;

use files::write_run_files;
use row::{failed_row, ok_row, warn_about};
pub use row::{lowered_limit_warning, noise_reasons};

/// A run is flagged noisy when steal exceeds this share of its wall time.
pub const NOISY_STEAL_FRACTION: f64 = 0.01;
/// A run is flagged noisy when the workload waited on the run queue (other
/// tasks on its CPU ran) for more than this share of its wall time: 0.1 %,
/// about five times a typical run's 0.02-0.05 % on the development VM
/// (schedstat of 30 working-sets runs: 0.017-0.154 %, median 0.03 %).
pub const NOISY_WAIT_FRACTION: f64 = 0.001;
/// Without schedstat, a run is flagged noisy above this many involuntary
/// context switches of the workload per second of wall time (a count, not
/// the time they took: 10-20/s of ~20 us preemptions is ordinary here).
pub const NOISY_NIVCSW_PER_S: f64 = 10.0;
/// The sweep stops after this many failed runs in a row (something
/// systematic, e.g. perf refused, rather than a one-off crash).
pub const MAX_CONSECUTIVE_FAILURES: u32 = 5;

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
    /// `--command`: the folder the command may write its own files into
    /// (`command/run-N/` in the set, named by `PERF_OVERHEAD_RUN_DIR`).
    pub command_dir: Option<std::path::PathBuf>,
}

/// What a run measured: the measured columns of its runs.csv row, filled
/// by the backend (the executor adds the plan's and the host's), and what
/// goes to the run's other files.
#[derive(Debug, Clone, Default)]
pub struct RunOutcome {
    /// Iterations, wall time, the sampler's counts, the workload's
    /// switches and CPU time, the profiler's cost, ...: every column the
    /// run itself tells.
    pub row: RunRow,
    /// Where the sampling window started, CLOCK_MONOTONIC_RAW ns (0: not
    /// known; only a thinned util run's `raw_kept_ns` needs it).
    pub window_from_ns: u64,
    /// Handler intervals (util runs; one row each of
    /// `events/run-<id>.parquet`).
    pub intervals: Vec<HandlerInterval>,
    /// Phases (paired runs); `run_id`/`freq_hz` are filled by the executor.
    pub phases: Vec<PhaseRow>,
    /// The workload's run summary (its own JSON).
    pub workload_json: String,
    /// Gaps design: the timeline, its matches and its recovery histogram.
    pub timeline: Option<crate::gaps::TimelineOutcome>,
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

/// [`RunError::Failed`] with `e`'s message.
pub(crate) fn failed(e: impl std::fmt::Display) -> RunError {
    RunError::Failed(e.to_string())
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
        crate::system::clock::process_cpu_ns()
    }
    /// The perf sysctls now (read before and after every run).
    fn perf_limits(&mut self) -> PerfLimits {
        PerfLimits::read()
    }
}

/// Writes a util run's intervals (`events/run-<id>.parquet`); pluggable so
/// tests need not write parquet.
pub type IntervalWriter<'a> =
    &'a dyn Fn(&std::path::Path, &[HandlerInterval]) -> Result<(), String>;

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
/// result into `dir` as it comes, and rewrites the manifest at the end with
/// the warnings the runs added (its status is the caller's to set:
/// `results::set_status`).
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
    let pb = progress_bar(u64::try_from(todo.len()).unwrap_or(0));
    let log_each = pb.is_hidden();
    let mut tally = Tally::default();

    for (i, run) in todo.iter().enumerate() {
        if interrupt.load(Ordering::SeqCst) {
            tally.stop("interrupted".into());
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
        let schedule = paired_schedule(run, &opts);
        let spec = RunSpec::new(run, &opts, &event, schedule.as_ref(), dir.root());
        let (made, result) = make_run(backend, &spec, interrupt);
        if let Some(w) = lowered_limit_warning(run, &made.limits_before, &made.limits_after) {
            tracing::warn!("{w}");
            manifest.warnings.push(w);
        }
        match result {
            Err(RunError::Interrupted) => {
                tally.stop("interrupted".into());
                break;
            }
            Err(RunError::Failed(message)) => {
                tracing::error!("run {} failed: {message}", run.run_id);
                dir.append_run(&failed_row(&spec, &made, &message))?;
                if tally.failed(&message) {
                    break;
                }
            }
            Ok(out) => {
                let thinned =
                    write_run_files(dir, &spec, schedule.as_ref(), &out, write_intervals)?;
                let row = ok_row(&spec, &made, out, thinned);
                dir.append_run(&row)?;
                tally.ok(run, &row);
                warn_about(run, &row);
                let line = progress_line(i + 1, todo.len(), run, &row);
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
    // The warnings the runs added; the status is the caller's to set.
    dir.write_manifest(manifest)?;
    Ok(tally.summary)
}

/// The paired design's phase schedule of a loss run (None for other runs).
fn paired_schedule(run: &PlannedRun, opts: &SweepOptions) -> Option<PhaseSchedule> {
    (run.design.has_phases() && run.kind == RunKind::Loss)
        .then(|| phase_schedule(opts.duration_ns, opts.phase_ns, opts.seed, run.run_id))
}

impl<'a> RunSpec<'a> {
    /// What the backend is asked to run for `run`, with its phases from
    /// `schedule` (paired design) and a command's folder in the set at `root`.
    fn new(
        run: &'a PlannedRun,
        opts: &'a SweepOptions,
        event: &'a str,
        schedule: Option<&PhaseSchedule>,
        root: &std::path::Path,
    ) -> Self {
        RunSpec {
            run,
            opts,
            event,
            phases: schedule.map(|s| s.on.clone()).unwrap_or_default(),
            settle_ns: schedule.map_or(0, |s| s.settle_ns),
            command_dir: match opts.subject {
                Subject::Command { .. } => Some(results_format::command_dir(root, run.run_id)),
                Subject::Loop => None,
            },
        }
    }
}

/// The executor's running count: the summary so far and the failures in a
/// row.
#[derive(Default)]
struct Tally {
    /// What [`execute`] returns.
    summary: ExecSummary,
    /// Runs failed since the last one that succeeded.
    consecutive_failures: u32,
}

impl Tally {
    /// The sweep stops early, for `reason`.
    fn stop(&mut self, reason: String) {
        self.summary.interrupted = true;
        self.summary.stop_reason = Some(reason);
    }

    /// Counts a recorded failed run; true (and the sweep stops) when
    /// [`MAX_CONSECUTIVE_FAILURES`] runs failed in a row.
    fn failed(&mut self, message: &str) -> bool {
        self.summary.recorded += 1;
        self.summary.failed += 1;
        self.consecutive_failures += 1;
        if self.consecutive_failures < MAX_CONSECUTIVE_FAILURES {
            return false;
        }
        let reason = format!(
            "{} runs failed in a row, the last with: {message}",
            self.consecutive_failures
        );
        tracing::error!("stopping the sweep: {reason}");
        self.stop(reason);
        true
    }

    /// Counts a recorded successful run, and warns when it is noisy.
    fn ok(&mut self, run: &PlannedRun, row: &RunRow) {
        self.consecutive_failures = 0;
        self.summary.recorded += 1;
        if row.noisy {
            self.summary.noisy += 1;
            tracing::warn!("run {} is noisy: {}", run.run_id, row.noise_reasons);
        }
    }
}

/// The host's state around a run.
struct MadeRun {
    /// The idle check before the run.
    quiet: QuietReport,
    /// The perf sysctls before the run.
    limits_before: PerfLimits,
    /// The perf sysctls after the run.
    limits_after: PerfLimits,
    /// The driver's CPU time over the run, ns.
    driver_cpu_ns: u64,
}

/// Waits for the measured CPU to be quiet, then has the backend make the
/// run, reading the perf sysctls and the driver's CPU time around it.
fn make_run(
    backend: &mut dyn Backend,
    spec: &RunSpec<'_>,
    interrupt: &AtomicBool,
) -> (MadeRun, Result<RunOutcome, RunError>) {
    let quiet = backend.quiet_check(spec.opts.cpu, interrupt);
    let limits_before = backend.perf_limits();
    let cpu_before = backend.driver_cpu_ns();
    let result = backend.run(spec, interrupt);
    let driver_cpu_ns = backend.driver_cpu_ns().saturating_sub(cpu_before);
    let limits_after = backend.perf_limits();
    let made = MadeRun {
        quiet,
        limits_before,
        limits_after,
        driver_cpu_ns,
    };
    (made, result)
}

/// The log line of a finished run: `number` of `total`, what ran, what it
/// counted.
fn progress_line(number: usize, total: usize, run: &PlannedRun, row: &RunRow) -> String {
    format!(
        "run {}/{} id {} {} {} {} Hz rep {}: {} iterations, {} samples ({:.0} Hz){}",
        number,
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
    )
}
