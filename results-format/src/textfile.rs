//! `perf_overhead.prom`: a check's summary rows as Prometheus metrics for
//! node_exporter's textfile collector (docs/results-format.md,
//! "perf_overhead.prom").
//!
//! Names follow Prometheus' conventions: `perf_overhead_` and the summary
//! column, in base units (`_ns` columns as `_seconds`, `_pct` as `_ratio`),
//! `_hz` where no base unit exists. Every series of a row carries its
//! labels (event, scope, contents, work_kind, profiler, subject, rate_hz);
//! the fixed budgets are one metric each with a `budget` label (a ratio,
//! as `quantile` is). Written whole by [`crate::write_atomic`], so a
//! scrape never sees half a file.

use std::fmt::Write;

use crate::summary::{BudgetAnswer, SUMMARY_BUDGETS, SummaryRow};

/// The file's name in the textfile directory.
pub const TEXTFILE: &str = "perf_overhead.prom";

/// What the check ended with, beside its rows.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOutcome {
    /// When the check ended, seconds since the epoch.
    pub timestamp_s: f64,
    /// Whether it measured (exit 0 or 1): false for a refusal, an
    /// unresolved check keeps true only when it has a cost.
    pub success: bool,
    /// Its exit status (0 within budget, 1 over, 3 unresolved).
    pub exit_code: Option<u8>,
}

/// One numeric metric of a row (a summary row unless named): name, help,
/// value.
type Metric<T = SummaryRow> = (&'static str, &'static str, fn(&T) -> Option<f64>);

const NS: f64 = 1e-9;
const PCT: f64 = 0.01;

fn ns(v: Option<f64>) -> Option<f64> {
    v.map(|x| x * NS)
}

fn pct(v: Option<f64>) -> Option<f64> {
    v.map(|x| x * PCT)
}

fn int(v: Option<i64>) -> Option<f64> {
    v.map(|x| x as f64)
}

fn flag(v: Option<bool>) -> Option<f64> {
    v.map(|b| if b { 1.0 } else { 0.0 })
}

/// The per-row metrics, in the order written.
const METRICS: &[Metric] = &[
    (
        "perf_overhead_cost_per_sample_seconds",
        "Time one sample takes from the measured CPU's work, mean over the check's runs.",
        |r| ns(r.cost_per_sample_ns),
    ),
    (
        "perf_overhead_cost_per_sample_lo_seconds",
        "Lower end of the cost per sample's 95 % confidence interval.",
        |r| ns(r.cost_per_sample_lo_ns),
    ),
    (
        "perf_overhead_cost_per_sample_hi_seconds",
        "Upper end of the cost per sample's 95 % confidence interval.",
        |r| ns(r.cost_per_sample_hi_ns),
    ),
    (
        "perf_overhead_cost_per_sample_pred_lo_seconds",
        "Lower end of the 95 % prediction interval of one more run's cost per sample.",
        |r| ns(r.cost_per_sample_pred_lo_ns),
    ),
    (
        "perf_overhead_cost_per_sample_pred_hi_seconds",
        "Upper end of the 95 % prediction interval of one more run's cost per sample.",
        |r| ns(r.cost_per_sample_pred_hi_ns),
    ),
    (
        "perf_overhead_predicted_loss_ratio",
        "Share of the measured CPU's work lost to sampling at the rate (0.01 is 1 %).",
        |r| pct(r.predicted_loss_pct),
    ),
    (
        "perf_overhead_predicted_loss_lo_ratio",
        "Lower end of the loss's 95 % confidence interval.",
        |r| pct(r.predicted_loss_lo_pct),
    ),
    (
        "perf_overhead_predicted_loss_hi_ratio",
        "Upper end of the loss's 95 % confidence interval.",
        |r| pct(r.predicted_loss_hi_pct),
    ),
    (
        "perf_overhead_achieved_hz",
        "Samples per second the kernel delivered at the rate.",
        |r| r.achieved_hz,
    ),
    ("perf_overhead_runs", "Runs measured at the rate.", |r| {
        int(r.runs)
    }),
    (
        "perf_overhead_noisy_runs",
        "Runs at the rate that the quiet check flagged as noisy.",
        |r| int(r.noisy_runs),
    ),
    (
        "perf_overhead_check_budget_ratio",
        "The loss budget the check judged against (0.01 is 1 %).",
        |r| pct(r.budget_pct),
    ),
    (
        "perf_overhead_check_within_budget",
        "1 when the rate is within budget at the prediction interval's upper end, 0 when over; absent when unresolved.",
        |r| flag(r.within_budget),
    ),
    (
        "perf_overhead_max_rate_hertz",
        "Highest sampling rate within the check's budget for the checked configuration (its profiler or contents), from this check alone.",
        |r| r.budget_max_hz,
    ),
];

