//! What the real-kernel tests share: one readiness check, and one way to
//! skip. Under `PERF_TESTS=require` (CI, root on a VM with tracefs) a test
//! that cannot run fails; elsewhere it skips with a printed reason.
#![allow(dead_code)]

use driver::sampler::{EventKind, resolve_event};

/// Why the real-kernel tests cannot run here (None: they can): they need
/// root, tracefs (mounted when absent) and a cpu-clock event that opens.
pub fn perf_missing() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("not root".into());
    }
    if let Err(e) = driver::perf::tracefs::find_or_mount() {
        return Some(format!("no tracefs: {e}"));
    }
    if let Err(e) = resolve_event(EventKind::CpuClock) {
        return Some(format!("cpu-clock does not open: {e}"));
    }
    None
}

/// True when the real-kernel tests can run. Otherwise [`skip_or_fail`]
/// with the reason and false: the caller returns.
pub fn perf_ready() -> bool {
    match perf_missing() {
        None => true,
        Some(why) => {
            skip_or_fail(&format!("perf is unavailable: {why}"));
            false
        }
    }
}

/// The calling test cannot run because of `reason`: panics under
/// `PERF_TESTS=require`, else prints the reason (the caller then returns).
#[track_caller]
pub fn skip_or_fail(reason: &str) {
    if std::env::var("PERF_TESTS").as_deref() == Ok("require") {
        panic!("PERF_TESTS=require, but {reason}");
    }
    eprintln!("skipping: {reason} (PERF_TESTS=require makes this a failure)");
}

/// `driver sweep ARGS --out OUT`, to be run by the caller.
pub fn sweep_into(args: &[&str], out: &std::path::Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("driver").expect("the driver binary");
    c.arg("sweep").args(args).arg("--out").arg(out);
    c
}

/// A test that runs a real sweep (or changes a host setting) holds this:
/// the sweep lock and the perf sysctls are host-wide, so such tests run
/// one at a time even when the harness runs a file's tests in parallel
/// (`cargo test` without `--test-threads=1`; files run one after another).
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
