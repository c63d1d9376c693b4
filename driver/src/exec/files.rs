//! The files of a finished run besides its runs.csv row: the workload's
//! report, the util run's intervals, the gaps design's timeline and the
//! paired design's phases, each stamped with the run it belongs to.

use results_format::timeline::{
    RECOVERY_CSV, RecoveryRow, TIMELINE_CSV, TimelineRow, gaps_path, samples_path,
    write_gaps_parquet, write_samples_parquet,
};

use super::{ExecError, IntervalWriter, RunOutcome, RunSpec};
use crate::gaps::TimelineOutcome;
use crate::plan::{PhaseSchedule, PlannedRun, RunKind};
use crate::results::{PhaseRow, ResultsDir, ResultsError};

/// The files of a finished run other than its runs.csv row: the
/// workload's report, the util run's intervals, the gaps design's
/// timeline, the paired design's phases.
pub(super) fn write_run_files(
    dir: &mut ResultsDir,
    spec: &RunSpec<'_>,
    schedule: Option<&PhaseSchedule>,
    out: &RunOutcome,
    write_intervals: IntervalWriter<'_>,
) -> Result<(), ExecError> {
    let run = spec.run;
    if !out.workload_json.is_empty() {
        dir.write_workload(run.run_id, &out.workload_json)?;
    }
    if run.kind == RunKind::Util {
        let path = dir.events_path(run.run_id);
        write_intervals(&path, &out.intervals).map_err(|message| ExecError::Intervals {
            path: path.clone(),
            message,
        })?;
    }
    if let Some(t) = &out.timeline {
        write_timeline(dir, run, t)?;
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
    Ok(())
}

/// Writes a gaps-design run's files.
fn write_timeline(
    dir: &ResultsDir,
    run: &PlannedRun,
    t: &TimelineOutcome,
) -> Result<(), ExecError> {
    let id = run.run_id;
    let parquet_err = |path: std::path::PathBuf| {
        move |e: ResultsError| ExecError::Intervals {
            path,
            message: e.to_string(),
        }
    };
    let gp = gaps_path(dir.root(), id);
    dir.ensure_parent(&gp)?;
    write_gaps_parquet(&gp, &t.gaps).map_err(parquet_err(gp.clone()))?;
    let sp = samples_path(dir.root(), id);
    dir.ensure_parent(&sp)?;
    write_samples_parquet(&sp, &t.sample_times_ns, &t.sample_episodes)
        .map_err(parquet_err(sp.clone()))?;
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
