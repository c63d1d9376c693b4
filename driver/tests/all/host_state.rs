//! Against the real kernel: a sweep killed with SIGKILL after raising
//! kernel.perf_event_max_sample_rate leaves the value changed and a state
//! file; the next driver command (probe, or the sweep's --resume) restores
//! it and says so, and the manifest keeps the value found before the first
//! change. Two sweeps at once: the second refuses, naming the first.
//!
//! Each test uses its own state directory (PERF_OVERHEAD_STATE_DIR), so it
//! never touches a real sweep's lock; the sysctl is the real one and is put
//! back by the test itself if an assertion fails. Needs root and perf
//! (`common::perf_ready`, the real-kernel tests' one readiness check).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use driver::hoststate::{LOCK_FILE, STATE_DIR_ENV, STATE_FILE, read_owner, read_state};
use driver::perf::error::MAX_RATE_PATH;
use driver::results::read_manifest;

fn rate() -> u64 {
    std::fs::read_to_string(MAX_RATE_PATH)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Puts the sysctl back if the test fails half-way.
struct PutBack(u64);

impl Drop for PutBack {
    fn drop(&mut self) {
        if rate() != self.0 {
            let _ = std::fs::write(MAX_RATE_PATH, self.0.to_string());
        }
    }
}

fn driver() -> Command {
    Command::new(env!("CARGO_BIN_EXE_driver"))
}

/// A short sweep (two gaps runs of `secs` s, cpu scope, no report).
fn sweep(state: &Path, out: &Path, freq: u64, secs: u32, raise: bool) -> Command {
    let mut c = driver();
    c.env(STATE_DIR_ENV, state)
        .args(["sweep", "--freqs"])
        .arg(freq.to_string())
        .args(["--duration", &format!("{secs}s"), "--reps", "1"])
        .args([
            "--design",
            "gaps",
            "--no-util",
            "--no-report",
            "--scope",
            "cpu",
        ])
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if raise {
        c.arg("--raise-max-rate");
    }
    c
}

fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ok() {
        assert!(t.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn rows(out: &Path) -> usize {
    std::fs::read_to_string(out.join("runs.csv"))
        .map(|t| t.lines().count().saturating_sub(1))
        .unwrap_or(0)
}

/// Starts a sweep that raises the rate to `original + 50000`, and kills it
/// with SIGKILL once its first run is recorded (the second is under way).
/// Returns the killed driver's pid.
fn kill_9_mid_sweep(state: &Path, out: &Path, original: u64) -> u32 {
    let raised = original + 50_000;
    let mut child = sweep(state, out, raised, 2, true).spawn().unwrap();
    wait_for("the raised sysctl", Duration::from_secs(30), || {
        rate() == raised
    });
    wait_for("the first run's row", Duration::from_secs(60), || {
        rows(out) >= 1
    });
    child.kill().unwrap(); // SIGKILL: no handler, no unwinding, no guard.
    child.wait().unwrap();
    assert_eq!(rate(), raised, "SIGKILL cannot restore: still raised");
    let s = read_state(state)
        .unwrap()
        .expect("the state file survives the kill");
    assert_eq!(s.changes.len(), 1);
    assert_eq!(s.changes[0].path, MAX_RATE_PATH);
    assert_eq!(s.changes[0].old, original.to_string());
    assert_eq!(s.changes[0].new, raised.to_string());
    child.id()
}

fn stderr_of(c: &mut Command) -> (bool, String) {
    let o = c
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn kill_9_with_raise_max_rate_is_restored_by_the_next_probe() {
    let _serial = common::one_at_a_time();
    if !common::perf_ready() {
        return;
    }
    let original = rate();
    let _put_back = PutBack(original);
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let out = tmp.path().join("killed");
    let killed = kill_9_mid_sweep(&state, &out, original);

    // --leave-settings: left, and said so.
    let (ok, err) = stderr_of(driver().env(STATE_DIR_ENV, &state).args([
        "probe",
        "--no-self-test",
        "--leave-settings",
    ]));
    assert!(ok, "{err}");
    assert!(
        err.contains(&format!("left {MAX_RATE_PATH} at {}", original + 50_000))
            && err.contains(&format!("original is {original}")),
        "{err}"
    );
    assert_eq!(rate(), original + 50_000);

    // Any command without it restores, and says who left it.
    let (ok, err) =
        stderr_of(
            driver()
                .env(STATE_DIR_ENV, &state)
                .args(["probe", "--no-self-test", "--json"]),
        );
    assert!(ok, "{err}");
    assert!(
        err.contains(&format!("restored {MAX_RATE_PATH} to {original}"))
            && err.contains(&format!("pid {killed}")),
        "{err}"
    );
    assert_eq!(rate(), original);
    assert!(!state.join(STATE_FILE).exists());

    // Nothing left: the next command is quiet about it.
    let (_, err) =
        stderr_of(
            driver()
                .env(STATE_DIR_ENV, &state)
                .args(["probe", "--no-self-test", "--json"]),
        );
    assert!(!err.contains("restored"), "{err}");

    // A resume afterwards: the killed invocation's change is back at its
    // original (restored by the probe), and its record says so.
    let (ok, err) = stderr_of(
        driver()
            .env(STATE_DIR_ENV, &state)
            .arg("sweep")
            .arg("--resume")
            .arg(&out)
            .args(["--raise-max-rate", "--no-report"]),
    );
    assert!(ok, "{err}");
    assert_eq!(rate(), original);
    let m = read_manifest(&out).unwrap();
    assert_eq!(m.settings_changed.len(), 2, "{:?}", m.settings_changed);
    assert!(
        m.settings_changed
            .iter()
            .all(|c| c.restored && c.old == original.to_string()),
        "{:?}",
        m.settings_changed
    );
}

#[test]
fn resume_after_kill_9_restores_first_and_keeps_the_original_in_the_manifest() {
    let _serial = common::one_at_a_time();
    if !common::perf_ready() {
        return;
    }
    let original = rate();
    let _put_back = PutBack(original);
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let out = tmp.path().join("killed");
    kill_9_mid_sweep(&state, &out, original);

    let (ok, err) = stderr_of(
        driver()
            .env(STATE_DIR_ENV, &state)
            .arg("sweep")
            .arg("--resume")
            .arg(&out)
            .arg("--raise-max-rate")
            .arg("--no-report"),
    );
    assert!(ok, "{err}");
    assert!(
        err.contains(&format!("restored {MAX_RATE_PATH} to {original}")),
        "{err}"
    );
    assert_eq!(rate(), original);
    assert!(!state.join(STATE_FILE).exists());
    let m = read_manifest(&out).unwrap();
    assert_eq!(m.status, driver::results::Status::Complete);
    // Both invocations' changes: from the original, both restored.
    assert_eq!(m.settings_changed.len(), 2, "{:?}", m.settings_changed);
    for c in &m.settings_changed {
        assert_eq!(c.old, original.to_string(), "{c:?}");
        assert_eq!(c.new, (original + 50_000).to_string(), "{c:?}");
        assert!(c.restored, "{c:?}");
    }
    // The host facts are those found before the first change.
    assert_eq!(
        m.host["perf_event_max_sample_rate"].as_u64(),
        Some(original),
        "{}",
        m.host
    );
    assert!(
        m.warnings.iter().any(|w| w.contains("at start: restored")),
        "{:?}",
        m.warnings
    );
    // What both invocations said (the event's fallback, the raised limit)
    // is in the manifest once.
    let mut seen = std::collections::HashSet::new();
    for w in &m.warnings {
        assert!(seen.insert(w), "said twice: {w}\n{:?}", m.warnings);
    }
}

#[test]
fn a_second_sweep_refuses_naming_the_first() {
    let _serial = common::one_at_a_time();
    if !common::perf_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let first_out = tmp.path().join("first");
    let second_out = tmp.path().join("second");
    let mut first = sweep(&state, &first_out, 1000, 3, false).spawn().unwrap();
    let pid = first.id();
    wait_for("the first sweep's lock", Duration::from_secs(30), || {
        read_owner(&state).is_some_and(|o| o.pid == pid)
    });

    let o = sweep(&state, &second_out, 1000, 3, false).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    let first_abs: PathBuf = std::path::absolute(&first_out).unwrap();
    assert!(
        err.contains(&format!("pid {pid}"))
            && err.contains(&first_abs.display().to_string())
            && err.contains("another sweep is running"),
        "{err}"
    );
    assert!(!second_out.exists(), "the refused sweep wrote nothing");
    // probe takes no lock: it runs beside the sweep.
    let (ok, perr) =
        stderr_of(
            driver()
                .env(STATE_DIR_ENV, &state)
                .args(["probe", "--no-self-test", "--json"]),
        );
    assert!(ok, "{perr}");

    // Ctrl-C stops the first (once its handler is in: the manifest is
    // written after it); its lock goes with it.
    wait_for(
        "the first sweep's manifest",
        Duration::from_secs(30),
        || first_out.join("manifest.json").exists(),
    );
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let status = first.wait().unwrap();
    assert!(matches!(status.code(), Some(0 | 130)), "{status:?}");
    assert!(read_owner(&state).is_none(), "the lock file is emptied");
    assert!(state.join(LOCK_FILE).exists());
    driver::hoststate::SweepLock::acquire(&state, &second_out).unwrap();
}
