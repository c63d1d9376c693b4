//! `driver sweep`: options, plan, settings, results directory, execution
//! through the real backend (`backend`), and the report at the end.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::backend::RealBackend;
use crate::config::FlagSettings;
use crate::system::quiet::other_cpu;
use crate::system::signals::interrupt_flag;

mod finish;
mod steps;

/// Arguments of `driver sweep` (boxed: they are large next to the other
/// subcommands').
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SweepArgs {
    /// The flags.
    #[command(flatten)]
    pub flags: Box<SweepFlags>,
}

/// The flags of `driver sweep`: the settings ([`FlagSettings`], merged
/// over an experiment file by [`crate::config::SweepOptions::resolve`])
/// and what to do with them.
// The fields' doc comments are `driver sweep --help`'s text, written for a
// terminal: `dwarf[:SIZE]` and `results/<UTC time>-<host>` are not links or
// HTML there.
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SweepFlags {
    /// The settings.
    #[command(flatten)]
    pub settings: FlagSettings,
    /// Results directory (must not exist). Default results/<UTC time>-<host>.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Experiment file (experiments/NAME.toml); flags override its settings.
    #[arg(long)]
    pub experiment: Option<PathBuf>,
    /// Finish an interrupted sweep in DIR with its recorded options, plan and seed.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Raise perf_event_max_sample_rate for the sweep when a frequency is above it (restored at exit).
    #[arg(long)]
    pub raise_max_rate: bool,
    /// Settings left changed by a driver that did not exit cleanly (kill -9)
    /// are normally restored before the sweep starts; with this flag they
    /// are left as they are for the sweep and restored to their original
    /// values when it ends (said on stderr either way).
    #[arg(long)]
    pub leave_settings: bool,
    /// Skip the analysis report at the end.
    #[arg(long)]
    pub no_report: bool,
    /// Skip the look at the host before the first run (3 s of the counting
    /// loop on the measured CPU with no sampling: its speed per slice,
    /// background interruptions and steal, and the smallest loss the plan
    /// can resolve with them; printed and kept in the manifest as
    /// host_look). A resume looks only when the manifest has no look and
    /// no run was recorded yet.
    #[arg(long)]
    pub no_host_look: bool,
    /// Set by `driver check`: the loss budget it judges against, %, kept in
    /// the options (the summary's `budget_pct`).
    #[arg(skip)]
    pub check_budget: Option<f64>,
    /// Set by `driver check`: the sweep prints neither its answer box nor
    /// its directory (the check prints its own), and an interrupted run is
    /// not offered a resume.
    #[arg(skip)]
    pub quiet: bool,
}

/// A bad command line or input: printed as one line, exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Another sweep or check holds the host's lock: the sweep refuses (exit
/// 2), a check says it is unresolved (exit 3).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BusyError(pub String);

fn usage(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::Error::new(UsageError(e.to_string()))
}

/// Runs `driver sweep`.
pub fn cli(args: &SweepArgs) -> anyhow::Result<ExitCode> {
    match run_sweep(&args.flags) {
        Ok(code) => Ok(code),
        Err(e) => {
            if let Some(u) = e.downcast_ref::<UsageError>() {
                eprintln!("error: {u}");
                Ok(ExitCode::from(2))
            } else if let Some(b) = e.downcast_ref::<BusyError>() {
                eprintln!("error: {b}");
                Ok(ExitCode::from(2))
            } else {
                Err(e)
            }
        }
    }
}

fn has_settings(args: &SweepFlags) -> bool {
    args.settings.any() || args.experiment.is_some() || args.out.is_some()
}

fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// The commit this driver was built from (driver/build.rs: `git rev-parse
/// HEAD` at build time, `-dirty` with uncommitted changes); None when it was
/// built outside a git checkout.
fn git_revision() -> Option<String> {
    Some(env!("DRIVER_GIT_REVISION"))
        .filter(|r| *r != "unknown")
        .map(str::to_owned)
}

fn pin_self_away_from(cpu: u32, online: &[u32]) {
    let mut set = rustix::thread::CpuSet::new();
    for &c in online.iter().filter(|&&c| c != cpu) {
        set.set(usize::try_from(c).unwrap_or(0));
    }
    if online.len() > 1
        && let Err(e) = rustix::thread::sched_setaffinity(None, &set)
    {
        tracing::warn!("cannot keep the driver off CPU {cpu}: {e}");
    }
}

