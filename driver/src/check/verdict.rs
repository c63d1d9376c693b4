//! A check's result set judged against its budget: the summary rows the
//! analysis made in process (the budget's answer in their budget columns:
//! `analysis::summary::summary_rows`), the exit status, the reasons, and
//! how they are said: the answer box and the `--json` answer.

use std::path::Path;
use std::time::Duration;

use results_format::answer::{ANSWER_VERSION, Answer, AnswerKind};
use results_format::summary::SummaryRow;

use super::{CheckArgs, exit};
use crate::sweep::Summarised;

/// What a check found.
#[derive(Debug, Clone)]
pub struct Judged {
    /// The summary rows of the checked rates (primary configuration).
    pub rows: Vec<SummaryRow>,
    /// The exit status.
    pub exit: u8,
    /// Why it is unresolved or doubtful, each with what resolves it.
    pub reasons: Vec<String>,
}

/// Judges each rate of the check's summary rows: over when any rate is
/// over, else unresolved when any is, else within. Unresolved too when
/// the sweep was not clean (runs stopped, a setting not restored, no
/// report).
pub fn judge(s: Summarised, args: &CheckArgs) -> Judged {
    let mut reasons = Vec::new();
    let restored = s.clean;
    if !restored {
        reasons.push(format!(
            "the runs or the restore of a setting failed (see the log above and {}/manifest.json)",
            s.root.display()
        ));
    }
    let rows: Vec<SummaryRow> = match s.rows {
        Ok(rows) => rows
            .into_iter()
            .filter(|r| r.config_primary != Some(false))
            .filter(|r| {
                r.freq_hz
                    .is_some_and(|f| args.rate.0.contains(&u64::try_from(f).unwrap_or(0)))
            })
            .collect(),
        Err(why) => {
            reasons.push(format!("no summary to judge: {why}"));
            Vec::new()
        }
    };
    let mut any_over = false;
    let mut any_unresolved = rows.is_empty() || !restored;
    for r in &rows {
        let rate = r.freq_hz.unwrap_or(0);
        if let Some(n) = r.noisy_runs.filter(|n| *n > 0) {
            reasons.push(format!(
                "{n} of the runs at {rate} Hz and 0 Hz were noisy (the quiet check's reasons are in runs.csv)"
            ));
        }
        match r.within_budget {
            Some(true) => {}
            Some(false) => any_over = true,
            None => {
                any_unresolved = true;
                reasons.push(unresolved_reason(r, args));
            }
        }
    }
    let exit = if any_over {
        exit::OVER
    } else if any_unresolved {
        exit::UNRESOLVED
    } else {
        exit::WITHIN
    };
    Judged {
        rows,
        exit,
        reasons,
    }
}

fn unresolved_reason(r: &SummaryRow, args: &CheckArgs) -> String {
    let rate = r.freq_hz.unwrap_or(0);
    if r.cost_per_sample_ns.is_none() {
        return format!(
            "no cost per sample at {rate} Hz ({} runs resolved): the report in the check's directory says why; run the check again on a quieter host",
            r.runs.unwrap_or(0)
        );
    }
    let v = analysis::summary::check_verdict(r, args.budget);
    format!(
        "at {rate} Hz the loss lies between {} and {} %, which holds the budget of {} %: a longer --time (e.g. --time {}s) narrows it",
        opt(v.loss_lo_pct, 3),
        opt(v.loss_hi_pct, 3),
        args.budget,
        (args.time / 1_000_000_000) * 2
    )
}

fn opt(v: Option<f64>, d: usize) -> String {
    v.map_or_else(|| "?".into(), |x| format!("{x:.d$}"))
}

fn us(v: Option<f64>) -> String {
    opt(v.map(|x| x / 1000.0), 1)
}

/// The highest rate within the budget over the checked rates (the lowest
/// row's: each row answers alone).
fn max_hz(rows: &[SummaryRow]) -> Option<f64> {
    rows.iter()
        .filter_map(|r| r.budget_max_hz)
        .min_by(f64::total_cmp)
}

fn verdict_word(exit: u8) -> &'static str {
    match exit {
        exit::WITHIN => "WITHIN budget",
        exit::OVER => "OVER budget",
        _ => "UNRESOLVED",
    }
}

