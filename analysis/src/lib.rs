//! Results directory -> utilisation and loss tables, fitted factors, plots,
//! report, safe-rate recommendation and cross-host comparison.
//!
//! One-way layers, each using only those before it (after criterion;
//! `python3 tools/import-circles.py .` shows no circle, CI checks it):
//!
//! - numerics: `stats`, `fit`;
//! - read: the `results-format` crate (every file's type, reader and
//!   writer), then `load` (the result set, runs left out, raw folders
//!   removed on purpose) with `load::intervals` (the handler intervals)
//!   and `load::gaps` (the gaps design's runs);
//! - compute: `row_types` (the table rows), `tables` (Tables 1 and 2, the
//!   fits), `percost` (the gaps design's cost per sample), `contents`,
//!   `aftereffect`, `user_command`;
//! - judge: `warnings` (every warning, with its remedy), `recommend` (the
//!   safe rate for a budget), `summary` (summary.parquet's rows: the
//!   answer per configuration and rate);
//! - `pipeline`: the one entry from a loaded set to its `findings`
//!   (judged tables and the answers at the report budgets, in parts);
//! - present: `format` (how numbers are written), `answer` (the answer
//!   box), `report` (report.md, report.html, CSVs) with its section
//!   modules, `plot`, `compare`;
//! - `fleet`: many hosts' summaries (read, per host, per class, present),
//!   on the layers above.
//!
//! [`report_dir`] below walks them once: load, analyse, present.

#![forbid(unsafe_code)]

pub mod aftereffect;
pub mod answer;
pub mod columns;
pub mod compare;
pub mod contents;
pub mod error;
pub mod findings;
pub mod fit;
pub mod fleet;
pub mod format;
pub mod history;
pub mod json_answer;
pub mod latency;
pub mod load;
pub mod percost;
pub mod pipeline;
pub mod plot;
pub mod profilers;
pub mod recommend;
pub mod reference;
pub mod report;
pub mod row_types;
pub mod split;
pub mod stats;
pub mod subcommands;
pub mod subject;
pub mod summary;
pub mod tables;
pub mod warnings;

pub use error::AnalysisError;

/// `analysis report DIR`, the crate's one walk through its layers: read
/// the results directory, analyse and judge it, then write `DIR/report/`.
/// Returns the report directory and the answer box.
pub fn report_dir(dir: &std::path::Path) -> Result<report::Written, AnalysisError> {
    report_and_summary(dir).map(|(written, _)| written)
}

/// [`report_dir`], also returning the summary rows it wrote to
/// summary.parquet, made in process (`driver check` judges them).
pub fn report_and_summary(
    dir: &std::path::Path,
) -> Result<(report::Written, Vec<results_format::summary::SummaryRow>), AnalysisError> {
    let rs = load::load(dir)?;
    let analysis = pipeline::analyse(&rs)?;
    for line in analysis.quality.raw_removed.lines() {
        tracing::warn!("skipped: {line}");
    }
    let written = report::write(&rs, &analysis)?;
    let rows = summary::summary_rows(&rs, &analysis);
    let path = rs.dir.join(results_format::summary::SUMMARY_PARQUET);
    results_format::summary::write_summary(&path, &rows)?;
    Ok((written, rows))
}

/// A set's summary rows: read from its summary.parquet, or made from its
/// tables when it has none (an older set). The bool says which: true when
/// made.
pub fn summary_of(
    dir: &std::path::Path,
) -> Result<(Vec<results_format::summary::SummaryRow>, bool), AnalysisError> {
    let path = dir.join(results_format::summary::SUMMARY_PARQUET);
    if path.is_file() {
        let rows = results_format::summary::read_summary(&path)
            .map_err(|e| AnalysisError::Invalid(e.to_string()))?;
        return Ok((rows, false));
    }
    let rs = load::load(dir)?;
    let analysis = pipeline::analyse(&rs)?;
    Ok((summary::summary_rows(&rs, &analysis), true))
}

pub use results_format::events::write_intervals_parquet;
