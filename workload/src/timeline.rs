//! Timeline mode (`--timeline PATH`): the loop stamps its own progress and
//! records every interruption it sees.
//!
//! The counting loop runs in short chunks (~100 ns of loop) and reads the
//! TSC after each one (`rdtsc`, ~11 ns here: see `stamp_cost_ns` in the
//! report for what a stamp really adds to a chunk). A chunk that took longer
//! than a threshold calibrated at start (eight typical chunks, at least
//! 1 us) held a *gap*: something took the CPU away inside it (the sampling
//! interrupt, the tick, the host). The gap's start and end (the chunk's
//! stamps) and its *excess* (the chunk's length minus the median length of
//! the three ordinary chunks just before it) go into a buffer allocated and touched
//! before the loop, so recording a gap never faults; past its capacity gaps
//! are counted and their time summed but not stored (`gaps_dropped`).
//!
//! Ordinary chunks feed the speed-recovery histogram: by distance from the
//! end of the last gap (log-spaced bins from 250 ns to ~1 ms, in TSC units
//! rounded to a power of two), the number of chunks, their summed length and
//! their summed excess over the chunk before that gap, which shows the
//! after-effect of an interrupt (cache and TLB refill) that the gap itself
//! does not contain.
//!
//! After the loop, stamps are mapped to CLOCK_MONOTONIC_RAW (the clock of the
//! driver's perf records) by a straight line through two (TSC, clock) pairs
//! read before and after the loop, and the gaps are written to `PATH` as
//! little-endian u64 triples (start_ns, end_ns, excess_ns), see
//! [`read_gaps_file`]. Without x86_64's TSC the stamp is the vDSO
//! CLOCK_MONOTONIC_RAW itself (one tick = 1 ns).
use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::clock::monotonic_raw_ns;
use crate::work::Work;

mod clock_map;
pub(crate) use clock_map::stamp_clock_pair;
use clock_map::{ClockMap, stamp};

/// Target loop time of one stamped chunk.
pub const TARGET_STAMP_CHUNK_NS: f64 = 100.0;
/// The gap threshold is this many typical stamped chunks ...
pub const THRESHOLD_CHUNKS: f64 = 8.0;
/// ... and at least this long.
pub const MIN_THRESHOLD_NS: f64 = 1_000.0;
/// Gaps stored per second of run by default (100 kHz sampling plus ~2 kHz
/// of background, with room for interrupts seen as two gaps).
pub const DEFAULT_GAPS_PER_S: u64 = 250_000;
/// Number of recovery bins; the last is open (from ~1 ms on).
pub const RECOVERY_BINS: usize = 14;
/// Width of the first recovery bin, before rounding to a power of two
/// of TSC ticks.
const FIRST_BIN_NS: f64 = 250.0;
/// A calibration whose typical chunk is longer than this could not see the
/// loop run undisturbed: the CPU was taken away throughout.
const MAX_CALIBRATED_CHUNK_NS: f64 = 20_000.0;
/// Bytes of one gap in the gaps file.
pub const GAP_RECORD_BYTES: usize = 24;

/// Why timeline mode could not run.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    /// The stamped chunk could not be calibrated.
    #[error(
        "--timeline: cannot calibrate the stamped chunk: its typical length was {chunk_ns:.0} ns \
         (over {MAX_CALIBRATED_CHUNK_NS:.0} ns), so the loop was preempted throughout calibration; \
         run on an idle CPU (--cpu)"
    )]
    Calibration {
        /// The median stamped chunk, ns.
        chunk_ns: f64,
    },
    /// `--max-gaps 0`.
    #[error("--max-gaps must be at least 1")]
    ZeroCapacity,
    /// The gap buffer cannot be allocated.
    #[error("--timeline: cannot allocate room for {0} gaps; give a smaller --max-gaps")]
    Alloc(u64),
    /// Writing the gaps file failed.
    #[error("--timeline {}: cannot write the gaps: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// One bin of the speed-recovery histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecoveryBin {
    /// Lower edge, ns after the end of the last gap.
    pub from_ns: u64,
    /// Upper edge, ns (u64::MAX for the last, open bin).
    pub to_ns: u64,
    /// Ordinary chunks that started in the bin.
    pub chunks: u64,
    /// Their summed length, ns.
    pub chunk_ns_sum: f64,
    /// Their summed (length - reference length at the last gap), ns; the
    /// reference is the median of the three ordinary chunks before it.
    pub excess_ns_sum: f64,
}

