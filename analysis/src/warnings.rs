//! The report's warnings: everything that makes a number of the tables
//! doubtful (a fallback event, throttling, lost records, a slow rate, noisy
//! runs, runs that disagree, tracing that costs, missing runs), each with
//! the runs it concerns and what to read instead.

use std::collections::BTreeMap;

use results_format::{Design, RunKind, RunStatus, Status};

use crate::findings::Measured;
use crate::format::distinct;
use crate::load::gaps::GapsRun;
use crate::load::{ResultSet, Run};
use crate::percost::PerSample;
use results_format::timeline::UNMATCHED_WARN;

/// Achieved rate below this fraction of the request is a warning.
pub const ACHIEVED_RATE_WARN: f64 = 0.9;
/// Warn when the driver's own CPU while sampling exceeds this share of the
/// sampling window (0.1 s in a 10 s run: the perf layer's target).
pub const DRIVER_CPU_WARN: f64 = 0.01;

mod lowered;
mod phases;
pub mod warning;

pub use warning::{Rule, Warning};

use lowered::lowered_limit;

/// The runs' ids for a warning's text (at most a few, then a count:
/// [`warning::ids_text`]).
fn ids(runs: &[&Run]) -> String {
    warning::ids_text(&run_ids(runs))
}

/// The runs' ids, for [`Warning::with_runs`].
fn run_ids(runs: &[&Run]) -> Vec<u32> {
    runs.iter().map(|r| r.run_id).collect()
}

/// Every warning of a report, in the order they are shown: the sweep's
/// status and the driver's own, then each check over the runs and tables.
pub(crate) fn warnings(rs: &ResultSet, a: &Measured) -> Vec<Warning> {
    let mut w: Vec<Warning> = Vec::new();
    w.extend(incomplete(rs));
    w.extend(
        rs.manifest
            .warnings
            .iter()
            .map(|m| Warning::new(Rule::Driver, format!("driver: {m}"))),
    );
    w.extend(fallbacks(&rs.runs));
    w.extend(failed(&rs.runs));
    w.extend(throttled(&rs.runs));
    w.extend(records(&rs.runs));
    w.extend(lowered_limit(&rs.runs));
    w.extend(slow_rate(&rs.runs));
    w.extend(driver_cpu(&rs.runs));
    w.extend(phases::phases(a));
    w.extend(runs_disagree(a));
    w.extend(noisy(&rs.runs));
    w.extend(tracing(a));
    w.extend(no_handler(a));
    w.extend(thinned(&rs.runs));
    w.extend(no_loss(&rs.runs));
    w
}

/// The runs for which `f` holds.
fn select(runs: &[Run], f: impl Fn(&Run) -> bool) -> Vec<&Run> {
    runs.iter().filter(|r| f(r)).collect()
}

/// The sweep did not finish, or runs.csv lacks planned runs of one that
/// did (a file cut or edited). No remedy here: the tables use the runs
/// present, and the answer box says so.
fn incomplete(rs: &ResultSet) -> Option<Warning> {
    let (planned, missing) = (rs.unrecorded.planned, &rs.unrecorded.run_ids);
    let holds = |n: usize| {
        format!(
            "runs.csv holds {} of the {planned} planned runs",
            planned - n
        )
    };
    let missing_ids: Vec<u32> = missing
        .iter()
        .map(|&i| u32::try_from(i).unwrap_or(u32::MAX))
        .collect();
    if rs.manifest.status != Status::Complete {
        let what = if planned > 0 {
            holds(missing.len())
        } else {
            "some planned runs may be missing".to_string()
        };
        return Some(Warning::new(
            Rule::Incomplete,
            format!(
                "sweep status is `{}`, not `complete`: {what}; `driver sweep --resume {}{}` finishes it",
                rs.manifest.status,
                rs.dir.display(),
                // The sweep raised the kernel's rate limit: its resume must too.
                if rs
                    .manifest
                    .settings_changed
                    .iter()
                    .any(|c| c.path.ends_with("perf_event_max_sample_rate"))
                {
                    " --raise-max-rate"
                } else {
                    ""
                }
            ),
        ));
    }
    (!missing.is_empty()).then(|| {
        Warning::new(
            Rule::Incomplete,
            format!(
                "the manifest says `complete`, but {} (missing run_id {}): the file was cut or \
                 edited; the tables use the runs present",
                holds(missing.len()),
                warning::ids_text(&missing_ids)
            ),
        )
        .with_runs(
            missing
                .iter()
                .map(|&i| u32::try_from(i).unwrap_or(u32::MAX)),
        )
    })
}

