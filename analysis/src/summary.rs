//! A result set's `summary.parquet` rows ([`results_format::summary`]):
//! one per configuration and rate, with the host, the cost per sample,
//! the losses, the drift and each report budget's answer. Built from the
//! judged analysis, so a set without a summary gets the same rows from its
//! tables ("made from its tables").

use results_format::summary::{BudgetAnswer, HOST_TRAITS, SUMMARY_BUDGETS, SummaryRow};
use results_format::summary::{mitigations_word, pmu_kind};

use crate::load::{ResultSet, Run};
use crate::percost::{Agreement, PerSampleRow};
use crate::pipeline::Findings;
use crate::recommend::{BOUND_BASIS, MODEL_BASIS, Recommendation};
use crate::stats::{Estimate, distinct_sorted};

/// The word for an agreement in the summary (snake case, one per variant).
pub fn agreement_word(a: Agreement) -> &'static str {
    match a {
        Agreement::Agree => "agree",
        Agreement::Disagree => "disagree",
        Agreement::PairedNotResolved => "paired_not_resolved",
        Agreement::NoPredictionInterval => "no_prediction_interval",
    }
}

/// What a recommendation rests on, in one word: `model` (the loss model:
/// the gaps term and, where it grows with the rate, the outside term;
/// the reasons and `--json` say what was charged), `bounds` (upper bounds only), `throughput_paired` or
/// `throughput_classic` (no gaps design), or `none` (nothing within the
/// budget or nothing resolves). Summaries written before the one model
/// also hold `conservative` and `outside`.
pub fn basis_word(r: &Recommendation) -> &'static str {
    if r.max_hz.is_none() {
        "none"
    } else if r.bound_only || r.basis == BOUND_BASIS {
        "bounds"
    } else if r.basis == MODEL_BASIS {
        "model"
    } else if r.basis.contains("paired") {
        "throughput_paired"
    } else {
        "throughput_classic"
    }
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

fn est(e: &Estimate) -> (Option<f64>, Option<f64>, Option<f64>) {
    (finite(e.value), finite(e.lo), finite(e.hi))
}

/// The row's cost per sample (value, 95 % bounds) from `e`.
fn set_cost(row: &mut SummaryRow, e: &Estimate) {
    (
        row.cost_per_sample_ns,
        row.cost_per_sample_lo_ns,
        row.cost_per_sample_hi_ns,
    ) = est(e);
}

/// The row's predicted loss (value, 95 % bounds) from `e`.
fn set_predicted(row: &mut SummaryRow, e: &Estimate) {
    (
        row.predicted_loss_pct,
        row.predicted_loss_lo_pct,
        row.predicted_loss_hi_pct,
    ) = est(e);
}

/// The row's throughput loss (value, 95 % bounds) from `e`.
fn set_throughput(row: &mut SummaryRow, e: &Estimate) {
    (
        row.throughput_loss_pct,
        row.throughput_loss_lo_pct,
        row.throughput_loss_hi_pct,
    ) = est(e);
}

fn json_str(v: &serde_json::Value, key: &str) -> Option<String> {
    v.get(key)?.as_str().map(str::to_owned)
}

/// The row every row of the set starts from: the set, its host, its
/// subject.
fn base(rs: &ResultSet) -> SummaryRow {
    let m = &rs.manifest;
    let h = &m.host;
    let cpu_model_name = json_str(h, "cpu_model");
    let (command, profiler) = (rs.command_line(), rs.profiler_template());
    let subject = match (&command, &profiler) {
        (Some(_), _) => "command",
        (None, Some(_)) => "profiler",
        (None, None) => "loop",
    };
    SummaryRow {
        set: rs.dir.file_name().map(|n| n.to_string_lossy().into_owned()),
        tool_version: Some(m.tool_version.clone()),
        started_at: started_at_us(&m.started_at),
        subject: Some(subject.to_string()),
        hostname: json_str(h, "hostname"),
        hypervisor: json_str(h, "hypervisor"),
        cpus: h.get("cpus").and_then(|v| v.as_i64()),
        cpu_vendor: json_str(h, "cpu_vendor").or_else(|| {
            vendor_from_name(cpu_model_name.as_deref().unwrap_or_default()).map(str::to_owned)
        }),
        cpu_family: h.get("cpu_family").and_then(|v| v.as_i64()),
        cpu_model: h.get("cpu_model_number").and_then(|v| v.as_i64()),
        cpu_model_name,
        event: Some(m.event.clone()),
        profiler,
        command,
        ..host_traits(h)
    }
}

