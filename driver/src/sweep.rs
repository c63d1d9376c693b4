//! `driver sweep`: plan, execute, write results, hand them to the analysis.
//!
//! Also the real [`Backend`]: each run spawns the workload (this binary's
//! hidden `workload` subcommand) pinned to the measured CPU, waits for it
//! to be ready, opens the sampler, releases the loop and reads the result.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::config::{Design, ExperimentFile, FlagSettings, ScopeName, SweepOptions};
use crate::exec::{Backend, Interval, RunError, RunOutcome, RunSpec, execute};
use crate::plan::{RunKind, build_plan};
use crate::results::{FORMAT_VERSION, Manifest, PhaseRow, ResultsDir, Status};
use crate::sampler::{EventKind, Sampler, SamplerConfig, Scope, resolve_event};
use crate::system::{
    MAX_SAMPLE_RATE_PATH, ProcStat, QuietReport, SettingsGuard, interrupt_flag, monotonic_ns,
    monotonic_raw_ns, ns_per_tick, other_cpu, read_u64, sleep_until_monotonic, wait_quiet,
};

/// Arguments of `driver sweep` (boxed: they are large next to the other
/// subcommands').
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SweepArgs {
    /// The flags.
    #[command(flatten)]
    pub flags: Box<SweepFlags>,
}

/// The flags of `driver sweep`. Settings are validated by
/// [`SweepOptions::resolve`] so every bad value gets the same kind of
/// message and exit status 2.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SweepFlags {
    /// Sampling frequencies in Hz, comma-separated (0 Hz is always added).
    /// Default: the 2014 article's 100,500,2000,4000,100000.
    #[arg(long, allow_hyphen_values = true, value_name = "LIST")]
    pub freqs: Option<String>,
    /// Workload run length (10s, 500ms, ...). Default 8s.
    #[arg(long, allow_hyphen_values = true)]
    pub duration: Option<String>,
    /// Repetitions (randomised blocks). Default 5.
    #[arg(long, allow_hyphen_values = true)]
    pub reps: Option<String>,
    /// Measured CPU (the workload is pinned there). Default: the last CPU.
    #[arg(long, allow_hyphen_values = true)]
    pub cpu: Option<String>,
    /// Sampling event: cycles (falls back to cpu-clock without a PMU),
    /// instructions, cpu-clock, task-clock. Default cycles.
    #[arg(long, allow_hyphen_values = true)]
    pub event: Option<String>,
    /// cpu (the measured CPU, like perf record -C), system (every CPU, like
    /// -a, the article's setup) or task (the workload only). Default system.
    #[arg(long, allow_hyphen_values = true)]
    pub scope: Option<String>,
    /// Designs, comma-separated: gaps (every interruption of the loop timed
    /// on its own timeline; a sample's cost is the gap that holds it),
    /// paired (sampling switched on and off in ABBA phases within a run),
    /// classic (whole runs per frequency, the article's). Default
    /// paired,gaps.
    #[arg(long, allow_hyphen_values = true)]
    pub design: Option<String>,
    /// Phase length of the paired design. Default 100ms (measured to give
    /// the smallest standard error per minute here; docs/methodology.md).
    #[arg(long, allow_hyphen_values = true)]
    pub phase: Option<String>,
    /// Seed of the randomised run order. Default: from the clock (recorded).
    #[arg(long, allow_hyphen_values = true)]
    pub seed: Option<String>,
    /// Results directory (must not exist). Default results/<UTC time>-<host>.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Experiment file (experiments/NAME.toml); flags override its settings.
    #[arg(long)]
    pub experiment: Option<PathBuf>,
    /// Finish an interrupted sweep in DIR with its recorded options, plan and seed.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Raise perf_event_max_sample_rate for the sweep when a frequency is above it (restored at exit).
    #[arg(long)]
    pub raise_max_rate: bool,
    /// Skip the analysis report at the end.
    #[arg(long)]
    pub no_report: bool,
    /// Skip the handler-utilisation runs (tracepoints on).
    #[arg(long)]
    pub no_util: bool,
}

/// A bad command line or input: printed as one line, exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

fn usage(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::Error::new(UsageError(e.to_string()))
}

