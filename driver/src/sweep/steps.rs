//! The steps of `driver sweep` that `run_sweep` calls in order (its
//! numbered comments name them).

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::{SweepFlags, git_revision, has_settings, hostname, usage};
use crate::config::{ExperimentFile, SweepOptions};
use crate::plan::{PlannedRun, build_plan};
use crate::results::{FORMAT_VERSION, Manifest, ResultsDir, SettingChange, Status};
use crate::sampler::EventKind;
use crate::system::SettingsGuard;

/// Step 1: the recorded options and manifest of `--resume DIR`, or flags
/// over experiment file over defaults.
pub(super) fn resolve_options(
    args: &SweepFlags,
    online: &[u32],
) -> anyhow::Result<(Option<(PathBuf, Manifest)>, SweepOptions)> {
    let resumed: Option<(PathBuf, Manifest)> = match &args.resume {
        Some(dir) => {
            if has_settings(args) {
                return Err(usage(format!(
                    "--resume {} reuses the recorded options, plan and seed: drop the other settings flags",
                    dir.display()
                )));
            }
            let m = crate::results::read_manifest(dir)
                .map_err(|e| usage(format!("cannot resume {}: {e}", dir.display())))?;
            Some((dir.clone(), m))
        }
        None => None,
    };
    let opts = match &resumed {
        Some((_, m)) => m.options.clone(),
        None => {
            let file = match &args.experiment {
                Some(p) => Some(ExperimentFile::load(p).map_err(usage)?),
                None => None,
            };
            let default_seed = u64::try_from(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() % u128::from(u64::MAX))
                    .unwrap_or(0),
            )
            .unwrap_or(0);
            SweepOptions::resolve(
                &args.settings,
                file.as_ref().zip(args.experiment.as_deref()),
                online,
                default_seed,
            )
            .map_err(usage)?
        }
    };
    Ok((resumed, opts))
}

/// Step 2: the results directory (the resumed one, `--out`, or
/// results/<UTC time>-<host>), never one that exists.
pub(super) fn output_dir(
    args: &SweepFlags,
    resumed: Option<&(PathBuf, Manifest)>,
) -> anyhow::Result<PathBuf> {
    let root = match (resumed, &args.out) {
        (Some((dir, _)), _) => dir.clone(),
        (None, Some(out)) => out.clone(),
        (None, None) => PathBuf::from("results").join(format!(
            "{}-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
            hostname()
        )),
    };
    if resumed.is_none() && root.exists() {
        return Err(usage(format!(
            "output directory {} already exists; results are never overwritten: give a new --out, or --resume {} to finish it",
            root.display(),
            root.display()
        )));
    }
    Ok(root)
}

/// Step 4: settings a driver that died left changed, restored (or, with
/// `--leave-settings`, adopted by this sweep's guard); the lines said about
/// them, and the resumed sweep's changes that are back at their original.
pub(super) fn take_over_leftovers(
    args: &SweepFlags,
    state_dir: &Path,
    root: &Path,
    resumed: Option<&(PathBuf, Manifest)>,
) -> anyhow::Result<(SettingsGuard, Vec<String>, Vec<SettingChange>)> {
    let mut guard = SettingsGuard::persisted(state_dir, root);
    let on_leftover = if args.leave_settings {
        crate::hoststate::OnLeftover::Leave
    } else {
        crate::hoststate::OnLeftover::Restore
    };
    let leftovers = crate::hoststate::handle_leftovers_locked(state_dir, on_leftover).context(
        "refusing to start: the record of settings a previous driver changed is unreadable",
    )?;
    let mut leftover_lines = leftovers.lines();
    for item in &leftovers.items {
        if item.action == crate::hoststate::LeftoverAction::Left {
            guard
                .adopt(item.change.clone())
                .context("cannot take over a leftover setting")?;
            leftover_lines.push(format!(
                "{} stays at {} for this sweep and is restored to its original {} when it ends",
                item.change.path, item.change.new, item.change.old
            ));
        }
    }
    for line in &leftover_lines {
        eprintln!("driver: {line}");
    }
    // Changes an earlier invocation of this sweep recorded as not restored
    // (it was killed) whose setting has its original value again: restored
    // just now, or by another driver command since.
    let back_to_original: Vec<SettingChange> = match resumed {
        Some((_, m)) => m
            .settings_changed
            .iter()
            .filter(|c| {
                !c.restored && std::fs::read_to_string(&c.path).is_ok_and(|v| v.trim() == c.old)
            })
            .cloned()
            .collect(),
        None => Vec::new(),
    };
    Ok((guard, leftover_lines, back_to_original))
}

/// What a new sweep's manifest starts with, and what a resumed one adds.
pub(super) struct Fresh<'a> {
    /// The host's facts (None on resume).
    pub host: Option<serde_json::Value>,
    /// The sampling event opened.
    pub event: EventKind,
    /// Warnings so far.
    pub warnings: Vec<String>,
    /// Settings this invocation changed.
    pub changes: &'a [SettingChange],
    /// The resumed sweep's changes back at their original value.
    pub back_to_original: &'a [SettingChange],
}

/// Step 9: the results directory created (or reopened on resume), its
/// manifest, and the runs still to make.
pub(super) fn open_results(
    root: &Path,
    resumed: Option<(PathBuf, Manifest)>,
    opts: &SweepOptions,
    fresh: Fresh<'_>,
) -> anyhow::Result<(ResultsDir, Manifest, Vec<PlannedRun>)> {
    let Fresh {
        host,
        event,
        warnings,
        changes,
        back_to_original,
    } = fresh;
    let command: Vec<String> = std::env::args().collect();
    let (dir, manifest, todo) = match resumed {
        Some((_, mut m)) => {
            let done = crate::results::read_runs(root)?;
            let todo = crate::results::missing_runs(&m.plan, &done);
            tracing::info!(
                "resuming {}: {} of {} runs to go",
                root.display(),
                todo.len(),
                m.plan.len()
            );
            m.status = Status::Running;
            m.ended_at = None;
            // A change of the interrupted invocation that is back at its
            // original value: its record says so; its `old` stays the value
            // found before the first change.
            for c in m.settings_changed.iter_mut().filter(|c| !c.restored) {
                if back_to_original.contains(c) {
                    c.restored = true;
                }
            }
            m.warnings.extend(warnings);
            m.warnings.push(format!(
                "resumed at {}",
                chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ));
            m.settings_changed.extend(changes.iter().cloned());
            m.command.push("--".into());
            m.command.extend(command);
            let dir = ResultsDir::open_existing(root)?;
            (dir, m, todo)
        }
        None => {
            let host = host.unwrap_or(serde_json::Value::Null);
            let plan = build_plan(opts);
            let m = Manifest {
                format_version: FORMAT_VERSION,
                tool_version: env!("CARGO_PKG_VERSION").to_owned(),
                git_revision: git_revision(),
                status: Status::Running,
                started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                ended_at: None,
                host,
                seed: opts.seed,
                event: event.name().to_owned(),
                plan: plan.clone(),
                options: opts.clone(),
                warnings,
                settings_changed: changes.to_vec(),
                command,
            };
            let dir = ResultsDir::create(root)?;
            (dir, m, plan)
        }
    };
    Ok((dir, manifest, todo))
}
