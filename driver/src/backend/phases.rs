//! The paired design's phases: after the loop settles, the sampler is
//! switched at each phase boundary while each phase's iterations and
//! schedstat times are read; after the run each phase gets the samples
//! whose timestamps fall in it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use procfs::process::Process;

use super::failed;
use crate::exec::{RunError, RunSpec};
use crate::results::PhaseRow;
use crate::sampler::Sampler;
use crate::system::clock::{monotonic_ns, sleep_until_monotonic};
use crate::system::realtime::{CONTROLLER_PRIORITY, RealtimeGuard};
use workload::clock::monotonic_raw_ns;

/// (time on CPU, time runnable but waiting) of a task, ns, from
/// `/proc/<pid>/schedstat`; zeros when unreadable.
fn read_schedstat(process: Option<&Process>) -> (u64, u64) {
    process
        .and_then(|p| p.schedstat().ok())
        .map_or((0, 0), |s| (s.sum_exec_runtime, s.run_delay))
}

/// Counts each phase's samples from the sorted sample timestamps (the same
/// CLOCK_MONOTONIC_RAW as the phase boundaries): a sample belongs to the
/// phase whose [start, end) holds it, i.e. to the iterations its interrupt
/// interrupted.
pub(super) fn phase_samples(phases: &mut [PhaseRow], sorted_times_ns: &[u64]) {
    for p in phases {
        let from = sorted_times_ns.partition_point(|&t| t < p.start_ns);
        let to = sorted_times_ns.partition_point(|&t| t < p.end_ns);
        p.samples = u64::try_from(to.saturating_sub(from)).unwrap_or(u64::MAX);
    }
}

/// The paired design's phases: waits for the loop to start, lets it settle
/// with sampling off, then switches the sampler at each phase boundary and
/// records each phase's iterations and schedstat times.
pub(super) fn run_phases(
    spec: &RunSpec<'_>,
    reader: &workload::counter::CounterReader,
    sampler: Option<&Sampler>,
    pid: u32,
    interrupt: &AtomicBool,
) -> Result<Vec<PhaseRow>, RunError> {
    let opts = spec.opts;
    let mut phases = Vec::new();
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
    // The controller's timing out of reach of the sampling it switches
    // (system scope samples its CPU too): a real-time priority while the
    // phases run, put back when this returns.
    let _realtime = match RealtimeGuard::raise() {
        Ok(g) => Some(g),
        Err(e) => {
            tracing::warn!(
                "the phase controller runs at its normal priority (cannot raise it to \
                 SCHED_FIFO {CONTROLLER_PRIORITY}: {e}): on a busy CPU its phases may run long"
            );
            None
        }
    };
    // The settling period: the loop runs, sampling stays off, and
    // nothing is measured.
    let t0 = monotonic_ns() + spec.settle_ns;
    sleep_until_monotonic(t0);
    if interrupt.load(Ordering::SeqCst) {
        return Err(RunError::Interrupted);
    }
    // Opened once: each boundary then reads only its schedstat file.
    let process = i32::try_from(pid).ok().and_then(|p| Process::new(p).ok());
    let mut prev = (monotonic_raw_ns(), reader.iterations());
    let mut prev_sched = read_schedstat(process.as_ref());
    if let (Some(s), Some(true)) = (&sampler, spec.phases.first()) {
        s.enable().map_err(failed)?;
    }
    let mut boundary = t0;
    for (i, &on) in spec.phases.iter().enumerate() {
        // The schedule, or one whole phase after the last boundary when
        // that came late: a held-up controller never cuts the next phases
        // short to catch up (the old rule gave phases of 0.03 ms with no
        // work in them). results_format::phase_check judges the phases by
        // the same deadline.
        let deadline = (t0 + opts.phase_ns * (u64::try_from(i).unwrap_or(0) + 1))
            .max(boundary + opts.phase_ns);
        // Halfway: one read of the counter, so that a change of the
        // loop's speed inside the phase shows (the split design counts
        // them). The controller runs on another CPU; this wakes it once
        // more per phase and touches nothing the loop uses.
        sleep_until_monotonic(boundary + deadline.saturating_sub(boundary) / 2);
        let mid = (monotonic_raw_ns(), reader.iterations());
        sleep_until_monotonic(deadline);
        let next_on = spec.phases.get(i + 1).copied().unwrap_or(false);
        // Samples are counted per phase by their timestamps after the
        // run (see phase_samples): no decoding while it runs. The
        // boundary's reads come after a switch off and before a switch
        // on, so every sample's time lies inside an on phase. The
        // ioctls return once the event's CPU has switched it (an IPI
        // the sample's interrupt cannot straddle); read the other way
        // round, a sample in the microseconds between the reads and
        // the switch counted for an off phase (seen about once in
        // twelve 4-run tests on a busy VM).
        if let Some(s) = &sampler
            && on
            && !next_on
        {
            s.disable().map_err(failed)?;
        }
        boundary = monotonic_ns();
        let t_now = monotonic_raw_ns();
        let it_now = reader.iterations();
        if let Some(s) = &sampler
            && next_on
            && !on
        {
            s.enable().map_err(failed)?;
        }
        let sched_now = read_schedstat(process.as_ref());
        phases.push(PhaseRow {
            phase: u32::try_from(i).unwrap_or(u32::MAX),
            sampling: on,
            start_ns: prev.0,
            end_ns: t_now,
            iterations: it_now.saturating_sub(prev.1),
            task_ns: sched_now.0.saturating_sub(prev_sched.0),
            wait_ns: sched_now.1.saturating_sub(prev_sched.1),
            mid_ns: mid.0,
            mid_iterations: mid.1.saturating_sub(prev.1),
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
    Ok(phases)
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
}
