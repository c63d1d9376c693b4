//! The files of a finished run besides its runs.csv row: the workload's
//! report, the util run's intervals, the gaps design's timeline and the
//! paired design's phases, each stamped with the run it belongs to.

use results_format::thinning::{Thinning, thin_timeline};
use results_format::timeline::{
    RECOVERY_CSV, RecoveryRow, TIMELINE_CSV, TimelineRow, gaps_path, samples_path,
    write_gaps_parquet, write_samples_parquet,
};

use super::{ExecError, IntervalWriter, RunOutcome, RunSpec};
use crate::gaps::TimelineOutcome;
use crate::plan::{PhaseSchedule, PlannedRun, RunKind};
use crate::results::{PhaseRow, ResultsDir, ResultsError};

/// How a run's raw files are thinned at dense rates (results-format
/// `thinning`: whole 10 ms slices kept, about 100 000 records a file) and
/// the time they then cover, ns (runs.csv `raw_keep_every`,
/// `raw_kept_ns`). A gaps run counts its larger file over the loop's
/// window, a util run its handler intervals over the sampling window.
/// Runs without samples of ours (0 Hz, a `--profiler`'s, whose gaps are
/// all there is of it) and windows of unknown start keep everything.
pub(super) fn thinning_of(out: &RunOutcome) -> (Thinning, Option<u64>) {
    let (records, from, to) = match &out.timeline {
        Some(t) if t.sample_times_ns.is_empty() => return (Thinning::ALL, None),
        Some(t) => (
            t.gaps.len().max(t.sample_times_ns.len()),
            t.row.loop_start_ns,
            t.row.loop_end_ns,
        ),
        None if out.intervals.is_empty() || out.window_from_ns == 0 => {
            return (Thinning::ALL, None);
        }
        None => (
            out.intervals.len(),
            out.window_from_ns,
            out.window_from_ns + out.row.window_ns,
        ),
    };
    let t = Thinning::for_records(u64::try_from(records).unwrap_or(u64::MAX));
    (t, (!t.is_all()).then(|| t.kept_ns(from, to)))
}

/// The files of a finished run other than its runs.csv row: the
/// workload's report, the util run's intervals, the gaps design's
/// timeline, the paired design's phases. Returns how its raw files were
/// thinned ([`thinning_of`]), for its row.
pub(super) fn write_run_files(
    dir: &mut ResultsDir,
    spec: &RunSpec<'_>,
    schedule: Option<&PhaseSchedule>,
    out: &RunOutcome,
    write_intervals: IntervalWriter<'_>,
) -> Result<(Thinning, Option<u64>), ExecError> {
    let run = spec.run;
    let (thinning, kept_ns) = thinning_of(out);
    if let Some(kept) = kept_ns {
        tracing::info!(
            "run {}: raw files keep one 10 ms slice in {} ({:.0}% of the window; over {} records \
             a file), the run's totals every record",
            run.run_id,
            thinning.every,
            kept as f64 / out.row.window_ns.max(1) as f64 * 100.0,
            results_format::thinning::RAW_RECORDS_PER_RUN
        );
    }
    if !out.workload_json.is_empty() {
        dir.write_workload(run.run_id, &out.workload_json)?;
    }
    if run.kind == RunKind::Util {
        let path = dir.events_path(run.run_id);
        let intervals: Vec<_> = out
            .intervals
            .iter()
            .filter(|i| thinning.keeps(i.entry_ns))
            .cloned()
            .collect();
        write_intervals(&path, &intervals).map_err(|message| ExecError::Intervals {
            path: path.clone(),
            message,
        })?;
    }
    if let Some(t) = &out.timeline {
        write_timeline(dir, run, t, thinning)?;
    }
    if !out.phases.is_empty() {
        let phases: Vec<PhaseRow> = out
            .phases
            .iter()
            .map(|p| PhaseRow {
                run_id: run.run_id,
                freq_hz: run.freq_hz,
                group: p.phase / 4,
                order: schedule
                    .map_or("", |s| s.order_of(p.phase as usize))
                    .to_owned(),
                settle_ns: spec.settle_ns,
                ..p.clone()
            })
            .collect();
        dir.append_phases(&phases)?;
    }
    Ok((thinning, kept_ns))
}

