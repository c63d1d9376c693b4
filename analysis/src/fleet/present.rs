//! The fleet's answer box, report.md, report.html, the figure, fleet.csv
//! (one row per class and one for the fleet), hosts.csv, missing.csv and
//! skipped.csv. Formats only: every figure comes from [`super::classes`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use results_format::summary::SUMMARY_BUDGETS;

use super::Fleet;
use super::classes::ClassFigures;
use crate::error::AnalysisError;

fn us(ns: f64) -> String {
    if ns.is_finite() {
        format!("{:.1} us", ns / 1000.0)
    } else {
        "-".to_string()
    }
}

fn hz(v: f64) -> String {
    format!("{v:.0} Hz")
}

/// The loss % at `rate_hz` of a sample costing `cost_ns`.
fn loss_at(cost_ns: f64, rate_hz: f64) -> f64 {
    cost_ns * rate_hz * 1e-7
}

/// The budget lines of a class: `1 %: 95 % of hosts up to 1234 Hz (set
/// 1231 Hz), every host up to 990 Hz`.
fn budget_lines(c: &ClassFigures) -> Vec<String> {
    c.budgets
        .iter()
        .map(|b| {
            let set = b
                .p95_host_rate_hz
                .map_or(String::new(), |r| format!(" (set {r} Hz)"));
            let mut marks = Vec::new();
            if b.hosts_without_answer > 0 {
                marks.push(format!("{} hosts with no rate within it", b.hosts_without_answer));
            }
            if b.hosts_at_highest_measured > 0 {
                marks.push(format!(
                    "{} hosts within it at every rate they measured (a lower bound)",
                    b.hosts_at_highest_measured
                ));
            }
            if b.hosts_bounds_only > 0 {
                marks.push(format!("{} hosts answered from bounds only", b.hosts_bounds_only));
            }
            let marks = if marks.is_empty() {
                String::new()
            } else {
                format!("; {}", marks.join(", "))
            };
            format!(
                "{:>4} % budget: the 95th-percentile host up to {}{set}, every host up to {}{marks}",
                b.budget_pct,
                hz(b.p95_host_max_hz),
                hz(b.every_host_max_hz)
            )
        })
        .collect()
}

/// The answer box: the fleet's answer first, then what to look at.
pub fn answer_box(f: &Fleet) -> Vec<String> {
    let c = &f.fleet;
    let counted = if c.hosts == c.distinct_hosts {
        format!("{} hosts", c.hosts)
    } else {
        format!("{} host-dates of {} hosts", c.hosts, c.distinct_hosts)
    };
    let mut out = vec![format!(
        "Fleet answer: {counted} in {} class{} ({} by {}; {} sets{}{})",
        f.classes.len(),
        if f.classes.len() == 1 { "" } else { "es" },
        if f.all {
            "every date"
        } else {
            "newest set per host"
        },
        f.by.join(" x "),
        f.sets,
        match (f.made, f.cached) {
            (0, 0) => String::new(),
            (m, 0) => format!(", {m} made from their tables"),
            (0, c) => format!(", {c} unchanged since the last run"),
            (m, c) => format!(", {m} made from their tables, {c} unchanged since the last run"),
        },
        if f.missing.is_empty() {
            String::new()
        } else {
            format!(", {} hosts missing", f.missing.len())
        },
    )];
    out.push(format!(
        "  cost per sample (at the rate nearest {}{}): median {}, p95 {}, max {}",
        hz(f.at_hz),
        if c.with_cost < c.hosts {
            format!("; {} of them measured it", c.with_cost)
        } else {
            String::new()
        },
        us(c.cost_median_ns),
        us(c.cost_p95_ns),
        us(c.cost_max_ns)
    ));
    out.extend(budget_lines(c).into_iter().map(|l| format!("  {l}")));
    out.push(format!(
        "  at {}: the costliest host loses {:.3} %, the median host {:.3} % (cost x rate)",
        hz(f.rate_hz),
        loss_at(c.cost_max_ns, f.rate_hz),
        loss_at(c.cost_median_ns, f.rate_hz)
    ));
    for cl in &f.classes {
        let one = &cl.budgets[1.min(cl.budgets.len() - 1)];
        out.push(format!(
            "  class {}: {}{}, median {}, 1 % -> {} (95th pct host)",
            cl.class,
            if cl.hosts == cl.distinct_hosts {
                format!("{} host{}", cl.hosts, if cl.hosts == 1 { "" } else { "s" })
            } else {
                format!(
                    "{} host-dates of {} host{}",
                    cl.hosts,
                    cl.distinct_hosts,
                    if cl.distinct_hosts == 1 { "" } else { "s" }
                )
            },
            if cl.single {
                " (a class of one: its host's own answer)"
            } else {
                ""
            },
            us(cl.cost_median_ns),
            hz(one.p95_host_max_hz)
        ));
    }
    out.extend(look_at(f).into_iter().map(|l| format!("  look at: {l}")));
    for m in &f.missing {
        out.push(format!(
            "  missing: {} on {} ({}: {})",
            m.host, m.date, m.stage, m.reason
        ));
    }
    if !f.skipped.is_empty() {
        out.push(format!(
            "  skipped: {} sets (skipped.csv says why)",
            f.skipped.len()
        ));
    }
    out
}

