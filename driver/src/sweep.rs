//! `driver sweep`: prepare (options, plan, lock, settings, results
//! directory: `prepare.rs`), run (the runs through the real backend, the
//! settings restored, the status: `run.rs`), report (`report.rs`).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::{BudgetPct, FlagSettings};

mod preflight;
mod prepare;
mod report;
mod run;
mod steps;

pub use report::REPORT_FAILED;
pub(crate) use report::{Summarised, summarise};
pub(crate) use run::Ran;

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

/// Runs `driver sweep`: measure, then report.
pub fn cli(args: &SweepFlags) -> anyhow::Result<ExitCode> {
    match measure(args, None) {
        Ok(Ok(ran)) => Ok(report::report(ran, !args.no_report, args.raise_max_rate)),
        Ok(Err(code)) => Ok(code),
        Err(e) if e.is::<UsageError>() || e.is::<BusyError>() => {
            eprintln!("error: {e}");
            Ok(ExitCode::from(2))
        }
        Err(e) => Err(e),
    }
}

fn has_settings(args: &SweepFlags) -> bool {
    args.settings.any() || args.experiment.is_some() || args.out.is_some()
}

/// A new result set's folder name: `<UTC time>-<host>`.
pub(crate) fn set_name() -> String {
    let uname = rustix::system::uname();
    let host = uname.nodename().to_string_lossy();
    format!("{}-{host}", chrono::Utc::now().format("%Y%m%dT%H%M%SZ"))
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
    let others = online.iter().copied().filter(|&c| c != cpu);
    if online.len() > 1
        && let Err(e) = crate::system::process::pin_to(others)
    {
        tracing::warn!("cannot keep the driver off CPU {cpu}: {e}");
    }
}

/// A sweep prepared and run: its options resolved once (with the loss
/// budget `driver check` judges against), the plan built on them, its
/// runs made and the settings restored. `Err(code)` when it stopped
/// before its first run (Ctrl-C).
pub(crate) fn measure(
    args: &SweepFlags,
    budget: Option<BudgetPct>,
) -> anyhow::Result<Result<Ran, ExitCode>> {
    match prepare::prepare(args, budget)? {
        prepare::Prepare::Ready(p) => run::run(*p).map(Ok),
        prepare::Prepare::Stopped(code) => Ok(Err(code)),
    }
}
