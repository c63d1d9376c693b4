//! The answer box: what someone who asked "what may I sample at?" reads
//! first. The host, the event, what one sample costs the application, the
//! loss at each measured rate, the highest rate within 0.1 %, 1 % and 5 %,
//! and one verdict on how far to trust it; at most [`MAX_LINES`] lines of
//! at most [`WIDTH`] columns. Printed on stderr by `driver sweep`,
//! `analysis report` and `analysis recommend`, and at the top of report.md.

use crate::format::plural;
use crate::load::ResultSet;
use crate::percost::{Agreement, PerSampleRow};
use crate::pipeline::Findings;
use crate::recommend::Recommendation;
use crate::row_types::LossRow;
use crate::stats::Estimate;
use crate::subject::profiler::{ProfilerRow, ProfilerTable};

/// Columns per line, frame included.
pub const WIDTH: usize = 100;
/// Lines of the box, frame included.
pub const MAX_LINES: usize = 12;

/// A rate for people: 100 Hz, 2 kHz, 2.5 kHz, 100 kHz.
fn hz(f: u64) -> String {
    match f {
        0..1000 => format!("{f} Hz"),
        _ if f.is_multiple_of(1000) => format!("{} kHz", f / 1000),
        _ => format!("{:.1} kHz", f as f64 / 1000.0),
    }
}

/// A loss in % with about three significant figures.
fn pct(v: f64) -> String {
    match v.abs() {
        a if a >= 10.0 => format!("{v:.1} %"),
        a if a >= 1.0 => format!("{v:.2} %"),
        _ => format!("{v:.3} %"),
    }
}

/// A loss as the box shows it: above 100 % the product rate x cost has
/// passed the time there is (sampling takes it all; the run cannot lose
/// more), said so instead of a figure no run can have.
fn loss_pct(v: f64) -> String {
    if v > 100.0 {
        "> 100 % (all of it)".to_string()
    } else {
        pct(v)
    }
}

/// [`wrap`] to the box's inside, frame excluded.
fn inside(lead: &str, parts: &[String]) -> Vec<String> {
    wrap(lead, parts, WIDTH - 4)
}

/// `parts` joined by " | " into lines of at most `width` columns, the
/// first starting with `lead` and the others indented as far.
fn wrap(lead: &str, parts: &[String], width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = lead.to_string();
    let indent = " ".repeat(lead.chars().count());
    for p in parts {
        let sep = if cur.trim().is_empty() || cur == lead {
            ""
        } else {
            " | "
        };
        if cur.chars().count() + sep.len() + p.chars().count() > width && cur != lead {
            lines.push(cur);
            cur = format!("{indent}{p}");
        } else {
            cur.push_str(sep);
            cur.push_str(p);
        }
    }
    lines.push(cur);
    lines
}

/// A cost in ns as "2.1 us [1.9, 2.3]".
fn us(c: Estimate) -> String {
    format!(
        "{:.1} us [{:.1}, {:.1}]",
        c.value / 1e3,
        c.lo / 1e3,
        c.hi / 1e3
    )
}

/// The cost of one sample at the lowest rate the model measured, in words,
/// and the loss model's outside term where the recommendation charged it.
fn cost_line(a: &Findings, recs: &[Option<&Recommendation>]) -> Vec<String> {
    let outside = recs.iter().flatten().find_map(|r| r.outside_ns);
    let outside = outside.map(|c| format!("+ {} outside the gaps", us(c)));
    std::iter::once(cost_words(a)).chain(outside).collect()
}

/// The model's cost of one sample at its lowest rate, in words.
fn cost_words(a: &Findings) -> String {
    let rows = a.gaps.per_sample.iter().flat_map(|ps| &ps.rows);
    let row: Option<&PerSampleRow> = rows.clone().find(|r| r.total_ns.value.is_finite());
    // The loss model's gaps term: the table's total less the long episodes
    // where it charged them (they are the model's between-run evidence).
    let cost = |r: &PerSampleRow| -> Estimate {
        let Some(m) = &a.budgets.model else {
            return r.total_ns;
        };
        let mut gaps = m.gaps.iter().zip(&m.gaps_mean);
        gaps.find(|(p, _)| p.freq_hz == r.freq_hz)
            .map_or(r.total_ns, |(_, e)| *e)
    };
    match row {
        Some(r) => format!(
            "one sample costs the application {} at {} ({} runs, gaps design)",
            us(cost(r)),
            hz(r.freq_hz),
            r.runs
        ),
        None if a.quality.raw_removed.gaps => {
            "cost of one sample: not reported (gaps/ or samples/ removed; see Skipped)".to_string()
        }
        None => "cost of one sample: not measured here (no gaps design with 0 Hz runs)".to_string(),
    }
}