/// What timeline mode saw; part of the run's JSON report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelineReport {
    /// The gaps file.
    pub path: String,
    /// Loop iterations between two stamps.
    pub stamp_chunk_iterations: u64,
    /// Median stamped chunk at calibration, ns.
    pub stamp_chunk_ns: f64,
    /// What a stamp adds to a chunk, ns (median stamped chunk minus the
    /// same iterations at the calibrated unstamped speed).
    pub stamp_cost_ns: f64,
    /// Chunks longer than this are gaps, ns.
    pub gap_threshold_ns: u64,
    /// Share of calibration chunks over the threshold.
    pub calibration_gap_share: f64,
    /// TSC ticks per ns of CLOCK_MONOTONIC_RAW over the run (1 without TSC).
    pub tsc_per_ns: f64,
    /// First and last stamp of the loop, CLOCK_MONOTONIC_RAW ns.
    pub loop_start_ns: u64,
    /// See `loop_start_ns`.
    pub loop_end_ns: u64,
    /// Gap buffer capacity.
    pub capacity: u64,
    /// Gaps seen.
    pub gaps: u64,
    /// Gaps seen but not stored (buffer full).
    pub gaps_dropped: u64,
    /// Summed excess of every gap seen, ns.
    pub gap_time_ns: u64,
    /// Stamped chunks in all.
    pub chunks: u64,
    /// The speed-recovery histogram.
    pub recovery: Vec<RecoveryBin>,
    /// Problems, each a sentence (empty when none).
    pub warnings: Vec<String>,
}

/// A gap as stored during the loop (ticks; mapped to ns after it).
#[derive(Debug, Clone, Copy)]
struct RawGap {
    start: u64,
    ticks: u64,
    ref_ticks: u64,
}

/// Calibrated timeline state: buffer, histogram, counters (all zero
/// before the loop).
#[derive(Default)]
pub struct Timeline {
    path: PathBuf,
    chunk: u64,
    threshold: u64,
    shift: u32,
    buf: Vec<RawGap>,
    len: usize,
    gaps: u64,
    gap_ticks: u64,
    chunks: u64,
    hist_chunks: [u64; RECOVERY_BINS],
    hist_ticks: [u64; RECOVERY_BINS],
    hist_excess: [i64; RECOVERY_BINS],
    first: u64,
    last: u64,
    calib: (u64, f64),
    chunk_ns: f64,
    stamp_cost_ns: f64,
    calibration_gap_share: f64,
}

/// Recovery bin of a distance in ticks: 0 below one unit (2^shift ticks),
/// then one bin per doubling, the last open.
#[inline(always)]
fn bin_of(dist: u64, shift: u32) -> usize {
    let q = dist >> shift;
    ((64 - q.leading_zeros()) as usize).min(RECOVERY_BINS - 1)
}

/// Default gap capacity for a run of `duration_ns`.
pub fn default_capacity(duration_ns: u64) -> u64 {
    (duration_ns / 1_000_000)
        .saturating_mul(DEFAULT_GAPS_PER_S)
        .div_ceil(1000)
        .clamp(100_000, 20_000_000)
}

/// Iterations per stamped chunk for work taking `ns_per_iter` per
/// iteration: as many as take [`TARGET_STAMP_CHUNK_NS`], a multiple of 8
/// from 16 on (the counting loops), else at least 1, so slow work (a
/// pointer chase beyond the caches, ~100-200 ns a hop) is still stamped
/// every hop or so and its gap threshold (eight chunks) stays below the
/// length of a sampling interrupt; a 16-hop floor made that threshold
/// ~24 us there and hid 86-94 % of the samples.
pub fn stamp_chunk_iterations(ns_per_iter: f64) -> u64 {
    let n = (TARGET_STAMP_CHUNK_NS / ns_per_iter.max(1e-3)) as u64;
    if n >= 16 { n & !7 } else { n.max(1) }
}

