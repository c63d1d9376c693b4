//! The timed counting loop.
//!
//! # Loop
//!
//! [`count_chunk`] adds one to a counter `n` times, passing it through
//! [`std::hint::black_box`] each time so the compiler can neither fold the loop
//! into one addition nor vectorise it; each iteration is one `incq` on a stack
//! slot (a dependency chain of about one cycle per iteration on this host,
//! ~0.31 ns), whose cost per iteration is stable. [`run_until`] calls it in
//! chunks of `chunk` iterations (calibrated to ~9 us) and, between chunks only, publishes the count
//! (one Release store, when a counter file is used) and checks a stop flag (one
//! Relaxed load). Nothing touches a clock inside a chunk.
//!
//! # Stop mechanism (see [`STOP_METHOD`])
//!
//! A POSIX timer (`timer_create(CLOCK_MONOTONIC)`, SIGEV_THREAD_ID, SIGALRM to
//! the loop thread, handler stores an `AtomicBool`) fires `margin` before the
//! deadline; it needs no helper thread (which would inherit the CPU pinning)
//! and costs one signal per run. POSIX timers cannot use CLOCK_MONOTONIC_RAW,
//! and CLOCK_MONOTONIC may be slewed by NTP by up to 500 ppm, so the timer is
//! only the coarse stop: after it, the loop reads CLOCK_MONOTONIC_RAW once per
//! chunk until the exact deadline. The margin is 2 ms + 0.1% of the duration,
//! so clock reads happen in about 0.1% of the run; at a ~30 ns clock read per
//! ~9 us chunk that is ~0.3% of ~0.1% of the run. The loop thus stops at most
//! one chunk (~9 us) late, plus any preemption.
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::counter::{CounterError, CounterWriter, State};
use crate::report::{CLOCK_NAME, RunReport};
use crate::sys;
use crate::timeline::{Timeline, TimelineError, default_capacity};
use crate::work::{Loop, Memory, Stack, Work, WorkKind};

/// Value of `stop_method` in the report.
pub const STOP_METHOD: &str = "timer_signal+clock_check: timer_create(CLOCK_MONOTONIC) SIGALRM to the loop thread sets an AtomicBool checked every chunk, armed margin before the deadline; then CLOCK_MONOTONIC_RAW read every chunk until the deadline";

/// Target time of one chunk between stop checks and counter publications.
///
/// Each chunk boundary costs ~6 ns here (measured by the `stop_check` bench:
/// mostly the mispredicted exit branch of the inner loop, plus the call, the
/// flag load and the publishing store); at 9 us per chunk that is < 0.1% of
/// the loop, while the count is still published and the flag checked at least
/// every ~10 us.
pub const TARGET_CHUNK_NS: f64 = 9_000.0;

/// How long `--wait-go` waits for the reader by default.
pub const DEFAULT_GO_TIMEOUT: Duration = Duration::from_secs(60);

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// Wall-clock duration of the timed loop (> 0).
    pub duration: Duration,
    /// Pin to this CPU before anything else.
    pub cpu: Option<u32>,
    /// Publish the count in this counter file.
    pub counter: Option<PathBuf>,
    /// Wait for the reader's go before the loop (needs `counter`).
    pub wait_go: bool,
    /// Longest wait for go.
    pub go_timeout: Duration,
    /// Timeline mode: stamp the loop and write its gaps to this file.
    pub timeline: Option<PathBuf>,
    /// Gap buffer capacity in timeline mode (default: from the duration).
    pub max_gaps: Option<u64>,
    /// What one iteration does.
    pub kind: WorkKind,
}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// `--cpu` names a CPU we may not run on.
    #[error(
        "--cpu {cpu}: CPU {cpu} is not in this process's allowed CPU set ({allowed}); pick one of those"
    )]
    CpuNotAllowed {
        /// requested CPU
        cpu: u32,
        /// allowed CPUs, e.g. "0-1"
        allowed: String,
    },
    /// sched_setaffinity failed.
    #[error("--cpu {cpu}: sched_setaffinity failed: {source}")]
    Pin {
        /// requested CPU
        cpu: u32,
        /// errno
        source: std::io::Error,
    },
    /// `--duration 0`.
    #[error("--duration must be greater than 0: give e.g. --duration 10s")]
    ZeroDuration,
    /// `--wait-go` without `--counter`.
    #[error(
        "--wait-go needs --counter PATH: the reader releases the loop through the counter file"
    )]
    WaitGoWithoutCounter,
    /// Counter file problems.
    #[error(transparent)]
    Counter(#[from] CounterError),
    /// Arming the stop timer failed.
    #[error("cannot arm the stop timer (timer_create/timer_settime): {0}")]
    Timer(std::io::Error),
    /// getrusage failed (it cannot on Linux; reported rather than hidden).
    #[error("getrusage(RUSAGE_SELF) failed")]
    Rusage,
    /// sched_getaffinity failed.
    #[error("sched_getaffinity failed: {0}")]
    Affinity(std::io::Error),
    /// Timeline mode could not calibrate, allocate or write.
    #[error(transparent)]
    Timeline(#[from] TimelineError),
    /// A memory working set larger than the memory available.
    #[error(
        "--kind {kind}: the working set needs {need_mib} MiB and this host has {avail_mib} MiB available (MemAvailable in /proc/meminfo); give a smaller memory:SIZE"
    )]
    WorkingSet {
        /// The kind as given.
        kind: String,
        /// MiB needed.
        need_mib: u64,
        /// MiB available.
        avail_mib: u64,
    },
    /// `--kind command`: the driver runs the user's command itself.
    #[error(
        "--kind command: the user's own program is run by `driver sweep --command 'CMD ARGS'`, not by the workload; give loop, stack[:DEPTH] or memory:SIZE"
    )]
    CommandKind,
}