/// Runs `driver sweep`.
pub fn cli(args: &SweepArgs) -> anyhow::Result<ExitCode> {
    match run_sweep(&args.flags) {
        Ok(code) => Ok(code),
        Err(e) => {
            if let Some(u) = e.downcast_ref::<UsageError>() {
                eprintln!("error: {u}");
                Ok(ExitCode::from(2))
            } else {
                Err(e)
            }
        }
    }
}

fn flag_settings(args: &SweepFlags) -> FlagSettings {
    FlagSettings {
        freqs: args.freqs.clone(),
        duration: args.duration.clone(),
        reps: args.reps.clone(),
        cpu: args.cpu.clone(),
        event: args.event.clone(),
        scope: args.scope.clone(),
        design: args.design.clone(),
        phase: args.phase.clone(),
        seed: args.seed.clone(),
        no_util: args.no_util,
    }
}

fn has_settings(args: &SweepFlags) -> bool {
    let f = flag_settings(args);
    f.freqs.is_some()
        || f.duration.is_some()
        || f.reps.is_some()
        || f.cpu.is_some()
        || f.event.is_some()
        || f.scope.is_some()
        || f.design.is_some()
        || f.phase.is_some()
        || f.seed.is_some()
        || f.no_util
        || args.experiment.is_some()
        || args.out.is_some()
}

fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

