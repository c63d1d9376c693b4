//! A sweep prepared: everything before its first run, in order, into one
//! [`Prepared`]. The options are final once a command's warm-up runs have
//! told its run length; the plan is built once, on them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context;

use super::preflight;
use super::steps::{self, Fresh, Resumed};
use super::{SweepFlags, has_settings, usage};
use crate::backend::RealBackend;
use crate::config::{BudgetPct, ExperimentFile, Resolved, SweepOptions};
use crate::hoststate::SweepLock;
use crate::plan::PlannedRun;
use crate::results::{Manifest, ResultsDir, Status};
use crate::system::quiet::other_cpu;
use crate::system::settings::SettingsGuard;
use crate::system::signals::interrupt_flag;

/// A sweep ready to run. Its fields drop in order: the guard restores the
/// settings before the lock is released.
pub(crate) struct Prepared {
    pub opts: SweepOptions,
    pub root: PathBuf,
    pub guard: SettingsGuard,
    pub backend: RealBackend,
    pub dir: ResultsDir,
    pub manifest: Manifest,
    /// The runs still to make (the whole plan for a new sweep).
    pub todo: Vec<PlannedRun>,
    pub interrupt: Arc<AtomicBool>,
    /// The host's one sweep lock, held until the sweep has restored the
    /// settings and written its report.
    pub lock: SweepLock,
}

/// What preparing ended with.
pub(crate) enum Prepare {
    /// Ready to run.
    Ready(Box<Prepared>),
    /// Stopped before anything was measured (Ctrl-C during the warm-up,
    /// the profiler's check or the look at the host).
    Stopped(ExitCode),
}

/// The recorded options and manifest of `--resume DIR`, or flags over
/// experiment file over defaults, with the loss budget a check judges
/// against (the summary's `budget_pct`); `Resolved::finish` gives them.
fn resolve_options(
    args: &SweepFlags,
    online: &[u32],
    budget_pct: Option<BudgetPct>,
) -> anyhow::Result<(Option<Resumed>, Resolved)> {
    if let Some(dir) = &args.resume {
        if has_settings(args) {
            return Err(usage(format!(
                "--resume {} reuses the recorded options, plan and seed: drop the other settings flags",
                dir.display()
            )));
        }
        let manifest = crate::results::read_manifest(dir)
            .map_err(|e| usage(format!("cannot resume {}: {e}", dir.display())))?;
        refuse_complete(dir, &manifest)?;
        let opts = Resolved::recorded(manifest.options.clone());
        let dir = dir.clone();
        return Ok((Some(Resumed { dir, manifest }), opts));
    }
    let file = match &args.experiment {
        Some(p) => Some(ExperimentFile::load(p).map_err(usage)?),
        None => None,
    };
    let default_seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| (d.as_nanos() % u128::from(u64::MAX)) as u64);
    let file = file.as_ref().zip(args.experiment.as_deref());
    let resolved = SweepOptions::resolve(&args.settings, file, online, default_seed)
        .map_err(usage)?
        .with_budget(budget_pct);
    Ok((None, resolved))
}

/// A complete sweep has nothing to resume: refused before anything runs
/// or is rewritten (a resume would look at the host again and rewrite the
/// manifest and report of a finished set).
fn refuse_complete(dir: &Path, m: &Manifest) -> anyhow::Result<()> {
    if m.status != Status::Complete {
        return Ok(());
    }
    let done = crate::results::read_runs(dir)
        .map_err(|e| usage(format!("cannot resume {}: {e}", dir.display())))?;
    if !crate::results::missing_runs(&m.plan, &done).is_empty() {
        return Ok(());
    }
    let held = if m.plan.is_empty() {
        String::new()
    } else {
        format!(" (all {} planned runs are in its runs.csv)", m.plan.len())
    };
    Err(usage(format!(
        "cannot resume {}: it is complete{held}, so there is nothing to resume; to report it again \
         run `analysis report {}`, to measure again start a new sweep",
        dir.display(),
        dir.display()
    )))
}

