//! Issue 19's parts of the cost: the cap and what lies above it, the exact
//! background, the long episodes measured against 0 Hz, the after-effect
//! bound at dense rates, the drift over the sweep and the remainder.

use super::*;

#[test]
fn exact_background_by_hand_and_against_the_draw() {
    // One 1 us episode of 10 us excess in a 1 s run, sampled at 1 kHz:
    // 1000 timestamps, hit with probability (1 + 2 x 1 us slack) / 1 ms.
    let e = [episode(300_000_000, 1_000, 10_000)];
    let (b, above) = coincidence_exact(&e, (0, 1_000_000_000), 1000.0, f64::INFINITY);
    assert!((b - 0.003 * 10_000.0 / 1000.0).abs() < 1e-12, "{b}");
    assert_eq!(above, 0.0);
    // Capped at 4 us: 4 us counted, 6 us above.
    let (b, above) = coincidence_exact(&e, (0, 1_000_000_000), 1000.0, 4_000.0);
    assert!((b - 0.003 * 4.0).abs() < 1e-12 && (above - 0.003 * 6.0).abs() < 1e-12);
    // On a varied background the draw converges to it, capped or not.
    let eps: Vec<Episode> = (0..2000u64)
        .map(|i| {
            episode(
                i * 497_000 + 1000,
                500 + (i * 7919) % 20_000,
                2_000 + (i * 104_729) % 150_000,
            )
        })
        .collect();
    for (rate, cap) in [
        (1000.0, f64::INFINITY),
        (4000.0, 60_000.0),
        (100.0, 30_000.0),
    ] {
        let (exact, _) = coincidence_exact(&eps, (0, 1_000_000_000), rate, cap);
        let mut rng = draw_rng(7, rate as u64, Draw::Background);
        let drawn = coincidence_capped(&eps, (0, 1_000_000_000), rate, cap, 4000, &mut rng);
        assert!(
            (drawn / exact - 1.0).abs() < 0.03,
            "{rate} Hz cap {cap}: {drawn} vs {exact}"
        );
    }
}

#[test]
fn the_cap_is_per_sample_an_episode_holds() {
    // Two matched episodes of 30 us: one holds three samples (dense rates
    // join their gaps), one a single sample. Cap 10 us per sample: the
    // first counts whole, the second 10 us with 20 us above.
    let mut r = run(1000, 4, 0, 0.0);
    r.matched_excess_ns = vec![30_000, 30_000];
    r.matched_samples_per_episode = vec![3, 1];
    let (capped, above) = r.matched_split_per_sample_ns(10_000.0);
    assert!((capped - 40_000.0 / 4.0).abs() < 1e-9, "{capped}");
    assert!((above - 20_000.0 / 4.0).abs() < 1e-9, "{above}");
    // No cap: the whole matched excess per sample.
    let (all, none) = r.matched_split_per_sample_ns(f64::INFINITY);
    assert!((all - 60_000.0 / 4.0).abs() < 1e-9 && none == 0.0);
}

/// A 0 Hz run with a 3 us episode every 1 ms and, every 100 ms, a 200 us
/// one: the cap (99.9th percentile) lies between them.
fn background(id: u32) -> GapsRun {
    let mut eps = Vec::new();
    for i in 0..1000u64 {
        let big = i % 100 == 0;
        eps.push(episode(
            i * 1_000_000 + 500,
            5_000,
            if big {
                200_000
            } else {
                3_000 + u64::from(id) * 10
            },
        ));
    }
    GapsRun {
        row: TimelineRow {
            episodes: eps.len() as u64,
            gap_time_ns: eps.iter().map(|e| e.excess_ns).sum(),
            ..zero_run(id, Vec::new()).row
        },
        episodes: eps,
        ..zero_run(id, Vec::new())
    }
}

#[test]
fn long_episodes_are_charged_where_sampling_raises_them() {
    let zero = [background(11), background(12), background(13)];
    // Three runs at 1 kHz, 15 us per sample, each with long episodes
    // taking 1.0-1.2 % of the CPU the 0 Hz runs do not have: 10-12 us per
    // sample more, resolved, so charged.
    let at: Vec<GapsRun> = (0..3u64)
        .map(|i| {
            let mut r = run(1000, 1000, 15_000_000, 0.0);
            r.row.run_id = 20 + i as u32;
            r.long_episodes = 4;
            r.long_excess_ns = 10_000_000 + i * 1_000_000;
            r
        })
        .collect();
    let runs: Vec<GapsRun> = zero.iter().cloned().chain(at).collect();
    let ps = build(&runs, &[], &[]);
    let row = &ps.rows[0];
    assert!(row.long_charged, "{row:?}");
    assert!(
        (row.long_ns.value - 11_000.0).abs() < 1.0,
        "{:?}",
        row.long_ns
    );
    assert!((row.long_per_s.value - 4.0).abs() < 1e-9);
    // The total holds it: direct (15 us minus b) + after-effect 0 + long.
    let want = row.direct_ns.value + row.long_ns.value;
    assert!((row.total_ns.value - want).abs() < 1.0, "{row:?}");
    // The background's cap sits between its 3 us and 200 us episodes, and
    // the cap at 1 kHz is 10 x the 15 us median matched episode.
    assert!(ps.background_cap_ns > 3_000.0 && ps.background_cap_ns <= 200_000.0);
    assert!(
        (row.cap_ns - ps.background_cap_ns.max(150_000.0)).abs() < 1e-6,
        "{row:?}"
    );
    // Without the long episodes nothing is charged.
    let plain: Vec<GapsRun> = runs
        .iter()
        .cloned()
        .map(|mut r| {
            r.long_episodes = 0;
            r.long_excess_ns = 0;
            r
        })
        .collect();
    let row = &build(&plain, &[], &[]).rows[0];
    assert!(!row.long_charged && row.long_ns.value == 0.0, "{row:?}");
}

