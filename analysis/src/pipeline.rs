//! The one entry from a loaded result set to its tables and warnings
//! (`analysis report`, `recommend`, `compare` and the tests): the files'
//! contents are read, the tables built once per sample contents and
//! workload configuration (runs whose files cannot be read are left out
//! and listed), then judged (`warnings`).

use std::collections::BTreeMap;

use results_format::{EventKind, RunKind, RunStatus};

use crate::contents::ConfigTables;
use crate::error::AnalysisError;
use crate::findings::Measured;
use crate::load::intervals::{RunIntervals, read_run_intervals};
use crate::load::{ExcludedRun, RawRemoved, ResultSet, Run};
use crate::recommend::model::LossModel;
use crate::recommend::recommendation::Budgeted;
use crate::subject::profiler::ProfilerRecommendation;
use crate::tables::build_tables;
use crate::warnings::{Rule, Warning};

/// One configuration's findings: what was measured ([`Measured`], which
/// it derefs to: `a.tables`, `a.gaps`), what is judged of it, and the
/// other configurations' own (the primary's, with the others in
/// [`Findings::other_configs`]).
#[derive(Debug, Default)]
pub struct Findings {
    /// The measured tables.
    pub measured: Measured,
    /// What the data lack: warnings, runs and phases left out, raw folders
    /// removed.
    pub quality: Quality,
    /// The answers at the report budgets.
    pub budgets: Budgets,
    /// Each other configuration's own findings, by name (the summary's
    /// rows and budget answers per configuration); empty in those.
    pub other_configs: Vec<(String, Findings)>,
}

impl std::ops::Deref for Findings {
    type Target = Measured;
    fn deref(&self) -> &Measured {
        &self.measured
    }
}

impl std::ops::DerefMut for Findings {
    fn deref_mut(&mut self) -> &mut Measured {
        &mut self.measured
    }
}

/// The answer at each report budget ([`crate::recommend::BUDGETS_PCT`]),
/// worked out once for the answer box, the budget plot, report.md, the
/// summary and `compare`.
#[derive(Debug, Default)]
pub struct Budgets {
    /// Our sampler's ([`crate::recommend::recommend`]); empty for a
    /// `--profiler` set.
    pub sampler: Vec<Budgeted>,
    /// A `--profiler` set's, from its table
    /// ([`crate::subject::profiler::recommend`]); empty otherwise.
    pub profiler: Vec<ProfilerRecommendation>,
    /// The loss model the sampler's answers rest on (None without a gaps
    /// term): its curve is the budget plot's, and the answer box and
    /// report.md say its outside term.
    pub model: Option<LossModel>,
    /// What sampling at the 1 % budget's rate adds to the p99 of a 1 ms
    /// request (None without gaps runs that resolve it).
    pub latency: Option<crate::latency::at_rate::LatencyLine>,
}

