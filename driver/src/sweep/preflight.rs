//! The sweep's pre-run checks: each refuses (exit 2) before anything is
//! measured or changed on the host, and none imports the runtime backend.
//! The command's warm-up runs (its run length), then on the final options
//! and plan: the sample-rate ceiling, the event, the profiler's trial
//! start, and the rings and file descriptors against this host's limits.

use std::path::Path;
use std::process::ExitCode;

use super::usage;
use crate::config::{Sampling, Subject, SweepOptions};
use crate::perf::error::MAX_RATE_PATH;
use crate::plan::PlannedRun;
use crate::sampler::{EventKind, resolve_event};
use crate::system::quiet::other_cpu;
use crate::system::settings::read_num;
use crate::system::signals::interrupt_flag;
use anyhow::Context;

/// The command's warm-up runs (`--command`): they check it before
/// anything is measured and tell its run length, the wall time of each
/// run, ns (for `Resolved::finish`); None without a command. `Err(code)`
/// when the sweep ends here (Ctrl-C).
pub(super) fn warm_up_command(
    opts: &SweepOptions,
) -> anyhow::Result<Result<Option<Vec<u64>>, ExitCode>> {
    use crate::subject::command::{CommandError, warm_up};
    let Subject::Command { argv, warmup } = &opts.subject else {
        return Ok(Ok(None));
    };
    match warm_up(argv, opts.cpu, (*warmup).max(1), &interrupt_flag()) {
        Ok(walls) => Ok(Ok(Some(walls))),
        Err(CommandError::Interrupted) => Ok(Err(ExitCode::from(130))),
        Err(e) => Err(usage(format!(
            "--command {}: its warm-up run failed, so nothing was measured: {e}; \
             run it by hand to see why, and fix the command",
            shell_words::join(argv)
        ))),
    }
}

/// The sampling event opened (a fallback said in the log and returned as
/// the first warning), refused when the contents need a PMU the host
/// lacks or a resumed sweep sampled another event.
pub(super) fn open_event(
    opts: &SweepOptions,
    resumed_event: Option<&str>,
    root: &Path,
) -> anyhow::Result<(EventKind, Vec<String>)> {
    let requested = opts.event;
    let (event, fallback) = resolve_event(requested)
        .with_context(|| format!("cannot open the sampling event {requested} (--event)"))?;
    let mut warnings = Vec::new();
    match (fallback, &opts.sampling) {
        // Our sampler opens nothing in a --profiler sweep.
        (Some(w), Sampling::Profiler { .. }) => tracing::debug!("{w}"),
        (Some(w), Sampling::Ours) => {
            tracing::warn!("{w}");
            warnings.push(w);
        }
        (None, _) => {}
    }
    if !event.is_hardware()
        && let Some(c) = opts.contents.iter().find(|c| c.needs_pmu())
    {
        return Err(usage(format!(
            "sample contents '{c}' (--sample) need a hardware PMU's branch stack, and this host samples {} (no PMU: cycles is not available here, e.g. in a VM); drop {c} from --sample",
            event.as_str()
        )));
    }
    if let Some(was) = resumed_event
        && was != event.as_str()
    {
        anyhow::bail!(
            "cannot resume {}: it sampled {was} but this host now opens {}",
            root.display(),
            event.as_str()
        );
    }
    Ok((event, warnings))
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
    let Sampling::Profiler { template } = &opts.sampling else {
        return Ok(None);
    };
    let argv =
        crate::config::profiler_argv(template, opts.max_rate_hz(), opts.cpu).map_err(usage)?;
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
    let found = read_num::<u64>(Path::new(MAX_RATE_PATH)).ok();
    let raise = found.is_some_and(|r| opts.max_rate_hz() > r);
    if raise && !may_raise {
        let found = found.unwrap_or(0);
        return Err(usage(format!(
            "frequency {} Hz is above perf_event_max_sample_rate = {found} ({MAX_RATE_PATH}); \
             pass --raise-max-rate to raise it for the sweep (restored at exit), or drop frequencies above {found}",
            opts.max_rate_hz(),
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
    let configs = crate::backend::plan_configs(plan, opts, event, other_cpu(opts.cpu, online));
    match crate::ring_limits::fit(&configs, &crate::ring_limits::HostLimits::read()) {
        Ok(b) if !configs.is_empty() => tracing::info!("{}", b.summary()),
        Ok(_) => {}
        Err(e) => return Err(usage(e)),
    }
    Ok(())
}
