//! /proc/stat: each CPU's busy, idle and steal ticks.

use std::path::Path;

use super::settings::{SystemError, read_text};

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
    // Kept, not procfs's KernelStats: it has the same ticks but lists CPUs
    // by line order without their number, and an offline CPU has no line.
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
        Ok(Self::parse(&read_text(Path::new("/proc/stat"))?))
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
