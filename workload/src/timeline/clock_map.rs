//! The loop's stamp (TSC ticks on x86_64, else CLOCK_MONOTONIC_RAW ns) and
//! the line that maps its ticks to CLOCK_MONOTONIC_RAW ns.

use crate::clock::monotonic_raw_ns;

/// The stamp: TSC ticks (x86_64) or CLOCK_MONOTONIC_RAW ns.
#[inline(always)]
pub(super) fn stamp() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        crate::sys::rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_raw_ns()
    }
}

/// A (stamp, CLOCK_MONOTONIC_RAW ns) pair read as close together as this
/// thread can: the best of 8 clock-stamp-clock brackets.
pub(crate) fn stamp_clock_pair() -> (u64, f64) {
    let mut best = (0u64, 0f64, u64::MAX);
    for _ in 0..8 {
        let a = monotonic_raw_ns();
        let t = stamp();
        let b = monotonic_raw_ns();
        let width = b.saturating_sub(a);
        if width < best.2 {
            best = (t, (a as f64 + b as f64) / 2.0, width);
        }
    }
    (best.0, best.1)
}

/// Ticks -> CLOCK_MONOTONIC_RAW ns, a line through two pairs.
#[derive(Debug, Clone, Copy)]
pub(super) struct ClockMap {
    t0: u64,
    ns0: f64,
    pub(super) ticks_per_ns: f64,
}

impl ClockMap {
    pub(super) fn new(p0: (u64, f64), p1: (u64, f64)) -> Self {
        let dt = p1.0.wrapping_sub(p0.0) as f64;
        let dns = p1.1 - p0.1;
        let ticks_per_ns = if dt > 0.0 && dns > 0.0 { dt / dns } else { 1.0 };
        ClockMap {
            t0: p0.0,
            ns0: p0.1,
            ticks_per_ns,
        }
    }

    pub(super) fn ns(&self, t: u64) -> u64 {
        let d = t.wrapping_sub(self.t0) as i64 as f64;
        (self.ns0 + d / self.ticks_per_ns).round().max(0.0) as u64
    }

    pub(super) fn dur_ns(&self, ticks: f64) -> f64 {
        ticks / self.ticks_per_ns
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn clock_map_is_a_line() {
        let m = ClockMap::new((1_000, 500.0), (3_000, 1_500.0));
        assert!((m.ticks_per_ns - 2.0).abs() < 1e-12);
        assert_eq!(m.ns(1_000), 500);
        assert_eq!(m.ns(2_000), 1_000);
        assert_eq!(m.ns(900), 450);
        assert!((m.dur_ns(10.0) - 5.0).abs() < 1e-12);
    }
}
