//! report.md, one function per section, in the order they appear.

use super::*;

use crate::format::table_head;

/// The whole report; `command` is the section on the user's own program
/// (empty without one), right after the summary.
pub(super) fn render(
    rs: &ResultSet,
    a: &Findings,
    r: &Reference,
    plot_outcome: &crate::report::figures::PlotOutcome,
    command: &str,
    answer: &[String],
    kept_with_raw: bool,
) -> String {
    let mut s = String::new();
    header(&mut s, rs, a, answer, &plot_outcome.files);
    recommendations(&mut s, a);
    warnings(&mut s, a, plot_outcome);
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
    table1(&mut s, a, r);
    table2(&mut s, a, r);
    tracing_cost(&mut s, a);
    fits(&mut s, a);
    footer(&mut s, a, &plot_outcome.files);
    s
}

/// The budget plot's file: the picture of the question, right under the
/// answer box (the other plots close the report).
const BUDGET_SVG: &str = "budget.svg";

/// A plot's file name, when it is an SVG.
fn svg_name(p: &Path) -> Option<String> {
    p.extension()
        .is_some_and(|e| e == "svg")
        .then(|| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .flatten()
}

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
    let _ = writeln!(
        s,
        "- sampling event(s): {}; scope: {}; sample contents: {}; runs: {} ({} failed, {} excluded)\n",
        if a.tables.events.is_empty() {
            "none".to_string()
        } else {
            a.tables.events.join(", ")
        },
        if a.tables.scopes.is_empty() {
            "n/a".to_string()
        } else {
            a.tables.scopes.join(", ")
        },
        if a.contents.names.is_empty() {
            "n/a".to_string()
        } else {
            a.contents.names.join(", ")
        },
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
        for x in &a.quality.excluded {
            let _ = writeln!(s, "- {}", x.line());
        }
        s.push('\n');
    }
}

/// Everything switched or doubtful, with the plots that failed.
fn warnings(s: &mut String, a: &Findings, plot_outcome: &crate::report::figures::PlotOutcome) {
    let _ = writeln!(s, "## Warnings\n");
    if a.quality.warnings.is_empty() && plot_outcome.errors.is_empty() {
        let _ = writeln!(s, "None.\n");
    } else {
        let lines = a.quality.warnings.iter().map(|w| w.line());
        for w in lines.chain(plot_outcome.errors.iter().cloned()) {
            let _ = writeln!(s, "- {w}");
        }
        s.push('\n');
    }
}

/// The recommendation for each budget, one line each, before anything
/// else: how each was reached follows the summary ([`reasoning`]).
fn recommendations(s: &mut String, a: &Findings) {
    let _ = writeln!(s, "## Recommended sampling rates\n");
    if a.subject.profiler.is_some() {
        for line in crate::subject::profiler::report::recommendation_lines(&a.budgets.profiler) {
            let _ = writeln!(s, "- {line}");
        }
        let _ = writeln!(s, "\nHow they were reached: \"Your profiler\" below.\n");
        return;
    }
    for (budget, rec) in &a.budgets.sampler {
        let line = match rec {
            Ok(rec) => rec.headline(),
            Err(e) => e.to_string(),
        };
        let _ = writeln!(s, "- {budget} % loss budget: {line}");
    }
    let _ = writeln!(
        s,
        "\nHow each was reached, and what it rests on: \"How each recommendation was reached\" below.\n"
    );
}

/// The key figures.
fn summary(s: &mut String, a: &Findings) {
    let _ = writeln!(s, "## Summary\n");
    for line in key_lines(a) {
        let _ = writeln!(s, "- {line}");
    }
    s.push('\n');
}

/// Each recommendation's reasoning: its basis, the cost it used, and what
/// the other basis would have said. Lines every budget shares (the loss
/// model's terms and tests) are written once, after them.
fn reasoning(s: &mut String, at_budgets: &[crate::recommend::Budgeted]) {
    let _ = writeln!(s, "## How each recommendation was reached\n");
    let oks: Vec<&crate::recommend::Recommendation> = at_budgets
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok())
        .collect();
    let shared: Vec<&String> = match oks.split_first() {
        Some((first, rest)) if !rest.is_empty() => first
            .reasoning
            .iter()
            .filter(|l| rest.iter().all(|r| r.reasoning.contains(l)))
            .collect(),
        _ => Vec::new(),
    };
    for (budget, rec) in at_budgets {
        match rec {
            Ok(rec) => {
                let _ = writeln!(s, "- {budget} % budget: {}", rec.headline());
                for line in rec.reasoning.iter().filter(|l| !shared.contains(l)) {
                    let _ = writeln!(s, "  {line}");
                }
            }
            Err(e) => {
                let _ = writeln!(s, "- {budget} % budget: {e}");
            }
        }
    }
    if !shared.is_empty() {
        let _ = writeln!(s, "- Every budget:");
        for line in shared {
            let _ = writeln!(s, "  {line}");
        }
    }
    s.push('\n');
}

