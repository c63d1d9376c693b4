//! The rows of Tables 1 and 2 and of the tracing cost, each from the runs
//! it is computed from.

use std::collections::BTreeMap;

use results_format::phase_check::judge_run;
use results_format::{Design, RunKind};

use super::{DurationGroup, PairedRunTrace, RunPhaseFaults, Tables, abba_losses, by_freq};
use crate::load::intervals::RunIntervals;
use crate::load::{Phase, ResultSet, Run};
use crate::row_types::{LossRow, TracepointCostRow, UtilRow};
use crate::stats::{Estimate, loss_delta, mean, mean_of, one_way_anova, t_interval};

/// Table 1: handler utilisation and durations per frequency.
pub(super) fn util_table(
    util_runs: &BTreeMap<u64, Vec<&Run>>,
    run_intervals: &BTreeMap<u32, RunIntervals>,
) -> (Vec<UtilRow>, Vec<DurationGroup>) {
    let mut util = Vec::new();
    let mut durations = Vec::new();
    for (&freq_hz, runs) in util_runs {
        let mut utils = Vec::new();
        let mut lt_utils = Vec::new();
        let mut calls = Vec::new();
        let mut medians = Vec::new();
        let mut p99s = Vec::new();
        let mut run_means = Vec::new();
        let (mut sum, mut count) = (0u64, 0u64);
        let mut sample = Vec::new();
        for r in runs {
            let Some(iv) = run_intervals.get(&r.run_id) else {
                continue;
            };
            // The events file's time: the window, or the slices it kept.
            let window = r.raw_kept_ns.unwrap_or(r.window_ns) as f64;
            if window <= 0.0 {
                continue;
            }
            utils.push(iv.handler.sum_ns as f64 / window * 100.0);
            calls.push(iv.handler.count as f64 / (window * 1e-9));
            if let Some(lt) = &iv.local_timer {
                lt_utils.push(lt.sum_ns as f64 / window * 100.0);
            }
            if iv.handler.count > 0 {
                medians.push(iv.handler.median_ns);
                p99s.push(iv.handler.p99_ns);
                run_means.push(iv.handler.sum_ns as f64 / iv.handler.count as f64);
            }
            sum += iv.handler.sum_ns;
            count += iv.handler.count;
            sample.extend_from_slice(&iv.sample_ns);
        }
        if utils.is_empty() {
            continue;
        }
        util.push(UtilRow {
            freq_hz,
            runs: utils.len(),
            calls_per_s: mean(&calls),
            // 0 / 0: NaN without calls.
            mean_ns: sum as f64 / count as f64,
            per_sample_ns: t_interval(&run_means),
            median_ns: crate::stats::median(&medians),
            p99_ns: crate::stats::median(&p99s),
            util_pct: t_interval(&utils),
            local_timer_util_pct: (lt_utils.len() == utils.len()).then(|| t_interval(&lt_utils)),
            achieved_hz: mean_of(runs.iter().map(|r| r.achieved_hz).filter(|v| v.is_finite())),
        });
        durations.push(DurationGroup {
            freq_hz,
            durations_ns: sample,
        });
    }
    (util, durations)
}

/// Table 2, classic design: loss of whole runs against the 0 Hz runs.
/// A command's runs (`--command`) are compared within blocks, as its own
/// section does (crate::subject::command): the host drifts between its runs.
pub(super) fn classic_loss(classic: &BTreeMap<u64, Vec<&Run>>, baseline: &[f64]) -> Vec<LossRow> {
    let mut loss = Vec::new();
    let command = classic
        .values()
        .flatten()
        .all(|r| crate::subject::command::is_command_loss_run(r));
    let command_baseline = crate::subject::command::baseline_by_block(
        classic.get(&0).map(Vec::as_slice).unwrap_or_default(),
    );
    for (&freq_hz, runs) in classic {
        let rates: Vec<f64> = runs.iter().map(|r| r.rate()).collect();
        let loss_pct = if freq_hz == 0 {
            Estimate::point(0.0, rates.len())
        } else if baseline.is_empty() {
            Estimate::point(f64::NAN, rates.len())
        } else if command {
            crate::subject::command::block_paired_loss(runs, &command_baseline)
        } else {
            loss_delta(&rates, baseline)
        };
        let iterations: Vec<u64> = runs.iter().map(|r| r.iterations).collect();
        loss.push(LossRow {
            freq_hz,
            achieved_hz: mean_of(runs.iter().map(|r| r.achieved_hz).filter(|v| v.is_finite())),
            design: Design::Classic,
            method: if command {
                "1 - exp(-mean ln(wall F / wall 0)) within blocks; t interval over blocks"
            } else {
                "1 - mean(F)/mean(0); delta method, t on Welch df"
            }
            .to_string(),
            mean_iterations: mean_of(iterations.iter().map(|&v| v as f64)),
            iterations,
            loss_pct,
            loss_by_run_pct: None,
            between_runs: None,
        });
    }
    loss
}

