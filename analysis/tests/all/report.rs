//! `report_dir` and the CLI on a synthetic results directory with known
//! utilisation and loss: numbers checked, not just files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::committed;

use crate::common::*;
use predicates::prelude::*;

fn read_csv(path: &std::path::Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let headers = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn num(row: &std::collections::HashMap<String, String>, key: &str) -> f64 {
    row[key]
        .parse()
        .unwrap_or_else(|_| panic!("{key} = {:?}", row[key]))
}

#[test]
fn report_has_known_util_and_loss() {
    let tmp = tempfile::tempdir().unwrap();
    // ANALYSIS_KEEP_REPORT=DIR keeps the synthetic results for inspection.
    let dir = match std::env::var_os("ANALYSIS_KEEP_REPORT") {
        Some(keep) => std::path::PathBuf::from(keep),
        None => tmp.path().join("20261123T100000Z-synth"),
    };
    write_results(&dir);
    let out = analysis::report_dir(&dir).map(|w| w.dir).unwrap();
    assert_eq!(out, dir.join("report"));

    // Table 1: util = f_kHz x 0.15 %, 1 call per sample, mean 1500 ns.
    let util = read_csv(&out.join("util.csv"));
    assert_eq!(util.len(), UTIL_FREQS.len());
    for (row, &f) in util.iter().zip(&UTIL_FREQS) {
        assert_eq!(num(row, "freq_hz") as u64, f);
        let want = DELTA * f as f64 / 1000.0;
        assert!((num(row, "util_pct") - want).abs() < 1e-9, "{row:?}");
        assert!(num(row, "util_lo_pct") < want && want < num(row, "util_hi_pct"));
        assert!((num(row, "calls_per_s") - f as f64).abs() < 1e-6);
        assert!((num(row, "mean_ns") - HANDLER_NS as f64).abs() < 1e-9);
        // local_timer intervals are 4000 ns each, one per sample.
        let lt = 4000.0 * f as f64 / 1e9 * 100.0;
        assert!((num(row, "local_timer_util_pct") - lt).abs() < 1e-9);
    }
    // Reference column present where the article measured.
    assert!((num(&util[1], "reference_2014_util_pct") - 0.5585349).abs() < 1e-12);

    // Table 2: classic loss = 0.2 % + 0.25 %/kHz.
    let loss = read_csv(&out.join("loss.csv"));
    let classic: Vec<_> = loss.iter().filter(|r| r["design"] == "classic").collect();
    assert_eq!(classic.len(), LOSS_FREQS.len());
    for row in &classic {
        let f = num(row, "freq_hz") as u64;
        assert!((num(row, "loss_pct") - loss_pct(f)).abs() < 1e-6, "{row:?}");
        assert!(!row["run4"].is_empty());
    }
    let paired: Vec<_> = loss.iter().filter(|r| r["design"] == "paired").collect();
    assert_eq!(paired.len(), 1);
    assert!(
        (num(paired[0], "loss_pct") - loss_pct(4000)).abs() < 1e-5,
        "{:?}",
        paired[0]
    );
    assert_eq!(num(paired[0], "n") as usize, 3);

    // Fits: delta exactly 0.15 %/kHz -> 1500 ns per sample; loss line.
    let fit: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("fit.json")).unwrap()).unwrap();
    assert_eq!(fit["units"]["x"], "achieved sample rate, kHz");
    let delta = fit["fits"]["util_origin"]["slope"].as_f64().unwrap();
    assert!((delta - DELTA).abs() < 1e-9, "{delta}");
    assert!((fit["fits"]["cost_per_sample_ns"].as_f64().unwrap() - 1500.0).abs() < 1e-5);
    let ll = &fit["fits"]["loss_line"];
    assert!(
        (ll["slope"].as_f64().unwrap() - LOSS_PER_KHZ_PCT).abs() < 1e-5,
        "{ll}"
    );
    assert!(
        (ll["intercept"].as_f64().unwrap() - LOSS_FIXED_PCT).abs() < 1e-5,
        "{ll}"
    );
    let ratio = fit["fits"]["loss_to_util_slope_ratio"].as_f64().unwrap();
    assert!((ratio - LOSS_PER_KHZ_PCT / DELTA).abs() < 1e-4, "{ratio}");

    // Tracing cost at 10 kHz is ~1.5 pp.
    let tracing = read_csv(&out.join("tracing.csv"));
    let t10 = tracing.iter().find(|r| r["freq_hz"] == "10000").unwrap();
    assert!(
        (num(t10, "tracing_cost_pp") - TRACING_EXTRA_PP).abs() < 0.05,
        "{t10:?}"
    );

    // report.md: key lines and warnings.
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let warnings = md.split("## Warnings").nth(1).unwrap();
    let warnings = warnings.split("\n## ").next().unwrap();
    for needle in [
        "- driver (1): cycles: ENOENT (no hardware PMU); fell back to cpu-clock\n",
        "- fallback (",
        "- failed (1 run): failed runs excluded",
        "- throttled (1 run): 3 PERF_RECORD_THROTTLE records at ",
        "- slow_rate (1 run): achieved sample rate below 90% of the request at 4000 Hz (down to 75%)",
        "- tracing (1): at 10000 Hz util runs",
        "- driver_cpu (1 run): the driver itself used more than 1% of a CPU while sampling (at most 5.0%, run 24)",
    ] {
        assert!(
            warnings.contains(needle),
            "warning `{needle}` missing in:\n{warnings}"
        );
    }
    // One line per kind, none over 160 characters.
    let lines: Vec<&str> = warnings.lines().filter(|l| l.starts_with("- ")).collect();
    assert!(lines.iter().all(|l| l.chars().count() <= 160), "{warnings}");
    let mut kinds: Vec<&str> = lines.iter().map(|l| l.split(' ').nth(1).unwrap()).collect();
    let n = kinds.len();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(kinds.len(), n, "{warnings}");
    assert!(!warnings.contains("at 1000 Hz util runs"));
    let runs_csv = std::fs::read_to_string(out.join("warning_runs.csv")).unwrap();
    assert!(
        runs_csv.starts_with("rule,run_id,value,warning\n"),
        "{runs_csv}"
    );
    assert!(
        runs_csv.contains("\ndriver_cpu,24,5.00% of a CPU,"),
        "{runs_csv}"
    );
    assert!(
        runs_csv.contains("\nslow_rate,26,3000 of 4000 Hz,"),
        "{runs_csv}"
    );
    // A warning about no run is a row too, whole with its remedy.
    assert!(
        runs_csv.contains("\ntracing,,,\"at 10000 Hz util runs")
            && runs_csv.contains("; loss is measured in loss runs only"),
        "{runs_csv}"
    );
    assert!(md.contains("delta = 0.1500 %/kHz"), "{md}");
    assert!(md.contains("= 1500 ns of handler CPU time per sample"));
    assert!(md.contains("0.157 %/kHz = 1574 ns per sample"));
    // The answer first: one line per budget before the warnings, the
    // reasoning after the summary.
    let recs = md.find("## Recommended sampling rates").unwrap();
    let warn = md.find("## Warnings").unwrap();
    let how = md.find("## How each recommendation was reached").unwrap();
    assert!(recs < warn && warn < how, "{md}");
    assert!(
        md[recs..warn].contains("- 1 % loss budget: sample at"),
        "{md}"
    );
    assert!(md[recs..warn].contains("- 0.1 % loss budget: "));
    assert!(md[recs..warn].contains("- 5 % loss budget: "));
    assert_eq!(md[recs..warn].matches("\n- ").count(), 3, "{md}");
    assert!(md[how..].contains("- 1 % budget: sample at"));

    // Plots through the plot module, linked from the report.
    for stem in [
        "util_vs_freq",
        "loss_vs_freq",
        "handler_durations",
        "paired_phases",
        "production_rates",
    ] {
        let svg = std::fs::read_to_string(out.join(format!("{stem}.svg"))).unwrap();
        assert!(svg.contains("<svg"), "{stem}.svg");
        assert!(out.join(format!("{stem}.png")).metadata().unwrap().len() > 1000);
        assert!(md.contains(&format!("]({stem}.svg)")), "{stem} not linked");
    }
    let svg = std::fs::read_to_string(out.join("util_vs_freq.svg")).unwrap();
    assert!(
        svg.contains("0.1500 %/kHz"),
        "fit label missing from the util plot"
    );
    // The production-rates plot holds the rates up to 4 kHz only, so 10 kHz
    // does not flatten them: its x axis has no 10k tick, the full one has.
    let tick = ">\n10k\n<";
    assert!(svg.contains(tick), "no 10k tick on the full util plot");
    let svg = std::fs::read_to_string(out.join("production_rates.svg")).unwrap();
    assert!(svg.contains("production rates"), "title");
    assert!(svg.contains("handler utilisation"), "util series");
    assert!(!svg.contains(tick), "10 kHz on the production-rates axis");
}

