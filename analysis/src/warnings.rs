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

/// The checks a report runs, in the order their warnings are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// The sweep did not finish.
    Incomplete,
    /// What the driver itself logged as switched or doubtful.
    Driver,
    /// Another event was opened than the one requested.
    Fallback,
    /// Runs that failed.
    Failed,
    /// The kernel throttled sampling.
    Throttled,
    /// Lost, duplicated or unmatched records.
    Records,
    /// perf_event_max_sample_rate went down.
    LoweredLimit,
    /// The kernel delivered fewer samples than requested.
    SlowRate,
    /// The driver used much CPU while sampling.
    DriverCpu,
    /// The paired loss varies between runs.
    RunsDisagree,
    /// Runs flagged noisy.
    Noisy,
    /// The handler tracepoints cost measurable loss.
    Tracing,
    /// Util runs without handler intervals.
    NoHandler,
    /// No loss can be computed.
    NoLoss,
}

/// One warning: the check that raised it and what it says (the runs it
/// concerns and what to read or do instead).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Warning {
    pub check: Check,
    pub text: String,
}

impl Warning {
    fn new(check: Check, text: impl Into<String>) -> Self {
        Self {
            check,
            text: text.into(),
        }
    }
}

/// Every warning of a report, in the order they are shown: the sweep's
/// status and the driver's own, then each check over the runs and tables.
pub(crate) fn warnings(rs: &ResultSet, a: &Analysis, baseline: &[f64]) -> Vec<String> {
    let mut w: Vec<Warning> = Vec::new();
    w.extend(incomplete(rs));
    w.extend(
        rs.manifest
            .warnings
            .iter()
            .map(|m| Warning::new(Check::Driver, format!("driver: {m}"))),
    );
    w.extend(fallbacks(&rs.runs));
    w.extend(failed(&rs.runs));
    w.extend(throttled(&rs.runs));
    w.extend(records(&rs.runs));
    w.extend(lowered_limit(&rs.runs).map(|t| Warning::new(Check::LoweredLimit, t)));
    w.extend(slow_rate(&rs.runs));
    w.extend(driver_cpu(&rs.runs));
    w.extend(runs_disagree(a));
    w.extend(noisy(&rs.runs));
    w.extend(tracing(a));
    w.extend(no_handler(a));
    w.extend(no_loss(&rs.runs, baseline));
    w.into_iter().map(|w| w.text).collect()
}

fn select(runs: &[Run], f: impl Fn(&Run) -> bool) -> Vec<&Run> {
    runs.iter().filter(|r| f(r)).collect()
}

fn incomplete(rs: &ResultSet) -> Option<Warning> {
    (rs.manifest.status != Status::Complete).then(|| {
        Warning::new(
            Check::Incomplete,
            format!(
                "sweep status is `{}`, not `complete`: some planned runs may be missing",
                rs.manifest.status
            ),
        )
    })
}

fn fallbacks(runs: &[Run]) -> Vec<Warning> {
    let mut fallbacks: BTreeMap<(String, String), Vec<&Run>> = BTreeMap::new();
    for r in runs {
        if !r.event.is_empty() && !r.requested_event.is_empty() && r.event != r.requested_event {
            fallbacks
                .entry((r.requested_event.clone(), r.event.clone()))
                .or_default()
                .push(r);
        }
    }
    fallbacks
        .iter()
        .map(|((req, got), runs)| {
            Warning::new(
                Check::Fallback,
                format!(
                    "fallback event: `{req}` was requested but `{got}` was opened in {} runs; \
                     the handler is then a different one (see host.handler_source)",
                    runs.len()
                ),
            )
        })
        .collect()
}

fn failed(runs: &[Run]) -> Option<Warning> {
    let failed = select(runs, |r| !r.ok() && r.status != RunStatus::Excluded);
    if failed.is_empty() {
        return None;
    }
    let reasons = distinct(failed.iter().map(|r| r.error.clone()));
    Some(Warning::new(
        Check::Failed,
        format!(
            "{} failed runs excluded (run_id {}){}",
            failed.len(),
            ids(&failed),
            if reasons.is_empty() {
                String::new()
            } else {
                format!(": {}", reasons.join("; "))
            }
        ),
    ))
}

