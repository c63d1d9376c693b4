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

use crate::backend::{opens_sampler, sampler_config_for};
use crate::config::SweepOptions;
use crate::plan::PlannedRun;
use crate::sampler::{EventKind, SamplerConfig, Scope, ring_bytes_for};

/// File descriptors the driver needs besides the perf events: the results
/// files, the workload child's pipes and counter file, /proc reads, and
/// slack.
pub const FD_MARGIN: u64 = 32;

/// Largest share of MemAvailable the rings may take where no lock limit
/// applies (root): the rest of the host must keep running.
pub const MEM_AVAILABLE_SHARE: f64 = 0.5;

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
        let num = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .and_then(|t| t.trim().parse::<i64>().ok())
        };
        let memlock = rustix::process::getrlimit(rustix::process::Resource::Memlock);
        let nofile = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        HostLimits {
            online_cpus: crate::sampler::online_cpus().unwrap_or_else(|_| vec![0]),
            page_size: u64::try_from(rustix::param::page_size()).unwrap_or(4096),
            perf_event_mlock_kb: num("/proc/sys/kernel/perf_event_mlock_kb")
                .and_then(|v| u64::try_from(v).ok())
                .unwrap_or(516),
            perf_event_paranoid: num("/proc/sys/kernel/perf_event_paranoid").unwrap_or(2),
            memlock_bytes: memlock.current,
            cap_ipc_lock: effective_capability(14),
            mem_available_bytes: std::fs::read_to_string("/proc/meminfo")
                .ok()
                .and_then(|t| meminfo_kb(&t, "MemAvailable"))
                .map(|kb| kb.saturating_mul(1024)),
            nofile_soft: nofile.current,
            nofile_hard: nofile.maximum,
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

/// Whether capability `bit` is in this process's effective set.
fn effective_capability(bit: u32) -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1u64 << bit) != 0)
}

/// A `Key:   123 kB` line of /proc/meminfo, in KiB.
pub fn meminfo_kb(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

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
    let cpus: Vec<u32> = match cfg.scope {
        Scope::Cpu => vec![cfg.measured_cpu],
        Scope::System | Scope::Task(_) => online.to_vec(),
    };
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
    let tracepoints = match (cfg.trace_handler, cfg.event.is_hardware()) {
        (false, _) => 0,
        (true, true) => 1,  // nmi:nmi_handler
        (true, false) => 2, // hrtimer entry + exit
    } + if cfg.trace_irq { 2 } else { 0 };
    need.fds = cpus.len() as u64 + tracepoints;
    need
}

/// The largest run of the plan, and what the host allows.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
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