/// The loss at each measured rate: the model's prediction where it
/// exists, else the measured throughput loss.
fn loss_parts(a: &Findings) -> Vec<String> {
    if let Some(ps) = a.gaps.per_sample.as_ref().filter(|p| !p.rows.is_empty()) {
        let rows = ps
            .rows
            .iter()
            .filter(|r| r.predicted_loss_pct.value.is_finite());
        let part = |r: &PerSampleRow| {
            let under = r.agreement == Some(Agreement::Disagree) && under_predicts(r);
            let paired = r.paired_loss_pct.filter(|_| under);
            let paired = paired.map_or(String::new(), |p| format!(" (paired {})", pct(p.value)));
            let loss = loss_pct(r.predicted_loss_pct.value);
            format!("{} {loss}{paired}", hz(r.freq_hz))
        };
        return rows.map(part).collect();
    }
    let primary = a.tables.primary_loss();
    let part = |l: &&LossRow| format!("{} {}", hz(l.freq_hz), loss_pct(l.trusted().value));
    primary.iter().map(part).collect()
}

/// The highest rate within each report budget, short ("659 Hz",
/// "<= 113 Hz (bound)"), as the answer box says it: for a `--profiler` set
/// from its own table, else from the recommendation.
/// The recommendations are those the pipeline worked out
/// ([`Findings::budgets`]).
pub fn budget_answers(a: &Findings) -> Vec<(f64, String)> {
    let b = &a.budgets;
    match &a.subject.profiler {
        Some(_) => b
            .profiler
            .iter()
            .map(|r| (r.budget_pct, r.rate_words()))
            .collect(),
        None => b
            .sampler
            .iter()
            .map(|(b, r)| (*b, budget_words(r.as_ref().ok())))
            .collect(),
    }
}

/// The box's latency line: what the 1 % budget's rate adds to the p99 of
/// a 1 ms request, predicted (docs/methodology.md, "Request latency").
fn latency_line(a: &Findings) -> Option<String> {
    let l = a.budgets.latency?;
    let e = l.added;
    let ci = if e.lo.is_finite() && e.hi.is_finite() {
        format!(" [{:+.1}, {:+.1}]", e.lo / 1e3, e.hi / 1e3)
    } else {
        String::new()
    };
    Some(format!(
        "p99 of a 1 ms request: {:+.1} us{ci} at {} (the 1 % rate; {:.0} us at 0 Hz)",
        e.value / 1e3,
        hz(l.rate_hz),
        l.baseline_ns / 1e3
    ))
}

/// The box's "highest rate within" parts.
fn budget_parts(a: &Findings) -> Vec<String> {
    let answers = budget_answers(a).into_iter();
    answers
        .map(|(b, words)| format!("{b} %: {words}"))
        .collect()
}

/// A recommendation in a few words.
fn budget_words(rec: Option<&Recommendation>) -> String {
    let Some(r) = rec else {
        return "no answer".to_string();
    };
    match r.rate_hz {
        Some(hz_) if r.bound_only => format!("<= {hz_} Hz (bound)"),
        Some(hz_) if r.at_highest_measured => format!(">= {hz_} Hz (every measured rate within)"),
        Some(hz_) => format!("{hz_} Hz"),
        None if !r.resolvable => "not resolved".to_string(),
        None => "none measured".to_string(),
    }
}

/// "INCOMPLETE: ..." when runs.csv lacks planned runs or the sweep did
/// not finish: in the box's title, so a partial answer is not taken for a
/// final one (and no cut of a long box can drop it).
fn incomplete_part(rs: &ResultSet) -> Option<String> {
    let (planned, missing) = (rs.unrecorded.planned, &rs.unrecorded.run_ids);
    if !missing.is_empty() {
        Some(format!(
            "INCOMPLETE: {} of {planned} planned runs",
            planned - missing.len()
        ))
    } else if rs.manifest.status != results_format::Status::Complete {
        Some(format!("INCOMPLETE: status `{}`", rs.manifest.status))
    } else {
        None
    }
}

