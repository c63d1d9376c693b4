//! The end of `driver sweep`: the runs, the settings restored (and the
//! manifest saying so), and the report.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;

use crate::backend::RealBackend;
use crate::exec::{ExecSummary, Interval, execute};
use crate::plan::PlannedRun;
use crate::results::{Manifest, ResultsDir, SettingChange, Status};
use crate::system::settings::{SettingsGuard, SystemError};

/// A sweep ready to run: its directory and manifest written, the runs still
/// to do, and the guard holding the settings it changed.
pub(super) struct Sweep<'a> {
    pub root: &'a Path,
    pub backend: RealBackend,
    pub dir: ResultsDir,
    pub manifest: Manifest,
    pub todo: &'a [PlannedRun],
    pub guard: SettingsGuard,
    pub interrupt: Arc<AtomicBool>,
    /// Whether to write the analysis report at the end.
    pub report: bool,
    /// Whether `--raise-max-rate` was given: the resume command needs it
    /// again (it is an action, not a recorded setting).
    pub raise_max_rate: bool,
    /// For `driver check`: no answer box, no directory on stdout, no
    /// resume offered.
    pub quiet: bool,
}

/// Steps 10-12: runs the plan, restores the settings (recording that in
/// the manifest, also when the runs stopped early), then says how to
/// resume an interrupted sweep or writes the report. Prints the results
/// directory on stdout either way.
pub(super) fn run_restore_report(mut s: Sweep<'_>) -> anyhow::Result<ExitCode> {
    s.dir.write_manifest(&s.manifest)?;
    // A command's runs last as long as it does; its duration_ns only sizes
    // the rings (twice its longest warm-up run).
    let length = if s.manifest.options.command.is_some() {
        "the command's length".to_string()
    } else {
        format!("{} ms", s.manifest.options.duration_ns / 1_000_000)
    };
    tracing::info!(
        "sweep into {}: {} runs of {length}, event {}, scope {}, seed {}",
        s.root.display(),
        s.todo.len(),
        s.backend.event,
        s.manifest.options.scope.as_str(),
        s.manifest.options.seed
    );

    // 10. Runs.
    let result = execute(
        &mut s.backend,
        &mut s.dir,
        &mut s.manifest,
        s.todo,
        &s.interrupt,
        &write_intervals,
    );

    // 11. Restore, and record that we did.
    let restore_errors = restore(&mut s, result.is_err())?;
    let summary = result.with_context(|| format!("sweep into {} stopped", s.root.display()))?;
    for e in &restore_errors {
        tracing::error!("{e}");
    }
    if summary.interrupted {
        if s.quiet {
            eprintln!(
                "stopped ({}) after {} runs in {}: nothing was judged",
                summary.stop_reason.as_deref().unwrap_or("interrupted"),
                summary.recorded,
                s.root.display()
            );
            return Ok(stopped_code(&s.interrupt));
        }
        return Ok(stopped(&summary, s.root, s.raise_max_rate, &s.interrupt));
    }
    tracing::info!(
        "sweep done: {} runs, {} failed, {} noisy",
        summary.recorded,
        summary.failed,
        summary.noisy
    );

    // 12. Report.
    let mut code = if restore_errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    if s.report {
        match report_step(s.root, analysis::report_dir) {
            Ok(answer) => {
                // The answer first, on stderr: stdout keeps the directory.
                for line in answer.iter().filter(|_| !s.quiet) {
                    eprintln!("{line}");
                }
                tracing::info!("report in {}", s.root.join("report").display());
            }
            Err(why) => {
                tracing::error!("{why}");
                code = ExitCode::from(REPORT_FAILED);
            }
        }
    }
    if !s.quiet {
        println!("{}", s.root.display());
    }
    Ok(code)
}

/// Exit status of a sweep whose runs are all recorded and whose settings
/// are restored but whose report failed (documented in `driver sweep
/// --help`): the result set is complete, and `analysis report DIR` makes
/// the report again.
pub const REPORT_FAILED: u8 = 4;

/// One run's handler intervals, as events Parquet.
fn write_intervals(path: &Path, iv: &[Interval]) -> Result<(), String> {
    let cpu: Vec<u32> = iv.iter().map(|i| i.cpu).collect();
    let entry: Vec<u64> = iv.iter().map(|i| i.entry_ns).collect();
    let dur: Vec<u64> = iv.iter().map(|i| i.duration_ns).collect();
    let src: Vec<&str> = iv.iter().map(|i| i.source).collect();
    results_format::events::write_intervals_parquet(path, &cpu, &entry, &dur, &src)
        .map_err(|e| e.to_string())
}

