//! The loss model behind every recommendation (analysis/src/recommend/):
//! the gaps term alone, an outside term that grows with the rate, one that
//! does not, one rate only, the two classes disagreeing and agreeing; and
//! its properties (proptest): the rate never falls as the budget grows,
//! never rises when a cost grows.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use analysis::percost::PerSampleRow;
use analysis::pipeline::Findings;
use analysis::recommend::evidence::Class;
use analysis::recommend::model::Reading;
use analysis::recommend::{MODEL_BASIS, loss_model, recommend};
use analysis::split::SplitRow;
use analysis::stats::Estimate;
use proptest::prelude::*;

use crate::percost::model::{cost_row, paired_row, with_model};

/// An estimate with a 95 % interval of +-1.96 se (n large).
fn est(value: f64, se: f64) -> Estimate {
    Estimate {
        value,
        lo: value - 1.96 * se,
        hi: value + 1.96 * se,
        se,
        n: 100_000,
    }
}

/// A gaps row with an after-effect of 0 (so split points count whole).
fn gaps_row(freq_hz: u64, total: f64, hi: f64) -> PerSampleRow {
    let mut r = cost_row(freq_hz, total, hi);
    r.after_effect_ns = est(0.0, 0.0);
    r
}

fn split_row(freq_hz: u64, outside: Estimate, vs_zero: Estimate) -> SplitRow {
    SplitRow {
        freq_hz,
        runs: 5,
        groups: 120,
        total: est(1.0, 0.1),
        in_gaps: est(0.0, 0.0),
        outside,
        closure_pp: 0.0,
        achieved_hz: freq_hz as f64,
        halved: 480,
        mode_changes_on: 0,
        mode_changes_off: 0,
        carryover: est(f64::NAN, f64::NAN),
        outside_vs_zero: vs_zero,
        off_recovery: est(f64::NAN, f64::NAN),
    }
}

const RATES: [u64; 3] = [500, 2000, 4000];

/// 2 us per sample at every rate, upper prediction bound 2.2 us.
fn gaps_2us() -> Findings {
    with_model(RATES.iter().map(|&f| gaps_row(f, 2000.0, 2200.0)).collect())
}

/// The highest rate within `budget_pct` on the gaps term alone.
fn model_max_rate(a: &Findings, budget_pct: f64) -> Option<f64> {
    loss_model(a)
        .ok()
        .map(|m| m.gaps_curve().max_rate(budget_pct))
}

/// The loss % an outside cost of `ns` per sample adds at `freq_hz`.
fn pct(freq_hz: u64, ns: f64) -> f64 {
    freq_hz as f64 * ns * 1e-7
}

#[test]
fn the_gaps_term_alone_takes_the_largest_cost_bound_at_or_below_a_rate() {
    // Costs fall with the rate; the 100 Hz bound (16 000 ns) governs all.
    let a = with_model(vec![
        gaps_row(100, 15_000.0, 16_000.0),
        gaps_row(1000, 13_000.0, 14_000.0),
        gaps_row(10_000, 12_000.0, 12_500.0),
    ]);
    for (budget, want) in [(1.0, 625.0), (0.1, 62.5), (10.0, 6250.0), (50.0, 10_000.0)] {
        let got = model_max_rate(&a, budget).unwrap();
        assert!((got - want).abs() < 1e-6, "budget {budget}: {got}");
    }
    // Costs rise at 1 kHz: the answer is the step, and the prime below it
    // is checked against the lower cost.
    let a = with_model(vec![
        gaps_row(100, 9_000.0, 10_000.0),
        gaps_row(1000, 19_000.0, 20_000.0),
    ]);
    assert_eq!(model_max_rate(&a, 1.5), Some(1000.0));
    let rec = recommend(&a, 1.5).unwrap();
    assert_eq!((rec.rate_hz, rec.basis.as_str()), (Some(997), MODEL_BASIS));
    assert!((rec.predicted_loss_hi_pct.unwrap() - 0.997).abs() < 1e-9);
    assert!((rec.predicted_loss_pct.unwrap() - 0.8973).abs() < 1e-9);
    assert!(rec.outside_ns.is_none() && rec.contributions.len() == 1);
    assert_eq!(analysis::summary::basis_word(&rec), "model");
}