/// Everything before the first run: options, directory, lock, leftovers,
/// the command's warm-up (the options final), the plan, the checks on
/// them (ceiling, event, the profiler's start, the rings against the
/// host's limits), the host's facts and look, the settings raised, and
/// the results directory opened.
pub(crate) fn prepare(args: &SweepFlags, budget: Option<BudgetPct>) -> anyhow::Result<Prepare> {
    // The one list of online CPUs: --cpu is checked against it, and the
    // sampler opens its events on it.
    let online = crate::sampler::online_cpus().context("cannot list the online CPUs")?;
    let (resumed, resolved) = resolve_options(args, &online, budget)?;
    // Never an existing directory; one sweep per host.
    let root = steps::output_dir(args, resumed.as_ref())?;
    let state_dir = crate::hoststate::state_dir();
    let lock = steps::lock(&state_dir, &root)?;
    crate::backend::remove_stale_run_files(&std::env::temp_dir());
    // What a driver that died left changed: restored before anything is
    // read from the host (or, with --leave-settings, taken over by this
    // sweep's guard, which restores the original values at its end).
    let mut left = steps::take_over_leftovers(args, &state_dir, &root, resumed.as_ref())?;
    let walls = match preflight::warm_up_command(resolved.options())? {
        Ok(walls) => walls,
        Err(code) => return Ok(Prepare::Stopped(code)),
    };
    // The options, final: nothing changes them after this.
    let opts = resolved.finish(walls.as_deref()).map_err(usage)?;
    // The plan, once, on the final options (a resume keeps its own).
    let plan = match &resumed {
        Some(r) => r.manifest.plan.clone(),
        None => crate::plan::build_plan(&opts),
    };
    // The checks of the final options and plan, in order: the sample-rate
    // ceiling, the event (a resumed sweep's must be the one it sampled),
    // the profiler's start, the rings against the host's limits.
    let ceiling = preflight::max_rate_ceiling(&opts, args.raise_max_rate)?;
    let resumed_event = resumed.as_ref().map(|r| r.manifest.event.as_str());
    let (event, mut warnings) = preflight::open_event(&opts, resumed_event, &root)?;
    if let Some(code) = preflight::check_profiler(&opts, &online)? {
        return Ok(Prepare::Stopped(code));
    }
    preflight::check_ring_limits(&opts, &plan, event, &online)?;

    super::pin_self_away_from(opts.cpu, &online);
    let interrupt = interrupt_flag();
    let backend = RealBackend {
        event,
        drain_cpu: other_cpu(opts.cpu, &online),
        online_cpus: online.clone(),
    };
    // The host's facts, before this sweep changes anything.
    let host = resumed.is_none().then(steps::host_facts);
    warnings.extend(left.lines.iter().map(|l| format!("at start: {l}")));
    let (host_look, look_warnings) =
        match steps::look_at_host(args, &opts, resumed.as_ref(), &backend, &interrupt) {
            Ok(look) => look,
            Err(code) => return Ok(Prepare::Stopped(code)),
        };
    warnings.extend(look_warnings);
    // Recorded in the state file, then changed; the guard restores them
    // whatever happens (Ctrl-C and SIGTERM included).
    warnings.extend(steps::raise_max_rate(&mut left.guard, &ceiling, &opts)?);
    let (dir, manifest, todo) = steps::open_results(
        &root,
        resumed,
        &opts,
        plan,
        Fresh {
            host,
            event,
            warnings,
            changes: left.guard.changes(),
            back_to_original: &left.back_to_original,
            host_look,
        },
    )?;
    Ok(Prepare::Ready(Box::new(Prepared {
        opts,
        root,
        guard: left.guard,
        backend,
        dir,
        manifest,
        todo,
        interrupt,
        lock,
    })))
}