/// The trust verdict's parts: model against throughput, the drift, the
/// throttle, noisy runs.
fn trust_parts(rs: &ResultSet, a: &Findings) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(ps) = &a.gaps.per_sample {
        let at = |w: Agreement| ps.rows.iter().filter(move |r| r.agreement == Some(w));
        let agree: Vec<&PerSampleRow> = at(Agreement::Agree).collect();
        let (under, over): (Vec<_>, Vec<_>) =
            at(Agreement::Disagree).partition(|r| under_predicts(r));
        if agree.is_empty() && under.is_empty() && over.is_empty() {
            v.push("no paired loss resolves to check the model".to_string());
        }
        for (rows, words) in [
            (agree, "model agrees with throughput at"),
            (under, "model UNDER-PREDICTS the throughput loss at"),
            (over, "model predicts more than throughput at"),
        ] {
            let rates: Vec<String> = rows.iter().map(|r| hz(r.freq_hz)).collect();
            if !rates.is_empty() {
                v.push(format!("{words} {}", rates.join(", ")));
            }
        }
        if let Some(d) = &ps.drift {
            v.push(format!(
                "cost per run {:+.0}..{:+.0} % of mean{}",
                d.low_pct,
                d.high_pct,
                if d.moved() { ", MOVED" } else { "" }
            ));
        }
    }
    if let Some(part) = groups_left_out(a) {
        v.push(part);
    }
    v.extend(a.budgets.model.as_ref().and_then(outside_term));
    v.extend(mode_changes(&a.gaps.split));
    let throttled = rs.runs.iter().filter(|r| r.throttled > 0).count();
    if throttled > 0 {
        v.push(format!("{} throttled", plural(throttled, "run")));
    }
    let noisy = rs.runs.iter().filter(|r| r.noisy).count();
    v.push(format!("{noisy} of {} runs noisy", rs.runs.len()));
    let removed = a.quality.raw_removed;
    if removed.events {
        v.push("events/ removed: util table skipped".to_string());
    }
    if removed.gaps {
        v.push("gaps/ removed: per-sample cost skipped".to_string());
    }
    v
}

/// "ABBA groups left out: 31 of 95 at 100 kHz": the paired groups whose
/// phases the controller could not keep (or were nonsense), per rate; None
/// when every group was kept.
fn groups_left_out(a: &Findings) -> Option<String> {
    let mut by_freq: std::collections::BTreeMap<u64, (usize, usize)> = Default::default();
    for r in &a.phase_faults {
        let e = by_freq.entry(r.freq_hz).or_default();
        e.0 += r.groups_excluded;
        e.1 += r.groups;
    }
    let parts: Vec<String> = by_freq
        .iter()
        .filter(|(_, (left, _))| *left > 0)
        .map(|(&f, (left, of))| format!("{left} of {of} at {}", hz(f)))
        .collect();
    (!parts.is_empty()).then(|| format!("ABBA groups left out: {}", parts.join(", ")))
}

/// The loss model's outside term in a few words: "loss OUTSIDE the
/// gaps grows with the rate (within runs, p 0.003)" where it is charged,
/// "outside the gaps: no growth with the rate (p 0.41, 0.62)" where some
/// design measured it and none resolves; "HETEROGENEITY" where the
/// classes disagree. None where no design measured it.
fn outside_term(m: &crate::recommend::LossModel) -> Option<String> {
    if m.fits.is_empty() {
        return None;
    }
    use crate::recommend::evidence::Class;
    let class = |c: Class| {
        if c == Class::WithinRuns {
            "within"
        } else {
            "between"
        }
    };
    let ps: Vec<String> = m
        .fits
        .iter()
        .map(|f| format!("{} p {:.2}", class(f.class), f.p_holm))
        .collect();
    let het = ["", "; HETEROGENEITY: within/between disagree"][usize::from(m.heterogeneous())];
    let words = match m.outside {
        Some(_) => "loss OUTSIDE the gaps grows with the rate",
        None => "outside the gaps: no growth with rate",
    };
    Some(format!("{words} ({}){het}", ps.join(", ")))
}

/// "speed mode changed inside 3 of 40 phases": the split phases whose two
/// halves ran at different speed modes; None where none did.
fn mode_changes(t: &crate::split::SplitTable) -> Option<String> {
    let changed: usize = t
        .rows
        .iter()
        .map(|r| r.mode_changes_on + r.mode_changes_off)
        .sum();
    let halved: usize = t.rows.iter().map(|r| r.halved).sum();
    (changed > 0).then(|| format!("speed mode changed inside {changed} of {halved} phases"))
}

