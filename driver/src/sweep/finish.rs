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
    if s.report && !report(s.root) {
        code = ExitCode::FAILURE;
    }
    println!("{}", s.root.display());
    Ok(code)
}

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
    if interrupt.load(Ordering::SeqCst) {
        ExitCode::from(130)
    } else {
        ExitCode::FAILURE
    }
}

/// Step 12: the analysis report; false (logged, the data kept) when it
/// fails.
fn report(root: &Path) -> bool {
    match analysis::report_dir(root) {
        Ok(report) => {
            // The answer first, on stderr: stdout keeps the directory.
            for line in &report.answer {
                eprintln!("{line}");
            }
            tracing::info!("report in {}", report.dir.display());
            true
        }
        Err(e) => {
            tracing::error!(
                "the report failed (the data in {} is kept): {e}",
                root.display()
            );
            false
        }
    }
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
mod tests {
    use super::*;

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