/// The host traits of a manifest's `host` as summary columns
/// ([`HOST_TRAITS`], with `virtualised`, `pmu` and the full
/// `vulnerabilities`); null where it lacks them (older sets).
pub fn host_traits(h: &serde_json::Value) -> SummaryRow {
    let virtualised = h.get("hypervisor_flag").and_then(|v| v.as_bool());
    let pmu = h.get("pmu_present").and_then(|v| v.as_bool());
    let vulns: Vec<(&String, &str)> = (h.get("vulnerabilities").and_then(|v| v.as_object()))
        .map(|v| {
            v.iter()
                .filter_map(|(k, t)| Some((k, t.as_str()?)))
                .collect()
        })
        .unwrap_or_default();
    let lines: Vec<String> = vulns.iter().map(|(k, t)| format!("{k}={t}")).collect();
    SummaryRow {
        kernel: json_str(h, "kernel"),
        virtualised,
        pmu,
        pmu_kind: pmu
            .zip(virtualised)
            .map(|(p, v)| pmu_kind(p, v).to_string()),
        clocksource: json_str(h, "clocksource"),
        smt_active: h.get("smt_active").and_then(|v| v.as_bool()),
        kernel_hz: h.get("kernel_hz").and_then(|v| v.as_i64()),
        preempt: json_str(h, "preempt"),
        cpuidle_driver: json_str(h, "cpuidle_driver"),
        cpuidle_governor: json_str(h, "cpuidle_governor"),
        microcode: json_str(h, "microcode"),
        mitigations: mitigations_word(vulns.iter().map(|l| l.1)).map(str::to_owned),
        vulnerabilities: (!lines.is_empty()).then(|| lines.join("|")),
        ..Default::default()
    }
}

/// The host traits of `h` that differ from the reference host's
/// ([`crate::reference::REFERENCE_HOST`]), each `name VALUE (reference
/// VALUE)`; None where the manifest has no traits (written before the
/// driver recorded the preemption model).
pub fn traits_unlike_reference(h: &serde_json::Value) -> Option<Vec<String>> {
    h.get("preempt")?;
    let reference = serde_json::from_str(crate::reference::REFERENCE_HOST).ok()?;
    let (ours, theirs) = (host_traits(h), host_traits(&reference));
    let text = |r: &SummaryRow, of: fn(&SummaryRow) -> Option<String>| {
        of(r).unwrap_or_else(|| "unknown".into())
    };
    let differ = HOST_TRAITS.iter().filter_map(|&(name, of)| {
        let (a, b) = (text(&ours, of), text(&theirs, of));
        (a != b).then(|| format!("{name} {a} (reference {b})"))
    });
    Some(differ.collect())
}

/// The vendor an older set's model name implies (sets written before the
/// driver recorded /proc/cpuinfo's `vendor_id`).
fn vendor_from_name(name: &str) -> Option<&'static str> {
    let vendors = [("Intel", "GenuineIntel"), ("AMD", "AuthenticAMD")];
    let (_, vendor) = vendors.into_iter().find(|(k, _)| name.contains(k))?;
    Some(vendor)
}

/// `2026-11-26T02:17:06Z` as µs since the epoch.
pub fn started_at_us(s: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.timestamp_micros())
}

