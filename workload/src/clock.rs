//! CLOCK_MONOTONIC_RAW, the clock of the workload's timeline and of the perf
//! records (`use_clockid`), read through the vDSO: one definition for the
//! workload and the driver.

/// CLOCK_MONOTONIC_RAW in ns (vDSO).
#[inline]
pub fn monotonic_raw_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicRaw);
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}
