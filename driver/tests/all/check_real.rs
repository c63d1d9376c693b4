//! `driver check` on the real kernel: its verdict agrees with its own
//! numbers and exit status, it writes its textfile, history row and result
//! set, it refuses bad input before measuring (exit 2), it refuses beside a
//! running sweep (exit 3), and SIGTERM leaves no textfile and the host as
//! it was.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use driver::hoststate::STATE_DIR_ENV;

fn check(state: &Path, args: &[&str]) -> Command {
    let mut c = Command::cargo_bin("driver").expect("the driver binary");
    c.env(STATE_DIR_ENV, state).arg("check").args(args);
    c
}

fn run(state: &Path, args: &[&str]) -> (i32, String, String) {
    let out = check(state, args).output().expect("driver check runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Bad input: exit 2 with one line naming the value, before anything is
/// measured (no history is written).
#[test]
fn bad_input_is_refused_before_measuring() {
    let d = tempfile::tempdir().unwrap();
    let hist = d.path().join("h");
    let h = hist.to_str().unwrap();
    let missing = d.path().join("no-such-dir");
    let ro = d.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--rate".into(), "99".into(), "--budget".into(), "0".into()],
            "--budget",
        ),
        (
            vec![
                "--rate".into(),
                "99".into(),
                "--budget".into(),
                "100.5%".into(),
            ],
            "--budget",
        ),
        (
            vec!["--rate".into(), "99".into(), "--time".into(), "2s".into()],
            "give --time",
        ),
        (vec!["--rate".into(), "0".into()], "--rate"),
        (
            vec![
                "--rate".into(),
                "99".into(),
                "--textfile".into(),
                missing.display().to_string(),
            ],
            "no such directory",
        ),
    ];
    for (args, says) in cases {
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend(["--history", h]);
        let (code, _, err) = run(d.path(), &all);
        assert_eq!(code, 2, "{all:?}: {err}");
        assert!(err.contains(says), "{all:?}: {err}");
        assert_eq!(
            err.lines().filter(|l| l.starts_with("error:")).count(),
            1,
            "{err}"
        );
    }
    assert!(!hist.join("history.csv").exists());
    assert!(!hist.join("checks").exists());
}

fn answer(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// A real check judged at two budgets from the same kind of measurement:
/// 100 % is within (exit 0), 0.0001 % is over (exit 1); each exit status
/// agrees with the answer's own numbers, and the textfile, history and
/// result set are there.
#[test]
fn a_real_check_answers_and_its_exit_status_follows_its_numbers() {
    if !common::perf_ready() {
        return;
    }
    let _serial = common::one_at_a_time();
    let d = tempfile::tempdir().unwrap();
    let tf = d.path().join("textfile");
    std::fs::create_dir(&tf).unwrap();
    let hist = d.path().join("hist");
    let (tfs, hs) = (tf.to_str().unwrap(), hist.to_str().unwrap());
    for (budget, want) in [("100%", 0), ("0.0001%", 1)] {
        let (code, out, err) = run(
            d.path(),
            &[
                "--rate",
                "1000",
                "--time",
                "14s",
                "--scope",
                "cpu",
                "--budget",
                budget,
                "--textfile",
                tfs,
                "--history",
                hs,
                "--json",
            ],
        );
        assert_eq!(code, want, "budget {budget}: {err}");
        let a = answer(&out);
        assert_eq!(a["kind"], "check");
        assert_eq!(a["exit_code"], want);
        assert_eq!(a["within_budget"], serde_json::json!(want == 0));
        let row = &a["rows"][0];
        let cost = row["cost_per_sample_ns"].as_f64().unwrap();
        let pred_hi = row["cost_per_sample_pred_hi_ns"].as_f64().unwrap();
        let lo = row["cost_per_sample_lo_ns"].as_f64().unwrap();
        let rate = row["achieved_hz"].as_f64().unwrap();
        assert!(lo <= cost && cost <= pred_hi, "{row}");
        let pct: f64 = budget.trim_end_matches('%').parse().unwrap();
        if want == 0 {
            assert!(pred_hi * rate * 1e-7 <= pct, "{row}");
        } else {
            assert!(lo * rate * 1e-7 > pct, "{row}");
        }
        let max = a["max_hz"].as_f64().unwrap();
        assert!((max - pct / (pred_hi * 1e-7)).abs() < 1e-6 * max, "{a}");
        assert!(
            Path::new(a["dir"].as_str().unwrap())
                .join("summary.parquet")
                .is_file()
        );
        let prom = std::fs::read_to_string(tf.join("perf_overhead.prom")).unwrap();
        assert!(
            prom.contains(&format!("perf_overhead_check_exit_code {want}\n")),
            "{prom}"
        );
        // The cost in seconds, as the JSON's to within a few ulps: the
        // JSON's float read back here (serde_json's default parser is
        // best-effort, not correctly rounded) was once 1 ulp from the
        // value the textfile was written from, and the exact text
        // comparison failed.
        let seconds: f64 = prom
            .lines()
            .find(|l| l.starts_with("perf_overhead_cost_per_sample_seconds{"))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no cost per sample in {prom}"));
        assert!(
            (seconds - cost * 1e-9).abs() <= 4.0 * f64::EPSILON * seconds,
            "{prom}"
        );
    }
    let rows = results_format::history::read(&hist.join("history.csv")).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].within_budget, Some(true));
    assert_eq!(rows[1].within_budget, Some(false));
    assert_eq!(std::fs::read_dir(hist.join("checks")).unwrap().count(), 2);
}