fn git_revision() -> Option<String> {
    let out = Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "HEAD"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn pin_self_away_from(cpu: u32, n_cpus: u32) {
    let mut set = rustix::thread::CpuSet::new();
    for c in (0..n_cpus).filter(|&c| c != cpu) {
        set.set(usize::try_from(c).unwrap_or(0));
    }
    if n_cpus > 1
        && let Err(e) = rustix::thread::sched_setaffinity(None, &set)
    {
        tracing::warn!("cannot keep the driver off CPU {cpu}: {e}");
    }
}

fn run_sweep(args: &SweepFlags) -> anyhow::Result<ExitCode> {
    let n_cpus = crate::system::online_cpus();
    // 1. Options: recorded (resume) or flags over file over defaults.
    let resumed: Option<(PathBuf, Manifest)> = match &args.resume {
        Some(dir) => {
            if has_settings(args) {
                return Err(usage(format!(
                    "--resume {} reuses the recorded options, plan and seed: drop the other settings flags",
                    dir.display()
                )));
            }
            let m = crate::results::read_manifest(dir)
                .map_err(|e| usage(format!("cannot resume {}: {e}", dir.display())))?;
            Some((dir.clone(), m))
        }
        None => None,
    };
    let opts = match &resumed {
        Some((_, m)) => m.options.clone(),
        None => {
            let file = match &args.experiment {
                Some(p) => Some(ExperimentFile::load(p).map_err(usage)?),
                None => None,
            };
            let default_seed = u64::try_from(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() % u128::from(u64::MAX))
                    .unwrap_or(0),
            )
            .unwrap_or(0);
            SweepOptions::resolve(
                &flag_settings(args),
                file.as_ref().zip(args.experiment.as_deref()),
                n_cpus,
                default_seed,
            )
            .map_err(usage)?
        }
    };

    // 2. The sample-rate ceiling, before anything is written.
    let max_rate = read_u64(Path::new(MAX_SAMPLE_RATE_PATH)).ok();
    let needs_raise = max_rate.is_some_and(|r| opts.max_freq_hz() > r);
    if needs_raise && !args.raise_max_rate {
        return Err(usage(format!(
            "frequency {} Hz is above perf_event_max_sample_rate = {} ({MAX_SAMPLE_RATE_PATH}); \
             pass --raise-max-rate to raise it for the sweep (restored at exit), or drop frequencies above {}",
            opts.max_freq_hz(),
            max_rate.unwrap_or(0),
            max_rate.unwrap_or(0)
        )));
    }

    // 3. The output directory: never overwritten.
    let root = match (&resumed, &args.out) {
        (Some((dir, _)), _) => dir.clone(),
        (None, Some(out)) => out.clone(),
        (None, None) => PathBuf::from("results").join(format!(
            "{}-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
            hostname()
        )),
    };
    if resumed.is_none() && root.exists() {
        return Err(usage(format!(
            "output directory {} already exists; results are never overwritten: give a new --out, or --resume {} to finish it",
            root.display(),
            root.display()
        )));
    }

    // 4. The event, with the fallback made loud.
    let requested: EventKind = opts.event.parse().map_err(usage)?;
    let (event, fallback) = resolve_event(requested)
        .with_context(|| format!("cannot open the sampling event {requested} (--event)"))?;
    let mut warnings = Vec::new();
    if let Some(w) = fallback {
        tracing::warn!("{w}");
        warnings.push(w);
    }
    if let Some((_, m)) = &resumed
        && m.event != event.name()
    {
        anyhow::bail!(
            "cannot resume {}: it sampled {} but this host now opens {}",
            root.display(),
            m.event,
            event.name()
        );
    }

    pin_self_away_from(opts.cpu, n_cpus);
    let interrupt = interrupt_flag();

    // 5. System settings, restored by the guard whatever happens.
    let mut guard = SettingsGuard::new();
    if needs_raise {
        guard
            .set(
                Path::new(MAX_SAMPLE_RATE_PATH),
                &opts.max_freq_hz().to_string(),
            )
            .context("--raise-max-rate")?;
        warnings.push(format!(
            "raised perf_event_max_sample_rate from {} to {} for the sweep",
            max_rate.unwrap_or(0),
            opts.max_freq_hz()
        ));
    }

    // 6. Directory and manifest.
    let command: Vec<String> = std::env::args().collect();
    let (mut dir, mut manifest, todo) = match resumed {
        Some((_, mut m)) => {
            let done = crate::results::read_runs(&root)?;
            let todo = crate::results::missing_runs(&m.plan, &done);
            tracing::info!(
                "resuming {}: {} of {} runs to go",
                root.display(),
                todo.len(),
                m.plan.len()
            );
            m.status = Status::Running;
            m.ended_at = None;
            m.warnings.extend(warnings);
            m.warnings.push(format!(
                "resumed at {}",
                chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ));
            m.settings_changed.extend(guard.changes().iter().cloned());
            m.command.push("--".into());
            m.command.extend(command);
            let dir = ResultsDir::open_existing(&root)?;
            (dir, m, todo)
        }
        None => {
            let host =
                serde_json::to_value(crate::probe::probe_host()).unwrap_or(serde_json::Value::Null);
            let plan = build_plan(&opts);
            let m = Manifest {
                format_version: FORMAT_VERSION,
                tool_version: env!("CARGO_PKG_VERSION").to_owned(),
                git_revision: git_revision(),
                status: Status::Running,
                started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                ended_at: None,
                host,
                seed: opts.seed,
                event: event.name().to_owned(),
                plan: plan.clone(),
                options: opts.clone(),
                warnings,
                settings_changed: guard.changes().to_vec(),
                command,
            };
            let dir = ResultsDir::create(&root)?;
            (dir, m, plan)
        }
    };
    dir.write_manifest(&manifest)?;
    tracing::info!(
        "sweep into {}: {} runs of {} ms, event {}, scope {}, seed {}",
        root.display(),
        todo.len(),
        opts.duration_ns / 1_000_000,
        event,
        opts.scope.as_str(),
        opts.seed
    );

    // 7. Runs.
    let mut backend = RealBackend {
        event,
        drain_cpu: other_cpu(opts.cpu, n_cpus),
        n_cpus,
    };
    let writer = |path: &Path, iv: &[Interval]| -> Result<(), String> {
        let cpu: Vec<u32> = iv.iter().map(|i| i.cpu).collect();
        let entry: Vec<u64> = iv.iter().map(|i| i.entry_ns).collect();
        let dur: Vec<u64> = iv.iter().map(|i| i.duration_ns).collect();
        let src: Vec<&str> = iv.iter().map(|i| i.source).collect();
        analysis::write_intervals_parquet(path, &cpu, &entry, &dur, &src).map_err(|e| e.to_string())
    };
    let result = execute(
        &mut backend,
        &mut dir,
        &mut manifest,
        &todo,
        &interrupt,
        &writer,
    );

    // 8. Restore, and record that we did.
    let restore_errors = guard.restore();
    manifest.settings_changed = merge_changes(&manifest.settings_changed, guard.changes());
    if result.is_err() {
        manifest.status = Status::Interrupted;
        manifest.ended_at =
            Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    }
    let manifest_written = dir.write_manifest(&manifest);
    let summary = result.with_context(|| format!("sweep into {} stopped", root.display()))?;
    manifest_written?;
    for e in &restore_errors {
        tracing::error!("{e}");
    }

    if summary.interrupted {
        eprintln!(
            "sweep stopped ({}): {} runs recorded in {}; finish it with:\n  driver sweep --resume {}",
            summary.stop_reason.as_deref().unwrap_or("interrupted"),
            summary.recorded,
            root.display(),
            root.display()
        );
        println!("{}", root.display());
        return Ok(if interrupt.load(Ordering::SeqCst) {
            ExitCode::from(130)
        } else {
            ExitCode::FAILURE
        });
    }
    tracing::info!(
        "sweep done: {} runs, {} failed, {} noisy",
        summary.recorded,
        summary.failed,
        summary.noisy
    );

    // 9. Report.
    let mut code = if restore_errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    if !args.no_report {
        match analysis::write_report(&root) {
            Ok(report) => tracing::info!("report in {}", report.display()),
            Err(e) => {
                tracing::error!(
                    "the report failed (the data in {} is kept): {e}",
                    root.display()
                );
                code = ExitCode::FAILURE;
            }
        }
    }
    println!("{}", root.display());
    Ok(code)
}

