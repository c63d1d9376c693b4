//! `analysis report DIR`: DIR/report/{report.md, util.csv, loss.csv,
//! tracing.csv, fit.json} and the plots.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::AnalysisError;
use crate::load::{ResultSet, load};
use crate::recommend::recommend;

/// Overhead budgets the report always answers for (design-review staples).
const REPORT_BUDGETS_PCT: [f64; 3] = [0.1, 1.0, 5.0];
use crate::reference::{ARTICLE_DELTA_PCT_PER_KHZ, Reference};
use crate::stats::Estimate;
use crate::tables::{Analysis, analyse};

/// Analyse DIR and write DIR/report/. Returns the report directory.
pub fn write_report(dir: &Path) -> Result<PathBuf, AnalysisError> {
    let rs = load(dir)?;
    let analysis = analyse(&rs)?;
    let reference = Reference::article_2014()?;
    let out = dir.join("report");
    std::fs::create_dir_all(&out).map_err(|e| AnalysisError::write(&out, e))?;
    write_util_csv(&out.join("util.csv"), &analysis, &reference)?;
    write_loss_csv(&out.join("loss.csv"), &analysis)?;
    write_tracing_csv(&out.join("tracing.csv"), &analysis)?;
    if let Some(ps) = &analysis.per_sample {
        crate::percost_report::write_csv(&out.join("per_sample.csv"), ps)?;
    }
    if !analysis.by_contents.is_empty() {
        crate::contents_report::write_csv(&out.join("by_contents.csv"), &analysis.by_contents)?;
    }
    if !analysis.after_rows.is_empty() {
        crate::contents_report::write_after_csv(
            &out.join("after_effect.csv"),
            &analysis.after_rows,
        )?;
    }
    let command = crate::command::command_table(&rs.runs);
    if !command.is_empty() {
        crate::command_report::write_csv(&out.join("command.csv"), &command)?;
    }
    let fit_path = out.join("fit.json");
    let fit_json = serde_json::to_string_pretty(&fit_document(&analysis))
        .map_err(|e| AnalysisError::write(&fit_path, std::io::Error::other(e)))?;
    write_file(&fit_path, &fit_json)?;
    let plots = crate::plots::write_plots(&out, &analysis, &reference);
    let mut md = render_markdown(&rs, &analysis, &reference, &plots);
    if !command.is_empty() {
        // Right after the summary: for a command sweep it is the answer.
        let section = crate::command_report::render(&command, command_line(&rs).as_deref());
        let at = md
            .find("## Summary")
            .and_then(|i| md[i + 1..].find("\n## ").map(|j| i + j + 2))
            .unwrap_or(md.len());
        md.insert_str(at, &section);
    }
    write_file(&out.join("report.md"), &md)?;
    Ok(out)
}

