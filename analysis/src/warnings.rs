//! The report's warnings: everything that makes a number of the tables
//! doubtful (a fallback event, throttling, lost records, a slow rate, noisy
//! runs, runs that disagree, tracing that costs, missing runs), each with
//! the runs it concerns and what to read instead.

use std::collections::BTreeMap;

use results_format::{Design, RunKind, RunStatus, Status};

use crate::load::{ResultSet, Run};
use crate::tables::{ACHIEVED_RATE_WARN, Analysis, DRIVER_CPU_WARN, distinct};

fn ids(runs: &[&Run]) -> String {
    let v: Vec<String> = runs.iter().map(|r| r.run_id.to_string()).collect();
    v.join(", ")
}

/// Every warning of a report, in the order they are shown: the sweep's
/// status and the driver's own, then each check over the runs and tables.
pub(crate) fn warnings(rs: &ResultSet, a: &Analysis, baseline: &[f64]) -> Vec<String> {
    let mut w = Vec::new();
    if rs.manifest.status != Status::Complete {
        w.push(format!(
            "sweep status is `{}`, not `complete`: some planned runs may be missing",
            rs.manifest.status
        ));
    }
    for m in &rs.manifest.warnings {
        w.push(format!("driver: {m}"));
    }
    let mut fallbacks: BTreeMap<(String, String), Vec<&Run>> = BTreeMap::new();
    for r in &rs.runs {
        if !r.event.is_empty() && !r.requested_event.is_empty() && r.event != r.requested_event {
            fallbacks
                .entry((r.requested_event.clone(), r.event.clone()))
                .or_default()
                .push(r);
        }
    }
    for ((req, got), runs) in &fallbacks {
        w.push(format!(
            "fallback event: `{req}` was requested but `{got}` was opened in {} runs; \
             the handler is then a different one (see host.handler_source)",
            runs.len()
        ));
    }
    let sel = |f: &dyn Fn(&Run) -> bool| -> Vec<&Run> { rs.runs.iter().filter(|r| f(r)).collect() };
    let failed = sel(&|r| !r.ok() && r.status != RunStatus::Excluded);
    if !failed.is_empty() {
        let reasons = distinct(failed.iter().map(|r| r.error.clone()));
        w.push(format!(
            "{} failed runs excluded (run_id {}){}",
            failed.len(),
            ids(&failed),
            if reasons.is_empty() {
                String::new()
            } else {
                format!(": {}", reasons.join("; "))
            }
        ));
    }
    let throttled = sel(&|r| r.ok() && r.throttled > 0);
    if !throttled.is_empty() {
        let total: u64 = throttled.iter().map(|r| r.throttled).sum();
        let freqs = distinct(throttled.iter().map(|r| r.freq_hz.to_string()));
        w.push(format!(
            "throttled: {} runs saw {total} PERF_RECORD_THROTTLE records (at {} Hz; run_id {}): \
             the kernel paused sampling, so the achieved rate is below the request",
            throttled.len(),
            freqs.join(", "),
            ids(&throttled)
        ));
    }
    let lost = sel(&|r| {
        r.ok() && (r.lost > 0 || r.lost_samples > 0 || r.duplicates > 0 || r.unmatched > 0)
    });
    if !lost.is_empty() {
        let (l, ls, d, u) = lost.iter().fold((0, 0, 0, 0), |acc, r| {
            (
                acc.0 + r.lost,
                acc.1 + r.lost_samples,
                acc.2 + r.duplicates,
                acc.3 + r.unmatched,
            )
        });
        w.push(format!(
            "records: {l} lost records, {ls} lost samples, {d} duplicated, {u} unmatched handler \
             entries/exits in {} runs (run_id {}); utilisation of those runs is a lower bound",
            lost.len(),
            ids(&lost)
        ));
    }
    if let Some(line) = lowered_limit(&rs.runs) {
        w.push(line);
    }
    let slow = sel(&|r| {
        r.ok()
            && r.freq_hz > 0
            && r.achieved_hz.is_finite()
            && r.achieved_hz < ACHIEVED_RATE_WARN * r.freq_hz as f64
    });
    if !slow.is_empty() {
        let detail: Vec<String> = slow
            .iter()
            .map(|r| format!("run {}: {:.0} of {} Hz", r.run_id, r.achieved_hz, r.freq_hz))
            .collect();
        w.push(format!(
            "achieved sample rate below {:.0}% of the request in {} runs ({})",
            ACHIEVED_RATE_WARN * 100.0,
            slow.len(),
            detail.join("; ")
        ));
    }
    let share = |r: &Run| r.driver_cpu_sampling_ns as f64 / r.window_ns.max(1) as f64;
    let busy = sel(&|r| r.ok() && r.window_ns > 0 && share(r) > DRIVER_CPU_WARN);
    if let Some(worst) = busy.iter().max_by(|a, b| share(a).total_cmp(&share(b))) {
        w.push(format!(
            "driver CPU: in {} runs (run_id {}) the driver itself used more than {:.0}% of a CPU \
             while sampling (at most {:.1}%, run {}): on a small host it competes with the \
             workload (columns driver_cpu_sampling_ns, decoded_while_sampling_bytes)",
            busy.len(),
            ids(&busy),
            DRIVER_CPU_WARN * 100.0,
            share(worst) * 100.0,
            worst.run_id
        ));
    }
    for row in a.loss.iter().filter(|r| r.runs_disagree()) {
        let ((f, p), by_run) = (row.between_runs.unwrap_or_default(), row.trusted());
        w.push(format!(
            "paired loss at {} Hz differs between runs (one-way ANOVA of the ABBA-group \
             losses by run: F = {f:.2}, p = {p:.2e}): the interval over groups, \
             [{:.3}, {:.3}]%, understates the uncertainty; the interval over runs, \
             [{:.3}, {:.3}]% ({} runs), is the one used everywhere",
            row.freq_hz, row.loss_pct.lo, row.loss_pct.hi, by_run.lo, by_run.hi, by_run.n
        ));
    }
    let noisy = sel(&|r| r.ok() && r.noisy);
    if !noisy.is_empty() {
        let reasons = distinct(noisy.iter().map(|r| r.noise_reasons.clone()));
        w.push(format!(
            "{} runs flagged noisy ({}; run_id {}); they are kept, their spread widens the \
             intervals",
            noisy.len(),
            if reasons.is_empty() {
                "steal, involuntary switches or a busy CPU".to_string()
            } else {
                reasons.join("; ")
            },
            ids(&noisy)
        ));
    }
    for row in a.tracing.iter().filter(|r| r.significant()) {
        w.push(format!(
            "tracing overhead at {} Hz: util runs (tracepoints on) lost {:.2}% vs {:.2}% \
             without tracepoints ({:.2} pp more, beyond 1.96 standard errors of the \
             difference); loss is measured in loss runs only",
            row.freq_hz,
            row.loss_util_runs_pct.value,
            row.loss_pct.map_or(f64::NAN, |l| l.value),
            row.tracing_cost_pp()
        ));
    }
    let empty: Vec<u32> = a
        .run_intervals
        .iter()
        .filter(|(_, iv)| iv.handler.count == 0)
        .map(|(id, _)| *id)
        .collect();
    if !empty.is_empty() {
        w.push(format!(
            "no handler intervals on the measured CPU in util runs {:?}: their utilisation is 0",
            empty
        ));
    }
    let has_loss = rs
        .runs
        .iter()
        .any(|r| r.ok() && r.kind == RunKind::Loss && r.freq_hz > 0);
    let classic_loss = rs
        .runs
        .iter()
        .any(|r| r.ok() && r.kind == RunKind::Loss && r.design == Design::Classic && r.freq_hz > 0);
    if classic_loss && baseline.is_empty() {
        w.push("no successful 0 Hz loss runs: classic loss cannot be computed".to_string());
    } else if !has_loss {
        w.push("no loss runs: Table 2 and the recommendation are empty".to_string());
    }
    w
}

