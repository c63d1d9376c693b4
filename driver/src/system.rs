//! The host around a sweep: system settings changed and restored, the quiet
//! check on the measured CPU (/proc/stat), steal time, clocks and the
//! interrupt flag set by Ctrl-C/SIGTERM.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use results_format::SettingChange;

/// The sysctl bounding perf sample_freq.
pub const MAX_SAMPLE_RATE_PATH: &str = "/proc/sys/kernel/perf_event_max_sample_rate";

/// The sysctl bounding the CPU time perf's sampling interrupts may take
/// (the kernel lowers perf_event_max_sample_rate to keep under it).
pub const CPU_TIME_MAX_PERCENT_PATH: &str = "/proc/sys/kernel/perf_cpu_time_max_percent";

/// The two perf sysctls the kernel itself may change during a sweep
/// ("perf: interrupt took too long ... lowering kernel.perf_event_max_sample_rate").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerfLimits {
    /// perf_event_max_sample_rate (None: unreadable).
    pub max_sample_rate: Option<u64>,
    /// perf_cpu_time_max_percent (None: unreadable).
    pub cpu_time_max_percent: Option<u64>,
}

impl PerfLimits {
    /// Reads both sysctls.
    pub fn read() -> PerfLimits {
        PerfLimits {
            max_sample_rate: read_u64(Path::new(MAX_SAMPLE_RATE_PATH)).ok(),
            cpu_time_max_percent: read_u64(Path::new(CPU_TIME_MAX_PERCENT_PATH)).ok(),
        }
    }
}

/// A host error, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    /// Reading or writing a system file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The host's state file (what the driver changed) could not be written.
    #[error("{0}")]
    State(String),
    /// A system file had unexpected content.
    #[error("{}: cannot parse {text:?}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The content.
        text: String,
    },
}

/// Reads a one-number file such as a sysctl.
pub fn read_u64(path: &Path) -> Result<u64, SystemError> {
    let text = std::fs::read_to_string(path).map_err(|source| SystemError::Io {
        path: path.to_owned(),
        source,
    })?;
    text.trim().parse().map_err(|_| SystemError::Parse {
        path: path.to_owned(),
        text: text.trim().to_owned(),
    })
}

/// Changes system settings and writes the old values back when restored
/// or dropped (normal exit, error, panic unwinding). Ctrl-C and SIGTERM do
/// not kill the process: they set the interrupt flag and the sweep returns
/// normally, so the guard drops.
///
/// With [`SettingsGuard::persisted`], every change is first written to the
/// host's state file (`crate::hoststate`), before the setting itself, and
/// the file is removed once everything is restored: a `kill -9` leaves the
/// original values where the next driver command finds and restores them.
#[derive(Debug, Default)]
pub struct SettingsGuard {
    changes: Vec<SettingChange>,
    persist: Option<Persist>,
}

/// Where and under which name a guard records its changes.
#[derive(Debug, Clone)]
struct Persist {
    dir: PathBuf,
    results_dir: String,
    started_at: String,
}

impl SettingsGuard {
    /// A guard with nothing changed, recording nothing outside the process.
    pub fn new() -> Self {
        Self::default()
    }

    /// A guard that records its changes in the state file of `state_dir`
    /// (see `crate::hoststate`) before making them. The caller must hold
    /// the sweep lock: the state file is this process's while it does.
    pub fn persisted(state_dir: &Path, results_dir: &Path) -> Self {
        SettingsGuard {
            changes: Vec::new(),
            persist: Some(Persist {
                dir: state_dir.to_owned(),
                results_dir: results_dir.display().to_string(),
                started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            }),
        }
    }

    /// Rewrites the state file with the changes not yet restored (removes
    /// it when there are none).
    fn persist(&self, changes: &[SettingChange]) -> Result<(), SystemError> {
        let Some(p) = &self.persist else {
            return Ok(());
        };
        let pending: Vec<SettingChange> = changes.iter().filter(|c| !c.restored).cloned().collect();
        let result = if pending.is_empty() {
            crate::hoststate::remove_state(&p.dir)
        } else {
            crate::hoststate::write_state(
                &p.dir,
                &crate::hoststate::StateFile {
                    pid: std::process::id(),
                    results_dir: p.results_dir.clone(),
                    started_at: p.started_at.clone(),
                    changes: pending,
                },
            )
        };
        result.map_err(|e| SystemError::State(e.to_string()))
    }

