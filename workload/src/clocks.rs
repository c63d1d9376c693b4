//! `workload clocks`: what reading a clock costs on this host, how fine its
//! steps are, and whether it ever goes backwards; plus the TSC frequency and
//! the kernel clocksource.
//!
//! Cost: each method is called in batches (sized to ~20 us) timed with
//! CLOCK_MONOTONIC_RAW and `lfence; rdtsc`; the per-call cost of a batch is
//! its time divided by the calls (the two timer reads are amortised over the
//! batch). Minimum and median over the batches are reported. Granularity: the
//! smallest non-zero difference between successive reads over ~60 ms of
//! back-to-back reads, converted to ns; `backwards` is whether any read was
//! smaller than the one before. The whole run takes ~2-3 s.
//!
//! Timing one method is in `clocks/method.rs`; here, which methods there
//! are, the TSC's frequency and invariance, and the table.
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::sys;
#[cfg(target_arch = "x86_64")]
use crate::timeline::stamp_clock_pair;

mod method;

use method::{Meter, unavailable};

/// Results of `workload clocks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockReport {
    /// TSC frequency calibrated against CLOCK_MONOTONIC_RAW (x86_64), Hz.
    pub tsc_hz: Option<f64>,
    /// `tsc_hz` in ticks per microsecond.
    pub tsc_ticks_per_us: Option<f64>,
    /// Whether the TSC is invariant, by `invariant_tsc_source`.
    pub invariant_tsc: Option<bool>,
    /// Which evidence `invariant_tsc` rests on.
    pub invariant_tsc_source: String,
    /// cpuid 0x80000007 EDX bit 8 (null when the leaf is absent / not x86_64).
    pub invariant_tsc_cpuid: Option<bool>,
    /// /proc/cpuinfo has both constant_tsc and nonstop_tsc (null if unreadable).
    pub invariant_tsc_cpuinfo: Option<bool>,
    /// /sys/devices/system/clocksource/clocksource0/current_clocksource.
    pub clocksource: Option<String>,
    /// available_clocksource from the same directory.
    pub available_clocksources: Option<String>,
    /// One entry per method.
    pub methods: Vec<MethodReport>,
}

/// One way of reading time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MethodReport {
    /// e.g. `clock_gettime(CLOCK_MONOTONIC)`.
    pub name: String,
    /// Whether it works here (x86 instructions elsewhere: false).
    pub available: bool,
    /// Minimum per-call cost over batches, ns.
    pub cost_ns_min: Option<f64>,
    /// Median per-call cost over batches, ns.
    pub cost_ns_median: Option<f64>,
    /// Minimum per-call cost in TSC ticks (x86_64).
    pub cost_ticks_min: Option<f64>,
    /// Median per-call cost in TSC ticks (x86_64).
    pub cost_ticks_median: Option<f64>,
    /// Smallest non-zero step seen between successive reads, ns.
    pub granularity_ns: Option<f64>,
    /// clock_getres for clock_gettime clocks, else null.
    pub resolution_ns: Option<u64>,
    /// Whether a read was ever smaller than the previous one.
    pub backwards: bool,
    /// Unit of the raw reading (`ns`, `us`, `ticks`, `tsc`).
    pub unit: String,
    /// Reads made for the granularity pass.
    pub reads: u64,
}

/// How long `workload clocks` times each clock method.
#[derive(Debug, Clone, Copy)]
pub struct CalibrationTimes {
    /// Cost batches per method.
    pub cost: Duration,
    /// Back-to-back reads per method.
    pub granularity: Duration,
    /// TSC calibration interval.
    pub tsc_calibration: Duration,
}

impl Default for CalibrationTimes {
    fn default() -> Self {
        CalibrationTimes {
            cost: Duration::from_millis(40),
            granularity: Duration::from_millis(60),
            tsc_calibration: Duration::from_millis(200),
        }
    }
}

/// Calibrates the TSC against CLOCK_MONOTONIC_RAW over `interval`, from
/// two of the timeline's (TSC, clock) pairs that far apart.
#[cfg(target_arch = "x86_64")]
pub fn calibrate_tsc(interval: Duration) -> Option<f64> {
    let (k0, n0) = stamp_clock_pair();
    std::thread::sleep(interval);
    let (k1, n1) = stamp_clock_pair();
    let dns = n1 - n0;
    (dns > 0.0).then(|| k1.wrapping_sub(k0) as f64 * 1e9 / dns)
}

