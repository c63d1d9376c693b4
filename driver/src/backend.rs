//! The real [`Backend`]: each run spawns the workload (this binary's hidden
//! `workload` subcommand) pinned to the measured CPU, waits for it to be
//! ready, opens the sampler, releases the loop (switching sampling in the
//! paired design's phases), and reads the workload's run summary and, in the
//! gaps design, its timeline. The workload child itself (spawning it,
//! waiting for it) is in `backend/child.rs`, the files it shares with the
//! driver in `backend/run_files.rs`, the paired design's phases in
//! `backend/phases.rs`, a run of the user's command in
//! `backend/user_command_run.rs`. A `--profiler` run of the loop is a
//! loop run with the profiler (`crate::subject::profiler`) started and
//! settled before the loop is released and stopped after it.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::config::{Sampling, ScopeName, Subject, SweepOptions};
use crate::exec::{Backend, RunError, RunOutcome, RunSpec, failed};
use crate::plan::{PlannedRun, RunKind, opens_sampler};
use crate::results::PhaseRow;
use crate::results::RunRow;
use crate::sampler::{EventKind, Sampler, SamplerConfig, SamplerOutcome, Scope};
use crate::subject::profiler::Profiler;
use crate::system::procstat::{ProcStat, ns_per_tick};
use crate::system::quiet::{QuietReport, wait_quiet};
use workload::clock::monotonic_raw_ns;

mod child;
mod host_look;
mod phases;
mod run_files;
mod user_command_run;

use child::{
    ChildGuard, WorkloadArgs, read_pipe, spawn_unpinned, wait_end, wait_ready, workload_command,
};
use phases::{phase_samples, run_phases};
use run_files::RunFiles;
pub(crate) use run_files::remove_stale_run_files;

/// The real backend: workload child + perf sampler.
pub(crate) struct RealBackend {
    pub(crate) event: EventKind,
    pub(crate) drain_cpu: Option<u32>,
    pub(crate) online_cpus: Vec<u32>,
}

/// CPU `cpu`'s steal time so far, in /proc/stat's ticks (0 when unreadable).
fn steal_ticks(cpu: u32) -> u64 {
    ProcStat::read().map(|s| s.cpu(cpu).steal).unwrap_or(0)
}

/// CPU `cpu`'s steal time since [`steal_ticks`] read `before`, ns.
fn steal_ns_since(before: u64, cpu: u32) -> u64 {
    steal_ticks(cpu).saturating_sub(before) * ns_per_tick()
}

/// The sampler a planned run opens (None: it opens none, see
/// [`opens_sampler`]): the backend's at run time, and the rings' limits
/// check's before the first run (with `pid` 0).
pub(crate) fn sampler_config(
    event: EventKind,
    drain_cpu: Option<u32>,
    run: &PlannedRun,
    opts: &SweepOptions,
    pid: u32,
) -> Option<SamplerConfig> {
    if !opens_sampler(run, opts) {
        return None;
    }
    let trace_handler = run.kind == RunKind::Util;
    Some(SamplerConfig {
        scope: match opts.scope {
            ScopeName::Cpu => Scope::Cpu,
            ScopeName::System => Scope::System,
            ScopeName::Task => Scope::Task(i32::try_from(pid).unwrap_or(0)),
        },
        contents: run.contents,
        trace_handler,
        trace_irq: trace_handler && !event.is_hardware(),
        drain_cpu,
        // Rings that hold the whole run: nothing is decoded while it runs.
        expected_duration: Some(Duration::from_nanos(opts.duration_ns)),
        ..SamplerConfig::new(event, run.freq_hz, opts.cpu)
    })
}

/// The sampler configuration of every planned run that opens one, by run
/// id (`pid` 0), for the rings' limits check before the first run.
pub(crate) fn plan_configs(
    plan: &[PlannedRun],
    opts: &SweepOptions,
    event: EventKind,
    drain_cpu: Option<u32>,
) -> Vec<(u32, SamplerConfig)> {
    plan.iter()
        .filter_map(|r| Some((r.run_id, sampler_config(event, drain_cpu, r, opts, 0)?)))
        .collect()
}

impl RealBackend {
    /// The sampler of `spec`'s run, open and disabled (None: the run opens
    /// none); `pid` the workload's, for task scope.
    fn open_sampler(&self, spec: &RunSpec<'_>, pid: u32) -> Result<Option<Sampler>, RunError> {
        sampler_config(self.event, self.drain_cpu, spec.run, spec.opts, pid)
            .map(|cfg| Sampler::open(&cfg))
            .transpose()
            .map_err(|e| failed(format!("cannot open the sampler: {e}")))
    }