#[test]
fn an_outside_cost_that_grows_with_the_rate_is_charged() {
    // 4 us per sample outside the gaps, within runs, at three rates.
    let mut a = gaps_2us();
    a.gaps.split.rows = RATES
        .iter()
        .map(|&f| split_row(f, est(pct(f, 4000.0), 0.02), est(f64::NAN, f64::NAN)))
        .collect();
    let m = analysis::recommend::loss_model(&a).unwrap();
    let o = m.outside.expect("charged");
    assert!((o.cost_ns.value - 4000.0).abs() < 1.0, "{o:?}");
    assert_eq!(o.reading, Reading::OneClass);
    let rec = recommend(&a, 1.0).unwrap();
    // The charge: 2000 + 4000 + the two half-widths in quadrature.
    let hi = 2000.0 + o.cost_ns.value + 200f64.hypot(o.cost_ns.half_width());
    assert!((rec.max_hz.unwrap() - 1e7 / hi).abs() < 1e-6, "{rec:?}");
    assert_eq!(rec.model_rate_hz, Some(3989));
    assert!(rec.rate_hz.unwrap() < 1700, "{rec:?}");
    assert_eq!(rec.basis, MODEL_BASIS);
    assert!(rec.outside_ns.is_some());
    let split = rec
        .contributions
        .iter()
        .find(|c| c.instrument == "split")
        .unwrap();
    assert!((split.weight - 1.0).abs() < 1e-9, "{split:?}");
    assert!(
        rec.reasoning
            .iter()
            .any(|l| l.contains("grows with the rate")),
        "{:?}",
        rec.reasoning
    );
}

/// The busy host's pattern: one between-run interval excludes 0 among
/// rates that show no growth, and the within-run part is null. Nothing
/// is charged: the answer is the gaps term's.
#[test]
fn one_interval_without_growth_is_not_charged() {
    let mut a = with_model(
        [100, 500, 2000, 4000]
            .iter()
            .map(|&f| gaps_row(f, 20_600.0, 37_300.0))
            .collect(),
    );
    let vs_zero = [(-0.96, 2.0), (6.22, 2.28), (2.0, 3.0), (2.24, 2.0)];
    a.gaps.split.rows = [100, 500, 2000, 4000]
        .iter()
        .zip(vs_zero)
        .map(|(&f, (v, se))| split_row(f, est(0.0, 0.1), est(v, se)))
        .collect();
    let m = analysis::recommend::loss_model(&a).unwrap();
    assert!(m.outside.is_none(), "{m:?}");
    let rec = recommend(&a, 1.0).unwrap();
    assert_eq!(rec.rate_hz, rec.model_rate_hz);
    assert_eq!(rec.rate_hz, Some(257));
    assert!(rec.reasoning.iter().any(|l| l.contains("Not charged")));
}

/// One rate: the slope is its contrast against 0 Hz (two doses), and
/// where that resolves it is charged; a null one is not.
#[test]
fn one_rate_is_its_contrast_against_zero_hz() {
    let mut a = gaps_2us();
    a.gaps.split.rows = vec![split_row(4000, est(3.0, 0.1), est(f64::NAN, f64::NAN))];
    let rec = recommend(&a, 1.0).unwrap();
    let o = rec.outside_ns.unwrap();
    assert!((o.value - 7500.0).abs() < 1e-6, "{o:?}");
    assert!(
        rec.reasoning.iter().any(|l| l.contains("one rate")),
        "{:?}",
        rec.reasoning
    );
    a.gaps.split.rows = vec![split_row(4000, est(0.1, 0.1), est(f64::NAN, f64::NAN))];
    let rec = recommend(&a, 1.0).unwrap();
    assert!(rec.outside_ns.is_none());
    assert_eq!(rec.rate_hz, Some(3989));
}

