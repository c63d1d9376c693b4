//! `analysis latency`: the model's prediction for a request size, on a
//! synthetic gaps set whose per-sample cost is known, and its bad input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

/// The prediction grows with the rate, is resolved at p50 and p99 for a
/// 1 ms request, and at 10 kHz adds about 10 samples' cost to the median.
#[test]
fn latency_predicts_each_rate_and_percentile() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gaps");
    common::write_gaps_results(&dir, 0.0, false);
    let out = common::bin()
        .args(["latency", dir.to_str().unwrap(), "--size", "1ms"])
        .args([
            "--rates",
            "100,1000,10000",
            "--percentiles",
            "50,99",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), 6);
    let added = |rate: f64, p: f64| {
        let r = rows
            .iter()
            .find(|r| r["rate_hz"] == rate && r["percentile"] == p)
            .unwrap();
        assert_eq!(r["size_ns"], 1_000_000);
        r["added_ns"]["value"].as_f64().unwrap()
    };
    for p in [50.0, 99.0] {
        assert!(added(100.0, p) <= added(1000.0, p), "p{p}");
        assert!(added(1000.0, p) < added(10_000.0, p), "p{p}");
    }
    // 10 kHz: 10 samples in a 1 ms request, each costing the synthetic
    // per-sample cost (plus what the samples meet in the time they add).
    let ten = added(10_000.0, 50.0);
    let cost = common::GAPS_SAMPLE_EXCESS_NS as f64;
    assert!(ten > 9.0 * cost && ten < 12.0 * cost, "{ten} vs {cost}");
    let md = common::bin()
        .args(["latency", dir.to_str().unwrap(), "--size", "1ms"])
        .output()
        .unwrap();
    let text = String::from_utf8(md.stdout).unwrap();
    assert!(text.starts_with("| rate Hz | percentile |"), "{text}");
    assert_eq!(text.lines().count(), 2 + 9, "{text}");
}

/// Each bad input is exit 2 with one line that names it and the form.
#[test]
fn latency_refuses_bad_input_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("gaps");
    common::write_gaps_results(&dir, 0.0, false);
    let d = dir.to_str().unwrap();
    let no_gaps = tmp.path().join("plain");
    common::write_results(&no_gaps);
    for (args, said) in [
        (
            vec![d, "--size", "1"],
            "--size `1`: expected a time above 0 with its unit",
        ),
        (vec![d, "--size", "0ms"], "--size `0ms`"),
        (vec![d, "--size", "1ms", "--rates", "0"], "--rates 0"),
        (
            vec![d, "--size", "1ms", "--percentiles", "100"],
            "--percentiles 100",
        ),
        (vec![d, "--size", "10s"], "longer than the runs"),
        (
            vec![d, "--size", "1ns"],
            "shorter than the loop's stamp period",
        ),
        (
            vec![no_gaps.to_str().unwrap(), "--size", "1ms"],
            "has no gaps runs of our sampler",
        ),
    ] {
        let out = common::bin().arg("latency").args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}