impl RunError {
    /// Whether this is bad user input (exit status 2) rather than a failure.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            RunError::CpuNotAllowed { .. }
                | RunError::ZeroDuration
                | RunError::WaitGoWithoutCounter
                | RunError::Timeline(TimelineError::ZeroCapacity)
                | RunError::WorkingSet { .. }
                | RunError::CommandKind
        )
    }
}

/// Adds one to `count` `n` times through `black_box`; returns the new count.
#[inline(never)]
pub fn count_chunk(count: u64, n: u64) -> u64 {
    let mut c = count;
    for _ in 0..n {
        c = black_box(c.wrapping_add(1));
    }
    c
}

/// Runs chunks of `chunk` iterations of `work` until `stop` is set or the
/// count reaches `max_count`, publishing the count after each chunk if
/// `publish` is given. Returns the final count (which is also the last value
/// published).
#[inline(never)]
pub fn run_until<W: Work>(
    work: &mut W,
    stop: &AtomicBool,
    publish: Option<&AtomicU64>,
    chunk: u64,
    start_count: u64,
    max_count: u64,
) -> u64 {
    let mut count = start_count;
    loop {
        count = work.chunk(count, chunk);
        if let Some(p) = publish {
            p.store(count, Ordering::Release);
        }
        if stop.load(Ordering::Relaxed) || count >= max_count {
            return count;
        }
    }
}

/// Runs chunks of `work` until CLOCK_MONOTONIC_RAW reaches `deadline_ns`;
/// returns the count and the clock reading that ended the loop.
#[inline(never)]
pub fn run_until_clock<W: Work>(
    work: &mut W,
    publish: Option<&AtomicU64>,
    chunk: u64,
    start_count: u64,
    deadline_ns: u64,
) -> (u64, u64) {
    let mut count = start_count;
    loop {
        count = work.chunk(count, chunk);
        if let Some(p) = publish {
            p.store(count, Ordering::Release);
        }
        let now = monotonic_raw_ns();
        if now >= deadline_ns {
            return (count, now);
        }
    }
}

/// CLOCK_MONOTONIC_RAW in ns (vDSO).
#[inline]
pub fn monotonic_raw_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicRaw);
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// Calibrates the chunk: the number of iterations (a multiple of 64,
/// clamped to 256..=2^28) that takes about [`TARGET_CHUNK_NS`]. Spins ~2 ms
/// first so the CPU is at speed, then takes the fastest of 64 probes (~1.3 ms) (a probe
/// slowed by preemption only makes the chunk shorter, never longer). Returns
/// (chunk, ns per chunk).
pub fn calibrate_chunk() -> (u64, f64) {
    calibrate_chunk_with(&mut Loop, 1 << 16)
}

/// [`calibrate_chunk`] for any kind of work, with probes of `probe`
/// iterations (fewer for slow work: a probe of the memory chase over a
/// large working set is ~100 ns per iteration).
pub fn calibrate_chunk_with<W: Work>(work: &mut W, probe: u64) -> (u64, f64) {
    let probe = probe.max(64);
    let warm_until = monotonic_raw_ns() + 2_000_000;
    while monotonic_raw_ns() < warm_until {
        black_box(work.chunk(0, probe));
    }
    let mut best = u64::MAX;
    for _ in 0..64 {
        let t0 = monotonic_raw_ns();
        black_box(work.chunk(0, probe));
        let dt = monotonic_raw_ns().saturating_sub(t0);
        best = best.min(dt.max(1));
    }
    let ns_per_iter = best as f64 / probe as f64;
    let fit = (TARGET_CHUNK_NS / ns_per_iter).max(1.0) as u64;
    let chunk = (fit & !63).clamp(256, 1 << 28);
    (chunk, chunk as f64 * ns_per_iter)
}