pub(crate) fn run_sweep(args: &SweepFlags) -> anyhow::Result<ExitCode> {
    // The one list of online CPUs: --cpu is checked against it, and the
    // sampler opens its events on it.
    let online = crate::sampler::online_cpus().context("cannot list the online CPUs")?;
    // 1. Options: recorded (resume) or flags over file over defaults.
    let (resumed, mut opts) = steps::resolve_options(args, &online)?;
    if resumed.is_none() {
        opts.budget_pct = args.check_budget.map(crate::config::BudgetPct);
    }

    // 2. The output directory: never overwritten.
    let root = steps::output_dir(args, resumed.as_ref())?;

    // 3. One sweep per host. The lock is released when the process ends,
    // however it ends; `_lock` is declared before `guard`, so it is dropped
    // after the guard has restored the settings.
    let state_dir = crate::hoststate::state_dir();
    let _lock = steps::lock(&state_dir, &root)?;
    crate::backend::remove_stale_run_files(&std::env::temp_dir());

    // 4. What a driver that died left changed: restored before anything is
    // read from the host (or, with --leave-settings, taken over by this
    // sweep's guard, which restores the original values at its end).
    let (mut guard, leftover_lines, back_to_original) =
        steps::take_over_leftovers(args, &state_dir, &root, resumed.as_ref())?;

    // 5. The sample-rate ceiling, as found (after the leftovers).
    let ceiling = steps::max_rate_ceiling(&opts, args.raise_max_rate)?;

    // 6. The event, with the fallback made loud.
    let (event, mut warnings) = steps::open_event(&opts, resumed.as_ref(), &root)?;

    // 6b. The user's command: the warm-up runs check it before anything is
    // measured and tell how long one run lasts (the rings' size).
    if let Some(code) = steps::warm_up_command(&mut opts, resumed.is_none())? {
        return Ok(code);
    }
    // The profiler (`--profiler`) likewise: started once before anything
    // is measured, so one that cannot run stops the sweep with exit 2.
    if let Some(code) = steps::check_profiler(&opts, &online)? {
        return Ok(code);
    }

    // 6c. The largest run's rings and file descriptors against this host's
    // limits, before anything is changed or written.
    steps::check_budget(&opts, resumed.as_ref(), event, &online)?;

    pin_self_away_from(opts.cpu, &online);
    let interrupt = interrupt_flag();
    let backend = RealBackend {
        event,
        drain_cpu: other_cpu(opts.cpu, &online),
        online_cpus: online.clone(),
    };

    // 7. The host's facts, before this sweep changes anything: the manifest
    // keeps the values found.
    let host = resumed.is_none().then(steps::host_facts);
    warnings.extend(leftover_lines.iter().map(|l| format!("at start: {l}")));

    // 7b. A look at the measured CPU with no sampling (printed, judged
    // against the plan, kept in the manifest), unless skipped or the
    // resumed sweep has one.
    let host_look = match steps::look_at_host(args, &opts, resumed.as_ref(), &backend, &interrupt) {
        steps::Look::Interrupted => return Ok(ExitCode::from(130)),
        steps::Look::Done(look, look_warnings) => {
            warnings.extend(look_warnings);
            look.map(|l| *l)
        }
    };

    // 8. System settings: recorded in the state file, then changed; the
    // guard restores them whatever happens (Ctrl-C and SIGTERM included).
    warnings.extend(steps::raise_max_rate(&mut guard, &ceiling, &opts)?);

    // 9. Directory and manifest.
    let (dir, manifest, todo) = steps::open_results(
        &root,
        resumed,
        &opts,
        steps::Fresh {
            host,
            event,
            warnings,
            changes: guard.changes(),
            back_to_original: &back_to_original,
            host_look,
        },
    )?;

    // 10-12. Runs, restore, report.
    finish::run_restore_report(finish::Sweep {
        root: &root,
        backend,
        dir,
        manifest,
        todo: &todo,
        guard,
        interrupt,
        report: !args.no_report,
        raise_max_rate: args.raise_max_rate,
        quiet: args.quiet,
    })
}
