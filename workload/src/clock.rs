//! CLOCK_MONOTONIC_RAW, the clock of the workload's timeline and of the perf
//! records (`use_clockid`), read through the vDSO: one definition for the
//! workload and the driver.

/// CLOCK_MONOTONIC_RAW in ns (vDSO).
#[inline]
pub fn monotonic_raw_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicRaw);
    ns_from(ts.tv_sec, ts.tv_nsec)
}

/// A clock's seconds and nanoseconds as one count of ns (wrapping, as the
/// clocks' own u64 readings do).
pub(crate) fn ns_from(sec: i64, nsec: i64) -> u64 {
    (sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(nsec as u64)
}
