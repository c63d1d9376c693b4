//! The fleet's answer box, report.md, report.html, the figure, fleet.csv
//! (one row per class and one for the fleet), hosts.csv, missing.csv and
//! skipped.csv. Formats only: every figure comes from [`super::classes`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use results_format::summary::SUMMARY_BUDGETS;

use super::Fleet;
use super::classes::{ClassFigures, OUTLIER_Z, Outlier, SPREAD_MIN_HOSTS, label};
use super::hosts::HostObs;
use super::scan::Missing;
use super::tables;
use crate::columns::{markdown_table, write_rows_or_empty};
use crate::error::AnalysisError;
use crate::format::{lines_after, plural};
use crate::percost::predicted_loss_pct;

/// A cost in ns as `2.1 us`; `-` when absent or not finite.
fn us(ns: impl Into<Option<f64>>) -> String {
    let ns = ns.into().filter(|v| v.is_finite());
    ns.map_or("-".into(), |v| format!("{:.1} us", v / 1000.0))
}

fn hz(v: f64) -> String {
    format!("{v:.0} Hz")
}

/// The budget lines of a class: `1 %: 95 % of hosts up to 1234 Hz (set
/// 1231 Hz), every host up to 990 Hz`.
fn budget_lines(c: &ClassFigures) -> impl Iterator<Item = String> + '_ {
    c.budgets.iter().map(|b| {
        let set = (b.p95_host_rate_hz).map_or(String::new(), |r| format!(" (set {r} Hz)"));
        let marks: Vec<String> = [
            (b.hosts_without_answer, "with no rate within it"),
            (b.hosts_at_highest_measured, "within it at every rate they measured (a lower bound)"),
            (b.hosts_bounds_only, "answered from bounds only"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} hosts {what}"))
        .collect();
        let marks = if marks.is_empty() { String::new() } else { format!("; {}", marks.join(", ")) };
        let (p95, every) = (hz(b.p95_host_max_hz), hz(b.every_host_max_hz));
        let pct = b.budget_pct;
        format!("  {pct:>4} % budget: the 95th-percentile host up to {p95}{set}, every host up to {every}{marks}")
    })
}

/// The answer box: the fleet's answer first, then what to look at.
pub fn answer_box(f: &Fleet) -> Vec<String> {
    let c = &f.fleet;
    let counted = match c.hosts == c.distinct_hosts {
        true => format!("{} hosts", c.hosts),
        false => format!("{} host-dates of {} hosts", c.hosts, c.distinct_hosts),
    };
    let es = if f.classes.len() == 1 { "" } else { "es" };
    let newest = if f.opts.all {
        "every date"
    } else {
        "newest set per host"
    };
    let read = match (f.made, f.cached) {
        (0, 0) => String::new(),
        (m, 0) => format!(", {m} made from their tables"),
        (0, c) => format!(", {c} unchanged since the last run"),
        (m, c) => format!(", {m} made from their tables, {c} unchanged since the last run"),
    };
    let missing = match f.missing.len() {
        0 => String::new(),
        n => format!(", {n} hosts missing"),
    };
    let measured = match c.with_cost < c.hosts {
        true => format!("; {} of them measured it", c.with_cost),
        false => String::new(),
    };
    let (n, by, sets) = (f.classes.len(), f.opts.by.join(" x "), f.sets);
    let (median, p95, max) = (us(c.cost_median_ns), us(c.cost_p95_ns), us(c.cost_max_ns));
    let mut out = vec![
        format!(
            "Fleet answer: {counted} in {n} class{es} ({newest} by {by}; {sets} sets{read}{missing})"
        ),
        format!(
            "  cost per sample (at the rate nearest {}{measured}): median {median}, p95 {p95}, max {max}",
            hz(f.opts.at_hz)
        ),
    ];
    out.extend(budget_lines(c));
    out.push(format!(
        "  at {}: the costliest host loses {:.3} %, the median host {:.3} % (cost x rate)",
        hz(f.opts.rate_hz),
        predicted_loss_pct(f.opts.rate_hz, c.cost_max_ns),
        predicted_loss_pct(f.opts.rate_hz, c.cost_median_ns)
    ));
    for cl in &f.classes {
        let hosts = match cl.hosts == cl.distinct_hosts {
            true => plural(cl.hosts, "host"),
            false => format!(
                "{} host-dates of {}",
                cl.hosts,
                plural(cl.distinct_hosts, "host")
            ),
        };
        let single = if cl.single {
            " (a class of one: its host's own answer)"
        } else {
            ""
        };
        let one = hz(cl.budgets[1.min(cl.budgets.len() - 1)].p95_host_max_hz);
        let median = us(cl.cost_median_ns);
        out.push(format!(
            "  class {}: {hosts}{single}, median {median}, 1 % -> {one} (95th pct host)",
            cl.class
        ));
    }
    let indented = |lines: Vec<String>| lines.into_iter().map(|l| format!("  {l}"));
    out.extend(indented(super::days::moved_lines(&f.days)));
    out.extend(look_at(f).into_iter().map(|l| format!("  look at: {l}")));
    let explained = f.explain.iter().flat_map(super::explain::lines);
    out.extend(indented(explained.collect()));
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
    let shown = names[..names.len().min(NAMED)].join(", ");
    match names.len() {
        n if n > NAMED => format!("{n} hosts: {shown} and {} more (hosts.csv)", n - NAMED),
        _ => shown,
    }
}

