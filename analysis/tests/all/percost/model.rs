//! The model-based recommendation and the table's build from cost rows.

use super::*;
use crate::common::*;

pub(crate) fn cost_row(freq_hz: u64, total: f64, hi: f64) -> PerSampleRow {
    let e = Estimate {
        value: total,
        lo: 2.0 * total - hi,
        hi,
        se: (hi - total) / 2.0,
        n: 3,
    };
    let none = Estimate::point(f64::NAN, 0);
    PerSampleRow {
        freq_hz,
        runs: 3,
        achieved_hz: freq_hz as f64,
        samples: 0,
        samples_in_long: 0,
        recovery_horizon_ns: 50_000.0,
        matched_episodes: 0,
        matched_median_ns: f64::NAN,
        matched_mean_ns: f64::NAN,
        matched_p99_ns: f64::NAN,
        matched_mean_by_run_ns: none,
        background_ns: none,
        cap_ns: f64::INFINITY,
        above_cap_ns: none,
        above_cap_charged: false,
        long_per_s: none,
        long_ns: none,
        long_charged: false,
        direct_ns: none,
        after_effect_ns: none,
        total_ns: e,
        total_pred_ns: e,
        after_effect_bound_ns: None,
        handler_ns: None,
        interrupt_ns: None,
        remainder_ns: None,
        predicted_loss_pct: none,
        paired_loss_pct: None,
        agreement: None,
        remainder: None,
        excess_gap_share_pct: none,
        predicted_direct_loss_pct: none,
        aa_null_ns: None,
    }
}

pub(crate) fn with_model(rows: Vec<PerSampleRow>) -> analysis::pipeline::Findings {
    let rs = analysis::load::ResultSet {
        dir: "/nonexistent".into(),
        manifest: analysis::load::Manifest {
            format_version: 1,
            status: results_format::Status::Complete,
            ..Default::default()
        },
        runs: Vec::new(),
        phases: Vec::new(),
        unrecorded: Default::default(),
    };
    let mut a = analysis::pipeline::analyse_with(&rs, Default::default());
    a.gaps.per_sample = Some(PerSample {
        rows,
        zero_runs: 3,
        zero_after_per_episode_ns: Estimate::point(0.0, 3),
        zero_gap_share_pct: Estimate::point(0.0, 3),
        background_cap_ns: f64::INFINITY,
        zero_long_per_s: Estimate::point(0.0, 3),
        zero_long_share_pct: Estimate::point(0.0, 3),
        run_costs: Vec::new(),
        drift: None,
    });
    a
}

/// A paired loss row at `freq_hz` whose interval over runs is `e`.
pub(crate) fn paired_row(freq_hz: u64, e: Estimate) -> analysis::row_types::LossRow {
    analysis::row_types::LossRow {
        freq_hz,
        design: results_format::Design::Paired,
        method: String::new(),
        loss_pct: e,
        loss_by_run_pct: Some(e),
        iterations: Vec::new(),
        mean_iterations: f64::NAN,
        between_runs: None,
        achieved_hz: freq_hz as f64,
    }
}

#[test]
fn build_puts_handler_interrupt_remainder_and_paired_beside_the_cost() {
    use analysis::row_types::{LossRow, UtilRow};
    // Two identical runs at 1 kHz: 15 000 ns matched per sample; a 0 Hz
    // run without episodes or recovery excess: b = 0, after-effect 0.
    let f = || run(1000, 1000, 15_000_000, 0.0);
    let mut zero = zero_run(9, Vec::new());
    zero.row.gap_time_ns = 5_000_000; // 0.5 % of the 0 Hz window
    let util = UtilRow {
        freq_hz: 1000,
        runs: 3,
        calls_per_s: 1000.0,
        mean_ns: 1500.0,
        per_sample_ns: Estimate::point(1500.0, 3),
        median_ns: 1400.0,
        p99_ns: 3000.0,
        util_pct: Estimate::point(0.15, 3),
        // 0.4 % of the window over 1000 calls/s = 4000 ns per call.
        local_timer_util_pct: Some(Estimate::point(0.4, 3)),
        achieved_hz: 1000.0,
    };
    let paired = LossRow {
        freq_hz: 1000,
        design: results_format::Design::Paired,
        method: String::new(),
        iterations: Vec::new(),
        mean_iterations: f64::NAN,
        loss_pct: est(1.6, 0.2),
        loss_by_run_pct: None,
        between_runs: None,
        achieved_hz: 1000.0,
    };
    let ps = build(&[f(), f(), zero], std::slice::from_ref(&util), &[paired]);
    let r = &ps.rows[0];
    assert_eq!(r.background_ns.value, 0.0);
    assert!((r.direct_ns.value - 15_000.0).abs() < 1e-9, "{r:?}");
    assert_eq!(r.direct_ns.se, 0.0);
    assert_eq!(r.after_effect_ns.value, 0.0);
    assert_eq!(r.handler_ns, Some(1500.0));
    assert!((r.interrupt_ns.unwrap() - 4000.0).abs() < 1e-6);
    assert!((r.remainder_ns.unwrap() - 11_000.0).abs() < 1e-6);
    assert!((r.predicted_loss_pct.value - 1.5).abs() < 1e-12);
    // Gap time 2 % at 1 kHz - 0.5 % at 0 Hz = 1.5 pp = 1000 x 15 000 ns.
    assert!((r.excess_gap_share_pct.value - 1.5).abs() < 1e-12);
    assert!((r.predicted_direct_loss_pct.value - 1.5).abs() < 1e-12);
    // |1.5 - 1.6| = 0.1 <= 1.96 x 0.2.
    assert_eq!(r.agreement, Some(Agreement::Agree));
    // One 0 Hz run: no A/A control.
    assert!(r.aa_null_ns.is_none());
    // Without local_timer the remainder is direct - handler.
    let util = UtilRow {
        local_timer_util_pct: None,
        ..util
    };
    let ps = build(&[f(), f(), zero_run(9, Vec::new())], &[util], &[]);
    assert!((ps.rows[0].remainder_ns.unwrap() - 13_500.0).abs() < 1e-6);
    assert!(ps.rows[0].paired_loss_pct.is_none() && ps.rows[0].agreement.is_none());
}

