use driver::config::{FlagSettings, SweepOptions};
use driver::plan::judge::*;
use results_format::HostLook;

fn opts(args: &[&str]) -> SweepOptions {
    let f = FlagSettings::from_args(args).unwrap();
    SweepOptions::resolve(&f, None, &[0, 1], 0)
        .and_then(|r| r.finish(None))
        .unwrap()
}

/// Reads 100 ns apart whose slices did `per_slice` iterations.
fn reads(per_slice: &[u64]) -> Vec<(u64, u64)> {
    let mut out = vec![(1_000, 50)];
    for &n in per_slice {
        let (t, i) = *out.last().unwrap();
        out.push((t + 100, i + n));
    }
    out
}

fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() < 1e-4 * b.abs().max(1e-9),
        "{what}: {a} vs {b}"
    );
}

/// A look with the given per-group noise and nothing else wrong.
fn look_with(abba_sd_pct: f64, slice_cv_pct: f64) -> HostLook {
    HostLook {
        slice_rates: vec![1.0; 20],
        abba_sd_pct,
        slice_cv_pct,
        ..HostLook::default()
    }
}

#[test]
fn slices_give_rate_cv_min_max_and_abba_spread() {
    let m = LookMeasure {
        reads: reads(&[200, 210, 190, 200, 200]),
        ..LookMeasure::default()
    };
    let l = summarize(&m);
    assert_eq!(l.slice_rates, vec![2.0, 2.1, 1.9, 2.0, 2.0]);
    // sd = sqrt((0.01 + 0.01) / 4), over the mean 2.0.
    close(l.slice_cv_pct, 100.0 * 0.005f64.sqrt() / 2.0, "cv");
    close(l.slice_min_max_ratio, 1.9 / 2.1, "min/max");
    // Contrasts 1 - 4.0/4.0 = 0 and 1 - 3.9/4.1; their sd.
    let c: f64 = 1.0 - 3.9 / 4.1;
    close(l.abba_sd_pct, 100.0 * (c * c / 2.0).sqrt(), "abba sd");
}

#[test]
fn linear_drift_cancels_in_the_abba_contrasts_but_not_in_the_cv() {
    let m = LookMeasure {
        reads: reads(&[100, 110, 120, 130, 140, 150, 160, 170]),
        ..LookMeasure::default()
    };
    let l = summarize(&m);
    assert!(l.slice_cv_pct > 10.0, "{}", l.slice_cv_pct);
    assert!(l.abba_sd_pct < 1e-9, "{}", l.abba_sd_pct);
    // A speed step inside four slices does not cancel.
    let m = LookMeasure {
        reads: reads(&[100, 100, 100, 200, 200, 200, 200]),
        ..LookMeasure::default()
    };
    assert!(summarize(&m).abba_sd_pct > 10.0);
}

#[test]
fn episodes_and_steal_are_summarised() {
    let mut ep = vec![1_000u64; 98];
    ep.extend([200_000, 2_000_000]);
    let m = LookMeasure {
        duration_ns: 1_000_000_000,
        episode_excess_ns: ep,
        steal_ns: 20_000_000,
        wall_ns: 1_000_000_000,
        ..LookMeasure::default()
    };
    let l = summarize(&m);
    close(l.episodes_per_s, 100.0, "rate");
    assert_eq!(l.episode_median_ns, 1_000);
    // Nearest rank: the 99th of 100.
    assert_eq!(l.episode_p99_ns, 200_000);
    assert_eq!(l.episode_max_ns, 2_000_000);
    close(l.episode_share_100us_pct, 0.22, "share >= 100 us");
    close(l.episode_share_1ms_pct, 0.2, "share >= 1 ms");
    close(l.steal_pct, 2.0, "steal");
    // Nothing measured: zeros, not NaN.
    let l = summarize(&LookMeasure::default());
    assert_eq!(
        (l.slice_cv_pct, l.episodes_per_s, l.steal_pct),
        (0.0, 0.0, 0.0)
    );
}

#[test]
fn the_paired_designs_resolution_comes_from_the_groups_it_will_run() {
    // Default plan: 8 s runs, 100 ms phases: 400 ms settling, 76 phases,
    // 19 groups per run, 5 runs: t(0.975, 4) x sd / sqrt(95).
    let o = opts(&[]);
    let t4 = 2.776_445_105_2;
    let r = resolvable_loss(&look_with(2.0, 9.0), &o);
    let (x, basis) = (r.half_width_pp, r.basis);
    close(x.unwrap(), t4 * 2.0 / 95f64.sqrt(), "paired");
    assert!(
        basis.contains("19 groups x 5 runs") && basis.contains("ABBA sd 2.00"),
        "{basis}"
    );
    // Longer runs, more groups: smaller.
    let longer = opts(&["--duration", "20s"]);
    assert!(
        resolvable_loss(&look_with(2.0, 9.0), &longer)
            .half_width_pp
            .unwrap()
            < x.unwrap()
    );
    // Too few slices for contrasts: the CV, with independent phases.
    let few = HostLook {
        slice_rates: vec![1.0; 4],
        ..look_with(0.0, 3.0)
    };
    let r = resolvable_loss(&few, &o);
    let (x, basis) = (r.half_width_pp, r.basis);
    close(x.unwrap(), t4 * 3.0 / 95f64.sqrt(), "paired from CV");
    assert!(basis.contains("slice CV"), "{basis}");
}

