//! docs/results-format.md against the types: every column and key a file
//! holds is documented, in the order written, and the document names none
//! that is not written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use results_format::events::EVENT_COLUMNS;
use results_format::timeline::{GAP_COLUMNS, RecoveryRow, SAMPLE_COLUMNS, TimelineRow};
use results_format::{Manifest, PhaseRow, RunRow, header_of};

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/results-format.md");
    std::fs::read_to_string(path).unwrap()
}

/// The names docs/results-format.md lists under `heading`.
fn documented(doc: &str, heading: &str) -> Vec<String> {
    results_format::doc_tables::documented(doc, heading)
        .unwrap_or_else(|| panic!("docs/results-format.md has no table under {heading:?}"))
}

fn same_order(heading: &str, written: &[String]) {
    let doc = doc();
    assert_eq!(
        documented(&doc, heading),
        written,
        "docs/results-format.md {heading:?} (left) disagrees with the columns written (right)"
    );
}

fn strings(cols: &[&str]) -> Vec<String> {
    cols.iter().map(|c| (*c).to_owned()).collect()
}

#[test]
fn runs_csv_columns_are_documented_in_order() {
    same_order("## runs.csv", &header_of::<RunRow>());
}

#[test]
fn phases_csv_columns_are_documented_in_order() {
    same_order(
        "## phases.csv (paired and split designs)",
        &header_of::<PhaseRow>(),
    );
}

#[test]
fn gaps_design_csv_columns_are_documented_in_order() {
    same_order("### timeline.csv", &header_of::<TimelineRow>());
    same_order("### recovery.csv", &header_of::<RecoveryRow>());
}

#[test]
fn summary_columns_are_documented_in_order() {
    let written: Vec<String> = results_format::summary::SUMMARY_COLUMNS
        .iter()
        .map(|(n, _)| (*n).to_owned())
        .collect();
    same_order("## summary.parquet", &written);
}

#[test]
fn parquet_columns_are_documented_in_order() {
    same_order("## events/run-<run_id>.parquet", &strings(&EVENT_COLUMNS));
    same_order("### gaps/run-<run_id>.parquet", &strings(&GAP_COLUMNS));
    same_order(
        "### samples/run-<run_id>.parquet",
        &strings(&SAMPLE_COLUMNS),
    );
}

#[test]
fn manifest_keys_are_documented() {
    let manifest: Manifest = Manifest::default();
    let written: BTreeSet<String> = match serde_json::to_value(manifest).unwrap() {
        serde_json::Value::Object(m) => m.keys().cloned().collect(),
        v => panic!("the manifest is not an object: {v}"),
    };
    let doc = doc();
    let documented: BTreeSet<String> = documented(&doc, "## manifest.json").into_iter().collect();
    assert_eq!(documented, written);
}

#[test]
fn host_look_keys_are_documented() {
    let look = results_format::HostLook::default();
    let written: BTreeSet<String> = match serde_json::to_value(look).unwrap() {
        serde_json::Value::Object(m) => m.keys().cloned().collect(),
        v => panic!("host_look is not an object: {v}"),
    };
    let documented: BTreeSet<String> = documented(&doc(), "### host_look").into_iter().collect();
    assert_eq!(documented, written);
}

/// The check itself: a column missing from the document is caught.
#[test]
fn a_missing_column_would_be_caught() {
    let doc = doc().replace("| `nvcsw`, `nivcsw` |", "| `nivcsw` |");
    assert_ne!(documented(&doc, "## runs.csv"), header_of::<RunRow>());
}

/// Every key of the one `--json` answer is documented, and nothing more:
/// the shared keys, then a check's own (`measured_hz`, `exit_code`,
/// `dir`), which `driver check` puts in `extra`, and `recommend --for`'s
/// `profiler_settings`, likewise.
#[test]
fn json_answer_keys_are_documented() {
    use results_format::answer::{ANSWER_VERSION, Answer, AnswerKind};
    let a = Answer {
        format_version: ANSWER_VERSION,
        kind: AnswerKind::Check,
        budget_pct: 1.0,
        rate_hz: None,
        max_hz: None,
        basis: "none".into(),
        basis_text: String::new(),
        at_highest_measured: None,
        resolvable: false,
        within_budget: None,
        reasons: Vec::new(),
        rows: Vec::new(),
        extra: serde_json::Map::new(),
    };
    let mut written: Vec<String> = match serde_json::to_value(a).unwrap() {
        serde_json::Value::Object(m) => m.keys().cloned().collect(),
        v => panic!("the answer is not an object: {v}"),
    };
    written.sort();
    let mut documented = documented(&doc(), "## --json answers");
    for check_own in ["measured_hz", "exit_code", "dir", "profiler_settings"] {
        let at = documented.iter().position(|k| k == check_own);
        assert!(at.is_some(), "{check_own} is not documented");
        documented.remove(at.unwrap());
    }
    documented.sort();
    assert_eq!(documented, written);
}