/// The sweep's `--command`, shell-quoted, from the manifest's options.
fn command_line(rs: &ResultSet) -> Option<String> {
    let argv = rs.manifest.options["command"].as_array()?;
    let words: Vec<String> = argv
        .iter()
        .map(|w| w.as_str().unwrap_or_default().to_string())
        .collect();
    Some(
        words
            .iter()
            .map(|w| {
                if !w.is_empty()
                    && w.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+".contains(c))
                {
                    w.clone()
                } else {
                    format!("'{}'", w.replace('\'', "'\\''"))
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn write_file(path: &Path, text: &str) -> Result<(), AnalysisError> {
    std::fs::write(path, text).map_err(|e| AnalysisError::write(path, e))
}

/// fit.json: the fits plus the reference factor.
pub fn fit_document(a: &Analysis) -> serde_json::Value {
    serde_json::json!({
        "units": {"x": "kHz", "util": "percent", "loss": "percent", "cost_per_sample": "ns"},
        "fits": a.fits,
        "reference_2014": {
            "delta_pct_per_khz": ARTICLE_DELTA_PCT_PER_KHZ,
            "cost_per_sample_ns": ARTICLE_DELTA_PCT_PER_KHZ * 1e4,
        },
    })
}

fn csv_err(path: &Path) -> impl Fn(csv::Error) -> AnalysisError + '_ {
    move |e| AnalysisError::write(path, std::io::Error::other(e))
}

fn f(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        String::new()
    }
}

fn write_util_csv(path: &Path, a: &Analysis, r: &Reference) -> Result<(), AnalysisError> {
    let err = csv_err(path);
    let mut w = csv::Writer::from_path(path).map_err(&err)?;
    w.write_record([
        "freq_hz",
        "runs",
        "calls_per_s",
        "mean_ns",
        "per_sample_ns",
        "per_sample_lo_ns",
        "per_sample_hi_ns",
        "median_ns",
        "p99_ns",
        "util_pct",
        "util_lo_pct",
        "util_hi_pct",
        "local_timer_util_pct",
        "local_timer_util_lo_pct",
        "local_timer_util_hi_pct",
        "achieved_hz",
        "reference_2014_util_pct",
    ])
    .map_err(&err)?;
    for row in &a.util {
        let lt = row
            .local_timer_util_pct
            .unwrap_or(Estimate::point(f64::NAN, 0));
        w.write_record([
            row.freq_hz.to_string(),
            row.runs.to_string(),
            f(row.calls_per_s),
            f(row.mean_ns),
            f(row.per_sample_ns.value),
            f(row.per_sample_ns.lo),
            f(row.per_sample_ns.hi),
            f(row.median_ns),
            f(row.p99_ns),
            f(row.util_pct.value),
            f(row.util_pct.lo),
            f(row.util_pct.hi),
            f(lt.value),
            f(lt.lo),
            f(lt.hi),
            f(row.achieved_hz),
            r.util_at(row.freq_hz).map(f).unwrap_or_default(),
        ])
        .map_err(&err)?;
    }
    w.flush().map_err(|e| AnalysisError::write(path, e))
}

fn write_loss_csv(path: &Path, a: &Analysis) -> Result<(), AnalysisError> {
    let err = csv_err(path);
    let mut w = csv::Writer::from_path(path).map_err(&err)?;
    let nmax = a.loss.iter().map(|r| r.iterations.len()).max().unwrap_or(0);
    let mut header = vec![
        "freq_hz".to_string(),
        "achieved_hz".to_string(),
        "design".to_string(),
    ];
    header.extend((1..=nmax).map(|i| format!("run{i}")));
    header.extend(
        [
            "mean",
            "loss_pct",
            "loss_lo_pct",
            "loss_hi_pct",
            "n",
            "loss_lo_by_run_pct",
            "loss_hi_by_run_pct",
            "n_runs",
            "between_runs_p",
            "method",
        ]
        .map(String::from),
    );
    w.write_record(&header).map_err(&err)?;
    for row in &a.loss {
        let mut rec = vec![
            row.freq_hz.to_string(),
            f(row.achieved_hz),
            row.design.to_string(),
        ];
        rec.extend((0..nmax).map(|i| {
            row.iterations
                .get(i)
                .map(|v| v.to_string())
                .unwrap_or_default()
        }));
        rec.extend([
            f(row.mean_iterations),
            f(row.loss_pct.value),
            f(row.loss_pct.lo),
            f(row.loss_pct.hi),
            row.loss_pct.n.to_string(),
            row.loss_by_run_pct.map(|e| f(e.lo)).unwrap_or_default(),
            row.loss_by_run_pct.map(|e| f(e.hi)).unwrap_or_default(),
            row.loss_by_run_pct
                .map(|e| e.n.to_string())
                .unwrap_or_default(),
            row.between_runs.map(|(_, p)| f(p)).unwrap_or_default(),
            row.method.clone(),
        ]);
        w.write_record(&rec).map_err(&err)?;
    }
    w.flush().map_err(|e| AnalysisError::write(path, e))
}

fn write_tracing_csv(path: &Path, a: &Analysis) -> Result<(), AnalysisError> {
    let err = csv_err(path);
    let mut w = csv::Writer::from_path(path).map_err(&err)?;
    w.write_record([
        "freq_hz",
        "loss_pct",
        "loss_util_runs_pct",
        "tracing_cost_pp",
    ])
    .map_err(&err)?;
    for row in &a.tracing {
        w.write_record([
            row.freq_hz.to_string(),
            row.loss_pct.map(|e| f(e.value)).unwrap_or_default(),
            f(row.loss_util_runs_pct.value),
            f(row.tracing_cost_pp()),
        ])
        .map_err(&err)?;
    }
    w.flush().map_err(|e| AnalysisError::write(path, e))
}

/// `v [lo, hi]` with `d` decimals; `v` alone without an interval.
pub fn fmt_est(e: &Estimate, d: usize) -> String {
    if !e.value.is_finite() {
        return "n/a".to_string();
    }
    if e.lo.is_finite() && e.hi.is_finite() {
        format!("{:.d$} [{:.d$}, {:.d$}]", e.value, e.lo, e.hi)
    } else {
        format!("{:.d$}", e.value)
    }
}

fn fmt_opt(v: Option<f64>, d: usize) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.d$}"),
        _ => "n/a".to_string(),
    }
}

fn fmt_fit_line(fit: &crate::fit::LineFit, unit: &str) -> String {
    let lof = if fit.chi2.is_finite() {
        format!(
            "; lack of fit chi^2 = {:.2} on {} df, p = {:.3e}{}",
            fit.chi2,
            fit.dof(),
            fit.lack_of_fit_p,
            if fit.describes() {
                ""
            } else {
                ": one line does not describe these rates"
            }
        )
    } else {
        String::new()
    };
    format!("{}{lof}", fmt_fit_body(fit, unit))
}