/// Writes a gaps-design run's files.
fn write_timeline(
    dir: &ResultsDir,
    run: &PlannedRun,
    t: &TimelineOutcome,
    thinning: Thinning,
) -> Result<(), ExecError> {
    let id = run.run_id;
    let parquet_err = |path: std::path::PathBuf| {
        move |e: ResultsError| ExecError::Intervals {
            path,
            message: e.to_string(),
        }
    };
    let (gaps, times, episodes) =
        thin_timeline(&t.gaps, &t.sample_times_ns, &t.sample_episodes, thinning);
    let gp = gaps_path(dir.root(), id);
    dir.ensure_parent(&gp)?;
    write_gaps_parquet(&gp, &gaps).map_err(parquet_err(gp.clone()))?;
    let sp = samples_path(dir.root(), id);
    dir.ensure_parent(&sp)?;
    write_samples_parquet(&sp, &times, &episodes).map_err(parquet_err(sp.clone()))?;
    let row = TimelineRow {
        run_id: run.run_id,
        freq_hz: run.freq_hz,
        rep: run.rep,
        ..t.row.clone()
    };
    let unmatched = row.unmatched_warning();
    for w in row.warnings.split("; ").filter(|w| !w.is_empty()) {
        tracing::warn!("run {} timeline: {w}", run.run_id);
    }
    if let Some(w) = unmatched {
        tracing::warn!("run {} timeline: {w}", run.run_id);
    }
    dir.append_rows(TIMELINE_CSV, &[row])?;
    let recovery: Vec<RecoveryRow> = t
        .recovery
        .iter()
        .map(|r| RecoveryRow {
            run_id: run.run_id,
            freq_hz: run.freq_hz,
            ..r.clone()
        })
        .collect();
    dir.append_rows(RECOVERY_CSV, &recovery)?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::handler::{HandlerInterval, HandlerSource};
    use results_format::thinning::RAW_RECORDS_PER_RUN;

    fn gaps_run(samples: u64) -> RunOutcome {
        let mut t = TimelineOutcome {
            sample_times_ns: (0..samples).map(|i| 5_000_000_000 + i * 10_000).collect(),
            ..TimelineOutcome::default()
        };
        t.row.loop_start_ns = 5_000_000_000;
        t.row.loop_end_ns = 5_000_000_000 + samples * 10_000;
        RunOutcome {
            timeline: Some(t),
            ..RunOutcome::default()
        }
    }

    #[test]
    fn dense_runs_are_thinned_and_say_what_their_files_cover() {
        // 0 Hz (no samples) and a run under the cap keep everything.
        assert_eq!(thinning_of(&gaps_run(0)), (Thinning::ALL, None));
        assert_eq!(
            thinning_of(&gaps_run(RAW_RECORDS_PER_RUN)),
            (Thinning::ALL, None)
        );
        // 100 kHz for 8 s: one slice in eight, an eighth of the window.
        let (t, kept) = thinning_of(&gaps_run(800_000));
        assert_eq!(t.every, 8);
        assert_eq!(kept, Some(1_000_000_000));
        // A util run's intervals over its sampling window, whose start must
        // be known.
        let iv = HandlerInterval {
            cpu: 1,
            entry_ns: 0,
            duration_ns: 1,
            source: HandlerSource::Hrtimer,
        };
        let mut util = RunOutcome {
            intervals: vec![iv; 250_000],
            row: crate::results::RunRow {
                window_ns: 3_000_000_000,
                ..Default::default()
            },
            ..RunOutcome::default()
        };
        assert_eq!(thinning_of(&util), (Thinning::ALL, None));
        util.window_from_ns = 7_000_000_000;
        let (t, kept) = thinning_of(&util);
        assert_eq!(t.every, 3);
        assert_eq!(kept, Some(1_000_000_000));
    }
}