/// What outlasts a phase: null within runs, 20 us per sample against the
/// 0 Hz runs. The classes disagree: named, and the between-run one, the
/// only one that resolves, is charged.
#[test]
fn disagreeing_classes_take_the_larger_resolved_one() {
    let mut a = gaps_2us();
    a.gaps.split.rows = RATES
        .iter()
        .map(|&f| split_row(f, est(0.0, 0.05), est(pct(f, 20_000.0), 0.3)))
        .collect();
    let m = analysis::recommend::loss_model(&a).unwrap();
    assert!(m.heterogeneous(), "{m:?}");
    let o = m.outside.unwrap();
    assert_eq!(o.reading, Reading::OneClass);
    assert_eq!(o.class, Class::BetweenRuns);
    assert!((o.cost_ns.value - 20_000.0).abs() < 100.0, "{o:?}");
    let rec = recommend(&a, 1.0).unwrap();
    assert!(rec.heterogeneity);
    assert!(rec.rate_hz.unwrap() < 1e7 as u64 / 22_000, "{rec:?}");
    assert!(rec.reasoning.iter().any(|l| l.contains("HETEROGENEITY")));
}

/// The paired design's excess over the gaps term feeds the within-run
/// class too. Where both classes resolve, even in agreement, they are not
/// pooled: the one with the larger upper bound (between runs, the noisier
/// here) is charged, and only its instruments carry weight.
#[test]
fn where_both_classes_resolve_the_larger_upper_bound_is_charged() {
    let mut a = gaps_2us();
    for r in &mut a.gaps.per_sample.as_mut().unwrap().rows {
        r.total_ns = est(2000.0, 10.0);
    }
    for &f in &RATES {
        a.tables
            .loss
            .push(paired_row(f, est(pct(f, 2000.0) + pct(f, 5000.0), 0.05)));
    }
    a.gaps.split.rows = RATES
        .iter()
        .map(|&f| split_row(f, est(pct(f, 5000.0), 0.05), est(pct(f, 5000.0), 0.2)))
        .collect();
    let m = analysis::recommend::loss_model(&a).unwrap();
    assert!(!m.heterogeneous(), "{m:?}");
    assert!(m.fits.iter().all(|f| f.resolved()), "{:?}", m.fits);
    let o = m.outside.unwrap();
    assert_eq!((o.reading, o.class), (Reading::Larger, Class::BetweenRuns));
    let within = m
        .fits
        .iter()
        .find(|f| f.class == Class::WithinRuns)
        .unwrap();
    assert!(o.cost_ns.hi > within.cost_ns.hi, "{m:?}");
    assert!((o.cost_ns.value - 5000.0).abs() < 50.0, "{o:?}");
    let rec = recommend(&a, 1.0).unwrap();
    let w: f64 = rec.contributions.iter().skip(1).map(|c| c.weight).sum();
    assert!((w - 1.0).abs() < 1e-9, "{:?}", rec.contributions);
    assert_eq!(rec.contributions.len(), 4, "{:?}", rec.contributions);
    let between = rec
        .contributions
        .iter()
        .find(|c| c.instrument == "split_vs_zero")
        .unwrap();
    assert!(
        (between.weight - 1.0).abs() < 1e-9,
        "{:?}",
        rec.contributions
    );
}

/// A 0 Hz reference that came out low puts every rate's between-run point
/// above 0 by the same amount: an offset, not growth. With its own
/// intercept the between-run class does not read it as a cost per sample;
/// through the origin it would have.
#[test]
fn a_common_offset_against_zero_hz_is_not_growth() {
    let mut a = gaps_2us();
    a.gaps.split.rows = [500, 1000, 2000, 4000]
        .iter()
        .map(|&f| split_row(f, est(0.0, 0.05), est(0.8, 0.1)))
        .collect();
    let m = analysis::recommend::loss_model(&a).unwrap();
    let between = m
        .fits
        .iter()
        .find(|f| f.class == Class::BetweenRuns)
        .unwrap();
    assert_eq!(between.intercepts, 1);
    assert!(between.cost_ns.value.abs() < 1e-6, "{between:?}");
    assert!(m.outside.is_none(), "{m:?}");
    // The same points growing with the rate on top of the offset are.
    a.gaps.split.rows = [500, 1000, 2000, 4000]
        .iter()
        .map(|&f| split_row(f, est(0.0, 0.05), est(0.8 + pct(f, 6000.0), 0.1)))
        .collect();
    let m = analysis::recommend::loss_model(&a).unwrap();
    let o = m.outside.expect("charged");
    assert!((o.cost_ns.value - 6000.0).abs() < 1.0, "{o:?}");
}

