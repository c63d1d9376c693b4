//! The one entry from a loaded result set to its tables and warnings
//! (`analysis report`, `recommend`, `compare` and the tests): the files'
//! contents are read, the tables built once per sample contents and
//! workload configuration (runs whose files cannot be read are left out
//! and listed), then judged (`warnings`).

use std::collections::BTreeMap;

use results_format::{EventKind, RunKind, RunStatus};

use crate::contents::ConfigTables;
use crate::error::AnalysisError;
use crate::load::intervals::{RunIntervals, read_run_intervals};
use crate::load::{ExcludedRun, RawRemoved, ResultSet, Run};
use crate::tables::{Analysis, build_tables};
use crate::warnings::{Rule, Warning};

/// The result set with the excluded runs marked `status = excluded` (not
/// ok), so every table leaves them out.
fn without_excluded(rs: &ResultSet, excluded: &[ExcludedRun]) -> ResultSet {
    let mut out = rs.clone();
    for r in &mut out.runs {
        if let Some(x) = excluded.iter().find(|x| x.run_id == r.run_id) {
            r.status = RunStatus::Excluded;
            r.error = x.reason.clone();
        }
    }
    out
}

/// The analysis of each sample contents `names` of `rs` (the primary
/// first) over the gaps load `gaps`. The primary carries the warnings about
/// the contents; another carries only what its own gaps runs showed, with
/// its name.
fn analyse_each(
    rs: &ResultSet,
    names: &[String],
    gaps: &crate::load::gaps::GapsLoad,
    removed: RawRemoved,
) -> Result<Vec<(String, Analysis)>, AnalysisError> {
    let mut each = Vec::with_capacity(names.len());
    for name in names {
        let sub = crate::contents::subset(rs, name);
        let mut a = analyse_one(&sub, gaps, removed)?;
        if each.is_empty() {
            a.warnings.extend(crate::warnings::contents(rs, names));
        } else {
            // The run-level warnings are the primary's too; what only this
            // configuration's gaps runs showed (samples in no gap, a full
            // gap buffer ...) is kept, with its name.
            a.warnings = std::mem::take(&mut a.warnings)
                .into_iter()
                .filter(|w| w.rule == Rule::PerSample)
                .map(|w| w.about(name))
                .collect();
        }
        each.push((name.clone(), a));
    }
    Ok(each)
}

/// Every contents' excluded runs, once each (0 Hz runs are in each
/// subset), by run id; each logged as a warning.
fn all_excluded(each: &[(String, Analysis)]) -> Vec<ExcludedRun> {
    let mut excluded: Vec<ExcludedRun> = Vec::new();
    for (_, a) in each {
        for x in &a.excluded {
            if !excluded.iter().any(|e| e.run_id == x.run_id) {
                excluded.push(x.clone());
            }
        }
    }
    excluded.sort_by_key(|x| x.run_id);
    for x in &excluded {
        tracing::warn!("{}", x.line());
    }
    excluded
}

/// An error when runs were excluded and no ok run of `rs` is left.
fn some_run_left(rs: &ResultSet, excluded: &[ExcludedRun]) -> Result<(), AnalysisError> {
    let left = rs
        .runs
        .iter()
        .any(|r| r.ok() && !excluded.iter().any(|x| x.run_id == r.run_id));
    if excluded.is_empty() || left {
        return Ok(());
    }
    let lines: Vec<String> = excluded.iter().map(ExcludedRun::line).collect();
    Err(AnalysisError::Insufficient(format!(
        "{}: no usable run left ({}); re-run the sweep (or `driver sweep --resume` after \
         removing the damaged runs' rows from runs.csv)",
        rs.dir.display(),
        lines.join("; ")
    )))
}

/// Build all tables: those of the primary sample contents (with every 0 Hz
/// run), and the same analysis for each other contents, side by side in
/// `by_contents`, with the throttle predicted for each. A run whose events,
/// gaps or samples file cannot be read is left out (listed in
/// [`Analysis::excluded`], the warnings and on stderr); the analysis fails
/// only when no ok run is left.
pub fn analyse(rs: &ResultSet) -> Result<Analysis, AnalysisError> {
    use crate::contents;
    let names = contents::contents_of(rs);
    // Which raw folders were removed on purpose, looked at once.
    let removed = crate::load::raw_removed(rs);
    // The gaps files are read once: the 0 Hz runs belong to every
    // configuration of their workload.
    let gaps = crate::load::gaps::load_gaps(rs, removed.gaps)?;
    let mut each = analyse_each(rs, &names, &gaps, removed)?;
    let refs: Vec<ConfigTables<'_>> = each
        .iter()
        .map(|(n, a)| ConfigTables {
            name: n,
            util: &a.util,
            per_sample: a.per_sample.as_ref(),
        })
        .collect();
    let by_contents = contents::rows(rs, &refs);
    let after_rows = crate::aftereffect::rows(&refs);
    let hardware = rs
        .runs
        .iter()
        .any(|r| r.event.parse().is_ok_and(|e: EventKind| e.is_hardware()));
    let throttle = contents::ThrottleLimits::from_manifest(rs)
        .map(|l| (l, contents::predict_throttle(rs, &l, &refs, hardware)));
    let excluded = all_excluded(&each);
    some_run_left(rs, &excluded)?;
    let others: Vec<Warning> = each
        .iter()
        .skip(1)
        .flat_map(|(_, a)| a.warnings.iter().cloned())
        .collect();
    let mut primary = each.remove(0).1;
    primary.warnings.extend(others);
    primary.contents = names;
    primary.by_contents = by_contents;
    primary.after_rows = after_rows;
    primary.throttle = throttle;
    // The primary's warnings name its own excluded runs; add the others'.
    for x in excluded.iter().filter(|x| !primary.excluded.contains(x)) {
        primary.warnings.push(crate::warnings::excluded(x));
    }
    primary.excluded = excluded;
    primary.raw_removed = removed;
    primary.profiler = crate::subject::profiler::profiler_table(rs)?;
    primary.command = crate::subject::command::command_table(&rs.runs);
    primary.other_configs = each;
    Ok(primary)
}

