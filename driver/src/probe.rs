//! `driver probe`: what this host can measure and how.
//!
//! [`probe_host`] gathers the facts (stored by the sweep in manifest.json);
//! [`self_test`] runs the chosen event at 1 kHz on one CPU for ~0.3 s with
//! the handler tracepoints; [`cli`] prints both and exits 0 only when a sweep
//! can run.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use procfs::Current;
use serde::{Deserialize, Serialize};

use crate::hoststate::OnLeftover::{Leave, Restore};
use crate::perf::error::PARANOID_PATH;
use crate::perf::{PerfError, tracefs};
use crate::sampler::{self, EventKernel, EventKind, Sampler, SamplerConfig};

pub mod traits;

/// Arguments of `driver probe`.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// Print one JSON object instead of the human-readable report.
    #[arg(long)]
    pub json: bool,
    /// Skip the live self-test (facts only).
    #[arg(long)]
    pub no_self_test: bool,
    /// Leave settings that a driver which did not exit cleanly changed
    /// (kill -9) as they are, instead of restoring them (said on stderr
    /// either way).
    #[arg(long)]
    pub leave_settings: bool,
}

/// What the host offers for the measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    /// `uname -r`.
    pub kernel: String,
    /// `uname -v`.
    pub kernel_version: String,
    /// `uname -m`.
    pub machine: String,
    /// Host name.
    pub hostname: String,
    /// /proc/cpuinfo `model name`.
    pub cpu_model: String,
    /// /proc/cpuinfo `vendor_id` (`GenuineIntel`, `AuthenticAMD`, ...).
    #[serde(default)]
    pub cpu_vendor: Option<String>,
    /// /proc/cpuinfo `cpu family`.
    #[serde(default)]
    pub cpu_family: Option<u32>,
    /// /proc/cpuinfo `model`: the model number, beside `cpu_model`'s name.
    #[serde(default)]
    pub cpu_model_number: Option<u32>,
    /// /proc/cpuinfo has the `hypervisor` flag.
    pub hypervisor_flag: bool,
    /// /sys/hypervisor/type or DMI vendor/product, when known.
    pub hypervisor: Option<String>,
    /// A hardware PMU event (cycles) opens.
    pub pmu_present: bool,
    /// Why cycles did not open.
    pub pmu_error: Option<String>,
    /// `cycles` or `cpu-clock`.
    pub sampling_event: String,
    /// Why that event.
    pub sampling_event_reason: String,
    /// `nmi` or `hrtimer`.
    pub handler_source: String,
    /// tracefs mount point.
    pub tracefs: Option<String>,
    /// Why tracefs is unusable.
    pub tracefs_error: Option<String>,
    /// The handler tracepoints exist (timer:hrtimer_expire_entry/exit or nmi:nmi_handler).
    pub handler_tracepoints: bool,
    /// The handler's kernel symbol address is readable in /proc/kallsyms.
    pub handler_symbol_readable: bool,
    /// /proc/sys/kernel/perf_event_paranoid.
    pub perf_event_paranoid: Option<i64>,
    /// /proc/sys/kernel/perf_event_max_sample_rate.
    pub perf_event_max_sample_rate: Option<u64>,
    /// /proc/sys/kernel/perf_cpu_time_max_percent.
    pub perf_cpu_time_max_percent: Option<u64>,
    /// /proc/sys/kernel/perf_event_max_stack: most call-chain frames.
    #[serde(default)]
    pub perf_event_max_stack: Option<u64>,
    /// The kernel's tick rate HZ (the throttle counts samples per tick),
    /// and how it was found.
    #[serde(default)]
    pub kernel_hz: Option<u64>,
    /// `/boot/config-RELEASE CONFIG_HZ`, `/proc/config.gz CONFIG_HZ` or
    /// `/proc/timer_list jiffies over 200 ms`.
    #[serde(default)]
    pub kernel_hz_source: Option<String>,
    /// Effective uid.
    pub euid: u32,
    /// CAP_PERFMON (bit 38) in CapEff of /proc/self/status.
    pub cap_perfmon: Option<bool>,
    /// Current clocksource.
    pub clocksource: String,
    /// Online CPUs.
    pub cpus: u32,
    /// Online CPU list.
    pub online_cpus: Vec<u32>,
    /// /sys/devices/system/cpu/isolated.
    pub isolated_cpus: Vec<u32>,
    /// /sys/devices/system/cpu/smt/active.
    pub smt_active: Option<bool>,
    /// Mitigations, cpuidle, preemption, microcode.
    #[serde(flatten)]
    pub traits: traits::HostTraits,
}

