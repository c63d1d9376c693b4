//! report.md, one function per section, in the order they appear: the
//! answer and what it rests on first; every table a methodologist needs is
//! a CSV, named in one line each ("Tables") instead of repeated here.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::error::AnalysisError;
use crate::format::lines_after;
use crate::load::ResultSet;
use crate::pipeline::Findings;
use crate::plot::svg_name;
use crate::recommend::Recommendation;
use crate::report::figures::PlotOutcome;
use crate::report::key_lines;
use crate::warnings::warning::kind_line;

/// The whole report; `command` is the section on the user's own program
/// (empty without one), right after the summary; `files` every table and
/// figure written beside it.
pub(super) fn render(
    rs: &ResultSet,
    a: &Findings,
    plots: &PlotOutcome,
    command: &str,
    answer: &[String],
    kept_with_raw: bool,
    files: &[PathBuf],
) -> String {
    let mut s = String::new();
    header(&mut s, rs, a, answer, &plots.files);
    recommendations(&mut s, a);
    warnings(&mut s, a, plots);
    skipped(&mut s, a, kept_with_raw);
    summary(&mut s, a);
    if a.subject.profiler.is_none() {
        reasoning(&mut s, &a.budgets.sampler);
    }
    s.push_str(&crate::report::host_look::render(
        rs.manifest.host_look.as_ref(),
    ));
    s.push_str(command);
    per_sample_sections(&mut s, a);
    tables(&mut s, files);
    footer(&mut s, &plots.files);
    s
}

/// The budget plot's file: the picture of the question, right under the
/// answer box (the other plots close the report).
const BUDGET_SVG: &str = "budget.svg";

/// Title, the answer box and the budget plot, host, what ran, and the runs
/// left out.
fn header(s: &mut String, rs: &ResultSet, a: &Findings, answer: &[String], plots: &[PathBuf]) {
    let m = &rs.manifest;
    let _ = writeln!(s, "# perf sampling overhead on {}\n", m.host_label(&rs.dir));
    let _ = writeln!(s, "```text\n{}\n```\n", answer.join("\n"));
    if plots
        .iter()
        .any(|p| svg_name(p).as_deref() == Some(BUDGET_SVG))
    {
        let _ = writeln!(s, "![{BUDGET_SVG}]({BUDGET_SVG})\n");
    }
    let _ = writeln!(
        s,
        "- results: `{}` (status `{}`)",
        rs.dir.display(),
        m.status
    );
    for key in ["cpu_model", "kernel", "hypervisor", "pmu", "handler_source"] {
        if let Some(v) = m.host_str(key) {
            let _ = writeln!(s, "- {key}: {v}");
        }
    }
    let reference = crate::reference::REFERENCE_HOST_SET;
    match crate::summary::traits_unlike_reference(&m.host) {
        Some(d) if d.is_empty() => {
            let _ = writeln!(s, "- host traits: as the reference host's ({reference})");
        }
        Some(d) => {
            let d = d.join(", ");
            let _ = writeln!(
                s,
                "- host traits unlike the reference host ({reference}): {d}"
            );
        }
        None => {}
    }
    let or = |v: &[String], none: &str| {
        if v.is_empty() {
            none.to_string()
        } else {
            v.join(", ")
        }
    };
    let _ = writeln!(
        s,
        "- sampling event(s): {}; scope: {}; sample contents: {}; runs: {} ({} failed, {} excluded)\n",
        or(&a.tables.events, "none"),
        or(&a.tables.scopes, "n/a"),
        or(&a.contents.names, "n/a"),
        rs.runs.len(),
        rs.runs.iter().filter(|r| !r.ok()).count(),
        a.quality.excluded.len()
    );
    if !a.quality.excluded.is_empty() {
        let _ = writeln!(s, "## Excluded runs\n");
        let _ = writeln!(
            s,
            "A file of these runs could not be read; they are left out of every table and plot \
             below, which report the other runs.\n"
        );
        lines_after(s, "- ", a.quality.excluded.iter().map(|x| x.line()));
        s.push('\n');
    }
}

/// One line per kind of warning, with its count, and the plots that
/// failed; every warning whole, with its runs and values, is in
/// warning_runs.csv.
fn warnings(s: &mut String, a: &Findings, plots: &PlotOutcome) {
    let _ = writeln!(s, "## Warnings\n");
    let ws = &a.quality.warnings;
    if ws.is_empty() && plots.errors.is_empty() {
        let _ = writeln!(s, "None.\n");
        return;
    }
    let mut rules = Vec::new();
    for w in ws {
        if !rules.contains(&w.rule) {
            rules.push(w.rule);
        }
    }
    for rule in rules {
        let of: Vec<_> = ws.iter().filter(|w| w.rule == rule).collect();
        let _ = writeln!(s, "{}", kind_line(&of).unwrap_or_default());
    }
    lines_after(s, "- plot: ", &plots.errors);
    if !ws.is_empty() {
        let _ = writeln!(
            s,
            "\nEach warning in full, with its remedy, runs and values: warning_runs.csv."
        );
    }
    s.push('\n');
}

/// The recommendation for each budget, one line each, before anything
/// else: how each was reached follows the summary ([`reasoning`]).
fn recommendations(s: &mut String, a: &Findings) {
    let _ = writeln!(s, "## Recommended sampling rates\n");
    if a.subject.profiler.is_some() {
        lines_after(
            s,
            "- ",
            crate::subject::profiler::report::recommendation_lines(&a.budgets.profiler),
        );
        let _ = writeln!(s, "\nHow they were reached: \"Your profiler\" below.\n");
        return;
    }
    for (budget, rec) in &a.budgets.sampler {
        let _ = writeln!(s, "- {budget} % loss budget: {}", headline(rec));
    }
    let _ = writeln!(
        s,
        "\nHow each was reached, and what it rests on: \"How each recommendation was reached\" below.\n"
    );
}