/// At most this many hosts are named on a line; hosts.csv has them all.
const NAMED: usize = 5;

/// `n hosts: a, b, c and 4 more`.
fn some_named(names: &[String]) -> String {
    let shown = names
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > NAMED {
        format!(
            "{} hosts: {shown} and {} more (hosts.csv)",
            names.len(),
            names.len() - NAMED
        )
    } else {
        shown
    }
}

/// The hosts to look at, one line per kind, a few named on each.
fn look_at(f: &Fleet) -> Vec<String> {
    let mut out = Vec::new();
    let mut outliers: Vec<(&str, &super::classes::Outlier)> = f
        .classes
        .iter()
        .flat_map(|c| c.outliers.iter().map(move |o| (c.class.as_str(), o)))
        .collect();
    outliers.sort_by(|a, b| b.1.z.abs().total_cmp(&a.1.z.abs()));
    for (class, o) in outliers.iter().take(NAMED) {
        out.push(format!(
            "host {} costs {} ({:.2}x its class median, modified z {:.1}) in class {class}",
            o.host,
            us(o.cost_ns),
            o.ratio,
            o.z,
        ));
    }
    if outliers.len() > NAMED {
        out.push(format!(
            "{} more hosts outside their class's spread (hosts.csv, outside_spread)",
            outliers.len() - NAMED
        ));
    }
    if !f.fleet.conservative.is_empty() {
        out.push(format!(
            "conservative answers (model and throughput disagreed): {}",
            some_named(&f.fleet.conservative)
        ));
    }
    if !f.fleet.drifted.is_empty() {
        out.push(format!(
            "cost moved during the sweep: {}",
            some_named(&f.fleet.drifted)
        ));
    }
    let unjudged: Vec<&str> = f
        .classes
        .iter()
        .filter(|c| !c.spread_judged)
        .map(|c| c.class.as_str())
        .collect();
    if !unjudged.is_empty() {
        out.push(format!(
            "spread not judged in {} class(es) of fewer than {} hosts",
            unjudged.len(),
            super::classes::SPREAD_MIN_HOSTS
        ));
    }
    out
}

