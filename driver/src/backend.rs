//! The real [`Backend`]: each run spawns the workload (this binary's hidden
//! `workload` subcommand) pinned to the measured CPU, waits for it to be
//! ready, opens the sampler, releases the loop (switching sampling in the
//! paired design's phases), and reads the workload's report and, in the
//! gaps design, its timeline. The paired design's phases are in
//! `backend/phases.rs`, a run of the user's command in
//! `backend/user_command_run.rs`.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::config::{Design, ScopeName, SweepOptions};
use crate::exec::{Backend, Interval, RunError, RunOutcome, RunSpec};
use crate::plan::{PlannedRun, RunKind};
use crate::results::PhaseRow;
use crate::sampler::{EventKind, Sampler, SamplerConfig, SamplerOutcome, Scope};
use crate::system::procstat::{ProcStat, ns_per_tick};
use crate::system::quiet::{QuietReport, wait_quiet};
use workload::clock::monotonic_raw_ns;

mod host_look;
mod phases;
pub(crate) mod profiler_run;
mod user_command_run;

use phases::{phase_samples, run_phases};

/// The real backend: workload child + perf sampler.
pub(crate) struct RealBackend {
    pub(crate) event: EventKind,
    pub(crate) drain_cpu: Option<u32>,
    pub(crate) online_cpus: Vec<u32>,
}

/// Spawns `cmd` from a thread allowed on every CPU: the driver's own
/// threads keep off the measured CPU, but the child inherits the affinity
/// of the thread that forks it and must be free to pin itself there.
fn spawn_unpinned(cmd: &mut Command, online: &[u32]) -> std::io::Result<Child> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut set = rustix::thread::CpuSet::new();
            for &c in online {
                set.set(usize::try_from(c).unwrap_or(0));
            }
            if let Err(e) = rustix::thread::sched_setaffinity(None, &set) {
                tracing::warn!("cannot widen the spawner's CPU set: {e}");
            }
            cmd.spawn()
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("spawner thread panicked")))
    })
}

/// Kills and reaps the child when dropped (interruption, error).
struct ChildGuard(Option<Child>);

impl ChildGuard {
    fn child(&mut self) -> Option<&mut Child> {
        self.0.as_mut()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn read_pipe<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_string(&mut s);
        }
        s
    })
}

const READY_TIMEOUT: Duration = Duration::from_secs(30);

fn failed(e: impl std::fmt::Display) -> RunError {
    RunError::Failed(e.to_string())
}

/// How long to sleep before looking at the workload again while its loop
/// runs: until 20 ms before its deadline in steps of at most 100 ms (so
/// Ctrl-C is noticed), then 1 ms, so sampling stops within ~1 ms of the
/// loop's end. A 2 ms poll for the whole run cost the driver ~75 ms of CPU
/// per 10 s run, all of it while sampling.
fn end_wait_pause(start_ns: u64, duration_ns: u64, now_ns: u64) -> Duration {
    const NEAR: u64 = 20_000_000;
    const STEP: u64 = 100_000_000;
    if start_ns == 0 {
        return Duration::from_millis(1);
    }
    let wake = start_ns.saturating_add(duration_ns).saturating_sub(NEAR);
    match wake.checked_sub(now_ns) {
        Some(left) if left > 0 => Duration::from_nanos(left.min(STEP)),
        _ => Duration::from_millis(1),
    }
}

/// The sampler a planned run opens (also used by the budget check before
/// the first run, with `pid` 0).
pub(crate) fn sampler_config_for(
    event: EventKind,
    drain_cpu: Option<u32>,
    run: &PlannedRun,
    opts: &SweepOptions,
    pid: u32,
) -> SamplerConfig {
    let mut cfg = SamplerConfig::new(event, run.freq_hz, opts.cpu);
    cfg.scope = match opts.scope {
        ScopeName::Cpu => Scope::Cpu,
        ScopeName::System => Scope::System,
        ScopeName::Task => Scope::Task(i32::try_from(pid).unwrap_or(0)),
    };
    cfg.contents = run.sample;
    cfg.trace_handler = run.kind == RunKind::Util;
    cfg.trace_irq = cfg.trace_handler && !event.is_hardware();
    cfg.drain_cpu = drain_cpu;
    // Rings that hold the whole run: nothing is decoded while it runs.
    cfg.expected_duration = Some(Duration::from_nanos(opts.duration_ns));
    cfg
}

