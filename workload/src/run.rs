//! The timed counting loop.
//!
//! # Loop
//!
//! [`count_chunk`](crate::work::count_chunk) adds one to a counter `n` times, passing it through
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
//!
//! [`run`]'s steps (setup, the measured section, the summary) are in
//! `run/steps.rs`.
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::monotonic_raw_ns;
use crate::counter::{CounterError, CounterWriter};
use crate::summary::RunSummary;
use crate::sys;
use crate::timeline::TimelineError;
use crate::work::{Loop, Memory, Stack, Work, WorkKind};

mod steps;

use steps::run_with;

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

/// Calibrates the chunk of `work`: the number of iterations (a multiple
/// of 64, clamped to 256..=2^28) that takes about [`TARGET_CHUNK_NS`], with
/// probes of `probe` iterations (fewer for slow work: a probe of the memory
/// chase over a large working set is ~100 ns per iteration). Spins ~2 ms
/// first so the CPU is at speed, then takes the fastest of 64 probes (~1.3 ms) (a probe
/// slowed by preemption only makes the chunk shorter, never longer). Returns
/// (chunk, ns per chunk).
pub fn calibrate_chunk<W: Work>(work: &mut W, probe: u64) -> (u64, f64) {
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
/// A CPU list the way the kernel writes it ("0-3,5").
pub fn format_cpus(cpus: impl IntoIterator<Item = u64>) -> String {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for cpu in cpus {
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == cpu => *end = cpu,
            _ => ranges.push((cpu, cpu)),
        }
    }
    let text = |&(start, end): &(u64, u64)| match start == end {
        true => start.to_string(),
        false => format!("{start}-{end}"),
    };
    ranges.iter().map(text).collect::<Vec<_>>().join(",")
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
            allowed: format_cpus(allowed.iter().map(|&c| c as u64)),
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
pub fn run(opts: &RunOptions) -> Result<RunSummary, RunError> {
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn count_chunk_counts() {
        use crate::work::count_chunk;
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
        assert_eq!(format_cpus([0, 1]), "0-1");
        assert_eq!(format_cpus([0, 2, 3, 4, 7]), "0,2-4,7");
        assert_eq!(format_cpus([]), "");
    }

    #[test]
    fn calibration_is_in_range() {
        let (chunk, ns) = calibrate_chunk(&mut Loop, 1 << 16);
        assert!(chunk.is_multiple_of(64) && (256..=1 << 28).contains(&chunk));
        // Close to the target unless clamped.
        assert!(
            ns > 0.0 && (chunk == 256 || ns <= TARGET_CHUNK_NS * 1.01),
            "{ns}"
        );
    }
}
