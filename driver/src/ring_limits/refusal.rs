//! Why a plan does not fit, with the numbers and the fixes: the error, the
//! fixes worked out for too little memory (one ring, shorter runs, root)
//! and for too few descriptors, and the byte counts as people read them.

use crate::sampler::{SamplerConfig, Scope};

use super::{FD_MARGIN, HostLimits, MemoryLimit, RunNeed, largest};

/// The plan does not fit: the numbers and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RingLimitError {
    /// The rings need more locked memory than allowed.
    #[error(
        "the sweep's largest run (run {}, {} Hz, {} rings) needs {} of perf ring buffers ({} on \
         the measured CPU, {} on each of the {} other CPUs) but {limit}; fix: {fix}",
        run.run_id,
        run.freq_hz,
        run.rings,
        bytes(run.locked_bytes),
        bytes(run.measured_ring_bytes),
        bytes(run.other_ring_bytes),
        run.rings.saturating_sub(1)
    )]
    Memory {
        /// The run that locks the most.
        run: Box<RunNeed>,
        /// What the limit is and where it comes from.
        limit: String,
        /// What to do.
        fix: String,
    },
    /// The events need more file descriptors than allowed.
    #[error(
        "the sweep's largest run (run {}) opens {} perf events; with the {open} descriptors \
         already open and a margin of {FD_MARGIN} that is {need} file descriptors, but \
         RLIMIT_NOFILE allows {soft} (hard limit {hard}); fix: {fix}",
        run.run_id,
        run.fds
    )]
    Fds {
        /// The run that opens the most.
        run: Box<RunNeed>,
        /// Descriptors open now.
        open: u64,
        /// Needed in all.
        need: u64,
        /// The soft limit.
        soft: u64,
        /// The hard limit (human).
        hard: String,
        /// What to do.
        fix: String,
    },
}

/// Bytes in KiB/MiB/GiB, for messages.
pub fn bytes(b: u64) -> String {
    const K: f64 = 1024.0;
    let v = b as f64;
    if v >= K * K * K {
        format!("{:.1} GiB", v / (K * K * K))
    } else if v >= K * K {
        format!("{:.1} MiB", v / (K * K))
    } else {
        format!("{:.0} KiB", v / K)
    }
}

/// The refusal when the largest run `mem` needs more locked memory than
/// `memory` allows: where the limit comes from, and what would fit.
pub(super) fn memory_refusal(
    configs: &[(u32, SamplerConfig)],
    limits: &HostLimits,
    memory: &MemoryLimit,
    mem: &RunNeed,
) -> RingLimitError {
    let limit = match memory.lock_bytes {
        Some(l) => format!(
            "this process may lock {} (kernel.perf_event_mlock_kb = {} KiB x {} CPUs + \
             RLIMIT_MEMLOCK {}; no CAP_IPC_LOCK)",
            bytes(l),
            limits.perf_event_mlock_kb,
            limits.online_cpus.len(),
            limits.memlock_bytes.map_or("unlimited".into(), bytes)
        ),
        None => format!(
            "only {} may be taken (half of MemAvailable {})",
            bytes(memory.bytes.unwrap_or(0)),
            bytes(limits.mem_available_bytes.unwrap_or(0))
        ),
    };
    let mut fixes = Vec::new();
    if mem.rings > 1 {
        fixes.push(one_ring_fix(configs, limits, memory));
    }
    match longest_fitting_secs(configs, limits, memory) {
        Some(secs) => fixes.push(format!("shorter runs (--duration {secs}s fits)")),
        None => fixes.push("shorter runs (--duration) or fewer high frequencies".into()),
    }
    if memory.lock_bytes.is_some() {
        fixes.push(
            "run as root (CAP_IPC_LOCK lifts the lock limit), or raise \
             kernel.perf_event_mlock_kb / `ulimit -l`"
                .into(),
        );
    }
    RingLimitError::Memory {
        run: Box::new(*mem),
        limit,
        fix: fixes.join("; or "),
    }
}

/// The same runs with `change` made to each sampler configuration.
fn changed(
    configs: &[(u32, SamplerConfig)],
    change: impl Fn(&SamplerConfig) -> SamplerConfig,
) -> Vec<(u32, SamplerConfig)> {
    configs.iter().map(|(id, c)| (*id, change(c))).collect()
}

/// The `--scope cpu` fix: what the same runs need with one ring, on the
/// measured CPU, and whether that still does not fit.
fn one_ring_fix(
    configs: &[(u32, SamplerConfig)],
    limits: &HostLimits,
    memory: &MemoryLimit,
) -> String {
    let cpu_only = changed(configs, |c| SamplerConfig {
        scope: Scope::Cpu,
        ..c.clone()
    });
    let (cpu_mem, _) = largest(&cpu_only, limits);
    format!(
        "--scope cpu (one ring on the measured CPU: {}{})",
        bytes(cpu_mem.locked_bytes),
        if memory.fits(&cpu_mem) {
            ""
        } else {
            ", still too much"
        }
    )
}

/// The longest whole-second duration (up to an hour) at which the runs
/// fit, among the durations shorter than some run's; None when none does.
fn longest_fitting_secs(
    configs: &[(u32, SamplerConfig)],
    limits: &HostLimits,
    memory: &MemoryLimit,
) -> Option<u64> {
    (1..=3600u64).rev().find(|&secs| {
        let short = changed(configs, |c| SamplerConfig {
            expected_duration: Some(std::time::Duration::from_secs(secs)),
            ..c.clone()
        });
        let longer = configs.iter().any(|(_, c)| {
            c.expected_duration
                .is_some_and(|d| d > std::time::Duration::from_secs(secs))
        });
        longer && memory.fits(&largest(&short, limits).0)
    })
}

/// The refusal when the run opening the most events, `most_fds`, needs
/// `fds_needed` descriptors in all and RLIMIT_NOFILE allows `soft`.
pub(super) fn fds_refusal(
    limits: &HostLimits,
    most_fds: &RunNeed,
    fds_needed: u64,
    soft: u64,
) -> RingLimitError {
    let hard_ok = limits.nofile_hard.is_none_or(|h| fds_needed <= h);
    let mut fix = format!(
        "`ulimit -n {}` before the sweep",
        fds_needed.next_power_of_two()
    );
    if !hard_ok {
        fix.push_str(" (above the hard limit: raise it as root, e.g. in limits.conf)");
    }
    if most_fds.rings > 1 {
        fix.push_str("; or --scope cpu (one event instead of one per CPU)");
    }
    RingLimitError::Fds {
        run: Box::new(*most_fds),
        open: limits.fds_open,
        need: fds_needed,
        soft,
        hard: limits
            .nofile_hard
            .map_or("unlimited".into(), |h| h.to_string()),
        fix,
    }
}
