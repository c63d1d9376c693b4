//! The report's section "what one sample costs the application" (gaps
//! design); its table is `report/per_sample.csv` (`PerSampleRow`).

use std::fmt::Write as _;

use crate::columns::markdown_table;
use crate::format::fmt_est;
use crate::percost::{PerSample, PerSampleRow};

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
    let header = "freq_hz | runs | total ns/sample [95% CI] | next run's total ns [95% PI] | predicted loss % [95% CI] | paired loss % [95% CI] | agreement";
    s += &markdown_table(
        header,
        ps.rows.iter().map(|r| {
            format!(
                "{} | {} | {} | {} | {} | {} | {}",
                r.freq_hz,
                r.runs,
                fmt_est(&r.total_ns, 0),
                fmt_pred(&r.total_pred_ns),
                fmt_est(&r.predicted_loss_pct, 4),
                r.paired_loss_pct
                    .map_or("not measured".to_string(), |e| fmt_est(&e, 3)),
                r.agreement.map_or("-", |a| a.word()),
            )
        }),
    );
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
