//! The quiet check on the measured CPU before a run, and the choice of the
//! drain thread's CPU.

use std::time::Duration;

use super::clock::monotonic_ns;
use super::procstat::{ProcStat, busy_pct};

/// Result of the quiet check before a run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QuietReport {
    /// The CPU was idle (busy < threshold) in the last window.
    pub quiet: bool,
    /// Busy percentage in the last window.
    pub busy_pct: f64,
    /// Max procs_running seen while waiting (includes the driver itself).
    pub procs_running: u64,
    /// How long the check waited.
    pub waited_ns: u64,
}

/// Waits up to `max_wait` for `cpu` to be idle: busy below `threshold_pct`
/// over a `window` (100 ms windows of /proc/stat). Returns after the current
/// window when `interrupt` is set (Ctrl-C), not quiet.
pub fn wait_quiet(
    cpu: u32,
    max_wait: Duration,
    window: Duration,
    threshold_pct: f64,
    interrupt: &std::sync::atomic::AtomicBool,
) -> QuietReport {
    let start = monotonic_ns();
    let limit = u64::try_from(max_wait.as_nanos()).unwrap_or(u64::MAX);
    let mut report = QuietReport::default();
    loop {
        let Ok(a) = ProcStat::read() else {
            return report;
        };
        std::thread::sleep(window);
        let Ok(b) = ProcStat::read() else {
            return report;
        };
        report.busy_pct = busy_pct(a.cpu(cpu), b.cpu(cpu));
        report.procs_running = report.procs_running.max(b.procs_running);
        report.waited_ns = monotonic_ns().saturating_sub(start);
        report.quiet = report.busy_pct < threshold_pct;
        if report.quiet
            || report.waited_ns >= limit
            || interrupt.load(std::sync::atomic::Ordering::SeqCst)
        {
            return report;
        }
    }
}

/// The driver's choice of drain CPU: another online CPU than the measured
/// one (the highest).
pub fn other_cpu(measured: u32, online: &[u32]) -> Option<u32> {
    online.iter().rev().copied().find(|&c| c != measured)
}
