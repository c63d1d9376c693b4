//! The report's warnings: everything that makes a number of the tables
//! doubtful (a fallback event, throttling, lost records, a slow rate, noisy
//! runs, runs that disagree, tracing that costs, missing runs), each with
//! the runs it concerns and what to read instead.

use results_format::{Design, RunKind, RunStatus, Status};

use crate::findings::Measured;
use crate::load::gaps::GapsRun;
use crate::load::{ResultSet, Run};
use crate::percost::PerSample;
use crate::stats::{distinct_sorted, grouped};
use results_format::timeline::UNMATCHED_WARN;

/// Achieved rate below this fraction of the request is a warning.
pub const ACHIEVED_RATE_WARN: f64 = 0.9;
/// Warn when the driver's own CPU while sampling exceeds this share of the
/// sampling window (0.1 s in a 10 s run: the perf layer's target).
pub const DRIVER_CPU_WARN: f64 = 0.01;

mod lowered;
mod phases;
pub mod warning;

pub use warning::{Rule, RunNote, Warning};

use lowered::lowered_limit;

/// Every warning of a report, in the order they are shown: the sweep's
/// status and the driver's own, then each check over the runs and tables.
pub(crate) fn warnings(rs: &ResultSet, a: &Measured) -> Vec<Warning> {
    let mut w: Vec<Warning> = incomplete(rs).into_iter().collect();
    let driver = rs.manifest.warnings.iter();
    w.extend(driver.map(|m| Warning::new(Rule::Driver, m.clone())));
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

/// "at 100, 4000 Hz": the distinct rates of `runs`.
fn at_rates(runs: &[&Run]) -> String {
    let f = distinct_sorted(runs.iter().map(|r| r.freq_hz));
    let f: Vec<String> = f.iter().map(u64::to_string).collect();
    format!("at {} Hz", f.join(", "))
}

/// A warning about `runs`, each with its value `value(run)`; None when
/// there are none.
fn about_runs(w: Warning, runs: &[&Run], value: impl Fn(&Run) -> String) -> Option<Warning> {
    (!runs.is_empty()).then(|| w.with_values(runs.iter().map(|r| (r.run_id, value(r)))))
}

/// The sweep did not finish, or runs.csv lacks planned runs of one that
/// did (a file cut or edited). No remedy here: the tables use the runs
/// present, and the answer box says so.
fn incomplete(rs: &ResultSet) -> Option<Warning> {
    let (planned, missing) = (rs.unrecorded.planned, &rs.unrecorded.run_ids);
    let holds = format!(
        "runs.csv holds {} of the {planned} planned runs",
        planned.saturating_sub(missing.len())
    );
    let missing_ids = missing
        .iter()
        .map(|&i| u32::try_from(i).unwrap_or(u32::MAX));
    if rs.manifest.status != Status::Complete {
        // The sweep raised the kernel's rate limit: its resume must too.
        let mut changed = rs.manifest.settings_changed.iter();
        let raise = changed.any(|c| c.path.ends_with("perf_event_max_sample_rate"));
        return Some(Warning::with_remedy(
            Rule::Incomplete,
            format!(
                "sweep status is `{}`, not `complete`: {}",
                rs.manifest.status,
                if planned > 0 {
                    holds.as_str()
                } else {
                    "some planned runs may be missing"
                }
            ),
            format!(
                "`driver sweep --resume {}{}` finishes it",
                rs.dir.display(),
                if raise { " --raise-max-rate" } else { "" }
            ),
        ));
    }
    (!missing.is_empty()).then(|| {
        Warning::new(
            Rule::Incomplete,
            format!(
                "the manifest says `complete`, but {holds}: the file was cut or edited; the \
                 tables use the runs present"
            ),
        )
        .with_runs(missing_ids)
    })
}

/// One warning per requested event that was replaced by another.
fn fallbacks(runs: &[Run]) -> Vec<Warning> {
    let switched = runs.iter().filter(|r| {
        !r.event.is_empty() && !r.requested_event.is_empty() && r.event != r.requested_event
    });
    let fallbacks = grouped(switched.map(|r| ((r.requested_event.clone(), r.event.clone()), r)));
    fallbacks
        .iter()
        .filter_map(|((req, got), runs)| {
            let w = Warning::with_remedy(
                Rule::Fallback,
                format!("`{req}` was requested but `{got}` was opened"),
                "the handler is then a different one (see host.handler_source)",
            );
            about_runs(w, runs, |_| String::new())
        })
        .collect()
}

/// Failed runs, each with its error. No remedy: they are left out.
fn failed(runs: &[Run]) -> Option<Warning> {
    let failed = select(runs, |r| !r.ok() && r.status != RunStatus::Excluded);
    let reasons = failed
        .iter()
        .map(|r| r.error.clone())
        .filter(|e| !e.is_empty());
    let reasons = crate::stats::distinct_sorted(reasons);
    let w = Warning::new(
        Rule::Failed,
        format!(
            "failed runs excluded, {} distinct errors{}",
            reasons.len(),
            match reasons.as_slice() {
                [one] => format!(": {one}"),
                _ => String::new(),
            }
        ),
    );
    about_runs(w, &failed, |r| r.error.clone())
}

/// Runs the kernel throttled. No remedy: the achieved rate says how much.
fn throttled(runs: &[Run]) -> Option<Warning> {
    let throttled = select(runs, |r| r.ok() && r.throttled > 0);
    let total: u64 = throttled.iter().map(|r| r.throttled).sum();
    let w = Warning::new(
        Rule::Throttled,
        format!(
            "{total} PERF_RECORD_THROTTLE records {}: the kernel paused sampling, so the \
             achieved rate is below the request",
            at_rates(&throttled)
        ),
    );
    about_runs(w, &throttled, |r| format!("{} records", r.throttled))
}

/// Runs whose raw files keep only some slices (results-format
/// `thinning`): the tables from those files are means over the slices
/// kept, not over every record. No remedy: it is how dense runs are stored.
fn thinned(runs: &[Run]) -> Option<Warning> {
    let thin = select(runs, |r| r.ok() && r.is_thinned());
    let covered = |r: &Run| 100.0 * r.raw_kept_ns.unwrap_or(0) as f64 / r.window_ns.max(1) as f64;
    let shares: Vec<f64> = thin.iter().map(|r| covered(r)).collect();
    let least = shares.iter().copied().fold(f64::INFINITY, f64::min);
    let most = shares.iter().copied().fold(0.0, f64::max);
    let (least, most) = (format!("{least:.0}"), format!("{most:.0}"));
    let share = if least == most {
        least
    } else {
        format!("{least}-{most}")
    };
    let w = Warning::with_remedy(
        Rule::Thinned,
        format!(
            "raw files {} keep whole 10 ms slices, {share}% of their window: handler times \
             and per-sample costs there are means over the slices kept",
            at_rates(&thin)
        ),
        "the run totals count every record (runs.csv raw_keep_every, raw_kept_ns)",
    );
    about_runs(w, &thin, |r| {
        format!("{:.1}% of the window kept", covered(r))
    })
}

/// Runs that lost, duplicated or could not pair records.
fn records(runs: &[Run]) -> Option<Warning> {
    let counts = |r: &Run| [r.lost, r.lost_samples, r.duplicates, r.unmatched];
    let lost = select(runs, |r| r.ok() && counts(r).iter().any(|&c| c > 0));
    let words = |[l, ls, d, u]: [u64; 4]| {
        format!(
            "{l} lost records, {ls} lost samples, {d} duplicated, {u} unmatched handler \
             entries/exits"
        )
    };
    let total = lost
        .iter()
        .map(|r| counts(r))
        .fold([0; 4], |acc, c| std::array::from_fn(|i| acc[i] + c[i]));
    let w = Warning::with_remedy(
        Rule::Records,
        words(total),
        "utilisation of those runs is a lower bound",
    );
    about_runs(w, &lost, |r| words(counts(r)))
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
    let share = |r: &Run| 100.0 * r.achieved_hz / r.freq_hz as f64;
    let least = slow.iter().map(|r| share(r)).fold(f64::INFINITY, f64::min);
    let w = Warning::new(
        Rule::SlowRate,
        format!(
            "achieved sample rate below {:.0}% of the request {} (down to {least:.0}%)",
            ACHIEVED_RATE_WARN * 100.0,
            at_rates(&slow)
        ),
    );
    about_runs(w, &slow, |r| {
        format!("{:.0} of {} Hz", r.achieved_hz, r.freq_hz)
    })
}

/// Runs in which the driver itself was busy while sampling.
fn driver_cpu(runs: &[Run]) -> Option<Warning> {
    let share = |r: &Run| r.driver_cpu_sampling_ns as f64 / r.window_ns.max(1) as f64;
    let busy = select(runs, |r| {
        r.ok() && r.window_ns > 0 && share(r) > DRIVER_CPU_WARN
    });
    let worst = busy.iter().max_by(|a, b| share(a).total_cmp(&share(b)))?;
    let w = Warning::with_remedy(
        Rule::DriverCpu,
        format!(
            "the driver itself used more than {:.0}% of a CPU while sampling (at most {:.1}%, \
             run {}): on a small host it competes with the workload",
            DRIVER_CPU_WARN * 100.0,
            share(worst) * 100.0,
            worst.run_id
        ),
        "runs.csv columns driver_cpu_sampling_ns, decoded_while_sampling_bytes",
    );
    about_runs(w, &busy, |r| format!("{:.2}% of a CPU", share(r) * 100.0))
}

/// One warning per frequency whose paired loss differs between runs.
fn runs_disagree(a: &Measured) -> Vec<Warning> {
    (a.tables.loss.iter().filter(|r| r.runs_disagree()))
        .map(|row| {
            let ((f, p), by_run) = (row.between_runs.unwrap_or_default(), row.trusted());
            Warning::with_remedy(
                Rule::RunsDisagree,
                format!(
                    "paired loss at {} Hz differs between runs (ANOVA by run: F = {f:.2}, \
                     p = {p:.2e}): the interval over groups, [{:.3}, {:.3}]%, is too narrow",
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

/// Runs flagged noisy, each with its reasons.
fn noisy(runs: &[Run]) -> Option<Warning> {
    let noisy = select(runs, |r| r.ok() && r.noisy);
    let w = Warning::with_remedy(
        Rule::Noisy,
        "runs flagged noisy (steal, run-queue wait, involuntary switches or a busy CPU)",
        "they are kept, their spread widens the intervals",
    );
    about_runs(w, &noisy, |r| r.noise_reasons.clone())
}

/// One warning per frequency whose tracepoints cost measurable loss.
fn tracing(a: &Measured) -> Vec<Warning> {
    (a.tables.tracing.iter().filter(|r| r.significant()))
        .map(|row| {
            Warning::with_remedy(
                Rule::Tracing,
                format!(
                    "at {} Hz util runs (tracepoints on) lost {:.2}% vs {:.2}% without ({:.2} pp \
                     more, beyond 1.96 SE of the difference)",
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
    let intervals = a.tables.run_intervals.iter();
    let empty = intervals.filter(|(_, iv)| iv.handler.count == 0);
    let empty: Vec<u32> = empty.map(|(id, _)| *id).collect();
    (!empty.is_empty()).then(|| {
        Warning::new(
            Rule::NoHandler,
            "util runs with no handler intervals on the measured CPU: their utilisation is 0",
        )
        .with_runs(empty)
    })
}

/// No loss can be computed (no 0 Hz baseline, or no loss runs). No remedy.
fn no_loss(runs: &[Run]) -> Option<Warning> {
    let loss = runs.iter().filter(|r| r.ok() && r.kind == RunKind::Loss);
    let has_loss = loss.clone().any(|r| r.freq_hz > 0);
    let classic = |at_zero: bool| {
        (loss.clone()).any(|r| r.design == Design::Classic && (r.freq_hz == 0) == at_zero)
    };
    let text = if classic(false) && !classic(true) {
        "no successful 0 Hz loss runs: classic loss cannot be computed"
    } else if !has_loss {
        "no loss runs: Table 2 and the recommendation are empty"
    } else {
        return None;
    };
    Some(Warning::new(Rule::NoLoss, text))
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
    .with_values([(x.run_id, x.reason.clone())])
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
    let mut w: Vec<Warning> = runs.iter().flat_map(gaps_run).collect();
    if ps.zero_runs == 0 {
        w.push(Warning::with_remedy(
            Rule::PerSample,
            "gaps design: no usable 0 Hz gaps runs: the background coincidence b and the \
             after-effect baseline are unavailable, so the direct, after-effect and total cost \
             per sample (and the loss they predict) are not computed",
            "run the gaps design with 0 Hz included",
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

/// Problems of one gaps run: unmatched samples, dropped gaps, the run's
/// own warnings, exclusion.
fn gaps_run(r: &GapsRun) -> Vec<Warning> {
    let t = &r.row;
    let mut w = Vec::new();
    if t.too_many_unmatched() {
        w.push(format!(
            "{} of {} samples ({:.1}%) fell in no gap of the workload's timeline (more than \
             {:.0}%): their cost is not in the direct cost; check the clock mapping and the gap \
             threshold ({} ns)",
            t.unmatched_samples,
            t.samples,
            100.0 * t.unmatched_samples as f64 / t.samples as f64,
            UNMATCHED_WARN * 100.0,
            t.gap_threshold_ns
        ));
    }
    if t.gaps_dropped > 0 {
        w.push(format!(
            "{} of {} gaps not stored (gap buffer full): their time is in gap_time_ns but \
             samples inside them count as unmatched",
            t.gaps_dropped, t.gaps
        ));
    }
    if !t.warnings.trim().is_empty() {
        w.push(t.warnings.trim().to_string());
    }
    if !crate::percost::usable(r) {
        w.push(format!(
            "excluded: empty loop window ({}..{} ns) or no samples",
            t.loop_start_ns, t.loop_end_ns
        ));
    }
    w.into_iter()
        .map(|text| {
            let about = format!("gaps run {} at {} Hz: {text}", t.run_id, t.freq_hz);
            Warning::new(Rule::PerSample, about).with_runs([t.run_id])
        })
        .collect()
}

/// The warnings' rules on made-up runs.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {

    use super::*;

    #[test]
    fn thinned_runs_are_said() {
        let mut runs = vec![run(0, 100_000, 0, 0), run(1, 100, 0, 0)];
        assert!(thinned(&runs).is_none());
        runs[0].raw_keep_every = Some(8);
        runs[0].raw_kept_ns = Some(1_000_000_000);
        runs[0].window_ns = 8_000_000_000;
        let w = thinned(&runs).unwrap();
        assert_eq!(w.rule, Rule::Thinned);
        assert!(w.text.contains("raw files at 100000 Hz keep"), "{}", w.text);
        assert!(w.text.contains("slices, 12% of"), "{}", w.text);
        assert_eq!(w.runs, [note(0, "12.5% of the window kept")]);
    }

    fn note(run_id: u32, value: &str) -> RunNote {
        RunNote {
            run_id,
            value: value.into(),
        }
    }

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
        let w = lowered_limit(&runs).unwrap();
        assert!(w.text.contains("from 100000 down to 50000"), "{}", w.text);
        assert!(
            w.text
                .contains("during 1 runs, 2 started under it, 2 asked for more"),
            "{}",
            w.text
        );
        assert_eq!(
            w.runs,
            [
                note(
                    1,
                    "100000 Hz: 100000 -> 63000, asked for more: throttled or refused"
                ),
                note(2, "4000 Hz: 63000 -> 63000"),
                note(
                    3,
                    "100000 Hz: 63000 -> 50000, asked for more: throttled or refused"
                ),
            ]
        );
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
        assert_eq!(t.rule, Rule::Throttled);
        assert!(
            t.text
                .starts_with("3 PERF_RECORD_THROTTLE records at 1000 Hz:"),
            "{}",
            t.text
        );
        assert_eq!(t.runs, [note(1, "3 records")]);
        assert_eq!(t.remedy, None);
        let f = failed(&runs).unwrap();
        assert_eq!(f.rule, Rule::Failed);
        assert!(
            f.text.ends_with("1 distinct errors: workload exited"),
            "{}",
            f.text
        );
        assert_eq!(f.runs, [note(2, "workload exited")]);
        runs[0].lost = 2;
        let r = records(&runs).unwrap();
        assert_eq!(
            r.remedy.as_deref(),
            Some("utilisation of those runs is a lower bound")
        );
        assert!(
            r.line()
                .starts_with("2 lost records, 0 lost samples, 0 duplicated"),
            "{}",
            r.line()
        );
        assert_eq!(r.runs[0].run_id, 1);
        // Loss runs exist only at 0 Hz here: nothing to compute a loss from.
        runs.iter_mut().for_each(|r| r.kind = RunKind::Util);
        assert_eq!(no_loss(&runs).map(|w| w.rule), Some(Rule::NoLoss));
    }
}
