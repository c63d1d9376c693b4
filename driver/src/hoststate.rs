//! What the driver changed on this host, kept where the next invocation
//! finds it, and the host-wide lock that lets one sweep run at a time.
//!
//! Both live in one directory, [`DEFAULT_STATE_DIR`] (`/run/perf-overhead`,
//! a tmpfs: a reboot resets both the sysctls and the record of them), or
//! the directory named by [`STATE_DIR_ENV`] (tests):
//!
//! - `state.json` ([`StateFile`]): every setting a sweep changed, with the
//!   value found before the change. It is written *before* the setting is
//!   changed and removed once every value is written back, so after a
//!   `kill -9` (or a power cut of the process in any other way) it says what
//!   to undo. Every driver command that starts looks for it
//!   ([`handle_leftovers`]): with no sweep running it is a leftover, and the
//!   original values are written back (or, with `--leave-settings`, left as
//!   they are and reported), on stderr either way.
//! - `sweep.lock` ([`SweepLock`]): `flock`ed by a running sweep, holding its
//!   pid and results directory ([`LockOwner`]). The kernel drops the lock
//!   when the process dies, however it dies, so a stale lock file never
//!   blocks anybody; a second sweep refuses with the first one's pid and
//!   directory. probe and analysis take no lock (probe only looks, without
//!   waiting, to tell a leftover from a running sweep's changes).

use std::fs::{File, OpenOptions};
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use results_format::SettingChange;

/// The environment variable that moves the state directory (tests).
pub const STATE_DIR_ENV: &str = "PERF_OVERHEAD_STATE_DIR";
/// Where the state file and the lock live unless [`STATE_DIR_ENV`] is set.
pub const DEFAULT_STATE_DIR: &str = "/run/perf-overhead";
/// The state file's name in the state directory.
pub const STATE_FILE: &str = "state.json";
/// The lock file's name in the state directory.
pub const LOCK_FILE: &str = "sweep.lock";

/// The state directory: `$PERF_OVERHEAD_STATE_DIR` or [`DEFAULT_STATE_DIR`].
pub fn state_dir() -> PathBuf {
    match std::env::var_os(STATE_DIR_ENV) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(DEFAULT_STATE_DIR),
    }
}

/// An error of the state file or the lock, naming the file and the fix.
#[derive(Debug, thiserror::Error)]
pub enum HostStateError {
    /// The state directory or one of its files could not be used.
    #[error(
        "{}: {source}; the driver records there what it changes on the host and which sweep runs \
         (run as root, or set {STATE_DIR_ENV} to a writable directory that every driver on this \
         host uses)",
        path.display()
    )]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The state file is not what this driver writes.
    #[error(
        "{}: not a driver state file ({reason}); it lists settings a driver changed: read it, put \
         the `old` values back by hand if needed, then remove it",
        path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Why it did not parse.
        reason: String,
    },
    /// Another sweep holds the lock.
    #[error(
        "another sweep is running on this host: pid {}, results {}, started {} (lock {}); \
         wait for it to finish, or stop it with `kill -INT {}` (it restores its settings)",
        owner.as_ref().map_or("unknown".to_string(), |o| o.pid.to_string()),
        owner.as_ref().map_or("unknown", |o| o.results_dir.as_str()),
        owner.as_ref().map_or("unknown", |o| o.started_at.as_str()),
        path.display(),
        owner.as_ref().map_or("PID".to_string(), |o| o.pid.to_string())
    )]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// What the lock file says about its holder (None while it is
        /// being written).
        owner: Option<LockOwner>,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> HostStateError + '_ {
    move |source| HostStateError::Io {
        path: path.to_owned(),
        source,
    }
}

/// `state.json`: the settings one sweep changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateFile {
    /// The sweep that changed them (its pid, results directory, and when
    /// the first change was recorded): the same fields as `sweep.lock`'s.
    #[serde(flatten)]
    pub owner: LockOwner,
    /// Each setting, with the value found before the first change (`old`)
    /// and the value written (`new`).
    pub changes: Vec<SettingChange>,
}

