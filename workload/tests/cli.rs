//! The `workload` binary end to end: output, JSON report, pinning, bad input,
//! the counter file and `--wait-go`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command as StdCommand, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use workload::counter::{CounterReader, State};
use workload::summary::RunSummary;

/// Timed runs are serialised so they do not compete for CPUs with each other.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn workload() -> Command {
    Command::cargo_bin("workload").unwrap()
}

fn spawn(args: &[&str]) -> Child {
    StdCommand::new(env!("CARGO_BIN_EXE_workload"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `workload --duration D --json --counter <tmp>/counter EXTRA...`, with its
/// counter file open (the temporary directory lives as long as the first
/// value).
fn spawn_with_counter(
    duration: &str,
    extra: &[&str],
) -> (tempfile::TempDir, std::path::PathBuf, Child, CounterReader) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("counter");
    let mut args = vec!["--duration", duration, "--json", "--counter"];
    args.push(path.to_str().unwrap());
    args.extend_from_slice(extra);
    let mut child = spawn(&args);
    let reader = open_when_ready(&path, &mut child);
    (dir, path, child, reader)
}

fn open_when_ready(path: &std::path::Path, child: &mut Child) -> CounterReader {
    let t0 = Instant::now();
    loop {
        match CounterReader::open(path) {
            Ok(r) => return r,
            Err(e) if t0.elapsed() < Duration::from_secs(10) => {
                assert!(
                    child.try_wait().unwrap().is_none(),
                    "workload exited before creating the counter file ({e})"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("counter file never appeared: {e}"),
        }
    }
}

#[test]
fn plain_run_prints_one_integer() {
    let _g = serial();
    let out = workload().args(["--duration", "300ms"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.ends_with('\n') && stdout.lines().count() == 1,
        "{stdout:?}"
    );
    let n: u64 = stdout.trim().parse().expect("stdout is one integer");
    // Even a heavily loaded CPU does millions of additions in 300 ms.
    assert!(n > 1_000_000, "only {n} loops in 300 ms");
}

#[test]
fn json_report_has_every_field_and_stops_on_time() {
    let _g = serial();
    let out = workload()
        .args(["--duration", "300ms", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout:?}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    for key in [
        "iterations",
        "duration_ns",
        "wall_ns",
        "overrun_ns",
        "tsc_ticks",
        "user_ns",
        "sys_ns",
        "nvcsw",
        "nivcsw",
        "minflt",
        "cpu_start",
        "cpu_end",
        "start_ns",
        "end_ns",
        "clock",
        "stop_method",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {stdout}");
    }
    let r: RunSummary = serde_json::from_str(&stdout).unwrap();
    assert_eq!(r.duration_ns, 300_000_000);
    assert_eq!(r.clock, "CLOCK_MONOTONIC_RAW");
    assert!(r.stop_method.starts_with("timer_signal+clock_check"));
    assert_eq!(r.wall_ns, r.end_ns - r.start_ns);
    assert_eq!(r.overrun_ns, r.wall_ns as i64 - r.duration_ns as i64);
    assert!(
        (0..1_000_000).contains(&r.overrun_ns),
        "overrun {} ns not within [0, 1 ms)",
        r.overrun_ns
    );
    assert!(r.iterations > 1_000_000);
    // The loop is CPU-bound: most of the wall time is user time (getrusage
    // has tick granularity here, so allow a generous margin).
    assert!(
        r.user_ns + r.sys_ns > r.wall_ns / 2,
        "cpu {} + {} ns over {} ns wall",
        r.user_ns,
        r.sys_ns,
        r.wall_ns
    );
    // The timer signal ended the first phase before the deadline.
    let seen = r.signal_seen_ns.expect("timer fired");
    assert!(seen <= r.duration_ns && seen + r.timer_margin_ns + 1_000_000 >= r.duration_ns);
    if cfg!(target_arch = "x86_64") {
        let ticks = r.tsc_ticks.expect("tsc_ticks on x86_64");
        // TSC between 100 MHz and 10 GHz over the wall time.
        let hz = ticks as f64 * 1e9 / r.wall_ns as f64;
        assert!((1e8..1e10).contains(&hz), "tsc {hz} Hz");
    } else {
        assert!(r.tsc_ticks.is_none());
    }
    assert!(r.chunk_iterations >= 256 && r.chunk_iterations.is_multiple_of(64));
    // The monotonic raw clock of this process agrees with start_ns/end_ns.
    let now = workload::clock::monotonic_raw_ns();
    assert!(r.end_ns <= now && now - r.end_ns < 60_000_000_000);
}

#[test]
fn cpu_1_ends_on_cpu_1() {
    let _g = serial();
    let allowed = workload::run::allowed_cpus().unwrap();
    if !allowed.contains(&1) {
        // CI (PERF_TESTS=require) runs on two CPUs: there this cannot skip.
        if std::env::var("PERF_TESTS").as_deref() == Ok("require") {
            panic!("PERF_TESTS=require, but CPU 1 is not in the allowed set {allowed:?}");
        }
        eprintln!("skipping: CPU 1 is not in the allowed set {allowed:?}");
        return;
    }
    let out = workload()
        .args(["--duration", "200ms", "--cpu", "1", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: RunSummary = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((r.cpu_start, r.cpu_end, r.pinned_cpu), (1, 1, Some(1)));
}

#[test]
fn bad_inputs_exit_2_naming_the_value() {
    let cases: &[(&[&str], &str)] = &[
        (&["--duration", "0"], "'0'"),
        (&["--duration", "abc"], "abc"),
        (&["--duration=-5s"], "-5s"),
        (&["--duration", "5d"], "5d"),
        (&["--duration", "1s", "--cpu", "999"], "999"),
        (&["--duration", "1s", "--bogus"], "--bogus"),
        (&["--duration", "1s", "--wait-go"], "--counter"),
        (&["--cpu", "1"], "--duration"),
    ];
    for (args, needle) in cases {
        let out = workload().args(*args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?} wrote to stdout");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: {stderr:?} lacks {needle}"
        );
    }
    // The CPU error says which CPUs are allowed.
    let out = workload()
        .args(["--duration", "1s", "--cpu", "999"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("allowed CPU set"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn counter_grows_while_running_and_ends_at_the_final_count() {
    let _g = serial();
    let (_dir, path, child, reader) = spawn_with_counter("600ms", &[]);
    let mut seen = Vec::new();
    while reader.state() != State::Done {
        if reader.state() == State::Running {
            seen.push(reader.iterations());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: RunSummary = serde_json::from_slice(&out.stdout).unwrap();
    // At least two looks while it ran (the run is 600 ms; the pause between
    // looks only sets how many): the count must have grown between them.
    assert!(seen.len() >= 2, "only {} looks while running", seen.len());
    assert!(
        seen.windows(2).all(|w| w[0] <= w[1]),
        "count went down: {seen:?}"
    );
    let distinct = seen.windows(2).filter(|w| w[0] < w[1]).count();
    assert!(distinct >= 1, "count did not grow while running: {seen:?}");
    assert!(*seen.last().unwrap() <= r.iterations);
    assert_eq!(reader.iterations(), r.iterations);
    assert_eq!(reader.state(), State::Done);
    assert_eq!((reader.start_ns(), reader.end_ns()), (r.start_ns, r.end_ns));
    assert_eq!(r.counter.as_deref(), path.to_str());
}

#[test]
fn wait_go_waits_for_release() {
    let _g = serial();
    let (_dir, _path, mut child, reader) = spawn_with_counter("200ms", &["--wait-go"]);
    let t0 = Instant::now();
    while reader.state() != State::Ready {
        assert!(t0.elapsed() < Duration::from_secs(10), "never became ready");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(400));
    // Still held: not running, no iterations, process alive.
    assert_eq!(reader.state(), State::Ready);
    assert_eq!(reader.iterations(), 0);
    assert_eq!(reader.start_ns(), 0);
    assert!(child.try_wait().unwrap().is_none());
    let released_at = workload::clock::monotonic_raw_ns();
    reader.release();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: RunSummary = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r.start_ns >= released_at, "loop started before release");
    // How fast the loop starts after go depends on the host's load: shown,
    // not asserted (no timed assertion in the default suite).
    eprintln!(
        "loop started {} us after go",
        (r.start_ns - released_at) / 1000
    );
    assert!(r.waited_go_ns.unwrap() >= 400_000_000);
    assert_eq!(reader.state(), State::Done);
    assert_eq!(reader.iterations(), r.iterations);
}

#[test]
fn wait_go_times_out_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("counter");
    let out = workload()
        .args(["--duration", "1s", "--counter", path.to_str().unwrap()])
        .args(["--wait-go", "--go-timeout", "100ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("release") && stderr.contains("counter"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn clocks_json_lists_every_method_with_a_cost() {
    let _g = serial();
    let out = workload().args(["clocks", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in ["tsc_hz", "invariant_tsc", "clocksource", "methods"] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    let methods = v["methods"].as_array().unwrap();
    let names: Vec<&str> = methods
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    let expected = [
        "rdtsc",
        "lfence; rdtsc",
        "rdtscp",
        "mfence; lfence; rdtsc",
        "clock_gettime(CLOCK_MONOTONIC)",
        "clock_gettime(CLOCK_MONOTONIC_RAW)",
        "clock_gettime(CLOCK_MONOTONIC_COARSE)",
        "clock_gettime(CLOCK_REALTIME)",
        "clock_gettime(CLOCK_BOOTTIME)",
        "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)",
        "clock_gettime(CLOCK_THREAD_CPUTIME_ID)",
        "syscall(SYS_clock_gettime, CLOCK_MONOTONIC)",
        "gettimeofday",
        "getrusage(RUSAGE_SELF)",
        "times",
        "clock",
    ];
    assert_eq!(names, expected);
    for m in methods {
        for key in [
            "name",
            "available",
            "cost_ns_min",
            "cost_ns_median",
            "cost_ticks_min",
            "cost_ticks_median",
            "granularity_ns",
            "resolution_ns",
            "backwards",
        ] {
            assert!(m.get(key).is_some(), "{} lacks {key}", m["name"]);
        }
        let name = m["name"].as_str().unwrap();
        let x86_only = name.contains("rdtsc");
        if !x86_only || cfg!(target_arch = "x86_64") {
            assert_eq!(m["available"], true, "{name} unavailable");
            let min = m["cost_ns_min"].as_f64().unwrap();
            let med = m["cost_ns_median"].as_f64().unwrap();
            assert!(
                min > 0.0 && min <= med && med < 100_000.0,
                "{name}: {min} {med}"
            );
        }
        // Monotonic clocks never go backwards.
        if name.contains("MONOTONIC") || name.contains("BOOTTIME") {
            assert_eq!(m["backwards"], false, "{name} went backwards");
        }
    }
    // The raw system call is dearer than the vDSO read of the same clock.
    let cost = |n: &str| {
        methods.iter().find(|m| m["name"] == n).unwrap()["cost_ns_min"]
            .as_f64()
            .unwrap()
    };
    assert!(
        cost("syscall(SYS_clock_gettime, CLOCK_MONOTONIC)")
            > cost("clock_gettime(CLOCK_MONOTONIC)")
    );
    if cfg!(target_arch = "x86_64") {
        let hz = v["tsc_hz"].as_f64().unwrap();
        assert!((1e8..1e10).contains(&hz), "tsc_hz {hz}");
    }
}

#[test]
fn timeline_mode_writes_its_gaps_and_histogram_and_counts_exactly() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gaps.bin");
    let out = workload()
        .args(["--duration", "300ms", "--cpu", "0", "--json", "--timeline"])
        .arg(&path)
        .assert()
        .success();
    let r: RunSummary = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let t = r.timeline.expect("no timeline in the report");
    let gaps = workload::timeline::read_gaps_file(&path).unwrap();
    // Every gap seen is stored (the default buffer holds 250 000 per s).
    assert_eq!(gaps.len() as u64, t.gaps);
    assert_eq!(t.gaps_dropped, 0);
    // The count is exact: whole stamped chunks.
    assert_eq!(r.iterations % t.stamp_chunk_iterations, 0);
    assert_eq!(r.iterations / t.stamp_chunk_iterations, t.chunks);
    let in_bins: u64 = t.recovery.iter().map(|b| b.chunks).sum();
    assert_eq!(in_bins + t.gaps, t.chunks);
    assert_eq!(t.recovery.len(), workload::timeline::RECOVERY_BINS);
    // The loop's window lies within the run's, gaps within the window and
    // in time order, each longer than the threshold.
    assert!(t.loop_start_ns >= r.start_ns && t.loop_end_ns <= r.end_ns + 1_000);
    for w in gaps.windows(2) {
        assert!(w[0][0] < w[1][0]);
    }
    for g in &gaps {
        assert!(g[1] - g[0] + 1 >= t.gap_threshold_ns, "{g:?}");
        assert!(g[0] >= t.loop_start_ns && g[1] <= t.loop_end_ns + 1);
    }
    let gap_time: u64 = gaps.iter().map(|g| g[2]).sum();
    assert!(gap_time.abs_diff(t.gap_time_ns) <= gaps.len() as u64);
    assert!(t.stamp_cost_ns > 0.0 && t.stamp_chunk_ns > t.stamp_cost_ns);
}

#[test]
fn a_full_gap_buffer_counts_what_it_cannot_store() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gaps.bin");
    // The tick alone gives hundreds of gaps per second: one slot is full
    // within milliseconds.
    let out = workload()
        .args([
            "--duration",
            "300ms",
            "--cpu",
            "0",
            "--json",
            "--max-gaps",
            "1",
            "--timeline",
        ])
        .arg(&path)
        .assert()
        .success();
    let r: RunSummary = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let t = r.timeline.unwrap();
    assert!(t.gaps > 1, "{t:?}");
    assert_eq!(t.gaps_dropped, t.gaps - 1);
    assert_eq!(workload::timeline::read_gaps_file(&path).unwrap().len(), 1);
    assert!(
        t.warnings.iter().any(|w| w.contains("--max-gaps")),
        "{:?}",
        t.warnings
    );
}

#[test]
fn timeline_bad_input_is_one_line_and_exit_2() {
    workload()
        .args([
            "--duration",
            "1s",
            "--max-gaps",
            "0",
            "--timeline",
            "/tmp/x",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--max-gaps"));
    // --max-gaps needs --timeline.
    workload()
        .args(["--duration", "1s", "--max-gaps", "10"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--timeline"));
}
