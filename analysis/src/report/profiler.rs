//! The report's "Your profiler" section and `report/profiler.csv`
//! (`driver sweep --profiler`).

use std::fmt::Write as _;
use std::path::Path;

use crate::error::AnalysisError;
use crate::format::{fmt_est, table_head};
use crate::profiler::{ProfilerTable, recommend};

/// The budgets the section answers, %.
pub const BUDGETS_PCT: [f64; 3] = [0.1, 1.0, 5.0];

/// A rate for a recommendation line.
fn rate_words(max_hz: Option<f64>) -> String {
    max_hz.map_or_else(|| "no answer".to_string(), |h| format!("{h:.0} Hz"))
}

/// One line per budget: the highest rate and what it rests on.
pub fn recommendation_lines(t: &ProfilerTable) -> Vec<String> {
    BUDGETS_PCT
        .iter()
        .map(|&b| {
            let r = recommend(t, b);
            match r.max_hz {
                Some(_) => format!(
                    "{b} % loss budget: at most {} with this profiler ({:.3} % per kHz, the upper 95 % bound of the {})",
                    rate_words(r.max_hz),
                    r.loss_per_khz_pct,
                    r.basis
                ),
                None => format!("{b} % loss budget: no answer ({})", r.basis),
            }
        })
        .collect()
}

/// The section, Markdown.
pub fn render(t: &ProfilerTable, cpu: u32) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## Your profiler\n");
    let _ = writeln!(
        s,
        "`{}` sampled at each rate while the built-in loop ran on CPU {cpu} (gaps design: every interruption of the loop timed, whoever caused it); its start-up was not measured (it ran 1 s before the loop was released) and it was stopped with SIGINT after the loop. {} runs at 0 Hz in the same randomised blocks are the baseline. Per block: extra interruptions = episodes/s over 0 Hz; loss in the interruptions = gap time over 0 Hz, % of the CPU; one interruption's cost = the one over the other; throughput loss = the loop's count against 0 Hz, which also holds what happens outside the interruptions. 95 % t intervals over blocks. The profiler's own CPU is its whole process tree's run time over the loop's window; what its BPF programs or perf's handler do in the interrupted context lands on the loop, as gaps.\n",
        t.template, t.zero_runs
    );
    table_head(
        &mut s,
        "| freq_hz | blocks | extra interruptions/s [95% CI] | of the rate | one interruption costs, ns [95% CI] | loss in the interruptions % [95% CI] | throughput loss % [95% CI] |",
    );
    for r in &t.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.0} % | {} | {} | {} |",
            r.freq_hz,
            r.blocks,
            fmt_est(&r.excess_episodes_per_s, 0),
            r.tracking_pct,
            fmt_est(&r.cost_per_interruption_ns, 0),
            fmt_est(&r.gap_loss_pct, 3),
            fmt_est(&r.throughput_loss_pct, 2),
        );
    }
    s.push('\n');
    let _ = writeln!(s, "What the profiler itself used:\n");
    table_head(
        &mut s,
        "| freq_hz | its CPU, % of one CPU [95% CI] | on CPUs | peak RSS, MB | writes, kB/s |",
    );
    for r in &t.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.1} | {:.1} |",
            r.freq_hz,
            fmt_est(&r.profiler_cpu_pct, 3),
            if r.profiler_cpus.is_empty() {
                "-"
            } else {
                &r.profiler_cpus
            },
            r.profiler_peak_rss_kb as f64 / 1024.0,
            r.profiler_write_bytes_per_s / 1024.0,
        );
    }
    s.push('\n');
    for r in &t.rows {
        if let Some(n) = r.tracking_note() {
            let _ = writeln!(s, "- {n}");
        }
    }
    // Whether it sampled from the loop's start (its start-up is not meant
    // to be measured): judged where its interruptions resolve.
    let starts: Vec<String> = t
        .rows
        .iter()
        .filter(|r| r.resolved() && r.first_quarter_pct.is_finite())
        .map(|r| format!("{} Hz {:.0} %", r.freq_hz, r.first_quarter_pct))
        .collect();
    if !starts.is_empty() {
        let late = t
            .rows
            .iter()
            .any(|r| r.resolved() && r.first_quarter_pct < 80.0);
        let _ = writeln!(
            s,
            "- Sampling from the loop's start (extra interruptions in each run's first quarter against the rest, median over runs): {}{}",
            starts.join(", "),
            if late {
                "; below 80 %: the profiler was still starting when the loop began, so the loss is understated (its 1 s head start was too short)"
            } else {
                ": it was sampling from the start"
            }
        );
    }
    for line in recommendation_lines(t) {
        let _ = writeln!(s, "- {line}");
    }
    for (id, e) in &t.failed {
        let _ = writeln!(s, "- run {id} failed and is left out: {e}");
    }
    let _ = writeln!(s, "\nAs CSV: profiler.csv.\n");
    s
}

fn csv_f(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        String::new()
    }
}

/// `report/profiler.csv`: one row per rate.
pub fn write_csv(path: &Path, t: &ProfilerTable) -> Result<(), AnalysisError> {
    let err = |e: csv::Error| AnalysisError::write(path, std::io::Error::other(e));
    let mut w = csv::Writer::from_path(path).map_err(err)?;
    w.write_record([
        "freq_hz",
        "blocks",
        "excess_episodes_per_s",
        "excess_episodes_per_s_lo",
        "excess_episodes_per_s_hi",
        "tracking_pct",
        "cost_per_interruption_ns",
        "cost_per_interruption_lo_ns",
        "cost_per_interruption_hi_ns",
        "gap_loss_pct",
        "gap_loss_lo_pct",
        "gap_loss_hi_pct",
        "throughput_loss_pct",
        "throughput_loss_lo_pct",
        "throughput_loss_hi_pct",
        "profiler_cpu_pct",
        "profiler_cpu_lo_pct",
        "profiler_cpu_hi_pct",
        "profiler_cpus",
        "profiler_peak_rss_kb",
        "profiler_write_bytes_per_s",
        "failed_runs",
    ])
    .map_err(err)?;
    for r in &t.rows {
        let e = |x: &crate::stats::Estimate| [csv_f(x.value), csv_f(x.lo), csv_f(x.hi)];
        let mut rec = vec![r.freq_hz.to_string(), r.blocks.to_string()];
        rec.extend(e(&r.excess_episodes_per_s));
        rec.push(csv_f(r.tracking_pct));
        rec.extend(e(&r.cost_per_interruption_ns));
        rec.extend(e(&r.gap_loss_pct));
        rec.extend(e(&r.throughput_loss_pct));
        rec.extend(e(&r.profiler_cpu_pct));
        rec.push(r.profiler_cpus.replace(',', ";"));
        rec.push(r.profiler_peak_rss_kb.to_string());
        rec.push(csv_f(r.profiler_write_bytes_per_s));
        rec.push(r.failed_runs.to_string());
        w.write_record(&rec).map_err(err)?;
    }
    w.flush().map_err(|e| AnalysisError::write(path, e))
}
