//! The gaps design's per-sample cost: every formula on hand-made data, the
//! A/A null control, the agreement rule, the model-based recommendation and
//! the report / `recommend --json` on a synthetic results directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use analysis::percost::*;
use analysis::stats::Estimate;
use common::*;
use results_format::timeline::{Episode, RecoveryRow, TimelineRow};

/// Recovery bins of a 1 s run: `near_excess_ns` in the first bin (within
/// every horizon), nothing beyond 100 us (the run's reference speed).
fn bins(near_excess_ns: f64) -> Vec<RecoveryRow> {
    [
        (0u64, 250u64, near_excess_ns),
        (250, 100_000, 0.0),
        (100_000, u64::MAX, 0.0),
    ]
    .iter()
    .enumerate()
    .map(|(bin, &(from_ns, to_ns, excess_ns_sum))| RecoveryRow {
        bin: bin as u32,
        from_ns,
        to_ns,
        chunks: 1_000_000,
        chunk_ns_sum: 1e8,
        excess_ns_sum,
        ..RecoveryRow::default()
    })
    .collect()
}

/// A 1 s run whose `samples` each matched an episode of the same excess.
fn run(freq_hz: u64, samples: u64, matched_excess_ns: u64, recovery_excess_ns: f64) -> GapsRun {
    GapsRun {
        row: TimelineRow {
            run_id: 1,
            freq_hz,
            loop_start_ns: 1_000_000_000,
            loop_end_ns: 2_000_000_000,
            samples,
            matched_samples: samples,
            matched_excess_ns,
            matched_episodes: samples,
            episodes: samples,
            gap_time_ns: 20_000_000,
            ..TimelineRow::default()
        },
        recovery: bins(recovery_excess_ns),
        matched_excess_ns: vec![matched_excess_ns / samples.max(1); samples as usize],
        ..GapsRun::default()
    }
}

fn est(value: f64, se: f64) -> Estimate {
    Estimate {
        value,
        lo: value - 1.96 * se,
        hi: value + 1.96 * se,
        se,
        n: 5,
    }
}

#[test]
fn per_run_formulas_by_hand() {
    // 1000 samples in 1 s, 15 ms matched: 15 000 ns per sample; b = 100.
    let r = run(1000, 1000, 15_000_000, 2_000_000.0);
    assert_eq!(r.window_ns(), 1e9);
    assert!((r.rate_hz() - 1000.0).abs() < 1e-9);
    assert!((direct_cost_ns(&r, 100.0) - 14_900.0).abs() < 1e-9);
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
    assert!((r.matched_per_sample_ns() - 10_000.0).abs() < 1e-9);
    // Random timestamps inside a long episode are left out of b alike: a
    // periodic draw (1 kHz) over a run that holds a 4 ms stretch and a
    // 100 us episode of 1 us excess.
    let e = [
        episode(100_000_000, 4_000_000, 4_000_000),
        episode(500_000_000, 100_000, 1_000),
    ];
    let mut rng = draw_rng(1, 1000, Draw::Background);
    let b = coincidence_per_timestamp(&e, 0, 1_000_000_000, 1000.0, 5000, &mut rng);
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

fn episode(start_ns: u64, len: u64, excess_ns: u64) -> Episode {
    Episode {
        start_ns,
        end_ns: start_ns + len,
        excess_ns,
        gaps: 1,
    }
}

#[test]
fn coincidence_counts_an_episode_once_per_replication() {
    // One 0.9 ms episode (excess 0.9 ms, under the 1 ms of a long one) in
    // 1 s; at 100 kHz each replication puts 100 000 timestamps, ~90 of
    // them in the episode: counted once, so b = 900 000 / 100 000 = 9 ns
    // (up to the one or two timestamps the episode's slack adds or takes).
    let e = [episode(500_000_000, 900_000, 900_000)];
    let mut rng = draw_rng(7, 100_000, Draw::Background);
    let b = coincidence_per_timestamp(&e, 0, 1_000_000_000, 100_000.0, 3, &mut rng);
    assert!((b - 9.0).abs() < 1e-3, "{b}");
    // No episodes, no coincidence; a bad rate is NaN, not 0.
    assert_eq!(
        coincidence_per_timestamp(&[], 0, 1_000_000_000, 1000.0, 3, &mut rng),
        0.0
    );
    assert!(coincidence_per_timestamp(&e, 0, 1_000_000_000, 0.0, 3, &mut rng).is_nan());
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
        let b = coincidence_per_timestamp(&e, 0, 1_000_000_000, rate, n, &mut rng);
        assert!((b - 500.0).abs() < 25.0, "rate {rate}: b {b}");
    }
    // Replications: >= 200 000 timestamps and >= 8 replications.
    assert_eq!(replications_for(1e9, 100.0), 2000);
    assert_eq!(replications_for(10e9, 100_000.0), MIN_REPLICATIONS);
}

