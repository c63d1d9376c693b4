//! A sweep survives its own binary being replaced while it runs: the
//! driver re-executes itself as each run's workload, and `cargo build`
//! (rename over the file), `cp` or `install` during a sweep used to fail
//! every later run with "cannot start the workload: No such file or
//! directory". Against the real kernel: a copy of the driver runs a short
//! sweep, the copy is replaced by another file (renamed over it) and then
//! removed while the sweep runs, and every run must still be ok. Needs root
//! and perf (tests/all/common).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use driver::results::{read_manifest, read_runs};
use results_format::RunStatus;

/// Rows in `<out>/runs.csv` so far (0 while it does not exist).
fn rows_so_far(out: &Path) -> usize {
    std::fs::read_to_string(out.join("runs.csv"))
        .map(|t| t.lines().count().saturating_sub(1))
        .unwrap_or(0)
}

/// Waits until runs.csv has at least `n` rows or the sweep has exited.
fn wait_rows(out: &Path, n: usize, child: &mut std::process::Child) {
    let t = Instant::now();
    while rows_so_far(out) < n {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "no {n} rows in {} after 120 s",
            out.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_sweep_survives_its_binary_being_replaced_and_removed() {
    if !common::perf_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("driver");
    std::fs::copy(env!("CARGO_BIN_EXE_driver"), &bin).unwrap();
    let out = tmp.path().join("out");
    // 2 designs x (0 Hz, 100 Hz) x 3 blocks = 12 runs of 300 ms.
    let mut child = Command::new(&bin)
        .args([
            "sweep",
            "--freqs",
            "100",
            "--reps",
            "3",
            "--duration",
            "300ms",
            "--design",
            "classic,gaps",
            "--scope",
            "cpu",
            "--event",
            "cpu-clock",
            "--no-util",
            "--no-report",
            "--no-host-look",
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // After the first run: a new file renamed over the binary (what cargo
    // build does), so its path names another inode.
    wait_rows(&out, 1, &mut child);
    let new = tmp.path().join("driver.new");
    std::fs::copy(&bin, &new).unwrap();
    std::fs::rename(&new, &bin).unwrap();
    // A few runs later: no file at that path at all.
    wait_rows(&out, 4, &mut child);
    std::fs::remove_file(&bin).unwrap();
    let before_end = rows_so_far(&out);

    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "sweep failed: {stderr}");
    let m = read_manifest(&out).unwrap();
    let rows = read_runs(&out).unwrap();
    assert_eq!(rows.len(), 12, "{stderr}");
    assert_eq!(rows.len(), m.plan.len());
    // The replacement happened mid-sweep: runs were still to come.
    assert!(
        before_end < rows.len(),
        "the sweep ended before the binary was removed"
    );
    for r in &rows {
        assert_eq!(
            r.status,
            RunStatus::Ok,
            "run {} failed: {}",
            r.run_id,
            r.error
        );
        assert!(r.iterations > 0, "run {}", r.run_id);
    }
}
