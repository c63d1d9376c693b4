//! `analysis fleet` and `analysis summary` end to end: a fleet dataset of
//! summaries written with results_format's own writer, then the binary's
//! answer, report and faults (duplicates, a class of one, a later format
//! version, a set without a summary, a missing host, no summary at all).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::committed;

use std::path::{Path, PathBuf};
use std::process::Command;

use results_format::summary::{BudgetAnswer, SUMMARY_PARQUET, SummaryRow, write_summary};

fn analysis() -> Command {
    Command::new(env!("CARGO_BIN_EXE_analysis"))
}

/// A host's summary rows: 1000 and 4000 Hz costing `cost_ns`, its 1 %
/// answer `max_hz`.
fn rows(
    hostname: &str,
    model: &str,
    cost_ns: f64,
    max_hz: f64,
    started_at: i64,
) -> Vec<SummaryRow> {
    [1000i64, 4000]
        .iter()
        .map(|&f| {
            let mut r = SummaryRow {
                set: Some(format!("set-{hostname}-{started_at}")),
                started_at: Some(started_at),
                subject: Some("loop".into()),
                config_primary: Some(true),
                hostname: Some(hostname.into()),
                cpu_model_name: Some(model.into()),
                virtualised: Some(true),
                event: Some("cpu-clock".into()),
                freq_hz: Some(f),
                // The 4000 Hz row costs more: the 1000 Hz one must stand
                // for the host (nearest --at 1000).
                cost_per_sample_ns: Some(if f == 1000 { cost_ns } else { cost_ns * 3.0 }),
                cost_per_sample_lo_ns: Some(cost_ns * 0.9),
                cost_per_sample_hi_ns: Some(cost_ns * 1.1),
                ..Default::default()
            };
            for (stem, m) in [("0p1", max_hz / 10.0), ("1", max_hz), ("5", max_hz * 5.0)] {
                r.set_budget(
                    stem,
                    BudgetAnswer {
                        max_hz: Some(m),
                        rate_hz: None,
                        basis: Some("model".into()),
                        at_highest_measured: Some(false),
                        resolvable: Some(true),
                    },
                );
            }
            r
        })
        .collect()
}

fn put(root: &Path, host: &str, date: &str, rows: &[SummaryRow]) -> PathBuf {
    let set = rows[0].set.clone().unwrap();
    let dir = root
        .join(format!("host={host}"))
        .join(format!("date={date}"))
        .join(set);
    std::fs::create_dir_all(&dir).unwrap();
    write_summary(&dir.join(SUMMARY_PARQUET), rows).unwrap();
    dir
}

const DAY: i64 = 86_400_000_000;
const T0: i64 = 1_795_000_000_000_000;