/// A part below the materiality margin (5 % of the total cost per sample
/// that the paired and split totals measure) is not charged however
/// precisely it is measured; one above it is.
#[test]
fn a_part_below_the_materiality_margin_is_not_charged() {
    let with_outside = |ns: f64| {
        let mut a = gaps_2us();
        a.gaps.split.rows = RATES
            .iter()
            .map(|&f| {
                let mut r = split_row(f, est(pct(f, ns), 0.001), est(f64::NAN, f64::NAN));
                r.total = est(pct(f, 2000.0 + ns), 0.001);
                r
            })
            .collect();
        analysis::recommend::loss_model(&a).unwrap()
    };
    let m = with_outside(60.0);
    assert!(
        (m.material_ns - 0.05 * 2060.0).abs() < 1e-6,
        "{}",
        m.material_ns
    );
    let within = m
        .fits
        .iter()
        .find(|f| f.class == Class::WithinRuns)
        .unwrap();
    assert!(within.cost_ns.lo > 0.0, "{within:?}");
    assert!(m.outside.is_none(), "{m:?}");
    let m = with_outside(400.0);
    assert!(m.outside.is_some(), "{m:?}");
}

/// Each rate's gaps cost and its prediction half-width, ns.
type Costs = Vec<(f64, f64)>;
/// Each rate's split point within runs and against 0 Hz: value, se (pp).
type Points = Vec<(f64, f64, f64, f64)>;

/// A set: gaps costs at three rates, and within- and between-run points.
fn arbitrary_set() -> impl Strategy<Value = (Costs, Points)> {
    (
        prop::collection::vec((500.0..40_000.0f64, 0.0..20_000.0f64), 3),
        prop::collection::vec((-2.0..6.0f64, 0.01..2.0f64, -2.0..6.0f64, 0.01..3.0f64), 3),
    )
}

fn build(costs: &[(f64, f64)], pts: &[(f64, f64, f64, f64)], scale: f64, dose: f64) -> Findings {
    let mut a = with_model(
        RATES
            .iter()
            .zip(costs)
            .map(|(&f, &(c, w))| gaps_row(f, c * scale, (c + w) * scale))
            .collect(),
    );
    a.gaps.split.rows = RATES
        .iter()
        .zip(pts)
        .map(|(&f, &(y, s, z, t))| split_row(f, est(y + pct(f, dose), s), est(z + pct(f, dose), t)))
        .collect();
    a
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_rate_never_falls_as_the_budget_grows(
        (costs, pts) in arbitrary_set(),
        b in 0.05..10.0f64,
        more in 1.0..5.0f64,
    ) {
        let a = build(&costs, &pts, 1.0, 0.0);
        let lo = recommend(&a, b).unwrap().rate_hz.unwrap_or(0);
        let hi = recommend(&a, (b * more).min(99.0)).unwrap().rate_hz.unwrap_or(0);
        prop_assert!(lo <= hi, "{lo} Hz at {b} %, {hi} Hz at {} %", b * more);
    }

    #[test]
    fn the_rate_never_rises_when_a_cost_grows(
        (costs, pts) in arbitrary_set(),
        b in 0.05..10.0f64,
        scale in 1.0..3.0f64,
        dose in 0.0..20_000.0f64,
    ) {
        let base = recommend(&build(&costs, &pts, 1.0, 0.0), b).unwrap().rate_hz.unwrap_or(0);
        let gaps = recommend(&build(&costs, &pts, scale, 0.0), b).unwrap().rate_hz.unwrap_or(0);
        let outside = recommend(&build(&costs, &pts, 1.0, dose), b).unwrap().rate_hz.unwrap_or(0);
        prop_assert!(gaps <= base, "gaps x{scale}: {gaps} Hz > {base} Hz");
        prop_assert!(outside <= base, "outside +{dose} ns: {outside} Hz > {base} Hz");
    }
}

