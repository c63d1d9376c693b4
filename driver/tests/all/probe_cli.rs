//! `driver probe` through the binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use assert_cmd::Command;

#[test]
fn probe_json_reports_ready_and_a_working_self_test() {
    if !common::perf_ready() {
        return;
    }
    let out = Command::cargo_bin("driver")
        .unwrap()
        .args(["probe", "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("probe --json prints JSON");
    assert_eq!(v["ready"], true, "{stdout}");
    assert!(out.status.success());
    assert!(v["self_test"]["samples"].as_u64().unwrap() > 0, "{stdout}");
    assert!(
        v["self_test"]["handler_intervals"].as_u64().unwrap() > 0,
        "{stdout}"
    );
    let ev = v["sampling_event"].as_str().unwrap();
    assert!(ev == "cycles" || ev == "cpu-clock", "{ev}");
    assert_eq!(
        v["handler_source"],
        if ev == "cycles" { "nmi" } else { "hrtimer" }
    );
    assert!(v["cpus"].as_u64().unwrap() >= 1);
}

#[test]
fn probe_human_report_names_the_facts() {
    let out = Command::cargo_bin("driver")
        .unwrap()
        .args(["probe", "--no-self-test"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    for key in [
        "kernel",
        "sampling_event",
        "handler_source",
        "perf_event_paranoid",
        "ready",
    ] {
        assert!(stdout.contains(key), "missing {key} in {stdout}");
    }
}
