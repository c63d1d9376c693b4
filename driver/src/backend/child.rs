//! The workload child process: started from this binary (a path that
//! survives the binary being replaced), pinned by itself to the measured
//! CPU, watched until it is ready and until its loop ends, killed and
//! reaped whatever happens.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::failed;
use crate::exec::RunError;
use crate::sampler::Sampler;
pub(super) use crate::system::process::{read_pipe, spawn_unpinned};
use workload::clock::monotonic_raw_ns;

/// Kills and reaps the child when dropped (interruption, error).
pub(super) struct ChildGuard(pub(super) Option<Child>);

impl ChildGuard {
    pub(super) fn child(&mut self) -> Option<&mut Child> {
        self.0.as_mut()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

/// The longest a workload may take to be set up.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long to sleep before looking at the workload again while its loop
/// runs: until 20 ms before its deadline in steps of at most 100 ms (so
/// Ctrl-C is noticed), then 1 ms, so sampling stops within ~1 ms of the
/// loop's end. A 2 ms poll for the whole run cost the driver ~75 ms of CPU
/// per 10 s run, all of it while sampling.
fn end_wait_pause(start_ns: u64, duration_ns: u64, now_ns: u64) -> Duration {
    const NEAR: u64 = 20_000_000;
    const STEP: u64 = 100_000_000;
    if start_ns == 0 {
        return Duration::from_millis(1);
    }
    let wake = start_ns.saturating_add(duration_ns).saturating_sub(NEAR);
    match wake.checked_sub(now_ns) {
        Some(left) if left > 0 => Duration::from_nanos(left.min(STEP)),
        _ => Duration::from_millis(1),
    }
}

/// This binary as a child process, started from `/proc/self/exe`: the
/// kernel's link to the executable this process runs, which stays valid
/// when the file at its path is replaced during a sweep (`cargo build`
/// renames a new binary over it, `cp` and `install` unlink or rewrite it).
/// `std::env::current_exe()` reads the same link but returns a path, which
/// then names the new file or, once the old one is gone, nothing ("cannot
/// start the workload: No such file or directory"; `<path> (deleted)`). The
/// child's argv\[0\] stays the name the driver was started as, for its
/// messages.
pub(super) fn self_command() -> Command {
    let mut cmd = Command::new(SELF_EXE);
    if let Some(arg0) = std::env::args_os().next() {
        cmd.arg0(arg0);
    }
    cmd
}

/// The running executable, whatever has happened to its path since (Linux).
// Kept: a path to exec, nothing is parsed.
const SELF_EXE: &str = "/proc/self/exe";

/// What a workload child is asked to do.
pub(super) struct WorkloadArgs<'a> {
    /// Its loop's length, ns.
    pub(super) duration_ns: u64,
    /// The CPU it pins itself to.
    pub(super) cpu: u32,
    /// What its loop does.
    pub(super) kind: &'a workload::work::WorkKind,
    /// Its counter file.
    pub(super) counter: &'a Path,
    /// Its gaps file (timeline mode), if any.
    pub(super) gaps: Option<&'a Path>,
}

/// The workload child: this binary's hidden `workload` subcommand,
/// waiting for the go signal on its counter file, with its timeline
/// written to the gaps file when one is given (the gaps design, the look
/// at the host).
pub(super) fn workload_command(w: &WorkloadArgs<'_>) -> Command {
    let mut cmd = self_command();
    cmd.arg("workload")
        .arg("--duration")
        .arg(format!("{}ns", w.duration_ns))
        .arg("--cpu")
        .arg(w.cpu.to_string())
        .arg("--work")
        .arg(w.kind.name())
        .arg("--json")
        .arg("--counter")
        .arg(w.counter)
        .arg("--wait-go")
        .arg("--go-timeout")
        .arg("60s")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: Ctrl-C reaches the driver only, which
        // stops the child itself.
        .process_group(0);
    if let Some(path) = w.gaps {
        cmd.arg("--timeline").arg(path);
    }
    cmd
}

/// Waits for the workload to exit, switching the sampler off as soon as
/// its loop is done.
pub(super) fn wait_end(
    guard: &mut ChildGuard,
    reader: &workload::counter::CounterReader,
    sampler: Option<&Sampler>,
    duration_ns: u64,
    interrupt: &AtomicBool,
) -> Result<std::process::ExitStatus, RunError> {
    loop {
        if interrupt.load(Ordering::SeqCst) {
            return Err(RunError::Interrupted);
        }
        if reader.state() == workload::counter::State::Done
            && let Some(s) = &sampler
        {
            let _ = s.disable();
        }
        let Some(c) = guard.child() else {
            return Err(failed("workload process lost"));
        };
        match c.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) => std::thread::sleep(end_wait_pause(
                reader.start_ns(),
                duration_ns,
                monotonic_raw_ns(),
            )),
            Err(e) => return Err(failed(e)),
        }
    }
}

/// Waits for the workload to be set up (pinned, calibrated: its counter
/// says ready); `Ok(Err(status))` when it exited first.
pub(super) fn wait_ready(
    guard: &mut ChildGuard,
    counter_path: &Path,
    interrupt: &AtomicBool,
) -> Result<Result<workload::counter::CounterReader, std::process::ExitStatus>, RunError> {
    let t = Instant::now();
    loop {
        if interrupt.load(Ordering::SeqCst) {
            return Err(RunError::Interrupted);
        }
        if let Some(c) = guard.child()
            && let Ok(Some(status)) = c.try_wait()
        {
            return Ok(Err(status));
        }
        if let Ok(r) = workload::counter::CounterReader::open(counter_path)
            && r.state() == workload::counter::State::Ready
        {
            return Ok(Ok(r));
        }
        if t.elapsed() > READY_TIMEOUT {
            return Err(failed(format!(
                "workload not ready after {READY_TIMEOUT:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_wait_sleeps_through_the_loop_then_polls_finely() {
        let s = 1_000_000_000;
        let d = 10_000_000_000;
        // Loop not started yet: poll.
        assert_eq!(end_wait_pause(0, d, s), Duration::from_millis(1));
        // Early in the loop: the 100 ms step.
        assert_eq!(end_wait_pause(s, d, s), Duration::from_millis(100));
        // 50 ms before the deadline: sleep until 20 ms before it.
        assert_eq!(
            end_wait_pause(s, d, s + d - 50_000_000),
            Duration::from_millis(30)
        );
        // Within 20 ms of the deadline, and after it: 1 ms.
        assert_eq!(
            end_wait_pause(s, d, s + d - 10_000_000),
            Duration::from_millis(1)
        );
        assert_eq!(end_wait_pause(s, d, s + d + 5), Duration::from_millis(1));
    }
}