/// Whether the paired loss lies above the gaps term's prediction (the
/// model under-predicts there).
fn under_predicts(r: &PerSampleRow) -> bool {
    let p = r.paired_loss_pct;
    p.is_some_and(|p| p.value > r.predicted_loss_pct.value)
}

/// The box, one string per line, frame included, from the
/// recommendations the pipeline worked out ([`Findings::budgets`]).
pub fn answer_box(rs: &ResultSet, a: &Findings) -> Vec<String> {
    let title = incomplete_part(rs);
    if let Some(t) = &a.subject.profiler {
        let (body, trust) = profiler_body(rs, a, t);
        return framed(title, body, trust);
    }
    let sampler = a.budgets.sampler.iter();
    let recs: Vec<Option<&Recommendation>> = sampler.map(|(_, r)| r.as_ref().ok()).collect();
    let mut host = host_parts(rs);
    // The event of a sampled run: a 0 Hz run opens none.
    let run = rs
        .runs
        .iter()
        .find(|r| !r.event.is_empty())
        .or(rs.runs.first());
    host.extend(run.map(|r| format!("{}, {} scope", r.event, r.scope)));
    let mut body = inside("", &host);
    body.extend(inside("", &cost_line(a, &recs)));
    body.extend(inside("loss: ", &loss_parts(a)));
    body.extend(inside("highest rate within ", &budget_parts(a)));
    body.extend(latency_line(a));
    framed(title, body, inside("trust: ", &trust_parts(rs, a)))
}