/// Beside a running sweep (its lock held), a check does not wait: exit 3,
/// naming the holder, and nothing measured; a refusal's textfile holds
/// only the timestamp and success 0.
#[test]
fn beside_a_running_sweep_a_check_refuses_with_3() {
    let d = tempfile::tempdir().unwrap();
    let state = d.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let tf = d.path().join("tf");
    std::fs::create_dir(&tf).unwrap();
    let _lock = driver::hoststate::SweepLock::acquire(&state, &d.path().join("a-sweep")).unwrap();
    let hist = d.path().join("hist");
    let (code, _, err) = run(
        &state,
        &[
            "--rate",
            "99",
            "--history",
            hist.to_str().unwrap(),
            "--textfile",
            tf.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 3, "{err}");
    assert!(err.contains(&std::process::id().to_string()), "{err}");
    // With --json, the refusal is an answer too.
    let (code, out, _) = run(
        &state,
        &[
            "--rate",
            "99",
            "--history",
            hist.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(code, 3);
    let a = answer(&out);
    assert_eq!(a["exit_code"], 3);
    assert_eq!(a["within_budget"], serde_json::Value::Null);
    assert!(a["rows"].as_array().unwrap().is_empty());
    assert!(
        a["reasons"][0]
            .as_str()
            .unwrap()
            .contains("nothing was measured"),
        "{a}"
    );
    assert!(!hist.join("history.csv").exists());
    let prom = std::fs::read_to_string(tf.join("perf_overhead.prom")).unwrap();
    let samples: Vec<&str> = prom.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(samples.len(), 2, "{prom}");
    assert!(prom.contains("perf_overhead_check_success 0\n"), "{prom}");
}

/// SIGTERM during the runs: exit 130, no textfile, no history row, the
/// lock released, perf_event_max_sample_rate as it was (the check raised
/// it).
#[test]
fn sigterm_leaves_no_textfile_and_restores_the_host() {
    if !common::perf_ready() {
        return;
    }
    let _serial = common::one_at_a_time();
    let d = tempfile::tempdir().unwrap();
    let state = d.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let tf = d.path().join("tf");
    std::fs::create_dir(&tf).unwrap();
    let hist = d.path().join("hist");
    let rate_path = "/proc/sys/kernel/perf_event_max_sample_rate";
    let before = std::fs::read_to_string(rate_path).unwrap();
    let above: u64 = before.trim().parse::<u64>().unwrap() + 1000;
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("driver"))
        .env(STATE_DIR_ENV, &state)
        .args([
            "check",
            "--rate",
            &above.to_string(),
            "--raise-max-rate",
            "--scope",
            "cpu",
        ])
        .args(["--time", "30s", "--history", hist.to_str().unwrap()])
        .args(["--textfile", tf.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let checks = hist.join("checks");
    while t0.elapsed() < Duration::from_secs(30) {
        let started = std::fs::read_dir(&checks)
            .ok()
            .and_then(|mut r| r.next())
            .and_then(Result::ok)
            .is_some_and(|e| e.path().join("runs.csv").exists());
        if started {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        std::fs::read_to_string(rate_path).unwrap().trim(),
        above.to_string(),
        "raised during the check"
    );
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert_eq!(std::fs::read_to_string(rate_path).unwrap(), before);
    assert!(!tf.join("perf_overhead.prom").exists());
    assert!(!hist.join("history.csv").exists());
    driver::hoststate::SweepLock::acquire(&state, &d.path().join("next")).unwrap();
}