/// What a sample costs: the gaps design, by contents, the after-effect.
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
    s.push_str(&crate::report::contents::render_after(
        &a.contents.after_rows,
    ));
}

/// Table 1: handler CPU utilisation.
fn table1(s: &mut String, a: &Findings, r: &Reference) {
    let _ = writeln!(s, "## Table 1: handler CPU utilisation\n");
    let _ = writeln!(
        s,
        "Utilisation = sum of handler durations (source hrtimer or nmi) on the measured CPU / the run's window_ns x 100; mean over runs with a 95% t interval. Durations: handler ns per sample = mean over runs of each run's mean handler duration, with a 95% t interval over runs (the handler's cost per sample at this rate); mean pooled over runs; median and p99 = median over runs of each run's value.\n"
    );
    table_head(
        s,
        "| freq_hz | runs | calls/s | achieved_hz | handler ns per sample [95% CI] | mean_ns | median_ns | p99_ns | util_pct [95% CI] | whole interrupt util_pct | 2014 util_pct |",
    );
    if a.tables.util.is_empty() {
        let _ = writeln!(s, "| (no successful util runs) ||||||||||");
    }
    for row in &a.tables.util {
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} | {:.0} | {} | {:.0} | {:.0} | {:.0} | {} | {} | {} |",
            row.freq_hz,
            row.runs,
            row.calls_per_s,
            row.achieved_hz,
            fmt_est(&row.per_sample_ns, 0),
            row.mean_ns,
            row.median_ns,
            row.p99_ns,
            fmt_est(&row.util_pct, 4),
            row.local_timer_util_pct
                .map_or("not captured".to_string(), |e| fmt_est(&e, 4)),
            fmt_opt(r.util_at(row.freq_hz), 4),
        );
    }
    s.push('\n');
}

/// Table 2: performance loss.
fn table2(s: &mut String, a: &Findings, r: &Reference) {
    let _ = writeln!(s, "## Table 2: performance loss\n");
    let _ = writeln!(
        s,
        "Loop counts per run (rep order), their mean, and loss = 1 - mean rate(F) / mean rate(0). Classic design: 95% interval by the delta method on the ratio of means, t quantile on Welch-Satterthwaite df. Paired design: per ABBA group loss = 1 - mean on-rate / mean off-rate (phases.csv), t interval over groups; the last column is the t interval over runs of each run's mean group loss, which also covers a loss that varies between runs (a warning says when a one-way ANOVA by run finds it does, p < 0.05).\n"
    );
    if a.tables
        .loss
        .iter()
        .any(|r| r.method.starts_with("1 - exp("))
    {
        let _ = writeln!(
            s,
            "A command's runs (`--command`, one iteration each: a whole run) are compared within blocks instead: loss = 1 - exp(-mean ln(wall F / wall 0)) over the blocks with both runs, t interval over blocks, as in the section on the command.\n"
        );
    }
    let nmax = a.tables.most_loss_runs();
    let mut header = "| freq_hz | achieved_hz | design |".to_string();
    for i in 1..=nmax {
        let _ = write!(header, " run{i} |");
    }
    header.push_str(
        " mean | loss_pct [95% CI] | n | 2014 loss_pct | paired: 95% CI over runs (runs) |",
    );
    table_head(s, &header);
    for row in &a.tables.loss {
        let achieved = if row.achieved_hz.is_finite() {
            format!("{:.0}", row.achieved_hz)
        } else {
            "-".to_string()
        };
        let mut line = format!("| {} | {achieved} | {} |", row.freq_hz, row.design);
        for i in 0..nmax {
            let _ = write!(
                line,
                " {} |",
                row.iterations
                    .get(i)
                    .map(|v| v.to_string())
                    .unwrap_or_default()
            );
        }
        let _ = write!(
            line,
            " {:.1} | {} | {} | {} |",
            row.mean_iterations,
            fmt_est(&row.loss_pct, 3),
            row.loss_pct.n,
            fmt_opt(r.loss_at(row.freq_hz), 2)
        );
        match row.loss_by_run_pct {
            Some(e) if e.lo.is_finite() => {
                let _ = write!(line, " [{:.3}, {:.3}] ({}) |", e.lo, e.hi, e.n);
            }
            Some(e) => {
                let _ = write!(line, " n/a ({} run) |", e.n);
            }
            None => line.push_str("  |"),
        }
        let _ = writeln!(s, "{line}");
    }
    s.push('\n');
}