/// `start` at `freq_hz`, with the counts of the runs of configuration
/// `config` there (ok or not; of every configuration where None), and
/// those runs.
fn row_at<'a>(
    rs: &'a ResultSet,
    start: &SummaryRow,
    config: Option<&str>,
    freq_hz: u64,
) -> (SummaryRow, Vec<&'a Run>) {
    let runs: Vec<&Run> = rs
        .runs
        .iter()
        .filter(|r| r.freq_hz == freq_hz)
        .filter(|r| config.is_none_or(|c| crate::contents::config_key(r) == c))
        .collect();
    let mut row = start.clone();
    row.freq_hz = Some(freq_hz as i64);
    row.noisy_runs = Some(runs.iter().filter(|r| r.noisy).count() as i64);
    row.throttled_runs = Some(runs.iter().filter(|r| r.throttled > 0).count() as i64);
    if row.scope.is_none() {
        row.scope = runs.first().map(|r| r.scope.to_string());
    }
    (row, runs)
}

fn answer(r: &Recommendation) -> BudgetAnswer {
    BudgetAnswer {
        max_hz: r.max_hz,
        rate_hz: r.rate_hz.map(|v| v as i64),
        basis: Some(basis_word(r).to_string()),
        at_highest_measured: Some(r.at_highest_measured),
        resolvable: Some(r.resolvable),
    }
}

/// Every summary row of `rs` from its analysis `a` (the primary
/// configuration's, with the others in `a.other_configs`).
pub fn summary_rows(rs: &ResultSet, a: &Findings) -> Vec<SummaryRow> {
    let mut rows = subject_rows(rs, a);
    if let Some(pct) = rs.manifest.options["budget_pct"].as_f64() {
        let model = a.budgets.model.as_ref();
        for row in &mut rows {
            // The model is the primary configuration's: other contents'
            // rows keep their own cost.
            let v = model
                .filter(|_| row.config_primary != Some(false))
                .and_then(|m| model_verdict(m, row, pct))
                .unwrap_or_else(|| check_verdict(row, pct));
            row.budget_pct = Some(pct);
            row.within_budget = v.within;
            row.budget_max_hz = v.max_hz;
        }
    }
    rows
}

/// A check's verdict on one row against a loss budget (%).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CheckVerdict {
    /// true: within budget at the prediction interval's upper end (else
    /// the confidence interval's); false: over it at the confidence
    /// interval's lower end; None: in between, or nothing measured.
    pub within: Option<bool>,
    /// The highest rate within the budget at that upper end, with the
    /// cost per sample as measured at this rate.
    pub max_hz: Option<f64>,
    /// The loss at the rate: the upper end used, and the lower end.
    pub loss_hi_pct: Option<f64>,
    pub loss_lo_pct: Option<f64>,
}

/// The verdict of `driver check` from the loss model
/// ([`crate::recommend::LossModel`], the one every recommendation reads):
/// the cost it charges at the row's rate (the gaps term, and the outside
/// term where a class resolves) times the rate delivered; within budget
/// when the upper end of its prediction fits, over when the lower end of
/// the mean's interval does not. None where the model has no cost at the
/// row's rate (then [`check_verdict`] reads the row's own cost).
pub fn model_verdict(
    model: &crate::recommend::LossModel,
    row: &SummaryRow,
    budget_pct: f64,
) -> Option<CheckVerdict> {
    let freq = row.freq_hz.and_then(|f| u64::try_from(f).ok())?;
    let i = model.gaps.iter().position(|p| p.freq_hz == freq)?;
    let charged = model.curve().points.get(i)?.cost_ns;
    let outside_lo = model.outside.map_or(0.0, |o| o.cost_ns.lo);
    let mean_lo = model.gaps_mean.get(i)?.lo + outside_lo;
    let rate = row.achieved_hz.filter(|r| *r > 0.0).unwrap_or(freq as f64);
    Some(verdict_of(
        Some(rate),
        Some(charged.hi).filter(|c| c.is_finite()),
        Some(mean_lo).filter(|c| c.is_finite()),
        budget_pct,
    ))
}

