//! docs/results-format.md's tables of the report's CSVs against the row
//! types that write them, column by column, and every committed report's
//! CSV headers against the same types.
#![allow(clippy::unwrap_used)]

use analysis::columns::header;
use analysis::row_types::{LossRow, TracepointCostRow, UtilRow};

use crate::committed;

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/results-format.md");
    std::fs::read_to_string(path).unwrap()
}

/// The names docs/results-format.md lists under `heading`.
fn documented(doc: &str, heading: &str) -> Vec<String> {
    results_format::doc_tables::documented(doc, heading)
        .unwrap_or_else(|| panic!("docs/results-format.md has no table under {heading:?}"))
}

/// Each report CSV's header, by file name; loss.csv with one run column.
fn headers() -> Vec<(&'static str, Vec<String>)> {
    // report.rs writes the 2014 article's utilisation beside each row.
    let mut util = header::<UtilRow>(&[]);
    util.push("reference_2014_util_pct".into());
    vec![
        ("util.csv", util),
        ("loss.csv", loss_header(1)),
        ("tracing.csv", header::<TracepointCostRow>(&[])),
        (
            "per_sample.csv",
            header::<analysis::percost::PerSampleRow>(&[]),
        ),
        ("cost_by_run.csv", header::<analysis::percost::RunCost>(&[])),
        (
            "by_contents.csv",
            header::<analysis::contents::ContentsRow>(&[]),
        ),
        (
            "after_effect.csv",
            header::<analysis::aftereffect::AfterRow>(&[]),
        ),
        (
            "command.csv",
            header::<analysis::subject::command::CommandRow>(&[]),
        ),
        (
            "profiler.csv",
            header::<analysis::subject::profiler::ProfilerRow>(&[]),
        ),
        (
            "latency.csv",
            header::<analysis::latency::table::LatencyRow>(&[]),
        ),
        (
            "latency_runs.csv",
            header::<analysis::latency::table::LatencyRunRow>(&[]),
        ),
        ("split.csv", header::<analysis::split::SplitRow>(&[])),
        (
            "split_phases.csv",
            header::<analysis::split::SplitPhase>(&[]),
        ),
        (
            "excluded_phases.csv",
            header::<analysis::report::ExcludedPhaseRow>(&[]),
        ),
        (
            "warning_runs.csv",
            header::<analysis::warnings::warning::WarningRunRow>(&[]),
        ),
    ]
}

/// loss.csv's header with `runs` run columns.
fn loss_header(runs: usize) -> Vec<String> {
    let row = LossRow {
        iterations: vec![0; runs],
        ..LossRow::default()
    };
    header(&[row])
}

#[test]
fn every_report_csv_is_documented_column_by_column() {
    let doc = doc();
    for (file, header) in headers() {
        assert_eq!(
            documented(&doc, &format!("### report/{file}")),
            header,
            "docs/results-format.md \"### report/{file}\" (left) disagrees with the header written (right)"
        );
    }
}

#[test]
fn every_committed_report_csv_has_its_row_types_header() {
    // The sets git tracks (tests/committed), not a user's own in results/.
    let mut seen = 0;
    for set in committed::committed_sets() {
        let report = set.join("report");
        for (file, header) in headers() {
            let Ok(text) = std::fs::read_to_string(report.join(file)) else {
                continue;
            };
            let first: Vec<&str> = text.lines().next().unwrap().split(',').collect();
            // Written before the file held every warning whole; the
            // committed reports are regenerated together, in one commit.
            if file == "warning_runs.csv" && first == ["rule", "run_id"] {
                continue;
            }
            let want = if file == "loss.csv" {
                let runs = first.iter().filter(|c| c.starts_with("run")).count();
                loss_header(runs)
            } else {
                header
            };
            assert_eq!(first, want, "{}", report.join(file).display());
            seen += 1;
        }
    }
    assert!(seen >= 20, "only {seen} committed report CSVs");
}
