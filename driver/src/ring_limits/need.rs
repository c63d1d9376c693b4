//! What a run maps and opens: its rings (one per CPU the sampling event
//! is opened on, each with its control page) and its perf descriptors.

use crate::sampler::{SamplerConfig, ring_bytes_for};

use super::HostLimits;

/// What one run maps and opens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunNeed {
    /// The run.
    pub run_id: u32,
    /// Its frequency.
    pub freq_hz: u64,
    /// Rings (one per CPU the sampling event is opened on).
    pub rings: u64,
    /// Data bytes of the measured CPU's ring.
    pub measured_ring_bytes: u64,
    /// Data bytes of each other CPU's ring (the largest).
    pub other_ring_bytes: u64,
    /// Locked bytes: every ring's data plus its control page.
    pub locked_bytes: u64,
    /// perf event descriptors.
    pub fds: u64,
}

/// What a sampler configuration needs on a host with `online` CPUs.
pub fn run_need(cfg: &SamplerConfig, online: &[u32], page_size: u64) -> RunNeed {
    let cpus = cfg.cpus(online);
    let mut need = RunNeed {
        freq_hz: cfg.freq_hz,
        rings: cpus.len() as u64,
        ..RunNeed::default()
    };
    for &cpu in &cpus {
        let bytes = ring_bytes_for(cfg, cpu) as u64;
        if cpu == cfg.measured_cpu {
            need.measured_ring_bytes = bytes;
        } else {
            need.other_ring_bytes = need.other_ring_bytes.max(bytes);
        }
        need.locked_bytes = need
            .locked_bytes
            .saturating_add(bytes)
            .saturating_add(page_size);
    }
    need.fds = (cpus.len() + cfg.trace_kinds().len()) as u64;
    need
}

/// The run that locks the most memory and the run that opens the most
/// descriptors, of `configs` on this host.
pub(super) fn largest(configs: &[(u32, SamplerConfig)], limits: &HostLimits) -> (RunNeed, RunNeed) {
    let mut mem = RunNeed::default();
    let mut fds = RunNeed::default();
    for (id, cfg) in configs {
        let need = RunNeed {
            run_id: *id,
            ..run_need(cfg, &limits.online_cpus, limits.page_size)
        };
        if need.locked_bytes > mem.locked_bytes {
            mem = need;
        }
        if need.fds > fds.fds {
            fds = need;
        }
    }
    (mem, fds)
}
