//! The files a workload run shares with the driver in the temporary
//! directory (its counter, its gaps), removed when the run is over, and
//! those a driver killed with SIGKILL left behind.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::exec::RunSpec;

/// Removes its file when dropped.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The files a workload run shares with the driver (its counter, and in
/// the gaps design its gaps file), removed when the run is over.
pub(super) struct RunFiles {
    /// The counter file.
    pub(super) counter: PathBuf,
    /// The gaps file (gaps design).
    pub(super) gaps: Option<PathBuf>,
    /// Removes the gaps file on drop (fields drop in order: this first).
    _remove_gaps: Option<RemoveOnDrop>,
    /// Removes the counter file on drop.
    _remove: RemoveOnDrop,
}

/// The prefix of the workload's files in the temporary directory; the
/// driver's pid follows it.
const TEMP_PREFIX: &str = "perf-overhead-";

/// How long a dead driver's file must have been untouched to be removed.
const STALE_AFTER: Duration = Duration::from_secs(3600);

/// Removes the workload files (counter, gaps) that a driver killed with
/// SIGKILL left in the temporary directory: those whose driver pid is no
/// longer running. Each removal is logged; files of a running driver stay.
pub(crate) fn remove_stale_run_files(temp: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(TEMP_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let is_ours = rest.ends_with(".counter") || rest.ends_with(".gaps");
        if !is_ours || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        // A driver in another pid namespace sharing this directory is not
        // in /proc: only files untouched for an hour are taken as left.
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age >= STALE_AFTER));
        if !old {
            continue;
        }
        let path = entry.path();
        if std::fs::remove_file(&path).is_ok() {
            tracing::info!(
                "removed {}, left by driver {pid}, which is no longer running",
                path.display()
            );
            removed.push(path);
        }
    }
    removed
}

impl RunFiles {
    /// The run's files in the temporary directory, named by this process
    /// and the run.
    pub(super) fn new(spec: &RunSpec<'_>) -> RunFiles {
        Self::named(
            &format!("run-{}", spec.run.run_id),
            spec.run.design.stamps(),
        )
    }

    /// The files of the workload called `tag` (`run-N`, `host-look`) in
    /// the temporary directory, named by this process: the counter, and
    /// the gaps file when `with_gaps`. [`remove_stale_run_files`] reads
    /// these names back.
    pub(super) fn named(tag: &str, with_gaps: bool) -> RunFiles {
        let counter =
            std::env::temp_dir().join(format!("{TEMP_PREFIX}{}-{tag}.counter", std::process::id()));
        let gaps = with_gaps.then(|| counter.with_extension("gaps"));
        RunFiles {
            _remove_gaps: gaps.clone().map(RemoveOnDrop),
            _remove: RemoveOnDrop(counter.clone()),
            counter,
            gaps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::unwrap_used)]
    fn stale_run_files_of_a_dead_driver_are_removed_and_a_live_ones_kept() {
        let tmp = tempfile::tempdir().unwrap();
        // No process has pid u32::MAX - 1 (pid_max is at most 2^22).
        let dead = tmp
            .path()
            .join(format!("{TEMP_PREFIX}4294967294-run-3.counter"));
        let dead_gaps = dead.with_extension("gaps");
        let live = tmp
            .path()
            .join(format!("{TEMP_PREFIX}{}-run-3.counter", std::process::id()));
        let other = tmp
            .path()
            .join(format!("{TEMP_PREFIX}4294967294-notes.txt"));
        let recent = tmp
            .path()
            .join(format!("{TEMP_PREFIX}4294967293-run-1.counter"));
        for p in [&dead, &dead_gaps, &live, &other, &recent] {
            std::fs::write(p, b"x").unwrap();
        }
        // Untouched for two hours, except `recent` (a driver in another pid
        // namespace may still be writing it).
        let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
        for p in [&dead, &dead_gaps, &live, &other] {
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(two_hours_ago)
                .unwrap();
        }
        let mut removed = remove_stale_run_files(tmp.path());
        removed.sort();
        assert_eq!(removed, vec![dead.clone(), dead_gaps.clone()]);
        assert!(live.exists() && other.exists() && recent.exists());
    }
}