/// The hosts to look at, one line per kind, a few named on each.
fn look_at(f: &Fleet) -> Vec<String> {
    let mut outliers: Vec<(&str, &Outlier)> = f
        .classes
        .iter()
        .flat_map(|c| c.outliers.iter().map(move |o| (c.class.as_str(), o)))
        .collect();
    outliers.sort_by(|a, b| b.1.z.abs().total_cmp(&a.1.z.abs()));
    let mut out: Vec<String> = (outliers.iter().take(NAMED))
        .map(|(class, o)| {
            let (host, cost, ratio, z) = (&o.host, us(o.cost_ns), o.ratio, o.z);
            format!("host {host} costs {cost} ({ratio:.2}x its class median, modified z {z:.1}) in class {class}")
        })
        .collect();
    if outliers.len() > NAMED {
        let more = outliers.len() - NAMED;
        out.push(format!(
            "{more} more hosts outside their class's spread (hosts.csv, outside_spread)"
        ));
    }
    for (names, what) in [
        (
            &f.fleet.conservative,
            "conservative answers (model and throughput disagreed)",
        ),
        (&f.fleet.drifted, "cost moved during the sweep"),
    ] {
        if !names.is_empty() {
            out.push(format!("{what}: {}", some_named(names)));
        }
    }
    let unjudged = f.classes.iter().filter(|c| !c.spread_judged).count();
    if unjudged > 0 {
        out.push(format!(
            "spread not judged in {unjudged} class(es) of fewer than {SPREAD_MIN_HOSTS} hosts"
        ));
    }
    out
}