/// Result of the live self-test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SelfTest {
    /// Event used.
    pub event: String,
    /// sample_freq.
    pub freq_hz: u64,
    /// CPU measured.
    pub cpu: u32,
    /// Samples on that CPU.
    pub samples: u64,
    /// Handler intervals kept.
    pub handler_intervals: u64,
    /// Lost records.
    pub lost: u64,
    /// Median handler duration, ns.
    pub median_handler_ns: Option<u64>,
    /// Error, when it failed.
    pub error: Option<String>,
}

/// The CPU model and whether the `hypervisor` flag is set ("unknown" and
/// false where /proc/cpuinfo has neither: arm64 lists `Features`, not
/// `flags`).
fn model_and_flag(info: &procfs::CpuInfo) -> (String, bool) {
    let cpus = 0..info.num_cores();
    let model = cpus
        .clone()
        .find_map(|i| info.model_name(i))
        .unwrap_or("unknown")
        .to_string();
    let flag = cpus
        .into_iter()
        .any(|i| info.flags(i).is_some_and(|f| f.contains(&"hypervisor")));
    (model, flag)
}

fn hypervisor() -> Option<String> {
    if let Some(t) = traits::read("/sys/hypervisor/type").filter(|s| !s.is_empty()) {
        return Some(t);
    }
    // The DMI vendor and product, whichever are there.
    let dmi: Vec<String> = ["sys_vendor", "product_name"]
        .iter()
        .filter_map(|f| traits::read(&format!("/sys/class/dmi/id/{f}")).filter(|s| !s.is_empty()))
        .collect();
    (!dmi.is_empty()).then(|| dmi.join(" "))
}