fn zero_run(id: u32, episodes: Vec<Episode>) -> GapsRun {
    GapsRun {
        row: TimelineRow {
            run_id: id,
            loop_start_ns: 0,
            loop_end_ns: 1_000_000_000,
            ..TimelineRow::default()
        },
        episodes,
        recovery: bins(0.0),
        ..GapsRun::default()
    }
}

fn aa(zero: &[GapsRun]) -> Estimate {
    let refs: Vec<&GapsRun> = zero.iter().collect();
    let b = coincidence_by_run(&refs, 1000, 1000.0, Draw::Background);
    let own = coincidence_by_run(&refs, 1000, 1000.0, Draw::Null);
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
        agreement(&est(1.0, 0.01), &est(0.5, 0.5)),
        Agreement::PairedNotResolved
    );
    // Paired 13.9 +- 0.6 (se), prediction 13.0 +- 0.1: |0.9| <= 1.96 x 0.608.
    assert_eq!(
        agreement(&est(13.0, 0.1), &est(13.9, 0.6)),
        Agreement::Agree
    );
    // 12.0: |1.9| > 1.19.
    assert_eq!(
        agreement(&est(12.0, 0.1), &est(13.9, 0.6)),
        Agreement::Disagree
    );
    // Negative resolved loss is tested too.
    assert_eq!(
        agreement(&est(1.0, 0.1), &est(-5.0, 1.0)),
        Agreement::Disagree
    );
    let one_run = Estimate::point(13.9, 1);
    assert_eq!(
        agreement(&one_run, &est(13.9, 0.6)),
        Agreement::NoPredictionInterval
    );
    assert_eq!(Agreement::PairedNotResolved.word(), "paired not resolved");
}

#[test]
fn table_on_a_synthetic_results_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gaps");
    write_gaps_results(&dir, 13.9, false);
    let rs = analysis::load::load(&dir).unwrap();
    let a = analysis::tables::analyse(&rs).unwrap();
    let ps = a.per_sample.as_ref().expect("gaps runs give the table");
    assert_eq!(ps.zero_runs, 3);
    assert_eq!(
        ps.rows.iter().map(|r| r.freq_hz).collect::<Vec<_>>(),
        vec![1000, 10_000]
    );
    let want = GAPS_SAMPLE_EXCESS_NS as f64 + GAPS_AFTER_NS;
    for r in &ps.rows {
        assert_eq!(r.runs, 3);
        assert!(
            (r.matched_median_ns - GAPS_SAMPLE_EXCESS_NS as f64).abs() < 1.0,
            "{r:?}"
        );
        assert!(
            r.background_ns.value > 0.0 && r.background_ns.value < 100.0,
            "{r:?}"
        );
        assert!(
            (r.direct_ns.value / GAPS_SAMPLE_EXCESS_NS as f64 - 1.0).abs() < 0.01,
            "{r:?}"
        );
        assert!(
            (r.after_effect_ns.value / GAPS_AFTER_NS - 1.0).abs() < 0.05,
            "{r:?}"
        );
        assert!((r.total_ns.value / want - 1.0).abs() < 0.02, "{r:?}");
        assert!(r.total_ns.lo < r.total_ns.value && r.total_ns.value < r.total_ns.hi);
        let pred = r.freq_hz as f64 * want * 1e-7;
        assert!(
            (r.predicted_loss_pct.value / pred - 1.0).abs() < 0.02,
            "{r:?}"
        );
        // Excess gap time over 0 Hz = rate x direct cost, here exactly by
        // construction up to the background's run-to-run spread.
        let d = r.predicted_direct_loss_pct.value;
        assert!(
            (r.excess_gap_share_pct.value / d - 1.0).abs() < 0.02,
            "{r:?}"
        );
        let aa = r.aa_null_ns.unwrap();
        assert!(aa.lo <= 0.0 && 0.0 <= aa.hi, "{aa:?}");
        assert!(r.handler_ns.is_none() && r.remainder_ns.is_none());
    }
    assert_eq!(ps.rows[0].agreement, None);
    assert_eq!(
        ps.rows[1].agreement,
        Some(Agreement::Agree),
        "{:?}",
        ps.rows[1]
    );
    // Gaps runs are no classic loss runs.
    assert!(
        a.loss
            .iter()
            .all(|l| l.design == results_format::Design::Paired),
        "{:?}",
        a.loss
    );
    assert!(ps.warnings.is_empty(), "{:?}", ps.warnings);

    // One 0 Hz run with a 10x heavier background: b's interval and the
    // A/A control widen (the A/A stays centred on 0, see methodology).
    let heavy = tmp.path().join("heavy");
    write_gaps_results(&heavy, 13.9, true);
    let h = analysis::tables::analyse(&analysis::load::load(&heavy).unwrap()).unwrap();
    let (hr, r) = (&h.per_sample.as_ref().unwrap().rows[0], &ps.rows[0]);
    let (haa, aa) = (hr.aa_null_ns.unwrap(), r.aa_null_ns.unwrap());
    assert!(
        haa.half_width() > 10.0 * aa.half_width(),
        "{haa:?} vs {aa:?}"
    );
    assert!(hr.background_ns.half_width() > 10.0 * r.background_ns.half_width());
    assert!(
        hr.background_ns.value > 2.0 * r.background_ns.value,
        "{hr:?}"
    );
}

