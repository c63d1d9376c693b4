//! A run of the user's own program (`--command`): the sampler is opened
//! and switched on (or, with `--profiler`, the profiler started and
//! settled), the command runs once pinned to the measured CPU, and the
//! sampler is switched off (the profiler stopped) as soon as it exits. The
//! run's measurement is the command's wall time; `iterations` is 1 (one
//! whole run of it). The command may write its own files into its run's
//! folder, named by `PERF_OVERHEAD_RUN_DIR`.

use std::sync::atomic::AtomicBool;

use super::{RealBackend, RunError, RunOutcome, RunSpec, failed, steal_ns_since, steal_ticks};
use crate::results::RunRow;
use crate::subject::command::{CommandError, run_limit, run_pinned};

impl RealBackend {
    pub(super) fn run_command(
        &mut self,
        spec: &RunSpec<'_>,
        argv: &[String],
        interrupt: &AtomicBool,
    ) -> Result<RunOutcome, RunError> {
        let opts = spec.opts;
        let sampler = self.open_sampler(spec, 0)?;
        let mut profiler = self.start_profiler(spec, interrupt)?;
        if let Some(p) = &mut profiler {
            p.window_starts();
        }
        let steal_before = steal_ticks(opts.cpu);
        if let Some(s) = &sampler {
            s.enable().map_err(failed)?;
        }
        let result = run_pinned(
            argv,
            opts.cpu,
            run_limit(opts.duration_ns),
            interrupt,
            spec.command_dir.as_deref(),
        );
        if let Some(s) = &sampler {
            let _ = s.disable();
        }
        let steal_ns = steal_ns_since(steal_before, opts.cpu);
        let (mut row, result) = match result {
            Ok(row) => (RunRow { steal_ns, ..row }, Ok(())),
            Err(e) => (RunRow::default(), Err(e)),
        };
        let alive = match profiler {
            Some(mut p) => {
                p.window_ends(&mut row);
                let alive = p.check_alive("while the command ran");
                p.stop_after_run(spec.run.run_id);
                alive
            }
            None => Ok(()),
        };
        match result {
            Ok(()) => {}
            Err(CommandError::Interrupted) => return Err(RunError::Interrupted),
            Err(e) => return Err(failed(e)),
        }
        alive?;
        let sampled = sampler
            .map(|s| s.finish(&mut row))
            .transpose()
            .map_err(|e| failed(format!("sampler: {e}")))?;
        Ok(RunOutcome {
            row,
            ..RunOutcome::sampled(sampled)
        })
    }
}