/// report.md's text.
fn markdown(f: &Fleet, figures: &[String]) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Fleet: what perf sampling costs, host by host\n");
    let _ = writeln!(md, "```");
    for l in answer_box(f) {
        let _ = writeln!(md, "{l}");
    }
    let _ = writeln!(md, "```\n");
    for fig in figures {
        let _ = writeln!(md, "![{fig}]({fig})\n");
    }
    let _ = writeln!(
        md,
        "Each host is its newest result set{} (`analysis fleet --all` keeps every date). A \
         host's cost per sample is the gaps design's at its measured rate nearest {} \
         (`--at`), with the 95 % interval over its runs. A host's highest rate within a \
         budget is its own answer (the upper end of its prediction interval, or the \
         conservative or throughput basis its report chose); the 95th-percentile host's \
         rate is the 5th percentile of those (linear interpolation, as DuckDB's \
         `quantile_cont`), so 95 % of the hosts are within budget at it. A host is outside \
         its class's spread when its modified z-score exceeds {} (classes of {} or more \
         hosts). The lines on the figure are the cost per sample each budget allows at {}.\n",
        if f.all { " and every earlier one" } else { "" },
        hz(f.at_hz),
        super::classes::OUTLIER_Z,
        super::classes::SPREAD_MIN_HOSTS,
        hz(f.rate_hz),
    );
    let _ = writeln!(md, "## Classes\n");
    let mut header = "| class | hosts | median | p95 | max |".to_string();
    let mut rule = "|---|---|---|---|---|".to_string();
    for (pct, _) in SUMMARY_BUDGETS {
        let _ = write!(header, " {pct} %: p95 host | {pct} %: every host |");
        rule.push_str("---|---|");
    }
    let _ = writeln!(md, "{header}\n{rule}");
    for c in std::iter::once(&f.fleet).chain(f.classes.iter()) {
        let mut row = format!(
            "| {}{} | {} | {} | {} | {} |",
            c.class,
            if c.single { " (one host)" } else { "" },
            c.hosts,
            us(c.cost_median_ns),
            us(c.cost_p95_ns),
            us(c.cost_max_ns)
        );
        for b in &c.budgets {
            let _ = write!(
                row,
                " {} | {} |",
                hz(b.p95_host_max_hz),
                hz(b.every_host_max_hz)
            );
        }
        let _ = writeln!(md, "{row}");
    }
    let look = look_at(f);
    if !look.is_empty() {
        let _ = writeln!(md, "\n## Hosts to look at\n");
        for l in look {
            let _ = writeln!(md, "- {l}");
        }
    }
    let _ = writeln!(md, "\n## Hosts\n");
    const SHOWN: usize = 100;
    let _ = writeln!(
        md,
        "| host | date | class | rate | cost | 95 % CI | 1 % budget |\n|---|---|---|---|---|---|---|"
    );
    let mut hosts: Vec<&super::hosts::HostObs> = f.hosts.iter().collect();
    hosts.sort_by(|a, b| {
        b.cost_ns
            .unwrap_or(-1.0)
            .total_cmp(&a.cost_ns.unwrap_or(-1.0))
    });
    for o in hosts.iter().take(SHOWN) {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} Hz | {} | {} to {} | {} |",
            o.host,
            o.date,
            super::classes::label(o),
            o.freq_hz,
            o.cost_ns.map_or("-".to_string(), us),
            o.cost_lo_ns.map_or("-".to_string(), us),
            o.cost_hi_ns.map_or("-".to_string(), us),
            o.max_hz
                .get(1)
                .copied()
                .flatten()
                .map_or("none".to_string(), hz)
        );
    }
    if hosts.len() > SHOWN {
        let _ = writeln!(
            md,
            "\nThe {SHOWN} costliest of {} hosts; hosts.csv has every one.",
            hosts.len()
        );
    }
    if !f.missing.is_empty() {
        let _ = writeln!(md, "\n## Missing hosts\n");
        for m in &f.missing {
            let _ = writeln!(md, "- {} on {}: {} ({})", m.host, m.date, m.stage, m.reason);
        }
    }
    if !f.skipped.is_empty() || !f.notes.is_empty() {
        let _ = writeln!(md, "\n## Left out\n");
        for n in &f.notes {
            let _ = writeln!(md, "- {n}");
        }
        if !f.skipped.is_empty() {
            let _ = writeln!(
                md,
                "- {} sets skipped, each with its reason in skipped.csv",
                f.skipped.len()
            );
        }
    }
    let _ = writeln!(
        md,
        "\nFiles: fleet.csv (one row per class, the fleet first), hosts.csv (one row per \
         host), missing.csv, skipped.csv; `analysis fleet ROOT --json` prints the same as \
         JSON. analysis/validate/fleet_duckdb.py computes the class figures from the same \
         summaries with DuckDB."
    );
    md
}

/// Writes the report into `out` (created): report.md, report.html, the
/// figures and the CSVs. Returns report.md's path.
pub fn write(out: &Path, f: &Fleet) -> Result<PathBuf, AnalysisError> {
    std::fs::create_dir_all(out).map_err(|e| AnalysisError::write(out, e))?;
    let mut figures: Vec<String> = Vec::new();
    let name = |p: &PathBuf| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    match super::figures::write_figure(out, f) {
        Ok(files) => figures.extend(
            files
                .iter()
                .filter(|p| p.extension().is_some_and(|e| e == "svg"))
                .map(name),
        ),
        Err(e) => tracing::warn!("fleet figure not drawn: {e}"),
    }
    match super::figures::write_over_time(out, f) {
        Ok(Some(files)) => figures.extend(
            files
                .iter()
                .filter(|p| p.extension().is_some_and(|e| e == "svg"))
                .map(name),
        ),
        Ok(None) => {}
        Err(e) => tracing::warn!("fleet figure over time not drawn: {e}"),
    }
    super::tables::write_fleet_csv(&out.join("fleet.csv"), f)?;
    super::tables::write_hosts_csv(&out.join("hosts.csv"), f)?;
    super::tables::write_rows(&out.join("missing.csv"), &f.missing)?;
    super::tables::write_rows(&out.join("skipped.csv"), &f.skipped)?;
    let md = markdown(f, &figures);
    let md_path = out.join("report.md");
    std::fs::write(&md_path, &md).map_err(|e| AnalysisError::write(&md_path, e))?;
    let html = crate::report::html::render(&md, "Fleet: perf sampling cost", out);
    let html_path = out.join("report.html");
    std::fs::write(&html_path, html).map_err(|e| AnalysisError::write(&html_path, e))?;
    Ok(md_path)
}