#[test]
fn missing_zero_hz_runs_are_said_not_zeroed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gaps");
    write_gaps_results(&dir, 13.9, false);
    let runs = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    let kept: Vec<&str> = runs
        .lines()
        .filter(|l| !l.contains(",loss,gaps,") || !l.contains(",0,cpu-clock"))
        .collect();
    // Rows of 0 Hz gaps runs have `,{rep},0,{rep},cpu-clock`.
    let kept: Vec<&str> = kept
        .into_iter()
        .filter(|l| !(l.contains(",loss,gaps,") && l.split(',').nth(4) == Some("0")))
        .collect();
    std::fs::write(dir.join("runs.csv"), kept.join("\n") + "\n").unwrap();
    let a = analysis::tables::analyse(&analysis::load::load(&dir).unwrap()).unwrap();
    let ps = a.per_sample.as_ref().unwrap();
    assert_eq!(ps.zero_runs, 0);
    assert!(
        ps.rows
            .iter()
            .all(|r| r.total_ns.value.is_nan() && r.background_ns.value.is_nan())
    );
    assert!(
        ps.rows
            .iter()
            .all(|r| r.matched_median_ns > 0.0 && r.aa_null_ns.is_none())
    );
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("no usable 0 Hz gaps runs")),
        "{:?}",
        a.warnings
    );
    // The recommendation falls back to the throughput loss and says why.
    let rec = analysis::recommend::recommend(&a, 50.0).unwrap();
    assert!(rec.basis.starts_with("throughput"), "{rec:?}");
    assert!(
        rec.reasoning.iter().any(|l| l.contains("not used")),
        "{rec:?}"
    );
}

#[test]
fn run_warnings_name_the_problem() {
    let mut r = run(1000, 1000, 15_000_000, 0.0);
    r.row.unmatched_samples = 20;
    r.row.gaps_dropped = 3;
    r.row.warnings = "threshold calibrated late".into();
    let ps = build(&[r], &[], &[]);
    let w = ps.warnings.join("\n");
    assert!(
        w.contains("20 of 1000 samples (2.0%) fell in no gap"),
        "{w}"
    );
    assert!(w.contains("3 of 0 gaps not stored"), "{w}");
    assert!(w.contains("threshold calibrated late"), "{w}");
    assert!(w.contains("no usable 0 Hz gaps runs"), "{w}");
    let mut ok = run(1000, 1000, 15_000_000, 0.0);
    ok.row.unmatched_samples = 10; // exactly 1 %: no warning
    let ps = build(&[ok, zero_run(2, Vec::new())], &[], &[]);
    assert!(ps.warnings.is_empty(), "{:?}", ps.warnings);
}