/// The data's quality: what was left out or doubtful, and why.
#[derive(Debug, Default)]
pub struct Quality {
    /// Every warning, typed until the report writes its line.
    pub warnings: Vec<Warning>,
    /// Runs whose files could not be read: left out of every table.
    pub excluded: Vec<ExcludedRun>,
    /// The raw folders removed on purpose (their tables are skipped).
    pub raw_removed: RawRemoved,
}

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
) -> Result<Vec<(String, Findings)>, AnalysisError> {
    let mut each = Vec::with_capacity(names.len());
    for name in names {
        let sub = crate::contents::subset(rs, name);
        let mut a = analyse_one(&sub, gaps, removed)?;
        if each.is_empty() {
            a.quality
                .warnings
                .extend(crate::warnings::contents(rs, names));
        } else {
            // The run-level warnings are the primary's too; what only this
            // configuration's gaps runs showed (samples in no gap, a full
            // gap buffer ...) is kept, with its name.
            a.quality.warnings = std::mem::take(&mut a.quality.warnings)
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
fn all_excluded(each: &[(String, Findings)]) -> Vec<ExcludedRun> {
    let mut excluded: Vec<ExcludedRun> = each
        .iter()
        .flat_map(|(_, a)| a.quality.excluded.iter().cloned())
        .collect();
    // A stable sort: the first configuration's record of a run is kept.
    excluded.sort_by_key(|x| x.run_id);
    excluded.dedup_by_key(|x| x.run_id);
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
/// [`crate::findings::ContentsTables`], with the throttle predicted for
/// each, then the answers at the report budgets ([`Findings::budgets`]).
/// A run whose events, gaps or samples file cannot be read is left out
/// (listed in [`crate::pipeline::Quality::excluded`], the warnings and on
/// stderr); the analysis fails only when no ok run is left.
pub fn analyse(rs: &ResultSet) -> Result<Findings, AnalysisError> {
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
            util: &a.tables.util,
            per_sample: a.gaps.per_sample.as_ref(),
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
    let mut primary = each.remove(0).1;
    let others = each
        .iter()
        .flat_map(|(_, a)| a.quality.warnings.iter().cloned());
    primary.quality.warnings.extend(others);
    primary.contents = crate::findings::ContentsTables {
        names,
        rows: by_contents,
        throttle,
        after_rows,
    };
    // The primary's warnings name its own excluded runs; add the others'.
    for x in excluded
        .iter()
        .filter(|x| !primary.quality.excluded.contains(x))
    {
        primary.quality.warnings.push(crate::warnings::excluded(x));
    }
    primary.quality.excluded = excluded;
    primary.quality.raw_removed = removed;
    primary.subject = crate::findings::SubjectTables {
        profiler: crate::subject::profiler::profiler_table(rs)?,
        command: crate::subject::command::command_table(&rs.runs),
    };
    for (_, other) in &mut each {
        other.budgets = budgets(other);
    }
    primary.budgets = budgets(&primary);
    primary.other_configs = each;
    Ok(primary)
}

/// The answers at the report budgets of `a`, once its tables, subject
/// and warnings are complete.
fn budgets(a: &Findings) -> Budgets {
    use crate::recommend::{BUDGETS_PCT, loss_model, recommend_with};
    use crate::subject::profiler;
    let model = loss_model(a);
    let table = a.subject.profiler.as_ref();
    // A `--profiler` set's table answers instead of our sampler.
    let sampler: Vec<Budgeted> = match table {
        Some(_) => Vec::new(),
        None => BUDGETS_PCT
            .map(|b| (b, recommend_with(a, &model, b)))
            .into(),
    };
    // The answer box's latency line, at the 1 % budget's rate.
    let latency = a.gaps.latency.as_ref().and_then(|t| {
        let (_, rec) = sampler.iter().find(|(b, _)| *b == 1.0)?;
        t.model.line(rec.as_ref().ok()?.rate_hz?)
    });
    Budgets {
        sampler,
        latency,
        profiler: table.map_or_else(Vec::new, |t| {
            BUDGETS_PCT.map(|b| profiler::recommend(t, b)).into()
        }),
        model: model.ok(),
    }
}

/// Read every util run's intervals (in parallel over runs) and build all
/// tables of one contents' runs.
pub(crate) fn analyse_one(
    rs: &ResultSet,
    all_gaps: &crate::load::gaps::GapsLoad,
    removed: RawRemoved,
) -> Result<Findings, AnalysisError> {
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
    a.quality
        .warnings
        .extend(excluded.iter().map(crate::warnings::excluded));
    a.quality.excluded = excluded;
    a.quality.warnings.extend(
        gaps.warnings
            .iter()
            .map(|w| Warning::new(Rule::GapsFiles, w.clone())),
    );
    if !gaps.runs.is_empty() {
        let table = crate::percost::build(&gaps.runs, &a.tables.util, &a.tables.loss);
        a.quality
            .warnings
            .extend(crate::warnings::per_sample(&gaps.runs, &table));
        a.gaps.per_sample = Some(table);
        // The recovery bins of the loaded runs, run by run.
        a.gaps.recovery = gaps.runs.iter().flat_map(|g| g.recovery.clone()).collect();
        a.gaps.latency = Some(crate::latency::table::of_runs(&gaps.runs));
    }
    if !removed.gaps {
        a.gaps.split = crate::split::split_table(rs)?;
    }
    Ok(a)
}

/// Every run's intervals, read in parallel over runs, and the runs whose
/// file could not be read (or whose reader panicked).
fn read_all_intervals(
    rs: &ResultSet,
    runs: &[&Run],
) -> (BTreeMap<u32, RunIntervals>, Vec<ExcludedRun>) {
    use rayon::iter::Either;
    use rayon::prelude::*;
    let read = |r: &&Run| {
        let path = results_format::events_path(&rs.dir, r.run_id);
        let open = || read_run_intervals(&path, r.cpu);
        let why = "the reader of its events file panicked";
        let result = std::panic::catch_unwind(open)
            .unwrap_or_else(|_| Err(AnalysisError::Insufficient(why.into())));
        match result {
            Ok(iv) => Either::Left((r.run_id, iv)),
            Err(e) => Either::Right(ExcludedRun {
                run_id: r.run_id,
                path,
                reason: e.to_string(),
            }),
        }
    };
    runs.par_iter().partition_map(read)
}

/// The tables of `rs` from already aggregated intervals, judged: every
/// warning is made here, after the tables (by the `warnings` module).
pub fn analyse_with(rs: &ResultSet, run_intervals: BTreeMap<u32, RunIntervals>) -> Findings {
    let (tables, phase_faults) = build_tables(rs, run_intervals);
    let mut a = Findings {
        measured: Measured::of_tables(tables, phase_faults),
        ..Findings::default()
    };
    a.quality.warnings = crate::warnings::warnings(rs, &a.measured);
    a
}