/// Not x86_64: no TSC.
#[cfg(not(target_arch = "x86_64"))]
pub fn calibrate_tsc(_interval: Duration) -> Option<f64> {
    None
}

#[cfg(target_arch = "x86_64")]
fn invariant_tsc_cpuid() -> Option<bool> {
    let (max_ext, ..) = sys::cpuid(0x8000_0000);
    (max_ext >= 0x8000_0007).then(|| (sys::cpuid(0x8000_0007).3 >> 8) & 1 == 1)
}
#[cfg(not(target_arch = "x86_64"))]
fn invariant_tsc_cpuid() -> Option<bool> {
    None
}

fn invariant_tsc_cpuinfo() -> Option<bool> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let flags = text.lines().find(|l| l.starts_with("flags"))?;
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    Some(has("constant_tsc") && has("nonstop_tsc"))
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Runs every measurement.
pub fn measure_all(budget: CalibrationTimes) -> ClockReport {
    let tsc_hz = calibrate_tsc(budget.tsc_calibration);
    let ns_per_tick = tsc_hz.map(|hz| 1e9 / hz);
    let mut methods = tsc_methods(ns_per_tick, budget);
    methods.extend(clock_gettime_methods(budget));
    methods.extend(older_methods(budget));

    let cpuid = invariant_tsc_cpuid();
    let cpuinfo = invariant_tsc_cpuinfo();
    let (invariant_tsc, invariant_tsc_source) = invariant_tsc_verdict(cpuid, cpuinfo);
    ClockReport {
        tsc_hz,
        tsc_ticks_per_us: tsc_hz.map(|hz| hz / 1e6),
        invariant_tsc,
        invariant_tsc_source: invariant_tsc_source.to_string(),
        invariant_tsc_cpuid: cpuid,
        invariant_tsc_cpuinfo: cpuinfo,
        clocksource: read_trimmed(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        ),
        available_clocksources: read_trimmed(
            "/sys/devices/system/clocksource/clocksource0/available_clocksource",
        ),
        methods,
    }
}

/// The four ways of reading the TSC (`ns_per_tick` converts its steps to
/// ns); rdtscp is unavailable where the CPU lacks it.
#[cfg(target_arch = "x86_64")]
fn tsc_methods(ns_per_tick: Option<f64>, budget: CalibrationTimes) -> Vec<MethodReport> {
    let tsc = Meter("tsc", ns_per_tick, None, budget);
    vec![
        tsc.measure("rdtsc", || Some(sys::rdtsc())),
        tsc.measure("lfence; rdtsc", || Some(sys::rdtsc_lfence())),
        if sys::has_rdtscp() {
            tsc.measure("rdtscp", || Some(sys::rdtscp().0))
        } else {
            unavailable("rdtscp", "tsc")
        },
        tsc.measure("mfence; lfence; rdtsc", || Some(sys::rdtsc_mfence_lfence())),
    ]
}

/// Not x86_64: the four TSC methods, each unavailable.
#[cfg(not(target_arch = "x86_64"))]
fn tsc_methods(_ns_per_tick: Option<f64>, _budget: CalibrationTimes) -> Vec<MethodReport> {
    ["rdtsc", "lfence; rdtsc", "rdtscp", "mfence; lfence; rdtsc"]
        .into_iter()
        .map(|name| unavailable(name, "tsc"))
        .collect()
}

/// clock_gettime on each clock through the vDSO, then CLOCK_MONOTONIC
/// through the raw syscall.
fn clock_gettime_methods(budget: CalibrationTimes) -> Vec<MethodReport> {
    let ns = |clock| Meter("ns", Some(1.0), sys::clock_getres_ns(clock), budget);
    let mut methods: Vec<MethodReport> = [
        ("MONOTONIC", libc::CLOCK_MONOTONIC),
        ("MONOTONIC_RAW", libc::CLOCK_MONOTONIC_RAW),
        ("MONOTONIC_COARSE", libc::CLOCK_MONOTONIC_COARSE),
        ("REALTIME", libc::CLOCK_REALTIME),
        ("BOOTTIME", libc::CLOCK_BOOTTIME),
        ("PROCESS_CPUTIME_ID", libc::CLOCK_PROCESS_CPUTIME_ID),
        ("THREAD_CPUTIME_ID", libc::CLOCK_THREAD_CPUTIME_ID),
    ]
    .into_iter()
    .map(|(name, clock)| {
        ns(clock).measure(&format!("clock_gettime(CLOCK_{name})"), || {
            sys::clock_gettime_ns(clock)
        })
    })
    .collect();
    let mono = libc::CLOCK_MONOTONIC;
    methods.push(
        ns(mono).measure("syscall(SYS_clock_gettime, CLOCK_MONOTONIC)", || {
            sys::clock_gettime_syscall_ns(mono)
        }),
    );
    methods
}

