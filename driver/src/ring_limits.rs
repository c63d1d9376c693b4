//! Will the sweep's rings and file descriptors fit on this host? Checked
//! before the first run, so a big host refuses with the numbers and the
//! fix instead of failing (or swapping) in the middle of a sweep.
//!
//! System scope opens the sampling event on every online CPU, each with its
//! own mmapped ring ([`crate::sampler::ring_bytes_for`]: the measured CPU's
//! sized for its samples plus the handler tracepoints, the others' for their
//! own samples only). The memory is locked kernel memory. The kernel's
//! limit (perf_mmap() in kernel/events/core.c): each user may lock
//! `perf_event_mlock_kb` per online CPU for perf rings, beyond that the
//! process's RLIMIT_MEMLOCK; neither applies with CAP_IPC_LOCK (root) or
//! `perf_event_paranoid` = -1, where the only bound is memory itself (we
//! allow half of MemAvailable). Every ring costs one control page on top of
//! its data. File descriptors: one sampling event per CPU plus the handler
//! tracepoints, on top of what the driver already has open, against
//! RLIMIT_NOFILE.
//!
//! Parts: `host` reads what this host allows, `need` works out what each
//! run maps and opens, `refusal` words a refusal with its numbers and
//! fixes; [`fit`] here puts them together.

use crate::sampler::SamplerConfig;

pub(crate) mod host;
mod need;
mod refusal;
#[cfg(test)]
mod tests;

pub use host::HostLimits;
use need::largest;
pub use need::{RunNeed, run_need};
pub use refusal::{RingLimitError, bytes};
use refusal::{fds_refusal, memory_refusal};

/// File descriptors the driver needs besides the perf events: the results
/// files, the workload child's pipes and counter file, /proc reads, and
/// slack.
pub const FD_MARGIN: u64 = 32;

/// Largest share of MemAvailable the rings may take where no lock limit
/// applies (root): the rest of the host must keep running.
pub const MEM_AVAILABLE_SHARE: f64 = 0.5;

/// The largest run of the plan, and what the host allows.
#[derive(Debug, Clone, PartialEq)]
pub struct RingFit {
    /// The run that locks the most memory.
    pub largest: RunNeed,
    /// The run that opens the most descriptors.
    pub most_fds: RunNeed,
    /// Bytes the rings may lock (the lock limit, or the share of
    /// MemAvailable where there is none; None: unknown).
    pub memory_limit_bytes: Option<u64>,
    /// Descriptors needed at most (events plus what is open plus margin).
    pub fds_needed: u64,
}

impl RingFit {
    /// One line for the log.
    pub fn summary(&self) -> String {
        let others = if self.largest.rings > 1 {
            format!(
                ", {} on each of {} other CPUs",
                bytes(self.largest.other_ring_bytes),
                self.largest.rings - 1
            )
        } else {
            String::new()
        };
        format!(
            "ring limits: the largest run (run {}, {} Hz) maps {} ring(s), {} locked ({} on the \
             measured CPU{others}), limit {}; at most {} file descriptors",
            self.largest.run_id,
            self.largest.freq_hz,
            self.largest.rings,
            bytes(self.largest.locked_bytes),
            bytes(self.largest.measured_ring_bytes),
            self.memory_limit_bytes.map_or("none known".into(), bytes),
            self.fds_needed
        )
    }
}

/// How much the rings may lock on this host.
struct MemoryLimit {
    /// The lock limit (None: no lock limit applies).
    lock_bytes: Option<u64>,
    /// The lock limit, or the share of MemAvailable where there is none
    /// (None: unknown, and nothing is refused).
    bytes: Option<u64>,
}

impl MemoryLimit {
    /// The limit on `limits`' host.
    fn of(limits: &HostLimits) -> MemoryLimit {
        let lock_bytes = limits.lock_limit_bytes();
        let bytes = lock_bytes.or_else(|| {
            limits
                .mem_available_bytes
                .map(|m| (m as f64 * MEM_AVAILABLE_SHARE) as u64)
        });
        MemoryLimit { lock_bytes, bytes }
    }

    /// Whether a run's locked bytes fit.
    fn fits(&self, need: &RunNeed) -> bool {
        self.bytes.is_none_or(|l| need.locked_bytes <= l)
    }
}

/// Checks the plan's runs (their samplers' configurations, by run id)
/// against the host.
pub fn fit(
    configs: &[(u32, SamplerConfig)],
    limits: &HostLimits,
) -> Result<RingFit, RingLimitError> {
    let (mem, most_fds) = largest(configs, limits);
    let memory = MemoryLimit::of(limits);
    if !memory.fits(&mem) {
        return Err(memory_refusal(configs, limits, &memory, &mem));
    }
    let fds_needed = most_fds
        .fds
        .saturating_add(limits.fds_open)
        .saturating_add(FD_MARGIN);
    if let Some(soft) = limits.nofile_soft
        && fds_needed > soft
    {
        return Err(fds_refusal(limits, &most_fds, fds_needed, soft));
    }
    Ok(RingFit {
        largest: mem,
        most_fds,
        memory_limit_bytes: memory.bytes,
        fds_needed,
    })
}