/// The fixed budgets' metrics: name, help, value of a budget's answer.
const BUDGET_METRICS: &[Metric<BudgetAnswer>] = &[
    (
        "perf_overhead_budget_max_hz",
        "Highest sampling rate within the loss budget (label budget, a ratio).",
        |a| a.max_hz,
    ),
    (
        "perf_overhead_budget_rate_hz",
        "Rate to set for the loss budget (label budget, a ratio): a prime below the highest.",
        |a| int(a.rate_hz),
    ),
];

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A row's labels, as `{k="v",...}` without the braces.
fn labels(r: &SummaryRow) -> String {
    let s = |v: &Option<String>| escape(v.as_deref().unwrap_or(""));
    let rate = r.freq_hz.map(|f| f.to_string()).unwrap_or_default();
    format!(
        "event=\"{}\",scope=\"{}\",contents=\"{}\",work_kind=\"{}\",profiler=\"{}\",subject=\"{}\",rate_hz=\"{}\"",
        s(&r.event),
        s(&r.scope),
        s(&r.contents),
        s(&r.work_kind),
        s(&r.profiler),
        s(&r.subject),
        rate
    )
}

/// A value as Prometheus reads it: Rust's shortest round-trip form.
fn value(v: f64) -> String {
    match v {
        f64::INFINITY => "+Inf".into(),
        f64::NEG_INFINITY => "-Inf".into(),
        // NaN prints as `NaN`, as Prometheus writes it.
        _ => format!("{v}"),
    }
}

/// One gauge: its HELP and TYPE lines, then its `samples` (each a whole
/// line); nothing when it has none.
fn gauge(out: &mut String, name: &str, help: &str, samples: &[String]) {
    if samples.is_empty() {
        return;
    }
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
    for s in samples {
        let _ = writeln!(out, "{s}");
    }
}

/// The textfile for `rows` (the check's, one per rate) and its outcome.
/// A refusal passes no rows: only the timestamp and success are written.
pub fn render(rows: &[SummaryRow], outcome: &CheckOutcome) -> String {
    let mut out = String::new();
    for (name, help, get) in METRICS {
        let samples: Vec<String> = rows
            .iter()
            .filter_map(|r| get(r).map(|v| format!("{name}{{{}}} {}", labels(r), value(v))))
            .collect();
        gauge(&mut out, name, help, &samples);
    }
    for (name, help, get) in BUDGET_METRICS {
        let mut samples = Vec::new();
        for r in rows {
            for (pct_v, stem) in SUMMARY_BUDGETS {
                if let Some(v) = get(&r.budget(stem)) {
                    samples.push(format!(
                        "{name}{{{},budget=\"{}\"}} {}",
                        labels(r),
                        value(pct_v * PCT),
                        value(v)
                    ));
                }
            }
        }
        gauge(&mut out, name, help, &samples);
    }
    let status = [
        (
            "perf_overhead_check_exit_code",
            "The last check's exit status: 0 within budget, 1 over, 3 unresolved, 2 refused.",
            outcome.exit_code.map(|code| code.to_string()),
        ),
        (
            "perf_overhead_check_timestamp_seconds",
            "When the last check ended, seconds since the epoch.",
            Some(value(outcome.timestamp_s)),
        ),
        (
            "perf_overhead_check_success",
            "1 when the last check measured (within budget or over it), 0 otherwise.",
            Some(u8::from(outcome.success).to_string()),
        ),
    ];
    for (name, help, v) in status {
        let samples: Vec<String> = v.map(|v| format!("{name} {v}")).into_iter().collect();
        gauge(&mut out, name, help, &samples);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn units_are_base_units_and_labels_are_escaped() {
        let row = SummaryRow {
            event: Some("cpu-clock".into()),
            scope: Some("cpu".into()),
            profiler: Some("perf record -F {freq} -o \"x\"".into()),
            freq_hz: Some(99),
            cost_per_sample_ns: Some(13_064.5),
            predicted_loss_pct: Some(0.5),
            within_budget: Some(false),
            budget_1_max_hz: Some(700.0),
            ..SummaryRow::default()
        };
        let text = render(
            &[row],
            &CheckOutcome {
                timestamp_s: 1.5e9,
                success: true,
                exit_code: Some(1),
            },
        );
        assert!(
            text.contains(&format!(
                "perf_overhead_cost_per_sample_seconds{{event=\"cpu-clock\",scope=\"cpu\",contents=\"\",work_kind=\"\",profiler=\"perf record -F {{freq}} -o \\\"x\\\"\",subject=\"\",rate_hz=\"99\"}} {}",
                13_064.5 * 1e-9
            )),
            "{text}"
        );
        assert!(
            text.contains("perf_overhead_predicted_loss_ratio{"),
            "{text}"
        );
        assert!(text.contains("} 0.005\n"), "{text}");
        assert!(text.contains("perf_overhead_check_within_budget{") && text.contains("} 0\n"));
        assert!(text.contains(",budget=\"0.01\"} 700\n"), "{text}");
        assert!(text.contains("perf_overhead_check_success 1\n"));
        assert!(text.contains("perf_overhead_check_exit_code 1\n"));
        // A metric with no value in any row is not declared.
        assert!(!text.contains("perf_overhead_noisy_runs"), "{text}");
    }

    #[test]
    fn a_refusal_writes_only_the_timestamp_and_success() {
        let text = render(
            &[],
            &CheckOutcome {
                timestamp_s: 2.0,
                success: false,
                exit_code: None,
            },
        );
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            samples,
            vec![
                "perf_overhead_check_timestamp_seconds 2",
                "perf_overhead_check_success 0"
            ]
        );
    }
}
