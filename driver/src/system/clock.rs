//! The driver's own clocks: CLOCK_MONOTONIC (absolute sleeps) and its CPU
//! time (CLOCK_MONOTONIC_RAW, the clock of the records, is the workload's:
//! `workload::clock`).

use rustix::time::{ClockId, clock_gettime};

/// CLOCK_MONOTONIC in ns (the clock absolute sleeps use).
pub fn monotonic_ns() -> u64 {
    clock_ns(ClockId::Monotonic)
}

/// CPU time of this process (all threads) in ns.
pub fn process_cpu_ns() -> u64 {
    clock_ns(ClockId::ProcessCPUTime)
}

/// CPU time of the calling thread in ns.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(ClockId::ThreadCPUTime)
}

fn clock_ns(id: ClockId) -> u64 {
    let ts = clock_gettime(id);
    u64::try_from(ts.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(ts.tv_nsec).unwrap_or(0))
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline_ns` (TIMER_ABSTIME), so
/// phase boundaries do not accumulate the wake-up latency.
pub fn sleep_until_monotonic(deadline_ns: u64) {
    let ts = rustix::time::Timespec {
        tv_sec: i64::try_from(deadline_ns / 1_000_000_000).unwrap_or(i64::MAX),
        tv_nsec: i64::try_from(deadline_ns % 1_000_000_000).unwrap_or(0),
    };
    loop {
        match rustix::thread::clock_nanosleep_absolute(ClockId::Monotonic, &ts) {
            Err(rustix::io::Errno::INTR) => continue,
            _ => return,
        }
    }
}