fn json_of(root: &Path, extra: &[&str]) -> serde_json::Value {
    let out = analysis()
        .arg("fleet")
        .arg(root)
        .args(["--json", "--no-make"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "analysis fleet failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn class<'a>(j: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    j["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == name)
        .unwrap_or_else(|| panic!("no class {name} in {j}"))
}

#[test]
fn a_fleet_is_answered_per_class_with_its_faults_named() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // Class X: three hosts; a appears twice on one day (the newer counts).
    put(root, "a", "2026-11-26", &rows("a", "X", 9000.0, 100.0, T0));
    put(
        root,
        "a",
        "2026-11-26",
        &rows("a", "X", 1000.0, 1000.0, T0 + 3_600_000_000),
    );
    put(root, "b", "2026-11-26", &rows("b", "X", 2000.0, 500.0, T0));
    put(root, "c", "2026-11-26", &rows("c", "X", 4000.0, 250.0, T0));
    // Class Y: one host.
    put(root, "d", "2026-11-26", &rows("d", "Y", 3000.0, 333.0, T0));
    // A summary from a later version: skipped, its version named.
    let mut later = rows("f", "X", 1.0, 1.0, T0);
    let dir = put(root, "f", "2026-11-26", &later);
    later.iter_mut().for_each(|r| r.format_version = Some(99));
    let df = results_format::summary::summary_frame(&later).unwrap();
    let mut file = std::fs::File::create(dir.join(SUMMARY_PARQUET)).unwrap();
    polars::prelude::ParquetWriter::new(&mut file)
        .finish(&mut df.clone())
        .unwrap();
    // A host the playbook could not reach.
    let m = root.join("host=e").join("date=2026-11-26");
    std::fs::create_dir_all(&m).unwrap();
    std::fs::write(
        m.join("missing.json"),
        r#"{"host":"e","date":"2026-11-26","stage":"unreachable","reason":"ssh: connect refused"}"#,
    )
    .unwrap();
    // A partial fetch is never read.
    let partial = root
        .join("host=b")
        .join("date=2026-11-26")
        .join(".partial-x");
    std::fs::create_dir_all(&partial).unwrap();
    write_summary(
        &partial.join(SUMMARY_PARQUET),
        &rows("b", "X", 1e9, 1.0, T0),
    )
    .unwrap();

    let j = json_of(root, &[]);
    assert_eq!(j["fleet"]["hosts"], 4, "{j}");
    let x = class(&j, "X / vm / cpu-clock");
    assert_eq!(x["hosts"], 3);
    // costs 1000, 2000, 4000 at 1000 Hz: type-7 quantiles by hand.
    assert_eq!(x["cost_median_ns"], 2000.0);
    assert!((x["cost_p95_ns"].as_f64().unwrap() - 3800.0).abs() < 1e-9);
    assert_eq!(x["cost_max_ns"], 4000.0);
    // 1 % answers 1000, 500, 250: the 5th percentile 275, every host 250.
    let one = &x["budgets"][1];
    assert!((one["p95_host_max_hz"].as_f64().unwrap() - 275.0).abs() < 1e-9);
    assert_eq!(one["every_host_max_hz"], 250.0);
    assert_eq!(one["p95_host_rate_hz"], 269);
    let y = class(&j, "Y / vm / cpu-clock");
    assert_eq!(y["single"], true);
    assert_eq!(j["missing"][0]["host"], "e");
    let skipped = j["skipped"].to_string();
    assert!(skipped.contains("format_version 99"), "{skipped}");
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("host a appears 2 times on 2026-11-26"),
        "{notes}"
    );

    // The report: fleet.csv's fleet row, the answer box, the figure.
    let report = root.join("report");
    let csv = std::fs::read_to_string(report.join("fleet.csv")).unwrap();
    assert!(csv.lines().nth(1).unwrap().starts_with("fleet,4,"), "{csv}");
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("missing: e on 2026-11-26 (unreachable"), "{md}");
    assert!(md.contains("a class of one"), "{md}");
    assert!(report.join("fleet_cost_per_sample.svg").is_file());
    assert!(report.join("report.html").is_file());
    assert_eq!(
        std::fs::read_to_string(report.join("hosts.csv"))
            .unwrap()
            .lines()
            .count(),
        5
    );
}

#[test]
fn every_date_and_a_host_far_outside_its_class() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for (i, cost) in [1000.0, 1100.0, 1200.0, 1050.0, 950.0, 9000.0]
        .iter()
        .enumerate()
    {
        let h = format!("h{i}");
        put(
            root,
            &h,
            "2026-11-25",
            &rows(&h, "X", *cost, 1e7 / cost, T0),
        );
    }
    put(
        root,
        "h0",
        "2026-11-26",
        &rows("h0", "X", 1000.0, 1e4, T0 + DAY),
    );
    let newest = json_of(root, &[]);
    assert_eq!(newest["fleet"]["hosts"], 6);
    let out = &class(&newest, "X / vm / cpu-clock")["outliers"];
    assert_eq!(out.as_array().unwrap().len(), 1, "{out}");
    assert_eq!(out[0]["host"], "h5");
    let all = json_of(root, &["--all"]);
    assert_eq!(all["fleet"]["hosts"], 7);
    assert!(root.join("report").join("fleet_over_time.svg").is_file());
}