fn throttled(runs: &[Run]) -> Option<Warning> {
    let throttled = select(runs, |r| r.ok() && r.throttled > 0);
    if throttled.is_empty() {
        return None;
    }
    let total: u64 = throttled.iter().map(|r| r.throttled).sum();
    let freqs = distinct(throttled.iter().map(|r| r.freq_hz.to_string()));
    Some(Warning::new(
        Check::Throttled,
        format!(
            "throttled: {} runs saw {total} PERF_RECORD_THROTTLE records (at {} Hz; run_id {}): \
             the kernel paused sampling, so the achieved rate is below the request",
            throttled.len(),
            freqs.join(", "),
            ids(&throttled)
        ),
    ))
}

fn records(runs: &[Run]) -> Option<Warning> {
    let lost = select(runs, |r| {
        r.ok() && (r.lost > 0 || r.lost_samples > 0 || r.duplicates > 0 || r.unmatched > 0)
    });
    if lost.is_empty() {
        return None;
    }
    let (l, ls, d, u) = lost.iter().fold((0, 0, 0, 0), |acc, r| {
        (
            acc.0 + r.lost,
            acc.1 + r.lost_samples,
            acc.2 + r.duplicates,
            acc.3 + r.unmatched,
        )
    });
    Some(Warning::new(
        Check::Records,
        format!(
            "records: {l} lost records, {ls} lost samples, {d} duplicated, {u} unmatched handler \
             entries/exits in {} runs (run_id {}); utilisation of those runs is a lower bound",
            lost.len(),
            ids(&lost)
        ),
    ))
}

fn slow_rate(runs: &[Run]) -> Option<Warning> {
    let slow = select(runs, |r| {
        r.ok()
            && r.freq_hz > 0
            && r.achieved_hz.is_finite()
            && r.achieved_hz < ACHIEVED_RATE_WARN * r.freq_hz as f64
    });
    if slow.is_empty() {
        return None;
    }
    let detail: Vec<String> = slow
        .iter()
        .map(|r| format!("run {}: {:.0} of {} Hz", r.run_id, r.achieved_hz, r.freq_hz))
        .collect();
    Some(Warning::new(
        Check::SlowRate,
        format!(
            "achieved sample rate below {:.0}% of the request in {} runs ({})",
            ACHIEVED_RATE_WARN * 100.0,
            slow.len(),
            detail.join("; ")
        ),
    ))
}

fn driver_cpu(runs: &[Run]) -> Option<Warning> {
    let share = |r: &Run| r.driver_cpu_sampling_ns as f64 / r.window_ns.max(1) as f64;
    let busy = select(runs, |r| {
        r.ok() && r.window_ns > 0 && share(r) > DRIVER_CPU_WARN
    });
    let worst = busy.iter().max_by(|a, b| share(a).total_cmp(&share(b)))?;
    Some(Warning::new(
        Check::DriverCpu,
        format!(
            "driver CPU: in {} runs (run_id {}) the driver itself used more than {:.0}% of a CPU \
             while sampling (at most {:.1}%, run {}): on a small host it competes with the \
             workload (columns driver_cpu_sampling_ns, decoded_while_sampling_bytes)",
            busy.len(),
            ids(&busy),
            DRIVER_CPU_WARN * 100.0,
            share(worst) * 100.0,
            worst.run_id
        ),
    ))
}

fn runs_disagree(a: &Analysis) -> Vec<Warning> {
    a.loss
        .iter()
        .filter(|r| r.runs_disagree())
        .map(|row| {
            let ((f, p), by_run) = (row.between_runs.unwrap_or_default(), row.trusted());
            Warning::new(
                Check::RunsDisagree,
                format!(
                    "paired loss at {} Hz differs between runs (one-way ANOVA of the ABBA-group \
                     losses by run: F = {f:.2}, p = {p:.2e}): the interval over groups, \
                     [{:.3}, {:.3}]%, understates the uncertainty; the interval over runs, \
                     [{:.3}, {:.3}]% ({} runs), is the one used everywhere",
                    row.freq_hz, row.loss_pct.lo, row.loss_pct.hi, by_run.lo, by_run.hi, by_run.n
                ),
            )
        })
        .collect()
}