/// Whether a planned run opens a sampler of ours: every run above 0 Hz,
/// and the paired design's null control (a sampler that never fires);
/// none in a `--profiler` sweep, whose profiler samples instead.
pub(crate) fn opens_sampler(run: &PlannedRun, opts: &SweepOptions) -> bool {
    opts.profiler.is_none()
        && (run.freq_hz > 0 || (run.design == Design::Paired && run.kind == RunKind::Loss))
}

impl RealBackend {
    fn sampler_config(&self, spec: &RunSpec<'_>, pid: u32) -> SamplerConfig {
        sampler_config_for(self.event, self.drain_cpu, spec.run, spec.opts, pid)
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
        if let Some(argv) = &spec.opts.command {
            return self.run_command(spec, argv, interrupt);
        }
        if let Some(template) = &spec.opts.profiler
            && spec.run.freq_hz > 0
        {
            return self.run_profiled(spec, template, interrupt);
        }
        let files = RunFiles::new(spec);
        let mut w = self.ready_workload(spec, &files, interrupt)?;
        let loop_run = LoopRun {
            guard: &mut w.guard,
            reader: &w.reader,
            pid: w.pid,
        };
        let sampled = self.sample_loop(spec, loop_run, interrupt)?;
        let out_text = w.stdout.join().unwrap_or_default();
        let err_text = w.stderr.join().unwrap_or_default();
        workload_outcome(sampled, out_text, &err_text, files.gaps.as_deref())
    }
}

/// A workload child that is ready to be released: its process, its
/// counter, its pid and the readers of its output.
struct ReadyWorkload {
    guard: ChildGuard,
    reader: workload::counter::CounterReader,
    pid: u32,
    stdout: std::thread::JoinHandle<String>,
    stderr: std::thread::JoinHandle<String>,
}

impl RealBackend {
    /// Starts the workload child of `spec` (its files in `files`) and waits
    /// until it is ready, else a failed run quoting its stderr.
    fn ready_workload(
        &self,
        spec: &RunSpec<'_>,
        files: &RunFiles,
        interrupt: &AtomicBool,
    ) -> Result<ReadyWorkload, RunError> {
        let mut cmd = workload_command(&WorkloadArgs {
            duration_ns: spec.opts.duration_ns,
            cpu: spec.opts.cpu,
            kind: &spec.run.workload,
            counter: &files.counter,
            gaps: files.gaps.as_deref(),
        });
        let mut child = spawn_unpinned(&mut cmd, &self.online_cpus)
            .map_err(|e| failed(format!("cannot start the workload: {e}")))?;
        let stdout = read_pipe(child.stdout.take());
        let stderr = read_pipe(child.stderr.take());
        let pid = child.id();
        let (guard, reader, stderr) =
            ready_or_failed(ChildGuard(Some(child)), &files.counter, interrupt, stderr)?;
        Ok(ReadyWorkload {
            guard,
            reader,
            pid,
            stdout,
            stderr,
        })
    }
}

/// The files a workload run shares with the driver (its counter, and in
/// the gaps design its gaps file), removed when the run is over.
struct RunFiles {
    /// The counter file.
    counter: PathBuf,
    /// The gaps file (gaps design).
    gaps: Option<PathBuf>,
    /// Removes the gaps file on drop (fields drop in order: this first).
    _remove_gaps: Option<RemoveOnDrop>,
    /// Removes the counter file on drop.
    _remove: RemoveOnDrop,
}

/// The prefix of the workload's files in the temporary directory; the
/// driver's pid follows it.
const TEMP_PREFIX: &str = "perf-overhead-";

/// How long a dead driver's file must have been untouched to be removed.
const STALE_AFTER: Duration = Duration::from_secs(3600);

/// Removes the workload files (counter, gaps) that a driver killed with
/// SIGKILL left in the temporary directory: those whose driver pid is no
/// longer running. Each removal is logged; files of a running driver stay.
pub(crate) fn remove_stale_run_files(temp: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(TEMP_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let is_ours = rest.ends_with(".counter") || rest.ends_with(".gaps");
        if !is_ours || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        // A driver in another pid namespace sharing this directory is not
        // in /proc: only files untouched for an hour are taken as left.
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age >= STALE_AFTER));
        if !old {
            continue;
        }
        let path = entry.path();
        if std::fs::remove_file(&path).is_ok() {
            tracing::info!(
                "removed {}, left by driver {pid}, which is no longer running",
                path.display()
            );
            removed.push(path);
        }
    }
    removed
}

