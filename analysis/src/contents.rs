//! Sample contents as a sweep dimension (`driver sweep --sample`), and the
//! kernel's throttle predicted from what a sample costs.
//!
//! Every table of the report is computed on the runs of one contents, the
//! primary (the first the sweep was given; 0 Hz runs belong to all). Each
//! other contents gets the same analysis on its own runs, and
//! [`ContentsRow`] sets them side by side: handler time and
//! application-visible cost per sample, by contents and rate, with the
//! ratio to `perf-default`.

use std::collections::BTreeMap;

use crate::columns::{lo_hi, value};
use crate::load::{ResultSet, Run};
use crate::percost::PerSample;
use crate::row_types::UtilRow;
use crate::stats::{Estimate, distinct_sorted, grouped, mean_of};
use workload::work::WorkKind;

/// What the by-contents tables read of one configuration's analysis: its
/// util rows and its per-sample table, under its name.
#[derive(Debug, Clone, Copy)]
pub struct ConfigTables<'a> {
    /// The configuration ([`config_key`]).
    pub name: &'a str,
    /// Its Table 1.
    pub util: &'a [UtilRow],
    /// Its gaps design's table (None without gaps runs).
    pub per_sample: Option<&'a PerSample>,
}

/// The preset every other contents is compared with.
pub const REFERENCE: &str = "perf-default";

/// The configuration a run belongs to: its sample contents, and its
/// workload kind when that is not the article's loop ("callchain @
/// stack:32"). Every table is computed per configuration.
pub fn config_key(r: &Run) -> String {
    key(&r.contents, &r.workload)
}

/// A run's workload kind from its `workload` column: rows written before
/// kinds existed (empty) ran the loop; None for a name no kind parses.
pub fn work_kind(workload: &str) -> Option<WorkKind> {
    if workload.is_empty() {
        Some(WorkKind::Loop)
    } else {
        WorkKind::parse(workload).ok()
    }
}