/// Read every util run's intervals (in parallel over runs) and build all
/// tables of one contents' runs.
pub(crate) fn analyse_one(
    rs: &ResultSet,
    all_gaps: &crate::load::gaps::GapsLoad,
    removed: RawRemoved,
) -> Result<Analysis, AnalysisError> {
    let util_runs: Vec<&Run> = rs
        .runs
        .iter()
        .filter(|r| r.ok() && r.kind == RunKind::Util && r.freq_hz > 0)
        .collect();
    let (run_intervals, mut excluded) = if removed.events {
        Default::default()
    } else {
        read_all_intervals(rs, &util_runs)
    };
    let gaps = all_gaps.restricted_to(rs);
    excluded.extend(gaps.excluded.iter().cloned());
    excluded.sort_by_key(|x| x.run_id);
    let marked;
    let rs = if excluded.is_empty() {
        rs
    } else {
        marked = without_excluded(rs, &excluded);
        &marked
    };
    let mut a = analyse_with(rs, run_intervals);
    // The warnings were built from the marked runs (status `excluded`, not
    // counted as failed): say why each was left out.
    a.warnings
        .extend(excluded.iter().map(crate::warnings::excluded));
    a.excluded = excluded;
    a.warnings.extend(
        gaps.warnings
            .iter()
            .map(|w| Warning::new(Rule::GapsFiles, w.clone())),
    );
    if !gaps.runs.is_empty() {
        let table = crate::percost::build(&gaps.runs, &a.util, &a.loss);
        a.warnings
            .extend(crate::warnings::per_sample(&gaps.runs, &table));
        a.per_sample = Some(table);
        a.recovery = gaps.recovery();
    }
    Ok(a)
}

/// Every run's intervals, and the runs whose file could not be read.
fn read_all_intervals(
    rs: &ResultSet,
    runs: &[&Run],
) -> (BTreeMap<u32, RunIntervals>, Vec<ExcludedRun>) {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
        .min(runs.len().max(1));
    let chunk = runs.len().div_ceil(workers).max(1);
    type One = (u32, Result<RunIntervals, AnalysisError>);
    let results: Vec<Vec<One>> = std::thread::scope(|s| {
        let handles: Vec<_> = runs
            .chunks(chunk)
            .map(|part| {
                (
                    part,
                    s.spawn(move || {
                        part.iter()
                            .map(|r| {
                                (
                                    r.run_id,
                                    read_run_intervals(&rs.events_path(r.run_id), r.cpu),
                                )
                            })
                            .collect::<Vec<One>>()
                    }),
                )
            })
            .collect();
        handles
            .into_iter()
            .map(|(part, h)| {
                h.join().unwrap_or_else(|_| {
                    part.iter()
                        .map(|r| {
                            (
                                r.run_id,
                                Err(AnalysisError::Insufficient(
                                    "the reader of its events file panicked".to_string(),
                                )),
                            )
                        })
                        .collect()
                })
            })
            .collect()
    });
    let mut map = BTreeMap::new();
    let mut excluded = Vec::new();
    for (run_id, r) in results.into_iter().flatten() {
        match r {
            Ok(iv) => {
                map.insert(run_id, iv);
            }
            Err(e) => excluded.push(ExcludedRun {
                run_id,
                path: rs.events_path(run_id),
                reason: e.to_string(),
            }),
        }
    }
    (map, excluded)
}

/// The tables of `rs` from already aggregated intervals, judged: every
/// warning is made here, after the tables (by the `warnings` module).
pub fn analyse_with(rs: &ResultSet, run_intervals: BTreeMap<u32, RunIntervals>) -> Analysis {
    let mut a = build_tables(rs, run_intervals);
    a.warnings = crate::warnings::warnings(rs, &a);
    a
}
