//! The steps of one run: check the options, set up (counter file, chunk
//! and timeline calibration, the reader's go), the measured section (the
//! reads before, the loop to the deadline, the reads after, always in that
//! order) and the report.

use std::sync::atomic::Ordering;

use super::{
    CounterWriter, RunError, RunOptions, STOP_METHOD, calibrate_chunk, pin_to_cpu, run_until,
    run_until_clock, timer_margin,
};
use crate::clock::monotonic_raw_ns;
use crate::counter::State;
use crate::summary::{CLOCK_NAME, RunSummary};
use crate::sys;
use crate::timeline::{Timeline, default_capacity};
use crate::work::Work;

/// One run with `work` (calibration probes of `probe` iterations).
pub(super) fn run_with<W: Work>(
    opts: &RunOptions,
    work: &mut W,
    probe: u64,
) -> Result<RunSummary, RunError> {
    check_options(opts)?;
    if let Some(cpu) = opts.cpu {
        pin_to_cpu(cpu)?;
        tracing::debug!(cpu, "pinned");
    }
    let setup = set_up(opts, work, probe)?;
    timed_loop(opts, work, setup)
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
    let writer = opts
        .counter
        .as_deref()
        .map(CounterWriter::create)
        .transpose()?;
    let (chunk, chunk_ns) = calibrate_chunk(work, probe);
    tracing::debug!(chunk, chunk_ns, "calibrated chunk");
    let duration_ns = u64::try_from(opts.duration.as_nanos()).unwrap_or(u64::MAX);
    let capacity = opts
        .max_gaps
        .unwrap_or_else(|| default_capacity(duration_ns));
    let timeline = opts
        .timeline
        .clone()
        .map(|path| Timeline::calibrate(work, path, chunk_ns / chunk as f64, capacity));
    let timeline = timeline.transpose()?;

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

/// The measured section: reads the process's state and the clocks, arms
/// the stop timer, runs the loop to the deadline, and reads them again (in
/// that order, the same each run); then the report, which writes the
/// timeline's gaps file and logs its warnings and a late stop.
fn timed_loop<W: Work>(
    opts: &RunOptions,
    work: &mut W,
    mut setup: Setup,
) -> Result<RunSummary, RunError> {
    let margin = timer_margin(opts.duration);
    let stop = sys::stop_flag();
    let publish = setup.writer.as_ref().map(CounterWriter::iterations_slot);

    let wait0 = run_queue_wait_ns();
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
    // To the deadline: the stamped loop in timeline mode, else chunks
    // until the timer's signal and then chunks with a clock read each.
    let timer_armed = timer.is_some();
    let mut signal_seen_ns = None;
    let (count, end_ns) = match setup.timeline.as_mut() {
        Some(t) => {
            if !timer_armed {
                stop.store(true, Ordering::Relaxed);
            }
            let (count, end_ns, stop_seen_ns) = t.run(work, stop, publish, deadline_ns);
            if timer_armed {
                signal_seen_ns = Some(stop_seen_ns.saturating_sub(start_ns));
            }
            (count, end_ns)
        }
        None => {
            let mut count = 0u64;
            if timer_armed {
                count = run_until(work, stop, publish, setup.chunk, count, u64::MAX);
                signal_seen_ns = Some(monotonic_raw_ns().saturating_sub(start_ns));
            }
            run_until_clock(work, publish, setup.chunk, count, deadline_ns)
        }
    };
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
    let wait1 = run_queue_wait_ns();

    let duration_ns = setup.duration_ns;
    let wall_ns = end_ns.saturating_sub(start_ns);
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
    Ok(RunSummary {
        kind: opts.kind.name(),
        iterations: count,
        duration_ns,
        wall_ns,
        overrun_ns,
        tsc_ticks,
        user_ns: usage1.user_ns.saturating_sub(usage0.user_ns),
        sys_ns: usage1.sys_ns.saturating_sub(usage0.sys_ns),
        nvcsw: usage1.nvcsw.saturating_sub(usage0.nvcsw),
        nivcsw: usage1.nivcsw.saturating_sub(usage0.nivcsw),
        minflt: usage1.minflt.saturating_sub(usage0.minflt),
        wait_ns: wait1.zip(wait0).map(|(b, a)| b.saturating_sub(a)),
        cpu_start,
        cpu_end,
        start_ns,
        end_ns,
        clock: CLOCK_NAME.to_string(),
        stop_method: STOP_METHOD.to_string(),
        pinned_cpu: opts.cpu,
        chunk_iterations: setup.chunk,
        chunk_ns: setup.chunk_ns,
        timer_margin_ns: margin.as_nanos() as u64,
        signal_seen_ns,
        waited_go_ns: setup.waited_go_ns,
        counter: opts.counter.as_ref().map(|p| p.display().to_string()),
        timeline,
    })
}

/// The calling thread's time waiting on the run queue while runnable, ns
/// (`/proc/thread-self/schedstat`: run time, wait time, time slices); None
/// when the kernel has no schedstat.
pub(crate) fn run_queue_wait_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}
