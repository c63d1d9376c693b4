//! The report's "Your profiler" section (`driver sweep --profiler`); its
//! table is `report/profiler.csv` (`ProfilerRow`).

use std::fmt::Write as _;

use crate::columns::markdown_table;
use crate::format::{fmt_est, lines_after};
use crate::subject::profiler::{ProfilerRecommendation, ProfilerTable};

/// One line per budget answered (the pipeline's,
/// [`crate::pipeline::Budgets::profiler`]): the highest rate and what it
/// rests on.
pub fn recommendation_lines(recs: &[ProfilerRecommendation]) -> Vec<String> {
    recs.iter()
        .map(|r| format!("{} % loss budget: {}", r.budget_pct, r.headline()))
        .collect()
}

/// The section, Markdown, with the answers at the report budgets `recs`.
pub fn render(t: &ProfilerTable, recs: &[ProfilerRecommendation], cpu: u32) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## Your profiler\n");
    let _ = writeln!(
        s,
        "`{}` sampled at each rate while the built-in loop ran on CPU {cpu} (gaps design: every interruption of the loop timed, whoever caused it); its start-up was not measured (it ran 1 s before the loop was released) and it was stopped with SIGINT after the loop. {} runs at 0 Hz in the same randomised blocks are the baseline. Per block: extra interruptions = episodes/s over 0 Hz; loss in the interruptions = gap time over 0 Hz, % of the CPU; one interruption's cost = the one over the other; throughput loss = the loop's count against 0 Hz, which also holds what happens outside the interruptions. 95 % t intervals over blocks. The profiler's own CPU is its whole process tree's run time over the loop's window; what its BPF programs or perf's handler do in the interrupted context lands on the loop, as gaps.\n",
        t.template, t.zero_runs
    );
    let header = "freq_hz | blocks | extra interruptions/s [95% CI] | of the rate | one interruption costs, ns [95% CI] | loss in the interruptions % [95% CI] | throughput loss % [95% CI]";
    s += &markdown_table(
        header,
        t.rows.iter().map(|r| {
            format!(
                "{} | {} | {} | {:.0} % | {} | {} | {}",
                r.freq_hz,
                r.blocks,
                fmt_est(&r.excess_episodes_per_s, 0),
                r.tracking_pct,
                fmt_est(&r.cost_per_interruption_ns, 0),
                fmt_est(&r.gap_loss_pct, 3),
                fmt_est(&r.throughput_loss_pct, 2),
            )
        }),
    );
    s.push('\n');
    let _ = writeln!(s, "What the profiler itself used:\n");
    let header = "freq_hz | its CPU, % of one CPU [95% CI] | on CPUs | peak RSS, MB | writes, kB/s";
    s += &markdown_table(
        header,
        t.rows.iter().map(|r| {
            format!(
                "{} | {} | {} | {:.1} | {:.1}",
                r.freq_hz,
                fmt_est(&r.profiler_cpu_pct, 3),
                if r.profiler_cpus.is_empty() {
                    "-"
                } else {
                    &r.profiler_cpus
                },
                r.profiler_peak_rss_kb as f64 / 1024.0,
                r.profiler_write_bytes_per_s / 1024.0,
            )
        }),
    );
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
    lines_after(&mut s, "- ", recommendation_lines(recs));
    for (id, e) in &t.failed {
        let _ = writeln!(s, "- run {id} failed and is left out: {e}");
    }
    let _ = writeln!(s, "\nAs CSV: profiler.csv.\n");
    s
}