    /// The `--profiler` of `spec`'s run started and settled (None: our
    /// sampler, or a run at 0 Hz, which runs without it).
    fn start_profiler(
        &self,
        spec: &RunSpec<'_>,
        interrupt: &AtomicBool,
    ) -> Result<Option<Profiler>, RunError> {
        let Sampling::Profiler { template } = &spec.opts.sampling else {
            return Ok(None);
        };
        if spec.run.freq_hz == 0 {
            return Ok(None);
        }
        let (freq_hz, cpu) = (spec.run.freq_hz, spec.opts.cpu);
        Profiler::start_settled(template, freq_hz, cpu, &self.online_cpus, interrupt).map(Some)
    }
}

impl Backend for RealBackend {
    fn quiet_check(&mut self, cpu: u32, interrupt: &AtomicBool) -> QuietReport {
        wait_quiet(
            cpu,
            Duration::from_secs(2),
            Duration::from_millis(100),
            5.0,
            interrupt,
        )
    }

    fn run(&mut self, spec: &RunSpec<'_>, interrupt: &AtomicBool) -> Result<RunOutcome, RunError> {
        if let Subject::Command { argv, .. } = &spec.opts.subject {
            return self.run_command(spec, argv, interrupt);
        }
        let files = RunFiles::new(spec);
        let args = WorkloadArgs {
            duration_ns: spec.opts.duration_ns,
            cpu: spec.opts.cpu,
            kind: &spec.run.workload,
            counter: &files.counter,
            gaps: files.gaps.as_deref(),
        };
        let mut w = self.ready_workload(&args, interrupt)?;
        let sampled = self.sample_loop(spec, &mut w, interrupt)?;
        let out_text = w.stdout.join().unwrap_or_default();
        let err_text = w.stderr.join().unwrap_or_default();
        workload_outcome(sampled, (out_text, &err_text), files.gaps.as_deref())
    }
}

/// A workload child that is ready to be released: its process (killed if
/// the run is abandoned), its counter, its pid (task scope and schedstat)
/// and the readers of its output.
struct ReadyWorkload {
    guard: ChildGuard,
    reader: workload::counter::CounterReader,
    pid: u32,
    stdout: std::thread::JoinHandle<String>,
    stderr: std::thread::JoinHandle<String>,
}

impl RealBackend {
    /// Starts the workload child of `args` (a run's or the look at the
    /// host's) and waits until it is set up (pinned, calibrated); one that
    /// exits before is a failed run quoting its stderr (read once the
    /// guard has reaped it).
    fn ready_workload(
        &self,
        args: &WorkloadArgs<'_>,
        interrupt: &AtomicBool,
    ) -> Result<ReadyWorkload, RunError> {
        let mut child = spawn_unpinned(&mut workload_command(args), &self.online_cpus)
            .map_err(|e| failed(format!("cannot start the workload: {e}")))?;
        let stdout = read_pipe(child.stdout.take());
        let stderr = read_pipe(child.stderr.take());
        let pid = child.id();
        let mut guard = ChildGuard(Some(child));
        match wait_ready(&mut guard, args.counter, interrupt)? {
            Ok(reader) => Ok(ReadyWorkload {
                guard,
                reader,
                pid,
                stdout,
                stderr,
            }),
            Err(status) => {
                drop(guard);
                let err = stderr.join().unwrap_or_default();
                Err(failed(format!(
                    "workload exited before it was ready ({status}): {}",
                    err.trim()
                )))
            }
        }
    }
}

/// What the driver saw of the loop while it sampled it.
struct Sampled {
    /// How the workload exited.
    status: std::process::ExitStatus,
    /// The row's columns measured around the loop: its steal time and
    /// window (CLOCK_MONOTONIC_RAW from the sampler's open to the
    /// workload's exit), with what the sampler (or the profiler) measured.
    row: RunRow,
    /// The rest of what the sampler measured (None: the run opened none).
    sampler: Option<SamplerOutcome>,
    /// The paired design's phases, with their samples counted.
    phases: Vec<PhaseRow>,
}

