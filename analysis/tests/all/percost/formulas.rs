//! Each formula on hand-made runs: the per-run cost, long episodes, the
//! after-effect, coincidences, the A/A control and the agreement rule.

use super::*;
use crate::common::*;

#[test]
fn per_run_formulas_by_hand() {
    // 1000 samples in 1 s, 15 ms matched: 15 000 ns per sample; b = 100.
    let r = run(1000, 1000, 15_000_000, 2_000_000.0);
    assert_eq!(r.window_ns(), 1e9);
    assert!((r.rate_hz() - 1000.0).abs() < 1e-9);
    assert!((r.matched_split_per_sample_ns(f64::INFINITY).0 - 100.0 - 14_900.0).abs() < 1e-9);
    // Recovery excess 2 ms in 1 s over 1000 episodes: 2000 ns each, and
    // one matched episode per sample.
    assert!((r.after_share(50_000.0) - 0.002).abs() < 1e-15);
    assert!((r.after_per_episode_ns(50_000.0) - 2000.0).abs() < 1e-9);
    assert!((after_effect_ns(&r, 50_000.0) - 2000.0).abs() < 1e-9);
    // Twice the episodes (half of them background): 1000 ns each, and the
    // samples' own after-effect halves with it.
    let mut r2 = r.clone();
    r2.row.episodes = 2000;
    assert!((after_effect_ns(&r2, 50_000.0) - 1000.0).abs() < 1e-9);
    // 1000 Hz x 15 900 ns = 1.59 % of the CPU.
    assert!((predicted_loss_pct(1000.0, 15_900.0) - 1.59).abs() < 1e-12);
    assert!((r.gap_share_pct() - 2.0).abs() < 1e-12);
}

#[test]
fn long_episodes_and_the_samples_in_them_are_left_out() {
    // 1000 samples: 999 in 10 us episodes, one in a 4 ms stretch the CPU
    // was taken away (another task, the host).
    let mut r = run(1000, 1000, 0, 0.0);
    r.matched_excess_ns = vec![10_000; 999];
    r.matched_excess_ns.push(4_000_000);
    r.samples_in_long = 1;
    let (matched, _) = r.matched_split_per_sample_ns(f64::INFINITY);
    assert!((matched - 10_000.0).abs() < 1e-9);
    // Random timestamps inside a long episode are left out of b alike: a
    // periodic draw (1 kHz) over a run that holds a 4 ms stretch and a
    // 100 us episode of 1 us excess.
    let e = [
        episode(100_000_000, 4_000_000, 4_000_000),
        episode(500_000_000, 100_000, 1_000),
    ];
    let mut rng = draw_rng(1, 1000, Draw::Background);
    let b = coincidence_capped(
        &e,
        (0, 1_000_000_000),
        1000.0,
        f64::INFINITY,
        5000,
        &mut rng,
    );
    // Only the short episode counts: a replication of 1000 timestamps (996
    // outside the long one) hits it with probability 102 us / 1 ms, for
    // 1000 ns: b = 0.102 x 1000 / 996 = 0.1024 ns per timestamp, +-0.0043
    // (one sd over 5000 replications). With the 4 ms stretch counted it
    // would be 4000 ns more.
    assert!((b - 0.1024).abs() < 0.015, "{b}");
}

#[test]
fn the_after_effect_is_counted_against_the_runs_own_speed_beyond_the_horizon() {
    // Every chunk 1.6 ns "faster" than its reference (the offset of a
    // median-of-three reference), and 5 ms of real after-effect in the
    // first bin: the share is 5 ms / 1 s, not 5 ms minus 3.2 ms.
    let mut r = run(1000, 1000, 10_000_000, 0.0);
    for b in &mut r.recovery {
        b.excess_ns_sum = -1.6 * b.chunks as f64;
    }
    r.recovery[0].excess_ns_sum += 5_000_000.0;
    assert!((r.after_share(50_000.0) - 0.005).abs() < 1e-12);
    // The horizon follows the rate: 50 us, or half the sampling interval.
    assert_eq!(recovery_horizon_ns(100.0), 50_000.0);
    assert_eq!(recovery_horizon_ns(100_000.0), 5_000.0);
    // Nothing beyond the horizon: no reference, no after-effect.
    r.recovery.truncate(2);
    assert!(r.after_share(50_000.0).is_nan());
}

#[test]
fn coincidence_counts_an_episode_once_per_replication() {
    // One 0.9 ms episode (excess 0.9 ms, under the 1 ms of a long one) in
    // 1 s; at 100 kHz each replication puts 100 000 timestamps, ~90 of
    // them in the episode: counted once, so b = 900 000 / 100 000 = 9 ns
    // (up to the one or two timestamps the episode's slack adds or takes).
    let e = [episode(500_000_000, 900_000, 900_000)];
    let mut rng = draw_rng(7, 100_000, Draw::Background);
    let b = coincidence_capped(
        &e,
        (0, 1_000_000_000),
        100_000.0,
        f64::INFINITY,
        3,
        &mut rng,
    );
    assert!((b - 9.0).abs() < 1e-3, "{b}");
    // No episodes, no coincidence; a bad rate is NaN, not 0.
    assert_eq!(
        coincidence_capped(&[], (0, 1_000_000_000), 1000.0, f64::INFINITY, 3, &mut rng),
        0.0
    );
    assert!(coincidence_capped(&e, (0, 1_000_000_000), 0.0, f64::INFINITY, 3, &mut rng).is_nan());
}