/// The tick rate: CONFIG_HZ from the kernel config
/// ([`traits::kernel_config`]), else counted from the jiffies of
/// /proc/timer_list over 200 ms and rounded to the nearest rate Linux
/// offers (100, 250, 300, 1000).
fn kernel_hz(config: Option<&(String, &'static str)>) -> Option<(u64, String)> {
    if let Some((text, path)) = config
        && let Some(hz) = config_hz(text)
    {
        return Some((hz, format!("{path} CONFIG_HZ")));
    }
    let jiffies = || {
        // Kept hand-written: procfs does not read /proc/timer_list.
        let text = std::fs::read_to_string("/proc/timer_list").ok()?;
        let t = crate::system::clock::monotonic_ns();
        let j = text
            .lines()
            .find_map(|l| l.strip_prefix("jiffies: "))?
            .trim()
            .parse::<u64>()
            .ok()?;
        Some((j, t))
    };
    let (j0, t0) = jiffies()?;
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (j1, t1) = jiffies()?;
    let rate = j1.checked_sub(j0)? as f64 / ((t1.checked_sub(t0)?) as f64 * 1e-9);
    snap_hz(rate).map(|hz| (hz, "/proc/timer_list jiffies over 200 ms".into()))
}

/// `CONFIG_HZ=N` in a kernel config.
pub fn config_hz(config: &str) -> Option<u64> {
    config
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
}

/// The Linux tick rate nearest a measured jiffies rate (within 10 %).
pub fn snap_hz(rate: f64) -> Option<u64> {
    [100u64, 250, 300, 1000]
        .into_iter()
        .find(|&hz| (rate - hz as f64).abs() <= 0.1 * hz as f64)
}

/// Gathers the host facts (no sampling; opens cycles briefly to test the PMU).
pub fn probe_host() -> HostFacts {
    let un = rustix::system::uname();
    // One read of /proc/cpuinfo; a field of the first CPU.
    let info = procfs::CpuInfo::current().ok();
    let field = |name: &str| Some(info.as_ref()?.get_field(0, name)?.trim().to_string());
    let (cpu_model, hypervisor_flag) =
        (info.as_ref()).map_or_else(|| ("unknown".into(), false), model_and_flag);
    let (pmu_present, pmu_error) = match sampler::resolve_event(EventKind::Cycles) {
        Ok((EventKind::Cycles, _)) => (true, None),
        Ok((_, warn)) => (false, warn),
        Err(e) => (false, Some(e.to_string())),
    };
    let (event, sampling_event_reason) = if pmu_present {
        (EventKind::Cycles, "a hardware PMU is present: cycles opens")
    } else {
        (
            EventKind::CpuClock,
            "no hardware PMU (cycles does not open): falling back to the software cpu-clock event",
        )
    };
    let (tracefs_path, tracefs_error) = match tracefs::find_or_mount() {
        Ok(p) => (Some(p), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let handler_tracepoints = tracefs_path.as_ref().is_some_and(|root| {
        if event.is_hardware() {
            tracefs::tracepoint(root, "nmi", "nmi_handler").is_ok()
        } else {
            tracefs::tracepoint(root, "timer", "hrtimer_expire_entry").is_ok()
                && tracefs::tracepoint(root, "timer", "hrtimer_expire_exit").is_ok()
        }
    });
    let symbol = if event.is_hardware() {
        sampler::NMI_HANDLER_SYMBOL
    } else {
        sampler::HRTIMER_SYMBOL
    };
    let online = sampler::online_cpus().unwrap_or_default();
    let config = traits::kernel_config(un.release().to_str().unwrap_or(""));
    let hz = kernel_hz(config.as_ref());
    let limits = crate::system::settings::PerfLimits::read();
    HostFacts {
        kernel: un.release().to_string_lossy().into_owned(),
        kernel_version: un.version().to_string_lossy().into_owned(),
        machine: un.machine().to_string_lossy().into_owned(),
        hostname: un.nodename().to_string_lossy().into_owned(),
        cpu_model,
        cpu_vendor: field("vendor_id"),
        cpu_family: field("cpu family").and_then(|v| v.parse().ok()),
        cpu_model_number: field("model").and_then(|v| v.parse().ok()),
        hypervisor_flag,
        hypervisor: hypervisor(),
        pmu_present,
        pmu_error,
        sampling_event: event.as_str().into(),
        sampling_event_reason: sampling_event_reason.into(),
        handler_source: event.handler_source().as_str().into(),
        tracefs: tracefs_path.map(|p| p.display().to_string()),
        tracefs_error,
        handler_tracepoints,
        handler_symbol_readable: tracefs::kallsyms_address(symbol).is_ok(),
        // Kept hand-written: procfs has no reader for the perf sysctls.
        perf_event_paranoid: traits::read(PARANOID_PATH).and_then(|s| s.parse().ok()),
        perf_event_max_sample_rate: limits.max_sample_rate,
        perf_cpu_time_max_percent: limits.cpu_time_max_percent,
        perf_event_max_stack: traits::read("/proc/sys/kernel/perf_event_max_stack")
            .and_then(|s| s.parse().ok()),
        kernel_hz: hz.as_ref().map(|h| h.0),
        kernel_hz_source: hz.map(|h| h.1),
        euid: rustix::process::geteuid().as_raw(),
        // CAP_PERFMON is bit 38 of CapEff.
        cap_perfmon: crate::ring_limits::host::effective_capability(38),
        clocksource: traits::read(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .unwrap_or_else(|| "unknown".into()),
        cpus: online.len() as u32,
        online_cpus: online,
        isolated_cpus: traits::read("/sys/devices/system/cpu/isolated")
            .and_then(|s| sampler::parse_cpu_list(&s))
            .unwrap_or_default(),
        smt_active: traits::read("/sys/devices/system/cpu/smt/active").map(|s| s == "1"),
        traits: traits::read_traits(
            config.as_ref(),
            &un.version().to_string_lossy(),
            field("microcode"),
        ),
    }
}

/// Spins on `cpu` until `stop` is set (a busy workload for self-tests).
pub fn spin_on_cpu(cpu: u32, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let _ = crate::system::process::pin_to([cpu]);
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            n = std::hint::black_box(n.wrapping_add(1));
        }
        n
    })
}

/// Runs `event` at `freq_hz` on `cpu` for `duration` with the handler
/// tracepoints, a busy thread pinned to that CPU.
pub fn self_test(
    event: EventKind,
    freq_hz: u64,
    cpu: u32,
    duration: Duration,
) -> Result<SelfTest, PerfError> {
    let mut cfg = SamplerConfig::new(event, freq_hz, cpu);
    cfg.trace_handler = true;
    cfg.ring_data_bytes = 1 << 20;
    let s = Sampler::open(&cfg)?;
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = spin_on_cpu(cpu, Arc::clone(&stop));
    std::thread::sleep(Duration::from_millis(20));
    let res = s.enable().and_then(|()| {
        std::thread::sleep(duration);
        s.disable()
    });
    stop.store(true, Ordering::Relaxed);
    let _ = spinner.join();
    res?;
    let mut row = results_format::RunRow::default();
    let out = s.finish(&mut row)?;
    let mut durs: Vec<u64> = out.intervals.iter().map(|i| i.duration_ns).collect();
    durs.sort_unstable();
    Ok(SelfTest {
        event: event.as_str().into(),
        freq_hz,
        cpu,
        samples: row.samples,
        handler_intervals: out.intervals.len() as u64,
        lost: row.lost,
        median_handler_ns: durs.get(durs.len() / 2).copied(),
        error: None,
    })
}

/// The things missing for a sweep, each with its fix.
pub fn missing(facts: &HostFacts, test: Option<&SelfTest>) -> Vec<String> {
    let mut m = Vec::new();
    let privileged = facts.euid == 0 || facts.cap_perfmon == Some(true);
    if !privileged {
        m.push(format!(
            "privileges: euid {} without CAP_PERFMON (perf_event_paranoid = {:?}). Fix: run as root, \
             or `setcap cap_perfmon+ep` on the binary and give it read access to tracefs",
            facts.euid, facts.perf_event_paranoid
        ));
    }
    if let Some(e) = &facts.tracefs_error {
        m.push(format!("tracefs: {e}"));
    } else if !facts.handler_tracepoints {
        m.push(format!(
            "handler tracepoints for source `{}` are missing under {}. Fix: a kernel with \
             CONFIG_TRACEPOINTS and the timer/nmi events",
            facts.handler_source,
            facts.tracefs.as_deref().unwrap_or("tracefs")
        ));
    }
    if let Some(t) = test {
        if let Some(e) = &t.error {
            m.push(format!("self-test: {e}"));
        } else {
            if t.samples == 0 {
                m.push(format!(
                    "self-test: {} at {} Hz gave no samples on cpu {}",
                    t.event, t.freq_hz, t.cpu
                ));
            }
            if t.handler_intervals == 0 {
                m.push(format!(
                    "self-test: no handler intervals from the `{}` tracepoints (is the filter on \
                     the handler address working? kallsyms readable: {})",
                    facts.handler_source, facts.handler_symbol_readable
                ));
            }
        }
    }
    m
}

#[derive(Serialize)]
struct Report<'a> {
    #[serde(flatten)]
    facts: &'a HostFacts,
    self_test: Option<&'a SelfTest>,
    ready: bool,
    missing: &'a [String],
}