/// What the handler tracepoints cost.
fn tracing_cost(s: &mut String, a: &Findings) {
    let _ = writeln!(s, "## Tracing cost\n");
    let _ = writeln!(
        s,
        "Loss measured in util runs (handler tracepoints on) against the 0 Hz loss runs, next to the loss without tracepoints. Utilisation is measured with tracing on; loss only without.\n"
    );
    table_head(
        s,
        "| freq_hz | loss_pct (no tracepoints) | loss_pct (tracepoints on) | tracing cost (pp) |",
    );
    if a.tables.tracing.is_empty() {
        let _ = writeln!(s, "| (needs util runs and 0 Hz loss runs) ||||");
    }
    for row in &a.tables.tracing {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3} |",
            row.freq_hz,
            row.loss_pct.map_or("n/a".to_string(), |e| fmt_est(&e, 3)),
            fmt_est(&row.loss_util_runs_pct, 3),
            row.tracing_cost_pp()
        );
    }
    s.push('\n');
}

/// The fitted factors.
fn fits(s: &mut String, a: &Findings) {
    let _ = writeln!(s, "## Fitted factors\n");
    let _ = writeln!(
        s,
        "Frequencies in kHz; weighted least squares (weights 1 / variance of each point's mean) when every point has a variance, else unweighted.\n"
    );
    if let Some(fit) = &a.tables.fits.util_origin {
        let _ = writeln!(
            s,
            "- util % = delta x f (through the origin, the article's form): {}",
            fmt_fit_line(fit, "%")
        );
    }
    if let Some(fit) = &a.tables.fits.util_line {
        let _ = writeln!(s, "- util % = a + b x f: {}", fmt_fit_line(fit, "%"));
    }
    if let Some(fit) = &a.tables.fits.loss_line {
        let _ = writeln!(s, "- loss % = a + b x f: {}", fmt_fit_line(fit, "%"));
    }
    let _ = writeln!(
        s,
        "- handler cost per sample = delta x 10^4 ns: {} ns (from util = a + b f: {} ns); 2014: {:.0} ns",
        fmt_opt(a.tables.fits.cost_per_sample_ns, 0),
        fmt_opt(a.tables.fits.cost_per_sample_line_ns, 0),
        ARTICLE_DELTA_PCT_PER_KHZ * 1e4
    );
    let _ = writeln!(
        s,
        "- the article's own estimator (mean of util/f over frequencies): {} %/kHz here, {:.4} %/kHz in 2014",
        fmt_opt(a.tables.fits.delta_mean_ratio, 4),
        ARTICLE_DELTA_PCT_PER_KHZ
    );
    let _ = writeln!(
        s,
        "- loss slope / util slope: {}\n",
        fmt_opt(a.tables.fits.loss_to_util_slope_ratio, 2)
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
    for line in removed.lines() {
        let _ = writeln!(s, "- {line}");
    }
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

/// The plots and where the tables are.
fn footer(s: &mut String, a: &Findings, plots: &[PathBuf]) {
    if !plots.is_empty() {
        let _ = writeln!(s, "## Plots\n");
        for name in plots.iter().filter_map(|p| svg_name(p)) {
            if name != BUDGET_SVG {
                let _ = writeln!(s, "![{name}]({name})");
            }
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "Tables as CSV: util.csv, loss.csv, tracing.csv{}; fits: fit.json. The same report as one page: report.html. Method: docs/methodology.md.",
        match (a.gaps.per_sample.is_some(), a.contents.rows.is_empty()) {
            (true, false) => ", per_sample.csv, by_contents.csv",
            (true, true) => ", per_sample.csv",
            (false, false) => ", by_contents.csv",
            (false, true) => "",
        }
    );
}
