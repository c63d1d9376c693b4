//! Embeds the commit the driver is built from as `DRIVER_GIT_REVISION`:
//! `git rev-parse HEAD`, with `-dirty` when `git status --porcelain` lists
//! changes to what goes into the binary (built-paths.txt), and `unknown` outside a
//! git checkout or without git. A results manifest then names the code that
//! measured, not whatever the source directory holds when the binary runs.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What the driver binary is compiled from, relative to driver/: the
/// workspace crates' sources and manifests, the lock file, the cargo configuration,
/// and the files analysis embeds. A change elsewhere (docs, tests, experiments) builds the same
/// binary and is not "dirty". One path per line in built-paths.txt, which
/// driver/tests/build_revision.rs reads too.
const BUILT_PATHS: &str = include_str!("built-paths.txt");

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    println!("cargo::rerun-if-changed=build.rs");
    let Some(commit) = git(&dir, &["rev-parse", "HEAD"]) else {
        println!("cargo::rustc-env=DRIVER_GIT_REVISION=unknown");
        return;
    };
    // Run again when HEAD moves (checkout, commit: HEAD itself, the branch
    // ref, or packed-refs) and when a built file changes (the -dirty
    // suffix). In a worktree HEAD lives in --git-dir, the refs in
    // --git-common-dir.
    let abs = |p: String| {
        let p = PathBuf::from(p);
        if p.is_absolute() { p } else { dir.join(p) }
    };
    let built: Vec<&str> = BUILT_PATHS.lines().filter(|l| !l.is_empty()).collect();
    let mut watch: Vec<PathBuf> = built.iter().map(|p| dir.join(p)).collect();
    if let Some(git_dir) = git(&dir, &["rev-parse", "--git-dir"]).map(abs) {
        watch.push(git_dir.join("HEAD"));
    }
    if let Some(common) = git(&dir, &["rev-parse", "--git-common-dir"]).map(abs) {
        watch.push(common.join("packed-refs"));
        if let Some(head_ref) = git(&dir, &["symbolic-ref", "-q", "HEAD"]) {
            watch.push(common.join(head_ref));
        }
    }
    // Only paths that exist: Cargo reruns the script on every build for a
    // missing one (a ref can live in packed-refs only, or only loose).
    for p in watch.iter().filter(|p| p.exists()) {
        println!("cargo::rerun-if-changed={}", p.display());
    }
    // --no-optional-locks: a build only reads the repository; a status that
    // refreshed the index would take its lock and race an interactive git.
    let mut status = vec!["--no-optional-locks", "status", "--porcelain", "--"];
    status.extend_from_slice(&built);
    let dirty = git(&dir, &status).is_some_and(|s| !s.is_empty());
    let suffix = if dirty { "-dirty" } else { "" };
    println!("cargo::rustc-env=DRIVER_GIT_REVISION={commit}{suffix}");
}
