//! The report's section "The loss split: in the gaps and outside them"
//! (the split design) and its files, `report/split.csv` (per rate) and
//! `report/split_phases.csv` (per kept phase).

use std::fmt::Write as _;

use crate::split::{SplitRow, SplitTable};

/// A part with its interval, %: `-` where it has no value.
fn pct(e: &crate::stats::Estimate) -> String {
    crate::format::opt_est(Some(e), 3)
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
    s.push_str(&outlasting(t));
    s
}

/// What a within-run comparison cannot see: the slowdown that outlasts a
/// phase (against the 0 Hz runs) and speed-mode changes inside phases.
fn outlasting(t: &SplitTable) -> String {
    let mut s = String::new();
    let rows: Vec<&SplitRow> = t.rows.iter().filter(|r| r.freq_hz > 0).collect();
    if rows.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "What outlasts a phase. A slow mode that sampling starts and that lasts longer than a phase slows the off phases too, and the within-run comparison above cannot see it. So, per block, the off phases' speed outside the gaps is compared with the same block's 0 Hz split runs (carry-over, above 0 where a slowdown outlasts the phase), and the on phases' (outside against 0 Hz); between runs, so with the run-to-run noise, a 95 % t interval over blocks. A phase whose two halves' speeds outside the gaps (the driver reads the counter halfway) differ by {}x or more changed speed mode inside it: counted here, kept in every figure above, marked in `report/split_phases.csv` (`mode_change`). The halves also show a slowdown that outlasts the on phase by part of a phase: an off phase that follows an on phase and runs faster in its second half (mean per run, t interval over runs).\n",
        crate::split::MODE_CHANGE_RATIO
    );
    let _ = writeln!(
        s,
        "| rate | carry-over % (off against 0 Hz) | outside against 0 Hz % | off phases after an on phase: 2nd half over 1st % | mode changes inside a phase: on / off (of phases read halfway) |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|");
    for r in &rows {
        let changes = if r.halved == 0 {
            "- (not recorded: an older set)".to_string()
        } else {
            format!(
                "{} / {} (of {})",
                r.mode_changes_on, r.mode_changes_off, r.halved
            )
        };
        let _ = writeln!(
            s,
            "| {} Hz | {} | {} | {} | {changes} |",
            r.freq_hz,
            pct(&r.carryover),
            pct(&r.outside_vs_zero),
            pct(&r.off_recovery)
        );
    }
    s.push('\n');
    for r in &rows {
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
