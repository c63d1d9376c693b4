//! `analysis report DIR`: DIR/report/ with report.md and report.html (the
//! same report as one page), answer.txt (the answer box), fit.json, the
//! tables as CSV where their data are (util, loss, tracing, per_sample,
//! cost_by_run, by_contents, after_effect, excluded_phases,
//! warning_runs, command, profiler: docs/results-format.md, "The report's tables") and the
//! figures as SVG and PNG (`report/figures.rs`).

use std::path::{Path, PathBuf};

use crate::columns::Numbers::{Csv, Plain, PlainNaN};
use crate::columns::write_rows;
use crate::error::AnalysisError;
use crate::warnings::warning::WarningRunRow;

pub mod contents;
pub mod drift;
pub(crate) mod figures;
mod host_look;
pub mod html;
pub mod latency;
mod markdown;
pub mod per_sample;
pub mod split;
use crate::load::ResultSet;

use crate::pipeline::Findings;
use crate::reference::{ARTICLE_DELTA_PCT_PER_KHZ, Reference};

/// The answer box's file in the report directory (what `driver sweep` and
/// `analysis report` print on stderr).
pub const ANSWER_TXT: &str = "answer.txt";

/// report.md as one self-contained page ([`html`]).
pub const REPORT_HTML: &str = "report.html";

/// What [`write()`] wrote: the report directory and the answer box's lines
/// (also in its answer.txt), for a caller to print without reading it back.
#[derive(Debug, Clone)]
pub struct Written {
    pub dir: PathBuf,
    pub answer: Vec<String>,
}

/// Writes the report of the analysed set `rs` into its `report/`: the
/// presentation only (the crate's `report_dir` reads and analyses
/// first).
///
/// The report is whole or absent: it is written into a staging folder
/// beside `report/` (a copy of the earlier report, so that what it keeps
/// carries over) and moved into place at the end; an error or a panic on
/// the way removes the staging folder and leaves the earlier report as it
/// was.
pub fn write(rs: &ResultSet, a: &Findings) -> Result<Written, AnalysisError> {
    let dir = rs.dir.as_path();
    let reference = Reference::article_2014()?;
    let target = dir.join("report");
    let staging = Staging::new(dir.join(format!(".report-staging-{}", std::process::id())));
    if target.is_dir() {
        copy_tree(&target, &staging.0)?;
    }
    let out = staging.0.clone();
    std::fs::create_dir_all(&out).map_err(|e| AnalysisError::write(&out, e))?;
    let kept = keep_report_made_with_raw(&out, a.quality.raw_removed)?;
    // Every table and plot this report writes, so that any left by an
    // earlier report of other data can go (stale_files).
    let mut written: Vec<PathBuf> = Vec::new();
    let mut path = |name: &str| {
        let p = out.join(name);
        written.push(p.clone());
        p
    };
    write_rows(&path("util.csv"), &util_rows(a, &reference), Plain)?;
    write_rows(&path("loss.csv"), &a.tables.loss, Plain)?;
    write_rows(&path("tracing.csv"), &a.tables.tracing, Plain)?;
    if let Some(ps) = &a.gaps.per_sample {
        write_rows(&path("per_sample.csv"), &ps.rows, Plain)?;
        write_rows(&path("cost_by_run.csv"), &ps.run_costs, Csv)?;
    }
    if let Some(t) = &a.gaps.latency {
        write_rows(&path("latency.csv"), &t.rows, Plain)?;
        write_rows(&path("latency_runs.csv"), &t.runs, Plain)?;
    }
    if !a.gaps.split.rows.is_empty() {
        write_rows(&path("split.csv"), &a.gaps.split.rows, Plain)?;
        write_rows(&path("split_phases.csv"), &a.gaps.split.phases, Plain)?;
    }
    if !a.contents.rows.is_empty() {
        write_rows(&path("by_contents.csv"), &a.contents.rows, PlainNaN)?;
    }
    if !a.contents.after_rows.is_empty() {
        write_rows(&path("after_effect.csv"), &a.contents.after_rows, PlainNaN)?;
    }
    if let Some(t) = &a.subject.profiler {
        write_rows(&path("profiler.csv"), &t.rows, Plain)?;
    }
    if !a.phase_faults.is_empty() {
        write_rows(&path(EXCLUDED_PHASES_CSV), &excluded_phase_rows(a), Plain)?;
    }
    if !a.quality.warnings.is_empty() {
        let rows = WarningRunRow::of(&a.quality.warnings);
        write_rows(&path(WARNING_RUNS_CSV), &rows, Plain)?;
    }
    let command = &a.subject.command;
    if !command.is_empty() {
        write_rows(&path("command.csv"), command, PlainNaN)?;
    }
    if let Some(m) = &a.budgets.model {
        write_json(&path("loss_model.json"), m)?;
    }
    write_json(&path("fit.json"), &fit_document(a))?;
    let plots = crate::report::figures::write_plots(&out, a, &reference);
    written.extend(plots.files.iter().cloned());
    remove_stale(&out, &written);
    let mut command_section = if command.is_empty() {
        String::new()
    } else {
        crate::subject::command::report::render(
            command,
            rs.command_line().as_deref(),
            rs.profiler_template().as_deref(),
        )
    };
    if let Some(t) = &a.subject.profiler {
        command_section.push_str(&crate::subject::profiler::report::render(
            t,
            &a.budgets.profiler,
            rs.runs.first().map_or(0, |r| r.cpu),
        ));
    }
    let answer = crate::answer::answer_box(rs, a);
    write_file(&out.join(ANSWER_TXT), &(answer.join("\n") + "\n"))?;
    let md = markdown::render(rs, a, &plots, &command_section, &answer, kept, &written);
    write_file(&out.join("report.md"), &md)?;
    let title = md.lines().next().and_then(|l| l.strip_prefix("# "));
    let title = title.unwrap_or("perf sampling overhead");
    write_file(&out.join(REPORT_HTML), &html::render(&md, title, &out))?;
    staging.commit(&target)?;
    Ok(Written {
        dir: target,
        answer,
    })
}

