//! The report's section "what one sample costs the application" (gaps
//! design) and `report/per_sample.csv`.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::AnalysisError;
use crate::format::fmt_est;
use crate::percost::{PerSample, PerSampleRow};
use crate::report::csv_row::{CsvNum, LoHiSe, csv_row, write_rows};
use crate::stats::Estimate;

csv_row! {
    /// A row of `report/per_sample.csv`: one rate of the gaps design, every
    /// interval as `_lo`/`_hi`/`_se` columns.
    pub struct PerSampleCsvRow {
        pub freq_hz: u64,
        pub runs: usize,
        pub achieved_hz: CsvNum,
        pub samples: u64,
        pub samples_in_long: u64,
        pub recovery_horizon_ns: CsvNum,
        pub matched_episodes: usize,
        pub matched_median_ns: CsvNum,
        pub matched_mean_ns: CsvNum,
        pub matched_p99_ns: CsvNum,
        pub matched_mean_by_run_ns: LoHiSe,
        pub background_ns: LoHiSe,
        pub above_cap_ns: LoHiSe,
        pub long_per_s: LoHiSe,
        pub long_ns: LoHiSe,
        pub direct_ns: LoHiSe,
        pub after_effect_ns: LoHiSe,
        pub total_ns: LoHiSe,
        pub total_pred_ns: LoHiSe,
        pub predicted_loss_pct: LoHiSe,
        pub paired_loss_pct: LoHiSe,
        pub excess_gap_share_pct: LoHiSe,
        pub predicted_direct_loss_pct: LoHiSe,
        pub aa_null_ns: LoHiSe,
        pub handler_ns: CsvNum,
        pub interrupt_ns: CsvNum,
        pub remainder_ns: CsvNum,
        pub agreement: &'static str,
        pub after_effect_bound_ns: CsvNum,
        pub above_cap_charged: bool,
        pub long_charged: bool,
        pub cap_ns: CsvNum,
    }
}

impl PerSampleCsvRow {
    fn of(r: &PerSampleRow) -> Self {
        let none = Estimate::point(f64::NAN, 0);
        PerSampleCsvRow {
            freq_hz: r.freq_hz,
            runs: r.runs,
            achieved_hz: CsvNum(r.achieved_hz),
            samples: r.samples,
            samples_in_long: r.samples_in_long,
            recovery_horizon_ns: CsvNum(r.recovery_horizon_ns),
            matched_episodes: r.matched_episodes,
            matched_median_ns: CsvNum(r.matched_median_ns),
            matched_mean_ns: CsvNum(r.matched_mean_ns),
            matched_p99_ns: CsvNum(r.matched_p99_ns),
            matched_mean_by_run_ns: LoHiSe(r.matched_mean_by_run_ns),
            background_ns: LoHiSe(r.background_ns),
            above_cap_ns: LoHiSe(r.above_cap_ns),
            long_per_s: LoHiSe(r.long_per_s),
            long_ns: LoHiSe(r.long_ns),
            direct_ns: LoHiSe(r.direct_ns),
            after_effect_ns: LoHiSe(r.after_effect_ns),
            total_ns: LoHiSe(r.total_ns),
            total_pred_ns: LoHiSe(r.total_pred_ns),
            predicted_loss_pct: LoHiSe(r.predicted_loss_pct),
            paired_loss_pct: LoHiSe(r.paired_loss_pct.unwrap_or(none)),
            excess_gap_share_pct: LoHiSe(r.excess_gap_share_pct),
            predicted_direct_loss_pct: LoHiSe(r.predicted_direct_loss_pct),
            aa_null_ns: LoHiSe(r.aa_null_ns.unwrap_or(none)),
            handler_ns: CsvNum::opt(r.handler_ns),
            interrupt_ns: CsvNum::opt(r.interrupt_ns),
            remainder_ns: CsvNum::opt(r.remainder_ns),
            agreement: r.agreement.map_or("", |a| a.word()),
            after_effect_bound_ns: CsvNum::opt(r.after_effect_bound_ns),
            above_cap_charged: r.above_cap_charged,
            long_charged: r.long_charged,
            cap_ns: CsvNum(r.cap_ns),
        }
    }
}

