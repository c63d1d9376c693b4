//! One run of the loop under a real profiler (`--profiler`): the
//! workload made ready, the profiler (`crate::subject::profiler`) started
//! and settled, the loop released and timed, the profiler's cost read over
//! the loop's window, then the profiler stopped and reaped.

use std::sync::atomic::AtomicBool;

use super::{RealBackend, RunFiles, Sampled, wait_end, workload_outcome};
use crate::exec::{RunError, RunOutcome, RunSpec};
use crate::results::RunRow;
use crate::subject::profiler::Profiler;
use crate::system::procstat::{ProcStat, ns_per_tick};
use workload::clock::monotonic_raw_ns;

impl RealBackend {
    /// One run at a rate above 0 Hz with `--profiler`: the workload in
    /// timeline mode made ready, the profiler started and settled, the loop
    /// released and timed, the profiler's cost read over the loop's window,
    /// then the profiler stopped and reaped. No sampler of ours is opened.
    pub(super) fn run_profiled(
        &self,
        spec: &RunSpec<'_>,
        template: &str,
        interrupt: &AtomicBool,
    ) -> Result<RunOutcome, RunError> {
        let opts = spec.opts;
        let files = RunFiles::new(spec);
        let w = self.ready_workload(spec, &files, interrupt)?;
        let (mut guard, reader) = (w.guard, w.reader);
        let (stdout, stderr) = (w.stdout, w.stderr);
        let mut profiler = Profiler::start_settled(
            template,
            spec.run.freq_hz,
            opts.cpu,
            &self.online_cpus,
            interrupt,
        )?;
        let steal_before = ProcStat::read().map(|s| s.cpu(opts.cpu).steal).unwrap_or(0);
        profiler.window_starts();
        let started_at_ns = monotonic_raw_ns();
        reader.release();
        let status = wait_end(&mut guard, &reader, None, opts.duration_ns, interrupt)?;
        let ended_at_ns = monotonic_raw_ns();
        let steal_after = ProcStat::read().map(|s| s.cpu(opts.cpu).steal).unwrap_or(0);
        let mut row = RunRow {
            steal_ns: steal_after.saturating_sub(steal_before) * ns_per_tick(),
            started_at_ns,
            ended_at_ns,
            ..RunRow::default()
        };
        profiler.window_ends(&mut row);
        profiler.check_alive("while the loop ran")?;
        profiler.stop_after_run(spec.run.run_id);
        let sampled = Sampled {
            status,
            row,
            sampler: None,
            phases: Vec::new(),
        };
        let out_text = stdout.join().unwrap_or_default();
        let err_text = stderr.join().unwrap_or_default();
        workload_outcome(sampled, (out_text, &err_text), files.gaps.as_deref())
    }
}