#[test]
fn bad_input_is_exit_2_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = analysis().arg("fleet").arg(tmp.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no result set with a usable summary"), "{err}");
    let out = analysis()
        .arg("fleet")
        .arg(tmp.path())
        .args(["--by", "colour"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--by `colour`"));
}

/// A committed set without a summary is made from its tables; written
/// with `analysis summary --into`, the fleet reads the same figures.
#[test]
fn a_set_without_summary_is_made_from_its_tables_as_summary_writes_it() {
    let set = committed::committed_sets()
        .into_iter()
        .find(|s| s.ends_with("20261126T-vm-check-builtin"))
        .expect("the committed set 20261126T-vm-check-builtin");
    let tmp = tempfile::tempdir().unwrap();
    let made_root = tmp.path().join("made");
    let copy = made_root.join("host=vm").join("date=2026-11-26").join("s");
    std::fs::create_dir_all(&copy).unwrap();
    for f in [
        "manifest.json",
        "runs.csv",
        "phases.csv",
        "timeline.csv",
        "recovery.csv",
    ] {
        if set.join(f).is_file() {
            std::fs::copy(set.join(f), copy.join(f)).unwrap();
        }
    }
    for d in ["gaps", "samples", "workload"] {
        if set.join(d).is_dir() {
            let to = copy.join(d);
            std::fs::create_dir_all(&to).unwrap();
            for e in std::fs::read_dir(set.join(d)).unwrap() {
                let e = e.unwrap();
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }
    let out = analysis()
        .arg("fleet")
        .arg(&made_root)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(made["made"], 1);
    let into = tmp.path().join("into");
    let out = analysis()
        .arg("summary")
        .arg(&copy)
        .arg("--into")
        .arg(&into)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = json_of(&into, &[]);
    assert_eq!(read["made"], 0);
    assert_eq!(
        made["fleet"]["cost_median_ns"],
        read["fleet"]["cost_median_ns"]
    );
    assert_eq!(made["fleet"]["budgets"], read["fleet"]["budgets"]);
    assert!(made["fleet"]["cost_median_ns"].as_f64().unwrap() > 0.0);
}

/// The second run takes unchanged summaries from ROOT/.fleet-cache and
/// gives the same answer; a summary rewritten since is read again.
#[test]
fn the_cache_serves_unchanged_summaries_and_rereads_changed_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for (i, cost) in [1000.0, 2000.0, 4000.0].iter().enumerate() {
        let h = format!("h{i}");
        put(
            root,
            &h,
            "2026-11-26",
            &rows(&h, "X", *cost, 1e6 / cost, T0),
        );
    }
    let first = json_of(root, &[]);
    assert_eq!(first["cached"], 0);
    assert!(root.join(".fleet-cache").join("rows.parquet").is_file());
    let second = json_of(root, &[]);
    assert_eq!(second["cached"], 3);
    assert_eq!(first["fleet"], second["fleet"]);
    assert_eq!(first["classes"], second["classes"]);
    // h2 measured again, cheaper: only its summary is read.
    std::thread::sleep(std::time::Duration::from_millis(20));
    put(
        root,
        "h2",
        "2026-11-26",
        &rows("h2", "X", 3000.0, 1e6 / 3000.0, T0),
    );
    let third = json_of(root, &[]);
    assert_eq!(third["cached"], 2);
    assert_eq!(third["fleet"]["cost_max_ns"], 3000.0);
    // --no-cache reads everything and leaves the cache alone.
    let fourth = json_of(root, &["--no-cache"]);
    assert_eq!(fourth["cached"], 0);
    assert_eq!(fourth["fleet"], third["fleet"]);
}

/// `analysis history`: a host's check history, one damaged file beside a
/// sound one; the answer names the damage by file and line, keeps the
/// sound file's checks, and writes its report; an empty folder is exit 2.
#[test]
fn analysis_history_reads_a_check_history_and_names_a_damaged_file() {
    let d = tempfile::tempdir().unwrap();
    let day = |h: i64| 1_795_737_600_000_000 + h * 3_600_000_000; // 2026-11-27T00:00Z + h
    let mut checks = Vec::new();
    for (h, cost) in [(0, 13_000.0), (2, 13_400.0), (26, 21_700.0), (28, 21_000.0)] {
        let mut r = rows("vm", "Xeon", cost, 700.0, day(h)).remove(0);
        r.freq_hz = Some(99);
        r.achieved_hz = Some(99.0);
        r.budget_pct = Some(1.0);
        r.cost_per_sample_lo_ns = Some(cost - 300.0);
        r.cost_per_sample_hi_ns = Some(cost + 300.0);
        checks.push(r);
    }
    results_format::history::append(d.path(), &checks[..2]).unwrap();
    // A cut line: history.csv is left as it is, the rest goes to history.1.csv.
    let first = d.path().join("history.csv");
    let text = std::fs::read_to_string(&first).unwrap();
    std::fs::write(&first, &text[..text.len() - 3]).unwrap();
    let a = results_format::history::append(d.path(), &checks[2..]).unwrap();
    assert!(a.path.ends_with("history.1.csv"));
    let out = analysis()
        .args(["history", d.path().to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(h["checks"].as_array().unwrap().len(), 2, "{h}");
    assert!(err.contains("history.csv: line 3"), "{err}");
    let held = h["held_every_hz"].as_f64().unwrap();
    assert!(
        (held - 1.0 / ((21_700.0 + 300.0) * 1e-7)).abs() < 1e-6,
        "{h}"
    );
    for f in [
        "history.md",
        "checks.csv",
        "periods.csv",
        "history_cost.svg",
    ] {
        assert!(d.path().join("history-report").join(f).is_file(), "{f}");
    }
    let empty = tempfile::tempdir().unwrap();
    let out = analysis()
        .args(["history", empty.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no check history"));
}

/// The files of the `date=` folders under `out`, by path: a hash of
/// their bytes.
fn tables(out: &Path) -> std::collections::BTreeMap<PathBuf, u64> {
    use std::hash::{Hash, Hasher};
    let mut t = std::collections::BTreeMap::new();
    for day in std::fs::read_dir(out).unwrap() {
        let day = day.unwrap().path();
        if !day
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("date=")
        {
            continue;
        }
        for f in std::fs::read_dir(day).unwrap() {
            let p = f.unwrap().path();
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::fs::read(&p).unwrap().hash(&mut h);
            t.insert(p, h.finish());
        }
    }
    t
}

fn compact(root: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let o = analysis()
        .arg("fleet")
        .arg(root)
        .arg("--compact")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

/// The figures `analysis fleet --json` gives, without what names the
/// files read.
fn figures(j: &serde_json::Value) -> (serde_json::Value, serde_json::Value) {
    (j["fleet"].clone(), j["classes"].clone())
}

#[test]
fn a_compacted_fleet_answers_as_its_landing_zone_and_compacts_idempotently() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, out) = (tmp.path().join("landing"), tmp.path().join("days"));
    let (d1, d2) = ("2026-11-27", "2026-11-28");
    for i in 0..6 {
        let model = if i % 2 == 0 { "EPYC" } else { "Xeon" };
        let cost = 5000.0 + 700.0 * i as f64;
        put(
            &root,
            &format!("h{i}"),
            d1,
            &rows(&format!("h{i}"), model, cost, 1900.0 - 50.0 * i as f64, T0),
        );
        put(
            &root,
            &format!("h{i}"),
            d2,
            &rows(&format!("h{i}"), model, cost * 1.1, 1800.0, T0 + DAY),
        );
    }
    // An older writer's summary, without columns added since: unified.
    let old = put(
        &root,
        "h9",
        d2,
        &rows("h9", "EPYC", 6100.0, 1700.0, T0 + DAY),
    );
    {
        use polars::prelude::*;
        let path = old.join(SUMMARY_PARQUET);
        let df = ParquetReader::new(std::fs::File::open(&path).unwrap()).finish();
        let mut df = df.unwrap().drop("drift_moved").unwrap();
        df = df.drop("budget_pct").unwrap();
        ParquetWriter::new(std::fs::File::create(&path).unwrap())
            .finish(&mut df)
            .unwrap();
    }
    // A damaged per-host file: named and left out; its day compacts.
    let bad = put(
        &root,
        "h8",
        d2,
        &rows("h8", "EPYC", 5000.0, 1900.0, T0 + DAY),
    );
    std::fs::write(bad.join(SUMMARY_PARQUET), b"PAR1 not a parquet file").unwrap();

    let o = compact(&root, &out, &[]);
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("host=h8") && said.contains("skipped"),
        "{said}"
    );
    let first = tables(&out);
    assert_eq!(first.len(), 2, "one table per day: {:?}", first.keys());
    let landing = json_of(&root, &["--out", tmp.path().join("r1").to_str().unwrap()]);
    let days = json_of(&out, &["--out", tmp.path().join("r2").to_str().unwrap()]);
    assert_eq!(figures(&landing), figures(&days));
    assert_eq!(days["fleet"]["hosts"], 7);
    let all =
        |r: &Path, o: &str| json_of(r, &["--all", "--out", tmp.path().join(o).to_str().unwrap()]);
    assert_eq!(figures(&all(&root, "r3")), figures(&all(&out, "r4")));

    // Twice: the same bytes. A temporary file left by a killed run is
    // ignored by readers and removed.
    let stale = out.join(format!("date={d1}")).join(".parquet-killed");
    std::fs::write(&stale, b"half").unwrap();
    assert_eq!(
        figures(&json_of(
            &out,
            &["--out", tmp.path().join("r5").to_str().unwrap()]
        )),
        figures(&days)
    );
    compact(&root, &out, &[]);
    assert!(!stale.exists());
    assert_eq!(tables(&out), first, "a second compaction changed a table");

    // A host that lands later is merged; a set whose landing files went
    // is kept; --date compacts that day only.
    put(
        &root,
        "h7",
        d2,
        &rows("h7", "Xeon", 9000.0, 900.0, T0 + DAY),
    );
    std::fs::remove_dir_all(root.join("host=h0").join(format!("date={d2}"))).unwrap();
    let o = compact(&root, &out, &["--date", d2]);
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains(&format!("{d2}: 8 sets (7 from the landing zone, 1 kept)")),
        "{said}"
    );
    let after = tables(&out);
    assert_eq!(
        after[&out.join(format!("date={d1}")).join("summaries.parquet")],
        first[&out.join(format!("date={d1}")).join("summaries.parquet")]
    );
    assert_eq!(
        json_of(&out, &["--out", tmp.path().join("r6").to_str().unwrap()])["fleet"]["hosts"],
        8
    );

    // Bad input: exit 2, one line naming the value.
    for args in [vec!["--date", "2026-13-01"], vec![]] {
        let target = if args.is_empty() {
            root.join("days")
        } else {
            out.clone()
        };
        let o = analysis()
            .arg("fleet")
            .arg(&root)
            .arg("--compact")
            .arg(&target)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
