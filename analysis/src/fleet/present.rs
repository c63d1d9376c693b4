//! The fleet's answer box, report.md, report.html, the figure, fleet.csv
//! (one row per class and one for the fleet), hosts.csv, missing.csv and
//! skipped.csv. Formats only: every figure comes from [`super::classes`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use results_format::summary::SUMMARY_BUDGETS;

use super::Fleet;
use super::classes::ClassFigures;
use crate::error::AnalysisError;
use crate::plot::{Axes, FitLine, PointSeries};

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

fn csv_err(path: &Path) -> impl Fn(csv::Error) -> AnalysisError + '_ {
    move |e| AnalysisError::write(path, std::io::Error::other(e))
}

/// fleet.csv: the fleet's row first, then one per class.
fn write_fleet_csv(path: &Path, f: &Fleet) -> Result<(), AnalysisError> {
    let mut w = csv::Writer::from_path(path).map_err(csv_err(path))?;
    let mut header = vec![
        "class".to_string(),
        "hosts".into(),
        "cost_median_ns".into(),
        "cost_p95_ns".into(),
        "cost_max_ns".into(),
    ];
    for (_, stem) in SUMMARY_BUDGETS {
        header.push(format!("budget_{stem}_p95_host_max_hz"));
        header.push(format!("budget_{stem}_every_host_max_hz"));
        header.push(format!("budget_{stem}_p95_host_rate_hz"));
    }
    header.extend(
        ["single", "outliers", "conservative", "drifted"]
            .iter()
            .map(|s| s.to_string()),
    );
    w.write_record(&header).map_err(csv_err(path))?;
    for c in std::iter::once(&f.fleet).chain(f.classes.iter()) {
        let mut rec = vec![
            c.class.clone(),
            c.hosts.to_string(),
            c.cost_median_ns.to_string(),
            c.cost_p95_ns.to_string(),
            c.cost_max_ns.to_string(),
        ];
        for b in &c.budgets {
            rec.push(b.p95_host_max_hz.to_string());
            rec.push(b.every_host_max_hz.to_string());
            rec.push(b.p95_host_rate_hz.map_or(String::new(), |r| r.to_string()));
        }
        rec.push(c.single.to_string());
        rec.push(
            c.outliers
                .iter()
                .map(|o| o.host.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        );
        rec.push(c.conservative.join(" "));
        rec.push(c.drifted.join(" "));
        w.write_record(&rec).map_err(csv_err(path))?;
    }
    w.flush().map_err(|e| AnalysisError::write(path, e))
}

fn write_hosts_csv(path: &Path, f: &Fleet) -> Result<(), AnalysisError> {
    let mut w = csv::Writer::from_path(path).map_err(csv_err(path))?;
    let mut header: Vec<String> = ["host", "date", "set", "class"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(
        [
            "freq_hz",
            "cost_ns",
            "cost_lo_ns",
            "cost_hi_ns",
            "cost_pred_hi_ns",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    for (_, stem) in SUMMARY_BUDGETS {
        header.push(format!("budget_{stem}_max_hz"));
    }
    header.extend(
        [
            "outside_spread",
            "conservative",
            "drifted",
            "bounds_only",
            "made_from_tables",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    w.write_record(&header).map_err(csv_err(path))?;
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| x.to_string());
    let outside: std::collections::BTreeSet<(&str, &str)> = f
        .classes
        .iter()
        .flat_map(|c| {
            c.outliers
                .iter()
                .map(move |o| (c.class.as_str(), o.host.as_str()))
        })
        .collect();
    for o in &f.hosts {
        let class = super::classes::label(o);
        let mut rec = vec![
            o.host.clone(),
            o.date.clone(),
            o.set.clone(),
            super::classes::label(o),
            o.freq_hz.to_string(),
            opt(o.cost_ns),
            opt(o.cost_lo_ns),
            opt(o.cost_hi_ns),
            opt(o.cost_pred_hi_ns),
        ];
        rec.extend(o.max_hz.iter().map(|v| opt(*v)));
        rec.extend([
            outside
                .contains(&(class.as_str(), o.host.as_str()))
                .to_string(),
            o.conservative.to_string(),
            o.drifted.to_string(),
            o.bounds_only.to_string(),
            o.made.to_string(),
        ]);
        w.write_record(&rec).map_err(csv_err(path))?;
    }
    w.flush().map_err(|e| AnalysisError::write(path, e))
}

fn write_rows<T: serde::Serialize>(path: &Path, rows: &[T]) -> Result<(), AnalysisError> {
    let mut w = csv::Writer::from_path(path).map_err(csv_err(path))?;
    for r in rows {
        w.serialize(r).map_err(csv_err(path))?;
    }
    w.flush().map_err(|e| AnalysisError::write(path, e))
}

/// The first figure: every host's cost per sample with its 95 % interval,
/// grouped by class (hosts in cost order within each), and the cost each
/// budget allows at `--rate`.
fn write_figure(out: &Path, f: &Fleet) -> Result<Vec<PathBuf>, AnalysisError> {
    let mut series = Vec::new();
    let mut x = 0.0;
    for c in &f.classes {
        let mut members: Vec<&super::hosts::HostObs> = f
            .hosts
            .iter()
            .filter(|o| super::classes::label(o) == c.class)
            .collect();
        members.sort_by(|a, b| {
            a.cost_ns
                .unwrap_or(f64::NAN)
                .total_cmp(&b.cost_ns.unwrap_or(f64::NAN))
        });
        let mut s = PointSeries {
            label: format!("{} ({})", c.class, c.hosts),
            x: Vec::new(),
            y: Vec::new(),
            y_lo: Vec::new(),
            y_hi: Vec::new(),
        };
        for o in members {
            let Some(cost) = o.cost_ns else { continue };
            x += 1.0;
            let y = cost / 1000.0;
            s.x.push(x);
            s.y.push(y);
            s.y_lo.push(o.cost_lo_ns.map_or(y, |v| v / 1000.0));
            s.y_hi.push(o.cost_hi_ns.map_or(y, |v| v / 1000.0));
        }
        x += 1.0;
        if !s.x.is_empty() {
            series.push(s);
        }
    }
    let lines: Vec<FitLine> = SUMMARY_BUDGETS
        .iter()
        .map(|&(pct, _)| FitLine {
            label: format!("{pct} % at {}", hz(f.rate_hz)),
            intercept: pct / 100.0 / f.rate_hz * 1e6,
            slope: 0.0,
            label_at_end: true,
            colour: Some((120, 120, 120)),
            ..Default::default()
        })
        .filter(|l| l.intercept <= f.fleet.cost_max_ns / 1000.0 * 20.0)
        .collect();
    let stem = out.join("fleet_cost_per_sample");
    let title = format!(
        "Cost per sample by host ({} hosts, {} classes)",
        f.hosts.len(),
        f.classes.len()
    );
    crate::plot::plot_vs_freq_axes(
        &title,
        (
            "hosts, by class, in cost order",
            "cost per sample, us (95 % CI)",
        ),
        &series,
        &lines,
        Axes {
            log_x: false,
            log_y: true,
            y_include: None,
        },
        &stem,
    )
    .map_err(AnalysisError::from)
}

/// With `--all`: each class's median cost per sample by date.
fn write_over_time(out: &Path, f: &Fleet) -> Result<Option<Vec<PathBuf>>, AnalysisError> {
    use std::collections::BTreeMap;
    let dates: Vec<String> = {
        let mut d: Vec<String> = f.hosts.iter().map(|o| o.date.clone()).collect();
        d.sort();
        d.dedup();
        d
    };
    if !f.all || dates.len() < 2 {
        return Ok(None);
    }
    let day0 = day_number(&dates[0]);
    let mut series = Vec::new();
    for c in &f.classes {
        let mut by_date: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for o in f
            .hosts
            .iter()
            .filter(|o| super::classes::label(o) == c.class)
        {
            if let Some(cost) = o.cost_ns {
                by_date.entry(&o.date).or_default().push(cost);
            }
        }
        let mut s = PointSeries {
            label: c.class.clone(),
            x: Vec::new(),
            y: Vec::new(),
            y_lo: Vec::new(),
            y_hi: Vec::new(),
        };
        for (d, mut v) in by_date {
            v.sort_by(f64::total_cmp);
            let (Some(x0), Some(x)) = (day0, day_number(d)) else {
                continue;
            };
            s.x.push((x - x0) as f64);
            s.y.push(super::classes::quantile(&v, 0.5).unwrap_or(f64::NAN) / 1000.0);
            s.y_lo.push(v[0] / 1000.0);
            s.y_hi.push(v[v.len() - 1] / 1000.0);
        }
        if !s.x.is_empty() {
            series.push(s);
        }
    }
    let stem = out.join("fleet_over_time");
    crate::plot::plot_vs_freq_axes(
        &format!("Cost per sample by class over time (from {})", dates[0]),
        (
            &format!("days since {}", dates[0]),
            "cost per sample, us (median; bars: min to max host)",
        ),
        &series,
        &[],
        Axes {
            log_x: false,
            log_y: true,
            y_include: None,
        },
        &stem,
    )
    .map(Some)
    .map_err(AnalysisError::from)
}

fn day_number(d: &str) -> Option<i64> {
    chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d")
        .ok()
        .map(|d| d.signed_duration_since(chrono::NaiveDate::MIN).num_days())
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
    match write_figure(out, f) {
        Ok(files) => figures.extend(
            files
                .iter()
                .filter(|p| p.extension().is_some_and(|e| e == "svg"))
                .map(name),
        ),
        Err(e) => tracing::warn!("fleet figure not drawn: {e}"),
    }
    match write_over_time(out, f) {
        Ok(Some(files)) => figures.extend(
            files
                .iter()
                .filter(|p| p.extension().is_some_and(|e| e == "svg"))
                .map(name),
        ),
        Ok(None) => {}
        Err(e) => tracing::warn!("fleet figure over time not drawn: {e}"),
    }
    write_fleet_csv(&out.join("fleet.csv"), f)?;
    write_hosts_csv(&out.join("hosts.csv"), f)?;
    write_rows(&out.join("missing.csv"), &f.missing)?;
    write_rows(&out.join("skipped.csv"), &f.skipped)?;
    let md = markdown(f, &figures);
    let md_path = out.join("report.md");
    std::fs::write(&md_path, &md).map_err(|e| AnalysisError::write(&md_path, e))?;
    let html = crate::report::html::render(&md, "Fleet: perf sampling cost", out);
    let html_path = out.join("report.html");
    std::fs::write(&html_path, html).map_err(|e| AnalysisError::write(&html_path, e))?;
    Ok(md_path)
}