impl RealBackend {
    /// Opens the sampler (or starts the profiler), releases the loop
    /// (switching sampling in the paired design's phases), waits for the
    /// workload to exit with sampling switched off as soon as the loop
    /// ends, and finishes the sampler (or reads the profiler's cost over
    /// the loop's window and stops it).
    fn sample_loop(
        &self,
        spec: &RunSpec<'_>,
        w: &mut ReadyWorkload,
        interrupt: &AtomicBool,
    ) -> Result<Sampled, RunError> {
        let (guard, reader, pid) = (&mut w.guard, &w.reader, w.pid);
        let opts = spec.opts;
        let mut profiler = self.start_profiler(spec, interrupt)?;
        let steal_before = steal_ticks(opts.cpu);
        // Paired runs at 0 Hz (the null control) open a sampler that never
        // fires and toggle it like the others.
        let sampler = self.open_sampler(spec, pid)?;
        if let Some(p) = &mut profiler {
            p.window_starts();
        }
        let started_at_ns = monotonic_raw_ns();
        let mut phases = Vec::new();
        if spec.phases.is_empty() {
            if let Some(s) = &sampler {
                s.enable().map_err(failed)?;
            }
            reader.release();
        } else {
            reader.release();
            phases = run_phases(spec, reader, sampler.as_ref(), pid, interrupt)?;
        }

        // Wait for the end of the loop; stop sampling as soon as it ends.
        let status = wait_end(guard, reader, sampler.as_ref(), opts.duration_ns, interrupt)?;
        let ended_at_ns = monotonic_raw_ns();
        let mut row = RunRow {
            steal_ns: steal_ns_since(steal_before, opts.cpu),
            started_at_ns,
            ended_at_ns,
            ..RunRow::default()
        };
        if let Some(mut p) = profiler {
            p.window_ends(&mut row);
            p.check_alive("while the loop ran")?;
            p.stop_after_run(spec.run.run_id);
        }
        let sampler = sampler
            .map(|s| s.finish(&mut row))
            .transpose()
            .map_err(|e| failed(format!("sampler: {e}")))?;
        if let Some(o) = &sampler {
            phase_samples(&mut phases, &o.sample_times_ns);
        }
        Ok(Sampled {
            status,
            row,
            sampler,
            phases,
        })
    }
}

/// The run's outcome from the workload's exit, its run summary (`out_text`, its
/// stdout), its timeline (gaps design) and what was measured while it ran
/// (`sampled`); a failure quotes the workload's stderr (`err_text`).
fn workload_outcome(
    sampled: Sampled,
    (out_text, err_text): (String, &str),
    gaps_file: Option<&Path>,
) -> Result<RunOutcome, RunError> {
    let status = sampled.status;
    if !status.success() {
        return Err(failed(format!("workload {status}: {}", err_text.trim())));
    }
    let summary: workload::summary::RunSummary =
        serde_json::from_str(out_text.trim()).map_err(|e| {
            failed(format!(
                "cannot read the workload's run summary: {e}; stderr: {}",
                err_text.trim()
            ))
        })?;

    let sample_times: &[u64] = sampled.sampler.as_ref().map_or(&[], |s| &s.sample_times_ns);
    let timeline = read_timeline(&summary, gaps_file, sample_times)?;
    Ok(RunOutcome {
        row: RunRow {
            iterations: summary.iterations,
            wall_ns: summary.wall_ns,
            nvcsw: summary.nvcsw,
            nivcsw: summary.nivcsw,
            wait_ns: summary.wait_ns,
            user_ns: summary.user_ns,
            sys_ns: summary.sys_ns,
            overrun_ns: u64::try_from(summary.overrun_ns).unwrap_or(0),
            ..sampled.row
        },
        phases: sampled.phases,
        workload_json: out_text,
        timeline,
        ..RunOutcome::sampled(sampled.sampler)
    })
}

/// The gaps design's timeline of a run: the workload's gaps file matched
/// with the run's sample times; None in the other designs.
fn read_timeline(
    summary: &workload::summary::RunSummary,
    gaps_file: Option<&Path>,
    sample_times: &[u64],
) -> Result<Option<crate::gaps::TimelineOutcome>, RunError> {
    match (&summary.timeline, gaps_file) {
        (Some(t), Some(path)) => {
            let raw = read_gaps(path)?;
            Ok(Some(crate::gaps::timeline_outcome(t, &raw, sample_times)))
        }
        (None, Some(_)) => Err(failed("the workload ran without its timeline (--timeline)")),
        _ => Ok(None),
    }
}

/// The workload's gaps file: (start_ns, end_ns, excess_ns) of each gap.
fn read_gaps(path: &Path) -> Result<Vec<[u64; 3]>, RunError> {
    workload::timeline::read_gaps_file(path).map_err(|e| {
        failed(format!(
            "cannot read the workload's gaps ({}): {e}",
            path.display()
        ))
    })
}

impl RunOutcome {
    /// An outcome with the window and handler intervals of what the
    /// sampler measured (none without a sampler).
    fn sampled(s: Option<SamplerOutcome>) -> RunOutcome {
        let Some(s) = s else {
            return RunOutcome::default();
        };
        RunOutcome {
            window_from_ns: s.enabled_from_ns,
            intervals: s.intervals,
            ..RunOutcome::default()
        }
    }
}