impl RunFiles {
    /// The run's files in the temporary directory, named by this process
    /// and the run.
    fn new(spec: &RunSpec<'_>) -> RunFiles {
        let counter = std::env::temp_dir().join(format!(
            "{TEMP_PREFIX}{}-run-{}.counter",
            std::process::id(),
            spec.run.run_id
        ));
        let gaps = (spec.run.design == Design::Gaps).then(|| counter.with_extension("gaps"));
        RunFiles {
            _remove_gaps: gaps.clone().map(RemoveOnDrop),
            _remove: RemoveOnDrop(counter.clone()),
            counter,
            gaps,
        }
    }
}

/// A workload that is ready: its process, its counter and its pid.
struct LoopRun<'a> {
    /// The child, killed if the run is abandoned.
    guard: &'a mut ChildGuard,
    /// Its counter file.
    reader: &'a workload::counter::CounterReader,
    /// Its pid (task scope and schedstat).
    pid: u32,
}

/// What the driver saw of the loop while it sampled it.
struct Sampled {
    /// How the workload exited.
    status: std::process::ExitStatus,
    /// What the sampler measured (None: the run opened none).
    sampler: Option<SamplerOutcome>,
    /// The paired design's phases, with their samples counted.
    phases: Vec<PhaseRow>,
    /// Steal time of the measured CPU over the run, ns.
    steal_ns: u64,
    /// CLOCK_MONOTONIC_RAW once the sampler was open, ns.
    started_at_ns: u64,
    /// CLOCK_MONOTONIC_RAW once the workload had exited, ns.
    ended_at_ns: u64,
}

impl RealBackend {
    /// Opens the sampler, releases the loop (switching sampling in the
    /// paired design's phases), waits for the workload to exit with
    /// sampling switched off as soon as the loop ends, and finishes the
    /// sampler.
    fn sample_loop(
        &self,
        spec: &RunSpec<'_>,
        loop_run: LoopRun<'_>,
        interrupt: &AtomicBool,
    ) -> Result<Sampled, RunError> {
        let LoopRun { guard, reader, pid } = loop_run;
        let opts = spec.opts;
        let steal_before = ProcStat::read().map(|s| s.cpu(opts.cpu).steal).unwrap_or(0);
        // Paired runs at 0 Hz (the null control) open a sampler that never
        // fires and toggle it like the others.
        let sampler = if spec.run.freq_hz > 0 || !spec.phases.is_empty() {
            let cfg = self.sampler_config(spec, pid);
            Some(Sampler::open(&cfg).map_err(|e| failed(format!("cannot open the sampler: {e}")))?)
        } else {
            None
        };
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
        let steal_after = ProcStat::read().map(|s| s.cpu(opts.cpu).steal).unwrap_or(0);
        let sampler = match sampler {
            Some(s) => Some(s.finish().map_err(|e| failed(format!("sampler: {e}")))?),
            None => None,
        };
        if let Some(o) = &sampler {
            phase_samples(&mut phases, &o.sample_times_ns);
        }
        Ok(Sampled {
            status,
            sampler,
            phases,
            steal_ns: steal_after.saturating_sub(steal_before) * ns_per_tick(),
            started_at_ns,
            ended_at_ns,
        })
    }
}

/// The run's outcome from the workload's exit, its report (`out_text`, its
/// stdout), its timeline (gaps design) and what the sampler measured; a
/// failure quotes the workload's stderr (`err_text`).
fn workload_outcome(
    sampled: Sampled,
    out_text: String,
    err_text: &str,
    gaps_file: Option<&Path>,
) -> Result<RunOutcome, RunError> {
    let status = sampled.status;
    if !status.success() {
        return Err(failed(format!("workload {status}: {}", err_text.trim())));
    }
    let report: workload::summary::RunSummary =
        serde_json::from_str(out_text.trim()).map_err(|e| {
            failed(format!(
                "cannot read the workload's report: {e}; stderr: {}",
                err_text.trim()
            ))
        })?;

    let sample_times: &[u64] = sampled.sampler.as_ref().map_or(&[], |s| &s.sample_times_ns);
    let timeline = read_timeline(&report, gaps_file, sample_times)?;

    let mut o = RunOutcome {
        iterations: report.iterations,
        wall_ns: report.wall_ns,
        nvcsw: report.nvcsw,
        nivcsw: report.nivcsw,
        wait_ns: report.wait_ns,
        user_ns: report.user_ns,
        sys_ns: report.sys_ns,
        overrun_ns: u64::try_from(report.overrun_ns).unwrap_or(0),
        steal_ns: sampled.steal_ns,
        started_at_ns: sampled.started_at_ns,
        ended_at_ns: sampled.ended_at_ns,
        phases: sampled.phases,
        workload_json: out_text,
        timeline,
        ..RunOutcome::default()
    };
    if let Some(s) = sampled.sampler {
        with_sampler_outcome(&mut o, &s);
    }
    Ok(o)
}

