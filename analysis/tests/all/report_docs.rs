//! docs/results-format.md's tables of the report's CSVs against the row
//! types that write them, column by column, and every committed report's
//! CSV headers against the same types.
#![allow(clippy::unwrap_used)]

use analysis::report::csv_row::Columns as _;
use analysis::report::{
    LossCsvRow, TracingCsvRow, UtilCsvRow, contents::AfterCsvRow, contents::ContentsCsvRow,
    per_sample::PerSampleCsvRow,
};
use analysis::subject::{command::report::CommandCsvRow, profiler::report::ProfilerCsvRow};

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
    vec![
        ("util.csv", UtilCsvRow::header(0)),
        ("loss.csv", LossCsvRow::header(1)),
        ("tracing.csv", TracingCsvRow::header(0)),
        ("per_sample.csv", PerSampleCsvRow::header(0)),
        (
            "cost_by_run.csv",
            results_format::header_of::<analysis::percost::RunCost>(),
        ),
        ("by_contents.csv", ContentsCsvRow::header(0)),
        ("after_effect.csv", AfterCsvRow::header(0)),
        ("command.csv", CommandCsvRow::header(0)),
        ("profiler.csv", ProfilerCsvRow::header(0)),
        (
            "latency.csv",
            analysis::report::latency::LatencyCsvRow::header(0),
        ),
        (
            "latency_runs.csv",
            analysis::report::latency::LatencyRunCsvRow::header(0),
        ),
        ("split.csv", analysis::report::split::SplitCsvRow::header(0)),
        (
            "split_phases.csv",
            analysis::report::split::SplitPhaseCsvRow::header(0),
        ),
        (
            "excluded_phases.csv",
            analysis::report::excluded_phases_header(),
        ),
        (
            "warning_runs.csv",
            analysis::warnings::warning::WarningRunRow::header(),
        ),
    ]
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
                LossCsvRow::header(runs)
            } else {
                header
            };
            assert_eq!(first, want, "{}", report.join(file).display());
            seen += 1;
        }
    }
    assert!(seen >= 20, "only {seen} committed report CSVs");
}

#[test]
fn a_per_run_column_is_one_per_run() {
    let mut names = Vec::new();
    analysis::report::csv_row::PerRun::names("run", 3, &mut names);
    assert_eq!(names, ["run1", "run2", "run3"]);
}