impl Timeline {
    /// Calibrates the stamped chunk, the threshold and the clock map (a few
    /// ms of `work`), and allocates and touches the gap buffer. `ns_per_iter`
    /// is the unstamped loop's calibrated speed.
    pub fn calibrate<W: Work>(
        work: &mut W,
        path: PathBuf,
        ns_per_iter: f64,
        capacity: u64,
    ) -> Result<Self, TimelineError> {
        if capacity == 0 {
            return Err(TimelineError::ZeroCapacity);
        }
        let chunk = stamp_chunk_iterations(ns_per_iter);
        // Ticks per ns over ~5 ms of loop, which also warms the CPU up.
        let p0 = stamp_clock_pair();
        let mut lens = Vec::with_capacity(40_000);
        let mut prev = stamp();
        let until = monotonic_raw_ns() + 5_000_000;
        while lens.len() < lens.capacity() {
            black_box(work.chunk(0, chunk));
            let now = stamp();
            lens.push(now.wrapping_sub(prev));
            prev = now;
            if lens.len() % 1024 == 0 && monotonic_raw_ns() > until {
                break;
            }
        }
        let p1 = stamp_clock_pair();
        let map = ClockMap::new(p0, p1);
        lens.sort_unstable();
        let median_ticks = lens[lens.len() / 2] as f64;
        let chunk_ns = map.dur_ns(median_ticks);
        if chunk_ns > MAX_CALIBRATED_CHUNK_NS {
            return Err(TimelineError::Calibration { chunk_ns });
        }
        let threshold_ns = (THRESHOLD_CHUNKS * chunk_ns).max(MIN_THRESHOLD_NS);
        let threshold = (threshold_ns * map.ticks_per_ns).round() as u64;
        let over = lens.iter().filter(|&&l| l > threshold).count();
        let unit = (FIRST_BIN_NS * map.ticks_per_ns).max(1.0);
        let shift = unit.log2().round().max(0.0) as u32;
        let cap = usize::try_from(capacity).map_err(|_| TimelineError::Alloc(capacity))?;
        let mut buf: Vec<RawGap> = Vec::new();
        buf.try_reserve_exact(cap)
            .map_err(|_| TimelineError::Alloc(capacity))?;
        // Written, not just reserved: every page is touched now, so storing
        // a gap during the loop never takes a page fault (which would itself
        // be a gap).
        buf.resize(
            cap,
            RawGap {
                start: u64::MAX,
                ticks: 0,
                ref_ticks: 0,
            },
        );
        Ok(Timeline {
            path,
            chunk,
            threshold,
            shift,
            buf,
            calib: p0,
            chunk_ns,
            stamp_cost_ns: chunk_ns - chunk as f64 * ns_per_iter,
            calibration_gap_share: over as f64 / lens.len().max(1) as f64,
            ..Timeline::default()
        })
    }

    /// Runs the stamped loop of `work` until `stop` is set, then until
    /// CLOCK_MONOTONIC_RAW reaches `deadline_ns`, publishing the count after
    /// every chunk. Returns the count, the clock reading that ended the
    /// loop, and the clock reading when the loop saw `stop`.
    pub fn run<W: Work>(
        &mut self,
        work: &mut W,
        stop: &AtomicBool,
        publish: Option<&AtomicU64>,
        deadline_ns: u64,
    ) -> (u64, u64, u64) {
        let prev = stamp();
        self.first = prev;
        let mut state = LoopState {
            prev,
            recent: [0; 3],
            ref_at_gap: 0,
            gap_end: prev.wrapping_sub(1 << 62),
        };
        let count = self.stamped::<false, W>(work, &mut state, stop, publish, 0, 0);
        let stop_seen_ns = monotonic_raw_ns();
        let count = self.stamped::<true, W>(work, &mut state, stop, publish, count, deadline_ns);
        let end_ns = monotonic_raw_ns();
        self.last = state.prev;
        (count, end_ns, stop_seen_ns)
    }

    /// The stamped loop. CLOCK: also read CLOCK_MONOTONIC_RAW every chunk and
    /// stop at `deadline_ns`; else stop when `stop` is set.
    #[inline(never)]
    fn stamped<const CLOCK: bool, W: Work>(
        &mut self,
        work: &mut W,
        st: &mut LoopState,
        stop: &AtomicBool,
        publish: Option<&AtomicU64>,
        start_count: u64,
        deadline_ns: u64,
    ) -> u64 {
        let mut count = start_count;
        loop {
            count = work.chunk(count, self.chunk);
            if let Some(p) = publish {
                p.store(count, Ordering::Release);
            }
            let now = stamp();
            let d = now.wrapping_sub(st.prev);
            self.chunks += 1;
            if d > self.threshold {
                let ref_ticks = st.reference().unwrap_or(d.min(self.threshold));
                self.gaps += 1;
                self.gap_ticks += d.saturating_sub(ref_ticks);
                if let Some(slot) = self.buf.get_mut(self.len) {
                    *slot = RawGap {
                        start: st.prev,
                        ticks: d,
                        ref_ticks,
                    };
                    self.len += 1;
                }
                st.gap_end = now;
                st.ref_at_gap = ref_ticks;
            } else {
                let b = bin_of(st.prev.wrapping_sub(st.gap_end), self.shift);
                self.hist_chunks[b] += 1;
                self.hist_ticks[b] += d;
                if st.ref_at_gap > 0 {
                    self.hist_excess[b] += d as i64 - st.ref_at_gap as i64;
                }
                st.recent = [st.recent[1], st.recent[2], d];
            }
            st.prev = now;
            if CLOCK {
                if monotonic_raw_ns() >= deadline_ns {
                    return count;
                }
            } else if stop.load(Ordering::Relaxed) {
                return count;
            }
        }
    }