fn fmt_fit_body(fit: &crate::fit::LineFit, unit: &str) -> String {
    let (slo, shi) = fit.slope_ci();
    if fit.through_origin {
        format!(
            "{:.4} {unit} per kHz (SE {:.4}, 95% CI [{:.4}, {:.4}]), R^2 (uncentred) {:.4}, n {}, {}",
            fit.slope,
            fit.se_slope,
            slo,
            shi,
            fit.r2,
            fit.n,
            if fit.weighted {
                "weighted 1/var"
            } else {
                "unweighted"
            }
        )
    } else {
        format!(
            "a = {:.4} {unit} (SE {:.4}), b = {:.4} {unit}/kHz (SE {:.4}, 95% CI [{:.4}, {:.4}]), R^2 {:.4}, n {}, {}",
            fit.intercept,
            fit.se_intercept,
            fit.slope,
            fit.se_slope,
            slo,
            shi,
            fit.r2,
            fit.n,
            if fit.weighted {
                "weighted 1/var"
            } else {
                "unweighted"
            }
        )
    }
}

/// The headline lines (also used by tests and `compare`).
pub fn key_lines(a: &Analysis) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(ps) = &a.per_sample {
        v.extend(crate::percost_report::key_lines(ps));
    }
    match a.fits.util_origin {
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
    if let Some(fit) = a.fits.util_origin.filter(|f| f.chi2.is_finite()) {
        let range = match a.fits.util_factor_up_to_hz {
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
    if let Some(fit) = a.fits.loss_line {
        v.push(format!(
            "Performance loss = {:.3}% + {:.4} %/kHz x f (fixed cost of perf on + per-sample cost {:.0} ns of lost work per sample).",
            fit.intercept,
            fit.slope,
            fit.slope * 1e4
        ));
    }
    if let Some(r) = a.fits.loss_to_util_slope_ratio {
        v.push(format!(
            "The application loses {r:.2}x the handler's own CPU time per sample (loss slope / utilisation slope)."
        ));
    }
    v
}

fn render_markdown(
    rs: &ResultSet,
    a: &Analysis,
    r: &Reference,
    plot_outcome: &crate::plots::PlotOutcome,
) -> String {
    let plots = &plot_outcome.files;
    let mut s = String::new();
    let m = &rs.manifest;
    let _ = writeln!(s, "# perf sampling overhead on {}\n", m.host_label(&rs.dir));
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
        if a.events.is_empty() {
            "none".to_string()
        } else {
            a.events.join(", ")
        },
        if a.scopes.is_empty() {
            "n/a".to_string()
        } else {
            a.scopes.join(", ")
        },
        if a.contents.is_empty() {
            "n/a".to_string()
        } else {
            a.contents.join(", ")
        },
        rs.runs.len(),
        rs.runs.iter().filter(|r| !r.ok()).count(),
        a.excluded.len()
    );
    if !a.excluded.is_empty() {
        let _ = writeln!(s, "## Excluded runs\n");
        let _ = writeln!(
            s,
            "A file of these runs could not be read; they are left out of every table and plot \
             below, which report the other runs.\n"
        );
        for x in &a.excluded {
            let _ = writeln!(s, "- {}", x.line());
        }
        s.push('\n');
    }

    let _ = writeln!(s, "## Warnings\n");
    if a.warnings.is_empty() && plot_outcome.errors.is_empty() {
        let _ = writeln!(s, "None.\n");
    } else {
        for w in a.warnings.iter().chain(&plot_outcome.errors) {
            let _ = writeln!(s, "- {w}");
        }
        s.push('\n');
    }

    let _ = writeln!(s, "## Summary\n");
    for line in key_lines(a) {
        let _ = writeln!(s, "- {line}");
    }
    for budget in REPORT_BUDGETS_PCT {
        match recommend(a, budget) {
            Ok(rec) => {
                let _ = writeln!(
                    s,
                    "- Recommendation for a {budget}% loss budget: {}",
                    rec.headline()
                );
                for line in &rec.reasoning {
                    let _ = writeln!(s, "  {line}");
                }
            }
            Err(e) => {
                let _ = writeln!(s, "- Recommendation for a {budget}% loss budget: {e}");
            }
        }
    }
    s.push('\n');

    if let Some(ps) = &a.per_sample {
        s.push_str(&crate::percost_report::render(ps));
    }
    s.push_str(&crate::contents_report::render(a));
    s.push_str(&crate::contents_report::render_after(&a.after_rows));

    let _ = writeln!(s, "## Table 1: handler CPU utilisation\n");
    let _ = writeln!(
        s,
        "Utilisation = sum of handler durations (source hrtimer or nmi) on the measured CPU / the run's window_ns x 100; mean over runs with a 95% t interval. Durations: handler ns per sample = mean over runs of each run's mean handler duration, with a 95% t interval over runs (the handler's cost per sample at this rate); mean pooled over runs; median and p99 = median over runs of each run's value.\n"
    );
    let _ = writeln!(
        s,
        "| freq_hz | runs | calls/s | achieved_hz | handler ns per sample [95% CI] | mean_ns | median_ns | p99_ns | util_pct [95% CI] | whole interrupt util_pct | 2014 util_pct |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|");
    if a.util.is_empty() {
        let _ = writeln!(s, "| (no successful util runs) ||||||||||");
    }
    for row in &a.util {
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

    let _ = writeln!(s, "## Table 2: performance loss\n");
    let _ = writeln!(
        s,
        "Loop counts per run (rep order), their mean, and loss = 1 - mean rate(F) / mean rate(0). Classic design: 95% interval by the delta method on the ratio of means, t quantile on Welch-Satterthwaite df. Paired design: per ABBA group loss = 1 - mean on-rate / mean off-rate (phases.csv), t interval over groups; the last column is the t interval over runs of each run's mean group loss, which also covers a loss that varies between runs (a warning says when a one-way ANOVA by run finds it does, p < 0.05).\n"
    );
    let nmax = a.loss.iter().map(|r| r.iterations.len()).max().unwrap_or(0);
    let mut header = "| freq_hz | achieved_hz | design |".to_string();
    for i in 1..=nmax {
        let _ = write!(header, " run{i} |");
    }
    header.push_str(
        " mean | loss_pct [95% CI] | n | 2014 loss_pct | paired: 95% CI over runs (runs) |",
    );
    let _ = writeln!(s, "{header}");
    let _ = writeln!(s, "|{}", "---|".repeat(nmax + 8));
    for row in &a.loss {
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

    let _ = writeln!(s, "## Tracing cost\n");
    let _ = writeln!(
        s,
        "Loss measured in util runs (handler tracepoints on) against the 0 Hz loss runs, next to the loss without tracepoints. Utilisation is measured with tracing on; loss only without.\n"
    );
    let _ = writeln!(
        s,
        "| freq_hz | loss_pct (no tracepoints) | loss_pct (tracepoints on) | tracing cost (pp) |"
    );
    let _ = writeln!(s, "|---|---|---|---|");
    if a.tracing.is_empty() {
        let _ = writeln!(s, "| (needs util runs and 0 Hz loss runs) ||||");
    }
    for row in &a.tracing {
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

    let _ = writeln!(s, "## Fitted factors\n");
    let _ = writeln!(
        s,
        "Frequencies in kHz; weighted least squares (weights 1 / variance of each point's mean) when every point has a variance, else unweighted.\n"
    );
    if let Some(fit) = &a.fits.util_origin {
        let _ = writeln!(
            s,
            "- util % = delta x f (through the origin, the article's form): {}",
            fmt_fit_line(fit, "%")
        );
    }
    if let Some(fit) = &a.fits.util_line {
        let _ = writeln!(s, "- util % = a + b x f: {}", fmt_fit_line(fit, "%"));
    }
    if let Some(fit) = &a.fits.loss_line {
        let _ = writeln!(s, "- loss % = a + b x f: {}", fmt_fit_line(fit, "%"));
    }
    let _ = writeln!(
        s,
        "- handler cost per sample = delta x 10^4 ns: {} ns (from util = a + b f: {} ns); 2014: {:.0} ns",
        fmt_opt(a.fits.cost_per_sample_ns, 0),
        fmt_opt(a.fits.cost_per_sample_line_ns, 0),
        ARTICLE_DELTA_PCT_PER_KHZ * 1e4
    );
    let _ = writeln!(
        s,
        "- the article's own estimator (mean of util/f over frequencies): {} %/kHz here, {:.4} %/kHz in 2014",
        fmt_opt(a.fits.delta_mean_ratio, 4),
        ARTICLE_DELTA_PCT_PER_KHZ
    );
    let _ = writeln!(
        s,
        "- loss slope / util slope: {}\n",
        fmt_opt(a.fits.loss_to_util_slope_ratio, 2)
    );

    if !plots.is_empty() {
        let _ = writeln!(s, "## Plots\n");
        for p in plots {
            if p.extension().is_some_and(|e| e == "svg") {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let _ = writeln!(s, "![{name}]({name})");
            }
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "Tables as CSV: util.csv, loss.csv, tracing.csv{}; fits: fit.json. Method: docs/methodology.md.",
        match (a.per_sample.is_some(), a.by_contents.is_empty()) {
            (true, false) => ", per_sample.csv, by_contents.csv",
            (true, true) => ", per_sample.csv",
            (false, false) => ", by_contents.csv",
            (false, true) => "",
        }
    );
    s
}
