//! The report's section "The loss split: in the gaps and outside them"
//! (the split design) and its files, `report/split.csv` (per rate) and
//! `report/split_phases.csv` (per kept phase).

use std::fmt::Write as _;
use std::path::Path;

use crate::error::AnalysisError;
use crate::report::csv_row::{CsvNum, LoHiSe, csv_row};
use crate::split::{SplitPhase, SplitRow, SplitTable};

csv_row! {
    /// A row of `report/split.csv`: one rate's loss and its two parts, %,
    /// with `_lo`/`_hi`/`_se` over runs.
    pub struct SplitCsvRow {
        pub freq_hz: u64,
        pub runs: usize,
        pub groups: usize,
        pub achieved_hz: CsvNum,
        pub total_pct: LoHiSe,
        pub in_gaps_pct: LoHiSe,
        pub outside_pct: LoHiSe,
        pub closure_pp: CsvNum,
    }
}

impl SplitCsvRow {
    fn of(r: &SplitRow) -> Self {
        SplitCsvRow {
            freq_hz: r.freq_hz,
            runs: r.runs,
            groups: r.groups,
            achieved_hz: CsvNum(r.achieved_hz),
            total_pct: LoHiSe(r.total),
            in_gaps_pct: LoHiSe(r.in_gaps),
            outside_pct: LoHiSe(r.outside),
            closure_pp: CsvNum(r.closure_pp),
        }
    }
}

csv_row! {
    /// A row of `report/split_phases.csv`: one kept phase of a split run.
    pub struct SplitPhaseCsvRow {
        pub run_id: u32,
        pub freq_hz: u64,
        pub phase: u32,
        pub group: u32,
        pub sampling: bool,
        pub duration_ns: u64,
        pub iterations: u64,
        pub samples: u64,
        pub gaps: u64,
        pub episodes: u64,
        pub gap_ns: u64,
        pub kept_ns: u64,
        pub speed_outside: CsvNum,
    }
}

impl SplitPhaseCsvRow {
    fn of(p: &SplitPhase) -> Self {
        SplitPhaseCsvRow {
            run_id: p.run_id,
            freq_hz: p.freq_hz,
            phase: p.phase,
            group: p.group,
            sampling: p.sampling,
            duration_ns: p.duration_ns,
            iterations: p.iterations,
            samples: p.samples,
            gaps: p.gaps,
            episodes: p.episodes,
            gap_ns: p.gap_ns,
            kept_ns: p.kept_ns,
            speed_outside: CsvNum(p.speed_outside),
        }
    }
}

/// Writes `split.csv` to `rows_path` and `split_phases.csv` to
/// `phases_path`.
pub fn write_csvs(
    rows_path: &Path,
    phases_path: &Path,
    t: &SplitTable,
) -> Result<(), AnalysisError> {
    let rows: Vec<SplitCsvRow> = t.rows.iter().map(SplitCsvRow::of).collect();
    crate::report::csv_row::write_rows(rows_path, &rows, &SplitCsvRow::header(0))?;
    let phases: Vec<SplitPhaseCsvRow> = t.phases.iter().map(SplitPhaseCsvRow::of).collect();
    crate::report::csv_row::write_rows(phases_path, &phases, &SplitPhaseCsvRow::header(0))
}

/// A part with its interval, %.
fn pct(e: &crate::stats::Estimate) -> String {
    if !e.value.is_finite() {
        return "-".into();
    }
    if e.lo.is_finite() && e.hi.is_finite() {
        format!("{:.3} [{:.3}, {:.3}]", e.value, e.lo, e.hi)
    } else {
        format!("{:.3}", e.value)
    }
}

/// The section; empty without split runs.
pub fn render(t: &SplitTable) -> String {
    let mut s = String::new();
    if t.rows.is_empty() {
        return s;
    }
    let _ = writeln!(s, "## The loss split: in the gaps and outside them\n");
    let _ = writeln!(
        s,
        "The split design: sampling switched on and off in the paired design's ABBA phases while the loop stamps its timeline, so one run gives both the time in gaps and the loop's speed outside them, sampling on against off, with the run-to-run noise cancelled within each group of four phases. In the gaps: 1 - mean(1 - g_on) / mean(1 - g_off), g a phase's share of time in gaps. Outside the gaps: 1 - mean(s_on) / mean(s_off), s the loop's speed outside them (a loop that runs slower between interrupts: caches refilled, a slower speed mode). Total: the paired loss of the same groups, 1 - mean(rate_on) / mean(rate_off). Each is the mean of the runs' group means with a 95 % t interval over runs; closure = total - (1 - (1 - in)(1 - out)), the part of the total neither part holds (the covariance of speed and gap share within a group). `report/split.csv`, `report/split_phases.csv`.\n"
    );
    let _ = writeln!(
        s,
        "| rate | runs (groups) | achieved Hz | total % | in the gaps % | outside the gaps % | closure pp |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for r in &t.rows {
        let _ = writeln!(
            s,
            "| {} Hz | {} ({}) | {:.0} | {} | {} | {} | {:+.4} |",
            r.freq_hz,
            r.runs,
            r.groups,
            r.achieved_hz,
            pct(&r.total),
            pct(&r.in_gaps),
            pct(&r.outside),
            r.closure_pp
        );
    }
    s.push('\n');
    s
}
