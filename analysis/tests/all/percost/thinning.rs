//! Raw files thinned at dense rates (results-format `thinning`): the
//! per-sample table from one slice in three of every run at F > 0 is the
//! table from every record, within the spread a third of the samples has,
//! and the check against timeline.csv's totals does not fire.

use crate::common::*;
use results_format::thinning::{Thinning, thin_timeline};
use results_format::timeline::{
    gaps_path, read_gaps_parquet, read_samples_parquet, samples_path, write_gaps_parquet,
    write_samples_parquet,
};

/// Thins every gaps run at F > 0 of `dir` to one slice in `every`, as the
/// driver writes it, and says so in runs.csv.
fn thin(dir: &std::path::Path, every: u64) {
    let t = Thinning { every };
    let tl: Vec<results_format::timeline::TimelineRow> =
        results_format::read_csv_rows(&dir.join("timeline.csv")).unwrap();
    let mut runs: Vec<results_format::RunRow> =
        results_format::read_csv_rows(&dir.join("runs.csv")).unwrap();
    for run in runs
        .iter_mut()
        .filter(|r| r.freq_hz > 0 && r.design == results_format::Design::Gaps)
    {
        let id = run.run_id;
        let row = tl.iter().find(|r| r.run_id == id).unwrap();
        let gaps = read_gaps_parquet(&gaps_path(dir, id)).unwrap();
        let (times, eps) = read_samples_parquet(&samples_path(dir, id)).unwrap();
        let (g, st, se) = thin_timeline(&gaps, &times, &eps, t);
        assert!(
            st.len() * 2 < times.len(),
            "{} of {}",
            st.len(),
            times.len()
        );
        write_gaps_parquet(&gaps_path(dir, id), &g).unwrap();
        write_samples_parquet(&samples_path(dir, id), &st, &se).unwrap();
        run.raw_keep_every = Some(every);
        run.raw_kept_ns = Some(t.kept_ns(row.loop_start_ns, row.loop_end_ns));
    }
    let mut w = csv::Writer::from_path(dir.join("runs.csv")).unwrap();
    for r in &runs {
        w.serialize(r).unwrap();
    }
    w.flush().unwrap();
}

#[test]
fn a_thinned_set_gives_the_same_cost_per_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let full = tmp.path().join("full");
    write_gaps_results(&full, 10.0, false);
    let part = tmp.path().join("part");
    write_gaps_results(&part, 10.0, false);
    thin(&part, 3);
    let table = |dir: &std::path::Path| {
        let a = analysis::pipeline::analyse(&analysis::load::load(dir).unwrap()).unwrap();
        (a.measured.gaps.per_sample.unwrap(), a.quality.warnings)
    };
    let (a, _) = table(&full);
    let (b, warnings) = table(&part);
    assert!(
        !warnings
            .iter()
            .any(|w| w.rule == analysis::warnings::Rule::GapsFiles),
        "{warnings:?}"
    );
    for (x, y) in a.rows.iter().zip(&b.rows) {
        assert_eq!(x.freq_hz, y.freq_hz);
        // The same runs and the same rate (timeline.csv's, every sample).
        assert_eq!((x.runs, x.samples), (y.runs, y.samples));
        assert_eq!(x.achieved_hz, y.achieved_hz);
        // The synthetic samples all cost the same: a third of them gives
        // the same direct cost, and the background coincidence b is the
        // 0 Hz runs', which are never thinned.
        let rel = (y.direct_ns.value - x.direct_ns.value).abs() / x.direct_ns.value;
        assert!(
            rel < 0.02,
            "{} Hz: {} vs {}",
            x.freq_hz,
            y.direct_ns.value,
            x.direct_ns.value
        );
        assert_eq!(x.background_ns.value, y.background_ns.value);
        // Long episodes per second are over the time the files cover.
        assert!(
            (y.long_per_s.value - x.long_per_s.value).abs() <= x.long_per_s.value.abs() + 1.0,
            "{:?} vs {:?}",
            y.long_per_s,
            x.long_per_s
        );
    }
}