/// Timer margin for a duration: 2 ms + 0.1% of it.
pub fn timer_margin(duration: Duration) -> Duration {
    Duration::from_millis(2) + duration / 1000
}

/// Formats a CPU set as ranges, e.g. "0-1,4".
fn format_cpus(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// CPUs this process may run on.
pub fn allowed_cpus() -> Result<Vec<usize>, RunError> {
    let set = rustix::thread::sched_getaffinity(None).map_err(|e| RunError::Affinity(e.into()))?;
    Ok((0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&c| set.is_set(c))
        .collect())
}

/// Pins the calling thread to `cpu`, checking first that it is allowed.
pub fn pin_to_cpu(cpu: u32) -> Result<(), RunError> {
    let allowed = allowed_cpus()?;
    if !allowed.contains(&(cpu as usize)) {
        return Err(RunError::CpuNotAllowed {
            cpu,
            allowed: format_cpus(&allowed),
        });
    }
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu as usize);
    rustix::thread::sched_setaffinity(None, &set).map_err(|e| RunError::Pin {
        cpu,
        source: e.into(),
    })
}

/// Validates, pins, sets up the counter, optionally waits for go, runs the
/// timed loop and reports.
pub fn run(opts: &RunOptions) -> Result<RunReport, RunError> {
    match opts.kind {
        WorkKind::Loop => run_with(opts, &mut Loop, 1 << 16),
        WorkKind::Stack { depth } => run_with(opts, &mut Stack { depth }, 1 << 16),
        WorkKind::Memory { working_set } => {
            let avail = sys::mem_available_bytes().unwrap_or(u64::MAX);
            // The chase, plus a quarter of what is left for everything else.
            if working_set > avail / 4 * 3 {
                return Err(RunError::WorkingSet {
                    kind: opts.kind.name(),
                    need_mib: working_set >> 20,
                    avail_mib: avail >> 20,
                });
            }
            let seed = monotonic_raw_ns();
            let mut m = Memory::new(working_set, seed);
            // ~100 ns per hop beyond the caches: 1024-hop probes.
            run_with(opts, &mut m, 1 << 10)
        }
        WorkKind::Command => Err(RunError::CommandKind),
    }
}

/// One run with `work` (calibration probes of `probe` iterations).
fn run_with<W: Work>(opts: &RunOptions, work: &mut W, probe: u64) -> Result<RunReport, RunError> {
    check_options(opts)?;
    if let Some(cpu) = opts.cpu {
        pin_to_cpu(cpu)?;
        tracing::debug!(cpu, "pinned");
    }
    let mut setup = set_up(opts, work, probe)?;
    let timed = timed_loop(opts, work, &mut setup)?;
    run_report(opts, setup, timed)
}

/// Refuses options that cannot make a run: a zero duration, `--wait-go`
/// without a counter.
fn check_options(opts: &RunOptions) -> Result<(), RunError> {
    if opts.duration.is_zero() {
        return Err(RunError::ZeroDuration);
    }
    if opts.wait_go && opts.counter.is_none() {
        return Err(RunError::WaitGoWithoutCounter);
    }
    Ok(())
}

/// What is ready before the timed loop starts.
struct Setup {
    /// The counter file, when `--counter` is given.
    writer: Option<CounterWriter>,
    /// Iterations per chunk.
    chunk: u64,
    /// Calibrated time of one chunk, ns.
    chunk_ns: f64,
    /// The requested duration, ns.
    duration_ns: u64,
    /// Timeline mode's stamping state.
    timeline: Option<Timeline>,
    /// How long the reader took to say go, ns (with `--wait-go`).
    waited_go_ns: Option<u64>,
}

