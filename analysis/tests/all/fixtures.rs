//! The crate's numerics against values computed independently with
//! numpy/scipy (tests/fixtures/gen_fixtures.py -> expected.json).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use analysis::fit::{fit_line, fit_origin};
use analysis::load::{Manifest, ResultSet, Run};
use analysis::pipeline::analyse_with;
use analysis::recommend::recommend;
use analysis::stats::{loss_delta, t_interval, t_ppf};
use results_format::{Design, RunKind, RunStatus, Status};
use serde_json::Value;

fn expected() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/expected.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn vec_f64(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

#[track_caller]
fn close(got: f64, want: f64, rel: f64, what: &str) {
    let tol = rel * want.abs().max(1e-12);
    assert!(
        (got - want).abs() <= tol,
        "{what}: got {got}, want {want} (rel tol {rel})"
    );
}

/// The cases of `key` in expected.json, which must be `n`: a fixture file
/// that lost cases (a generator change, a bad merge) fails here instead of
/// testing less in silence.
fn cases(e: &serde_json::Value, key: &str, n: usize) -> Vec<serde_json::Value> {
    let v = e[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in expected.json"));
    assert_eq!(
        v.len(),
        n,
        "expected.json {key}: {} cases, want {n}",
        v.len()
    );
    v.clone()
}

#[test]
fn t_quantiles_match_scipy() {
    for case in &cases(&expected(), "t_ppf", 21) {
        let (p, df, t) = (
            case["p"].as_f64().unwrap(),
            case["df"].as_f64().unwrap(),
            case["t"].as_f64().unwrap(),
        );
        close(t_ppf(p, df), t, 1e-9, &format!("t_ppf({p}, {df})"));
    }
}

#[test]
fn fits_match_numpy() {
    for case in &cases(&expected(), "fits", 5) {
        let name = case["name"].as_str().unwrap();
        let x = vec_f64(&case["x"]);
        let y = vec_f64(&case["y"]);
        let w = (!case["w"].is_null()).then(|| vec_f64(&case["w"]));
        let fit = if case["intercept"].as_bool().unwrap() {
            fit_line(&x, &y, w.as_deref()).unwrap()
        } else {
            fit_origin(&x, &y, w.as_deref()).unwrap()
        };
        let e = &case["expect"];
        close(
            fit.slope,
            e["slope"].as_f64().unwrap(),
            1e-9,
            &format!("{name} slope"),
        );
        close(
            fit.se_slope,
            e["se_slope"].as_f64().unwrap(),
            1e-7,
            &format!("{name} se_slope"),
        );
        close(
            fit.r2,
            e["r2"].as_f64().unwrap(),
            1e-9,
            &format!("{name} r2"),
        );
        // Lack of fit: chi^2 and its p from scipy.stats.chi2.sf (weighted
        // fits only; null, i.e. NaN here, without weights).
        match (e["chi2"].as_f64(), e["lack_of_fit_p"].as_f64()) {
            (Some(c), Some(p)) => {
                close(fit.chi2, c, 1e-9, &format!("{name} chi2"));
                // Relative to p, down to the 1e-23 of a fit that misses.
                close(fit.lack_of_fit_p, p, 1e-7, &format!("{name} lack-of-fit p"));
            }
            _ => assert!(fit.chi2.is_nan() && fit.lack_of_fit_p.is_nan(), "{name}"),
        }
        if !fit.through_origin {
            let ei = e["intercept"].as_f64().unwrap();
            assert!(
                (fit.intercept - ei).abs() <= 1e-9 * (1.0 + ei.abs()),
                "{name} intercept {} vs {ei}",
                fit.intercept
            );
            close(
                fit.se_intercept,
                e["se_intercept"].as_f64().unwrap(),
                1e-7,
                &format!("{name} se_intercept"),
            );
            close(
                fit.cov,
                e["cov"].as_f64().unwrap(),
                1e-6,
                &format!("{name} cov"),
            );
        }
        if let Some(lr) = case.get("linregress") {
            close(
                fit.slope,
                lr["slope"].as_f64().unwrap(),
                1e-9,
                "linregress slope",
            );
            close(
                fit.se_slope,
                lr["se_slope"].as_f64().unwrap(),
                1e-7,
                "linregress se",
            );
        }
    }
}

#[test]
fn intervals_match_scipy() {
    let e = expected();
    for case in &cases(&e, "t_intervals", 6) {
        let v = vec_f64(&case["values"]);
        let est = t_interval(&v);
        let x = &case["expect"];
        close(est.value, x["value"].as_f64().unwrap(), 1e-12, "mean");
        close(est.lo, x["lo"].as_f64().unwrap(), 1e-9, "t lo");
        close(est.hi, x["hi"].as_f64().unwrap(), 1e-9, "t hi");
    }
    for case in &cases(&e, "loss_delta", 5) {
        let est = loss_delta(&vec_f64(&case["on"]), &vec_f64(&case["off"]));
        let x = &case["expect"];
        close(est.value, x["value"].as_f64().unwrap(), 1e-9, "loss");
        close(est.lo, x["lo"].as_f64().unwrap(), 1e-7, "loss lo");
        close(est.hi, x["hi"].as_f64().unwrap(), 1e-7, "loss hi");
        close(est.se, x["se"].as_f64().unwrap(), 1e-7, "loss se");
    }
}

fn manifest() -> Manifest {
    Manifest {
        format_version: 1,
        status: Status::Complete,
        ..Manifest::default()
    }
}

#[test]
fn recommendation_matches_scipy() {
    let e = expected();
    let r = &e["recommend"];
    let duration_ns = r["duration_ns"].as_u64().unwrap();
    let mut runs = Vec::new();
    for (freq, counts) in r["runs"].as_object().unwrap() {
        for (rep, c) in counts.as_array().unwrap().iter().enumerate() {
            runs.push(Run {
                run_id: runs.len() as u32,
                kind: RunKind::Loss,
                design: Design::Classic,
                freq_hz: freq.parse().unwrap(),
                rep: rep as u32,
                duration_ns,
                iterations: c.as_u64().unwrap(),
                status: RunStatus::Ok,
                ..Run::default()
            });
        }
    }
    let rs = ResultSet {
        dir: PathBuf::from("/nonexistent"),
        manifest: manifest(),
        runs,
        phases: Vec::new(),
        unrecorded: Default::default(),
    };
    let a = analyse_with(&rs, BTreeMap::new());
    let fit = a.tables.fits.loss_line.unwrap();
    let x = &r["expect"];
    close(
        fit.slope,
        x["fit"]["slope"].as_f64().unwrap(),
        1e-6,
        "loss slope",
    );
    close(
        fit.intercept,
        x["fit"]["intercept"].as_f64().unwrap(),
        1e-6,
        "loss intercept",
    );
    let rec = recommend(&a, r["budget_pct"].as_f64().unwrap()).unwrap();
    assert_eq!(rec.measured_hz, x["measured_hz"].as_u64());
    assert!(rec.interpolated);
    close(
        rec.max_hz.unwrap(),
        x["max_hz"].as_f64().unwrap(),
        1e-6,
        "max_hz",
    );
    assert_eq!(rec.rate_hz, x["suggested_hz"].as_u64());
    assert_eq!(rec.reasoning.len(), 2);
}