/// A report being written: removed on drop unless moved into place.
struct Staging(PathBuf);

impl Staging {
    /// A fresh staging folder at `path` (one left by a killed analysis of
    /// the same pid is removed first).
    fn new(path: PathBuf) -> Self {
        let _ = std::fs::remove_dir_all(&path);
        Staging(path)
    }

    /// Moves the staged report into `target`, replacing the earlier one
    /// (two renames in the same folder: the earlier report is moved aside,
    /// then removed).
    fn commit(self, target: &Path) -> Result<(), AnalysisError> {
        let aside = self.0.with_extension("old");
        let _ = std::fs::remove_dir_all(&aside);
        if target.exists() {
            std::fs::rename(target, &aside).map_err(|e| AnalysisError::write(target, e))?;
        }
        std::fs::rename(&self.0, target).map_err(|e| AnalysisError::write(target, e))?;
        let _ = std::fs::remove_dir_all(&aside);
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Gone already after a commit; after an error or a panic, the half
        // report goes and the earlier one stays.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies the folder `from` into `to`, recursively (files and folders).
fn copy_tree(from: &Path, to: &Path) -> Result<(), AnalysisError> {
    std::fs::create_dir_all(to).map_err(|e| AnalysisError::write(to, e))?;
    let entries = std::fs::read_dir(from).map_err(|e| AnalysisError::corrupt(from, e))?;
    for e in entries.flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(|e| AnalysisError::write(&dst, e))?;
        }
    }
    Ok(())
}

/// The paired design's phases left out of the paired loss, one row each
/// (written only when there are any; the warning counts them).
pub const EXCLUDED_PHASES_CSV: &str = "excluded_phases.csv";

/// One row of excluded_phases.csv: a phase of `phase_faults`
/// with its run's rate, group and reason (no table holds it flat).
#[derive(Default, serde::Serialize)]
pub struct ExcludedPhaseRow {
    pub run_id: u32,
    pub freq_hz: u64,
    pub phase: u32,
    pub group: u32,
    pub reason: &'static str,
    pub detail: String,
}