fn is_prime(n: u64) -> bool {
    n > 1
        && (2..n)
            .take_while(|d| d * d <= n)
            .all(|d| !n.is_multiple_of(d))
}

#[test]
fn cli_recommend_json_from_the_model_and_report_section() {
    let tmp = tempfile::tempdir().unwrap();
    // PERCOST_KEEP_REPORT=DIR keeps the synthetic results for inspection.
    let dir = match std::env::var_os("PERCOST_KEEP_REPORT") {
        Some(keep) => std::path::PathBuf::from(keep),
        None => tmp.path().join("gaps"),
    };
    write_gaps_results(&dir, 13.9, false);
    let cost = GAPS_SAMPLE_EXCESS_NS as f64 + GAPS_AFTER_NS;
    // 1 %: r x ~13 900 ns <= 1 % -> ~719 Hz, below the lowest measured rate.
    let rec = recommend_json(&dir, "1%");
    assert_eq!(rec["basis"], MODEL_BASIS_STR);
    assert_eq!(rec["budget_pct"].as_f64(), Some(1.0));
    let rate = rec["rate_hz"].as_u64().unwrap();
    assert!(
        is_prime(rate) && rate > 600 && (rate as f64) < 1e9 / cost,
        "{rec}"
    );
    let (v, lo, hi) = (
        rec["predicted_loss_pct"].as_f64().unwrap(),
        rec["predicted_loss_lo_pct"].as_f64().unwrap(),
        rec["predicted_loss_hi_pct"].as_f64().unwrap(),
    );
    assert!(lo < v && v < hi && hi <= 1.0, "{rec}");
    assert!((v - rate as f64 * cost * 1e-7).abs() < 0.02, "{rec}");
    assert!(rec["reasons"].as_array().unwrap().len() >= 2, "{rec}");
    // 50 %: both measured rates are within budget; no extrapolation above
    // 10 kHz.
    let rec = recommend_json(&dir, "50%");
    assert_eq!(rec["rate_hz"].as_u64(), Some(9973), "{rec}");
    assert!(
        rec["reasons"][0]
            .as_str()
            .unwrap()
            .contains("were not measured"),
        "{rec}"
    );

    // When the model disagrees with the paired loss, the throughput basis.
    let dir2 = tmp.path().join("disagree");
    write_gaps_results(&dir2, 30.0, false);
    let rec = recommend_json(&dir2, "50%");
    assert!(
        rec["basis"]
            .as_str()
            .unwrap()
            .starts_with("throughput loss"),
        "{rec}"
    );
    assert!(
        rec["reasons"]
            .to_string()
            .contains("disagrees with the paired throughput loss at 10000 Hz"),
        "{rec}"
    );

    // The report: the section first among the results, its CSV, the plots.
    bin()
        .args(["report", dir.to_str().unwrap()])
        .assert()
        .success();
    let md = std::fs::read_to_string(dir.join("report/report.md")).unwrap();
    let section = md.find("## What one sample costs the application").unwrap();
    assert!(section < md.find("## Table 1").unwrap());
    assert!(
        md.contains("Agreement at 10000 Hz: predicted") && md.contains(": agree ("),
        "{md}"
    );
    assert!(
        md.contains("A/A null control at 1000 Hz") && md.contains("contains 0, as it should"),
        "{md}"
    );
    assert!(
        md.contains("Cost of one sample to the application (gaps design"),
        "{md}"
    );
    assert!(md.contains("basis") || md.contains(MODEL_BASIS_STR), "{md}");
    let csv = std::fs::read_to_string(dir.join("report/per_sample.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    for col in [
        "freq_hz",
        "total_ns",
        "total_lo_ns",
        "total_hi_ns",
        "predicted_loss_hi_pct",
        "aa_null_ns",
        "agreement",
    ] {
        assert!(
            header.split(',').any(|c| c == col),
            "{col} missing: {header}"
        );
    }
    assert!(csv.lines().nth(2).unwrap().ends_with(",agree"), "{csv}");
    for stem in ["recovery", "cost_per_sample"] {
        let svg = std::fs::read_to_string(dir.join(format!("report/{stem}.svg"))).unwrap();
        assert!(svg.contains("<svg"), "{stem}");
        assert!(md.contains(&format!("]({stem}.svg)")), "{stem} not linked");
    }
    let svg = std::fs::read_to_string(dir.join("report/recovery.svg")).unwrap();
    assert!(
        svg.contains("0 Hz") && svg.contains("10000 Hz"),
        "recovery legend"
    );
}

const MODEL_BASIS_STR: &str = analysis::recommend::MODEL_BASIS;

fn cost_row(freq_hz: u64, total: f64, hi: f64) -> PerSampleRow {
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
        direct_ns: none,
        after_effect_ns: none,
        total_ns: e,
        handler_ns: None,
        interrupt_ns: None,
        remainder_ns: None,
        predicted_loss_pct: none,
        paired_loss_pct: None,
        agreement: None,
        excess_gap_share_pct: none,
        predicted_direct_loss_pct: none,
        aa_null_ns: None,
    }
}