/// A budget's recommendation in one line, or why there is none.
fn headline(rec: &Result<Recommendation, AnalysisError>) -> String {
    rec.as_ref()
        .map_or_else(|e| e.to_string(), |r| r.headline())
}

/// The key figures.
fn summary(s: &mut String, a: &Findings) {
    let _ = writeln!(s, "## Summary\n");
    lines_after(s, "- ", key_lines(a));
    s.push('\n');
}

/// Each recommendation's reasoning: its basis, the cost it used, and what
/// the other basis would have said. Lines every budget shares (the loss
/// model's terms and tests) are written once, after them.
fn reasoning(s: &mut String, at_budgets: &[crate::recommend::Budgeted]) {
    let _ = writeln!(s, "## How each recommendation was reached\n");
    let oks = at_budgets.iter().filter_map(|(_, r)| r.as_ref().ok());
    let oks: Vec<&Recommendation> = oks.collect();
    let shared: Vec<&String> = match oks.split_first() {
        Some((first, rest)) if !rest.is_empty() => first
            .reasoning
            .iter()
            .filter(|l| rest.iter().all(|r| r.reasoning.contains(l)))
            .collect(),
        _ => Vec::new(),
    };
    for (budget, rec) in at_budgets {
        let _ = writeln!(s, "- {budget} % budget: {}", headline(rec));
        if let Ok(rec) = rec {
            let own = rec.reasoning.iter().filter(|l| !shared.contains(l));
            lines_after(s, "  ", own);
        }
    }
    if !shared.is_empty() {
        let _ = writeln!(s, "- Every budget:");
        lines_after(s, "  ", shared);
    }
    s.push('\n');
}

/// What a sample costs: the gaps design, the drift, request latency, the
/// split design, by contents and the throttle.
fn per_sample_sections(s: &mut String, a: &Findings) {
    if let Some(ps) = &a.gaps.per_sample {
        s.push_str(&crate::report::per_sample::render(ps));
        s.push_str(&crate::report::drift::render(ps));
    }
    if a.subject.profiler.is_none() && a.subject.command.is_empty() {
        s.push_str(&crate::report::latency::render(a.gaps.latency.as_ref()));
    }
    s.push_str(&crate::report::split::render(&a.gaps.split));
    s.push_str(&crate::report::contents::render(a));
}

/// What each table and fit file beside the report holds, one line each:
/// the file's name, then after the first ": " what it holds.
const TABLES: &str = "\
util.csv: Table 1, handler CPU utilisation and time per sample by rate
loss.csv: Table 2, performance loss by rate and design, each run's count
tracing.csv: the loss with the handler tracepoints on and off, by rate
per_sample.csv: the gaps design by rate: the cost's parts, A/A control, cap
cost_by_run.csv: each gaps run's cost per sample, in sweep order
latency.csv: added request latency by rate, size and percentile
latency_runs.csv: the same, each run against its block's 0 Hz run
split.csv: the split design's loss in the gaps and outside them, by rate
split_phases.csv: the split design's phases
by_contents.csv: what a sample costs by sample contents
after_effect.csv: the after-effect from throughput, by rate
command.csv: your command's runs, by rate
profiler.csv: your profiler's runs, by rate
excluded_phases.csv: the paired design's phases left out, with their reasons
warning_runs.csv: every warning whole with its remedy, a row per run and kind
fit.json: the fitted factors (utilisation and loss against the rate)
loss_model.json: the loss model the recommendations rest on
";

/// The tables beside the report, one line each, and where the method is.
fn tables(s: &mut String, files: &[PathBuf]) {
    let _ = writeln!(s, "## Tables\n");
    let here = |name: &str| {
        files
            .iter()
            .any(|p| p.file_name().is_some_and(|n| n == name))
    };
    for line in TABLES.lines() {
        if line.split_once(": ").is_some_and(|(name, _)| here(name)) {
            let _ = writeln!(s, "- {line}");
        }
    }
    let _ = writeln!(
        s,
        "\nEvery column: docs/results-format.md. Method: docs/methodology.md. The same report as one page: report.html.\n"
    );
}

/// The parts skipped because raw folders were removed on purpose, and
/// where the report made while they were present is kept.
fn skipped(s: &mut String, a: &Findings, kept_with_raw: bool) {
    let removed = a.quality.raw_removed;
    if !removed.any() {
        return;
    }
    let _ = writeln!(s, "## Skipped: raw files removed\n");
    lines_after(s, "- ", removed.lines());
    if kept_with_raw {
        let _ = writeln!(
            s,
            "- The report made while they were present, with the skipped parts, is kept \
             unchanged: [{0}/report.md]({0}/report.md).",
            crate::report::WITH_RAW_FILES
        );
    }
    s.push('\n');
}

/// The plots.
fn footer(s: &mut String, plots: &[PathBuf]) {
    let names = plots.iter().filter_map(|p| svg_name(p));
    let names: Vec<String> = names.filter(|n| n != BUDGET_SVG).collect();
    if names.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Plots\n");
    for name in names {
        let _ = writeln!(s, "![{name}]({name})");
    }
}