/// Which runs ran under a perf_event_max_sample_rate below the highest the
/// sweep saw (the kernel lowers it on its own when sampling interrupts run
/// long), or saw it go down while they ran; None when it never went down
/// (or the columns are absent).
pub(crate) fn lowered_limit(runs: &[Run]) -> Option<String> {
    let known = |v: Option<u64>| v.filter(|&v| v > 0);
    let highest = runs
        .iter()
        .flat_map(|r| {
            [
                known(r.perf_event_max_sample_rate_before),
                known(r.perf_event_max_sample_rate_after),
            ]
        })
        .flatten()
        .max()?;
    let mut under = Vec::new();
    let mut during = Vec::new();
    let mut above = Vec::new();
    let mut lowest = highest;
    for r in runs {
        let (Some(b), a) = (
            known(r.perf_event_max_sample_rate_before),
            known(r.perf_event_max_sample_rate_after),
        ) else {
            continue;
        };
        let a = a.unwrap_or(b);
        if b < highest {
            under.push(r);
        } else if a < b {
            during.push(r);
        } else {
            continue;
        }
        lowest = lowest.min(a.min(b));
        if r.freq_hz > a.min(b) {
            above.push(r);
        }
    }
    if under.is_empty() && during.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    if !during.is_empty() {
        let detail: Vec<String> = during
            .iter()
            .map(|r| {
                format!(
                    "run {} at {} Hz: {} -> {}",
                    r.run_id,
                    r.freq_hz,
                    r.perf_event_max_sample_rate_before.unwrap_or(0),
                    r.perf_event_max_sample_rate_after.unwrap_or(0)
                )
            })
            .collect();
        parts.push(format!(
            "it went down during {} runs ({})",
            during.len(),
            detail.join("; ")
        ));
    }
    if !under.is_empty() {
        parts.push(format!(
            "{} runs started under a lowered limit (run_id {})",
            under.len(),
            ids(&under)
        ));
    }
    Some(format!(
        "kernel-lowered sample rate: perf_event_max_sample_rate was {highest} at its highest in \
         this sweep and went down to {lowest} (the kernel lowers it when sampling interrupts \
         take more than perf_cpu_time_max_percent of a CPU: \"perf: interrupt took too long\"); \
         {}{}",
        parts.join("; "),
        if above.is_empty() {
            String::new()
        } else {
            format!(
                "; runs asking for more than their limit (run_id {}) were throttled or refused",
                ids(&above)
            )
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: u32, freq_hz: u64, before: u64, after: u64) -> Run {
        Run {
            run_id: id,
            freq_hz,
            status: RunStatus::Ok,
            perf_event_max_sample_rate_before: (before > 0).then_some(before),
            perf_event_max_sample_rate_after: (after > 0).then_some(after),
            ..Run::default()
        }
    }

    #[test]
    fn no_warning_when_the_limit_never_went_down() {
        let runs = vec![
            run(0, 100, 100_000, 100_000),
            run(1, 4000, 100_000, 100_000),
        ];
        assert_eq!(lowered_limit(&runs), None);
        // Older result sets have no such columns (0): nothing to say.
        assert_eq!(lowered_limit(&[run(0, 100, 0, 0)]), None);
    }

    #[test]
    fn names_the_run_it_went_down_in_and_the_runs_after_it() {
        let runs = vec![
            run(0, 100, 100_000, 100_000),
            run(1, 100_000, 100_000, 63_000),
            run(2, 4000, 63_000, 63_000),
            run(3, 100_000, 63_000, 50_000),
        ];
        let w = lowered_limit(&runs).unwrap_or_default();
        assert!(w.contains("run 1 at 100000 Hz: 100000 -> 63000"), "{w}");
        assert!(
            w.contains("2 runs started under a lowered limit (run_id 2, 3)"),
            "{w}"
        );
        assert!(w.contains("went down to 50000"), "{w}");
        assert!(w.contains("(run_id 1, 3) were throttled or refused"), "{w}");
        assert!(!w.contains("run 0"), "{w}");
    }
}
