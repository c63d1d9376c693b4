//! Properties of the fits and of the table building.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use analysis::warnings::Rule;
use std::collections::BTreeMap;
use std::path::PathBuf;

use analysis::fit::{fit_line, fit_origin};
use analysis::load::{Manifest, Phase, ResultSet, Run};
use analysis::pipeline::analyse_with;
use proptest::prelude::*;
use results_format::{Design, RunKind, RunStatus, Status};

proptest! {
    #[test]
    fn exact_line_gives_its_slope_and_r2_one(
        a in -100.0f64..100.0,
        b in prop_oneof![-50.0f64..-0.01, 0.01f64..50.0],
        xs in proptest::collection::btree_set(0u32..100_000, 3..20),
        ws in proptest::collection::vec(0.1f64..10.0, 20),
    ) {
        let x: Vec<f64> = xs.iter().map(|&v| v as f64 / 1000.0).collect();
        let y: Vec<f64> = x.iter().map(|v| a + b * v).collect();
        for w in [None, Some(&ws[..x.len()])] {
            let f = fit_line(&x, &y, w).unwrap();
            prop_assert!((f.slope - b).abs() < 1e-8 * (1.0 + b.abs()), "{} vs {}", f.slope, b);
            prop_assert!((f.intercept - a).abs() < 1e-6 * (1.0 + a.abs()));
            prop_assert!((f.r2 - 1.0).abs() < 1e-9);
            prop_assert!(f.se_slope < 1e-6 * (1.0 + b.abs()));
            let y0: Vec<f64> = x.iter().map(|v| b * v).collect();
            let f0 = fit_origin(&x, &y0, w).unwrap();
            prop_assert!((f0.slope - b).abs() < 1e-9 * (1.0 + b.abs()));
            prop_assert!((f0.r2 - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn shuffling_runs_changes_nothing(
        counts in proptest::collection::vec(900_000_000u64..1_000_000_000, 20),
        perm_seed in any::<u64>(),
    ) {
        let freqs = [0u64, 100, 1000, 4000, 20000];
        let mut runs = Vec::new();
        for (i, c) in counts.iter().enumerate() {
            runs.push(Run {
                run_id: i as u32,
                kind: RunKind::Loss,
                design: Design::Classic,
                freq_hz: freqs[i % 5],
                rep: (i / 5) as u32,
                duration_ns: 10_000_000_000,
                iterations: *c,
                status: RunStatus::Ok,
                ..Run::default()
            });
        }
        runs.push(paired_run(99));
        let phases: Vec<Phase> = (0..12u64)
            .map(|i| abba_phase(99, i, counts[i as usize] / 10))
            .collect();
        let make = result_set;
        let a = analyse_with(&make(runs.clone(), phases.clone()), BTreeMap::new());

        // Fisher-Yates with a small LCG from the seed.
        let mut s = perm_seed | 1;
        let mut next = |n: usize| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) as usize) % n
        };
        let mut r2 = runs;
        for i in (1..r2.len()).rev() {
            let j = next(i + 1);
            r2.swap(i, j);
        }
        let mut p2 = phases;
        for i in (1..p2.len()).rev() {
            let j = next(i + 1);
            p2.swap(i, j);
        }
        let b = analyse_with(&make(r2, p2), BTreeMap::new());
        prop_assert_eq!(a.tables.loss.len(), b.tables.loss.len());
        for (x, y) in a.tables.loss.iter().zip(&b.tables.loss) {
            prop_assert_eq!(x.freq_hz, y.freq_hz);
            prop_assert_eq!(&x.iterations, &y.iterations);
            prop_assert_eq!(x.loss_pct.value.to_bits(), y.loss_pct.value.to_bits());
            prop_assert_eq!(x.loss_pct.hi.to_bits(), y.loss_pct.hi.to_bits());
        }
        let (fa, fb) = (a.tables.fits.loss_line.unwrap(), b.tables.fits.loss_line.unwrap());
        prop_assert_eq!(fa.slope.to_bits(), fb.slope.to_bits());
        prop_assert_eq!(fa.r2.to_bits(), fb.r2.to_bits());
    }
}

proptest! {
    /// The single-pass histogram's summary (the report's path) equals
    /// sorting the durations.
    #[test]
    fn interval_stats_match_sorted_quantiles(
        d in proptest::collection::vec(prop_oneof![0u64..3000, 0u64..200_000], 1..500),
    ) {
        let mut sorted: Vec<f64> = d.iter().map(|&v| v as f64).collect();
        sorted.sort_by(f64::total_cmp);
        let mut h = analysis::load::intervals::DurationHistogram::new();
        for &v in &d {
            h.push(v);
        }
        let s = h.finish();
        prop_assert_eq!(s.count as usize, sorted.len());
        prop_assert_eq!(s.sum_ns as f64, sorted.iter().sum::<f64>());
        let q50 = analysis::stats::quantile_sorted(&sorted, 0.5);
        let q99 = analysis::stats::quantile_sorted(&sorted, 0.99);
        prop_assert!((s.median_ns - q50).abs() < 1e-6, "{} vs {}", s.median_ns, q50);
        prop_assert!((s.p99_ns - q99).abs() < 1e-6, "{} vs {}", s.p99_ns, q99);
        prop_assert_eq!(s.max_ns as f64, *sorted.last().unwrap());
    }
}

#[test]
fn intervals_round_trip_and_filter_by_cpu_and_source() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("run-7.parquet");
    let cpu = [1u32, 1, 0, 1, 1, 1];
    let entry = [10u64, 20, 30, 40, 50, 60];
    let dur = [100u64, 300, 999_999, 200, 5000, 7];
    let src = [
        "hrtimer",
        "nmi",
        "hrtimer",
        "hrtimer",
        "local_timer",
        "other",
    ];
    analysis::write_intervals_parquet(&path, &cpu, &entry, &dur, &src).unwrap();
    let r = analysis::load::intervals::read_run_intervals(&path, 1).unwrap();
    assert_eq!(r.handler.count, 3);
    assert_eq!(r.handler.sum_ns, 600);
    assert_eq!(r.handler.median_ns, 200.0);
    assert_eq!(r.local_timer.as_ref().unwrap().sum_ns, 5000);
    // No temporary file left behind.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);

    let err = analysis::write_intervals_parquet(&path, &cpu, &entry[..5], &dur, &src)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("entry_ns 5") && err.contains("run-7.parquet"),
        "{err}"
    );
}