/// One number wherever the answer is read: the answer box, `recommend
/// --json`, summary.parquet and the fleet's per-host answer, on a set
/// whose outside term is charged (paired 30 % at 10 kHz against a gaps
/// term of ~14 %).
#[test]
fn the_box_json_summary_and_fleet_give_one_answer() {
    use crate::common::{bin, recommend_json, write_gaps_results};
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("fleet");
    let dir = root.join("host=h").join("date=2026-11-28").join("set");
    write_gaps_results(&dir, 30.0, false);
    bin()
        .args(["report", dir.to_str().unwrap()])
        .assert()
        .success();
    let rows = results_format::summary::read_summary(&dir.join("summary.parquet")).unwrap();
    let row = rows
        .iter()
        .find(|r| r.config_primary == Some(true))
        .unwrap();
    let box_text = std::fs::read_to_string(dir.join("report/answer.txt")).unwrap();
    for (budget, key) in [("0.1", 0), ("1", 1), ("5", 2)] {
        let j = recommend_json(&dir, &format!("{budget}%"));
        let rate = j["rate_hz"].as_u64().unwrap();
        let max = j["max_hz"].as_f64().unwrap();
        assert!(j["outside_ns"]["value"].as_f64().unwrap() > 0.0, "{j}");
        assert!(
            box_text.contains(&format!("{budget} %: {rate} Hz")),
            "{budget} %: {rate} Hz not in {box_text}"
        );
        let (s_rate, s_max) = match key {
            0 => (row.budget_0p1_rate_hz, row.budget_0p1_max_hz),
            1 => (row.budget_1_rate_hz, row.budget_1_max_hz),
            _ => (row.budget_5_rate_hz, row.budget_5_max_hz),
        };
        assert_eq!(s_rate, Some(rate as i64));
        // The same f64, up to JSON's last-digit rounding.
        assert!(
            (s_max.unwrap() - max).abs() <= 1e-9 * max,
            "{s_max:?} vs {max}"
        );
    }
    let out = bin()
        .arg("fleet")
        .arg(&root)
        .args(["--json", "--no-make"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let one = &f["classes"][0]["budgets"][1];
    let fleet_max = one["every_host_max_hz"].as_f64().unwrap();
    let max = row.budget_1_max_hz.unwrap();
    assert!((fleet_max - max).abs() <= 1e-9 * max, "{f}");
}

/// `driver check`'s verdict reads the model too: where the outside term
/// is charged, a rate the gaps cost alone keeps within budget is over it.
#[test]
fn the_check_verdict_reads_the_model() {
    let mut a = gaps_2us();
    a.gaps.split.rows = RATES
        .iter()
        .map(|&f| split_row(f, est(pct(f, 4000.0), 0.02), est(f64::NAN, f64::NAN)))
        .collect();
    let m = analysis::recommend::loss_model(&a).unwrap();
    assert!(m.outside.is_some());
    let row = results_format::summary::SummaryRow {
        freq_hz: Some(2000),
        achieved_hz: Some(2000.0),
        cost_per_sample_pred_hi_ns: Some(2200.0),
        cost_per_sample_lo_ns: Some(1800.0),
        config_primary: Some(true),
        ..Default::default()
    };
    let alone = analysis::summary::check_verdict(&row, 1.0);
    assert_eq!(alone.within, Some(true));
    let v = analysis::summary::model_verdict(&m, &row, 1.0).unwrap();
    assert_eq!(v.within, Some(false), "{v:?}");
    let hi = m.curve().points[1].cost_ns.hi;
    assert!((v.loss_hi_pct.unwrap() - 2000.0 * hi * 1e-7).abs() < 1e-9);
    assert!((v.max_hz.unwrap() - 1e7 / hi).abs() < 1e-6);
    // No cost at the row's rate: no model verdict.
    let other = results_format::summary::SummaryRow {
        freq_hz: Some(3000),
        ..row
    };
    assert!(analysis::summary::model_verdict(&m, &other, 1.0).is_none());
}