    /// Writes `new` to `path`, remembering the old content: recorded in the
    /// state file first (when persisted), so the original survives a kill.
    pub fn set(&mut self, path: &Path, new: &str) -> Result<(), SystemError> {
        let old = std::fs::read_to_string(path).map_err(|source| SystemError::Io {
            path: path.to_owned(),
            source,
        })?;
        self.adopt(SettingChange {
            path: path.display().to_string(),
            old: old.trim().to_owned(),
            new: new.to_owned(),
            restored: false,
        })?;
        if let Err(source) = std::fs::write(path, new) {
            // Not changed after all: drop it from the record.
            self.changes.pop();
            if let Err(e) = self.persist(&self.changes) {
                tracing::error!("{e}");
            }
            return Err(SystemError::Io {
                path: path.to_owned(),
                source,
            });
        }
        tracing::warn!(
            "changed {}: {} -> {new} (restored at exit)",
            path.display(),
            old.trim()
        );
        Ok(())
    }

    /// Takes over a change made earlier (a leftover of a driver that died,
    /// kept with `--leave-settings`): recorded like one of this guard's own,
    /// so the original is written back when the guard restores.
    pub fn adopt(&mut self, change: SettingChange) -> Result<(), SystemError> {
        let mut next = self.changes.clone();
        next.push(change);
        self.persist(&next)?;
        self.changes = next;
        Ok(())
    }

    /// Writes every old value back, newest first. Returns the errors. The
    /// state file keeps only what could not be restored.
    pub fn restore(&mut self) -> Vec<SystemError> {
        let mut errors = Vec::new();
        for change in self.changes.iter_mut().rev().filter(|c| !c.restored) {
            match std::fs::write(&change.path, &change.old) {
                Ok(()) => {
                    change.restored = true;
                    tracing::info!("restored {} = {}", change.path, change.old);
                }
                Err(source) => {
                    tracing::error!("cannot restore {} to {}: {source}", change.path, change.old);
                    errors.push(SystemError::Io {
                        path: PathBuf::from(&change.path),
                        source,
                    });
                }
            }
        }
        if let Err(e) = self.persist(&self.changes) {
            tracing::error!("{e}");
            errors.push(e);
        }
        errors
    }

    /// The changes so far, for the manifest.
    pub fn changes(&self) -> &[SettingChange] {
        &self.changes
    }
}

impl Drop for SettingsGuard {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

/// Installs the Ctrl-C/SIGTERM handler (once per process) and returns the
/// flag it sets. The executor polls it between and during runs.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = Arc::clone(&flag);
        if let Err(e) = ctrlc::set_handler(move || {
            if f.swap(true, Ordering::SeqCst) {
                // Second Ctrl-C: the user insists.
                eprintln!("interrupted again: stopping now");
            } else {
                eprintln!("interrupted: stopping the current run, restoring settings");
            }
        }) {
            tracing::warn!("cannot install the Ctrl-C handler: {e}");
        }
        flag
    })
    .clone()
}

/// CLOCK_MONOTONIC in ns (the clock absolute sleeps use).
pub fn monotonic_ns() -> u64 {
    ts_ns(rustix::time::clock_gettime(
        rustix::time::ClockId::Monotonic,
    ))
}

/// CPU time of this process (all threads) in ns.
pub fn process_cpu_ns() -> u64 {
    ts_ns(rustix::time::clock_gettime(
        rustix::time::ClockId::ProcessCPUTime,
    ))
}