/// Two paired runs at 4 kHz, three ABBA groups each; `losses[run][group]` in %.
fn paired_set(losses: [[f64; 3]; 2]) -> ResultSet {
    let mut runs = Vec::new();
    let mut phases = Vec::new();
    for (r, groups) in losses.iter().enumerate() {
        runs.push(paired_run(r as u32));
        for (g, loss) in groups.iter().enumerate() {
            for k in 0..4u64 {
                let i = g as u64 * 4 + k;
                let rate = if matches!(k, 1 | 2) {
                    1e9 * (1.0 - loss / 100.0)
                } else {
                    1e9
                };
                phases.push(abba_phase(r as u32, i, rate as u64));
            }
        }
    }
    result_set(runs, phases)
}

/// A successful paired loss run at 4 kHz.
fn paired_run(run_id: u32) -> Run {
    Run {
        run_id,
        kind: RunKind::Loss,
        design: Design::Paired,
        freq_hz: 4000,
        iterations: 1,
        status: RunStatus::Ok,
        ..Run::default()
    }
}

/// Phase `i` (1 s long) of an ABBA sequence: off, on, on, off, ...
fn abba_phase(run_id: u32, i: u64, iterations: u64) -> Phase {
    Phase {
        run_id,
        phase: i as u32,
        sampling: matches!(i % 4, 1 | 2),
        start_ns: i * 1_000_000_000,
        end_ns: (i + 1) * 1_000_000_000,
        iterations,
        samples: 0,
        ..Phase::default()
    }
}

/// A complete result set of `runs` and `phases` (no files behind it).
fn result_set(runs: Vec<Run>, phases: Vec<Phase>) -> ResultSet {
    ResultSet {
        dir: PathBuf::from("/nonexistent"),
        manifest: Manifest {
            format_version: 1,
            status: Status::Complete,
            ..Manifest::default()
        },
        runs,
        phases,
        unrecorded: Default::default(),
    }
}

