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
fn clock_map_is_a_line() {
    let m = ClockMap::new((1_000, 500.0), (3_000, 1_500.0));
    assert!((m.ticks_per_ns - 2.0).abs() < 1e-12);
    assert_eq!(m.ns(1_000), 500);
    assert_eq!(m.ns(2_000), 1_000);
    assert_eq!(m.ns(900), 450);
    assert!((m.dur_ns(10.0) - 5.0).abs() < 1e-12);
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
    let (count, end_ns) = t.run(
        &mut crate::work::Loop,
        &stop,
        Some(&published),
        0,
        Some(deadline),
    );
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