/// report.md's text.
fn markdown(f: &Fleet, figures: &[String]) -> String {
    let mut md = format!(
        "# Fleet: what perf sampling costs, host by host\n\n```\n{}\n```\n\n",
        answer_box(f).join("\n")
    );
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
        if f.opts.all {
            " and every earlier one"
        } else {
            ""
        },
        hz(f.opts.at_hz),
        OUTLIER_Z,
        SPREAD_MIN_HOSTS,
        hz(f.opts.rate_hz),
    );
    md.push_str("## Classes\n\n");
    let mut header = "class | hosts | median | p95 | max".to_string();
    for (pct, _) in SUMMARY_BUDGETS {
        let _ = write!(header, " | {pct} %: p95 host | {pct} %: every host");
    }
    md += &markdown_table(
        &header,
        std::iter::once(&f.fleet).chain(&f.classes).map(|c| {
            let single = if c.single { " (one host)" } else { "" };
            let (median, p95, max) = (us(c.cost_median_ns), us(c.cost_p95_ns), us(c.cost_max_ns));
            let mut row = format!(
                "{}{single} | {} | {median} | {p95} | {max}",
                c.class, c.hosts
            );
            for b in &c.budgets {
                let (p95, every) = (hz(b.p95_host_max_hz), hz(b.every_host_max_hz));
                let _ = write!(row, " | {p95} | {every}");
            }
            row
        }),
    );
    if !f.days.is_empty() {
        let moved = super::days::moved_lines(&f.days);
        let _ = writeln!(
            md,
            "\n## Each class by day\n\nclass_days.csv has each class's hosts, median cost with \
             its interval, p95 and 1 % rate on each of its days. A day moved when its median's \
             interval (order statistics, confidence 1 - {} / the class's days) lies wholly \
             above or below the median of the class's daily medians. {}\n",
            super::days::HISTORY_ALPHA,
            match moved.is_empty() {
                true => "No class moved.".to_string(),
                false => moved.iter().map(|l| format!("\n- {l}")).collect::<String>(),
            }
        );
    }
    if f.explain.is_some() {
        let _ = writeln!(
            md,
            "\n## Host traits\n\nThe answer box ranks the host traits by the share of the \
             spread in log cost per sample between hosts of one class that each explains \
             (eta squared of a one-way analysis of variance of each host's log cost less its \
             class's median; F test, Holm-adjusted over the traits; 95 % intervals from {} \
             bootstrap resamples of the hosts within each value; classes and values of fewer \
             than {} hosts left out; docs/methodology.md, \"Which host traits explain a \
             fleet's spread\"). explain.csv has every figure.",
            1000,
            super::explain::EXPLAIN_MIN_HOSTS
        );
    }
    let look = look_at(f);
    if !look.is_empty() {
        let _ = writeln!(md, "\n## Hosts to look at\n\n- {}", look.join("\n- "));
    }
    md.push_str("\n## Hosts\n\n");
    const SHOWN: usize = 100;
    let mut hosts: Vec<&HostObs> = f.hosts.iter().collect();
    hosts.sort_by(|a, b| (b.cost_ns.unwrap_or(-1.0)).total_cmp(&a.cost_ns.unwrap_or(-1.0)));
    md += &markdown_table(
        "host | date | class | rate | cost | 95 % CI | 1 % budget",
        hosts.iter().take(SHOWN).map(|o| {
            let (host, date, class, rate) = (&o.host, &o.date, label(o), o.freq_hz);
            let (cost, lo, hi) = (us(o.cost_ns), us(o.cost_lo_ns), us(o.cost_hi_ns));
            let one = o.max_hz.get(1).copied().flatten().map_or("none".into(), hz);
            format!("{host} | {date} | {class} | {rate} Hz | {cost} | {lo} to {hi} | {one}")
        }),
    );
    if hosts.len() > SHOWN {
        let n = hosts.len();
        let _ = writeln!(
            md,
            "\nThe {SHOWN} costliest of {n} hosts; hosts.csv has every one."
        );
    }
    if !f.missing.is_empty() {
        md.push_str("\n## Missing hosts\n\n");
        let line = |m: &Missing| format!("{} on {}: {} ({})", m.host, m.date, m.stage, m.reason);
        lines_after(&mut md, "- ", f.missing.iter().map(line));
    }
    if !f.skipped.is_empty() || !f.notes.is_empty() {
        md.push_str("\n## Left out\n\n");
        lines_after(&mut md, "- ", &f.notes);
        if !f.skipped.is_empty() {
            let n = f.skipped.len();
            let _ = writeln!(
                md,
                "- {n} sets skipped, each with its reason in skipped.csv"
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
    let figures = super::figures::write(out, f);
    tables::write_fleet_csv(&out.join("fleet.csv"), f)?;
    tables::write_hosts_csv(&out.join("hosts.csv"), f)?;
    write_rows_or_empty(&out.join("missing.csv"), &f.missing)?;
    write_rows_or_empty(&out.join("skipped.csv"), &f.skipped)?;
    if f.opts.all {
        write_rows_or_empty(&out.join("class_days.csv"), &f.days)?;
    }
    if let Some(x) = &f.explain {
        write_rows_or_empty(&out.join("explain.csv"), &x.traits)?;
    }
    let md = markdown(f, &figures);
    let html = crate::report::html::render(&md, "Fleet: perf sampling cost", out);
    for (name, text) in [("report.md", &md), ("report.html", &html)] {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|e| AnalysisError::write(&path, e))?;
    }
    Ok(out.join("report.md"))
}