fn merge_changes(
    recorded: &[crate::results::SettingChange],
    now: &[crate::results::SettingChange],
) -> Vec<crate::results::SettingChange> {
    // Earlier invocations' changes (resume) stay; this invocation's are
    // replaced by their restored state.
    let mut out: Vec<_> = recorded
        .iter()
        .filter(|c| {
            !now.iter()
                .any(|n| n.path == c.path && n.old == c.old && n.new == c.new && !c.restored)
        })
        .cloned()
        .collect();
    out.extend(now.iter().cloned());
    out
}

/// The real backend: workload child + perf sampler.
struct RealBackend {
    event: EventKind,
    drain_cpu: Option<u32>,
    n_cpus: u32,
}

/// Spawns `cmd` from a thread allowed on every CPU: the driver's own
/// threads keep off the measured CPU, but the child inherits the affinity
/// of the thread that forks it and must be free to pin itself there.
fn spawn_unpinned(cmd: &mut Command, n_cpus: u32) -> std::io::Result<Child> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut set = rustix::thread::CpuSet::new();
            for c in 0..n_cpus {
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

/// (time on CPU, time runnable but waiting) of a task, ns, from
/// /proc/<pid>/schedstat; zeros when unreadable.
fn read_schedstat(path: &Path) -> (u64, u64) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return (0, 0);
    };
    let mut f = text
        .split_ascii_whitespace()
        .map(|v| v.parse::<u64>().unwrap_or(0));
    (f.next().unwrap_or(0), f.next().unwrap_or(0))
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

