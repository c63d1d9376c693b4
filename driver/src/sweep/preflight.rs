//! The sweep's pre-run checks: each refuses (exit 2) before anything is
//! measured or changed on the host, and none imports the runtime backend.
//! The command's warm-up runs (its run length), the profiler's trial
//! start, the sample-rate ceiling, and the rings and file descriptors
//! against this host's limits.

use std::path::Path;
use std::process::ExitCode;

use super::usage;
use crate::config::{Subject, SweepOptions};
use crate::plan::PlannedRun;
use crate::sampler::EventKind;
use crate::system::quiet::other_cpu;
use crate::system::settings::{MAX_SAMPLE_RATE_PATH, read_u64};
use crate::system::signals::interrupt_flag;

/// The command's warm-up runs (`--command`): they check it before
/// anything is measured and, for a new sweep, set the expected run length
/// (the rings' size), before the plan is built, and check the plan against
/// the limit on its time (`limit_origin`: where that limit came from; None
/// for a resumed sweep, whose options are recorded). `Some(code)` when the
/// sweep ends here (Ctrl-C).
pub(super) fn warm_up_command(
    opts: &mut SweepOptions,
    limit_origin: Option<&str>,
) -> anyhow::Result<Option<ExitCode>> {
    if let Subject::Command { argv, warmup, .. } = opts.subject.clone() {
        let interrupt = interrupt_flag();
        match crate::subject::command::warm_up(&argv, opts.cpu, warmup.max(1), &interrupt) {
            Ok(walls) => {
                let Some(limit_origin) = limit_origin else {
                    return Ok(None);
                };
                refuse_short_command(&argv, &walls, opts)?;
                opts.duration_ns = crate::subject::command::expected_run_ns(&walls);
                // The run length is known only now: the plan's limit.
                crate::config::check_sweep_time(
                    opts,
                    (
                        "twice the command's longest warm-up run".to_owned(),
                        "--reps".to_owned(),
                    ),
                    limit_origin.to_owned(),
                )
                .map_err(usage)?;
            }
            Err(crate::subject::command::CommandError::Interrupted) => {
                return Ok(Some(ExitCode::from(130)));
            }
            Err(e) => {
                return Err(usage(format!(
                    "--command {}: its warm-up run failed, so nothing was measured: {e}; \
                     run it by hand to see why, and fix the command",
                    shell_words::join(&argv)
                )));
            }
        }
    }
    Ok(None)
}

/// A command whose runs are too short to hold [`MIN_SAMPLES_PER_RUN`]
/// samples at the lowest rate (its shortest warm-up run): refused before
/// anything is measured, as a `--duration` that short is. A 1 ms command at
/// 100 Hz holds no sample, and its per-sample cost is noise.
///
/// [`MIN_SAMPLES_PER_RUN`]: crate::config::MIN_SAMPLES_PER_RUN
fn refuse_short_command(argv: &[String], walls: &[u64], opts: &SweepOptions) -> anyhow::Result<()> {
    use crate::config::MIN_SAMPLES_PER_RUN;
    let Some(&shortest) = walls.iter().min() else {
        return Ok(());
    };
    let Some((lowest, samples)) = crate::config::too_few_samples(&opts.freqs_hz, shortest) else {
        return Ok(());
    };
    let need_ms = (u128::from(MIN_SAMPLES_PER_RUN) * 1000).div_ceil(u128::from(lowest));
    Err(usage(format!(
        "--command {}: a run takes {:.1} ms (its shortest warm-up run), so at {lowest} Hz it holds about \
         {samples} samples, fewer than the {MIN_SAMPLES_PER_RUN} a cost per sample needs; give \
         work that runs for at least {need_ms} ms (a larger input, or a loop in a shell), or \
         higher frequencies",
        shell_words::join(argv),
        shortest as f64 / 1e6,
    )))
}

/// For `--profiler`: the profiler is started once at the sweep's
/// highest rate, with nothing measured, and must still run after its
/// start-up: one that cannot start (not installed right, no permission, a
/// typo in its arguments) stops the sweep before anything is measured
/// (exit 2), quoting its stderr. `Some(code)` when the sweep ends here
/// (Ctrl-C).
pub(super) fn check_profiler(
    opts: &SweepOptions,
    online: &[u32],
) -> anyhow::Result<Option<ExitCode>> {
    use crate::subject::profiler::{Profiler, SETTLE};
    let Some(template) = opts.subject.profiler() else {
        return Ok(None);
    };
    let argv =
        crate::config::profiler_argv(template, opts.max_freq_hz(), opts.cpu).map_err(usage)?;
    let fail = |e: crate::exec::RunError| {
        usage(format!(
            "--profiler {template}: {e}; nothing was measured. Run `{}` by hand to see why, and fix the command",
            shell_words::join(&argv)
        ))
    };
    let interrupt = interrupt_flag();
    let mut profiler = Profiler::start(&argv, online).map_err(fail)?;
    match profiler.settle(SETTLE, &interrupt) {
        Ok(()) => {}
        Err(crate::exec::RunError::Interrupted) => return Ok(Some(ExitCode::from(130))),
        Err(e) => return Err(fail(e)),
    }
    let stopped = profiler.stop();
    tracing::info!(
        "profiler check: `{}` ran {} s and stopped on {} ({})",
        shell_words::join(&argv),
        SETTLE.as_secs(),
        stopped.by,
        stopped.status
    );
    Ok(None)
}

/// perf_event_max_sample_rate as found, and whether the sweep must raise
/// it (its highest frequency is above it).
pub(super) struct Ceiling {
    /// The value found; None when it cannot be read.
    pub found: Option<u64>,
    /// Whether `--raise-max-rate` is needed and given.
    pub raise: bool,
}

/// The sample-rate ceiling, as found (after the leftovers); a frequency
/// above it is refused without `--raise-max-rate`.
pub(super) fn max_rate_ceiling(opts: &SweepOptions, may_raise: bool) -> anyhow::Result<Ceiling> {
    let found = read_u64(Path::new(MAX_SAMPLE_RATE_PATH)).ok();
    let raise = found.is_some_and(|r| opts.max_freq_hz() > r);
    if raise && !may_raise {
        let found = found.unwrap_or(0);
        return Err(usage(format!(
            "frequency {} Hz is above perf_event_max_sample_rate = {found} ({MAX_SAMPLE_RATE_PATH}); \
             pass --raise-max-rate to raise it for the sweep (restored at exit), or drop frequencies above {found}",
            opts.max_freq_hz(),
        )));
    }
    Ok(Ceiling { found, raise })
}

/// The largest run's rings and file descriptors against this host's
/// limits (logged when they fit, a usage error when not).
pub(super) fn check_ring_limits(
    opts: &SweepOptions,
    plan: &[PlannedRun],
    event: EventKind,
    online: &[u32],
) -> anyhow::Result<()> {
    let configs = crate::ring_limits::plan_configs(plan, opts, event, other_cpu(opts.cpu, online));
    match crate::ring_limits::fit(&configs, &crate::ring_limits::HostLimits::read()) {
        Ok(b) if !configs.is_empty() => tracing::info!("{}", b.summary()),
        Ok(_) => {}
        Err(e) => return Err(usage(e)),
    }
    Ok(())
}