fn noisy(runs: &[Run]) -> Option<Warning> {
    let noisy = select(runs, |r| r.ok() && r.noisy);
    if noisy.is_empty() {
        return None;
    }
    let reasons = distinct(noisy.iter().map(|r| r.noise_reasons.clone()));
    Some(Warning::new(
        Check::Noisy,
        format!(
            "{} runs flagged noisy ({}; run_id {}); they are kept, their spread widens the \
             intervals",
            noisy.len(),
            if reasons.is_empty() {
                "steal, involuntary switches or a busy CPU".to_string()
            } else {
                reasons.join("; ")
            },
            ids(&noisy)
        ),
    ))
}

fn tracing(a: &Analysis) -> Vec<Warning> {
    a.tracing
        .iter()
        .filter(|r| r.significant())
        .map(|row| {
            Warning::new(
                Check::Tracing,
                format!(
                    "tracing overhead at {} Hz: util runs (tracepoints on) lost {:.2}% vs {:.2}% \
                     without tracepoints ({:.2} pp more, beyond 1.96 standard errors of the \
                     difference); loss is measured in loss runs only",
                    row.freq_hz,
                    row.loss_util_runs_pct.value,
                    row.loss_pct.map_or(f64::NAN, |l| l.value),
                    row.tracing_cost_pp()
                ),
            )
        })
        .collect()
}

fn no_handler(a: &Analysis) -> Option<Warning> {
    let empty: Vec<u32> = a
        .run_intervals
        .iter()
        .filter(|(_, iv)| iv.handler.count == 0)
        .map(|(id, _)| *id)
        .collect();
    (!empty.is_empty()).then(|| {
        Warning::new(
            Check::NoHandler,
            format!(
                "no handler intervals on the measured CPU in util runs {:?}: their utilisation is 0",
                empty
            ),
        )
    })
}

fn no_loss(runs: &[Run], baseline: &[f64]) -> Option<Warning> {
    let has_loss = runs
        .iter()
        .any(|r| r.ok() && r.kind == RunKind::Loss && r.freq_hz > 0);
    let classic_loss = runs
        .iter()
        .any(|r| r.ok() && r.kind == RunKind::Loss && r.design == Design::Classic && r.freq_hz > 0);
    if classic_loss && baseline.is_empty() {
        Some(Warning::new(
            Check::NoLoss,
            "no successful 0 Hz loss runs: classic loss cannot be computed",
        ))
    } else if !has_loss {
        Some(Warning::new(
            Check::NoLoss,
            "no loss runs: Table 2 and the recommendation are empty",
        ))
    } else {
        None
    }
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
#[allow(clippy::unwrap_used, clippy::expect_used)]
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

    #[test]
    fn each_check_names_its_runs_and_stays_quiet_without_them() {
        let mut runs = vec![run(1, 1000, 0, 0), run(2, 1000, 0, 0), run(3, 0, 0, 0)];
        assert_eq!(throttled(&runs), None);
        assert_eq!(failed(&runs), None);
        runs[0].throttled = 3;
        runs[1].status = RunStatus::Failed;
        runs[1].error = "workload exited".into();
        let t = throttled(&runs).unwrap();
        assert_eq!(t.check, Check::Throttled);
        assert!(
            t.text
                .contains("saw 3 PERF_RECORD_THROTTLE records (at 1000 Hz; run_id 1)"),
            "{}",
            t.text
        );
        let f = failed(&runs).unwrap();
        assert_eq!(f.check, Check::Failed);
        assert!(f.text.contains("(run_id 2): workload exited"), "{}", f.text);
        // Loss runs exist only at 0 Hz here: nothing to compute a loss from.
        runs.iter_mut().for_each(|r| r.kind = RunKind::Util);
        assert_eq!(no_loss(&runs, &[]).map(|w| w.check), Some(Check::NoLoss));
    }
}