/// One warning per requested event that was replaced by another.
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
            Warning::with_remedy(
                Rule::Fallback,
                format!(
                    "fallback event: `{req}` was requested but `{got}` was opened in {} runs",
                    runs.len()
                ),
                "the handler is then a different one (see host.handler_source)",
            )
        })
        .collect()
}

/// Failed runs, with their distinct errors. No remedy: they are left out.
fn failed(runs: &[Run]) -> Option<Warning> {
    let failed = select(runs, |r| !r.ok() && r.status != RunStatus::Excluded);
    if failed.is_empty() {
        return None;
    }
    let reasons = distinct(failed.iter().map(|r| r.error.clone()));
    Some(
        Warning::new(
            Rule::Failed,
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
        )
        .with_runs(run_ids(&failed)),
    )
}

/// Runs the kernel throttled. No remedy: the achieved rate says how much.
fn throttled(runs: &[Run]) -> Option<Warning> {
    let throttled = select(runs, |r| r.ok() && r.throttled > 0);
    if throttled.is_empty() {
        return None;
    }
    let total: u64 = throttled.iter().map(|r| r.throttled).sum();
    let freqs = distinct(throttled.iter().map(|r| r.freq_hz.to_string()));
    Some(Warning::new(
        Rule::Throttled,
        format!(
            "throttled: {} runs saw {total} PERF_RECORD_THROTTLE records (at {} Hz; run_id {}): \
             the kernel paused sampling, so the achieved rate is below the request",
            throttled.len(),
            freqs.join(", "),
            ids(&throttled)
        ),
    )
        .with_runs(run_ids(&throttled)))
}

/// Runs whose raw files keep only some slices (results-format
/// `thinning`): the tables from those files are means over the slices
/// kept, not over every record. No remedy: it is how dense runs are stored.
fn thinned(runs: &[Run]) -> Option<Warning> {
    let thin = select(runs, |r| r.ok() && r.is_thinned());
    let covered = |r: &&Run| r.raw_kept_ns.unwrap_or(0) as f64 / r.window_ns.max(1) as f64;
    let least = thin.iter().map(covered).fold(f64::INFINITY, f64::min);
    let most = thin.iter().map(covered).fold(0.0, f64::max);
    let (least, most) = (
        format!("{:.0}", least * 100.0),
        format!("{:.0}", most * 100.0),
    );
    let share = if least == most {
        least
    } else {
        format!("{least}-{most}")
    };
    (!thin.is_empty()).then(|| {
        Warning::new(
            Rule::Thinned,
            format!(
                "raw files thinned: {} runs at {} Hz keep whole 10 ms slices, {share}% of their \
                 window (run_id {}; runs.csv raw_keep_every, raw_kept_ns): the handler times \
                 and the per-sample costs there are means over the slices kept, the run totals \
                 over every record",
                thin.len(),
                distinct(thin.iter().map(|r| r.freq_hz.to_string())).join(", "),
                ids(&thin)
            ),
        )
        .with_runs(run_ids(&thin))
    })
}

/// Runs that lost, duplicated or could not pair records.
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
    Some(Warning::with_remedy(
        Rule::Records,
        format!(
            "records: {l} lost records, {ls} lost samples, {d} duplicated, {u} unmatched handler \
             entries/exits in {} runs (run_id {})",
            lost.len(),
            ids(&lost)
        ),
        "utilisation of those runs is a lower bound",
    )
        .with_runs(run_ids(&lost)))
}

/// Runs whose achieved rate fell well short of the request. No remedy.
fn slow_rate(runs: &[Run]) -> Option<Warning> {
    // A --profiler run opened no sampler of ours: its rate is the
    // profiler's (the profiler section says how its interruptions track it).
    let slow = select(runs, |r| {
        r.ok()
            && r.freq_hz > 0
            && r.profiler_cpu_ns.is_none()
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
        Rule::SlowRate,
        format!(
            "achieved sample rate below {:.0}% of the request in {} runs ({})",
            ACHIEVED_RATE_WARN * 100.0,
            slow.len(),
            detail.join("; ")
        ),
    ))
}

