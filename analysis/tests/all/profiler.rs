//! `--profiler` result sets: a hand-made set whose numbers are
//! known, through the table, the recommendation, the report and the CLI.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::path::Path;

use crate::common::bin;
use analysis::subject::profiler::{profiler_table, recommend};
use results_format::timeline::TimelineRow;

const WINDOW_NS: u64 = 2_000_000_000;
/// Per block: (0 Hz episodes/s, 0 Hz gap share, 1 kHz extra episodes/s,
/// 1 kHz extra gap share): a cost per interruption of 10 us +- a little.
const BLOCKS: [(f64, f64, f64, f64); 4] = [
    (500.0, 0.005, 1000.0, 0.0100),
    (520.0, 0.006, 990.0, 0.0101),
    (480.0, 0.004, 1010.0, 0.0099),
    (510.0, 0.005, 1000.0, 0.0102),
];
const LOOP_RATE: f64 = 3.0; // iterations per ns at 0 Hz

fn write_set(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let mut runs = String::from(
        "run_id,kind,design,block,freq_hz,rep,event,requested_event,scope,cpu,duration_ns,iterations,wall_ns,window_ns,samples,achieved_hz,status,error,profiler_cpu_ns,profiler_cpus,profiler_peak_rss_kb,profiler_write_bytes\n",
    );
    let mut tl = csv::Writer::from_path(dir.join("timeline.csv")).unwrap();
    let mut id = 0u32;
    for (b, &(e0, g0, xe, xg)) in BLOCKS.iter().enumerate() {
        for (f, eps, share) in [(0u64, e0, g0), (1000, e0 + xe, g0 + xg)] {
            // The loop loses the gap share's excess in throughput.
            let rate = LOOP_RATE * (1.0 - (share - g0));
            let iterations = (rate * WINDOW_NS as f64) as u64;
            let prof = if f > 0 {
                format!("{},0;1,{},{}", 20_000_000 + b as u64, 12_000 + b, 4096 * b)
            } else {
                ",,,".to_string()
            };
            writeln!(
                runs,
                "{id},loss,gaps,{b},{f},{b},,cycles,system,1,{WINDOW_NS},{iterations},{WINDOW_NS},0,0,0,ok,,{prof}"
            )
            .unwrap();
            tl.serialize(TimelineRow {
                run_id: id,
                freq_hz: f,
                rep: b as u32,
                loop_start_ns: 1_000,
                loop_end_ns: 1_000 + WINDOW_NS,
                episodes: (eps * 2.0).round() as u64,
                gap_time_ns: (share * WINDOW_NS as f64).round() as u64,
                ..TimelineRow::default()
            })
            .unwrap();
            id += 1;
        }
    }
    tl.flush().unwrap();
    std::fs::write(dir.join("runs.csv"), runs).unwrap();
    std::fs::write(dir.join("recovery.csv"), "").unwrap();
    let manifest = serde_json::json!({
        "format_version": 1, "status": "complete", "host": {"hostname": "prof-synth"},
        "warnings": [], "plan": [], "seed": 1, "settings_changed": [],
        "options": {"profiler": "perf record -e cpu-clock -F {freq} -C {cpu} -o /dev/null", "cpu": 1},
    });
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
}