/// excluded_phases.csv's rows: every phase left out, with its run, ABBA
/// group and reason (`results_format::phase_check::PhaseFault::code`).
fn excluded_phase_rows(a: &Findings) -> Vec<ExcludedPhaseRow> {
    let rows = a.phase_faults.iter().flat_map(|r| {
        r.excluded.iter().map(move |e| ExcludedPhaseRow {
            run_id: e.run_id,
            freq_hz: r.freq_hz,
            phase: e.phase,
            group: e.phase / 4,
            reason: e.fault.code(),
            detail: e.fault.to_string(),
        })
    });
    rows.collect()
}

/// Every warning whole, one row per run it concerns (written when there
/// are warnings; report.md has one line per kind).
pub const WARNING_RUNS_CSV: &str = "warning_runs.csv";

/// The folder under `report/` that keeps the report made while the raw
/// folders were present, once they are removed (`keep_report_made_with_raw`).
pub const WITH_RAW_FILES: &str = "with-raw-files";

/// Files only a report made with each raw folder writes: their presence in
/// `report/` means the report there was made while that folder existed.
const MADE_WITH_GAPS: [&str; 3] = ["per_sample.csv", "cost_by_run.csv", "profiler.csv"];
const MADE_WITH_EVENTS: [&str; 1] = ["handler_durations.svg"];

/// With raw folders removed, the report in `out` made while they were
/// present (it holds a table or plot only they give) is moved whole to
/// `out/with-raw-files/` instead of being overwritten by a lesser one:
/// removed raw files cannot be re-analysed, so their report is the last
/// word on what they measured. A report already kept there stays (a later
/// report never replaces it). Returns whether `out/with-raw-files/` holds
/// a report.
fn keep_report_made_with_raw(
    out: &Path,
    removed: crate::load::RawRemoved,
) -> Result<bool, AnalysisError> {
    let kept = out.join(WITH_RAW_FILES);
    if kept.join("report.md").is_file() {
        return Ok(true);
    }
    let made_with = |names: &[&str]| names.iter().any(|n| out.join(n).is_file());
    let earlier = (removed.gaps && made_with(&MADE_WITH_GAPS))
        || (removed.events && made_with(&MADE_WITH_EVENTS));
    if !earlier {
        return Ok(false);
    }
    std::fs::create_dir_all(&kept).map_err(|e| AnalysisError::write(&kept, e))?;
    let entries = std::fs::read_dir(out).map_err(|e| AnalysisError::corrupt(out, e))?;
    for e in entries.flatten() {
        let p = e.path();
        if p.is_file() {
            let to = kept.join(e.file_name());
            std::fs::rename(&p, &to).map_err(|e| AnalysisError::write(&to, e))?;
        }
    }
    tracing::warn!(
        "kept the earlier report, made while the raw files were present, in report/{} (this \
         report skips what needs them)",
        WITH_RAW_FILES
    );
    Ok(true)
}

/// Removes the tables and plots (CSV, SVG, PNG) in `out` that this report
/// did not write: an earlier report of other data (a set whose raw files
/// were since removed, say) left them, and beside this report they would
/// say what it no longer does. Each is named in the log.
fn remove_stale(out: &Path, written: &[PathBuf]) {
    let Ok(entries) = std::fs::read_dir(out) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let ours = p
            .extension()
            .is_some_and(|x| x == "csv" || x == "svg" || x == "png");
        if ours && !written.contains(&p) {
            match std::fs::remove_file(&p) {
                Ok(()) => tracing::warn!(
                    "removed {}: an earlier report wrote it, this data no longer gives it",
                    p.display()
                ),
                Err(e) => tracing::warn!("could not remove stale {}: {e}", p.display()),
            }
        }
    }
}

/// Writes `text` to `path`.
fn write_file(path: &Path, text: &str) -> Result<(), AnalysisError> {
    std::fs::write(path, text).map_err(|e| AnalysisError::write(path, e))
}

/// Writes `value` to `path` as pretty JSON.
fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), AnalysisError> {
    let json = serde_json::to_string_pretty(value)
        .map_err(|e| AnalysisError::write(path, std::io::Error::other(e)))?;
    write_file(path, &json)
}

