//! What `prepare` does before a sweep's first run, one function each:
//! the output directory, the lock, the settings a killed driver left, the
//! look at the host, the settings raised, and the results directory
//! opened (the checks that refuse before anything is measured are
//! `preflight.rs`'s).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use super::preflight::Ceiling;
use super::{SweepFlags, git_revision, set_name, usage};
use crate::config::SweepOptions;
use crate::hoststate::OnLeftover::{Leave, Restore};
use crate::hoststate::{HostStateError, SweepLock};
use crate::perf::error::MAX_RATE_PATH;
use crate::plan::PlannedRun;
use crate::results::{FORMAT_VERSION, Manifest, ResultsDir, SettingChange, Status};
use crate::sampler::EventKind;
use crate::system::settings::SettingsGuard;
use results_format::HostLook;

/// An interrupted sweep being finished (`--resume DIR`).
pub(super) struct Resumed {
    /// Its directory.
    pub dir: PathBuf,
    /// Its manifest as recorded.
    pub manifest: Manifest,
}

/// The results directory (the resumed one, `--out`, or
/// `results/<UTC time>-<host>`), never one that exists.
pub(super) fn output_dir(args: &SweepFlags, resumed: Option<&Resumed>) -> anyhow::Result<PathBuf> {
    let root = match (resumed, &args.out) {
        (Some(r), _) => r.dir.clone(),
        (None, Some(out)) => out.clone(),
        (None, None) => PathBuf::from("results").join(set_name()),
    };
    if resumed.is_none() && root.exists() {
        // A resume only where there is a sweep to finish.
        let unfinished =
            crate::results::read_manifest(&root).is_ok_and(|m| m.status != Status::Complete);
        let resume = if unfinished {
            format!(", or --resume {} to finish the sweep in it", root.display())
        } else {
            String::new()
        };
        return Err(usage(format!(
            "output directory {} already exists; results are never overwritten: give a new --out{resume}",
            root.display(),
        )));
    }
    Ok(root)
}

/// What a driver that died left changed, taken over.
pub(super) struct Leftovers {
    /// This sweep's guard (holding the leftovers it adopted).
    pub guard: SettingsGuard,
    /// What was said about them, for the manifest.
    pub lines: Vec<String>,
    /// The resumed sweep's changes that are back at their original value.
    pub back_to_original: Vec<SettingChange>,
}

/// Settings a driver that died left changed, restored (or, with
/// `--leave-settings`, adopted by this sweep's guard).
pub(super) fn take_over_leftovers(
    args: &SweepFlags,
    state_dir: &Path,
    root: &Path,
    resumed: Option<&Resumed>,
) -> anyhow::Result<Leftovers> {
    let mut guard = SettingsGuard::persisted(state_dir, root);
    let on_leftover = if args.leave_settings { Leave } else { Restore };
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
    let back_to_original = resumed
        .into_iter()
        .flat_map(|r| &r.manifest.settings_changed)
        .filter(|c| {
            !c.restored && std::fs::read_to_string(&c.path).is_ok_and(|v| v.trim() == c.old)
        })
        .cloned()
        .collect();
    Ok(Leftovers {
        guard,
        lines: leftover_lines,
        back_to_original,
    })
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
    /// The look at the host (None: skipped, failed, or the resumed
    /// manifest's stays).
    pub host_look: Option<HostLook>,
}

/// The results directory created (or reopened on resume) with its manifest
/// (the status is `run`'s to set), and the runs still to make: all of
/// `plan` for a new sweep, those without a row for a resumed one.
pub(super) fn open_results(
    root: &Path,
    resumed: Option<Resumed>,
    opts: &SweepOptions,
    plan: Vec<PlannedRun>,
    fresh: Fresh<'_>,
) -> anyhow::Result<(ResultsDir, Manifest, Vec<PlannedRun>)> {
    let command: Vec<String> = std::env::args().collect();
    Ok(match resumed {
        Some(Resumed {
            manifest: mut m, ..
        }) => {
            let done = crate::results::read_runs(root)?;
            let todo = crate::results::missing_runs(&m.plan, &done);
            tracing::info!(
                "resuming {}: {} of {} runs to go",
                root.display(),
                todo.len(),
                m.plan.len()
            );
            // A change of the interrupted invocation that is back at its
            // original value: its record says so; its `old` stays the value
            // found before the first change.
            for c in m.settings_changed.iter_mut() {
                c.restored |= fresh.back_to_original.contains(c);
            }
            // What the first invocation already said (the event's
            // fallback, a raised rate limit) is not said twice.
            for w in fresh.warnings {
                if !m.warnings.contains(&w) {
                    m.warnings.push(w);
                }
            }
            m.warnings
                .push(format!("resumed at {}", crate::hoststate::now_rfc3339()));
            m.settings_changed.extend(fresh.changes.iter().cloned());
            if m.host_look.is_none() {
                m.host_look = fresh.host_look;
            }
            m.command.push("--".into());
            m.command.extend(command);
            let dir = ResultsDir::open_existing(root)?;
            (dir, m, todo)
        }
        None => {
            let m = Manifest {
                format_version: FORMAT_VERSION,
                tool_version: env!("CARGO_PKG_VERSION").to_owned(),
                git_revision: git_revision(),
                status: Status::Unknown,
                started_at: crate::hoststate::now_rfc3339(),
                ended_at: None,
                host: fresh.host.unwrap_or(serde_json::Value::Null),
                seed: opts.seed,
                event: fresh.event.as_str().to_owned(),
                plan: plan.clone(),
                options: opts.clone(),
                warnings: fresh.warnings,
                settings_changed: fresh.changes.to_vec(),
                command,
                host_look: fresh.host_look,
            };
            let dir = ResultsDir::create(root)?;
            (dir, m, plan)
        }
    })
}