/// Time of `build` on a default-sized gaps sweep (5 zero-Hz runs of 10 s
/// with ~15 000 background episodes each; 100 Hz ... 100 kHz); run with
/// `-- --ignored`. The coincidence draws dominate.
#[test]
#[ignore]
fn build_speed_default_sized() {
    let zero: Vec<GapsRun> = (0..5u32)
        .map(|i| {
            let mut rng = Lcg(u64::from(i) + 77);
            let e: Vec<Episode> = (0..15_000u64)
                .map(|k| episode(k * 666_000 + rng.next() % 600_000, 4_000, 3_000))
                .collect();
            let mut r = zero_run(i, e);
            r.row.loop_end_ns = 10_000_000_000;
            r
        })
        .collect();
    let mut runs = zero;
    for f in [100u64, 1000, 10_000, 100_000] {
        for k in 0..2u32 {
            let mut r = run(f, f * 10, f * 10 * 15_000, 0.0);
            r.row.run_id = 100 + k;
            r.row.loop_end_ns = r.row.loop_start_ns + 10_000_000_000;
            runs.push(r);
        }
    }
    let t = std::time::Instant::now();
    let ps = build(&runs, &[], &[]);
    eprintln!("build: {:.3} s", t.elapsed().as_secs_f64());
    assert_eq!(ps.rows.len(), 4);
}

#[test]
fn a_run_appended_twice_counts_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gaps");
    write_gaps_results(&dir, 13.9, false);
    let table = |dir: &std::path::Path| {
        let a = analysis::pipeline::analyse(&analysis::load::load(dir).unwrap()).unwrap();
        (a.measured.gaps.per_sample.unwrap(), a.quality.warnings)
    };
    let (before, _) = table(&dir);
    // Append every row again, as a resumed sweep that re-ran the runs would.
    for name in ["timeline.csv", "recovery.csv"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let body: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
        std::fs::write(dir.join(name), text + &body).unwrap();
    }
    let (after, warnings) = table(&dir);
    assert_eq!(after.rows[0].runs, 3);
    assert_eq!(after.rows[0].total_ns.value, before.rows[0].total_ns.value);
    assert!(
        warnings
            .iter()
            .any(|w| w.rule == analysis::warnings::Rule::GapsFiles
                && w.text.contains("holds 18 rows for 9 runs")),
        "{warnings:?}"
    );
}

/// Samples due inside an episode join it: at a share s of the time in
/// their direct cost an episode of L grows to L / (1 - s), so the 0 Hz
/// episodes compared with a rate's long ones start at 1 ms (1 - s).
#[test]
fn the_long_episode_threshold_follows_the_samples_that_join_them() {
    use analysis::percost::long_threshold_ns;
    assert_eq!(long_threshold_ns(0.0, 12_000.0), 1e6);
    // 20 kHz x 12 us: a quarter of the time less 1 %, 24 %.
    assert!((long_threshold_ns(20_000.0, 12_000.0) - 760_000.0).abs() < 1e-6);
    // A 0.8 ms slice (stretched by 1 / (1 - 0.24) to 1.05 ms, long) is
    // compared; a 0.7 ms one (0.92 ms, short) is not.
    let t = long_threshold_ns(20_000.0, 12_000.0);
    assert!(800_000.0 >= t && 700_000.0 < t, "{t}");
    // Past 90 % the threshold stops at 0.1 ms; NaN falls back to 1 ms.
    assert!((long_threshold_ns(1e6, 12_000.0) - 100_000.0).abs() < 1e-6);
    assert_eq!(long_threshold_ns(f64::NAN, 12_000.0), 1e6);
}