/// Runs in which the driver itself was busy while sampling. Its pointer
/// to the columns is part of the finding's sentence (joined by a colon,
/// not as a remedy), so it stays in the text.
fn driver_cpu(runs: &[Run]) -> Option<Warning> {
    let share = |r: &Run| r.driver_cpu_sampling_ns as f64 / r.window_ns.max(1) as f64;
    let busy = select(runs, |r| {
        r.ok() && r.window_ns > 0 && share(r) > DRIVER_CPU_WARN
    });
    let worst = busy.iter().max_by(|a, b| share(a).total_cmp(&share(b)))?;
    Some(Warning::new(
        Rule::DriverCpu,
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
    )
        .with_runs(run_ids(&busy)))
}

/// One warning per frequency whose paired loss differs between runs.
fn runs_disagree(a: &Measured) -> Vec<Warning> {
    a.tables
        .loss
        .iter()
        .filter(|r| r.runs_disagree())
        .map(|row| {
            let ((f, p), by_run) = (row.between_runs.unwrap_or_default(), row.trusted());
            Warning::with_remedy(
                Rule::RunsDisagree,
                format!(
                    "paired loss at {} Hz differs between runs (one-way ANOVA of the ABBA-group \
                     losses by run: F = {f:.2}, p = {p:.2e}): the interval over groups, \
                     [{:.3}, {:.3}]%, understates the uncertainty",
                    row.freq_hz, row.loss_pct.lo, row.loss_pct.hi
                ),
                format!(
                    "the interval over runs, [{:.3}, {:.3}]% ({} runs), is the one used everywhere",
                    by_run.lo, by_run.hi, by_run.n
                ),
            )
        })
        .collect()
}

/// Runs flagged noisy.
fn noisy(runs: &[Run]) -> Option<Warning> {
    let noisy = select(runs, |r| r.ok() && r.noisy);
    if noisy.is_empty() {
        return None;
    }
    let reasons = distinct(noisy.iter().map(|r| r.noise_reasons.clone()));
    Some(
        Warning::with_remedy(
            Rule::Noisy,
            format!(
                "{} runs flagged noisy ({}; run_id {})",
                noisy.len(),
                if reasons.is_empty() {
                    "steal, involuntary switches or a busy CPU".to_string()
                } else {
                    reasons.join("; ")
                },
                ids(&noisy)
            ),
            "they are kept, their spread widens the intervals",
        )
        .with_runs(run_ids(&noisy)),
    )
}

/// One warning per frequency whose tracepoints cost measurable loss.
fn tracing(a: &Measured) -> Vec<Warning> {
    a.tables
        .tracing
        .iter()
        .filter(|r| r.significant())
        .map(|row| {
            Warning::with_remedy(
                Rule::Tracing,
                format!(
                    "tracing overhead at {} Hz: util runs (tracepoints on) lost {:.2}% vs {:.2}% \
                     without tracepoints ({:.2} pp more, beyond 1.96 standard errors of the \
                     difference)",
                    row.freq_hz,
                    row.loss_util_runs_pct.value,
                    row.loss_pct.map_or(f64::NAN, |l| l.value),
                    row.tracing_cost_pp()
                ),
                "loss is measured in loss runs only",
            )
        })
        .collect()
}

/// Util runs without handler intervals. No remedy.
fn no_handler(a: &Measured) -> Option<Warning> {
    let empty: Vec<u32> = a
        .tables
        .run_intervals
        .iter()
        .filter(|(_, iv)| iv.handler.count == 0)
        .map(|(id, _)| *id)
        .collect();
    (!empty.is_empty()).then(|| {
        Warning::new(
            Rule::NoHandler,
            format!(
                "no handler intervals on the measured CPU in util runs {:?}: their utilisation is 0",
                empty
            ),
        )
    })
}

/// No loss can be computed (no 0 Hz baseline, or no loss runs). No remedy.
fn no_loss(runs: &[Run]) -> Option<Warning> {
    let has_loss = runs
        .iter()
        .any(|r| r.ok() && r.kind == RunKind::Loss && r.freq_hz > 0);
    let classic = |at_zero: bool| {
        runs.iter().any(|r| {
            r.ok()
                && r.kind == RunKind::Loss
                && r.design == Design::Classic
                && (r.freq_hz == 0) == at_zero
        })
    };
    if classic(false) && !classic(true) {
        Some(Warning::new(
            Rule::NoLoss,
            "no successful 0 Hz loss runs: classic loss cannot be computed",
        ))
    } else if !has_loss {
        Some(Warning::new(
            Rule::NoLoss,
            "no loss runs: Table 2 and the recommendation are empty",
        ))
    } else {
        None
    }
}