/// 10 000 episodes of 8 us (excess 5 us) at random in 1 s: a timestamp
/// matches one with probability 10 000 x (8 + 2 x 1 slack) us / 1 s = 0.1,
/// so b = 0.1 x 5000 = 500 ns, whatever the rate (periods > 10 us).
fn random_episodes(seed: u64, excess_ns: u64) -> Vec<Episode> {
    let mut rng = Lcg(seed | 1);
    (0..10_000u64)
        .map(|k| episode(k * 100_000 + rng.next() % 80_000, 8_000, excess_ns))
        .collect()
}

#[test]
fn coincidence_matches_its_expectation() {
    let e = random_episodes(3, 5_000);
    for rate in [100.0, 1000.0, 50_000.0] {
        let mut rng = draw_rng(1, rate as u64, Draw::Background);
        let n = replications_for(1e9, rate);
        let b = coincidence_capped(&e, (0, 1_000_000_000), rate, f64::INFINITY, n, &mut rng);
        assert!((b - 500.0).abs() < 25.0, "rate {rate}: b {b}");
    }
    // Replications: >= 200 000 timestamps and >= 8 replications.
    assert_eq!(replications_for(1e9, 100.0), 2000);
    assert_eq!(replications_for(10e9, 100_000.0), MIN_REPLICATIONS);
}

fn aa(zero: &[GapsRun]) -> Estimate {
    let refs: Vec<&GapsRun> = zero.iter().collect();
    let b = coincidence_by_run_capped(&refs, 1000, 1000.0, Draw::Background, f64::INFINITY);
    let own = coincidence_by_run_capped(&refs, 1000, 1000.0, Draw::Null, f64::INFINITY);
    // The two streams draw different timestamps.
    assert!(b.iter().zip(&own).all(|(x, y)| x != y), "{b:?} {own:?}");
    aa_control(&own, &b).unwrap()
}

#[test]
fn aa_control_contains_zero_for_alike_runs_and_widens_for_a_heavy_one() {
    let alike: Vec<GapsRun> = (0..5)
        .map(|i| zero_run(i, random_episodes(10 + u64::from(i), 5_000)))
        .collect();
    let e = aa(&alike);
    assert!(e.lo <= 0.0 && 0.0 <= e.hi, "{e:?}");
    assert!(e.half_width() < 25.0, "{e:?}"); // 5 % of b = 500 ns
    // One run's background 10x heavier: its leave-one-out difference is
    // ~+4500 ns, the others' ~-1100 ns. The mean of leave-one-out
    // differences is mean(own) - mean(b), ~0 by construction, so the
    // interval still holds 0; what shows the heavy run is the width.
    let mut heavy = alike.clone();
    heavy[0] = zero_run(0, random_episodes(10, 50_000));
    let h = aa(&heavy);
    assert!(h.half_width() > 40.0 * e.half_width(), "{h:?} vs {e:?}");
    assert!(h.half_width() > 2_000.0, "{h:?}");
    // Below two runs there is no control.
    assert!(aa_control(&[1.0], &[1.0]).is_none());
}

#[test]
fn aa_control_leave_one_out_by_hand() {
    // own = b + d_i; b = [100, 200, 300]: others' means 250, 200, 150.
    let e = aa_control(&[110.0, 190.0, 300.0], &[100.0, 200.0, 300.0]).unwrap();
    // diffs: 110 - 250 = -140, 190 - 200 = -10, 300 - 150 = 150.
    assert!((e.value - 0.0).abs() < 1e-9, "{e:?}");
    let sd = ((140.0f64.powi(2) + 10.0f64.powi(2) + 150.0f64.powi(2)) / 2.0).sqrt();
    assert!((e.se - sd / 3f64.sqrt()).abs() < 1e-9, "{e:?}");
}

#[test]
fn agreement_rule() {
    // Paired interval holds 0: nothing to test.
    assert_eq!(
        agreement(&est(1.0, 0.01), &est(0.5, 0.5), false),
        Agreement::PairedNotResolved
    );
    // Paired 13.9 +- 0.6 (se), prediction 13.0 +- 0.1, 5 runs each:
    // |0.9| <= t x 0.608 (t 2.74 on 4.2 Welch-Satterthwaite df).
    assert_eq!(
        agreement(&est(13.0, 0.1), &est(13.9, 0.6), false),
        Agreement::Agree
    );
    // 12.0: |1.9| > 2.74 x 0.608 = 1.67.
    assert_eq!(
        agreement(&est(12.0, 0.1), &est(13.9, 0.6), false),
        Agreement::Disagree
    );
    // Negative resolved loss is tested too.
    assert_eq!(
        agreement(&est(1.0, 0.1), &est(-5.0, 1.0), false),
        Agreement::Disagree
    );
    let one_run = Estimate::point(13.9, 1);
    assert_eq!(
        agreement(&one_run, &est(13.9, 0.6), false),
        Agreement::NoPredictionInterval
    );
    // An upper estimate (the after-effect bound charged) agrees with any
    // throughput loss not above it by more than t combined se: 97.2 over
    // 94.5 agrees, 90.0 under 94.5 does not.
    assert_eq!(
        agreement(&est(97.2, 0.9), &est(94.5, 0.85), true),
        Agreement::Agree
    );
    // Two-sided, 2.7 apart with se 1.238 on 8.0 df: t 2.31 allows 2.86, so
    // they agree; the normal 1.96 (2.43) called this a disagreement.
    assert_eq!(
        agreement(&est(97.2, 0.9), &est(94.5, 0.85), false),
        Agreement::Agree
    );
    assert_eq!(
        agreement(&est(98.0, 0.9), &est(94.5, 0.85), false),
        Agreement::Disagree
    );
    assert_eq!(
        agreement(&est(90.0, 0.9), &est(94.5, 0.85), true),
        Agreement::Disagree
    );
    assert_eq!(Agreement::PairedNotResolved.word(), "paired not resolved");
}
