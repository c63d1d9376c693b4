//! Timing one method of reading time: its cost per call in batches, and
//! the steps between back-to-back reads (granularity, going backwards).

use std::hint::black_box;
use std::time::{Duration, Instant};

use super::{CalibrationTimes, MethodReport};
use crate::clock::monotonic_raw_ns;
use crate::sys;

/// The TSC, serialised (x86_64).
#[cfg(target_arch = "x86_64")]
fn ticks() -> Option<u64> {
    Some(sys::rdtsc_lfence())
}
/// Not x86_64: no TSC.
#[cfg(not(target_arch = "x86_64"))]
fn ticks() -> Option<u64> {
    None
}

/// The median (sorts `v`); None when empty.
fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The smallest value; None when empty.
fn min(v: &[f64]) -> Option<f64> {
    v.iter().copied().reduce(f64::min)
}

/// What a family of methods shares: the unit of its readings, their
/// conversion to ns (`ns_per_unit`; None: granularity not convertible),
/// the clock's resolution (`resolution_ns`), and the time to spend.
#[derive(Clone, Copy)]
pub(super) struct Meter(
    pub(super) &'static str,
    pub(super) Option<f64>,
    pub(super) Option<u64>,
    pub(super) CalibrationTimes,
);

impl Meter {
    /// Measures the method `name`; `read` returns the raw reading.
    pub(super) fn measure<F: FnMut() -> Option<u64>>(
        self,
        name: &str,
        mut read: F,
    ) -> MethodReport {
        let Meter(unit, ns_per_unit, resolution_ns, budget) = self;
        let mut report = MethodReport {
            resolution_ns,
            ..unavailable(name, unit)
        };
        if read().is_none() {
            return report;
        }
        report.available = true;
        let batch = batch_calls(&mut read);
        cost_batches(&mut read, batch, budget.cost, &mut report);
        scan_steps(&mut read, budget.granularity, ns_per_unit, &mut report);
        report
    }
}

/// Calls of `read` in one cost batch: as many as take ~20 us, from a
/// first timing of 16 calls (clamped to 16..=20000).
fn batch_calls<F: FnMut() -> Option<u64>>(read: &mut F) -> u64 {
    let t0 = monotonic_raw_ns();
    for _ in 0..16 {
        black_box(read());
    }
    let per_call = (monotonic_raw_ns().saturating_sub(t0) as f64 / 16.0).max(1.0);
    ((20_000.0 / per_call) as u64).clamp(16, 20_000)
}

/// Times batches of `batch` calls of `read`, each bracketed by a TSC read
/// and a CLOCK_MONOTONIC_RAW read, for `budget` and at least 10 batches;
/// sets `report`'s per-call costs (minimum and median over the batches,
/// in ns and in TSC ticks).
fn cost_batches<F: FnMut() -> Option<u64>>(
    read: &mut F,
    batch: u64,
    budget: Duration,
    report: &mut MethodReport,
) {
    let mut ns_costs = Vec::new();
    let mut tick_costs = Vec::new();
    let started = Instant::now();
    while started.elapsed() < budget || ns_costs.len() < 10 {
        let k0 = ticks();
        let n0 = monotonic_raw_ns();
        for _ in 0..batch {
            black_box(read());
        }
        let n1 = monotonic_raw_ns();
        let k1 = ticks();
        ns_costs.push(n1.saturating_sub(n0) as f64 / batch as f64);
        if let (Some(a), Some(b)) = (k0, k1) {
            tick_costs.push(b.wrapping_sub(a) as f64 / batch as f64);
        }
    }
    report.cost_ns_min = min(&ns_costs);
    report.cost_ns_median = median(&mut ns_costs);
    report.cost_ticks_min = min(&tick_costs);
    report.cost_ticks_median = median(&mut tick_costs);
}

/// Granularity and monotonicity: reads `read` back to back, in rounds of
/// 256, until `budget` has passed; sets `report`'s reads, whether a read
/// was ever smaller than the one before, and the smallest non-zero step
/// in ns (`ns_per_unit` converts it; unset when the reading never changed).
fn scan_steps<F: FnMut() -> Option<u64>>(
    read: &mut F,
    budget: Duration,
    ns_per_unit: Option<f64>,
    report: &mut MethodReport,
) {
    let mut prev = read().unwrap_or(0);
    let mut smallest_step = u64::MAX;
    let mut backwards = false;
    let mut reads = 0u64;
    let started = Instant::now();
    'outer: loop {
        for _ in 0..256 {
            let v = read().unwrap_or(prev);
            reads += 1;
            if v < prev {
                backwards = true;
            } else if v > prev {
                smallest_step = smallest_step.min(v - prev);
            }
            prev = v;
        }
        if started.elapsed() >= budget {
            break 'outer;
        }
    }
    report.backwards = backwards;
    report.reads = reads;
    if smallest_step != u64::MAX {
        report.granularity_ns = ns_per_unit.map(|f| smallest_step as f64 * f);
    }
}

/// A method that cannot run on this host.
pub(super) fn unavailable(name: &str, unit: &str) -> MethodReport {
    MethodReport {
        name: name.to_string(),
        unit: unit.to_string(),
        ..MethodReport::default()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn median_and_min() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
        assert_eq!(min(&[3.0, 1.5, 2.0]), Some(1.5));
    }

    #[test]
    fn coarse_clock_has_coarse_granularity() {
        let b = CalibrationTimes {
            cost: Duration::from_millis(2),
            granularity: Duration::from_millis(30),
            tsc_calibration: Duration::from_millis(10),
        };
        let fine = Meter("ns", Some(1.0), None, b)
            .measure("raw", || sys::clock_gettime_ns(libc::CLOCK_MONOTONIC_RAW));
        let coarse_res = sys::clock_getres_ns(libc::CLOCK_MONOTONIC_COARSE);
        let coarse = Meter("ns", Some(1.0), coarse_res, b).measure("coarse", || {
            sys::clock_gettime_ns(libc::CLOCK_MONOTONIC_COARSE)
        });
        assert!(fine.available && coarse.available);
        assert!(!fine.backwards && !coarse.backwards);
        let (f, c) = (fine.granularity_ns.unwrap(), coarse.granularity_ns.unwrap());
        // Coarse ticks with the scheduler tick (>= 1 ms); the raw clock has
        // sub-microsecond steps.
        assert!(c >= 900_000.0, "coarse granularity {c}");
        assert!(f < 10_000.0, "raw granularity {f}");
        assert!(coarse.resolution_ns.unwrap() >= 1_000_000);
    }
}