/// Creates the counter file, calibrates the chunk (and the timeline), then
/// waits for the reader's go or tells it the loop is ready.
fn set_up<W: Work>(opts: &RunOptions, work: &mut W, probe: u64) -> Result<Setup, RunError> {
    let writer = match &opts.counter {
        Some(path) => Some(CounterWriter::create(path)?),
        None => None,
    };
    let (chunk, chunk_ns) = calibrate_chunk_with(work, probe);
    tracing::debug!(chunk, chunk_ns, "calibrated chunk");
    let duration_ns = u64::try_from(opts.duration.as_nanos()).unwrap_or(u64::MAX);
    let timeline = match &opts.timeline {
        Some(path) => Some(Timeline::calibrate_with(
            work,
            path.clone(),
            chunk_ns / chunk as f64,
            opts.max_gaps
                .unwrap_or_else(|| default_capacity(duration_ns)),
        )?),
        None => None,
    };

    let waited_go_ns = match (&writer, opts.wait_go) {
        (Some(w), true) => {
            let waited = w.wait_go(opts.go_timeout)?;
            Some(waited.as_nanos() as u64)
        }
        (Some(w), false) => {
            w.set_state(State::Ready);
            None
        }
        _ => None,
    };
    Ok(Setup {
        writer,
        chunk,
        chunk_ns,
        duration_ns,
        timeline,
        waited_go_ns,
    })
}

/// What the timed loop measured, with the process's state on each side.
struct Timed {
    /// Iterations done.
    count: u64,
    /// CLOCK_MONOTONIC_RAW at the loop's start and at its end, ns.
    start_ns: u64,
    /// See `start_ns`.
    end_ns: u64,
    /// TSC ticks over the loop (x86_64).
    tsc_ticks: Option<u64>,
    /// The stop timer's margin before the deadline.
    margin: Duration,
    /// When the loop saw the timer's signal, ns after its start.
    signal_seen_ns: Option<u64>,
    /// getrusage before and after.
    usage0: sys::Usage,
    /// See `usage0`.
    usage1: sys::Usage,
    /// The CPU the loop started on and the one it ended on.
    cpu_start: u32,
    /// See `cpu_start`.
    cpu_end: u32,
}

/// The measured section: reads the process's state and the clocks, arms
/// the stop timer, runs the loop to the deadline, and reads them again (in
/// that order, the same each run).
fn timed_loop<W: Work>(
    opts: &RunOptions,
    work: &mut W,
    setup: &mut Setup,
) -> Result<Timed, RunError> {
    let margin = timer_margin(opts.duration);
    let stop = sys::stop_flag();
    let publish = setup.writer.as_ref().map(CounterWriter::iterations_slot);

    let usage0 = sys::getrusage_self().ok_or(RunError::Rusage)?;
    let cpu_start = rustix::thread::sched_getcpu() as u32;
    #[cfg(target_arch = "x86_64")]
    let tsc0 = sys::rdtsc_lfence();
    let start_ns = monotonic_raw_ns();
    let deadline_ns = start_ns.saturating_add(setup.duration_ns);
    if let Some(w) = &setup.writer {
        w.set_start_ns(start_ns);
        w.set_state(State::Running);
    }

    let timer = if opts.duration > margin {
        Some(sys::StopTimer::arm(opts.duration - margin).map_err(RunError::Timer)?)
    } else {
        None
    };
    let stopping = Stopping {
        stop,
        timer_armed: timer.is_some(),
        start_ns,
        deadline_ns,
    };
    let (count, end_ns, signal_seen_ns) = loop_to_deadline(
        work,
        setup.timeline.as_mut(),
        publish,
        setup.chunk,
        stopping,
    );
    #[cfg(target_arch = "x86_64")]
    let tsc_ticks = Some(sys::rdtsc_lfence().wrapping_sub(tsc0));
    #[cfg(not(target_arch = "x86_64"))]
    let tsc_ticks = None;
    drop(timer);

    if let Some(w) = &setup.writer {
        w.iterations_slot().store(count, Ordering::Release);
        w.set_end_ns(end_ns);
        w.set_state(State::Done);
    }
    let cpu_end = rustix::thread::sched_getcpu() as u32;
    let usage1 = sys::getrusage_self().ok_or(RunError::Rusage)?;
    Ok(Timed {
        count,
        start_ns,
        end_ns,
        tsc_ticks,
        margin,
        signal_seen_ns,
        usage0,
        usage1,
        cpu_start,
        cpu_end,
    })
}

/// How the timed loop stops.
struct Stopping {
    /// The flag the stop timer's signal sets.
    stop: &'static AtomicBool,
    /// Whether the timer is armed (else the run is shorter than its margin).
    timer_armed: bool,
    /// CLOCK_MONOTONIC_RAW at the loop's start, ns.
    start_ns: u64,
    /// The exact deadline on the same clock, ns.
    deadline_ns: u64,
}

