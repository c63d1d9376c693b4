//! The result sets committed to the repository, as `git ls-files` lists
//! them: what every test that walks results/ reads.
//!
//! results/ is also where the README's main command writes a user's own
//! sets. Those are not tracked, so they never decide whether the tests
//! pass (a new set whose analysis panicked made
//! `the_recommended_rate_never_falls_as_the_budget_grows` fail, and with
//! it the whole test command). `committed_sets_leave_out_what_a_user_added`
//! (analysis/tests/all/report.rs) checks this on a scratch repository.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The checkout's root: the folder above this crate.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The committed result sets of this checkout, sorted: see
/// [`sets_tracked_in`]. Panics with the reason (no git, no checkout, no
/// set) rather than letting a test pass on nothing.
pub fn committed_sets() -> Vec<PathBuf> {
    sets_tracked_in(&repo_root()).unwrap_or_else(|e| panic!("{e}"))
}

/// The result sets tracked by git in `repo`: one folder per tracked
/// `results/NAME/manifest.json`, the top level of results/ only (sets
/// nested deeper, like the phase-length rounds, belong to their study).
/// A folder in results/ that is not tracked, whatever it holds, is not
/// listed. An error when git does not run, `repo` is not a git checkout,
/// or no set is tracked there.
pub fn sets_tracked_in(repo: &Path) -> Result<Vec<PathBuf>, String> {
    let shown = repo.display();
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["ls-files", "-z", "--", ":(glob)results/*/manifest.json"])
        .output()
        .map_err(|e| {
            format!(
                "the tests read the committed result sets from `git ls-files` in {shown}, \
                 and git does not run: {e}; install git and run the tests in a git checkout"
            )
        })?;
    if !out.status.success() {
        return Err(format!(
            "`git ls-files` in {shown} failed ({}): {}; the tests read the committed \
             result sets from a git checkout (an unpacked archive has none; where git \
             says 'dubious ownership', `git config --global --add safe.directory DIR`)",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let mut sets: Vec<PathBuf> = out
        .stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let manifest = repo.join(String::from_utf8_lossy(p).as_ref());
            manifest.parent().unwrap().to_path_buf()
        })
        .collect();
    if sets.is_empty() {
        return Err(format!(
            "git tracks no results/*/manifest.json in {shown}: the tests need the \
             committed result sets of a full checkout"
        ));
    }
    sets.sort();
    Ok(sets)
}