#[test]
fn the_profiler_table_has_the_known_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    write_set(&dir);
    let rs = analysis::load::load(&dir).unwrap();
    let t = profiler_table(&rs).unwrap().expect("a profiler set");
    assert_eq!(t.zero_runs, 4);
    assert_eq!(t.rows.len(), 1);
    let r = &t.rows[0];
    assert_eq!((r.freq_hz, r.blocks), (1000, 4));
    // Extra interruptions: the mean of 1000, 990, 1010, 1000.
    assert!(
        (r.excess_episodes_per_s.value - 1000.0).abs() < 1e-6,
        "{r:?}"
    );
    assert!((r.tracking_pct - 100.0).abs() < 1e-6);
    assert!(r.tracking_note().is_none());
    // Gap loss: the mean of 1.00, 1.01, 0.99, 1.02 % of the CPU.
    assert!((r.gap_loss_pct.value - 1.005).abs() < 1e-9, "{r:?}");
    // Cost: each block's extra gap time over its extra interruptions.
    let want: f64 = BLOCKS.iter().map(|b| b.3 / b.2 * 1e9).sum::<f64>() / 4.0;
    assert!(
        (r.cost_per_interruption_ns.value - want).abs() < 1e-6,
        "{r:?}"
    );
    assert!(r.cost_per_interruption_ns.lo < want && want < r.cost_per_interruption_ns.hi);
    // The throughput lost is the gap share: 1 - exp(-mean ln(r0 / rF)).
    assert!((r.throughput_loss_pct.value - 1.005).abs() < 0.01, "{r:?}");
    // Its own CPU: 20 ms (+b ns) over 2 s = 1 % of a CPU.
    assert!((r.profiler_cpu_pct.value - 1.0).abs() < 1e-5, "{r:?}");
    assert_eq!(r.profiler_cpus, "0,1");
    assert_eq!(r.profiler_peak_rss_kb, 12_003);
    assert!((r.profiler_write_bytes_per_s - 4096.0 * 1.5 / 2.0).abs() < 1e-9);

    // 1 % budget: the larger upper bound per kHz of the two resolving
    // losses decides; the rate is the budget over it.
    let rec = recommend(&t, 1.0);
    let k = r.gap_loss_pct.hi.max(r.throughput_loss_pct.hi);
    assert!((rec.loss_per_khz_pct - k).abs() < 1e-12, "{rec:?}");
    assert!((rec.max_hz.unwrap() - 1000.0 / k).abs() < 1e-9);
    assert!(rec.max_hz.unwrap() < 1000.0 && rec.max_hz.unwrap() > 900.0);
}

#[test]
fn a_profiler_that_interrupts_more_than_it_samples_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    write_set(&dir);
    let rs = analysis::load::load(&dir).unwrap();
    let mut t = profiler_table(&rs).unwrap().unwrap();
    let set = |t: &mut analysis::subject::profiler::ProfilerTable, v: f64, lo: f64, hi: f64| {
        let r = &mut t.rows[0];
        (
            r.excess_episodes_per_s.value,
            r.excess_episodes_per_s.lo,
            r.excess_episodes_per_s.hi,
        ) = (v, lo, hi);
        r.tracking_pct = v / r.freq_hz as f64 * 100.0;
    };
    set(&mut t, 1400.0, 1300.0, 1500.0);
    let note = t.rows[0].tracking_note().unwrap();
    assert!(
        note.contains("140 %") && note.contains("wake-ups"),
        "{note}"
    );
    set(&mut t, 800.0, 700.0, 900.0);
    let note = t.rows[0].tracking_note().unwrap();
    assert!(note.contains("less than asked"), "{note}");
    // An interval that holds the rate but is wider than the band: said to
    // be unresolved, with what resolves it.
    set(&mut t, 1000.0, 600.0, 1400.0);
    let note = t.rows[0].tracking_note().unwrap();
    assert!(note.contains("--reps"), "{note}");
    set(&mut t, 1000.0, 990.0, 1010.0);
    assert!(t.rows[0].tracking_note().is_none());
    // A rate whose interruptions the background hides does not set the
    // recommendation while another rate resolves.
    let mut hidden = t.rows[0].clone();
    hidden.freq_hz = 19;
    hidden.excess_episodes_per_s.lo = -100.0;
    hidden.gap_loss_pct.hi = 1.0;
    t.rows.insert(0, hidden);
    let rec = recommend(&t, 1.0);
    assert!(rec.basis.contains("at 1000 Hz"), "{rec:?}");
    assert!(rec.max_hz.unwrap() > 900.0, "{rec:?}");
}