/// A run left out of every table (a file of it unreadable).
pub(crate) fn excluded(x: &crate::load::ExcludedRun) -> Warning {
    Warning::new(
        Rule::Excluded,
        format!(
            "{} (left out of every table; the other runs are reported)",
            x.line()
        ),
    )
}

/// What the by-contents analysis cannot say.
pub(crate) fn contents(rs: &ResultSet, names: &[String]) -> Vec<Warning> {
    let mut w = Vec::new();
    if names.len() > 1 {
        w.push(Warning::new(
            Rule::Contents,
            format!(
                "sample contents: the tables and fits are those of {} (the first given); the other \
             contents ({}) are in the table by contents",
                names[0],
                names[1..].join(", ")
            ),
        ));
    }
    if names.iter().all(|n| n == results_format::LEGACY_SAMPLE)
        && rs.runs.iter().any(|r| r.freq_hz > 0)
    {
        w.push(Warning::new(
            Rule::Contents,
            "sample contents: these samples carried only a timestamp (`time`), the cheapest \
             record; `perf record` writes ip, tid, time, cpu and period, which costs more per \
             sample (sweep with --sample perf-default, the default since contents became a \
             dimension)",
        ));
    }
    w
}

/// The gaps design's checks (Rule::PerSample), in the order shown: each
/// run's own problems (unmatched samples, dropped gaps, its warnings, an
/// unusable window), then no usable 0 Hz run, then an A/A null control
/// that excludes 0.
pub fn per_sample(runs: &[GapsRun], ps: &PerSample) -> Vec<Warning> {
    let mut w: Vec<Warning> = gaps_runs(runs)
        .into_iter()
        .map(|t| Warning::new(Rule::PerSample, t))
        .collect();
    if ps.zero_runs == 0 {
        w.push(Warning::new(
            Rule::PerSample,
            "gaps design: no usable 0 Hz gaps runs: the background coincidence b and the \
             after-effect baseline are unavailable, so the direct, after-effect and total cost \
             per sample (and the loss they predict) are not computed; run the gaps design with \
             0 Hz included",
        ));
    }
    for r in &ps.rows {
        if let Some(e) = r.aa_null_ns.filter(|e| e.lo > 0.0 || e.hi < 0.0) {
            w.push(Warning::new(
                Rule::PerSample,
                format!(
                    "gaps design: the A/A null control at {} Hz excludes 0 ({:.2} ns [{:.2}, \
                     {:.2}]): random timestamps on the 0 Hz runs seem to cost something, so b is \
                     off by about that much; the direct cost at that rate is suspect",
                    r.freq_hz, e.value, e.lo, e.hi
                ),
            ));
        }
    }
    w
}

/// Problems of single runs: unmatched samples, dropped gaps, the run's own
/// warnings, exclusion.
fn gaps_runs(runs: &[GapsRun]) -> Vec<String> {
    let mut w = Vec::new();
    for r in runs {
        let t = &r.row;
        if t.too_many_unmatched() {
            w.push(format!(
                "gaps run {} at {} Hz: {} of {} samples ({:.1}%) fell in no gap of the workload's \
                 timeline (more than {:.0}%): their cost is not in the direct cost; check the \
                 clock mapping and the gap threshold ({} ns)",
                t.run_id,
                t.freq_hz,
                t.unmatched_samples,
                t.samples,
                100.0 * t.unmatched_samples as f64 / t.samples as f64,
                UNMATCHED_WARN * 100.0,
                t.gap_threshold_ns
            ));
        }
        if t.gaps_dropped > 0 {
            w.push(format!(
                "gaps run {} at {} Hz: {} of {} gaps not stored (gap buffer full): their time is \
                 in gap_time_ns but samples inside them count as unmatched",
                t.run_id, t.freq_hz, t.gaps_dropped, t.gaps
            ));
        }
        if !t.warnings.trim().is_empty() {
            w.push(format!(
                "gaps run {} at {} Hz: {}",
                t.run_id,
                t.freq_hz,
                t.warnings.trim()
            ));
        }
        if !crate::percost::usable(r) {
            w.push(format!(
                "gaps run {} at {} Hz excluded: empty loop window ({}..{} ns) or no samples",
                t.run_id, t.freq_hz, t.loop_start_ns, t.loop_end_ns
            ));
        }
    }
    w
}

#[cfg(test)]
mod tests;