/// The verdict of `driver check` from a summary row alone (a set without a
/// loss model, or a row read back from disk): the loss at the rate is the
/// cost per sample times the rate delivered; within budget when its upper end
/// (the cost's prediction interval, which holds for one more run, else its
/// confidence interval) fits, over when even the confidence interval's
/// lower end does not.
pub fn check_verdict(row: &SummaryRow, budget_pct: f64) -> CheckVerdict {
    if let Some(v) = profiler_verdict(row, budget_pct) {
        return v;
    }
    let rate = row
        .achieved_hz
        .or(row.freq_hz.map(|f| f as f64))
        .filter(|r| *r > 0.0);
    let hi = row
        .cost_per_sample_pred_hi_ns
        .or(row.cost_per_sample_hi_ns)
        .filter(|c| c.is_finite());
    let lo = row.cost_per_sample_lo_ns.filter(|c| c.is_finite());
    verdict_of(rate, hi, lo, budget_pct)
}

/// A profiler's verdict from its measured loss (the excess gap time
/// against 0 Hz, with its 95 % interval), where the row has one. Its cost
/// per interruption times the nominal rate would charge each sample an
/// interruption of its own, which a profiler does not deliver one for one
/// (profiler.csv's tracking_pct: 56 % for `perf record -g` at 999 Hz on a
/// VM), and it is the ratio of two noisy counts: at 199 Hz it put the
/// upper end at 5.3 % where the loss measured 0.83 % [0.52, 1.15].
fn profiler_verdict(row: &SummaryRow, budget_pct: f64) -> Option<CheckVerdict> {
    row.profiler.as_ref()?;
    let freq = row.freq_hz.filter(|f| *f > 0)? as f64;
    let hi = row.predicted_loss_hi_pct.filter(|v| v.is_finite())?;
    let lo = row.predicted_loss_lo_pct.filter(|v| v.is_finite());
    Some(CheckVerdict {
        within: judged(Some(hi), lo, budget_pct),
        max_hz: (hi > 0.0).then(|| budget_pct / hi * freq),
        loss_hi_pct: Some(hi),
        loss_lo_pct: lo,
    })
}

/// The one rule of a check: within when the loss's upper end fits the
/// budget, over when even its lower end does not, else unresolved.
fn judged(loss_hi_pct: Option<f64>, loss_lo_pct: Option<f64>, budget_pct: f64) -> Option<bool> {
    match (loss_hi_pct, loss_lo_pct) {
        (Some(h), _) if h <= budget_pct => Some(true),
        (_, Some(l)) if l > budget_pct => Some(false),
        _ => None,
    }
}

/// The verdict at `rate` (Hz) from a cost per sample's upper and lower
/// ends (ns); without a rate, only the highest rate within the budget.
fn verdict_of(
    rate: Option<f64>,
    hi: Option<f64>,
    lo: Option<f64>,
    budget_pct: f64,
) -> CheckVerdict {
    // ns x Hz = 1e-9 of the time; as a percentage, x 1e-7.
    let loss = |c: Option<f64>| Some(c? * rate? * 1e-7);
    let (loss_hi_pct, loss_lo_pct) = (loss(hi), loss(lo));
    let max_hz = hi.filter(|c| *c > 0.0).map(|c| budget_pct / (c * 1e-7));
    CheckVerdict {
        within: judged(loss_hi_pct, loss_lo_pct, budget_pct),
        max_hz,
        loss_hi_pct,
        loss_lo_pct,
    }
}

fn subject_rows(rs: &ResultSet, a: &Findings) -> Vec<SummaryRow> {
    let base = base(rs);
    if let Some(t) = &a.subject.profiler {
        return profiler_rows(rs, &base, t, &a.budgets.profiler);
    }
    if base.command.is_some() {
        return command_rows(rs, &base, &a.subject.command);
    }
    let mut rows = Vec::new();
    let primary = a.contents.names.first().cloned().unwrap_or_default();
    let configs = std::iter::once((primary.as_str(), a))
        .chain(a.other_configs.iter().map(|(n, other)| (n.as_str(), other)));
    for (i, (name, cfg)) in configs.enumerate() {
        rows.extend(loop_rows(rs, &base, name, i == 0, cfg));
    }
    rows
}

