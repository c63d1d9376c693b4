//! The perf sysctls a sweep may change (`perf_event_max_sample_rate`),
//! read, changed and restored by [`SettingsGuard`] (also on Ctrl-C, and
//! after a crash through the state file).

use std::path::{Path, PathBuf};

use results_format::SettingChange;

use crate::hoststate::{LockOwner, StateFile, remove_state, write_state};
use crate::perf::error::MAX_RATE_PATH;

// Kept hand-written: procfs has no perf sysctls, and these are written too.
/// The sysctl bounding the CPU time perf's sampling interrupts may take
/// (the kernel lowers perf_event_max_sample_rate to keep under it).
pub const CPU_TIME_MAX_PERCENT_PATH: &str = "/proc/sys/kernel/perf_cpu_time_max_percent";

/// The two perf sysctls the kernel itself may change during a sweep
/// ("perf: interrupt took too long ... lowering kernel.perf_event_max_sample_rate").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerfLimits {
    /// perf_event_max_sample_rate (None: unreadable).
    pub max_sample_rate: Option<u64>,
    /// perf_cpu_time_max_percent (None: unreadable).
    pub cpu_time_max_percent: Option<u64>,
}

impl PerfLimits {
    /// Reads both sysctls.
    pub fn read() -> PerfLimits {
        PerfLimits {
            max_sample_rate: read_num(Path::new(MAX_RATE_PATH)).ok(),
            cpu_time_max_percent: read_num(Path::new(CPU_TIME_MAX_PERCENT_PATH)).ok(),
        }
    }
}

/// A host error, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    /// Reading or writing a system file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The host's state file (what the driver changed) could not be written.
    #[error("{0}")]
    State(String),
    /// A system file had unexpected content.
    #[error("{}: cannot parse {text:?}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The content.
        text: String,
    },
}

/// Reads a system file, the error naming it.
pub fn read_text(path: &Path) -> Result<String, SystemError> {
    std::fs::read_to_string(path).map_err(|source| SystemError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Reads a one-number file such as a sysctl.
pub fn read_num<T: std::str::FromStr>(path: &Path) -> Result<T, SystemError> {
    let text = read_text(path)?;
    text.trim().parse().map_err(|_| SystemError::Parse {
        path: path.to_owned(),
        text: text.trim().to_owned(),
    })
}

/// Changes system settings and writes the old values back when restored
/// or dropped (normal exit, error, panic unwinding). Ctrl-C and SIGTERM do
/// not kill the process: they set the interrupt flag and the sweep returns
/// normally, so the guard drops.
///
/// With [`SettingsGuard::persisted`], every change is first written to the
/// host's state file (`crate::hoststate`), before the setting itself, and
/// the file is removed once everything is restored: a `kill -9` leaves the
/// original values where the next driver command finds and restores them.
#[derive(Debug, Default)]
pub struct SettingsGuard {
    changes: Vec<SettingChange>,
    /// The state directory, and the state file's owner.
    persist: Option<(PathBuf, LockOwner)>,
}

impl SettingsGuard {
    /// A guard that records its changes in the state file of `state_dir`
    /// (see `crate::hoststate`) before making them. The caller must hold
    /// the sweep lock: the state file is this process's while it does.
    pub fn persisted(state_dir: &Path, results_dir: &Path) -> Self {
        SettingsGuard {
            changes: Vec::new(),
            persist: Some((
                state_dir.to_owned(),
                LockOwner::this_process(results_dir.display().to_string()),
            )),
        }
    }

    /// Rewrites the state file with the changes not yet restored (removes
    /// it when there are none).
    fn persist(&self, changes: &[SettingChange]) -> Result<(), SystemError> {
        let Some((dir, owner)) = &self.persist else {
            return Ok(());
        };
        let pending: Vec<SettingChange> = changes.iter().filter(|c| !c.restored).cloned().collect();
        let result = if pending.is_empty() {
            remove_state(dir)
        } else {
            write_state(
                dir,
                &StateFile {
                    owner: owner.clone(),
                    changes: pending,
                },
            )
        };
        result.map_err(|e| SystemError::State(e.to_string()))
    }

    /// Writes `new` to `path`, remembering the old content: recorded in the
    /// state file first (when persisted), so the original survives a kill.
    pub fn set(&mut self, path: &Path, new: &str) -> Result<(), SystemError> {
        let old = read_text(path)?;
        self.adopt(SettingChange {
            path: path.display().to_string(),
            old: old.trim().to_owned(),
            new: new.to_owned(),
            restored: false,
        })?;
        if let Err(source) = std::fs::write(path, new) {
            // Not changed after all: drop it from the record.
            self.changes.pop();
            if let Err(e) = self.persist(&self.changes) {
                tracing::error!("{e}");
            }
            return Err(SystemError::Io {
                path: path.to_owned(),
                source,
            });
        }
        tracing::warn!(
            "changed {}: {} -> {new} (restored at exit)",
            path.display(),
            old.trim()
        );
        Ok(())
    }

    /// Takes over a change made earlier (a leftover of a driver that died,
    /// kept with `--leave-settings`): recorded like one of this guard's own,
    /// so the original is written back when the guard restores.
    pub fn adopt(&mut self, change: SettingChange) -> Result<(), SystemError> {
        let mut next = self.changes.clone();
        next.push(change);
        self.persist(&next)?;
        self.changes = next;
        Ok(())
    }

    /// Writes every old value back, newest first. Returns the errors. The
    /// state file keeps only what could not be restored.
    pub fn restore(&mut self) -> Vec<SystemError> {
        let mut errors = Vec::new();
        for change in self.changes.iter_mut().rev().filter(|c| !c.restored) {
            match std::fs::write(&change.path, &change.old) {
                Ok(()) => {
                    change.restored = true;
                    tracing::info!("restored {} = {}", change.path, change.old);
                }
                Err(source) => {
                    tracing::error!("cannot restore {} to {}: {source}", change.path, change.old);
                    errors.push(SystemError::Io {
                        path: PathBuf::from(&change.path),
                        source,
                    });
                }
            }
        }
        if let Err(e) = self.persist(&self.changes) {
            tracing::error!("{e}");
            errors.push(e);
        }
        errors
    }

    /// The changes so far, for the manifest.
    pub fn changes(&self) -> &[SettingChange] {
        &self.changes
    }
}

impl Drop for SettingsGuard {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}