/// Runs the loop until the deadline: the stamped loop in timeline mode,
/// else chunks until the timer's signal and then chunks with a clock read
/// each until the deadline. Returns (count, end_ns, signal_seen_ns).
/// Inlined: it runs once, between the clock reads that time the loop.
#[inline(always)]
fn loop_to_deadline<W: Work>(
    work: &mut W,
    timeline: Option<&mut Timeline>,
    publish: Option<&AtomicU64>,
    chunk: u64,
    stopping: Stopping,
) -> (u64, u64, Option<u64>) {
    let Stopping {
        stop,
        timer_armed,
        start_ns,
        deadline_ns,
    } = stopping;
    let mut signal_seen_ns = None;
    let mut count = 0u64;
    let (count, end_ns) = match timeline {
        Some(t) => {
            if !timer_armed {
                stop.store(true, Ordering::Relaxed);
            }
            let (count, end_ns) = t.run_with(work, stop, publish, count, Some(deadline_ns));
            if timer_armed {
                signal_seen_ns = Some(t.stop_seen_ns().saturating_sub(start_ns));
            }
            (count, end_ns)
        }
        None => {
            if timer_armed {
                count = run_until(work, stop, publish, chunk, count, u64::MAX);
                signal_seen_ns = Some(monotonic_raw_ns().saturating_sub(start_ns));
            }
            run_until_clock(work, publish, chunk, count, deadline_ns)
        }
    };
    (count, end_ns, signal_seen_ns)
}

/// The run's report from its setup and what the loop measured; writes the
/// timeline's gaps file and logs its warnings and a late stop.
fn run_report(opts: &RunOptions, setup: Setup, timed: Timed) -> Result<RunReport, RunError> {
    let (usage0, usage1) = (&timed.usage0, &timed.usage1);
    let duration_ns = setup.duration_ns;
    let wall_ns = timed.end_ns.saturating_sub(timed.start_ns);
    let overrun_ns = wall_ns as i64 - duration_ns as i64;
    let timeline = setup.timeline.map(Timeline::finish).transpose()?;
    if let Some(t) = &timeline {
        for w in &t.warnings {
            tracing::warn!("timeline: {w}");
        }
    }
    if overrun_ns > 1_000_000 {
        tracing::warn!(overrun_ns, "loop stopped more than 1 ms late (preempted?)");
    }
    Ok(RunReport {
        kind: opts.kind.name(),
        iterations: timed.count,
        duration_ns,
        wall_ns,
        overrun_ns,
        tsc_ticks: timed.tsc_ticks,
        user_ns: usage1.user_ns.saturating_sub(usage0.user_ns),
        sys_ns: usage1.sys_ns.saturating_sub(usage0.sys_ns),
        nvcsw: usage1.nvcsw.saturating_sub(usage0.nvcsw),
        nivcsw: usage1.nivcsw.saturating_sub(usage0.nivcsw),
        minflt: usage1.minflt.saturating_sub(usage0.minflt),
        cpu_start: timed.cpu_start,
        cpu_end: timed.cpu_end,
        start_ns: timed.start_ns,
        end_ns: timed.end_ns,
        clock: CLOCK_NAME.to_string(),
        stop_method: STOP_METHOD.to_string(),
        pinned_cpu: opts.cpu,
        chunk_iterations: setup.chunk,
        chunk_ns: setup.chunk_ns,
        timer_margin_ns: timed.margin.as_nanos() as u64,
        signal_seen_ns: timed.signal_seen_ns,
        waited_go_ns: setup.waited_go_ns,
        counter: opts.counter.as_ref().map(|p| p.display().to_string()),
        timeline,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn count_chunk_counts() {
        assert_eq!(count_chunk(5, 1000), 1005);
        assert_eq!(count_chunk(0, 0), 0);
    }

    #[test]
    fn run_until_stops_at_max_and_publishes() {
        let stop = AtomicBool::new(false);
        let p = AtomicU64::new(0);
        let n = run_until(&mut Loop, &stop, Some(&p), 256, 0, 1000);
        assert_eq!(n, 1024);
        assert_eq!(p.load(Ordering::Relaxed), 1024);
        stop.store(true, Ordering::Relaxed);
        assert_eq!(run_until(&mut Loop, &stop, None, 256, 0, u64::MAX), 256);
    }

    #[test]
    fn cpu_ranges() {
        assert_eq!(format_cpus(&[0, 1]), "0-1");
        assert_eq!(format_cpus(&[0, 2, 3, 4, 7]), "0,2-4,7");
        assert_eq!(format_cpus(&[]), "");
    }

    #[test]
    fn calibration_is_in_range() {
        let (chunk, ns) = calibrate_chunk();
        assert!(chunk.is_multiple_of(64) && (256..=1 << 28).contains(&chunk));
        // Close to the target unless clamped.
        assert!(
            ns > 0.0 && (chunk == 256 || ns <= TARGET_CHUNK_NS * 1.01),
            "{ns}"
        );
    }
}