impl Budget {
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
            "ring budget: the largest run (run {}, {} Hz) maps {} ring(s), {} locked ({} on the \
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

/// The plan does not fit: the numbers and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    /// The rings need more locked memory than allowed.
    #[error(
        "the sweep's largest run (run {run_id}, {freq_hz} Hz, {rings} rings) needs {} of perf \
         ring buffers ({} on the measured CPU, {} on each of the {} other CPUs) but {limit}; \
         fix: {fix}",
        bytes(*need_bytes),
        bytes(*measured_bytes),
        bytes(*other_bytes),
        rings.saturating_sub(1)
    )]
    Memory {
        /// The run.
        run_id: u32,
        /// Its frequency.
        freq_hz: u64,
        /// Its rings.
        rings: u64,
        /// Bytes needed.
        need_bytes: u64,
        /// The measured CPU's ring.
        measured_bytes: u64,
        /// Another CPU's ring.
        other_bytes: u64,
        /// What the limit is and where it comes from.
        limit: String,
        /// What to do.
        fix: String,
    },
    /// The events need more file descriptors than allowed.
    #[error(
        "the sweep's largest run (run {run_id}) opens {events} perf events; with the {open} \
         descriptors already open and a margin of {FD_MARGIN} that is {need} file descriptors, \
         but RLIMIT_NOFILE allows {soft} (hard limit {hard}); fix: {fix}"
    )]
    Fds {
        /// The run.
        run_id: u32,
        /// Its perf events.
        events: u64,
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

/// The sampler configuration of every planned run that opens one.
pub fn plan_configs(
    plan: &[PlannedRun],
    opts: &SweepOptions,
    event: EventKind,
    drain_cpu: Option<u32>,
) -> Vec<(u32, SamplerConfig)> {
    plan.iter()
        .filter(|r| opens_sampler(r))
        .map(|r| (r.run_id, sampler_config_for(event, drain_cpu, r, opts, 0)))
        .collect()
}

fn largest(configs: &[(u32, SamplerConfig)], limits: &HostLimits) -> (RunNeed, RunNeed) {
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

/// Checks the plan's runs (from [`plan_configs`]) against the host.
pub fn check(configs: &[(u32, SamplerConfig)], limits: &HostLimits) -> Result<Budget, BudgetError> {
    let (mem, most_fds) = largest(configs, limits);
    let lock_limit = limits.lock_limit_bytes();
    let memory_limit = lock_limit.or_else(|| {
        limits
            .mem_available_bytes
            .map(|m| (m as f64 * MEM_AVAILABLE_SHARE) as u64)
    });
    let fits = |need: &RunNeed| memory_limit.is_none_or(|l| need.locked_bytes <= l);
    if !fits(&mem) {
        let limit = match lock_limit {
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
                bytes(memory_limit.unwrap_or(0)),
                bytes(limits.mem_available_bytes.unwrap_or(0))
            ),
        };
        let mut fixes = Vec::new();
        // The same runs with one ring: what --scope cpu would need.
        let cpu_only: Vec<(u32, SamplerConfig)> = configs
            .iter()
            .map(|(id, c)| {
                (
                    *id,
                    SamplerConfig {
                        scope: Scope::Cpu,
                        ..c.clone()
                    },
                )
            })
            .collect();
        let (cpu_mem, _) = largest(&cpu_only, limits);
        if mem.rings > 1 {
            fixes.push(format!(
                "--scope cpu (one ring on the measured CPU: {}{})",
                bytes(cpu_mem.locked_bytes),
                if fits(&cpu_mem) {
                    ""
                } else {
                    ", still too much"
                }
            ));
        }
        // Shorter runs: the longest whole-second duration that fits.
        let shorter = (1..=3600u64).rev().find(|&secs| {
            let short: Vec<(u32, SamplerConfig)> = configs
                .iter()
                .map(|(id, c)| {
                    (
                        *id,
                        SamplerConfig {
                            expected_duration: Some(std::time::Duration::from_secs(secs)),
                            ..c.clone()
                        },
                    )
                })
                .collect();
            let longer = configs.iter().any(|(_, c)| {
                c.expected_duration
                    .is_some_and(|d| d > std::time::Duration::from_secs(secs))
            });
            longer && fits(&largest(&short, limits).0)
        });
        match shorter {
            Some(secs) => fixes.push(format!("shorter runs (--duration {secs}s fits)")),
            None => fixes.push("shorter runs (--duration) or fewer high frequencies".into()),
        }
        if lock_limit.is_some() {
            fixes.push(
                "run as root (CAP_IPC_LOCK lifts the lock limit), or raise \
                 kernel.perf_event_mlock_kb / `ulimit -l`"
                    .into(),
            );
        }
        return Err(BudgetError::Memory {
            run_id: mem.run_id,
            freq_hz: mem.freq_hz,
            rings: mem.rings,
            need_bytes: mem.locked_bytes,
            measured_bytes: mem.measured_ring_bytes,
            other_bytes: mem.other_ring_bytes,
            limit,
            fix: fixes.join("; or "),
        });
    }
    let fds_needed = most_fds
        .fds
        .saturating_add(limits.fds_open)
        .saturating_add(FD_MARGIN);
    if let Some(soft) = limits.nofile_soft
        && fds_needed > soft
    {
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
        return Err(BudgetError::Fds {
            run_id: most_fds.run_id,
            events: most_fds.fds,
            open: limits.fds_open,
            need: fds_needed,
            soft,
            hard: limits
                .nofile_hard
                .map_or("unlimited".into(), |h| h.to_string()),
            fix,
        });
    }
    Ok(Budget {
        largest: mem,
        most_fds,
        memory_limit_bytes: memory_limit,
        fds_needed,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::config::FlagSettings;
    use crate::plan::build_plan;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    /// The default sweep's options on a host with `n` CPUs, measured CPU
    /// the last one.
    fn opts(n: u32, freqs: &str, duration: &str, scope: &str) -> SweepOptions {
        let args = [
            format!("--freqs={freqs}"),
            format!("--duration={duration}"),
            format!("--scope={scope}"),
            "--event=cpu-clock".to_owned(),
            "--seed=1".to_owned(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let f = FlagSettings::from_args(&args).unwrap();
        let online: Vec<u32> = (0..n).collect();
        SweepOptions::resolve(&f, None, &online, 0).unwrap()
    }

    fn configs(o: &SweepOptions) -> Vec<(u32, SamplerConfig)> {
        plan_configs(&build_plan(o), o, EventKind::CpuClock, Some(0))
    }

    /// A 256-CPU host as root (CAP_IPC_LOCK) with `mem` available.
    fn root_host(mem: u64) -> HostLimits {
        HostLimits {
            online_cpus: (0..256).collect(),
            page_size: 4096,
            perf_event_mlock_kb: 516,
            perf_event_paranoid: 2,
            memlock_bytes: Some(8 * MIB),
            cap_ipc_lock: true,
            mem_available_bytes: Some(mem),
            nofile_soft: Some(1024),
            nofile_hard: Some(524_288),
            fds_open: 10,
        }
    }

    /// The same host for a CAP_PERFMON user without CAP_IPC_LOCK.
    fn user_host() -> HostLimits {
        HostLimits {
            cap_ipc_lock: false,
            ..root_host(512 * GIB)
        }
    }

    #[test]
    fn plan_for_256_cpus_sizes_other_rings_by_their_own_rate() {
        let o = opts(256, "100,500,2000,4000,100000", "10s", "system");
        let b = check(&configs(&o), &root_host(128 * GIB)).unwrap();
        // The largest run is a util run at 100 kHz: 512 MiB on the measured
        // CPU (perf-default samples + four tracepoints, 216 bytes a sample),
        // 128 MiB on each other CPU (56-byte samples at 100 kHz for 10.5 s:
        // 59 MB, above a 64 MiB ring's 48 MiB free of its reserve).
        assert_eq!(b.largest.freq_hz, 100_000);
        assert_eq!(b.largest.rings, 256);
        assert_eq!(b.largest.measured_ring_bytes, 512 * MIB);
        assert_eq!(b.largest.other_ring_bytes, 128 * MIB);
        assert_eq!(
            b.largest.locked_bytes,
            512 * MIB + 255 * 128 * MIB + 256 * 4096
        );
        // 256 sampling events + 4 tracepoints, + 10 open + margin.
        assert_eq!(b.most_fds.fds, 260);
        assert_eq!(b.fds_needed, 260 + 10 + FD_MARGIN);
        assert!(
            b.summary().contains("256 ring(s)") && b.summary().contains("128.0 MiB on each of 255"),
            "{}",
            b.summary()
        );

        // At 4 kHz the other CPUs' rings are 8 MiB, below the 16 MiB floor
        // of the measured CPU (32 MiB here, with the tracepoints).
        let o = opts(256, "4000", "10s", "system");
        let b = check(&configs(&o), &root_host(64 * GIB)).unwrap();
        assert_eq!(b.largest.measured_ring_bytes, 32 * MIB);
        assert_eq!(b.largest.other_ring_bytes, 8 * MIB);
    }

    #[test]
    fn too_little_memory_refuses_with_the_numbers_and_the_fixes() {
        let o = opts(256, "100,500,2000,4000,100000", "10s", "system");
        let e = check(&configs(&o), &root_host(32 * GIB)).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("32.4 GiB"), "{msg}");
        assert!(msg.contains("half of MemAvailable 32.0 GiB"), "{msg}");
        assert!(
            msg.contains("--scope cpu (one ring on the measured CPU: 512.0 MiB)"),
            "{msg}"
        );
        // 16 GiB allowed: at 3 s the other rings are 32 MiB (255 x 32 MiB +
        // 128 MiB fits), at 4 s 64 MiB (16.1 GiB does not).
        assert!(msg.contains("--duration 3s fits"), "{msg}");
        // Where it says it fits, it does.
        let o3 = opts(256, "100,500,2000,4000,100000", "3s", "system");
        assert!(check(&configs(&o3), &root_host(32 * GIB)).is_ok());
        let o4 = opts(256, "100,500,2000,4000,100000", "4s", "system");
        assert!(check(&configs(&o4), &root_host(32 * GIB)).is_err());
    }

    #[test]
    fn without_cap_ipc_lock_the_perf_mlock_limit_applies() {
        let host = user_host();
        // 516 KiB x 256 CPUs + 8 MiB.
        assert_eq!(host.lock_limit_bytes(), Some(516 * 1024 * 256 + 8 * MIB));
        let o = opts(256, "4000", "10s", "system");
        let msg = check(&configs(&o), &host).unwrap_err().to_string();
        assert!(
            msg.contains("perf_event_mlock_kb = 516 KiB x 256 CPUs")
                && msg.contains("no CAP_IPC_LOCK")
                && msg.contains("--scope cpu")
                && msg.contains("CAP_IPC_LOCK lifts"),
            "{msg}"
        );
        // One ring fits.
        let o = opts(256, "4000", "10s", "cpu");
        let b = check(&configs(&o), &host).unwrap();
        assert_eq!(b.largest.rings, 1);
        // paranoid -1 lifts the limit too.
        let open = HostLimits {
            perf_event_paranoid: -1,
            ..user_host()
        };
        assert_eq!(open.lock_limit_bytes(), None);
    }

    #[test]
    fn too_few_descriptors_refuses_with_ulimit() {
        let host = HostLimits {
            nofile_soft: Some(256),
            ..root_host(64 * GIB)
        };
        let o = opts(256, "4000", "2s", "system");
        let msg = check(&configs(&o), &host).unwrap_err().to_string();
        assert!(
            msg.contains("RLIMIT_NOFILE allows 256")
                && msg.contains("ulimit -n 512")
                && msg.contains("--scope cpu"),
            "{msg}"
        );
        let o = opts(256, "4000", "2s", "cpu");
        assert!(check(&configs(&o), &host).is_ok());
    }

    #[test]
    fn this_hosts_limits_are_read() {
        let host = HostLimits::read();
        assert!(!host.online_cpus.is_empty());
        assert!(host.page_size >= 4096);
        assert!(host.fds_open >= 3, "{host:?}");
        // Root has CAP_IPC_LOCK (the test hosts run as root): no lock
        // limit, and a small cpu-scope sweep fits in memory.
        if rustix::process::geteuid().is_root() {
            assert!(host.cap_ipc_lock, "{host:?}");
            assert_eq!(host.lock_limit_bytes(), None);
            let n = u32::try_from(host.online_cpus.len()).unwrap();
            let o = opts(n, "1000", "1s", "cpu");
            check(&configs(&o), &host).unwrap();
        }
    }

    #[test]
    fn meminfo_lines_parse() {
        let t = "MemTotal:        4028880 kB\nMemAvailable:    3500000 kB\n";
        assert_eq!(meminfo_kb(t, "MemAvailable"), Some(3_500_000));
        assert_eq!(meminfo_kb(t, "MemFree"), None);
    }
}