/// The host's name, CPU model and kernel, as far as the manifest knows.
fn host_parts(rs: &ResultSet) -> Vec<String> {
    let m = &rs.manifest;
    [
        Some(m.host_label(&rs.dir)),
        m.host_str("cpu_model"),
        m.host_str("kernel").map(|k| format!("Linux {k}")),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The box's lines for a `--profiler` set: the profiler, what one of its
/// interruptions costs, the loss at each rate, the highest rate within
/// each budget, its own CPU, and whether its interruptions track its rate.
/// The body's lines and the trust lines, apart: the frame keeps the trust.
fn profiler_body(rs: &ResultSet, a: &Findings, t: &ProfilerTable) -> (Vec<String>, Vec<String>) {
    let mut body = inside("", &host_parts(rs));
    body.extend(inside("profiler: ", std::slice::from_ref(&t.template)));
    let cost: Vec<String> = t
        .rows
        .iter()
        .filter(|r| r.cost_per_interruption_ns.value.is_finite() && r.resolved())
        .map(|r| {
            let c = &r.cost_per_interruption_ns;
            let interval = if c.lo.is_finite() && c.hi.is_finite() {
                format!(" [{:.1}, {:.1}]", c.lo / 1000.0, c.hi / 1000.0)
            } else {
                String::new()
            };
            format!("{:.1} us{interval} at {}", c.value / 1000.0, hz(r.freq_hz))
        })
        .collect();
    let cost = match cost.is_empty() {
        true => vec!["not resolved (see the profiler table)".to_string()],
        false => cost,
    };
    body.extend(inside("one interruption costs the application ", &cost));
    let per_rate = |v: &dyn Fn(&ProfilerRow) -> String| -> Vec<String> {
        t.rows
            .iter()
            .map(|r| format!("{} {}", hz(r.freq_hz), v(r)))
            .collect()
    };
    body.extend(inside(
        "loss: ",
        &per_rate(&|r| loss_pct(r.gap_loss_pct.value)),
    ));
    body.extend(inside("highest rate within ", &budget_parts(a)));
    let own = per_rate(&|r| pct(r.profiler_cpu_pct.value).replace(" %", " % of a CPU"));
    body.extend(inside("its own CPU: ", &own));
    // Rates whose extra interruptions lie outside the +-5 % band, and rates
    // where the background hides them (the interval holds the rate but is
    // wider than the band).
    let band = crate::subject::profiler::TRACKING_TOLERANCE;
    let mut trust: Vec<String> = Vec::new();
    let mut hidden: Vec<String> = Vec::new();
    for r in t.rows.iter().filter(|r| r.tracking_note().is_some()) {
        let (f, e) = (r.freq_hz as f64, &r.excess_episodes_per_s);
        if e.lo > f * (1.0 + band) || e.hi < f * (1.0 - band) {
            let seen = format!("{:.0} %", r.tracking_pct);
            trust.push(format!("{seen} of the rate seen at {}", hz(r.freq_hz)));
        } else {
            hidden.push(hz(r.freq_hz));
        }
    }
    if !hidden.is_empty() {
        trust.push(format!("rate not resolved to 5 % at {}", hidden.join(", ")));
    }
    if trust.is_empty() {
        trust.push("extra interruptions track the requested rate within 5 %".to_string());
    }
    if !t.failed.is_empty() {
        trust.push(format!("{} failed", plural(t.failed.len(), "run")));
    }
    let noisy = rs.runs.iter().filter(|r| r.noisy).count();
    trust.push(format!("{noisy} of {} runs noisy", rs.runs.len()));
    (body, inside("trust: ", &trust))
}

/// The frame around the box's lines, cut to [`MAX_LINES`] lines of
/// [`WIDTH`] columns: the body is cut, never the trust lines, and the
/// title carries `status` (an incomplete set).
fn framed(status: Option<String>, mut body: Vec<String>, trust: Vec<String>) -> Vec<String> {
    let trust: Vec<String> = trust.into_iter().take(MAX_LINES - 3).collect();
    body.truncate(MAX_LINES - 2 - trust.len());
    body.extend(trust);
    let status = status.map_or(String::new(), |s| format!(" ({s})"));
    let title = format!(" what perf sampling costs on this host{status} ");
    let title: String = title.chars().take(WIDTH - 4).collect();
    let dashes = (WIDTH - 3).saturating_sub(title.chars().count());
    let mut out = vec![format!("+-{title}{}+", "-".repeat(dashes))];
    out.extend(body.iter().map(|l| boxed(l)));
    out.push(format!("+{}+", "-".repeat(WIDTH - 2)));
    out
}

/// `answer` (a framed box) with `line` as its last line inside the frame,
/// cut to the frame's width.
pub fn with_line(mut answer: Vec<String>, line: &str) -> Vec<String> {
    let at = answer.len().saturating_sub(1);
    answer.insert(at, boxed(line));
    answer
}

/// `line` between the frame's sides, cut or padded to the inside's width.
fn boxed(line: &str) -> String {
    let line: String = line.chars().take(WIDTH - 4).collect();
    format!("| {line:<w$} |", w = WIDTH - 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_losses_and_wrapping() {
        assert_eq!(hz(100), "100 Hz");
        assert_eq!(hz(2000), "2 kHz");
        assert_eq!(hz(2500), "2.5 kHz");
        assert_eq!(pct(0.2174), "0.217 %");
        assert_eq!(pct(96.78), "96.8 %");
        let parts: Vec<String> = (0..10).map(|i| format!("part number {i}")).collect();
        let lines = wrap("lead: ", &parts, 40);
        assert!(lines.len() > 1);
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:?}");
        assert!(lines[0].starts_with("lead: part number 0 | part number 1"));
        assert!(lines[1].starts_with("      part number"), "{lines:?}");
    }

    /// The trust line counts the phases that changed speed mode inside,
    /// and says nothing where none did.
    #[test]
    fn mode_changes_are_counted_where_there_are_some() {
        use crate::split::SplitRow;
        use crate::stats::t_interval;
        let row = |freq_hz: u64, off: usize| SplitRow {
            freq_hz,
            runs: 3,
            groups: 72,
            total: t_interval(&[0.1, 0.2, 0.3]),
            in_gaps: t_interval(&[1.2, 1.2, 1.3]),
            outside: t_interval(&[0.1, 0.2, 0.3]),
            closure_pp: 0.0,
            achieved_hz: freq_hz as f64,
            halved: 288,
            mode_changes_on: 0,
            mode_changes_off: off,
            carryover: t_interval(&[]),
            outside_vs_zero: t_interval(&[]),
            off_recovery: t_interval(&[]),
        };
        let mut t = crate::split::SplitTable::default();
        assert_eq!(mode_changes(&t), None);
        t.rows = vec![row(500, 0), row(4000, 0)];
        assert_eq!(mode_changes(&t), None);
        t.rows[1].mode_changes_off = 3;
        assert_eq!(
            mode_changes(&t).as_deref(),
            Some("speed mode changed inside 3 of 576 phases")
        );
    }
}