/// Writes a file through a temporary in the same directory and a rename
/// (the results directory's manifest is written the same way).
pub use results_format::write_atomic;

fn ensure_dir(dir: &Path) -> Result<(), HostStateError> {
    std::fs::create_dir_all(dir).map_err(io_err(dir))
}

/// Writes the state file (atomically), creating the directory.
pub fn write_state(dir: &Path, state: &StateFile) -> Result<(), HostStateError> {
    ensure_dir(dir)?;
    let path = dir.join(STATE_FILE);
    let mut text = serde_json::to_vec_pretty(state).map_err(|e| HostStateError::Corrupt {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    text.push(b'\n');
    write_atomic(&path, &text).map_err(io_err(&path))
}

/// Reads the state file; None when there is none.
pub fn read_state(dir: &Path) -> Result<Option<StateFile>, HostStateError> {
    let path = dir.join(STATE_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(&path)(e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| HostStateError::Corrupt {
            path,
            reason: e.to_string(),
        })
}

/// Removes the state file (nothing left to undo).
pub fn remove_state(dir: &Path) -> Result<(), HostStateError> {
    let path = dir.join(STATE_FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(&path)(e)),
    }
}

/// What `sweep.lock` says about the sweep holding it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockOwner {
    /// Its pid.
    pub pid: u32,
    /// Its results directory.
    pub results_dir: String,
    /// When it took the lock (UTC RFC 3339).
    pub started_at: String,
}

impl LockOwner {
    /// This process, for the results in `results_dir`, from now.
    pub fn this_process(results_dir: String) -> LockOwner {
        LockOwner {
            pid: std::process::id(),
            results_dir,
            started_at: now_rfc3339(),
        }
    }
}

/// The host-wide sweep lock, held until dropped (or the process dies).
#[derive(Debug)]
pub struct SweepLock {
    file: File,
}

/// Now, in UTC RFC 3339 to the second (the state and lock files' times).
pub(crate) fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn open_lock(dir: &Path) -> Result<(File, PathBuf), HostStateError> {
    ensure_dir(dir)?;
    let path = dir.join(LOCK_FILE);
    // Rust opens with O_CLOEXEC: the workload children never hold the lock.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io_err(&path))?;
    Ok((file, path))
}

/// Tries to take the lock without waiting: Ok(Some) when taken, Ok(None)
/// when another process holds it.
fn try_flock(file: &File, path: &Path) -> Result<bool, HostStateError> {
    match rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(io_err(path)(e.into())),
    }
}

/// Reads the lock file's owner record (None when empty or unreadable).
pub fn read_owner(dir: &Path) -> Option<LockOwner> {
    let text = std::fs::read_to_string(dir.join(LOCK_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

impl SweepLock {
    /// Takes the lock for a sweep writing into `results_dir`, or says who
    /// holds it ([`HostStateError::Busy`]).
    pub fn acquire(dir: &Path, results_dir: &Path) -> Result<SweepLock, HostStateError> {
        let (mut file, path) = open_lock(dir)?;
        if !try_flock(&file, &path)? {
            return Err(HostStateError::Busy {
                owner: read_owner(dir),
                path,
            });
        }
        let absolute = std::path::absolute(results_dir).unwrap_or_else(|_| results_dir.to_owned());
        let owner = LockOwner::this_process(absolute.display().to_string());
        let text = serde_json::to_string(&owner).unwrap_or_default();
        file.set_len(0).map_err(io_err(&path))?;
        file.rewind().map_err(io_err(&path))?;
        writeln!(file, "{text}").map_err(io_err(&path))?;
        file.sync_data().map_err(io_err(&path))?;
        Ok(SweepLock { file })
    }
}

impl Drop for SweepLock {
    fn drop(&mut self) {
        // Empty the owner record before the lock goes (closing the file
        // releases it); the file stays: removing a flock file races with a
        // process that has just opened it.
        let _ = self.file.set_len(0);
    }
}

/// What was done about one leftover setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeftoverAction {
    /// It still had the value the driver wrote: the original was written back.
    Restored,
    /// It already had its original value again (the driver died between
    /// recording the change and making it, or someone restored it).
    AlreadyOriginal,
    /// It has a third value (someone, or the kernel, changed it since):
    /// left as it is.
    ChangedSince {
        /// The value found now.
        current: String,
    },
    /// Left as it is, as asked (`--leave-settings`).
    Left,
    /// Writing the original back failed.
    Failed {
        /// The OS error.
        error: String,
    },
    /// A sweep is running: its change, not a leftover.
    Running,
}

/// One leftover setting and what was done about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    /// The change as recorded.
    pub change: SettingChange,
    /// What was done.
    pub action: LeftoverAction,
}

/// What [`handle_leftovers`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeftoverReport {
    /// The state file's owner.
    pub owner: Option<LockOwner>,
    /// Each recorded setting.
    pub items: Vec<Leftover>,
}