/// Counts each phase's samples from the sorted sample timestamps (the same
/// CLOCK_MONOTONIC_RAW as the phase boundaries): a sample belongs to the
/// phase whose [start, end) holds it, i.e. to the iterations its interrupt
/// interrupted.
fn phase_samples(phases: &mut [PhaseRow], sorted_times_ns: &[u64]) {
    for p in phases {
        let from = sorted_times_ns.partition_point(|&t| t < p.start_ns);
        let to = sorted_times_ns.partition_point(|&t| t < p.end_ns);
        p.samples = u64::try_from(to.saturating_sub(from)).unwrap_or(u64::MAX);
    }
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

impl RealBackend {
    fn sampler_config(&self, spec: &RunSpec<'_>, pid: u32) -> SamplerConfig {
        let mut cfg = SamplerConfig::new(self.event, spec.run.freq_hz, spec.opts.cpu);
        cfg.scope = match spec.opts.scope {
            ScopeName::Cpu => Scope::Cpu,
            ScopeName::System => Scope::System,
            ScopeName::Task => Scope::Task(i32::try_from(pid).unwrap_or(0)),
        };
        cfg.trace_handler = spec.run.kind == RunKind::Util;
        cfg.trace_irq = cfg.trace_handler && !self.event.is_hardware();
        cfg.drain_cpu = self.drain_cpu;
        // Rings that hold the whole run: nothing is decoded while it runs.
        cfg.expected_duration = Some(Duration::from_nanos(spec.opts.duration_ns));
        cfg
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
        let opts = spec.opts;
        let counter_path = std::env::temp_dir().join(format!(
            "perf-overhead-{}-run-{}.counter",
            std::process::id(),
            spec.run.run_id
        ));
        let _remove = RemoveOnDrop(counter_path.clone());
        let gaps_file =
            (spec.run.design == Design::Gaps).then(|| counter_path.with_extension("gaps"));
        let _remove_gaps = gaps_file.clone().map(RemoveOnDrop);
        let exe = std::env::current_exe().map_err(failed)?;
        let mut cmd = Command::new(exe);
        cmd.arg("workload")
            .arg("--duration")
            .arg(format!("{}ns", opts.duration_ns))
            .arg("--cpu")
            .arg(opts.cpu.to_string())
            .arg("--json")
            .arg("--counter")
            .arg(&counter_path)
            .arg("--wait-go")
            .arg("--go-timeout")
            .arg("60s")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: Ctrl-C reaches the driver only, which
            // stops the child itself.
            .process_group(0);
        if let Some(path) = &gaps_file {
            cmd.arg("--timeline").arg(path);
        }
        let mut child = spawn_unpinned(&mut cmd, self.n_cpus)
            .map_err(|e| failed(format!("cannot start the workload: {e}")))?;
        let stdout = read_pipe(child.stdout.take());
        let stderr = read_pipe(child.stderr.take());
        let pid = child.id();
        let mut guard = ChildGuard(Some(child));

        // Wait for the workload to be set up (pinned, calibrated).
        let t = Instant::now();
        let reader = loop {
            if interrupt.load(Ordering::SeqCst) {
                return Err(RunError::Interrupted);
            }
            if let Some(c) = guard.child()
                && let Ok(Some(status)) = c.try_wait()
            {
                drop(guard);
                let err = stderr.join().unwrap_or_default();
                return Err(failed(format!(
                    "workload exited before it was ready ({status}): {}",
                    err.trim()
                )));
            }
            if let Ok(r) = workload::counter::CounterReader::open(&counter_path)
                && r.state() == workload::counter::State::Ready
            {
                break r;
            }
            if t.elapsed() > READY_TIMEOUT {
                return Err(failed(format!(
                    "workload not ready after {READY_TIMEOUT:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(1));
        };

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
            // Phases start with the loop.
            let t = Instant::now();
            while reader.state() != workload::counter::State::Running && reader.start_ns() == 0 {
                if t.elapsed() > Duration::from_secs(5) || interrupt.load(Ordering::SeqCst) {
                    break;
                }
                // Sleep, not spin: the wait lasts as long as the workload's
                // start-up, and a spinning driver costs a CPU (~0.1 s per
                // run was seen). Phase 0 is timed from t0 below, so 50 us
                // of latency here shifts nothing that is measured.
                std::thread::sleep(Duration::from_micros(50));
            }
            // The settling period: the loop runs, sampling stays off, and
            // nothing is measured.
            let t0 = monotonic_ns() + spec.settle_ns;
            sleep_until_monotonic(t0);
            if interrupt.load(Ordering::SeqCst) {
                return Err(RunError::Interrupted);
            }
            let schedstat = PathBuf::from(format!("/proc/{pid}/schedstat"));
            let mut prev = (monotonic_raw_ns(), reader.iterations());
            let mut prev_sched = read_schedstat(&schedstat);
            if let (Some(s), Some(true)) = (&sampler, spec.phases.first()) {
                s.enable().map_err(failed)?;
            }
            for (i, &on) in spec.phases.iter().enumerate() {
                let deadline = t0 + opts.phase_ns * (u64::try_from(i).unwrap_or(0) + 1);
                sleep_until_monotonic(deadline);
                let t_now = monotonic_raw_ns();
                let it_now = reader.iterations();
                let next_on = spec.phases.get(i + 1).copied().unwrap_or(false);
                // Samples are counted per phase by their timestamps after
                // the run (see phase_samples): no decoding while it runs.
                // Switch right after the boundary's reads, so few samples
                // fall between them and the switch (they count, by time,
                // for the next phase, whose iterations they slow).
                if let Some(s) = &sampler {
                    if on && !next_on {
                        s.disable().map_err(failed)?;
                    }
                    if next_on && !on {
                        s.enable().map_err(failed)?;
                    }
                }
                let sched_now = read_schedstat(&schedstat);
                phases.push(PhaseRow {
                    phase: u32::try_from(i).unwrap_or(u32::MAX),
                    sampling: on,
                    start_ns: prev.0,
                    end_ns: t_now,
                    iterations: it_now.saturating_sub(prev.1),
                    task_ns: sched_now.0.saturating_sub(prev_sched.0),
                    wait_ns: sched_now.1.saturating_sub(prev_sched.1),
                    ..PhaseRow::default()
                });
                prev = (t_now, it_now);
                prev_sched = sched_now;
                if interrupt.load(Ordering::SeqCst) {
                    return Err(RunError::Interrupted);
                }
            }
            if let Some(s) = &sampler {
                s.disable().map_err(failed)?;
            }
        }

        // Wait for the end of the loop; stop sampling as soon as it ends.
        let status = loop {
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
                Ok(Some(status)) => break status,
                Ok(None) => std::thread::sleep(end_wait_pause(
                    reader.start_ns(),
                    opts.duration_ns,
                    monotonic_raw_ns(),
                )),
                Err(e) => return Err(failed(e)),
            }
        };
        let ended_at_ns = monotonic_raw_ns();
        let steal_after = ProcStat::read().map(|s| s.cpu(opts.cpu).steal).unwrap_or(0);
        let outcome = match sampler {
            Some(s) => Some(s.finish().map_err(|e| failed(format!("sampler: {e}")))?),
            None => None,
        };
        if let Some(o) = &outcome {
            phase_samples(&mut phases, &o.sample_times_ns);
        }
        let out_text = stdout.join().unwrap_or_default();
        let err_text = stderr.join().unwrap_or_default();
        if !status.success() {
            return Err(failed(format!("workload {status}: {}", err_text.trim())));
        }
        let report: workload::report::RunReport =
            serde_json::from_str(out_text.trim()).map_err(|e| {
                failed(format!(
                    "cannot read the workload's report: {e}; stderr: {}",
                    err_text.trim()
                ))
            })?;

        let sample_times: &[u64] = outcome.as_ref().map_or(&[], |s| &s.sample_times_ns);
        let timeline = match (&report.timeline, &gaps_file) {
            (Some(t), Some(path)) => {
                let raw = workload::timeline::read_gaps_file(path).map_err(|e| {
                    failed(format!(
                        "cannot read the workload's gaps ({}): {e}",
                        path.display()
                    ))
                })?;
                Some(crate::gaps::timeline_outcome(t, &raw, sample_times))
            }
            (None, Some(_)) => {
                return Err(failed("the workload ran without its timeline (--timeline)"));
            }
            _ => None,
        };

        let mut o = RunOutcome {
            iterations: report.iterations,
            wall_ns: report.wall_ns,
            nvcsw: report.nvcsw,
            nivcsw: report.nivcsw,
            user_ns: report.user_ns,
            sys_ns: report.sys_ns,
            overrun_ns: u64::try_from(report.overrun_ns).unwrap_or(0),
            steal_ns: steal_after.saturating_sub(steal_before) * ns_per_tick(),
            started_at_ns,
            ended_at_ns,
            phases,
            workload_json: out_text,
            timeline,
            ..RunOutcome::default()
        };
        if let Some(s) = outcome {
            o.window_ns = s.enabled_ns;
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
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_go_to_the_phase_whose_interval_holds_them() {
        let mut phases: Vec<PhaseRow> = [(100, 200), (200, 300), (300, 400)]
            .iter()
            .map(|&(start_ns, end_ns)| PhaseRow {
                start_ns,
                end_ns,
                samples: 99,
                ..PhaseRow::default()
            })
            .collect();
        phase_samples(&mut phases, &[50, 100, 150, 199, 200, 350, 400, 401]);
        let got: Vec<u64> = phases.iter().map(|p| p.samples).collect();
        assert_eq!(got, vec![3, 1, 1]);
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