#[test]
fn missing_and_corrupt_files_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    let util_ids = write_results(&dir);
    // A damaged or missing events file excludes its run, named with the
    // reason; the rest is reported (analysis/tests/all/corrupt.rs).
    let victim = dir.join(format!("events/run-{}.parquet", util_ids[0]));
    let excluded = |dir: &std::path::Path| {
        let rs = analysis::load::load(dir).unwrap();
        analysis::pipeline::analyse(&rs).unwrap().quality.excluded
    };
    std::fs::write(&victim, b"not parquet").unwrap();
    let x = excluded(&dir);
    assert_eq!(x.len(), 1, "{x:?}");
    assert_eq!(x[0].run_id, util_ids[0] as u32);
    assert!(
        x[0].reason.contains(&victim.display().to_string()) && x[0].reason.contains("corrupt"),
        "{x:?}"
    );
    std::fs::remove_file(&victim).unwrap();
    let x = excluded(&dir);
    assert!(
        x.len() == 1
            && x[0].reason.contains(&victim.display().to_string())
            && x[0].reason.contains("missing"),
        "{x:?}"
    );
    analysis::report_dir(&dir).map(|w| w.dir).unwrap();

    let m = dir.join("manifest.json");
    let text = std::fs::read_to_string(&m)
        .unwrap()
        .replace("\"format_version\": 1", "\"format_version\": 2");
    std::fs::write(&m, text).unwrap();
    let err = analysis::report_dir(&dir)
        .map(|w| w.dir)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("format_version 2") && err.contains("manifest.json"),
        "{err}"
    );
}

