//! The results directory (docs/results-format.md): its files, their writer
//! and their readers are the `results-format` crate's, shared with the
//! analysis. This module fixes the manifest's `options` and `plan` to the
//! driver's types and finds what a `--resume` still has to run.

use std::path::Path;

pub use results_format::{
    FORMAT_VERSION, FormatError as ResultsError, PhaseRow, ResultsDir, RunRow, SettingChange,
    Status, read_phases, read_runs, write_manifest,
};

use crate::config::SweepOptions;
use crate::plan::PlannedRun;

/// manifest.json as the driver writes it.
pub type Manifest = results_format::Manifest<SweepOptions, PlannedRun>;

/// Reads `<root>/manifest.json` with the driver's options and plan.
pub fn read_manifest(root: &Path) -> Result<Manifest, ResultsError> {
    results_format::read_manifest(root)
}

/// Sets the manifest's status: `Running` when runs start (its end
/// cleared), `Complete` or `Interrupted` when they stop (its end stamped).
/// The sweep's `run` step is its one caller, so the status is written in
/// one place.
pub fn set_status(manifest: &mut Manifest, status: Status) {
    manifest.status = status;
    manifest.ended_at = (status != Status::Running).then(crate::hoststate::now_rfc3339);
}

/// The planned runs that have no row in runs.csv yet (what `--resume` runs).
pub fn missing_runs(plan: &[PlannedRun], done: &[RunRow]) -> Vec<PlannedRun> {
    let done: std::collections::HashSet<u32> = done.iter().map(|r| r.run_id).collect();
    plan.iter()
        .filter(|p| !done.contains(&p.run_id))
        .cloned()
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::config::FlagSettings;
    use crate::plan::build_plan;

    /// Running clears the end; complete and interrupted stamp it.
    #[test]
    fn the_status_and_its_end_move_together() {
        let mut m = manifest();
        set_status(&mut m, Status::Complete);
        assert_eq!(m.status, Status::Complete);
        assert!(m.ended_at.is_some());
        set_status(&mut m, Status::Running);
        assert_eq!((m.status, m.ended_at.as_deref()), (Status::Running, None));
        set_status(&mut m, Status::Interrupted);
        assert!(m.ended_at.is_some());
    }

    fn manifest() -> Manifest {
        let opts = SweepOptions::resolve(&FlagSettings::default(), None, &[0, 1], 5)
            .and_then(|r| r.finish(None))
            .unwrap();
        Manifest {
            format_version: FORMAT_VERSION,
            tool_version: "0".into(),
            git_revision: None,
            status: Status::Running,
            started_at: "2026-01-01T00:00:00Z".into(),
            ended_at: None,
            host: serde_json::json!({"kernel": "x"}),
            plan: build_plan(&opts),
            seed: opts.seed,
            event: "cpu-clock".into(),
            options: opts,
            warnings: vec!["w".into()],
            settings_changed: vec![],
            command: vec![],
            host_look: None,
        }
    }

    #[test]
    fn the_driver_manifest_round_trips() {
        let tmp = tempfile::tempdir().unwrap();
        let m = manifest();
        write_manifest(tmp.path(), &m).unwrap();
        let back = read_manifest(tmp.path()).unwrap();
        assert_eq!(back.plan, m.plan);
        assert_eq!(back.options, m.options);
        assert_eq!(back.status, Status::Running);
        // The analysis reads the same file with JSON options and plan.
        let json: results_format::Manifest = results_format::read_manifest(tmp.path()).unwrap();
        assert_eq!(json.plan.len(), m.plan.len());
        assert_eq!(json.options["seed"], serde_json::json!(m.seed));
    }

    #[test]
    fn missing_runs_are_the_plan_minus_rows() {
        let m = manifest();
        let done: Vec<RunRow> = [0u32, 2, 5]
            .iter()
            .map(|&run_id| RunRow {
                run_id,
                ..RunRow::default()
            })
            .collect();
        let missing = missing_runs(&m.plan, &done);
        assert_eq!(missing.len(), m.plan.len() - 3);
        assert!(missing.iter().all(|p| ![0, 2, 5].contains(&p.run_id)));
        assert_eq!(missing[0].run_id, 1);
    }
}