impl LeftoverReport {
    /// One stderr line per setting; empty when there was nothing.
    pub fn lines(&self) -> Vec<String> {
        let (pid, dir) =
            (self.owner.as_ref()).map_or((0, "an unknown directory"), |o| (o.pid, &o.results_dir));
        self.items
            .iter()
            .map(|l| {
                let c = &l.change;
                match &l.action {
                    LeftoverAction::Restored => format!(
                        "restored {} to {} (it was {}, set by driver pid {pid} for {dir}, which \
                         did not exit cleanly)",
                        c.path, c.old, c.new
                    ),
                    LeftoverAction::AlreadyOriginal => format!(
                        "{} is at its original {} again (driver pid {pid} for {dir} recorded a \
                         change to {} and did not exit cleanly); nothing to restore",
                        c.path, c.old, c.new
                    ),
                    LeftoverAction::ChangedSince { current } => format!(
                        "{} is {current}: neither the {} driver pid {pid} set for {dir} nor the \
                         original {}, so someone (or the kernel) changed it since; left as it is \
                         (the original was {}: `echo {} > {}` puts it back)",
                        c.path, c.new, c.old, c.old, c.old, c.path
                    ),
                    LeftoverAction::Left => format!(
                        "left {} at {} as asked (--leave-settings); its original is {} (changed by \
                         driver pid {pid} for {dir}); the next driver command without \
                         --leave-settings restores it",
                        c.path, c.new, c.old
                    ),
                    LeftoverAction::Failed { error } => format!(
                        "cannot restore {} to {} (left at {} by driver pid {pid} for {dir}): \
                         {error}; as root: `echo {} > {}`",
                        c.path, c.old, c.new, c.old, c.path
                    ),
                    LeftoverAction::Running => format!(
                        "a sweep is running (pid {pid}, results {dir}) and has set {} to {} \
                         (original {}); it restores it when it ends",
                        c.path, c.new, c.old
                    ),
                }
            })
            .collect()
    }
}

/// Whether leftover settings are restored or left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnLeftover {
    /// Write the original values back (the default).
    Restore,
    /// Leave them and say so (`--leave-settings`); the state file stays.
    Leave,
}

/// Deals with the state file of `dir` for a command that does not hold the
/// sweep lock (probe): when a sweep holds the lock the changes are its own
/// and are only reported; otherwise they are leftovers (see
/// [`handle_leftovers_locked`]).
pub fn handle_leftovers(dir: &Path, on: OnLeftover) -> Result<LeftoverReport, HostStateError> {
    if read_state(dir)?.is_none() {
        return Ok(LeftoverReport::default());
    }
    let (file, path) = open_lock(dir)?;
    if !try_flock(&file, &path)? {
        // A sweep runs: report its changes, touch nothing.
        let Some(state) = read_state(dir)? else {
            return Ok(LeftoverReport::default());
        };
        return Ok(LeftoverReport {
            owner: Some(state.owner.clone()),
            items: state
                .changes
                .into_iter()
                .map(|change| Leftover {
                    change,
                    action: LeftoverAction::Running,
                })
                .collect(),
        });
    }
    // Holding the lock while restoring: no sweep starts meanwhile. It is
    // released when `file` closes, on return.
    handle_leftovers_locked(dir, on)
}

