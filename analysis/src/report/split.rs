//! The report's section "The loss split: in the gaps and outside them"
//! (the split design) and its files, `report/split.csv` (per rate) and
//! `report/split_phases.csv` (per kept phase).

use std::fmt::Write as _;

use crate::split::SplitTable;

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