/// The answer box, on stderr: per rate the cost with its CI and PI, the
/// loss, the verdict, and the highest rate this check supports.
pub fn print_box(j: &Judged, args: &CheckArgs, elapsed: Duration) {
    let subject = args
        .profiler
        .as_deref()
        .map_or_else(|| "our sampler".to_string(), |p| format!("`{p}`"));
    // The event the set sampled.
    let event = j.rows.first().and_then(|r| r.event.as_deref());
    let mut lines = vec![format!(
        "driver check: {} on {}, budget {} % ({} in {:.0} s)",
        subject,
        event.filter(|e| !e.is_empty()).unwrap_or("?"),
        args.budget,
        verdict_word(j.exit),
        elapsed.as_secs_f64()
    )];
    for r in &j.rows {
        let v = analysis::summary::check_verdict(r, args.budget);
        lines.push(format!(
            "  {} Hz ({}, {} runs): cost per sample {} us, 95% CI [{}, {}], PI [{}, {}]",
            r.freq_hz.unwrap_or(0),
            r.achieved_hz.map_or_else(
                || "rate not counted".into(),
                |h| format!("{h:.1} Hz delivered")
            ),
            r.runs.unwrap_or(0),
            us(r.cost_per_sample_ns),
            us(r.cost_per_sample_lo_ns),
            us(r.cost_per_sample_hi_ns),
            us(r.cost_per_sample_pred_lo_ns),
            us(r.cost_per_sample_pred_hi_ns),
        ));
        lines.push(format!(
            "    loss {} % [{}, {}]; at the {} upper end {} % -> {}",
            opt(r.predicted_loss_pct, 3),
            opt(r.predicted_loss_lo_pct, 3),
            opt(r.predicted_loss_hi_pct, 3),
            if r.profiler.is_some() {
                "measured loss's"
            } else if r.cost_per_sample_pred_hi_ns.is_some() {
                "PI's"
            } else {
                "CI's"
            },
            opt(v.loss_hi_pct, 3),
            match r.within_budget {
                Some(true) => "within",
                Some(false) => "over",
                None => "unresolved",
            }
        ));
    }
    if let Some(m) = max_hz(&j.rows) {
        lines.push(format!(
            "  highest rate within {} % by this check alone: {:.0} Hz (set {} Hz), if the cost per sample holds there",
            args.budget,
            m,
            analysis::recommend::nice_prime_below(m).map_or_else(|| "?".into(), |v| v.to_string())
        ));
    }
    for r in &j.reasons {
        lines.push(format!("  ! {r}"));
    }
    let width = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    eprintln!("+{}+", "-".repeat(width + 2));
    for l in &lines {
        eprintln!("| {l:width$} |");
    }
    eprintln!("+{}+", "-".repeat(width + 2));
}

/// The `--json` answer (docs/results-format.md, "--json answers").
pub fn answer_json(j: &Judged, args: &CheckArgs, root: &Path) -> String {
    let max = max_hz(&j.rows);
    let (what, interval, assumed) = match args.profiler {
        Some(_) => (
            "the profiler's loss",
            "interval's",
            "grow in proportion to the rate",
        ),
        None => (
            "the cost per sample",
            "prediction interval's",
            "hold at other rates",
        ),
    };
    let mut extra = serde_json::Map::new();
    extra.insert("measured_hz".into(), serde_json::json!(args.rate.0));
    extra.insert("exit_code".into(), serde_json::json!(j.exit));
    extra.insert("dir".into(), serde_json::json!(root.display().to_string()));
    let a = Answer {
        format_version: ANSWER_VERSION,
        kind: AnswerKind::Check,
        budget_pct: args.budget,
        rate_hz: max.and_then(analysis::recommend::nice_prime_below),
        max_hz: max,
        basis: match (max, &args.profiler) {
            (None, _) => "none",
            (Some(_), Some(_)) => "profiler_gaps",
            (Some(_), None) => "gaps",
        }
        .into(),
        basis_text: format!(
            "{what} measured now at {} Hz (the gaps design against 0 Hz, {} blocks), at its 95 % {interval} upper end, assumed to {assumed}",
            super::join(&args.rate.0),
            j.rows.first().and_then(|r| r.runs).unwrap_or(0),
        ),
        at_highest_measured: None,
        resolvable: j.rows.iter().any(|r| r.within_budget.is_some()),
        within_budget: match j.exit {
            exit::WITHIN => Some(true),
            exit::OVER => Some(false),
            _ => None,
        },
        reasons: j.reasons.clone(),
        rows: j.rows.clone(),
        extra,
    };
    serde_json::to_string_pretty(&a).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}