fn loop_rows(
    rs: &ResultSet,
    base: &SummaryRow,
    config: &str,
    primary: bool,
    a: &Findings,
) -> Vec<SummaryRow> {
    let drift = a.gaps.per_sample.as_ref().and_then(|p| p.drift.as_ref());
    let mut start = base.clone();
    start.config_primary = Some(primary);
    start.contents = Some(crate::contents::sample_of(config).to_string());
    start.work_kind = Some(
        crate::contents::work_kind(crate::contents::workload_of(config)).map_or_else(
            || crate::contents::workload_of(config).to_string(),
            |k| k.name().to_string(),
        ),
    );
    if let Some(d) = drift {
        start.drift_low_pct = finite(d.low_pct);
        start.drift_high_pct = finite(d.high_pct);
        if let Some(t) = &d.trend_pct_per_h {
            (
                start.drift_trend_pct_per_h,
                start.drift_trend_lo_pct_per_h,
                start.drift_trend_hi_pct_per_h,
            ) = est(t);
        }
        start.drift_moved = Some(d.moved());
    }
    // The pipeline's answers at the report budgets, which are the
    // summary's in the same order (`recommend::BUDGETS_PCT`).
    for (&(_, stem), (_, r)) in SUMMARY_BUDGETS.iter().zip(&a.budgets.sampler) {
        if let Ok(r) = r {
            start.set_budget(stem, answer(r));
        }
    }
    // The rates: the gaps design's where it ran, else the loss table's.
    let per_sample: &[PerSampleRow] = a.gaps.per_sample.as_ref().map_or(&[], |p| &p.rows);
    let loss = a.tables.primary_loss();
    let mut freqs = distinct_sorted(per_sample.iter().map(|r| r.freq_hz));
    if freqs.is_empty() {
        freqs = distinct_sorted(loss.iter().map(|r| r.freq_hz).filter(|&f| f > 0));
    }
    freqs
        .into_iter()
        .map(|f| {
            let (mut row, runs) = row_at(rs, &start, Some(config), f);
            if let Some(p) = per_sample.iter().find(|r| r.freq_hz == f) {
                row.runs = Some(p.runs as i64);
                row.achieved_hz = finite(p.achieved_hz);
                set_cost(&mut row, &p.total_ns);
                row.cost_per_sample_pred_lo_ns = finite(p.total_pred_ns.lo);
                row.cost_per_sample_pred_hi_ns = finite(p.total_pred_ns.hi);
                row.cost_bounded = Some(p.after_effect_bound_ns.is_some());
                set_predicted(&mut row, &p.predicted_loss_pct);
                row.agreement = p.agreement.map(|x| agreement_word(x).to_string());
            } else {
                row.runs = Some(runs.iter().filter(|r| r.ok()).count() as i64);
            }
            if let Some(l) = loss.iter().find(|r| r.freq_hz == f) {
                set_throughput(&mut row, &l.trusted());
            }
            row
        })
        .collect()
}

/// A profiler recommendation's basis as one word: `profiler_throughput`,
/// `profiler_gaps` or `none`.
pub fn profiler_basis_word(r: &crate::subject::profiler::ProfilerRecommendation) -> &'static str {
    if r.max_hz.is_none() {
        "none"
    } else if r.basis.starts_with("throughput") {
        "profiler_throughput"
    } else {
        "profiler_gaps"
    }
}