/// Step 11: the settings restored and the manifest rewritten with them
/// (and, when the runs ended in an error, as interrupted). The restore
/// errors are returned to be logged; a manifest that cannot be written is
/// an error unless the runs' own error comes first (the caller reports
/// that one).
fn restore(s: &mut Sweep<'_>, failed: bool) -> anyhow::Result<Vec<SystemError>> {
    let restore_errors = s.guard.restore();
    s.manifest.settings_changed = merge_changes(&s.manifest.settings_changed, s.guard.changes());
    if failed {
        s.manifest.status = Status::Interrupted;
        s.manifest.ended_at =
            Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    }
    let written = s.dir.write_manifest(&s.manifest);
    if !failed {
        written?;
    }
    Ok(restore_errors)
}

/// An interrupted sweep: how to finish it, the directory on stdout, and
/// exit status 130 after Ctrl-C (1 after too many failed runs).
fn stopped(
    summary: &ExecSummary,
    root: &Path,
    raise_max_rate: bool,
    interrupt: &AtomicBool,
) -> ExitCode {
    eprintln!(
        "sweep stopped ({}): {} runs recorded in {}; finish it with:\n  {}",
        summary.stop_reason.as_deref().unwrap_or("interrupted"),
        summary.recorded,
        root.display(),
        resume_command(root, raise_max_rate)
    );
    println!("{}", root.display());
    stopped_code(interrupt)
}

/// 130 after Ctrl-C or SIGTERM, 1 after too many failed runs.
fn stopped_code(interrupt: &AtomicBool) -> ExitCode {
    if interrupt.load(Ordering::SeqCst) {
        ExitCode::from(130)
    } else {
        ExitCode::FAILURE
    }
}

/// Step 12: the analysis report through `make` (`analysis::report_dir`):
/// the answer box's lines, or what went wrong (an error, or a panic caught
/// here, at the boundary: the measurements are never lost to a bug in the
/// report) with the command that makes the report again.
fn report_step(
    root: &Path,
    make: impl FnOnce(&Path) -> Result<analysis::report::Written, analysis::AnalysisError>,
) -> Result<Vec<String>, String> {
    let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| make(root)));
    let why = match made {
        Ok(Ok(written)) => return Ok(written.answer),
        Ok(Err(e)) => results_format::message_chain(&e),
        Err(panic) => format!(
            "the analysis panicked ({}): a bug, please report it with this results directory",
            results_format::panic_message(panic.as_ref())
        ),
    };
    Err(format!(
        "the report failed: {why}. Every run is recorded in {dir} (complete); make the report \
         again with `analysis report {dir}` (in a checkout: `cargo run --release -p analysis -- \
         report {dir}`)",
        dir = root.display()
    ))
}

/// The manifest's settings changes after a restore: earlier invocations'
/// (resume) kept, this invocation's replaced by their restored state.
fn merge_changes(recorded: &[SettingChange], now: &[SettingChange]) -> Vec<SettingChange> {
    // Earlier invocations' changes (resume) stay; this invocation's are
    // replaced by their restored state.
    let mut out: Vec<_> = recorded
        .iter()
        .filter(|c| {
            !now.iter()
                .any(|n| n.path == c.path && n.old == c.old && n.new == c.new && !c.restored)
        })
        .cloned()
        .collect();
    out.extend(now.iter().cloned());
    out
}

/// The command that finishes a stopped sweep: `--resume DIR`, and the one
/// action flag it needs again (the settings are recorded in the manifest).
fn resume_command(root: &Path, raise_max_rate: bool) -> String {
    let mut command = format!("driver sweep --resume {}", root.display());
    if raise_max_rate {
        command.push_str(" --raise-max-rate");
    }
    command
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A report step that panics (as statrs did on a starved 100 kHz set)
    /// or fails leaves the sweep's outcome to the caller: the error names
    /// the cause, the results directory and the command that re-makes the
    /// report; a report that works gives its answer box.
    #[test]
    fn a_failing_report_step_says_how_to_make_it_again() {
        let root = Path::new("results/20261126T2110Z-vm");
        let e = report_step(root, |_| {
            panic!("called `Result::unwrap()` on an `Err` value")
        })
        .unwrap_err();
        assert!(e.contains("the analysis panicked"), "{e}");
        assert!(e.contains("`Result::unwrap()`"), "{e}");
        assert!(
            e.contains("`analysis report results/20261126T2110Z-vm`"),
            "{e}"
        );
        let e = report_step(root, |p| {
            Err(analysis::AnalysisError::NoSuchDirectory {
                path: p.to_path_buf(),
            })
        })
        .unwrap_err();
        assert!(
            e.starts_with("the report failed: ") && e.contains("complete"),
            "{e}"
        );
        let ok = report_step(root, |p| {
            Ok(analysis::report::Written {
                dir: p.join("report"),
                answer: vec!["+- box -+".into()],
            })
        });
        assert_eq!(ok, Ok(vec!["+- box -+".to_string()]));
    }

    #[test]
    fn the_resume_command_keeps_raise_max_rate() {
        let root = Path::new("results/x");
        assert_eq!(
            resume_command(root, false),
            "driver sweep --resume results/x"
        );
        assert_eq!(
            resume_command(root, true),
            "driver sweep --resume results/x --raise-max-rate"
        );
    }
}
