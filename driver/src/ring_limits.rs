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

#[cfg(test)]
mod tests {
    //! The ring-limits check on made-up hosts (256 CPUs, root or not, short of
    //! memory or descriptors) and on this one.
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::config::{FlagSettings, SweepOptions};
    use crate::plan::build_plan;
    use crate::sampler::EventKind;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    /// The default sweep's options on a host with `n` CPUs, measured CPU
    /// the last one.
    fn opts(n: u32, freqs: &str, duration: &str, scope: &str) -> SweepOptions {
        let args = [
            format!("--rates={freqs}"),
            format!("--duration={duration}"),
            format!("--scope={scope}"),
            "--event=cpu-clock".to_owned(),
            "--seed=1".to_owned(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let f = FlagSettings::from_args(&args).unwrap();
        let online: Vec<u32> = (0..n).collect();
        SweepOptions::resolve(&f, None, &online, 0)
            .and_then(|r| r.finish(None))
            .unwrap()
    }

    fn configs(o: &SweepOptions) -> Vec<(u32, SamplerConfig)> {
        crate::backend::plan_configs(&build_plan(o), o, EventKind::CpuClock, Some(0))
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
        let b = fit(&configs(&o), &root_host(128 * GIB)).unwrap();
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
        let b = fit(&configs(&o), &root_host(64 * GIB)).unwrap();
        assert_eq!(b.largest.measured_ring_bytes, 32 * MIB);
        assert_eq!(b.largest.other_ring_bytes, 8 * MIB);
    }

    #[test]
    fn too_little_memory_refuses_with_the_numbers_and_the_fixes() {
        let o = opts(256, "100,500,2000,4000,100000", "10s", "system");
        let e = fit(&configs(&o), &root_host(32 * GIB)).unwrap_err();
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
        assert!(fit(&configs(&o3), &root_host(32 * GIB)).is_ok());
        let o4 = opts(256, "100,500,2000,4000,100000", "4s", "system");
        assert!(fit(&configs(&o4), &root_host(32 * GIB)).is_err());
    }

    #[test]
    fn without_cap_ipc_lock_the_perf_mlock_limit_applies() {
        let host = user_host();
        // 516 KiB x 256 CPUs + 8 MiB.
        assert_eq!(host.lock_limit_bytes(), Some(516 * 1024 * 256 + 8 * MIB));
        let o = opts(256, "4000", "10s", "system");
        let msg = fit(&configs(&o), &host).unwrap_err().to_string();
        assert!(
            msg.contains("perf_event_mlock_kb = 516 KiB x 256 CPUs")
                && msg.contains("no CAP_IPC_LOCK")
                && msg.contains("--scope cpu")
                && msg.contains("CAP_IPC_LOCK lifts"),
            "{msg}"
        );
        // One ring fits.
        let o = opts(256, "4000", "10s", "cpu");
        let b = fit(&configs(&o), &host).unwrap();
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
        let msg = fit(&configs(&o), &host).unwrap_err().to_string();
        assert!(
            msg.contains("RLIMIT_NOFILE allows 256")
                && msg.contains("ulimit -n 512")
                && msg.contains("--scope cpu"),
            "{msg}"
        );
        let o = opts(256, "4000", "2s", "cpu");
        assert!(fit(&configs(&o), &host).is_ok());
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
            fit(&configs(&o), &host).unwrap();
        }
    }

    #[test]
    fn meminfo_available_comes_in_bytes() {
        use procfs::FromRead;
        // HostLimits takes procfs's MemAvailable as bytes: the file's kB
        // (KiB) times 1024. The lines procfs requires, from a 4 GiB VM.
        let t = "MemTotal:        4028880 kB\nMemFree:          250000 kB\n\
             MemAvailable:    3500000 kB\nBuffers:           10000 kB\n\
             Cached:          3000000 kB\nSwapCached:            0 kB\n\
             Active:           500000 kB\nInactive:        2600000 kB\n\
             SwapTotal:             0 kB\nSwapFree:              0 kB\n\
             Dirty:                12 kB\nWriteback:             0 kB\n\
             Mapped:           100000 kB\nSlab:             150000 kB\n\
             Committed_AS:     900000 kB\nVmallocTotal:   34359738367 kB\n\
             VmallocUsed:       20000 kB\nVmallocChunk:          0 kB\n";
        let m = procfs::Meminfo::from_read(t.as_bytes()).unwrap();
        assert_eq!(m.mem_available, Some(3_500_000 * 1024));
        let host = HostLimits::read();
        assert!(host.mem_available_bytes.is_some(), "{host:?}");
    }

    #[test]
    fn a_profiler_sweep_locks_no_rings_of_ours() {
        let mut o = opts(256, "100,500,2000,4000,100000", "10s", "system");
        assert!(!configs(&o).is_empty());
        o.sampling = crate::config::Sampling::Profiler {
            template: "perf record -F {freq} -C {cpu} -o /dev/null".into(),
        };
        // Its runs open no sampler of ours, so nothing is sized or refused for
        // them (the ring-limits check once sized rings for every rate).
        assert!(configs(&o).is_empty());
    }
}