/// perf_event_max_sample_rate raised to the highest frequency when the
/// ceiling says so, through the guard (recorded in the state
/// file first, restored at the end); the manifest's warning saying so.
pub(super) fn raise_max_rate(
    guard: &mut SettingsGuard,
    ceiling: &Ceiling,
    opts: &SweepOptions,
) -> anyhow::Result<Option<String>> {
    if !ceiling.raise {
        return Ok(None);
    }
    guard
        .set(Path::new(MAX_RATE_PATH), &opts.max_rate_hz().to_string())
        .context("--raise-max-rate")?;
    Ok(Some(format!(
        "raised perf_event_max_sample_rate from {} to {} for the sweep",
        ceiling.found.unwrap_or(0),
        opts.max_rate_hz()
    )))
}

/// The host's one sweep lock, held by this process (a [`super::BusyError`]
/// naming the sweep that holds it when busy).
pub(super) fn lock(state_dir: &Path, root: &Path) -> anyhow::Result<SweepLock> {
    match SweepLock::acquire(state_dir, root) {
        Ok(lock) => Ok(lock),
        Err(e @ HostStateError::Busy { .. }) => {
            Err(anyhow::Error::new(super::BusyError(e.to_string())))
        }
        Err(e) => Err(anyhow::Error::new(e).context("cannot take the sweep lock")),
    }
}

/// The host's facts (`driver probe`'s), before this sweep changes
/// anything, for the manifest.
pub(super) fn host_facts() -> serde_json::Value {
    serde_json::to_value(crate::probe::probe_host()).unwrap_or(serde_json::Value::Null)
}

/// The look at the host, printed on stderr with its warnings,
/// unless `--no-host-look` or the resumed manifest has one (a resume is
/// the same sweep; its first look stays its record, as its host facts
/// do). A look that fails is a warning, and the sweep goes on without it.
/// The look (None: skipped, failed, or the resumed sweep has one) and the
/// warnings for the manifest; `Err` on Ctrl-C during the look (nothing was
/// written).
pub(super) fn look_at_host(
    args: &SweepFlags,
    opts: &SweepOptions,
    resumed: Option<&Resumed>,
    backend: &crate::backend::RealBackend,
    interrupt: &std::sync::atomic::AtomicBool,
) -> Result<(Option<HostLook>, Vec<String>), ExitCode> {
    if args.no_host_look {
        return Ok((None, Vec::new()));
    }
    if let Some(Resumed { dir, manifest: m }) = resumed {
        if m.host_look.is_some() {
            tracing::info!(
                "the resumed sweep's manifest has its look at the host: not looking again"
            );
            return Ok((None, Vec::new()));
        }
        // A look after some runs is no look "before the sweep", which is
        // what the report calls it: only a sweep stopped before its first
        // run is looked at on resume.
        if crate::results::read_runs(dir).is_ok_and(|rows| !rows.is_empty()) {
            tracing::info!(
                "the resumed sweep has no look at the host and already has runs: not looking now \
                 (a look is taken before the first run only)"
            );
            return Ok((None, Vec::new()));
        }
    }
    tracing::info!(
        "looking at CPU {} for {} s with no sampling (--no-host-look skips this)",
        opts.cpu,
        crate::plan::judge::LOOK_NS / 1_000_000_000
    );
    match backend.look_at_host(opts, interrupt) {
        Ok(m) => {
            let look = crate::plan::judge::judge(&m, opts);
            for line in crate::plan::judge::lines(&look) {
                eprintln!("{line}");
            }
            for w in &look.warnings {
                tracing::warn!("{w}");
            }
            let warnings = look
                .warnings
                .iter()
                .map(|w| format!("host look: {w}"))
                .collect();
            Ok((Some(look), warnings))
        }
        Err(crate::exec::RunError::Interrupted) => {
            eprintln!("interrupted during the look at the host: nothing was written");
            Err(ExitCode::from(130))
        }
        Err(e) => {
            let w = format!(
                "the look at the host failed ({e}); the sweep goes on without it (host_look is null)"
            );
            tracing::warn!("{w}");
            Ok((None, vec![w]))
        }
    }
}