/// This binary as a child process, started from `/proc/self/exe`: the
/// kernel's link to the executable this process runs, which stays valid
/// when the file at its path is replaced during a sweep (`cargo build`
/// renames a new binary over it, `cp` and `install` unlink or rewrite it).
/// `std::env::current_exe()` reads the same link but returns a path, which
/// then names the new file or, once the old one is gone, nothing ("cannot
/// start the workload: No such file or directory"; `<path> (deleted)`). The
/// child's argv\[0\] stays the name the driver was started as, for its
/// messages.
pub(crate) fn self_command() -> Command {
    let mut cmd = Command::new(SELF_EXE);
    if let Some(arg0) = std::env::args_os().next() {
        cmd.arg0(arg0);
    }
    cmd
}

/// The running executable, whatever has happened to its path since (Linux).
// Kept: a path to exec, nothing is parsed.
pub(crate) const SELF_EXE: &str = "/proc/self/exe";

/// What a workload child is asked to do.
struct WorkloadArgs<'a> {
    /// Its loop's length, ns.
    duration_ns: u64,
    /// The CPU it pins itself to.
    cpu: u32,
    /// What its loop does.
    kind: &'a workload::work::WorkKind,
    /// Its counter file.
    counter: &'a Path,
    /// Its gaps file (timeline mode), if any.
    gaps: Option<&'a Path>,
}

/// The workload child: this binary's hidden `workload` subcommand,
/// waiting for the go signal on its counter file, with its timeline
/// written to the gaps file when one is given (the gaps design, the look
/// at the host).
fn workload_command(w: &WorkloadArgs<'_>) -> Command {
    let mut cmd = self_command();
    cmd.arg("workload")
        .arg("--duration")
        .arg(format!("{}ns", w.duration_ns))
        .arg("--cpu")
        .arg(w.cpu.to_string())
        .arg("--kind")
        .arg(w.kind.name())
        .arg("--json")
        .arg("--counter")
        .arg(w.counter)
        .arg("--wait-go")
        .arg("--go-timeout")
        .arg("60s")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: Ctrl-C reaches the driver only, which
        // stops the child itself.
        .process_group(0);
    if let Some(path) = w.gaps {
        cmd.arg("--timeline").arg(path);
    }
    cmd
}

/// Waits for the workload to exit, switching the sampler off as soon as
/// its loop is done.
fn wait_end(
    guard: &mut ChildGuard,
    reader: &workload::counter::CounterReader,
    sampler: Option<&Sampler>,
    duration_ns: u64,
    interrupt: &AtomicBool,
) -> Result<std::process::ExitStatus, RunError> {
    loop {
        if interrupt.load(Ordering::SeqCst) {
            return Err(RunError::Interrupted);
        }
        if reader.state() == workload::counter::State::Done
            && let Some(s) = &sampler
        {
            let _ = s.disable();
        }
        let Some(c) = guard.child() else {
            return Err(failed("workload process lost"));
        };
        match c.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) => std::thread::sleep(end_wait_pause(
                reader.start_ns(),
                duration_ns,
                monotonic_raw_ns(),
            )),
            Err(e) => return Err(failed(e)),
        }
    }
}

/// The gaps design's timeline of a run: the workload's gaps file matched
/// with the run's sample times; None in the other designs.
fn read_timeline(
    report: &workload::summary::RunSummary,
    gaps_file: Option<&Path>,
    sample_times: &[u64],
) -> Result<Option<crate::gaps::TimelineOutcome>, RunError> {
    match (&report.timeline, gaps_file) {
        (Some(t), Some(path)) => {
            let raw = workload::timeline::read_gaps_file(path).map_err(|e| {
                failed(format!(
                    "cannot read the workload's gaps ({}): {e}",
                    path.display()
                ))
            })?;
            Ok(Some(crate::gaps::timeline_outcome(t, &raw, sample_times)))
        }
        (None, Some(_)) => Err(failed("the workload ran without its timeline (--timeline)")),
        _ => Ok(None),
    }
}

/// Waits for the workload to be set up (pinned, calibrated: its counter
/// says ready); `Ok(Err(status))` when it exited first.
/// Waits until the workload is set up (pinned, calibrated) and hands back
/// its guard, its counter and its stderr; one that exits before is a
/// failed run quoting its stderr (read once the guard has reaped it).
fn ready_or_failed(
    mut guard: ChildGuard,
    counter_path: &Path,
    interrupt: &AtomicBool,
    stderr: std::thread::JoinHandle<String>,
) -> Result<
    (
        ChildGuard,
        workload::counter::CounterReader,
        std::thread::JoinHandle<String>,
    ),
    RunError,