fn with_model(rows: Vec<PerSampleRow>) -> analysis::tables::Analysis {
    let rs = analysis::load::ResultSet {
        dir: "/nonexistent".into(),
        manifest: analysis::load::Manifest {
            format_version: 1,
            status: results_format::Status::Complete,
            ..Default::default()
        },
        runs: Vec::new(),
        phases: Vec::new(),
    };
    let mut a = analysis::tables::analyse_with(&rs, Default::default());
    a.per_sample = Some(PerSample {
        rows,
        zero_runs: 3,
        zero_after_per_episode_ns: Estimate::point(0.0, 3),
        zero_gap_share_pct: Estimate::point(0.0, 3),
        warnings: Vec::new(),
    });
    a
}

#[test]
fn model_rate_uses_the_largest_cost_bound_at_or_below_it() {
    use analysis::recommend::{model_max_rate, recommend};
    // Costs fall with the rate; the 100 Hz bound (16 000 ns) governs all.
    let rows = [
        cost_row(100, 15_000.0, 16_000.0),
        cost_row(1000, 13_000.0, 14_000.0),
        cost_row(10_000, 12_000.0, 12_500.0),
    ];
    let refs: Vec<&PerSampleRow> = rows.iter().collect();
    for (budget, want) in [(1.0, 625.0), (0.1, 62.5), (10.0, 6250.0), (50.0, 10_000.0)] {
        let got = model_max_rate(&refs, budget);
        assert!(
            (got - want).abs() < 1e-6,
            "budget {budget}: {got} vs {want}"
        );
    }
    // Costs rise at 1 kHz: up to 1 kHz the 100 Hz cost holds (1.5 % at
    // 1500 Hz), from 1 kHz on 20 000 ns (2 % at 1 kHz): the answer is the
    // step, and the prime below it is checked against the lower cost.
    let rows = vec![
        cost_row(100, 9_000.0, 10_000.0),
        cost_row(1000, 19_000.0, 20_000.0),
    ];
    let refs: Vec<&PerSampleRow> = rows.iter().collect();
    assert_eq!(model_max_rate(&refs, 1.5), 1000.0);
    let rec = recommend(&with_model(rows), 1.5).unwrap();
    assert_eq!(rec.rate_hz, Some(997));
    assert_eq!(rec.basis, analysis::recommend::MODEL_BASIS);
    assert!(
        (rec.predicted_loss_hi_pct.unwrap() - 0.997).abs() < 1e-9,
        "{rec:?}"
    );
    assert!(
        (rec.predicted_loss_pct.unwrap() - 0.8973).abs() < 1e-9,
        "{rec:?}"
    );
    // A model that disagrees is not used; with no throughput data either,
    // the error says both.
    let mut bad = cost_row(1000, 13_000.0, 14_000.0);
    bad.agreement = Some(Agreement::Disagree);
    let err = recommend(&with_model(vec![bad]), 1.0)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no loss measurement") && err.contains("disagrees"),
        "{err}"
    );
}

#[test]
fn build_puts_handler_interrupt_remainder_and_paired_beside_the_cost() {
    use analysis::tables::{LossRow, UtilRow};
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
        let a = analysis::tables::analyse(&analysis::load::load(dir).unwrap()).unwrap();
        (a.per_sample.unwrap(), a.warnings)
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
            .any(|w| w.contains("holds 18 rows for 9 runs")),
        "{warnings:?}"
    );
}