/// Writes `per_sample.csv`: every column of the table, intervals as
/// `_lo`/`_hi`/`_se` columns.
pub fn write_csv(path: &Path, ps: &PerSample) -> Result<(), AnalysisError> {
    let rows: Vec<PerSampleCsvRow> = ps.rows.iter().map(PerSampleCsvRow::of).collect();
    write_rows(path, &rows, &PerSampleCsvRow::header(0))
}

/// The section, Markdown: what a sample costs and the loss it predicts,
/// by rate; its parts and checks are per_sample.csv's.
pub fn render(ps: &PerSample) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## What one sample costs the application (gaps design)\n\n\
         Each sample matched to the episode of the loop's timeline that holds it: the direct cost, \
         the after-effect and the tail parts that resolve, with a 95% t interval over runs; the \
         next run's total is a 95% prediction interval. Their parts, the matching, the A/A null \
         control, the cap and the long episodes by rate: per_sample.csv. Method: \
         docs/methodology.md, \"Gaps design\".\n"
    );
    if ps.rows.is_empty() {
        let _ = writeln!(s, "No gaps runs above 0 Hz.\n");
        return s;
    }
    crate::format::table_head(
        &mut s,
        "| freq_hz | runs | total ns/sample [95% CI] | next run's total ns [95% PI] | predicted loss % [95% CI] | paired loss % [95% CI] | agreement |",
    );
    for r in &ps.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.freq_hz,
            r.runs,
            fmt_est(&r.total_ns, 0),
            fmt_pred(&r.total_pred_ns),
            fmt_est(&r.predicted_loss_pct, 4),
            r.paired_loss_pct
                .map_or("not measured".to_string(), |e| fmt_est(&e, 3)),
            r.agreement.map_or("-", |a| a.word()),
        );
    }
    s.push('\n');
    for r in &ps.rows {
        if let Some(b) = r.after_effect_bound_ns {
            let _ = writeln!(
                s,
                "- At {} Hz the total is the direct cost and an after-effect this rate cannot measure, bounded by {b:.0} ns and by the time between samples.",
                r.freq_hz
            );
        }
        if let Some(line) = doubt_line(r) {
            let _ = writeln!(s, "- {line}");
        }
    }
    let _ = writeln!(
        s,
        "- 0 Hz runs ({}): episode cap {:.0} ns, after-effect per episode {} ns, long episodes \
         (>= 1 ms) {}/s, {} % of the CPU.\n",
        ps.zero_runs,
        ps.background_cap_ns,
        fmt_est(&ps.zero_after_per_episode_ns, 1),
        fmt_est(&ps.zero_long_per_s, 2),
        fmt_est(&ps.zero_long_share_pct, 3)
    );
    s
}

/// Where the prediction and the paired loss part, what that means.
fn doubt_line(r: &PerSampleRow) -> Option<String> {
    let (a, p) = (r.agreement?, r.paired_loss_pct?);
    let why = match (a, r.remainder) {
        (crate::percost::Agreement::Disagree, Some(m)) => m.words(),
        (crate::percost::Agreement::PairedNotResolved, _) if p.value > r.predicted_loss_pct.hi => {
            "the paired point estimate lies above the prediction's interval: the model may miss a slowdown outside the interrupts, as it did on a host like this (docs/methodology.md, \"On a host unlike ours\"); more paired runs (--reps) would tell".to_string()
        }
        _ => return None,
    };
    Some(format!(
        "At {} Hz predicted {} % vs paired {} %: {}; {why}.",
        r.freq_hz,
        fmt_est(&r.predicted_loss_pct, 4),
        fmt_est(&p, 3),
        a.word()
    ))
}

/// The prediction interval, `[lo, hi]` only.
fn fmt_pred(e: &crate::stats::Estimate) -> String {
    if e.lo.is_finite() && e.hi.is_finite() {
        format!("[{:.0}, {:.0}]", e.lo, e.hi)
    } else {
        "n/a".to_string()
    }
}