/// Deals with the state file of `dir` while the caller holds the sweep
/// lock (so nothing in it belongs to a running sweep): each setting still
/// at the value the driver wrote gets its original back (or is left, with
/// [`OnLeftover::Leave`]). The state file is removed once nothing is left
/// to undo; it stays when a restore failed or settings were left.
pub fn handle_leftovers_locked(
    dir: &Path,
    on: OnLeftover,
) -> Result<LeftoverReport, HostStateError> {
    let Some(state) = read_state(dir)? else {
        return Ok(LeftoverReport::default());
    };
    let mut report = LeftoverReport {
        owner: Some(state.owner.clone()),
        items: Vec::new(),
    };
    let mut keep = Vec::new();
    // Newest first, like SettingsGuard::restore.
    for change in state.changes.iter().rev() {
        let current = std::fs::read_to_string(&change.path).map(|s| s.trim().to_owned());
        let action = match (&current, on) {
            (Ok(cur), _) if *cur == change.old => LeftoverAction::AlreadyOriginal,
            (Ok(cur), _) if *cur != change.new => LeftoverAction::ChangedSince {
                current: cur.clone(),
            },
            (_, OnLeftover::Leave) => LeftoverAction::Left,
            (Err(e), OnLeftover::Restore) => LeftoverAction::Failed {
                error: format!("cannot read it: {e}"),
            },
            (Ok(_), OnLeftover::Restore) => match std::fs::write(&change.path, &change.old) {
                Ok(()) => LeftoverAction::Restored,
                Err(e) => LeftoverAction::Failed {
                    error: e.to_string(),
                },
            },
        };
        if matches!(action, LeftoverAction::Left | LeftoverAction::Failed { .. }) {
            keep.push(change.clone());
        }
        report.items.push(Leftover {
            change: change.clone(),
            action,
        });
    }
    if keep.is_empty() {
        remove_state(dir)?;
    } else if keep.len() != state.changes.len() {
        keep.reverse();
        write_state(
            dir,
            &StateFile {
                changes: keep,
                ..state
            },
        )?;
    }
    Ok(report)
}