#[test]
fn classic_gaps_only_and_command_plans() {
    let o = opts(&["--design", "classic"]);
    let x = resolvable_loss(&look_with(0.0, 2.0), &o).half_width_pp;
    close(
        x.unwrap(),
        2.776_445_105_2 * 2f64.sqrt() * 2.0 / 5f64.sqrt(),
        "classic",
    );
    let o = opts(&["--design", "gaps"]);
    let l = judge(
        &LookMeasure {
            reads: reads(&[100, 300, 100, 300, 100, 300, 100, 300]),
            ..LookMeasure::default()
        },
        &o,
    );
    assert_eq!(l.resolvable_loss_pct, None);
    assert!(
        l.resolvable_basis.contains("gaps only"),
        "{}",
        l.resolvable_basis
    );
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    let mut o = opts(&[]);
    o.subject = driver::config::Subject::Command {
        argv: vec!["true".into()],
        warmup: 1,
    };
    assert_eq!(
        resolvable_loss(&look_with(5.0, 5.0), &o).half_width_pp,
        None
    );
}

#[test]
fn a_noisy_host_is_warned_of_with_the_remedy() {
    // Slices 20 % apart in no order ABBA cancels: an ABBA sd of ~15 %,
    // far beyond 1 pp with 5 runs.
    let noisy = LookMeasure {
        cpu: 1,
        duration_ns: 3_000_000_000,
        reads: reads(&[90, 110, 110, 90, 100, 120, 80, 100, 110, 90]),
        ..LookMeasure::default()
    };
    let l = judge(&noisy, &opts(&[]));
    let x = l.resolvable_loss_pct.unwrap();
    assert!(x > MAX_RESOLVABLE_PP, "{x}");
    assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
    let w = &l.warnings[0];
    let first = format!("cannot resolve a loss below {x:.1} % here");
    for needle in [
        first.as_str(),
        "per-sample cost model (gaps design)",
        "upper-bound check",
        "--reps",
        "longer runs",
    ] {
        assert!(w.contains(needle), "lacks {needle:?}: {w}");
    }
    // Without the gaps design the warning says what it is missing.
    let l = judge(&noisy, &opts(&["--design", "paired"]));
    assert!(
        l.warnings[0].contains("--design paired,gaps"),
        "{:?}",
        l.warnings
    );
    // The remedy's repetitions, inside its parentheses.
    assert!(w.contains("(--reps N; about --reps "), "{w}");
    // An interval wider than any loss says so, not "below 300 %".
    let wild = LookMeasure {
        reads: reads(&[50, 150, 150, 50, 150, 50, 50, 150]),
        ..noisy.clone()
    };
    let l = judge(&wild, &opts(&["--reps", "2", "--duration", "1s"]));
    assert!(l.resolvable_loss_pct.unwrap() >= 100.0);
    assert!(
        l.warnings[0].contains("cannot resolve any loss here (the 95 % interval would be +-"),
        "{:?}",
        l.warnings
    );
    // One repetition: no interval at all.
    let l = judge(&noisy, &opts(&["--reps", "1"]));
    assert!(l.warnings[0].contains("one repetition"), "{:?}", l.warnings);
}

#[test]
fn the_repetitions_that_would_reach_1_pp_are_named() {
    // sd 5 % per group, 19 groups: t(6) x 5 / sqrt(133) = 1.06,
    // t(7) x 5 / sqrt(152) = 0.96.
    let r = resolvable_loss(&look_with(5.0, 5.0), &opts(&[])).reps_for_1pp;
    assert_eq!(r, Some(8));
    let l = HostLook {
        resolvable_loss_pct: None,
        ..look_with(5.0, 5.0)
    };
    assert_eq!(
        resolvable_loss(&l, &opts(&["--reps", "20"])).reps_for_1pp,
        Some(20)
    );
}

#[test]
fn steal_and_a_heavy_episode_tail_are_warned_of_and_a_quiet_host_is_not() {
    let quiet = LookMeasure {
        cpu: 1,
        duration_ns: 3_000_000_000,
        wall_ns: 3_000_000_000,
        reads: reads(&[100, 101, 100, 99, 100, 100, 101, 100, 99, 100, 100]),
        episode_excess_ns: vec![3_000; 4_500],
        steal_ns: 3_000_000,
        ..LookMeasure::default()
    };
    let l = judge(&quiet, &opts(&[]));
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert!(l.resolvable_loss_pct.unwrap() < 0.5);
    let mut busy = quiet.clone();
    busy.steal_ns = 60_000_000;
    busy.episode_excess_ns.extend([4_000_000; 2]);
    let l = judge(&busy, &opts(&[]));
    assert_eq!(l.warnings.len(), 2, "{:?}", l.warnings);
    assert!(
        l.warnings[0].contains("steal was 2.0 % of CPU 1"),
        "{}",
        l.warnings[0]
    );
    assert!(
        l.warnings[1].contains("0.27 % of the loop's time") && l.warnings[1].contains("4.0 ms"),
        "{}",
        l.warnings[1]
    );
}

#[test]
fn the_printed_lines_carry_the_numbers() {
    let m = LookMeasure {
        cpu: 1,
        duration_ns: 3_000_000_000,
        slice_ns: 100_000_000,
        wall_ns: 3_000_000_000,
        reads: reads(&[200, 210, 190, 200, 200]),
        episode_excess_ns: vec![3_100, 24_000, 1_200_000],
        ..LookMeasure::default()
    };
    let text = lines(&judge(&m, &opts(&[]))).join("\n");
    for needle in [
        "host look: cpu 1, 3.0 s",
        "5 slices of 100 ms: mean 2.000 iterations/ns, CV 3.54 %, min/max 0.905",
        "1 episodes/s, excess median 24.0 us, p99 1.2 ms, max 1.2 ms",
        "steal        0.00 %",
        "resolvable   throughput loss >= ",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}:\n{text}");
    }
}
