//! `driver sweep` on bad input: exit status 2, one line naming the value,
//! nothing written. No perf needed (validation comes first).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use assert_cmd::Command;

fn sweep(args: &[&str], out: &std::path::Path) -> assert_cmd::assert::Assert {
    common::sweep_into(args, out).arg("--no-report").assert()
}

fn check_rejected(args: &[&str], needles: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("never");
    let a = sweep(args, &out).code(2);
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    let stdout = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
    for n in needles {
        assert!(stderr.contains(n), "{args:?}: stderr lacks {n:?}: {stderr}");
    }
    assert_eq!(
        stderr.trim().lines().count(),
        1,
        "{args:?}: not one line: {stderr}"
    );
    assert!(stdout.is_empty(), "{args:?}: stdout: {stdout}");
    assert!(!out.exists(), "{args:?}: wrote {}", out.display());
}

#[test]
fn bad_frequencies() {
    let _serial = common::one_at_a_time();
    check_rejected(&["--freqs", ""], &["--rates", "empty"]);
    check_rejected(&["--freqs", "100,-5"], &["\"-5\"", "negative"]);
    check_rejected(&["--freqs", "100,abc"], &["\"abc\"", "--rates"]);
    check_rejected(&["--freqs", "100,100"], &["\"100\"", "duplicate"]);
}

#[test]
fn bad_reps_duration_cpu_event() {
    let _serial = common::one_at_a_time();
    check_rejected(&["--reps", "0"], &["\"0\"", "--reps"]);
    check_rejected(&["--duration", "0s"], &["\"0s\"", "--duration"]);
    check_rejected(&["--duration", "-3s"], &["\"-3s\"", "--duration"]);
    check_rejected(&["--cpu", "4096"], &["\"4096\"", "--cpu", "no such CPU"]);
    check_rejected(
        &["--event", "bogus"],
        &["\"bogus\"", "--event", "cpu-clock"],
    );
    check_rejected(&["--scope", "galaxy"], &["\"galaxy\"", "--scope", "system"]);
    check_rejected(&["--reps", "x"], &["\"x\"", "--reps", "not an integer"]);
    check_rejected(&["--cpu", "-1"], &["\"-1\"", "--cpu", "negative"]);
    check_rejected(&["--seed", "-1"], &["\"-1\"", "--seed", "--seed 42"]);
    check_rejected(
        &["--phase", "5 parsecs"],
        &["\"5 parsecs\"", "--phase", "unknown unit"],
    );
    check_rejected(&["--duration", "1.5min2"], &["\"1.5min2\"", "--duration"]);
}

#[test]
fn help_lists_the_choices_and_the_duration_units() {
    let _serial = common::one_at_a_time();
    let a = Command::cargo_bin("driver")
        .unwrap()
        .args(["sweep", "--help"])
        .assert()
        .success();
    // Whitespace joined: --help wraps its lines.
    let help = String::from_utf8_lossy(&a.get_output().stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        help.contains("possible values: cpu, system, task"),
        "{help}"
    );
    assert!(
        help.contains("cycles, instructions, cpu-clock, task-clock"),
        "{help}"
    );
    assert!(help.contains("min or h"), "{help}");
}

#[test]
fn frequency_above_the_sysctl_needs_raise_max_rate() {
    let _serial = common::one_at_a_time();
    let max: u64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .map(|s| s.trim().parse().unwrap())
        .unwrap_or(100_000);
    let f = (max + 1).to_string();
    check_rejected(
        &["--freqs", &f],
        &[&f, "perf_event_max_sample_rate", "--raise-max-rate"],
    );
}

#[test]
fn experiment_file_unknown_key_is_named() {
    let _serial = common::one_at_a_time();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("typo.toml");
    std::fs::write(&file, "freqs = [100]\nrepetitions = 3\n").unwrap();
    check_rejected(
        &["--experiment", file.to_str().unwrap()],
        &["repetitions", "typo.toml"],
    );
    std::fs::write(&file, "reps = 0\n").unwrap();
    check_rejected(
        &["--experiment", file.to_str().unwrap()],
        &["`reps`", "typo.toml"],
    );
}