fn ts_ns(ts: rustix::time::Timespec) -> u64 {
    u64::try_from(ts.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(ts.tv_nsec).unwrap_or(0))
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline_ns` (TIMER_ABSTIME), so
/// phase boundaries do not accumulate the wake-up latency.
pub fn sleep_until_monotonic(deadline_ns: u64) {
    let ts = rustix::time::Timespec {
        tv_sec: i64::try_from(deadline_ns / 1_000_000_000).unwrap_or(i64::MAX),
        tv_nsec: i64::try_from(deadline_ns % 1_000_000_000).unwrap_or(0),
    };
    loop {
        match rustix::thread::clock_nanosleep_absolute(rustix::time::ClockId::Monotonic, &ts) {
            Err(rustix::io::Errno::INTR) => continue,
            _ => return,
        }
    }
}

/// One CPU's line of /proc/stat, in USER_HZ ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// user + nice + system + irq + softirq (+ guest counted in user)
    pub busy: u64,
    /// idle + iowait
    pub idle: u64,
    /// steal
    pub steal: u64,
}

/// What /proc/stat says at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// Per CPU, indexed by CPU number.
    pub cpus: Vec<Option<CpuTicks>>,
    /// Runnable tasks right now (procs_running).
    pub procs_running: u64,
}

impl ProcStat {
    /// Parses /proc/stat text.
    pub fn parse(text: &str) -> Self {
        let mut stat = ProcStat::default();
        for line in text.lines() {
            let mut fields = line.split_ascii_whitespace();
            let Some(name) = fields.next() else { continue };
            if name == "procs_running" {
                stat.procs_running = fields.next().and_then(|v| v.parse().ok()).unwrap_or(0);
                continue;
            }
            let Some(num) = name.strip_prefix("cpu") else {
                continue;
            };
            let Ok(cpu) = num.parse::<usize>() else {
                continue;
            };
            let v: Vec<u64> = fields.map(|f| f.parse().unwrap_or(0)).collect();
            let at = |i: usize| v.get(i).copied().unwrap_or(0);
            // user nice system idle iowait irq softirq steal guest guest_nice
            let ticks = CpuTicks {
                busy: at(0) + at(1) + at(2) + at(5) + at(6),
                idle: at(3) + at(4),
                steal: at(7),
            };
            if stat.cpus.len() <= cpu {
                stat.cpus.resize(cpu + 1, None);
            }
            stat.cpus[cpu] = Some(ticks);
        }
        stat
    }

    /// Reads /proc/stat.
    pub fn read() -> Result<Self, SystemError> {
        let path = Path::new("/proc/stat");
        let text = std::fs::read_to_string(path).map_err(|source| SystemError::Io {
            path: path.to_owned(),
            source,
        })?;
        Ok(Self::parse(&text))
    }

    /// Ticks of one CPU.
    pub fn cpu(&self, cpu: u32) -> CpuTicks {
        usize::try_from(cpu)
            .ok()
            .and_then(|i| self.cpus.get(i).copied().flatten())
            .unwrap_or_default()
    }
}

/// Nanoseconds per USER_HZ tick.
pub fn ns_per_tick() -> u64 {
    1_000_000_000 / rustix::param::clock_ticks_per_second().max(1)
}

/// Busy percentage of one CPU between two /proc/stat reads.
pub fn busy_pct(before: CpuTicks, after: CpuTicks) -> f64 {
    let busy = after.busy.saturating_sub(before.busy) + after.steal.saturating_sub(before.steal);
    let idle = after.idle.saturating_sub(before.idle);
    let total = busy + idle;
    if total == 0 {
        return 0.0;
    }
    100.0 * busy as f64 / total as f64
}

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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn quiet_check_returns_on_interrupt() {
        // Never quiet (threshold below 0%), a 10 s limit: only the interrupt
        // can end it after the first 10 ms window.
        let stop = std::sync::atomic::AtomicBool::new(true);
        let r = wait_quiet(
            0,
            Duration::from_secs(10),
            Duration::from_millis(10),
            -1.0,
            &stop,
        );
        assert!(!r.quiet);
        assert!(r.waited_ns < 5_000_000_000, "waited {} ns", r.waited_ns);
    }

    const STAT: &str = "cpu  10 0 10 100 0 0 0 5 0 0\n\
        cpu0 4 0 6 50 0 0 0 2 0 0\n\
        cpu1 6 1 4 50 3 2 1 3 0 0\n\
        intr 1 2 3\nprocs_running 3\nprocs_blocked 0\n";

    #[test]
    fn parses_proc_stat() {
        let s = ProcStat::parse(STAT);
        assert_eq!(s.procs_running, 3);
        assert_eq!(s.cpus.len(), 2);
        assert_eq!(
            s.cpu(1),
            CpuTicks {
                busy: 14,
                idle: 53,
                steal: 3
            }
        );
        assert_eq!(s.cpu(7), CpuTicks::default());
    }

    #[test]
    fn busy_percentage() {
        let a = CpuTicks {
            busy: 10,
            idle: 90,
            steal: 0,
        };
        let b = CpuTicks {
            busy: 15,
            idle: 185,
            steal: 0,
        };
        assert!((busy_pct(a, b) - 5.0).abs() < 1e-9);
        assert_eq!(busy_pct(a, a), 0.0);
    }

    #[test]
    fn guard_restores_on_drop() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("sysctl");
        std::fs::write(&p, "100000\n").unwrap();
        {
            let mut g = SettingsGuard::new();
            g.set(&p, "200000").unwrap();
            assert_eq!(std::fs::read_to_string(&p).unwrap(), "200000");
            assert_eq!(g.changes()[0].old, "100000");
            assert!(!g.changes()[0].restored);
        }
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "100000");
    }

    #[test]
    fn persisted_guard_records_before_changing_and_clears_after_restoring() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("sysctl");
        let state = tmp.path().join("state");
        std::fs::write(&p, "100000\n").unwrap();
        let mut g = SettingsGuard::persisted(&state, Path::new("/r"));
        g.set(&p, "150000").unwrap();
        let s = crate::hoststate::read_state(&state).unwrap().unwrap();
        assert_eq!(s.pid, std::process::id());
        assert_eq!(s.changes.len(), 1);
        assert_eq!(
            (s.changes[0].old.as_str(), s.changes[0].new.as_str()),
            ("100000", "150000")
        );
        // What a kill -9 leaves: the process gone, the file still there.
        std::mem::forget(g);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "150000");
        let r = crate::hoststate::handle_leftovers(&state, crate::hoststate::OnLeftover::Restore)
            .unwrap();
        assert_eq!(
            r.items[0].action,
            crate::hoststate::LeftoverAction::Restored
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "100000");
        // A clean run: recorded, restored, file gone.
        {
            let mut g = SettingsGuard::persisted(&state, Path::new("/r"));
            g.set(&p, "150000").unwrap();
            assert!(state.join(crate::hoststate::STATE_FILE).exists());
            assert!(g.restore().is_empty());
        }
        assert!(!state.join(crate::hoststate::STATE_FILE).exists());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "100000");
    }

    #[test]
    fn persisted_guard_refuses_to_change_what_it_cannot_record() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("sysctl");
        std::fs::write(&p, "1").unwrap();
        // The state "directory" is a file: recording fails, nothing changes.
        let state = tmp.path().join("not-a-dir");
        std::fs::write(&state, "").unwrap();
        let mut g = SettingsGuard::persisted(&state, Path::new("/r"));
        assert!(g.set(&p, "2").is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "1");
        assert!(g.changes().is_empty());
    }

    #[test]
    fn guard_restores_on_panic() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("sysctl");
        std::fs::write(&p, "1").unwrap();
        let p2 = p.clone();
        let r = std::panic::catch_unwind(move || {
            let mut g = SettingsGuard::new();
            g.set(&p2, "2").unwrap();
            panic!("boom");
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "1");
    }

    #[test]
    fn drain_cpu_differs() {
        assert_eq!(other_cpu(1, &[0, 1]), Some(0));
        assert_eq!(other_cpu(0, &[0, 1]), Some(1));
        assert_eq!(other_cpu(0, &[0]), None);
        // A hole in the online list is never chosen.
        assert_eq!(other_cpu(3, &[0, 1, 3]), Some(1));
    }
}