/// Runs `driver probe`.
pub fn cli(args: &ProbeArgs) -> anyhow::Result<ExitCode> {
    // Before the facts: they include the sysctls a dead sweep may have left.
    let on_leftover = if args.leave_settings { Leave } else { Restore };
    crate::hoststate::check_at_start(on_leftover);
    let facts = probe_host();
    let test = if args.no_self_test {
        None
    } else {
        let event: EventKind = facts.sampling_event.parse().map_err(anyhow::Error::msg)?;
        let cpu = facts.online_cpus.last().copied().unwrap_or(0);
        Some(
            self_test(event, 1000, cpu, Duration::from_millis(300)).unwrap_or_else(|e| SelfTest {
                event: event.as_str().into(),
                freq_hz: 1000,
                cpu,
                error: Some(e.to_string()),
                ..SelfTest::default()
            }),
        )
    };
    let missing = missing(&facts, test.as_ref());
    let ready = missing.is_empty();
    let report = Report {
        facts: &facts,
        self_test: test.as_ref(),
        ready,
        missing: &missing,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_human(&facts, test.as_ref(), ready, &missing);
    }
    Ok(if ready {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "unknown".into(), |x| x.to_string())
}

/// What `driver probe` says of the hypervisor: its name when sysfs or DMI
/// gives one, else whether /proc/cpuinfo's `hypervisor` flag says there is
/// one (a VM whose type is not exposed, as in Firecracker).
fn hypervisor_line(f: &HostFacts) -> String {
    match (&f.hypervisor, f.hypervisor_flag) {
        (Some(h), true) => format!("{h} (cpuinfo hypervisor flag set)"),
        (Some(h), false) => format!("{h} (cpuinfo hypervisor flag not set)"),
        (None, true) => {
            "present, type unknown (cpuinfo hypervisor flag set; no /sys/hypervisor/type or DMI vendor)"
                .to_owned()
        }
        (None, false) => "none (no cpuinfo hypervisor flag, no /sys/hypervisor/type or DMI vendor)".to_owned(),
    }
}

fn print_human(f: &HostFacts, test: Option<&SelfTest>, ready: bool, missing: &[String]) {
    let pmu_error = f
        .pmu_error
        .as_ref()
        .map_or("", |_| " (cycles does not open)");
    let pmu = results_format::summary::pmu_kind(f.pmu_present, f.hypervisor_flag);
    let t = &f.traits;
    let vulns = t.vulnerabilities.as_ref();
    let mitigations = vulns
        .and_then(|v| results_format::summary::mitigations_word(v.values().map(String::as_str)));
    let preempt_source = t.preempt_source.as_deref().unwrap_or("not found");
    let tracefs = f.tracefs.as_deref().or(f.tracefs_error.as_deref());
    let hz_source = f.kernel_hz_source.as_deref().unwrap_or("not found");
    let mut lines = vec![
        ("kernel", format!("{} ({})", f.kernel, f.machine)),
        ("cpu model", f.cpu_model.clone()),
        ("hypervisor", hypervisor_line(f)),
        ("hardware PMU", format!("{pmu}{pmu_error}")),
        (
            "sampling_event",
            format!("{} ({})", f.sampling_event, f.sampling_event_reason),
        ),
        ("handler_source", f.handler_source.clone()),
        ("tracefs", tracefs.unwrap_or("absent").to_owned()),
        ("handler tracepoints", f.handler_tracepoints.to_string()),
        (
            "handler symbol readable",
            f.handler_symbol_readable.to_string(),
        ),
        ("perf_event_paranoid", opt(&f.perf_event_paranoid)),
        (
            "perf_event_max_sample_rate",
            opt(&f.perf_event_max_sample_rate),
        ),
        (
            "perf_cpu_time_max_percent",
            opt(&f.perf_cpu_time_max_percent),
        ),
        ("kernel HZ", format!("{} ({hz_source})", opt(&f.kernel_hz))),
        (
            "euid",
            format!("{} (CAP_PERFMON: {})", f.euid, opt(&f.cap_perfmon)),
        ),
        ("clocksource", f.clocksource.clone()),
        ("cpus", format!("{} {:?}", f.cpus, f.online_cpus)),
        ("isolated cpus", format!("{:?}", f.isolated_cpus)),
        ("smt active", opt(&f.smt_active)),
        (
            "mitigations",
            format!(
                "{} ({} vulnerabilities files)",
                opt(&mitigations),
                vulns.map_or(0, |v| v.len())
            ),
        ),
        (
            "preemption",
            format!("{} ({preempt_source})", opt(&t.preempt)),
        ),
        (
            "cpuidle driver, governor",
            format!("{}, {}", opt(&t.cpuidle_driver), opt(&t.cpuidle_governor)),
        ),
        ("microcode", opt(&t.microcode)),
    ];
    match test.map(|t| (t, &t.error)) {
        Some((_, Some(e))) => lines.push(("self_test", format!("FAILED: {e}"))),
        Some((t, None)) => lines.push((
            "self_test",
            format!(
                "{} at {} Hz on cpu {} for 0.3 s: samples {}, handler_intervals {}, lost {}, median handler {} ns",
                t.event,
                t.freq_hz,
                t.cpu,
                t.samples,
                t.handler_intervals,
                t.lost,
                opt(&t.median_handler_ns)
            ),
        )),
        None => {}
    }
    lines.push(("ready", ready.to_string()));
    for (name, value) in lines {
        println!("{name:<28}{value}");
    }
    for m in missing {
        println!("missing: {m}");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tick_rate_from_config_or_jiffies() {
        assert_eq!(
            config_hz("# x\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n"),
            Some(250)
        );
        assert_eq!(config_hz("CONFIG_HZ_PERIODIC=y\n"), None);
        assert_eq!(snap_hz(248.0), Some(250));
        assert_eq!(snap_hz(1003.0), Some(1000));
        assert_eq!(snap_hz(175.0), None);
    }

    #[test]
    fn cpu_model_and_hypervisor_flag_from_cpuinfo() {
        use procfs::FromRead;
        let parse = |t: &str| model_and_flag(&procfs::CpuInfo::from_read(t.as_bytes()).unwrap());
        let vm = "processor\t: 0\nvendor_id\t: GenuineIntel\n\
                  model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz\n\
                  flags\t\t: fpu vme hypervisor lahf_lm\nvmx flags\t: vnmi\n\n\
                  processor\t: 1\nvendor_id\t: GenuineIntel\n\
                  model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz\n\
                  flags\t\t: fpu vme hypervisor lahf_lm\nvmx flags\t: vnmi\n\n";
        assert_eq!(
            parse(vm),
            ("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz".into(), true)
        );
        let metal = vm.replace(" hypervisor", "");
        assert!(!parse(&metal).1);
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd hypervisor\n\
                   CPU implementer\t: 0x41\n\n";
        assert_eq!(parse(arm), ("unknown".into(), false));
    }
}