#[test]
fn a_plan_over_the_time_limit_is_refused_before_anything_is_created() {
    let _serial = common::one_at_a_time();
    // The default plan (115 runs) at 1000000 h a run: 115 million hours,
    // more than any --max-sweep-time can say.
    check_rejected(
        &["--duration", "1000000h"],
        &[
            "at least 115000000 h",
            "115 runs of 1000000 h (--duration)",
            "5 blocks (default; --reps) of 23",
            "limit of 24 h (the default; --max-sweep-time sets it)",
            "no --max-sweep-time can lift it",
        ],
    );
    // A plan that some limit holds is told the flag that lifts it.
    check_rejected(
        &["--duration", "2h", "--reps", "3", "--freqs", "100"],
        &[
            "at least 42 h",
            "21 runs of 2 h (--duration): 3 blocks (--reps) of 7",
            "--max-sweep-time 42h",
        ],
    );
}

#[test]
fn shipped_experiments_parse() {
    let _serial = common::one_at_a_time();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let exp = driver::config::ExperimentFile::load(&path).unwrap();
            driver::config::SweepOptions::resolve(
                &driver::config::FlagSettings::default(),
                Some((&exp, &path)),
                &[0, 1],
                0,
            )
            .and_then(|r| r.finish(None))
            .unwrap();
            n += 1;
        }
    }
    assert!(n >= 3, "experiments/ has {n} files");
}

#[test]
fn existing_output_directory_is_never_overwritten() {
    let _serial = common::one_at_a_time();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("keep.txt"), "x").unwrap();
    let a = sweep(&["--freqs", "100"], tmp.path()).code(2);
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(stderr.contains("already exists"), "{stderr}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

#[test]
fn resume_refuses_new_settings() {
    let _serial = common::one_at_a_time();
    let tmp = tempfile::tempdir().unwrap();
    let a = Command::cargo_bin("driver")
        .unwrap()
        .args(["sweep", "--resume"])
        .arg(tmp.path())
        .args(["--freqs", "100"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(stderr.contains("--resume"), "{stderr}");
}

#[test]
fn resume_of_a_complete_sweep_is_refused_and_touches_nothing() {
    let _serial = common::one_at_a_time();
    let tmp = tempfile::tempdir().unwrap();
    let set = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/20261126T0217Z-vm");
    let mut before = Vec::new();
    for f in ["manifest.json", "runs.csv"] {
        std::fs::copy(set.join(f), tmp.path().join(f)).unwrap();
        before.push(std::fs::read(tmp.path().join(f)).unwrap());
    }
    let a = Command::cargo_bin("driver")
        .unwrap()
        .args(["sweep", "--resume"])
        .arg(tmp.path())
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        stderr.contains("it is complete (all 85 planned runs"),
        "{stderr}"
    );
    assert!(stderr.contains("analysis report"), "{stderr}");
    for (f, b) in ["manifest.json", "runs.csv"].iter().zip(&before) {
        assert_eq!(
            &std::fs::read(tmp.path().join(f)).unwrap(),
            b,
            "{f} changed"
        );
    }
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2);
}

#[test]
fn bad_commands() {
    let _serial = common::one_at_a_time();
    check_rejected(
        &["--command", "no-such-program-xyz -9"],
        &[
            "\"no-such-program-xyz -9\"",
            "--command",
            "no executable no-such-program-xyz on PATH",
            "install it",
        ],
    );
    check_rejected(
        &["--command", "sh -c 'exit"],
        &["--command", "cannot split"],
    );
    check_rejected(
        &["--command", "sh", "--duration", "5s"],
        &["--duration", "runs to completion"],
    );
    check_rejected(
        &["--command", "sh", "--design", "paired"],
        &["--design", "whole runs"],
    );
    check_rejected(&["--warmup", "2"], &["--warmup", "for --command"]);
    check_rejected(
        &["--workload", "command"],
        &["--work", "--command 'CMD ARGS'"],
    );
}