#[test]
fn a_dense_rate_without_an_after_effect_gets_direct_plus_the_bound() {
    let zero = [background(11), background(12), background(13)];
    // 1 kHz runs with a measurable after-effect (2000 ns per sample, a bit
    // different per run), and 100 kHz runs whose recovery bins hold no
    // chunk beyond the horizon (5 us): after-effect n/a there.
    let mut runs: Vec<GapsRun> = zero.to_vec();
    for i in 0..3u32 {
        let mut r = run(
            1000,
            1000,
            15_000_000,
            2_000_000.0 + f64::from(i) * 100_000.0,
        );
        r.row.run_id = 30 + i;
        runs.push(r);
        let mut d = run(100_000, 100_000, 600_000_000, 0.0);
        d.row.run_id = 40 + i;
        d.recovery.retain(|b| b.to_ns <= 250);
        runs.push(d);
    }
    let ps = build(&runs, &[], &[]);
    let (sparse, dense) = (&ps.rows[0], &ps.rows[1]);
    assert!(sparse.after_effect_bound_ns.is_none());
    let bound = dense.after_effect_bound_ns.expect("a bound at 100 kHz");
    assert!(
        (bound - sparse.after_effect_ns.hi).abs() < 1e-9,
        "{bound} {sparse:?}"
    );
    // Never more than the time between samples outside the direct cost:
    // 10 us - ~6 us.
    assert!(
        dense.total_ns.value.is_finite() && dense.total_ns.value <= 10_000.0,
        "{dense:?}"
    );
    assert!(dense.total_ns.value > dense.direct_ns.value, "{dense:?}");
    assert!(dense.predicted_loss_pct.value.is_finite());
    assert!(
        ps.run_costs
            .iter()
            .filter(|c| c.after_effect_bounded)
            .count()
            == 3
    );
}

#[test]
fn drift_over_the_sweep() {
    use analysis::percost::{RunCost, cost_drift};
    // Six runs, 10 minutes apart, at one rate: the cost rises 10 % per run.
    let costs: Vec<RunCost> = (0..6u32)
        .map(|i| RunCost {
            run_id: i,
            block: i / 2,
            freq_hz: 1000,
            started_at_ns: u64::from(i) * 600_000_000_000,
            rate_hz: 1000.0,
            direct_ns: 0.0,
            above_cap_ns: 0.0,
            long_ns: 0.0,
            after_effect_ns: 0.0,
            after_effect_bounded: false,
            total_ns: 10_000.0 * (1.0 + 0.1 * f64::from(i)),
        })
        .collect();
    let mut row = super::model::cost_row(1000, 12_500.0, 13_000.0);
    row.total_ns.value = 12_500.0;
    let d = cost_drift(&costs, &[row]).unwrap();
    assert_eq!(d.runs, 6);
    assert!((d.span_s - 3000.0).abs() < 1e-9);
    assert!(
        (d.low_pct + 20.0).abs() < 1e-9 && (d.high_pct - 20.0).abs() < 1e-9,
        "{d:?}"
    );
    // 8 % of the mean per 10 minutes = 48 % per hour, exactly linear.
    let t = d.trend_pct_per_h.unwrap();
    assert!((t.value - 48.0).abs() < 1e-6, "{t:?}");
    assert!(d.moved());
    assert_eq!(d.by_block_pct.len(), 3);
    // Flat costs: no trend, not moved.
    let flat: Vec<RunCost> = costs
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, mut c)| {
            c.total_ns = if i % 2 == 0 { 12_400.0 } else { 12_600.0 };
            c
        })
        .collect();
    let mut row = super::model::cost_row(1000, 12_500.0, 13_000.0);
    row.total_ns.value = 12_500.0;
    assert!(!cost_drift(&flat, &[row]).unwrap().moved());
}

#[test]
fn the_remainder_by_hand() {
    // Paired 13 % (se 2), predicted 2 % (se 0.1), in gaps 0.5 pp (se 0.2),
    // their per-run sum 2.5 % (se 0.15: the two parts from the same runs,
    // correlated): 11 pp left, 10.5 of them outside every gap, whose se
    // is the sum's with the paired loss's, not the three in quadrature.
    let m = Remainder::of(
        &est(13.0, 2.0),
        &est(2.0, 0.1),
        est(0.5, 0.2),
        &est(2.5, 0.15),
    )
    .unwrap();
    assert!((m.total_pp.value - 11.0).abs() < 1e-12);
    assert!((m.total_pp.se - (4.01f64).sqrt()).abs() < 1e-12);
    assert!((m.outside_gaps_pp.value - 10.5).abs() < 1e-12);
    assert!((m.outside_gaps_pp.se - (4.0225f64).sqrt()).abs() < 1e-12);
    assert!(
        m.words().contains("outside every gap 10.50 pp"),
        "{}",
        m.words()
    );
    assert!(
        Remainder::of(
            &Estimate::point(13.0, 1),
            &est(2.0, 0.1),
            est(0.5, 0.2),
            &est(2.5, 0.15)
        )
        .is_none()
    );
}
