//! The per-sample table, its warnings and `recommend --json` on a
//! synthetic results directory.

use super::*;
use crate::common::*;

#[test]
fn table_on_a_synthetic_results_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gaps");
    write_gaps_results(&dir, 13.9, false);
    let rs = analysis::load::load(&dir).unwrap();
    let a = analysis::pipeline::analyse(&rs).unwrap();
    let ps = a
        .gaps
        .per_sample
        .as_ref()
        .expect("gaps runs give the table");
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
        a.tables
            .loss
            .iter()
            .all(|l| l.design == results_format::Design::Paired),
        "{:?}",
        a.tables.loss
    );
    assert!(
        !a.quality
            .warnings
            .iter()
            .any(|w| w.rule == analysis::warnings::Rule::PerSample),
        "{:?}",
        a.quality.warnings
    );

    // One 0 Hz run with a 10x heavier background: b's interval and the
    // A/A control widen (the A/A stays centred on 0, see methodology).
    let heavy = tmp.path().join("heavy");
    write_gaps_results(&heavy, 13.9, true);
    let h = analysis::pipeline::analyse(&analysis::load::load(&heavy).unwrap()).unwrap();
    let (hr, r) = (&h.gaps.per_sample.as_ref().unwrap().rows[0], &ps.rows[0]);
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
    let a = analysis::pipeline::analyse(&analysis::load::load(&dir).unwrap()).unwrap();
    let ps = a.gaps.per_sample.as_ref().unwrap();
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
        a.quality
            .warnings
            .iter()
            .any(|w| w.rule == analysis::warnings::Rule::PerSample
                && w.text.contains("no usable 0 Hz gaps runs")),
        "{:?}",
        a.quality.warnings
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
    let w = per_sample_warnings(&[r]);
    assert!(
        w.contains("20 of 1000 samples (2.0%) fell in no gap"),
        "{w}"
    );
    assert!(w.contains("3 of 0 gaps not stored"), "{w}");
    assert!(w.contains("threshold calibrated late"), "{w}");
    assert!(w.contains("no usable 0 Hz gaps runs"), "{w}");
    let mut ok = run(1000, 1000, 15_000_000, 0.0);
    ok.row.unmatched_samples = 10; // exactly 1 %: no warning
    let w = per_sample_warnings(&[ok, zero_run(2, Vec::new())]);
    assert!(w.is_empty(), "{w}");
}

/// The per-sample table's warnings over `runs`, as the report lists them.
fn per_sample_warnings(runs: &[analysis::load::gaps::GapsRun]) -> String {
    let ps = build(runs, &[], &[]);
    let lines: Vec<String> = analysis::warnings::per_sample(runs, &ps)
        .iter()
        .map(|w| w.line())
        .collect();
    lines.join("\n")
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
    // The one answer shape (docs/results-format.md, "--json answers"):
    // the basis as a word, its sentence beside it.
    assert_eq!(rec["kind"], "sampler", "{rec}");
    assert_eq!(rec["format_version"], 1, "{rec}");
    assert_eq!(rec["basis"], "model", "{rec}");
    assert_eq!(rec["basis_text"], MODEL_BASIS_STR);
    assert!(rec.get("suggested_hz").is_none(), "{rec}");
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

    // When the paired loss exceeds the gaps term (30 % at 10 kHz against a
    // prediction of ~13.9 %), the excess is the loss model's outside term
    // (~16 000 ns per sample, one rate: its contrast against 0 Hz), charged
    // at every rate: 1 % allows at most ~1e7 / 30 000 = 333 Hz where the
    // gaps term alone allowed ~700 Hz; both answers are in the JSON.
    let dir2 = tmp.path().join("disagree");
    write_gaps_results(&dir2, 30.0, false);
    let rec = recommend_json(&dir2, "1%");
    assert_eq!(rec["basis"], "model", "{rec}");
    let (rate, model_rate) = (
        rec["rate_hz"].as_u64().unwrap(),
        rec["model_rate_hz"].as_u64().unwrap(),
    );
    assert!(rate < 340 && model_rate > 600, "{rec}");
    assert!(
        rec["outside_ns"]["value"].as_f64().unwrap() > 12_000.0,
        "{rec}"
    );
    assert!(
        rec["model_cost_ns"]["hi"].as_f64().unwrap() < 16_000.0,
        "{rec}"
    );
    assert!(
        rec["reasons"]
            .to_string()
            .contains("it grows with the rate"),
        "{rec}"
    );
    assert_eq!(rec["contributions"][1]["instrument"], "paired", "{rec}");

    // The report: the section first among the results, its CSV, the plots.
    bin()
        .args(["report", dir.to_str().unwrap()])
        .assert()
        .success();
    let md = std::fs::read_to_string(dir.join("report/report.md")).unwrap();
    let section = md.find("## What one sample costs the application").unwrap();
    assert!(section < md.find("## Tables").unwrap());
    // The rates agree: no line says otherwise; the A/A control and the
    // other parts are per_sample.csv's, named once.
    assert!(
        md.contains("| 10000 | ") && md.contains(" | agree |"),
        "{md}"
    );
    assert!(!md.contains("- At 10000 Hz predicted"), "{md}");
    assert!(
        md.contains("- per_sample.csv: the gaps design by rate"),
        "{md}"
    );
    assert!(
        md.contains("| freq_hz | runs | total ns/sample [95% CI] | next run's total ns [95% PI] |"),
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
    let agreement = header.split(',').position(|c| c == "agreement").unwrap();
    let row = csv.lines().nth(2).unwrap();
    assert_eq!(row.split(',').nth(agreement), Some("agree"), "{csv}");
    // Each run's cost in sweep order, and the drift section and plot.
    let by_run = std::fs::read_to_string(dir.join("report/cost_by_run.csv")).unwrap();
    assert!(
        by_run.starts_with("run_id,block,freq_hz,started_at_ns"),
        "{by_run}"
    );
    assert_eq!(by_run.lines().count(), 1 + 6, "{by_run}");
    assert!(md.contains("## The cost per sample over the sweep"), "{md}");
    assert!(md.contains("Valid for the conditions measured"), "{md}");
    assert!(md.contains("](cost_over_time.svg)"), "{md}");
    for stem in ["budget", "recovery", "cost_per_sample", "cost_over_time"] {
        let svg = std::fs::read_to_string(dir.join(format!("report/{stem}.svg"))).unwrap();
        assert!(svg.contains("<svg"), "{stem}");
        assert!(md.contains(&format!("]({stem}.svg)")), "{stem} not linked");
    }
    // The budget plot comes first, with the three budgets and the answers.
    assert!(md.find("](budget.svg)").unwrap() < md.find("](cost_per_sample.svg)").unwrap());
    let svg = std::fs::read_to_string(dir.join("report/budget.svg")).unwrap();
    for label in [
        "budget 0.1 %",
        "budget 1 %",
        "budget 5 %",
        "recommended rate",
    ] {
        assert!(svg.contains(label), "{label}");
    }
    let svg = std::fs::read_to_string(dir.join("report/recovery.svg")).unwrap();
    assert!(
        svg.contains("0 Hz") && svg.contains("10000 Hz"),
        "recovery legend"
    );
}

const MODEL_BASIS_STR: &str = analysis::recommend::MODEL_BASIS;