#[test]
fn cli_recommend_and_compare() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("20261123T100000Z-synth");
    write_results(&dir);

    // Loss at 1000 Hz 0.45 %, at 4000 Hz 1.2 %: the answer lies between.
    let rec = recommend_json(&dir, "1%");
    assert_eq!(rec["measured_hz"].as_u64(), Some(1000));
    let max = rec["max_hz"].as_f64().unwrap();
    assert!(max > 1000.0 && max < 4000.0, "{rec}");
    // 1 % = 0.2 + 0.25 f  ->  f = 3.2 kHz on the line itself; the upper
    // band must be below that.
    assert!(max <= 3200.0 + 1e-6, "{rec}");
    let s = rec["rate_hz"].as_u64().unwrap();
    assert!(
        s as f64 <= max && (2..s).all(|d| !s.is_multiple_of(d)),
        "{s} not a prime below {max}"
    );

    bin()
        .args(["recommend", dir.to_str().unwrap(), "--budget", "1%"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("sample at").and(predicate::str::contains("95% upper bound")),
        );

    bin()
        .args(["recommend", dir.to_str().unwrap(), "--budget", "0.01%"])
        .assert()
        .success()
        .stdout(predicate::str::contains("cannot tell"));

    // 0.3 %: resolvable (+-0.13 pp at 1000 Hz) but even 1000 Hz exceeds it.
    bin()
        .args(["recommend", dir.to_str().unwrap(), "--budget", "0.3%"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("from the loss upper bounds alone").and(
                predicate::str::contains("Even at the lowest measured rate, 1000 Hz"),
            ),
        );

    let out = bin()
        .args(["report", dir.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::ends_with("report/report.md\n"))
        .get_output()
        .clone();
    // The answer box on stderr, at most 12 lines of 100 columns, and the
    // same box at the top of report.md.
    let err = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = err
        .lines()
        .skip_while(|l| !l.starts_with("+- what perf sampling costs"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(
        (4..=12).contains(&lines.len()) && lines.last().unwrap().starts_with("+--"),
        "{err}"
    );
    assert!(lines.iter().all(|l| l.chars().count() <= 100), "{err}");
    assert!(err.contains("highest rate within 0.1 %: "), "{err}");
    assert!(err.contains("trust: "), "{err}");
    let md = std::fs::read_to_string(dir.join("report/report.md")).unwrap();
    let head: String = md.lines().take(4).collect::<Vec<_>>().join("\n");
    assert!(
        head.contains("```text\n+- what perf sampling costs"),
        "{head}"
    );
    assert!(md.contains(lines[1]), "{md}");

    bin()
        .args(["recommend", dir.to_str().unwrap(), "--budget", "lots"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--budget `lots`"));

    let dir2 = tmp.path().join("second");
    write_results(&dir2);
    bin()
        .args(["compare", dir.to_str().unwrap(), dir2.to_str().unwrap()])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("2014 reference")
                .and(predicate::str::contains("0.1574"))
                .and(predicate::str::contains("0.1500 [")),
        );
    let out = bin()
        .args(["compare", "--csv", dir.to_str().unwrap()])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let first = text.lines().next().unwrap();
    assert_eq!(first, "quantity,20261123T100000Z-synth,2014 reference");
    assert!(text.contains("util % at 4000 Hz"));

    // Not a results directory is bad input: exit 2, as for bad flags.
    for command in ["report", "recommend", "compare"] {
        bin()
            .args([command, tmp.path().join("nope").to_str().unwrap()])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("nope"));
    }
}

/// Timing of the whole report on a default-sized sweep (run explicitly:
/// `cargo test --release -p analysis --test report -- --ignored`); the
/// goal is under 2 s. Ignored by default because a shared machine's timing
/// is noise-prone.
#[test]
#[ignore]
fn report_speed_default_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sweep");
    let rows = write_default_sweep(&dir);
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = std::time::Instant::now();
        analysis::report_dir(&dir).map(|w| w.dir).unwrap();
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    eprintln!(
        "report on 55 runs, {rows} interval rows: min {:.3} s, median {:.3} s, max {:.3} s",
        times[0], times[2], times[4]
    );
    let md = std::fs::read_to_string(dir.join("report/report.md")).unwrap();
    let util = std::fs::read_to_string(dir.join("report/util.csv")).unwrap();
    assert!(util.contains("\n100000,5,100000,"), "{util}");
    assert!(md.contains("- util.csv: Table 1"), "{md}");
    assert!(times[2] < 2.0, "median {:.3} s", times[2]);
}

/// The first row at 100 Hz of a report CSV, by column name.
fn row_at_100_hz(csv_path: &std::path::Path) -> std::collections::HashMap<String, String> {
    let mut r = csv::Reader::from_path(csv_path).unwrap();
    let h = r.headers().unwrap().clone();
    r.records()
        .map(Result::unwrap)
        .map(|row| {
            h.iter()
                .zip(row.iter())
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect::<std::collections::HashMap<_, _>>()
        })
        .find(|row| row["freq_hz"] == "100")
        .unwrap()
}

/// `analysis compare` leads with what each report answers and uses each
/// report's own intervals: its rate rows are the answer boxes' rates, its
/// cost rows the per-sample table's totals, its loss the interval over runs.
#[test]
fn compare_shows_each_sets_answer_and_cost_as_its_report_does() {
    let sets = ["20261126T0217Z-vm", "20261126T-vm-check-builtin"];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let dirs: Vec<String> = sets
        .iter()
        .map(|s| root.join(s).to_str().unwrap().to_owned())
        .collect();
    let out = bin()
        .arg("compare")
        .args(&dirs)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let cells = |quantity: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("| {quantity} |")))
            .unwrap_or_else(|| panic!("no row {quantity}: {text}"));
        line.trim_matches('|')
            .split('|')
            .skip(1)
            .map(|c| c.trim().to_owned())
            .collect()
    };
    // The first row after the header is the 0.1 % answer.
    assert!(
        text.lines()
            .nth(2)
            .unwrap()
            .starts_with("| highest rate within 0.1 % loss |"),
        "{text}"
    );
    for (i, set) in sets.iter().enumerate() {
        let answer = std::fs::read_to_string(root.join(set).join("report/answer.txt")).unwrap();
        let rate = &cells("highest rate within 1 % loss")[i];
        assert!(
            answer.contains(&format!("1 %: {rate}")),
            "{set}: {rate} not in {answer}"
        );
        // The 100 Hz cost is the per-sample table's total, rounded.
        let row = row_at_100_hz(&root.join(set).join("report/per_sample.csv"));
        let total: f64 = row["total_ns"].parse().unwrap();
        let cost = &cells("cost per sample ns at 100 Hz")[i];
        assert!(
            cost.starts_with(&format!("{total:.0} [")),
            "{set}: {cost} vs {total}"
        );
    }
    // A profiler's column: its answer box's rate too.
    let profiler_set = "20261126T-vm-check-perf-record";
    let out = bin()
        .arg("compare")
        .arg(root.join(profiler_set))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text2 = String::from_utf8(out).unwrap();
    let answer =
        std::fs::read_to_string(root.join(profiler_set).join("report/answer.txt")).unwrap();
    let line = text2
        .lines()
        .find(|l| l.starts_with("| highest rate within 1 % loss |"))
        .unwrap();
    let rate = line.split('|').nth(2).unwrap().trim();
    assert!(
        !rate.is_empty() && answer.contains(&format!("1 %: {rate}")),
        "{rate} not in {answer}"
    );
    assert!(text2.contains("| sampling event | profiler: "), "{text2}");
    // The loss at 100 Hz with loss.csv's interval over runs, not over groups.
    let row = row_at_100_hz(&root.join(sets[0]).join("report/loss.csv"));
    let lo: f64 = row["loss_lo_by_run_pct"].parse().unwrap();
    let hi: f64 = row["loss_hi_by_run_pct"].parse().unwrap();
    assert!(
        cells("throughput loss % at 100 Hz")[0].ends_with(&format!("[{lo:.3}, {hi:.3}]")),
        "{text}"
    );
}

