//! One damaged file must not lose the whole report: a garbage or truncated
//! events/run-N.parquet leaves that run out (listed, with the reason, in the
//! report and on stderr) and everything else is reported; only a directory
//! with no usable run left fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;

fn utilisation_runs(csv: &std::path::Path) -> usize {
    let mut r = csv::Reader::from_path(csv).unwrap();
    let h = r.headers().unwrap().clone();
    let i = h.iter().position(|c| c == "runs").unwrap();
    r.records()
        .map(|rec| rec.unwrap()[i].parse::<usize>().unwrap())
        .sum()
}

#[test]
fn a_garbage_and_a_truncated_events_file_exclude_their_runs_only() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    let util_ids = write_results(&dir);
    // Untouched: every util run counts.
    let out = analysis::report_dir(&dir).map(|w| w.dir).unwrap();
    let all = utilisation_runs(&out.join("util.csv"));
    assert_eq!(all, util_ids.len());

    let garbage = util_ids[0];
    let truncated = util_ids[4];
    std::fs::write(
        dir.join(format!("events/run-{garbage}.parquet")),
        b"this is not parquet at all",
    )
    .unwrap();
    let p = dir.join(format!("events/run-{truncated}.parquet"));
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();

    let a = bin().arg("report").arg(&dir).assert().success();
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    for id in [garbage, truncated] {
        assert!(
            stderr.contains(&format!("run {id} excluded"))
                && stderr.contains(&format!("run-{id}.parquet")),
            "stderr names run {id} and its file: {stderr}"
        );
    }
    let md = std::fs::read_to_string(dir.join("report/report.md")).unwrap();
    assert!(md.contains("## Excluded runs"), "{md}");
    assert!(md.contains(&format!("- run {garbage} excluded: ")), "{md}");
    assert!(
        md.contains(&format!("- run {truncated} excluded: ")),
        "{md}"
    );
    assert!(md.contains("2 excluded)"), "{md}");
    let warnings = md.split("## Warnings").nth(1).unwrap_or_default();
    assert!(warnings.contains("\n- excluded (2 runs): "), "{md}");
    let csv = std::fs::read_to_string(dir.join("report/warning_runs.csv")).unwrap();
    for id in [garbage, truncated] {
        assert!(
            csv.contains(&format!("\nexcluded,{id},")),
            "warning_runs.csv lists run {id}: {csv}"
        );
    }
    // Everything else is still there: two util runs fewer, loss intact.
    assert_eq!(
        utilisation_runs(&dir.join("report/util.csv")),
        util_ids.len() - 2
    );
    let loss = std::fs::read_to_string(dir.join("report/loss.csv")).unwrap();
    assert!(loss.lines().count() > 1, "{loss}");
}

#[test]
fn nothing_usable_left_is_an_error_naming_the_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    let util_ids = write_results(&dir);
    // Keep only the util runs (whose files are then damaged) in runs.csv.
    let text = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_owned();
    let kept: Vec<&str> = lines.filter(|l| l.contains(",util,")).collect();
    assert_eq!(kept.len(), util_ids.len());
    std::fs::write(
        dir.join("runs.csv"),
        format!("{header}\n{}\n", kept.join("\n")),
    )
    .unwrap();
    std::fs::remove_file(dir.join("phases.csv")).unwrap();
    for id in &util_ids {
        std::fs::write(dir.join(format!("events/run-{id}.parquet")), b"").unwrap();
    }
    let a = bin().arg("report").arg(&dir).assert().failure();
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(stderr.contains("no usable run left"), "{stderr}");
    assert!(
        stderr.contains(&format!("run-{}.parquet", util_ids[0])),
        "{stderr}"
    );
}

/// Copies a committed result set (its files, not its report) to `to`.
fn copy_set(name: &str, to: &std::path::Path) {
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../results")
        .join(name);
    for entry in walk(&from) {
        let rel = entry.strip_prefix(&from).unwrap();
        if rel.starts_with("report") {
            continue;
        }
        let target = to.join(rel);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &target).unwrap();
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_cut_runs_csv_in_a_complete_set_is_said_in_the_answer_and_the_warnings() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    copy_set("20261126T-vm-check-builtin", &dir);
    // The header and the first 8 of its 20 runs: a file cut by hand.
    let runs = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    let kept: Vec<&str> = runs.lines().take(9).collect();
    std::fs::write(dir.join("runs.csv"), kept.join("\n") + "\n").unwrap();

    let a = bin().arg("report").arg(&dir).assert().success();
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        stderr.contains(
            "+- what perf sampling costs on this host (INCOMPLETE: 8 of 20 planned runs) --"
        ),
        "{stderr}"
    );
    let md = std::fs::read_to_string(dir.join("report/report.md")).unwrap();
    let warnings = md.split("## Warnings").nth(1).unwrap_or_default();
    assert!(
        warnings.contains(
            "- incomplete (12 runs): the manifest says `complete`, but runs.csv holds 8 of the \
             20 planned runs: the file was cut or edited"
        ),
        "{warnings}"
    );
    // The line counts them; the file names all twelve.
    let csv = std::fs::read_to_string(dir.join("report/warning_runs.csv")).unwrap();
    let incomplete: Vec<&str> = csv
        .lines()
        .filter(|l| l.starts_with("incomplete,"))
        .collect();
    assert_eq!(incomplete.len(), 12, "{csv}");
    assert!(incomplete[0].starts_with("incomplete,8,,"), "{csv}");
}

#[test]
fn a_file_given_as_the_results_directory_is_named_as_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("runs.csv");
    std::fs::write(&file, "run_id\n").unwrap();
    let a = bin().arg("report").arg(&file).assert().failure();
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        stderr.contains("is a file, not a results directory"),
        "{stderr}"
    );
}

/// A profiler set's box is the longest: cut short, it keeps its trust
/// line (the body is cut, never the verdict), and an incomplete one says
/// so in its title.
#[test]
fn a_cut_profiler_set_keeps_its_trust_line_and_says_incomplete() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    copy_set("20261126T-vm-perf-record-g", &dir);
    let runs = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    let n = runs.lines().count();
    let kept: Vec<&str> = runs.lines().take(n - 3).collect();
    std::fs::write(dir.join("runs.csv"), kept.join("\n") + "\n").unwrap();
    let a = bin().arg("report").arg(&dir).assert().success();
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    let boxed: Vec<&str> = stderr
        .lines()
        .skip_while(|l| !l.starts_with("+- what perf sampling costs"))
        .take_while(|l| l.starts_with('+') || l.starts_with('|'))
        .collect();
    assert!(boxed.len() <= 12, "{stderr}");
    assert!(boxed[0].contains("(INCOMPLETE: "), "{stderr}");
    assert!(
        boxed.iter().any(|l| l.contains("runs noisy")),
        "the trust line was cut: {stderr}"
    );
}
