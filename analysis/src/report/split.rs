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
        pub carryover_pct: LoHiSe,
        pub outside_vs_zero_pct: LoHiSe,
        pub halved: usize,
        pub mode_changes_on: usize,
        pub mode_changes_off: usize,
        pub off_recovery_pct: LoHiSe,
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
            carryover_pct: LoHiSe(r.carryover),
            outside_vs_zero_pct: LoHiSe(r.outside_vs_zero),
            halved: r.halved,
            mode_changes_on: r.mode_changes_on,
            mode_changes_off: r.mode_changes_off,
            off_recovery_pct: LoHiSe(r.off_recovery),
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
        pub speed_first: CsvNum,
        pub speed_second: CsvNum,
        pub mode_change: bool,
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
            speed_first: CsvNum(p.speed_first),
            speed_second: CsvNum(p.speed_second),
            mode_change: p.mode_change,
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

/// A part with its interval, %: `-` where it has no value.
fn pct(e: &crate::stats::Estimate) -> String {
    crate::format::opt_est(Some(e), 3)
}

/// The section; empty without split runs. Each rate's parts in one line,
/// what outlasts a phase where it resolves; the tables are split.csv and
/// split_phases.csv.
pub fn render(t: &SplitTable) -> String {
    let mut s = String::new();
    if t.rows.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "## The loss split: in the gaps and outside them\n\n\
         The split design's runs switch sampling on and off in ABBA phases while the loop stamps \
         its timeline: the loss in the gaps and outside them (a slower loop between interrupts), \
         95 % t interval over runs. Every part, the carry-over against the 0 Hz runs and the \
         mode changes: split.csv, split_phases.csv; method: docs/methodology.md, \"The loss \
         outside the gaps\".\n"
    );
    for r in &t.rows {
        let _ = writeln!(
            s,
            "- {} Hz: total {} %, in the gaps {} %, outside them {} %",
            r.freq_hz,
            pct(&r.total),
            pct(&r.in_gaps),
            pct(&r.outside)
        );
    }
    s.push('\n');
    for r in t.rows.iter().filter(|r| r.freq_hz > 0) {
        if r.off_recovery.lo > 0.0 {
            let _ = writeln!(
                s,
                "**At {} Hz the loop recovers inside the off phases**: after an on phase, an off phase's second half ran {:.2} % [{:.2}, {:.2}] faster outside the gaps than its first. A slowdown outlasts the on phase by part of a phase, so the outside part above undercounts it; a longer `--phase` holds more of it.\n",
                r.freq_hz, r.off_recovery.value, r.off_recovery.lo, r.off_recovery.hi
            );
        }
        if r.carryover.lo > 0.0 {
            let _ = writeln!(
                s,
                "**At {} Hz a slowdown outlasts the phase**: the off phases ran {:.1} % [{:.1}, {:.1}] slower outside the gaps than the 0 Hz runs of their blocks, so the within-run split above misses it; the loss outside the gaps against the 0 Hz runs is {} %.\n",
                r.freq_hz,
                r.carryover.value,
                r.carryover.lo,
                r.carryover.hi,
                pct(&r.outside_vs_zero)
            );
        }
    }
    s
}
