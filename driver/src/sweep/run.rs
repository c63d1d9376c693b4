//! A prepared sweep run: its runs, the settings restored, and the
//! manifest's status written, here alone (`results::set_status`: running,
//! then complete or interrupted).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context;

use super::prepare::Prepared;
use crate::config::Subject;
use crate::exec::{ExecSummary, execute};
use crate::handler::HandlerInterval;
use crate::hoststate::SweepLock;
use crate::results::{SettingChange, Status, set_status};
use crate::system::settings::SystemError;

/// A sweep whose runs have stopped and whose settings are restored.
pub(crate) struct Ran {
    pub root: PathBuf,
    pub summary: ExecSummary,
    /// The settings that could not be restored.
    pub restore_errors: Vec<SystemError>,
    pub interrupt: Arc<AtomicBool>,
    /// Released when the report is written.
    pub lock: SweepLock,
}

/// Runs the plan, restores the settings (recording that in the manifest,
/// also when the runs stopped early) and sets the status.
pub(crate) fn run(p: Prepared) -> anyhow::Result<Ran> {
    let Prepared {
        opts,
        root,
        mut guard,
        mut backend,
        mut dir,
        mut manifest,
        todo,
        interrupt,
        lock,
    } = p;
    set_status(&mut manifest, Status::Running);
    dir.write_manifest(&manifest)?;
    // A command's runs last as long as it does; its duration_ns only sizes
    // the rings (twice its longest warm-up run).
    let length = if matches!(opts.subject, Subject::Command { .. }) {
        "the command's length".to_string()
    } else {
        format!("{} ms", opts.duration_ns / 1_000_000)
    };
    tracing::info!(
        "sweep into {}: {} runs of {length}, event {}, scope {}, seed {}",
        root.display(),
        todo.len(),
        backend.event,
        opts.scope.as_str(),
        opts.seed
    );
    let result = execute(
        &mut backend,
        &mut dir,
        &mut manifest,
        &todo,
        &interrupt,
        &write_intervals,
    );
    let restore_errors = guard.restore();
    manifest.settings_changed = merge_changes(&manifest.settings_changed, guard.changes());
    let status = match &result {
        Ok(s) if !s.interrupted => Status::Complete,
        _ => Status::Interrupted,
    };
    set_status(&mut manifest, status);
    let written = dir.write_manifest(&manifest);
    // The runs' own error comes first; a manifest that cannot be written
    // is the error otherwise.
    let summary = result.with_context(|| format!("sweep into {} stopped", root.display()))?;
    written?;
    for e in &restore_errors {
        tracing::error!("{e}");
    }
    Ok(Ran {
        root,
        summary,
        restore_errors,
        interrupt,
        lock,
    })
}

/// One run's handler intervals, as events Parquet.
fn write_intervals(path: &std::path::Path, iv: &[HandlerInterval]) -> Result<(), String> {
    let cpu: Vec<u32> = iv.iter().map(|i| i.cpu).collect();
    let entry: Vec<u64> = iv.iter().map(|i| i.entry_ns).collect();
    let dur: Vec<u64> = iv.iter().map(|i| i.duration_ns).collect();
    let src: Vec<&str> = iv.iter().map(|i| i.source.as_str()).collect();
    results_format::events::write_intervals_parquet(path, &cpu, &entry, &dur, &src)
        .map_err(|e| e.to_string())
}

/// The manifest's settings changes after a restore: earlier invocations'
/// (resume) kept, this invocation's replaced by their restored state.
fn merge_changes(recorded: &[SettingChange], now: &[SettingChange]) -> Vec<SettingChange> {
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