/// A budget every measured rate meets is answered with the highest measured
/// rate, said to be a floor, never a rate above the measured ones: for the
/// built-in sampler and for a profiler alike.
#[test]
fn a_budget_every_rate_meets_is_answered_at_the_highest_measured_rate() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    for set in [
        "20261126T-vm-check-builtin",
        "20261126T-vm-check-perf-record",
    ] {
        let j = recommend_json(&root.join(set), "50");
        assert_eq!(j["at_highest_measured"], true, "{set}: {j}");
        // Both sets measured up to 4 kHz.
        assert_eq!(j["max_hz"].as_f64(), Some(4000.0), "{set}: {j}");
    }
}

/// A looser budget never gets a lower rate: on every committed result set,
/// the recommended rate does not decrease as the budget grows (a 1 ms
/// command's set had answered 0.1 % with 997 Hz and 1 % with 97 Hz).
/// Only the sets git tracks (tests/committed): a user's own set in
/// results/ is not the test's to judge.
#[test]
fn the_recommended_rate_never_falls_as_the_budget_grows() {
    let budgets = [0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0];
    let mut checked = 0;
    for dir in committed::committed_sets() {
        let rs = analysis::load::load(&dir).unwrap();
        let a = analysis::pipeline::analyse(&rs).unwrap();
        if let Some(t) = &a.subject.profiler {
            let rates: Vec<f64> = budgets
                .iter()
                .map(|&b| {
                    analysis::subject::profiler::recommend(t, b)
                        .max_hz
                        .unwrap_or(0.0)
                })
                .collect();
            assert!(
                rates.windows(2).all(|w| w[0] <= w[1]),
                "{}: {rates:?}",
                dir.display()
            );
        } else {
            let rates: Vec<u64> = budgets
                .iter()
                .map(|&b| {
                    analysis::recommend::recommend(&a, b)
                        .ok()
                        .and_then(|r| r.rate_hz)
                        .unwrap_or(0)
                })
                .collect();
            assert!(
                rates.windows(2).all(|w| w[0] <= w[1]),
                "{}: {rates:?}",
                dir.display()
            );
        }
        checked += 1;
    }
    assert!(checked >= 10, "{checked} sets");
}

