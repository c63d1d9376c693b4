//! report.html and a result set whose raw folders were removed on purpose:
//! the page parses strictly as XML, holds the answer box first
//! and fetches nothing; a set without events/ or gaps/ still reports every
//! section that does not need them, says what it skipped, and exits 0.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::committed;

use std::path::Path;

use crate::common::{bin, write_gaps_results, write_results};
use quick_xml::Reader;
use quick_xml::events::Event;

/// Parses `page` strictly (every element closed, names matching) and
/// returns the text of `<section id="answer">`, plus the order of the
/// elements' names.
fn parse(page: &str) -> (String, Vec<String>) {
    let mut r = Reader::from_str(page);
    r.config_mut().check_end_names = true;
    let mut depth_in_answer: Option<usize> = None;
    let mut depth = 0usize;
    let mut answer = String::new();
    let mut names = Vec::new();
    loop {
        match r.read_event().unwrap_or_else(|e| {
            panic!("report.html does not parse at {}: {e}", r.buffer_position())
        }) {
            Event::Start(e) => {
                depth += 1;
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                let id = e
                    .try_get_attribute("id")
                    .unwrap()
                    .map(|a| a.unescape_value().unwrap().into_owned());
                if name == "section" && id.as_deref() == Some("answer") {
                    depth_in_answer = Some(depth);
                }
                names.push(name);
            }
            Event::End(_) => {
                if depth_in_answer == Some(depth) {
                    depth_in_answer = None;
                }
                depth -= 1;
            }
            Event::Empty(e) => names.push(String::from_utf8_lossy(e.name().as_ref()).into_owned()),
            Event::Text(t) if depth_in_answer.is_some() => {
                answer.push_str(&t.xml_content().unwrap());
            }
            Event::GeneralRef(g) if depth_in_answer.is_some() => {
                let name = String::from_utf8_lossy(&g).into_owned();
                answer.push_str(match name.as_str() {
                    "lt" => "<",
                    "gt" => ">",
                    "amp" => "&",
                    "quot" => "\"",
                    other => panic!("unexpected entity &{other};"),
                });
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(depth, 0, "unclosed elements");
    (answer, names)
}

/// What every report.html must be: strict markup, the answer box (as in
/// answer.txt) in the first section right after the title, the budget plot
/// as the first figure where there is one, nothing fetched.
fn check_page(report: &Path) {
    let page = std::fs::read_to_string(report.join("report.html")).unwrap();
    let (answer, names) = parse(&page);
    let want = std::fs::read_to_string(report.join("answer.txt")).unwrap();
    assert_eq!(
        answer.trim_matches('\n'),
        want.trim_matches('\n'),
        "{}",
        report.display()
    );
    let body: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .skip_while(|n| *n != "body")
        .collect();
    assert_eq!(body.get(1..3), Some(&["h1", "section"][..]), "{body:?}");
    for bad in ["img", "script", "link", "iframe", "object"] {
        assert!(
            !names.iter().any(|n| n == bad),
            "<{bad}> in {}",
            report.display()
        );
    }
    assert!(!page.contains(" src="), "{}", report.display());
    if report.join("budget.svg").exists() {
        let first_figure = page.find("<figure>").unwrap();
        let title = "What each sampling rate costs, against the budgets";
        assert!(
            page[first_figure..].find(title).unwrap()
                < page[first_figure + 1..]
                    .find("<figure>")
                    .unwrap_or(usize::MAX)
        );
    }
}

#[test]
fn report_html_parses_and_leads_with_the_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    write_results(&a);
    check_page(&analysis::report_dir(&a).map(|w| w.dir).unwrap());
    let g = tmp.path().join("g");
    write_gaps_results(&g, 10.0, false);
    let g = analysis::report_dir(&g).map(|w| w.dir).unwrap();
    check_page(&g);
    // Under the answer, the warnings fold; the summary does not.
    let page = std::fs::read_to_string(g.join("report.html")).unwrap();
    assert!(
        page.contains("<details>\n<summary>\n<h2>Warnings</h2>\n</summary>"),
        "{page}"
    );
    assert!(!page.contains("<summary>\n<h2>Summary"), "{page}");
}

#[test]
fn every_committed_report_html_is_a_valid_page() {
    // The sets git tracks (tests/committed), not a user's own in results/.
    let mut seen = 0;
    for set in committed::committed_sets() {
        let report = set.join("report");
        if report.join("report.html").exists() {
            check_page(&report);
            seen += 1;
        }
    }
    assert!(seen > 0, "no committed report.html under results/");
}

#[test]
fn removed_raw_folders_skip_their_sections_only() {
    let tmp = tempfile::tempdir().unwrap();
    // events/ removed: the util table is skipped, the loss table stays.
    let dir = tmp.path().join("u");
    write_results(&dir);
    let full = analysis::report_dir(&dir).map(|w| w.dir).unwrap();
    assert!(
        std::fs::read_to_string(full.join("util.csv"))
            .unwrap()
            .lines()
            .count()
            > 1
    );
    let full_md = std::fs::read_to_string(full.join("report.md")).unwrap();
    std::fs::remove_dir_all(dir.join("events")).unwrap();
    let out = bin().arg("report").arg(&dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("events/ (handler intervals) was removed"),
        "{stderr}"
    );
    let md = std::fs::read_to_string(full.join("report.md")).unwrap();
    assert!(md.contains("## Skipped: raw files removed"), "{md}");
    assert!(md.contains("events/ removed: util table skipped"), "{md}");
    assert_eq!(
        std::fs::read_to_string(full.join("util.csv"))
            .unwrap()
            .lines()
            .count(),
        1
    );
    assert!(
        std::fs::read_to_string(full.join("loss.csv"))
            .unwrap()
            .lines()
            .count()
            > 1
    );
    assert!(!md.contains("excluded: "), "{md}");
    // The report made with events/ is kept whole, not overwritten, and a
    // later report leaves it as it is.
    let kept = full.join("with-raw-files");
    assert_eq!(
        std::fs::read_to_string(kept.join("report.md")).unwrap(),
        full_md
    );
    assert!(kept.join("handler_durations.svg").exists());
    assert!(md.contains("(with-raw-files/report.md)"), "{md}");
    assert!(analysis::report_dir(&dir).map(|w| w.dir).is_ok());
    assert_eq!(
        std::fs::read_to_string(kept.join("report.md")).unwrap(),
        full_md
    );

    // gaps/ emptied (the folder kept): the per-sample table is skipped and
    // its CSVs, written by the earlier report, move with it to
    // with-raw-files/.
    let g = tmp.path().join("g");
    write_gaps_results(&g, 10.0, false);
    let out = analysis::report_dir(&g).map(|w| w.dir).unwrap();
    assert!(out.join("per_sample.csv").exists());
    for f in std::fs::read_dir(g.join("gaps")).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    let run = bin().arg("report").arg(&g).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("gaps/ or samples/ (the gaps design's timelines) was removed"),
        "{md}"
    );
    assert!(!out.join("per_sample.csv").exists());
    assert!(!out.join("cost_by_run.csv").exists());
    assert!(out.join("with-raw-files/per_sample.csv").exists());
    assert!(out.join("with-raw-files/cost_by_run.csv").exists());
    check_page(&out);

    // One file missing among several is still a fault: that run is
    // excluded and named.
    let h = tmp.path().join("h");
    write_gaps_results(&h, 10.0, false);
    let victim = h.join("gaps/run-1.parquet");
    std::fs::remove_file(&victim).unwrap();
    let rs = analysis::load::load(&h).unwrap();
    let a = analysis::pipeline::analyse(&rs).unwrap();
    assert_eq!(a.quality.excluded.len(), 1, "{:?}", a.quality.excluded);
    assert_eq!(a.quality.excluded[0].run_id, 1);
}