    /// Maps the stamps to CLOCK_MONOTONIC_RAW, writes the gaps file and
    /// returns the report.
    pub fn finish(self) -> Result<TimelineReport, TimelineError> {
        let map = ClockMap::new(self.calib, stamp_clock_pair());
        let write_err = |source| TimelineError::Write {
            path: self.path.clone(),
            source,
        };
        let file = std::fs::File::create(&self.path).map_err(write_err)?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        for g in &self.buf[..self.len] {
            let start_ns = map.ns(g.start);
            let end_ns = map.ns(g.start.wrapping_add(g.ticks));
            let excess_ns = map
                .dur_ns(g.ticks.saturating_sub(g.ref_ticks) as f64)
                .round() as u64;
            for v in [start_ns, end_ns, excess_ns] {
                w.write_all(&v.to_le_bytes()).map_err(write_err)?;
            }
        }
        w.flush().map_err(write_err)?;
        let unit = (1u64 << self.shift) as f64;
        let recovery = (0..RECOVERY_BINS)
            .map(|b| {
                let lo = if b == 0 {
                    0.0
                } else {
                    unit * (1u64 << (b - 1)) as f64
                };
                let hi = unit * (1u64 << b) as f64;
                RecoveryBin {
                    from_ns: map.dur_ns(lo).round() as u64,
                    to_ns: if b + 1 == RECOVERY_BINS {
                        u64::MAX
                    } else {
                        map.dur_ns(hi).round() as u64
                    },
                    chunks: self.hist_chunks[b],
                    chunk_ns_sum: map.dur_ns(self.hist_ticks[b] as f64),
                    excess_ns_sum: map.dur_ns(self.hist_excess[b] as f64),
                }
            })
            .collect();
        let dropped = self.gaps - self.len as u64;
        let mut warnings = Vec::new();
        if dropped > 0 {
            warnings.push(format!(
                "gap buffer full: {dropped} of {} gaps not stored (their time is counted); \
                 give a larger --max-gaps",
                self.gaps
            ));
        }
        if self.calibration_gap_share > 0.05 {
            warnings.push(format!(
                "{:.1}% of calibration chunks were gaps: the CPU was busy at calibration",
                100.0 * self.calibration_gap_share
            ));
        }
        Ok(TimelineReport {
            path: self.path.display().to_string(),
            stamp_chunk_iterations: self.chunk,
            stamp_chunk_ns: self.chunk_ns,
            stamp_cost_ns: self.stamp_cost_ns,
            gap_threshold_ns: map.dur_ns(self.threshold as f64).round() as u64,
            calibration_gap_share: self.calibration_gap_share,
            tsc_per_ns: map.ticks_per_ns,
            loop_start_ns: map.ns(self.first),
            loop_end_ns: map.ns(self.last),
            capacity: self.buf.len() as u64,
            gaps: self.gaps,
            gaps_dropped: dropped,
            gap_time_ns: map.dur_ns(self.gap_ticks as f64).round() as u64,
            chunks: self.chunks,
            recovery,
            warnings,
        })
    }
}

struct LoopState {
    prev: u64,
    /// The last three ordinary chunks, oldest first (0 = none yet).
    recent: [u64; 3],
    ref_at_gap: u64,
    gap_end: u64,
}

impl LoopState {
    /// The reference chunk length at a gap: the median of the last three
    /// ordinary chunks. One chunk alone is a biased reference: a short
    /// stall under the threshold just before an interrupt (a host exit
    /// that precedes the injection) lengthens it by hundreds of ns, and
    /// every chunk until the next gap would then look faster than it is.
    fn reference(&self) -> Option<u64> {
        let [a, b, c] = self.recent;
        (a > 0).then(|| a.max(b).min(a.min(b).max(c)))
    }
}