/// fit.json: the fits, the 2014 article's factor for comparison and the
/// units of the numbers (fields in the order the file has always had
/// them).
#[derive(Debug, Clone, serde::Serialize)]
pub struct FitDocument<'a> {
    /// The fitted factors.
    pub fits: &'a crate::tables::Fits,
    /// The 2014 article's: its cost per sample (ns) and its utilisation
    /// factor (% per kHz).
    pub reference_2014: serde_json::Value,
    /// Of `cost_per_sample*`, of the loss and utilisation fits' y, and of
    /// every fit's x (the rate the kernel delivered, not the request).
    pub units: serde_json::Value,
}

/// fit.json of `a`.
pub fn fit_document(a: &Findings) -> FitDocument<'_> {
    FitDocument {
        fits: &a.tables.fits,
        reference_2014: serde_json::json!({
            "cost_per_sample_ns": ARTICLE_DELTA_PCT_PER_KHZ * 1e4,
            "delta_pct_per_khz": ARTICLE_DELTA_PCT_PER_KHZ,
        }),
        units: serde_json::json!({
            "cost_per_sample": "ns",
            "loss": "percent",
            "util": "percent",
            "x": "achieved sample rate, kHz",
        }),
    }
}

/// The 2014 article's utilisation at a rate: util.csv's last column.
#[derive(Default, serde::Serialize)]
struct Article2014 {
    reference_2014_util_pct: Option<f64>,
}

/// util.csv's rows: Table 1, the article beside each rate.
fn util_rows(a: &Findings, r: &Reference) -> Vec<(crate::row_types::UtilRow, Article2014)> {
    let article = |f| Article2014 {
        reference_2014_util_pct: r.util_at(f),
    };
    a.tables
        .util
        .iter()
        .map(|u| (u.clone(), article(u.freq_hz)))
        .collect()
}

/// The summary's lines: the drift of the cost per sample, the handler's
/// factor and the loss line (what one sample costs at each rate is the
/// gaps section's table, right after).
pub fn key_lines(a: &Findings) -> Vec<String> {
    let mut v = Vec::new();
    let drift = a.gaps.per_sample.as_ref().and_then(|ps| ps.drift.as_ref());
    v.extend(drift.map(crate::report::drift::key_line));
    match a.tables.fits.util_origin {
        Some(fit) => {
            let (lo, hi) = fit.slope_ci();
            v.push(format!(
                "Handler utilisation factor delta = {:.4} %/kHz [{:.4}, {:.4}] = {:.0} ns of handler CPU time per sample; 2014 reference (Xeon E5530, PMU NMI): {:.3} %/kHz = {:.0} ns per sample.",
                fit.slope,
                lo,
                hi,
                fit.slope * 1e4,
                ARTICLE_DELTA_PCT_PER_KHZ,
                ARTICLE_DELTA_PCT_PER_KHZ * 1e4
            ));
        }
        None => v.push("Handler utilisation factor: no util runs with intervals.".to_string()),
    }
    if let Some(fit) = a.tables.fits.util_origin.filter(|f| f.chi2.is_finite()) {
        let range = match a.tables.fits.util_factor_up_to_hz {
            Some((hz, f)) if f.n < fit.n => format!(
                "one factor describes the rates up to {hz} Hz only: {:.4} %/kHz ({:.0} ns per sample), lack-of-fit p = {:.3}",
                f.slope,
                f.slope * 1e4,
                f.lack_of_fit_p
            ),
            Some(_) => "one factor describes every measured rate".to_string(),
            None => "no two lowest rates share one factor".to_string(),
        };
        v.push(format!(
            "Is the handler's cost per sample one number? Lack of fit of util = delta x f over all rates: chi^2 = {:.2} on {} df, p = {:.3e}; {range}. The handler time per sample at each rate, with its interval, is in Table 1.",
            fit.chi2,
            fit.dof(),
            fit.lack_of_fit_p
        ));
    }
    if let Some(fit) = a.tables.fits.loss_line {
        v.push(format!(
            "Performance loss = {:.3}% + {:.4} %/kHz x f (fixed cost of perf on + per-sample cost {:.0} ns of lost work per sample).",
            fit.intercept,
            fit.slope,
            fit.slope * 1e4
        ));
    }
    if let Some(r) = a.tables.fits.loss_to_util_slope_ratio {
        v.push(format!(
            "The application loses {r:.2}x the handler's own CPU time per sample (loss slope / utilisation slope)."
        ));
    }
    v
}