/// The tests that walk results/ read what git tracks there and nothing
/// else: in a scratch repository, a committed set is listed, a set nested
/// one level deeper is not (it belongs to its study), and a folder a
/// user's sweep left beside them, with a manifest that does not even
/// parse, is not listed either, so it cannot fail those tests. Outside a
/// checkout the listing is an error that says so, never an empty pass.
#[test]
fn committed_sets_leave_out_what_a_user_added() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git")
            .arg("-C")
            .arg(repo)
            .args([
                "-c",
                "user.name=test",
                "-c",
                "user.email=test@example.invalid",
            ])
            .args(args)
            .output()
            .expect("git runs");
        assert!(o.status.success(), "git {args:?}: {o:?}");
    };
    git(&["init", "-q"]);
    for (set, manifest) in [
        ("results/committed", "{}"),
        ("results/study/round-0", "{}"),
        ("results/mine", "{ not json"),
    ] {
        std::fs::create_dir_all(repo.join(set)).unwrap();
        std::fs::write(repo.join(set).join("manifest.json"), manifest).unwrap();
    }
    git(&["add", "results/committed", "results/study"]);
    git(&["commit", "-q", "-m", "two committed sets"]);
    assert_eq!(
        committed::sets_tracked_in(repo).unwrap(),
        [repo.join("results/committed")]
    );

    let plain = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(plain.path().join("results/mine")).unwrap();
    std::fs::write(plain.path().join("results/mine/manifest.json"), "{}").unwrap();
    let e = committed::sets_tracked_in(plain.path()).unwrap_err();
    assert!(e.contains("git checkout"), "{e}");
}
