//! The simulator with known truth (analysis/examples/simulate) against the
//! analysis: 50 simulated default sweeps of each scenario, and the loose
//! bounds (`--check-loose`: coverage >= 0.85 in every cell, false outside
//! charges <= 0.15 where the truth has none and a power >= 0.8 where it
//! has one, and a median rate >= 0.6 of the true highest in the quiet
//! scenario).
//!
//! It runs the example's binary, which `cargo test` does not build with
//! `--test all`: build it first with
//! `cargo build --release -p analysis --example simulate`. A missing
//! binary fails the test (it is never skipped). About 2.5 minutes of two
//! CPUs on the development VM.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

/// target/<profile>/examples/simulate, beside this test binary
/// (target/<profile>/deps/all-<hash>).
fn simulate_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lies in target/<profile>/deps");
    profile_dir
        .join("examples")
        .join(format!("simulate{}", std::env::consts::EXE_SUFFIX))
}

#[test]
fn the_recommendation_holds_on_simulated_sweeps() {
    let bin = simulate_bin();
    assert!(
        bin.is_file(),
        "{} is missing: build it with `cargo build --release -p analysis --example simulate` \
         (the same profile as this test)",
        bin.display()
    );
    let out = Command::new(&bin)
        .args(["--scenario", "all", "--sets", "50", "--check-loose"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "simulate --check-loose failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}