fn profiler_rows(
    rs: &ResultSet,
    base: &SummaryRow,
    t: &crate::subject::profiler::ProfilerTable,
    recs: &[crate::subject::profiler::ProfilerRecommendation],
) -> Vec<SummaryRow> {
    let mut start = base.clone();
    start.config_primary = Some(true);
    // The pipeline's answers, at the summary's budgets in the same order
    // (`recommend::BUDGETS_PCT`).
    for (&(_, stem), r) in SUMMARY_BUDGETS.iter().zip(recs) {
        start.set_budget(
            stem,
            BudgetAnswer {
                max_hz: r.max_hz,
                rate_hz: r
                    .max_hz
                    .and_then(crate::recommend::nice_prime_below)
                    .map(|v| v as i64),
                basis: Some(profiler_basis_word(r).to_string()),
                at_highest_measured: Some(r.at_highest_measured),
                resolvable: Some(t.rows.iter().any(|x| x.resolved())),
            },
        );
    }
    t.rows
        .iter()
        .map(|p| {
            let (mut row, _) = row_at(rs, &start, None, p.freq_hz);
            row.runs = Some(p.blocks as i64);
            set_cost(&mut row, &p.cost_per_interruption_ns);
            set_predicted(&mut row, &p.gap_loss_pct);
            set_throughput(&mut row, &p.throughput_loss_pct);
            row
        })
        .collect()
}

fn command_rows(
    rs: &ResultSet,
    base: &SummaryRow,
    table: &[crate::subject::command::CommandRow],
) -> Vec<SummaryRow> {
    table
        .iter()
        .filter(|c| c.freq_hz > 0)
        .map(|c| {
            let (mut row, _) = row_at(rs, base, None, c.freq_hz);
            row.config_primary = Some(true);
            row.contents = Some(c.sample.clone());
            row.runs = Some(c.runs as i64);
            row.achieved_hz = finite(c.achieved_hz);
            if let Some(e) = &c.cost_per_sample_ns {
                set_cost(&mut row, e);
            }
            if let Some(e) = &c.loss_pct {
                set_throughput(&mut row, e);
            }
            row
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_host_lists_its_traits_unlike_the_reference_hosts() {
        let mut h: serde_json::Value =
            serde_json::from_str(crate::reference::REFERENCE_HOST).unwrap();
        assert_eq!(traits_unlike_reference(&h), Some(Vec::new()));
        h["preempt"] = "dynamic(full)".into();
        h["vulnerabilities"] = serde_json::json!({"mds": "Mitigation: Clear CPU buffers"});
        let d = traits_unlike_reference(&h).unwrap();
        assert_eq!(
            d,
            [
                "mitigations mitigated (reference mixed)",
                "preempt dynamic(full) (reference dynamic(none))"
            ]
        );
        let row = host_traits(&h);
        let v = "mds=Mitigation: Clear CPU buffers";
        assert_eq!(row.vulnerabilities.as_deref(), Some(v));
        assert_eq!(row.pmu_kind.as_deref(), Some("absent"));
        // A manifest from before the traits: nothing said.
        h.as_object_mut().unwrap().remove("preempt");
        assert_eq!(traits_unlike_reference(&h), None);
    }

    #[test]
    fn a_profiler_is_judged_on_its_measured_loss_not_cost_times_rate() {
        // The numbers of a `perf record -g` check at 199 Hz on a VM.
        let row = SummaryRow {
            profiler: Some("perf record -F {freq} -g -a".into()),
            freq_hz: Some(199),
            cost_per_sample_hi_ns: Some(264_827.0),
            cost_per_sample_lo_ns: Some(-35_150.0),
            predicted_loss_lo_pct: Some(0.517),
            predicted_loss_hi_pct: Some(1.146),
            ..SummaryRow::default()
        };
        let v = check_verdict(&row, 1.0);
        assert_eq!(
            (v.within, v.loss_hi_pct, v.loss_lo_pct),
            (None, Some(1.146), Some(0.517))
        );
        assert!((v.max_hz.unwrap() - 199.0 / 1.146).abs() < 1e-9);
        assert_eq!(check_verdict(&row, 1.2).within, Some(true));
        assert_eq!(check_verdict(&row, 0.5).within, Some(false));
        // Our sampler's row is still judged on its cost per sample.
        let ours = SummaryRow {
            profiler: None,
            ..row
        };
        assert_eq!(check_verdict(&ours, 1.2).within, None);
    }
}