#[test]
fn paired_runs_that_disagree_are_warned_about_and_get_the_wider_interval() {
    let a = analyse_with(
        &paired_set([[9.9, 10.1, 10.0], [19.9, 20.1, 20.0]]),
        BTreeMap::new(),
    );
    let row = a
        .tables
        .loss
        .iter()
        .find(|r| r.design == Design::Paired)
        .unwrap();
    let by_run = row.loss_by_run_pct.unwrap();
    assert_eq!(by_run.n, 2);
    assert!((by_run.value - 15.0).abs() < 1e-6, "{by_run:?}");
    // Six groups look tight (+-5 pp); two runs 10 pp apart do not.
    assert!(by_run.hi - by_run.lo > 3.0 * (row.loss_pct.hi - row.loss_pct.lo));
    let (f, p) = row.between_runs.unwrap();
    assert!(f > 100.0 && p < 1e-3, "F {f} p {p}");
    assert!(
        a.quality
            .warnings
            .iter()
            .any(|w| w.rule == Rule::RunsDisagree
                && w.text
                    .contains("paired loss at 4000 Hz differs between runs")),
        "{:?}",
        a.quality.warnings
    );
    // A 30% budget: the groups' upper bound (~21%) would pass; the runs'
    // (~78%) decides, and two runs cannot resolve it.
    assert!(row.loss_pct.hi < 30.0 && row.trusted().hi > 30.0);
    let rec = analysis::recommend::recommend(&a, 30.0).unwrap();
    assert!(!rec.resolvable, "{rec:?}");
    // What the upper bounds alone allow is still said, as a bound.
    assert!(rec.bound_only && rec.rate_hz.is_some(), "{rec:?}");
    assert!(rec.max_hz.unwrap() < 4000.0, "{rec:?}");

    // Runs that agree: no warning.
    let a = analyse_with(
        &paired_set([[9.8, 10.2, 10.0], [10.1, 9.9, 10.05]]),
        BTreeMap::new(),
    );
    let row = a
        .tables
        .loss
        .iter()
        .find(|r| r.design == Design::Paired)
        .unwrap();
    assert!(row.between_runs.unwrap().1 > 0.05);
    assert!(
        !a.quality
            .warnings
            .iter()
            .any(|w| w.rule == Rule::RunsDisagree)
    );
    // One interval rule: the interval over runs decides even when the ANOVA
    // does not reject (no pre-test picks the narrower one).
    assert_eq!(row.trusted(), row.loss_by_run_pct.unwrap());
    assert_ne!(row.trusted(), row.loss_pct);
}

#[test]
fn the_tracing_warning_needs_a_significant_difference() {
    use analysis::row_types::TracepointCostRow;
    use analysis::stats::Estimate;
    let est = |value: f64, se: f64| Estimate {
        value,
        lo: value - 2.0 * se,
        hi: value + 2.0 * se,
        se,
        n: 5,
    };
    // 3 pp more with tracepoints, but SEs of 7 pp: noise, no warning.
    let noisy = TracepointCostRow::new(100, Some(est(1.0, 7.0)), est(4.0, 7.0));
    assert!(noisy.tracing_cost_pp() > 1.0 && !noisy.significant());
    // 3 pp more with SEs of 0.5 pp: a real cost of tracing.
    let real = TracepointCostRow::new(100, Some(est(1.0, 0.5)), est(4.0, 0.5));
    assert!(real.significant());
    // Significant but under the 1 pp threshold: not worth a warning.
    let small = TracepointCostRow::new(100, Some(est(1.0, 0.01)), est(1.5, 0.01));
    assert!(!small.significant());
}

#[test]
fn fits_use_the_rate_the_kernel_delivered() {
    use analysis::load::intervals::{IntervalStats, RunIntervals};
    // 1 us of handler per delivered sample: util % = 0.1 x achieved kHz.
    // At "100 kHz" the kernel delivered 63 kHz (throttling).
    let mut runs = Vec::new();
    let mut iv = BTreeMap::new();
    for (i, (freq_hz, achieved_hz)) in [(1000u64, 1000.0), (100_000, 63_000.0)]
        .iter()
        .flat_map(|&p| [p, p])
        .enumerate()
    {
        runs.push(Run {
            run_id: i as u32,
            kind: RunKind::Util,
            design: Design::Paired,
            freq_hz,
            window_ns: 1_000_000_000,
            achieved_hz,
            iterations: 1,
            status: RunStatus::Ok,
            ..Run::default()
        });
        let count = achieved_hz as u64;
        iv.insert(
            i as u32,
            RunIntervals {
                handler: IntervalStats {
                    count,
                    sum_ns: count * 1000,
                    mean_ns: 1000.0,
                    median_ns: 1000.0,
                    p99_ns: 1000.0,
                    max_ns: 1000,
                },
                ..RunIntervals::default()
            },
        );
    }
    let a = analyse_with(&result_set(runs, Vec::new()), iv);
    let fit = a.tables.fits.util_origin.unwrap();
    // On the achieved rate the slope is exact: 0.1 %/kHz = 1000 ns per
    // sample. On the requested one it would be ~0.063.
    assert!((fit.slope - 0.1).abs() < 1e-9, "{fit:?}");
    assert!((a.tables.fits.cost_per_sample_ns.unwrap() - 1000.0).abs() < 1e-6);
    assert_eq!(analysis::fit::fit_rate_khz(63_000.0, 100_000), 63.0);
    // The handler's cost per sample at each rate, with its interval.
    for row in &a.tables.util {
        assert_eq!(row.per_sample_ns.value, 1000.0);
        assert_eq!(row.per_sample_ns.n, 2);
    }
    assert_eq!(analysis::fit::fit_rate_khz(f64::NAN, 100_000), 100.0);
}