#[test]
fn the_report_and_recommend_speak_of_the_profiler() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    write_set(&dir);
    let out = bin().arg("report").arg(&dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("profiler: perf record -e cpu-clock"),
        "{stderr}"
    );
    assert!(
        stderr.contains("one interruption costs the application 10.1 us [9.7, 10.4] at 1 kHz"),
        "{stderr}"
    );
    let md = std::fs::read_to_string(dir.join("report/report.md")).unwrap();
    let recs = md.find("## Recommended sampling rates").unwrap();
    let section = md.find("## Your profiler").unwrap();
    assert!(recs < section, "{md}");
    assert!(
        md[recs..section].contains("1 % loss budget: at most 9"),
        "{md}"
    );
    let csv = std::fs::read_to_string(dir.join("report/profiler.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(
        csv.lines().nth(1).unwrap().starts_with("1000,4,1000,"),
        "{csv}"
    );
    let out = bin()
        .args(["recommend", "--budget", "1%", "--json"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let hz = v["max_hz"].as_f64().unwrap();
    assert!(hz > 900.0 && hz < 1000.0, "{v}");
    // The one answer shape: a profiler's answer says rate_hz too.
    assert_eq!(v["kind"], "profiler", "{v}");
    assert_eq!(
        v["rate_hz"].as_u64(),
        analysis::recommend::nice_prime_below(hz),
        "{v}"
    );
    assert!(v["loss_per_khz_pct"].as_f64().is_some(), "{v}");
}

/// `recommend --for all --json` on a committed set: its profiler settings.
fn settings_of(set: &str) -> (serde_json::Value, Vec<serde_json::Value>) {
    let dir = crate::committed::repo_root().join("results").join(set);
    let out = bin()
        .args(["recommend", "--for", "all", "--json"])
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{set}: {stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = v["profiler_settings"].as_array().unwrap().clone();
    (v, s)
}

fn named<'a>(s: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    s.iter().find(|x| x["name"] == name).unwrap()
}

#[test]
fn each_profiler_setting_rests_on_what_it_samples_or_says_it_is_a_bound() {
    // perf record -g measured as itself: its own answer, pasted as -F.
    let (v, s) = settings_of("20261126T-vm-perf-record-g");
    let perf = named(&s, "perf");
    assert_eq!(perf["rests_on"], "--profiler perf");
    assert_eq!(perf["rate_hz"], v["rate_hz"]);
    let line = format!("perf record -F {} -g -a", v["rate_hz"]);
    assert_eq!(perf["line"], line.as_str());
    assert_eq!(
        (perf["upper_bound"].as_bool(), perf["stand_in"].as_bool()),
        (Some(false), Some(false))
    );
    // What the line costs: the charged loss, scaled down to the line's rate.
    let (rate, max) = (
        perf["rate_hz"].as_f64().unwrap(),
        perf["max_hz"].as_f64().unwrap(),
    );
    let loss = perf["loss_at_most_pct"].as_f64().unwrap();
    assert!((loss - rate / max).abs() < 1e-12 && loss <= 1.0, "{perf}");
    // perf's default 4000 Hz is above the highest rate within 1 %.
    assert!(max < 4000.0, "{perf}");
    assert_eq!(perf["default_over"], true);
    assert!(perf["default_loss_at_most_pct"].is_null());
    // Nothing there walks stacks in eBPF: no answer, and what measures it.
    let parca = named(&s, "parca");
    assert!(
        parca["rate_hz"].is_null() && parca["measure"].as_str().unwrap().contains("parca-agent")
    );
    // bpftrace's stacks stand in for the eBPF agents' unwinders.
    let (v, s) = settings_of("20261126T-vm-bpftrace-stacks");
    for name in ["parca", "otel", "alloy"] {
        let x = named(&s, name);
        assert_eq!(
            (x["rate_hz"].clone(), x["stand_in"].as_bool()),
            (v["rate_hz"].clone(), Some(true)),
            "{name}"
        );
    }
    assert_eq!(named(&s, "bpftrace")["stand_in"], false);
    // Parca's default 19 Hz is within: what it costs, scaled from the max.
    let parca = named(&s, "parca");
    let max = parca["max_hz"].as_f64().unwrap();
    assert!(max > 19.0, "{parca}");
    assert_eq!(parca["default_over"], false);
    let at_default = parca["default_loss_at_most_pct"].as_f64().unwrap();
    assert!((at_default - 19.0 / max).abs() < 1e-12, "{parca}");
    // bpftrace has no default rate: nothing said of one.
    assert!(named(&s, "bpftrace")["default_over"].is_null());
    // Our sampler's callchain contents are what perf record -g samples.
    let (_, s) = settings_of("20261126T-vm-builtin-callchain");
    assert_eq!(named(&s, "perf")["rests_on"], "contents callchain");
    // perf-default only: every setting is an upper bound, never silently.
    let (_, s) = settings_of("20261126T0217Z-vm");
    assert!(
        s.iter().all(|x| x["upper_bound"] == true
            && x["rests_on"] == "contents perf-default"
            && x["loss_at_most_pct"].is_null()
            && x["default_over"].is_null()),
        "{s:?}"
    );
}

#[test]
fn an_unknown_profiler_name_is_refused_with_the_names() {
    let dir = crate::committed::repo_root().join("results/20261126T0217Z-vm");
    let out = bin()
        .args(["recommend", "--for", "perff"])
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--for perff") && stderr.contains("perf, perf-dwarf, bpftrace, parca"),
        "{stderr}"
    );
}