/// For commands that take no lock (probe): deals with the state file of
/// [`state_dir`] and says on stderr what it found and did. A state file
/// that cannot be read is reported, not fatal: probe only looks.
pub fn check_at_start(on: OnLeftover) {
    match handle_leftovers(&state_dir(), on) {
        Ok(report) => {
            for line in report.lines() {
                eprintln!("driver: {line}");
            }
        }
        Err(e) => eprintln!("driver: warning: {e}"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn change(path: &Path, old: &str, new: &str) -> SettingChange {
        SettingChange {
            path: path.display().to_string(),
            old: old.into(),
            new: new.into(),
            restored: false,
        }
    }

    fn state(changes: Vec<SettingChange>) -> StateFile {
        StateFile {
            owner: LockOwner {
                pid: 4242,
                results_dir: "/tmp/r".into(),
                started_at: "2026-01-01T00:00:00Z".into(),
            },
            changes,
        }
    }

    #[test]
    fn leftover_is_restored_and_the_state_file_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let sysctl = tmp.path().join("rate");
        std::fs::write(&sysctl, "150000\n").unwrap();
        let dir = tmp.path().join("state");
        write_state(&dir, &state(vec![change(&sysctl, "100000", "150000")])).unwrap();
        let r = handle_leftovers(&dir, OnLeftover::Restore).unwrap();
        assert_eq!(r.items.len(), 1);
        assert_eq!(r.items[0].action, LeftoverAction::Restored);
        assert_eq!(std::fs::read_to_string(&sysctl).unwrap(), "100000");
        assert!(!dir.join(STATE_FILE).exists());
        let line = &r.lines()[0];
        assert!(
            line.contains("restored") && line.contains("100000") && line.contains("4242"),
            "{line}"
        );
        // Nothing left: a second command finds nothing.
        assert!(
            handle_leftovers(&dir, OnLeftover::Restore)
                .unwrap()
                .items
                .is_empty()
        );
    }

    #[test]
    fn leave_keeps_the_value_and_the_state_file() {
        let tmp = tempfile::tempdir().unwrap();
        let sysctl = tmp.path().join("rate");
        std::fs::write(&sysctl, "150000").unwrap();
        let dir = tmp.path().join("state");
        write_state(&dir, &state(vec![change(&sysctl, "100000", "150000")])).unwrap();
        let r = handle_leftovers(&dir, OnLeftover::Leave).unwrap();
        assert_eq!(r.items[0].action, LeftoverAction::Left);
        assert_eq!(std::fs::read_to_string(&sysctl).unwrap(), "150000");
        assert!(r.lines()[0].contains("--leave-settings"));
        assert!(read_state(&dir).unwrap().is_some());
    }

    #[test]
    fn a_third_value_is_not_overwritten_and_the_original_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        std::fs::write(&a, "120000").unwrap(); // lowered since by the kernel
        std::fs::write(&b, "25").unwrap(); // never actually changed
        let dir = tmp.path().join("state");
        write_state(
            &dir,
            &state(vec![change(&a, "100000", "150000"), change(&b, "25", "50")]),
        )
        .unwrap();
        let r = handle_leftovers(&dir, OnLeftover::Restore).unwrap();
        let by_path = |p: &Path| {
            r.items
                .iter()
                .find(|l| l.change.path == p.display().to_string())
                .unwrap()
                .action
                .clone()
        };
        assert_eq!(
            by_path(&a),
            LeftoverAction::ChangedSince {
                current: "120000".into()
            }
        );
        assert_eq!(by_path(&b), LeftoverAction::AlreadyOriginal);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "120000");
        assert!(r.lines().iter().any(|l| l.contains("echo 100000")));
        assert!(!dir.join(STATE_FILE).exists());
    }

    #[test]
    fn a_failed_restore_keeps_the_state_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        let gone = tmp.path().join("no-such-dir").join("rate");
        write_state(&dir, &state(vec![change(&gone, "1", "2")])).unwrap();
        let r = handle_leftovers(&dir, OnLeftover::Restore).unwrap();
        assert!(matches!(r.items[0].action, LeftoverAction::Failed { .. }));
        assert!(read_state(&dir).unwrap().is_some());
    }

    #[test]
    fn lock_is_exclusive_and_names_its_holder() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        let lock = SweepLock::acquire(&dir, Path::new("/data/results/a")).unwrap();
        // flock locks belong to the open file description: a second open in
        // this process conflicts like another process would.
        let e = SweepLock::acquire(&dir, Path::new("/data/results/b")).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("pid {}", std::process::id())) && msg.contains("/data/results/a"),
            "{msg}"
        );
        // While the lock is held, state belongs to the sweep: not touched.
        let sysctl = tmp.path().join("rate");
        std::fs::write(&sysctl, "150000").unwrap();
        write_state(&dir, &state(vec![change(&sysctl, "100000", "150000")])).unwrap();
        let r = handle_leftovers(&dir, OnLeftover::Restore).unwrap();
        assert_eq!(r.items[0].action, LeftoverAction::Running);
        assert_eq!(std::fs::read_to_string(&sysctl).unwrap(), "150000");
        drop(lock);
        assert!(SweepLock::acquire(&dir, Path::new("/data/results/b")).is_ok());
    }

    #[test]
    fn failed_atomic_write_leaves_no_temporary() {
        let tmp = tempfile::tempdir().unwrap();
        // The rename target is a non-empty directory: rename fails.
        let target = tmp.path().join("state.json");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("x"), "x").unwrap();
        assert!(write_atomic(&target, b"{}").is_err());
        let names: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["state.json".to_string()]);
    }

    #[test]
    fn corrupt_state_file_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(STATE_FILE), "{not json").unwrap();
        let e = read_state(tmp.path()).unwrap_err().to_string();
        assert!(e.contains("state.json") && e.contains("old"), "{e}");
    }
}