> {
    match wait_ready(&mut guard, counter_path, interrupt)? {
        Ok(reader) => Ok((guard, reader, stderr)),
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

fn wait_ready(
    guard: &mut ChildGuard,
    counter_path: &Path,
    interrupt: &AtomicBool,
) -> Result<Result<workload::counter::CounterReader, std::process::ExitStatus>, RunError> {
    let t = Instant::now();
    loop {
        if interrupt.load(Ordering::SeqCst) {
            return Err(RunError::Interrupted);
        }
        if let Some(c) = guard.child()
            && let Ok(Some(status)) = c.try_wait()
        {
            return Ok(Err(status));
        }
        if let Ok(r) = workload::counter::CounterReader::open(counter_path)
            && r.state() == workload::counter::State::Ready
        {
            return Ok(Ok(r));
        }
        if t.elapsed() > READY_TIMEOUT {
            return Err(failed(format!(
                "workload not ready after {READY_TIMEOUT:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What the sampler measured, into the run's outcome.
fn with_sampler_outcome(o: &mut RunOutcome, s: &SamplerOutcome) {
    o.window_ns = s.enabled_ns;
    o.window_from_ns = s.enabled_from_ns;
    o.samples = s.samples;
    o.samples_all_cpus = s.samples_all_cpus;
    o.throttled = s.throttled;
    o.unthrottled = s.unthrottled;
    o.lost = s.lost;
    o.lost_samples = s.lost_samples;
    o.duplicates = s.duplicates;
    o.unmatched = s.unmatched;
    o.foreign_intervals = s.foreign_intervals;
    o.driver_cpu_sampling_ns = s.window_cpu_ns;
    o.decoded_while_sampling_bytes = s.drained_in_window_bytes;
    o.contents = s.contents;
    o.intervals = s
        .intervals
        .iter()
        .map(|i| Interval {
            cpu: i.cpu,
            entry_ns: i.entry_ns,
            duration_ns: i.duration_ns,
            source: i.source.as_str(),
        })
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::unwrap_used)]
    fn stale_run_files_of_a_dead_driver_are_removed_and_a_live_ones_kept() {
        let tmp = tempfile::tempdir().unwrap();
        // No process has pid u32::MAX - 1 (pid_max is at most 2^22).
        let dead = tmp
            .path()
            .join(format!("{TEMP_PREFIX}4294967294-run-3.counter"));
        let dead_gaps = dead.with_extension("gaps");
        let live = tmp
            .path()
            .join(format!("{TEMP_PREFIX}{}-run-3.counter", std::process::id()));
        let other = tmp
            .path()
            .join(format!("{TEMP_PREFIX}4294967294-notes.txt"));
        let recent = tmp
            .path()
            .join(format!("{TEMP_PREFIX}4294967293-run-1.counter"));
        for p in [&dead, &dead_gaps, &live, &other, &recent] {
            std::fs::write(p, b"x").unwrap();
        }
        // Untouched for two hours, except `recent` (a driver in another pid
        // namespace may still be writing it).
        let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
        for p in [&dead, &dead_gaps, &live, &other] {
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(two_hours_ago)
                .unwrap();
        }
        let mut removed = remove_stale_run_files(tmp.path());
        removed.sort();
        assert_eq!(removed, vec![dead.clone(), dead_gaps.clone()]);
        assert!(live.exists() && other.exists() && recent.exists());
    }

    #[test]
    fn end_wait_sleeps_through_the_loop_then_polls_finely() {
        let s = 1_000_000_000;
        let d = 10_000_000_000;
        // Loop not started yet: poll.
        assert_eq!(end_wait_pause(0, d, s), Duration::from_millis(1));
        // Early in the loop: the 100 ms step.
        assert_eq!(end_wait_pause(s, d, s), Duration::from_millis(100));
        // 50 ms before the deadline: sleep until 20 ms before it.
        assert_eq!(
            end_wait_pause(s, d, s + d - 50_000_000),
            Duration::from_millis(30)
        );
        // Within 20 ms of the deadline, and after it: 1 ms.
        assert_eq!(
            end_wait_pause(s, d, s + d - 10_000_000),
            Duration::from_millis(1)
        );
        assert_eq!(end_wait_pause(s, d, s + d + 5), Duration::from_millis(1));
    }
}