/// Reads a gaps file written by timeline mode: (start_ns, end_ns, excess_ns)
/// per gap, in time order.
pub fn read_gaps_file(path: &Path) -> std::io::Result<Vec<[u64; 3]>> {
    let bytes = std::fs::read(path)?;
    if bytes.len() % GAP_RECORD_BYTES != 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{}: {} bytes is not a whole number of {GAP_RECORD_BYTES}-byte gap records",
                path.display(),
                bytes.len()
            ),
        ));
    }
    Ok(bytes
        .chunks_exact(GAP_RECORD_BYTES)
        .map(|r| {
            let word = |i: usize| u64::from_le_bytes(std::array::from_fn(|j| r[i * 8 + j]));
            [word(0), word(1), word(2)]
        })
        .collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn bins_double() {
        assert_eq!(bin_of(0, 10), 0);
        assert_eq!(bin_of(1023, 10), 0);
        assert_eq!(bin_of(1024, 10), 1);
        assert_eq!(bin_of(2047, 10), 1);
        assert_eq!(bin_of(2048, 10), 2);
        assert_eq!(bin_of(4096, 10), 3);
        assert_eq!(bin_of(u64::MAX / 2, 10), RECOVERY_BINS - 1);
    }

    #[test]
    fn the_reference_is_the_median_of_three() {
        let mut st = LoopState {
            prev: 0,
            recent: [0, 0, 0],
            ref_at_gap: 0,
            gap_end: 0,
        };
        assert_eq!(st.reference(), None);
        for (r, m) in [
            ([100, 900, 110], 110),
            ([900, 100, 110], 110),
            ([5, 7, 6], 6),
            ([3, 3, 9], 3),
        ] {
            st.recent = r;
            assert_eq!(st.reference(), Some(m), "{r:?}");
        }
    }

    #[test]
    fn capacity_scales_with_duration_and_is_bounded() {
        assert_eq!(default_capacity(10_000_000_000), 2_500_000);
        assert_eq!(default_capacity(1_000_000), 100_000);
        assert_eq!(default_capacity(u64::MAX), 20_000_000);
    }

    #[test]
    fn a_short_timeline_counts_exactly_and_writes_its_gaps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gaps.bin");
        let (_, chunk_ns) = crate::run::calibrate_chunk(&mut crate::work::Loop, 1 << 16);
        let (chunk, _) = crate::run::calibrate_chunk(&mut crate::work::Loop, 1 << 16);
        let ns_per_iter = chunk_ns / chunk as f64;
        let mut t =
            Timeline::calibrate(&mut crate::work::Loop, path.clone(), ns_per_iter, 1000).unwrap();
        let stop = AtomicBool::new(false);
        let deadline = monotonic_raw_ns() + 20_000_000;
        // No stop flag: the clock phase alone ends it.
        stop.store(true, Ordering::Relaxed);
        let published = AtomicU64::new(0);
        let (count, end_ns, _) = t.run(&mut crate::work::Loop, &stop, Some(&published), deadline);
        assert!(end_ns >= deadline);
        assert_eq!(count, published.load(Ordering::Relaxed));
        assert_eq!(count % t.chunk, 0);
        let chunks = t.chunks;
        assert_eq!(count / t.chunk, chunks);
        let rep = t.finish().unwrap();
        let gaps = read_gaps_file(&path).unwrap();
        assert_eq!(gaps.len() as u64, rep.gaps - rep.gaps_dropped);
        let in_hist: u64 = rep.recovery.iter().map(|b| b.chunks).sum();
        assert_eq!(in_hist + rep.gaps, rep.chunks);
        assert!(rep.loop_end_ns > rep.loop_start_ns);
        assert!(rep.gap_threshold_ns >= 1_000);
        for g in &gaps {
            assert!(g[0] < g[1] && g[1] - g[0] >= rep.gap_threshold_ns - 1);
            assert!(g[0] >= rep.loop_start_ns && g[1] <= rep.loop_end_ns + 1);
        }
    }

    #[test]
    fn a_truncated_gaps_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g");
        std::fs::write(&p, [0u8; 25]).unwrap();
        assert!(read_gaps_file(&p).is_err());
    }

    #[test]
    fn slow_work_is_stamped_every_iteration_or_so() {
        // The counting loop (~0.3 ns an iteration): ~330, a multiple of 8.
        assert_eq!(stamp_chunk_iterations(0.3), 328);
        assert_eq!(stamp_chunk_iterations(6.25), 16);
        // A chase in L3 (~40 ns a hop) and beyond it (~190 ns): 2 and 1 hops,
        // not the 16 of the counting loops' floor.
        assert_eq!(stamp_chunk_iterations(40.0), 2);
        assert_eq!(stamp_chunk_iterations(190.0), 1);
        assert_eq!(stamp_chunk_iterations(5000.0), 1);
    }
}