/// The older interfaces: gettimeofday, getrusage, times and clock.
fn older_methods(budget: CalibrationTimes) -> Vec<MethodReport> {
    let hz = rustix::param::clock_ticks_per_second(); // sysconf(_SC_CLK_TCK)
    let tick_ns = (hz > 0).then(|| 1e9 / hz as f64);
    let ns = Meter("ns", Some(1.0), None, budget);
    vec![
        ns.measure("gettimeofday", sys::gettimeofday_ns),
        ns.measure("getrusage(RUSAGE_SELF)", || {
            sys::getrusage_self().map(|u| u.user_ns.wrapping_add(u.sys_ns))
        }),
        Meter("clock ticks", tick_ns, None, budget).measure("times", sys::times_ticks),
        // POSIX fixes CLOCKS_PER_SEC at 1e6.
        Meter("us", Some(1000.0), None, budget).measure("clock", sys::clock_cpu),
    ]
}

/// Whether the TSC is invariant, and the evidence it rests on, from the
/// cpuid bit and the /proc/cpuinfo flags.
fn invariant_tsc_verdict(
    cpuid: Option<bool>,
    cpuinfo: Option<bool>,
) -> (Option<bool>, &'static str) {
    match (cpuid, cpuinfo) {
        (Some(true), Some(true)) => (
            Some(true),
            "cpuid 0x80000007 EDX[8] and /proc/cpuinfo constant_tsc+nonstop_tsc",
        ),
        (Some(true), _) => (Some(true), "cpuid 0x80000007 EDX[8]"),
        (_, Some(true)) => (
            Some(true),
            "/proc/cpuinfo constant_tsc+nonstop_tsc (cpuid 0x80000007 EDX[8] not set or absent)",
        ),
        (Some(false), _) | (_, Some(false)) => (
            Some(false),
            "neither cpuid 0x80000007 EDX[8] nor /proc/cpuinfo constant_tsc+nonstop_tsc",
        ),
        (None, None) => (None, "no cpuid leaf 0x80000007 and no /proc/cpuinfo flags"),
    }
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.decimals$}"))
}

/// The human-readable table.
pub fn format_table(r: &ClockReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "tsc_hz: {}  ({} ticks/us)\ninvariant_tsc: {}  ({})\nclocksource: {}  (available: {})\n\n",
        opt(r.tsc_hz, 0),
        opt(r.tsc_ticks_per_us, 3),
        r.invariant_tsc
            .map_or("unknown".to_string(), |b| b.to_string()),
        r.invariant_tsc_source,
        r.clocksource.as_deref().unwrap_or("unknown"),
        r.available_clocksources.as_deref().unwrap_or("unknown"),
    ));
    let header = [
        "method",
        "avail",
        "ns min",
        "ns median",
        "ticks min",
        "ticks med",
        "granularity ns",
        "getres ns",
        "backwards",
    ];
    let mut table = vec![header.map(String::from)];
    table.extend(r.methods.iter().map(|m| {
        [
            m.name.clone(),
            if m.available { "yes" } else { "no" }.to_string(),
            opt(m.cost_ns_min, 1),
            opt(m.cost_ns_median, 1),
            opt(m.cost_ticks_min, 1),
            opt(m.cost_ticks_median, 1),
            opt(m.granularity_ns, 1),
            m.resolution_ns.map_or("-".to_string(), |v| v.to_string()),
            if m.available {
                if m.backwards { "YES" } else { "no" }.to_string()
            } else {
                "-".to_string()
            },
        ]
    }));
    let mut widths = [0; 9];
    for row in &table {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    // The method name left-aligned, the numbers right-aligned.
    for row in &table {
        let mut line = format!("{:<w$}", row[0], w = widths[0]);
        for (cell, w) in row.iter().zip(widths).skip(1) {
            line.push_str(&format!("  {cell:>w$}"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn tsc_frequency_is_plausible() {
        let hz = calibrate_tsc(Duration::from_millis(50)).unwrap();
        assert!((1e8..1e10).contains(&hz), "tsc_hz {hz}");
    }
}
