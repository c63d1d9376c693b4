//! The split design against the real kernel: sampling switched
//! in ABBA phases inside runs whose loop stamps its timeline. What holds
//! however busy the host is: each run wrote its phases and its gaps, the
//! sampler was on in the on phases and off in the others (a sample in an
//! off phase would mean the toggle and the timeline disagree), and the
//! report split every kept group. The parts' magnitudes are measured by
//! `driver sweep --experiment experiments/split.toml` on a quiet machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

#[test]
fn split_runs_switch_sampling_inside_a_stamped_run() {
    let _serial = common::one_at_a_time();
    if !common::perf_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("split");
    let o = common::sweep_into(
        &[
            "--design",
            "split",
            "--freqs",
            "1000",
            "--duration",
            "1s",
            "--phase",
            "100ms",
            "--reps",
            "2",
            "--no-util",
            "--no-host-look",
        ],
        &out,
    )
    .timeout(std::time::Duration::from_secs(120))
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let runs = driver::results::read_runs(&out).unwrap();
    assert_eq!(runs.len(), 4, "{runs:?}");
    for r in &runs {
        assert!(r.ok(), "{r:?}");
        assert_eq!(r.design, results_format::Design::Split);
        assert!(
            results_format::timeline::gaps_path(&out, r.run_id).exists(),
            "run {} has no gaps file",
            r.run_id
        );
    }
    let phases = driver::results::read_phases(&out).unwrap();
    for r in &runs {
        assert!(
            phases.iter().filter(|p| p.run_id == r.run_id).count() >= 4,
            "run {} has fewer than one group of phases",
            r.run_id
        );
    }
    // The driver read the counter halfway through every phase: inside
    // it, and with part of the phase's work before it.
    for p in &phases {
        assert!(
            p.start_ns < p.mid_ns && p.mid_ns < p.end_ns && p.mid_iterations <= p.iterations,
            "{p:?}"
        );
    }
    // Off phases hold no sample; the on phases at 1 kHz hold some.
    let mut rdr = csv::Reader::from_path(out.join("report").join("split_phases.csv")).unwrap();
    let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    let h = rdr.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let (freq, sampling, samples) = (col("freq_hz"), col("sampling"), col("samples"));
    assert!(!rows.is_empty());
    let on_samples: u64 = rows
        .iter()
        .filter(|r| &r[freq] == "1000" && &r[sampling] == "true")
        .map(|r| r[samples].parse::<u64>().unwrap())
        .sum();
    assert!(on_samples > 0, "no sample in any on phase");
    for r in rows.iter().filter(|r| &r[sampling] == "false") {
        assert_eq!(&r[samples], "0", "a sample in an off phase: {r:?}");
    }
    let split = std::fs::read_to_string(out.join("report").join("split.csv")).unwrap();
    assert!(
        split.lines().any(|l| l.starts_with("1000,")),
        "no 1 kHz row in split.csv:\n{split}"
    );
    let report = std::fs::read_to_string(out.join("report").join("report.md")).unwrap();
    assert!(report.contains("## The loss split: in the gaps and outside them"));
    // The section names the file with each phase's halves and mode change.
    assert!(report.contains("split_phases.csv"), "{report}");
    assert!(h.iter().any(|c| c == "mode_change"));
}
