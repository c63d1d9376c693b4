//! The look at the host before a sweep, measured: the counting loop in
//! timeline mode on the measured CPU for [`LOOK_NS`] with no sampling
//! event, its counter read at the end of each slice, its gaps joined into
//! episodes afterwards, and the CPU's steal over it. `plan::judge` makes
//! the numbers and the verdict from what this returns.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use results_format::timeline::join_episodes;
use workload::counter::{CounterReader, State};
use workload::work::WorkKind;

use super::{
    RealBackend, RunFiles, WorkloadArgs, failed, read_gaps, steal_ns_since, steal_ticks, wait_end,
};
use crate::config::SweepOptions;
use crate::exec::RunError;
use crate::plan::judge::{LOOK_NS, LookMeasure, SETTLE_SLICES, slice_ns_for};
use crate::system::clock::{monotonic_ns, sleep_until_monotonic};
use workload::clock::monotonic_raw_ns;

impl RealBackend {
    /// Runs the look on `opts.cpu` (the driver keeps off that CPU) and
    /// returns what it measured; an error when the workload could not run
    /// (the sweep goes on without the look and says so).
    pub(crate) fn look_at_host(
        &self,
        opts: &SweepOptions,
        interrupt: &AtomicBool,
    ) -> Result<LookMeasure, RunError> {
        let slice_ns = slice_ns_for(opts);
        let files = RunFiles::named("host-look", true);
        let gaps = files.gaps.clone().unwrap_or_default();
        let w = self.ready_workload(
            &WorkloadArgs {
                duration_ns: LOOK_NS,
                cpu: opts.cpu,
                kind: &WorkKind::Loop,
                counter: &files.counter,
                gaps: Some(&gaps),
            },
            interrupt,
        )?;
        let (mut guard, reader) = (w.guard, w.reader);
        let steal_before = steal_ticks(opts.cpu);
        let wall_start = monotonic_ns();
        reader.release();
        let reads = read_slices(&reader, slice_ns, interrupt)?;
        let status = wait_end(&mut guard, &reader, None, LOOK_NS, interrupt)?;
        let wall_ns = monotonic_ns().saturating_sub(wall_start);
        let steal_ns = steal_ns_since(steal_before, opts.cpu);
        let out_text = w.stdout.join().unwrap_or_default();
        let err_text = w.stderr.join().unwrap_or_default();
        if !status.success() {
            return Err(failed(format!("workload {status}: {}", err_text.trim())));
        }
        let (duration_ns, episode_excess_ns) = episodes(&out_text, &gaps)?;
        Ok(LookMeasure {
            cpu: opts.cpu,
            duration_ns,
            slice_ns,
            reads,
            episode_excess_ns,
            steal_ns,
            wall_ns,
        })
    }
}

/// The loop's length and its episodes' excess, from its report (stdout)
/// and its gaps file.
fn episodes(out_text: &str, gaps: &Path) -> Result<(u64, Vec<u64>), RunError> {
    let report: workload::summary::RunSummary = serde_json::from_str(out_text.trim())
        .map_err(|e| failed(format!("cannot read the workload's report: {e}")))?;
    let Some(t) = report.timeline else {
        return Err(failed("the workload ran without its timeline (--timeline)"));
    };
    if t.gaps_dropped > 0 {
        tracing::warn!(
            "host look: {} of {} gaps were not stored (buffer full); the episodes are those stored",
            t.gaps_dropped,
            t.gaps
        );
    }
    let mut g = crate::gaps::gaps_of(&read_gaps(gaps)?);
    let excess = join_episodes(&mut g).iter().map(|e| e.excess_ns).collect();
    Ok((t.loop_end_ns.saturating_sub(t.loop_start_ns), excess))
}

/// The counter at each slice boundary (CLOCK_MONOTONIC_RAW ns, loop
/// count): from the end of the settling period to the last boundary
/// before the loop ends, with absolute sleeps as the paired design's
/// phases. A slice the loop's end falls in is left out.
fn read_slices(
    reader: &CounterReader,
    slice_ns: u64,
    interrupt: &AtomicBool,
) -> Result<Vec<(u64, u64)>, RunError> {
    let t = Instant::now();
    while reader.start_ns() == 0 && reader.state() != State::Done {
        if t.elapsed() > Duration::from_secs(5) {
            return Err(failed("the workload's loop did not start within 5 s"));
        }
        if interrupt.load(Ordering::SeqCst) {
            return Err(RunError::Interrupted);
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    let start = monotonic_ns();
    // A margin before the loop's deadline: the last read must see it running.
    let end = start + LOOK_NS.saturating_sub(5_000_000);
    let settle = (SETTLE_SLICES * slice_ns).min(LOOK_NS / 4);
    let mut reads = Vec::new();
    let mut deadline = start + settle;
    while deadline <= end {
        sleep_until_monotonic(deadline);
        if interrupt.load(Ordering::SeqCst) {
            return Err(RunError::Interrupted);
        }
        let read = (monotonic_raw_ns(), reader.iterations());
        if reader.state() != State::Running {
            break;
        }
        reads.push(read);
        deadline += slice_ns;
    }
    Ok(reads)
}