/// Whether two `workload` names are the same kind (the same text when one
/// is not a kind).
fn same_workload(a: &str, b: &str) -> bool {
    match (work_kind(a), work_kind(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn key(sample: &str, workload: &str) -> String {
    if work_kind(workload) == Some(WorkKind::Loop) {
        sample.to_string()
    } else {
        format!("{sample} @ {workload}")
    }
}

/// The workload part of a configuration key ("loop" when absent).
pub fn workload_of(config: &str) -> &str {
    config.split_once(" @ ").map_or("loop", |(_, w)| w)
}

/// The sample-contents part of a configuration key.
pub fn sample_of(config: &str) -> &str {
    config.split_once(" @ ").map_or(config, |(s, _)| s)
}

/// The configurations of the sampling runs, in the order the sweep was
/// given them (manifest `options.workloads` x `options.samples`), then any
/// others by name.
pub fn contents_of(rs: &ResultSet) -> Vec<String> {
    let strs = |k: &str| -> Vec<String> {
        let values = rs.manifest.options[k].as_array().into_iter().flatten();
        values
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    let mut workloads = strs("workloads");
    if workloads.is_empty() {
        workloads.push(WorkKind::Loop.name());
    }
    let samples = strs("samples");
    let mut out: Vec<String> = workloads
        .iter()
        .flat_map(|w| samples.iter().map(|s| key(s, w)))
        .collect();
    let seen = distinct_sorted(rs.runs.iter().filter(|r| r.freq_hz > 0).map(config_key));
    out.retain(|c| seen.contains(c));
    for c in seen {
        if !out.contains(&c) {
            out.push(c);
        }
    }
    if out.is_empty() {
        out.push(results_format::LEGACY_SAMPLE.to_string());
    }
    out
}

/// The result set restricted to one configuration's sampling runs and the
/// 0 Hz runs of its workload (the baseline).
pub fn subset(rs: &ResultSet, config: &str) -> ResultSet {
    let workload = workload_of(config);
    let mut out = rs.clone();
    out.runs.retain(|r| {
        if r.freq_hz == 0 {
            same_workload(&r.workload, workload)
        } else {
            config_key(r) == config
        }
    });
    let ids: std::collections::BTreeSet<u32> = out.runs.iter().map(|r| r.run_id).collect();
    out.phases.retain(|p| ids.contains(&p.run_id));
    out
}

fn finite_or_zero(x: Option<f64>) -> f64 {
    x.filter(|x| x.is_finite()).unwrap_or(0.0)
}

/// One (configuration, rate) row of the table "what a sample costs, by
/// contents" (a row of by_contents.csv).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ContentsRow {
    /// The configuration: sample contents, " @ workload" unless the loop.
    pub sample: String,
    pub freq_hz: u64,
    /// Mean achieved rate of the util runs (else the gaps runs), Hz.
    pub achieved_hz: f64,
    /// Handler time per sample (util runs), ns, t interval over runs.
    #[serde(serialize_with = "lo_hi")]
    pub handler_ns: Option<Estimate>,
    /// handler_ns / perf-default's at the same rate (None on perf-default's
    /// own rows).
    #[serde(serialize_with = "value")]
    pub handler_ratio: Option<Estimate>,
    /// What one sample costs the application (gaps design: direct +
    /// after-effect), ns, t interval over runs.
    #[serde(rename = "application_ns", serialize_with = "lo_hi")]
    pub total_ns: Option<Estimate>,
    /// total_ns / perf-default's at the same rate.
    #[serde(rename = "application_ratio", serialize_with = "value")]
    pub total_ratio: Option<Estimate>,
    /// Of it, the after-effect (the loop's slowdown after the interrupt:
    /// caches, TLB), ns per sample.
    #[serde(rename = "after_effect_ns", serialize_with = "lo_hi")]
    pub after_ns: Option<Estimate>,
    /// Mean call-chain entries per sample (0: no call chain).
    pub callchain_mean: f64,
    /// Mean user-stack bytes copied per sample (0: no stack copy).
    pub stack_user_mean_bytes: f64,
    /// THROTTLE records over the contents' runs at this rate.
    pub throttled: u64,
}

/// a / b for independent estimates, with a normal interval from the delta
/// method (relative SEs added in quadrature); None when b is not positive.
pub fn ratio(a: &Estimate, b: &Estimate) -> Option<Estimate> {
    if b.value.is_nan() || b.value <= 0.0 || !a.value.is_finite() {
        return None;
    }
    let r = a.value / b.value;
    let rel = ((a.se / a.value).powi(2) + (b.se / b.value).powi(2)).sqrt();
    let se = r.abs() * rel;
    Some(Estimate::around(r, 1.96 * se, se, a.n.min(b.n)))
}

/// Builds the by-contents table from each contents' analysis.
pub fn rows(rs: &ResultSet, analyses: &[ConfigTables<'_>]) -> Vec<ContentsRow> {
    let mut out = Vec::new();
    for a in analyses {
        let sample = a.name;
        let gaps_rows = a.per_sample.map_or(&[][..], |ps| &ps.rows);
        let freqs = a.util.iter().map(|u| u.freq_hz);
        for f in distinct_sorted(freqs.chain(gaps_rows.iter().map(|r| r.freq_hz))) {
            let util = a.util.iter().find(|u| u.freq_hz == f);
            let gaps = gaps_rows.iter().find(|r| r.freq_hz == f);
            let runs: Vec<&Run> = rs
                .runs
                .iter()
                .filter(|r| r.ok() && r.freq_hz == f && config_key(r) == sample)
                .collect();
            let per_run = |g: fn(&Run) -> f64| mean_of(runs.iter().map(|r| g(r)));
            out.push(ContentsRow {
                sample: sample.to_string(),
                freq_hz: f,
                achieved_hz: util
                    .map(|u| u.achieved_hz)
                    .or(gaps.map(|g| g.achieved_hz))
                    .unwrap_or(f64::NAN),
                handler_ns: util.map(|u| u.per_sample_ns),
                total_ns: gaps.map(|g| g.total_ns),
                after_ns: gaps.map(|g| g.after_effect_ns),
                callchain_mean: per_run(|r| finite_or_zero(r.callchain_mean)),
                stack_user_mean_bytes: per_run(|r| finite_or_zero(r.stack_user_mean_bytes)),
                handler_ratio: None,
                total_ratio: None,
                throttled: runs.iter().map(|r| r.throttled).sum(),
            });
        }
    }
    // The reference: perf-default with the same workload, at the same rate.
    let key = |r: &ContentsRow| (workload_of(&r.sample).to_string(), r.freq_hz);
    let is_reference = |r: &ContentsRow| sample_of(&r.sample) == REFERENCE;
    let reference: BTreeMap<_, _> = (out.iter().filter(|r| is_reference(r)))
        .map(|r| (key(r), (r.handler_ns, r.total_ns)))
        .collect();
    for row in out.iter_mut().filter(|r| !is_reference(r)) {
        if let Some((h, t)) = reference.get(&key(row)) {
            row.handler_ratio = row.handler_ns.zip(*h).and_then(|(a, b)| ratio(&a, &b));
            row.total_ratio = row.total_ns.zip(*t).and_then(|(a, b)| ratio(&a, &b));
        }
    }
    out
}

/// The host's settings the throttle depends on (from the manifest's host
/// facts, read when the sweep started).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ThrottleLimits {
    /// kernel.perf_event_max_sample_rate, Hz.
    pub max_sample_rate: u64,
    /// kernel.perf_cpu_time_max_percent (0 or 100: no handler-time limit).
    pub cpu_time_max_percent: u64,
    /// CONFIG_HZ.
    pub hz: u64,
}

impl ThrottleLimits {
    /// From the manifest's `host` facts; None when one is missing.
    pub fn from_manifest(rs: &ResultSet) -> Option<ThrottleLimits> {
        let host = &rs.manifest.host;
        Some(ThrottleLimits {
            max_sample_rate: host["perf_event_max_sample_rate"].as_u64()?,
            cpu_time_max_percent: host["perf_cpu_time_max_percent"].as_u64()?,
            hz: host["kernel_hz"].as_u64()?,
        })
    }

    /// The handler time the kernel allows per sample before it lowers
    /// perf_event_max_sample_rate: one sample period at the maximum rate
    /// times the percentage (2500 ns with the defaults 100 000 Hz and 25 %);
    /// None when the limit is off (0 or 100 %).
    pub fn allowed_ns(&self) -> Option<f64> {
        let p = self.cpu_time_max_percent;
        (p != 0 && p < 100 && self.max_sample_rate > 0)
            .then(|| 1e9 / self.max_sample_rate as f64 * p as f64 / 100.0)
    }

    /// The perf_event_max_sample_rate the kernel sets when the average
    /// handler time (over 128 samples) is `handler_ns` (kernel/events/core.c
    /// perf_sample_event_took: it allows 25 % more than the average, so
    /// max_samples_per_tick = (TICK_NSEC / 100 x percent) / (1.25 x avg),
    /// at least 1, and the rate is that times HZ). None when the handler
    /// fits and nothing changes.
    pub fn lowered_rate(&self, handler_ns: f64) -> Option<u64> {
        let allowed = self.allowed_ns()?;
        if handler_ns.is_nan() || handler_ns <= allowed || self.hz == 0 {
            return None;
        }
        let tick_ns = 1e9 / self.hz as f64;
        let budget = (tick_ns / 100.0).floor() * self.cpu_time_max_percent as f64;
        let threshold = handler_ns * 1.25;
        let per_tick = if threshold < budget {
            (budget / threshold).floor().max(1.0)
        } else {
            1.0
        };
        Some(per_tick as u64 * self.hz)
    }
}

/// The throttle predicted for one contents, beside what the sweep saw.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ThrottlePrediction {
    pub sample: String,
    /// The handler time used: the util runs' per-sample mean at the
    /// highest rate measured (the kernel averages the latest 128 samples).
    pub handler_ns: f64,
    /// ... measured at this rate, Hz.
    pub at_hz: u64,
    /// Handler time the kernel allows before lowering the rate, ns.
    pub allowed_ns: Option<f64>,
    /// perf_event_max_sample_rate after the kernel lowers it (None: it
    /// does not).
    pub lowered_rate_hz: Option<u64>,
    /// Rate above which sampling is throttled: the (lowered) maximum rate.
    pub throttle_above_hz: u64,
    /// Whether the handler-time limit applies to this host's event: the
    /// kernel measures handler time only in PMU interrupt handlers, so on
    /// cpu-clock the lowering is what a PMU host with this handler time
    /// would do.
    pub applies_here: bool,
    /// Throttle records the sweep saw with this contents, by requested rate.
    pub observed: Vec<(u64, u64, f64)>,
}

/// Predicts the throttle for each contents from its util rows.
pub fn predict_throttle(
    rs: &ResultSet,
    limits: &ThrottleLimits,
    analyses: &[ConfigTables<'_>],
    hardware_event: bool,
) -> Vec<ThrottlePrediction> {
    let predict = |a: &ConfigTables<'_>| {
        let sample = a.name;
        let measured = a.util.iter().filter(|u| u.per_sample_ns.value.is_finite());
        let top = measured.max_by_key(|u| u.freq_hz)?;
        let lowered = limits.lowered_rate(top.per_sample_ns.value);
        let runs = rs
            .runs
            .iter()
            .filter(|r| r.ok() && r.freq_hz > 0 && config_key(r) == sample);
        let observed = grouped(runs.map(|r| (r.freq_hz, r)));
        Some(ThrottlePrediction {
            sample: sample.to_string(),
            handler_ns: top.per_sample_ns.value,
            at_hz: top.freq_hz,
            allowed_ns: limits.allowed_ns(),
            lowered_rate_hz: lowered,
            throttle_above_hz: lowered
                .map_or(limits.max_sample_rate, |l| l.min(limits.max_sample_rate)),
            applies_here: hardware_event,
            observed: observed
                .into_iter()
                .map(|(f, runs)| {
                    let achieved = runs.iter().map(|r| r.achieved_hz);
                    let throttled = runs.iter().map(|r| r.throttled).sum();
                    (f, throttled, mean_of(achieved.filter(|a| a.is_finite())))
                })
                .collect(),
        })
    };
    analyses.iter().filter_map(predict).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ThrottleLimits {
        ThrottleLimits {
            max_sample_rate: 100_000,
            cpu_time_max_percent: 25,
            hz: 250,
        }
    }

    #[test]
    fn allowed_time_is_a_quarter_of_the_period_by_default() {
        assert_eq!(limits().allowed_ns(), Some(2500.0));
        for p in [0, 100] {
            let l = ThrottleLimits {
                cpu_time_max_percent: p,
                ..limits()
            };
            assert_eq!(l.allowed_ns(), None);
            assert_eq!(l.lowered_rate(1e6), None);
        }
    }

    #[test]
    fn lowering_follows_perf_sample_event_took() {
        // Fits: nothing changes.
        assert_eq!(limits().lowered_rate(2400.0), None);
        // 4000 ns: tick 4 ms, budget 40 000 x 25 = 1 000 000 ns per tick,
        // threshold 5000 ns: 200 samples per tick, x 250 = 50 000 Hz.
        assert_eq!(limits().lowered_rate(4000.0), Some(50_000));
        // Longer than the whole budget: one sample per tick.
        assert_eq!(limits().lowered_rate(2e6), Some(250));
    }

    #[test]
    fn ratio_carries_both_errors() {
        let a = Estimate {
            value: 3.0,
            lo: 2.0,
            hi: 4.0,
            se: 0.3,
            n: 5,
        };
        let b = Estimate {
            value: 1.5,
            lo: 1.0,
            hi: 2.0,
            se: 0.15,
            n: 4,
        };
        let r = ratio(&a, &b).unwrap_or(Estimate::point(f64::NAN, 0));
        assert!((r.value - 2.0).abs() < 1e-12);
        assert!((r.se - 2.0 * (0.01f64 + 0.01).sqrt()).abs() < 1e-12);
        assert_eq!(r.n, 4);
        assert!(ratio(&a, &Estimate::point(0.0, 3)).is_none());
    }

    #[test]
    fn configuration_keys_use_the_workload_kind() {
        // Rows written before kinds existed (empty) ran the loop.
        assert_eq!(key("callchain", ""), "callchain");
        assert_eq!(key("callchain", "loop"), "callchain");
        assert_eq!(key("callchain", "stack:32"), "callchain @ stack:32");
        assert_eq!(key("time", "memory:8M"), "time @ memory:8M");
        // A name no kind parses is kept as it is.
        assert_eq!(key("time", "other"), "time @ other");
        assert!(same_workload("", "loop"));
        assert!(same_workload("memory:8M", "memory:8M"));
        assert!(!same_workload("loop", "stack:32"));
        assert!(!same_workload("command", "loop"));
        assert_eq!(work_kind("command"), Some(WorkKind::Command));
    }
}
