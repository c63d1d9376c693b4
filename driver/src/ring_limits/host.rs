//! What this host allows: its CPUs, page size, lock limits, memory and
//! descriptor limits, read from /proc and getrlimit.

use std::path::Path;

use procfs::Current;

use crate::perf::error::PARANOID_PATH;
use crate::system::settings::read_num;

/// What this host allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostLimits {
    /// Online CPUs (system scope opens one event and ring on each).
    pub online_cpus: Vec<u32>,
    /// Page size in bytes.
    pub page_size: u64,
    /// kernel.perf_event_mlock_kb (KiB per online CPU and user).
    pub perf_event_mlock_kb: u64,
    /// kernel.perf_event_paranoid (-1 lifts the lock limit).
    pub perf_event_paranoid: i64,
    /// RLIMIT_MEMLOCK soft limit in bytes (None: unlimited).
    pub memlock_bytes: Option<u64>,
    /// The process has CAP_IPC_LOCK (root has): no lock limit.
    pub cap_ipc_lock: bool,
    /// MemAvailable from /proc/meminfo, bytes (None: unknown).
    pub mem_available_bytes: Option<u64>,
    /// RLIMIT_NOFILE soft / hard limit (None: unlimited).
    pub nofile_soft: Option<u64>,
    /// See `nofile_soft`.
    pub nofile_hard: Option<u64>,
    /// Descriptors this process has open now.
    pub fds_open: u64,
}

impl HostLimits {
    /// Reads them from this host (unknown values are taken as unlimited:
    /// the check never refuses on a guess).
    pub fn read() -> HostLimits {
        let memlock = rustix::process::getrlimit(rustix::process::Resource::Memlock);
        let nofile = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        HostLimits {
            online_cpus: crate::sampler::online_cpus().unwrap_or_else(|_| vec![0]),
            page_size: u64::try_from(rustix::param::page_size()).unwrap_or(4096),
            // procfs has no reader for the perf sysctls.
            perf_event_mlock_kb: read_num(Path::new("/proc/sys/kernel/perf_event_mlock_kb"))
                .unwrap_or(516),
            perf_event_paranoid: read_num(Path::new(PARANOID_PATH)).unwrap_or(2),
            memlock_bytes: memlock.current,
            cap_ipc_lock: effective_capability(14).unwrap_or(false),
            // procfs gives bytes (the file's kB times 1024).
            mem_available_bytes: procfs::Meminfo::current()
                .ok()
                .and_then(|m| m.mem_available),
            nofile_soft: nofile.current,
            nofile_hard: nofile.maximum,
            // Kept: before Linux 6.2 procfs's fd_count counts one more (its own).
            fds_open: std::fs::read_dir("/proc/self/fd")
                .map(|d| d.count() as u64)
                .unwrap_or(16),
        }
    }

    /// Bytes of perf rings this process may lock (None: no lock limit, only
    /// memory).
    pub fn lock_limit_bytes(&self) -> Option<u64> {
        if self.cap_ipc_lock || self.perf_event_paranoid <= -1 {
            return None;
        }
        let per_user = self
            .perf_event_mlock_kb
            .saturating_mul(1024)
            .saturating_mul(self.online_cpus.len() as u64);
        Some(per_user.saturating_add(self.memlock_bytes.unwrap_or(u64::MAX / 2)))
    }
}

/// Whether capability `bit` is in this process's effective set (CapEff of
/// /proc/self/status; None: unreadable).
pub(crate) fn effective_capability(bit: u32) -> Option<bool> {
    let status = procfs::process::Process::myself()
        .and_then(|p| p.status())
        .ok()?;
    Some(status.capeff & (1u64 << bit) != 0)
}