/// Table 2, paired design (or split: the same phases in runs that stamp
/// their timeline, `design`): the ABBA-group losses per frequency from the
/// groups whose phases the controller kept, each run's phase trace for the
/// plot, and the runs with phases left out.
pub(super) fn paired_loss(
    rs: &ResultSet,
    design: Design,
) -> (Vec<LossRow>, Vec<PairedRunTrace>, Vec<RunPhaseFaults>) {
    let mut loss = Vec::new();
    let mut faults = Vec::new();
    let paired_runs = by_freq(
        rs.runs
            .iter()
            .filter(|r| r.ok() && r.kind == RunKind::Loss && r.design == design),
    );
    let phases_by_run = rs.phases_by_run();
    // The planned phase length (0 in a manifest without it: then only the
    // faults that need no length count).
    let phase_ns = rs.manifest.options["phase_ns"].as_u64().unwrap_or(0);
    let mut paired = Vec::new();
    for (&freq_hz, runs) in &paired_runs {
        let mut by_run: Vec<Vec<f64>> = Vec::new();
        let (mut on_samples, mut on_ns) = (0u64, 0u64);
        for r in runs {
            let Some(phases) = phases_by_run.get(&r.run_id) else {
                continue;
            };
            let judged = judge_run(phases, phase_ns);
            for p in judged.kept.iter().flatten().filter(|p| p.sampling) {
                on_samples += p.samples;
                on_ns += p.end_ns.saturating_sub(p.start_ns);
            }
            by_run.push(abba_losses(&judged.kept));
            if !judged.excluded.is_empty() || judged.groups_excluded() > 0 {
                faults.push(RunPhaseFaults {
                    run_id: r.run_id,
                    freq_hz,
                    groups: judged.groups,
                    groups_excluded: judged.groups_excluded(),
                    excluded: judged.excluded.clone(),
                });
            }
            // The trace shows every phase that has a rate (a starved one
            // too: its dip is what happened).
            let traced: Vec<&&Phase> = phases
                .iter()
                .filter(|p| p.unreadable.is_none() && p.rate().is_finite())
                .collect();
            if let Some(first) = traced.first() {
                let t0 = first.start_ns;
                let phases = traced.iter().map(|p| crate::plot::Phase {
                    t_s: (p.start_ns.saturating_sub(t0)) as f64 * 1e-9,
                    rate: p.rate(),
                    sampling: p.sampling,
                });
                paired.push(PairedRunTrace {
                    run_id: r.run_id,
                    freq_hz,
                    phases: phases.collect(),
                });
            }
        }
        let pair_losses: Vec<f64> = by_run.iter().flatten().copied().collect();
        if pair_losses.is_empty() {
            // No group kept at this rate: no loss row (the warning on the
            // excluded phases says why).
            continue;
        }
        let run_means: Vec<f64> = by_run
            .iter()
            .filter(|g| !g.is_empty())
            .map(|g| mean(g))
            .collect();
        let iterations: Vec<u64> = runs.iter().map(|r| r.iterations).collect();
        loss.push(LossRow {
            freq_hz,
            loss_by_run_pct: Some(t_interval(&run_means)),
            achieved_hz: if on_ns > 0 {
                on_samples as f64 / (on_ns as f64 * 1e-9)
            } else {
                f64::NAN
            },
            between_runs: one_way_anova(&by_run),
            design,
            method: format!(
                "mean of ABBA-group losses 1 - on/off rate ({} groups); t interval",
                pair_losses.len()
            ),
            mean_iterations: mean_of(iterations.iter().map(|&v| v as f64)),
            iterations,
            loss_pct: t_interval(&pair_losses),
        });
    }
    (loss, paired, faults)
}

/// Tracing cost: util runs' loop rates against the loss baseline.
pub(super) fn tracing_rows(
    tables: &Tables,
    util_runs: &BTreeMap<u64, Vec<&Run>>,
    tracing_baseline: &[f64],
) -> Vec<TracepointCostRow> {
    if tracing_baseline.is_empty() {
        return Vec::new();
    }
    let primary: BTreeMap<u64, Estimate> = (tables.primary_loss().into_iter())
        .map(|r| (r.freq_hz, r.trusted()))
        .collect();
    let rows = util_runs.iter().filter_map(|(&freq_hz, runs)| {
        let rates = runs.iter().filter(|r| r.iterations > 0).map(|r| r.rate());
        let rates: Vec<f64> = rates.collect();
        let loss = (!rates.is_empty()).then(|| loss_delta(&rates, tracing_baseline))?;
        Some(TracepointCostRow::new(
            freq_hz,
            primary.get(&freq_hz).copied(),
            loss,
        ))
    });
    rows.collect()
}
