//! The report's "Your profiler" section and `report/profiler.csv`
//! (`driver sweep --profiler`).

use std::fmt::Write as _;
use std::path::Path;

use crate::error::AnalysisError;
use crate::format::{fmt_est, table_head};
use crate::report::csv_row::{CsvNum, LoHiUnit, csv_row, write_rows};
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
    for line in recommendation_lines(recs) {
        let _ = writeln!(s, "- {line}");
    }
    for (id, e) in &t.failed {
        let _ = writeln!(s, "- run {id} failed and is left out: {e}");
    }
    let _ = writeln!(s, "\nAs CSV: profiler.csv.\n");
    s
}

csv_row! {
/// A row of `report/profiler.csv`: one rate (the header is the fields).
pub struct ProfilerCsvRow {
    pub freq_hz: u64,
    pub blocks: usize,
    pub excess_episodes_per_s: CsvNum,
    pub excess_episodes_per_s_lo: CsvNum,
    pub excess_episodes_per_s_hi: CsvNum,
    pub tracking_pct: CsvNum,
    pub cost_per_interruption_ns: LoHiUnit,
    pub gap_loss_pct: LoHiUnit,
    pub throughput_loss_pct: LoHiUnit,
    pub profiler_cpu_pct: LoHiUnit,
    /// `;`-separated.
    pub profiler_cpus: String,
    pub profiler_peak_rss_kb: u64,
    pub profiler_write_bytes_per_s: CsvNum,
    pub first_quarter_pct: CsvNum,
    pub failed_runs: usize,
}
}

impl ProfilerCsvRow {
    fn of(r: &crate::subject::profiler::ProfilerRow) -> Self {
        let n = CsvNum;
        ProfilerCsvRow {
            freq_hz: r.freq_hz,
            blocks: r.blocks,
            excess_episodes_per_s: n(r.excess_episodes_per_s.value),
            excess_episodes_per_s_lo: n(r.excess_episodes_per_s.lo),
            excess_episodes_per_s_hi: n(r.excess_episodes_per_s.hi),
            tracking_pct: n(r.tracking_pct),
            cost_per_interruption_ns: LoHiUnit(r.cost_per_interruption_ns),
            gap_loss_pct: LoHiUnit(r.gap_loss_pct),
            throughput_loss_pct: LoHiUnit(r.throughput_loss_pct),
            profiler_cpu_pct: LoHiUnit(r.profiler_cpu_pct),
            profiler_cpus: r.profiler_cpus.replace(',', ";"),
            profiler_peak_rss_kb: r.profiler_peak_rss_kb,
            profiler_write_bytes_per_s: n(r.profiler_write_bytes_per_s),
            first_quarter_pct: n(r.first_quarter_pct),
            failed_runs: r.failed_runs,
        }
    }
}

/// `report/profiler.csv`: one row per rate.
pub fn write_csv(path: &Path, t: &ProfilerTable) -> Result<(), AnalysisError> {
    let rows: Vec<ProfilerCsvRow> = t.rows.iter().map(ProfilerCsvRow::of).collect();
    write_rows(path, &rows, &ProfilerCsvRow::header(0))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_row_fills_the_header() {
        let n = CsvNum(f64::NAN);
        let row = ProfilerCsvRow {
            freq_hz: 99,
            blocks: 5,
            excess_episodes_per_s: n,
            excess_episodes_per_s_lo: n,
            excess_episodes_per_s_hi: n,
            tracking_pct: n,
            cost_per_interruption_ns: LoHiUnit(crate::stats::Estimate::point(f64::NAN, 0)),
            gap_loss_pct: LoHiUnit(crate::stats::Estimate::point(f64::NAN, 0)),
            throughput_loss_pct: LoHiUnit(crate::stats::Estimate::point(f64::NAN, 0)),
            profiler_cpu_pct: LoHiUnit(crate::stats::Estimate::point(f64::NAN, 0)),
            profiler_cpus: "0;1".into(),
            profiler_peak_rss_kb: 1,
            profiler_write_bytes_per_s: n,
            first_quarter_pct: n,
            failed_runs: 0,
        };
        let text = crate::report::csv_row::row_text(&row);
        assert_eq!(
            text.split(',').count(),
            ProfilerCsvRow::header(0).len(),
            "{text}"
        );
        assert!(text.starts_with("99,5,,"), "{text}");
    }
}
