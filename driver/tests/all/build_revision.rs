//! The commit embedded at build time (driver/build.rs) is the checkout's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

/// What the binary is compiled from: the list driver/build.rs watches.
const BUILT_PATHS: &str = include_str!("../../built-paths.txt");

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[test]
fn the_embedded_revision_is_head_and_dirty_when_built_files_changed() {
    let built = env!("DRIVER_GIT_REVISION");
    let Some(head) = git(&["rev-parse", "HEAD"]) else {
        assert_eq!(built, "unknown", "no git checkout here");
        return;
    };
    let mut status = vec!["status", "--porcelain", "--"];
    status.extend(BUILT_PATHS.lines().filter(|l| !l.is_empty()));
    let dirty = !git(&status).unwrap().is_empty();
    let want = if dirty { format!("{head}-dirty") } else { head };
    assert_eq!(built, want);
}
