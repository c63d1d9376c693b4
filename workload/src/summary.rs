//! The `--json` output of a run: what the driver deserialises from stdout.
use serde::{Deserialize, Serialize};

/// Name of the clock all `*_ns` timestamps of a [`RunSummary`] are read from.
pub const CLOCK_NAME: &str = "CLOCK_MONOTONIC_RAW";

/// One run of the counting loop. All times are nanoseconds; `start_ns` and
/// `end_ns` are CLOCK_MONOTONIC_RAW timestamps (comparable with perf records
/// opened with `use_clockid` = CLOCK_MONOTONIC_RAW); resource figures are
/// differences over the timed loop only (setup excluded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// What one iteration did (`--kind`: loop, stack:N, memory:SIZE).
    #[serde(default)]
    pub kind: String,
    /// Loop iterations completed in the timed loop.
    pub iterations: u64,
    /// Requested duration.
    pub duration_ns: u64,
    /// Measured duration of the loop, `end_ns - start_ns`.
    pub wall_ns: u64,
    /// `wall_ns - duration_ns` (how late the loop stopped; never negative by
    /// construction, signed for safety).
    pub overrun_ns: i64,
    /// TSC ticks over the loop (x86_64), `null` elsewhere.
    pub tsc_ticks: Option<u64>,
    /// Process user CPU time during the loop (getrusage RUSAGE_SELF).
    pub user_ns: u64,
    /// Process system CPU time during the loop (getrusage RUSAGE_SELF).
    pub sys_ns: u64,
    /// Voluntary context switches during the loop.
    pub nvcsw: u64,
    /// Involuntary context switches during the loop.
    pub nivcsw: u64,
    /// Minor page faults during the loop.
    pub minflt: u64,
    /// Time the loop's thread waited on the run queue while runnable during
    /// the loop, i.e. what other tasks on its CPU took from it
    /// (`/proc/thread-self/schedstat`, field 2); `null` when the kernel has
    /// no schedstat (CONFIG_SCHED_INFO off).
    #[serde(default)]
    pub wait_ns: Option<u64>,
    /// CPU (sched_getcpu) just before the loop.
    pub cpu_start: u32,
    /// CPU (sched_getcpu) just after the loop.
    pub cpu_end: u32,
    /// Loop start, CLOCK_MONOTONIC_RAW.
    pub start_ns: u64,
    /// Loop end, CLOCK_MONOTONIC_RAW.
    pub end_ns: u64,
    /// Always [`CLOCK_NAME`].
    pub clock: String,
    /// How the loop is stopped (see `workload::run::STOP_METHOD`).
    pub stop_method: String,
    /// `--cpu` if given.
    #[serde(default)]
    pub pinned_cpu: Option<u32>,
    /// Iterations between two stop checks / counter publications.
    #[serde(default)]
    pub chunk_iterations: u64,
    /// Calibrated time of one chunk before the loop (ns).
    #[serde(default)]
    pub chunk_ns: f64,
    /// How long before the deadline the timer signal was armed to fire.
    #[serde(default)]
    pub timer_margin_ns: u64,
    /// When the timer signal was seen, relative to `start_ns`; `null` when the
    /// duration was shorter than the margin (clock checks only).
    #[serde(default)]
    pub signal_seen_ns: Option<u64>,
    /// Time spent waiting for `go` (`--wait-go`), else `null`.
    #[serde(default)]
    pub waited_go_ns: Option<u64>,
    /// The `--counter` path, if any.
    #[serde(default)]
    pub counter: Option<String>,
    /// Timeline mode (`--timeline`): what the stamped loop saw, else `null`.
    #[serde(default)]
    pub timeline: Option<crate::timeline::TimelineReport>,
}
