//! The report's figures: which tables each plot draws, through the plotting module (`plot`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::AnalysisError;
use crate::fit::LineFit;
use crate::pipeline::Findings;
use crate::plot::{
    Axes, FitLine, PairedTrace, PlotError, PointSeries, plot_durations, plot_paired, plot_vs_freq,
    plot_vs_freq_axes,
};
use crate::reference::Reference;
use crate::report::latency;
use crate::stats::Estimate;
use results_format::timeline::RecoveryRow;

/// Most paired runs drawn (one per frequency, lowest run id first).
const MAX_PAIRED_TRACES: usize = 6;

fn finite_or(v: f64, fallback: f64) -> f64 {
    if v.is_finite() { v } else { fallback }
}

fn series(label: &str, pts: &[(u64, Estimate)]) -> PointSeries {
    PointSeries {
        label: label.to_string(),
        x: pts.iter().map(|(f, _)| *f as f64).collect(),
        y: pts.iter().map(|(_, e)| e.value).collect(),
        y_lo: pts.iter().map(|(_, e)| finite_or(e.lo, e.value)).collect(),
        y_hi: pts.iter().map(|(_, e)| finite_or(e.hi, e.value)).collect(),
    }
}

fn reference_series(label: &str, pts: &[(u64, f64)]) -> PointSeries {
    let pts: Vec<(u64, f64)> = pts.iter().copied().filter(|(f, _)| *f > 0).collect();
    PointSeries {
        label: label.to_string(),
        x: pts.iter().map(|(f, _)| *f as f64).collect(),
        y: pts.iter().map(|(_, v)| *v).collect(),
        y_lo: Vec::new(),
        y_hi: Vec::new(),
    }
}

/// A fit in %/kHz drawn against x in Hz, with its 95 % band over the
/// measured range (geometric grid, as the x axis is logarithmic).
fn fit_line(label: String, fit: &LineFit, x_min_hz: f64, x_max_hz: f64) -> FitLine {
    let mut band_x = Vec::new();
    let (mut band_lo, mut band_hi) = (Vec::new(), Vec::new());
    if x_min_hz > 0.0 && x_max_hz > x_min_hz {
        let n = 60;
        for i in 0..=n {
            let x = x_min_hz * (x_max_hz / x_min_hz).powf(i as f64 / n as f64);
            let k = x / 1000.0;
            let h = fit.band_half_width(k);
            if !h.is_finite() {
                band_x.clear();
                band_lo.clear();
                band_hi.clear();
                break;
            }
            band_x.push(x);
            band_lo.push(fit.at(k) - h);
            band_hi.push(fit.at(k) + h);
        }
    }
    FitLine {
        label,
        intercept: fit.intercept,
        slope: fit.slope / 1000.0,
        band_x,
        band_lo,
        band_hi,
        ..FitLine::default()
    }
}

fn range(x: &[f64]) -> (f64, f64) {
    let lo = x
        .iter()
        .copied()
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let hi = x.iter().copied().fold(0.0, f64::max);
    (lo, hi)
}

/// Plots written and plots that failed (a failed plot does not cost the
/// tables: it is reported at the top of report.md instead).
#[derive(Debug, Default)]
pub struct PlotOutcome {
    pub files: Vec<PathBuf>,
    pub errors: Vec<String>,
}

impl PlotOutcome {
    fn add(&mut self, r: Result<Vec<PathBuf>, crate::plot::PlotError>) {
        match r {
            Ok(f) => self.files.extend(f),
            Err(e) => {
                let e = AnalysisError::from(e);
                tracing::warn!("{e}");
                self.errors.push(e.to_string());
            }
        }
    }
}

/// Draw every plot that has data into `out`; the budget plot marks the
/// answers at the report budgets ([`Findings::budgets`]).
pub fn write_plots(out: &Path, a: &Findings, reference: &Reference) -> PlotOutcome {
    let mut files = PlotOutcome::default();
    budget_plot(&mut files, out, a, reference);
    util_plot(&mut files, out, a, reference);
    loss_plot(&mut files, out, a, reference);
    durations_plot(&mut files, out, a);
    cost_plot(&mut files, out, a);
    cost_over_time_plot(&mut files, out, a);
    contents_plots(&mut files, out, a);
    if let Some(f) = production_rates(a, &out.join("production_rates")) {
        files.add(f);
    }
    recovery_plot(&mut files, out, a);
    paired_plot(&mut files, out, a);
    if let Some(r) = a.gaps.latency.as_ref().and_then(|t| latency::plot(out, t)) {
        files.add(r);
    }
    files
}

/// The question itself, first: the loss each rate costs (the model's
/// prediction with the next run's 95 % prediction interval, the paired
/// throughput loss with its interval), the budgets as lines and each
/// recommended rate on its budget, log-log, with the 2014 points.
fn budget_plot(files: &mut PlotOutcome, out: &Path, a: &Findings, reference: &Reference) {
    let predicted: Vec<(u64, Estimate)> = a
        .gaps
        .per_sample
        .iter()
        .flat_map(|ps| &ps.rows)
        .filter(|r| r.predicted_loss_pct.value.is_finite() && r.total_pred_ns.hi.is_finite())
        .map(|r| {
            let at = |c: f64| crate::percost::predicted_loss_pct(r.achieved_hz, c);
            let e = Estimate {
                lo: at(r.total_pred_ns.lo),
                hi: at(r.total_pred_ns.hi),
                ..r.predicted_loss_pct
            };
            (r.freq_hz, e)
        })
        .collect();
    let paired: Vec<(u64, Estimate)> = a
        .tables
        .primary_loss()
        .into_iter()
        .map(|r| (r.freq_hz, r.trusted()))
        .collect();
    if predicted.is_empty() && paired.is_empty() {
        return;
    }
    let answers: Vec<(u64, f64)> = a
        .budgets
        .sampler
        .iter()
        .filter_map(|(b, r)| r.as_ref().ok().and_then(|r| r.rate_hz).map(|hz| (hz, *b)))
        .collect();
    let model = model_curve(a, answers.iter().map(|(hz, _)| *hz as f64));
    // The paired points a little right of their rate, so a prediction
    // that agrees does not hide under them.
    let mut paired_series = series("paired throughput loss (95% CI; drawn just right)", &paired);
    for x in &mut paired_series.x {
        *x *= PAIRED_DODGE;
    }
    let mut all = vec![
        series("predicted loss (bars: the next run's 95% PI)", &predicted),
        paired_series,
        PointSeries {
            label: "recommended rate, on its budget".to_string(),
            x: answers.iter().map(|(hz, _)| *hz as f64).collect(),
            y: answers.iter().map(|(_, b)| *b).collect(),
            y_lo: Vec::new(),
            y_hi: Vec::new(),
        },
        reference_series(
            "2014 reference",
            &reference
                .loss
                .iter()
                .map(|r| (r.freq_hz, r.loss_pct))
                .collect::<Vec<_>>(),
        ),
    ];
    // Shapes go circle, triangle, square in series order: the answers get
    // their own; the 2014 points, last, a circle of another colour.
    all.retain(|s| !s.x.is_empty());
    let mut lines: Vec<FitLine> = crate::recommend::BUDGETS_PCT
        .iter()
        .map(|&b| FitLine {
            label: format!("budget {b} %"),
            intercept: b,
            slope: 0.0,
            band_x: Vec::new(),
            band_lo: Vec::new(),
            band_hi: Vec::new(),
            label_at_end: true,
            colour: Some(budget_colour(b)),
            ..FitLine::default()
        })
        .collect();
    lines.extend(model);
    files.add(plot_vs_freq_axes(
        "What each sampling rate costs, against the budgets",
        (
            "sampling rate (Hz, log scale)",
            "loss of the application (%, log scale)",
        ),
        &all,
        &lines,
        Axes {
            log_x: true,
            log_y: true,
            // All of the application's time: the top the losses approach,
            // and room above the budgets for the legend.
            y_include: Some(100.0),
        },
        &out.join("budget"),
    ));
}

/// Each budget's line colour, the same in every report: orange, sky blue,
/// dark yellow (Okabe-Ito), from the tightest budget up.
fn budget_colour(budget_pct: f64) -> (u8, u8, u8) {
    match crate::recommend::BUDGETS_PCT
        .iter()
        .position(|&b| b == budget_pct)
    {
        Some(0) => (230, 159, 0),
        Some(1) => (86, 180, 233),
        _ => (120, 110, 20),
    }
}

/// How far right of its rate a paired point is drawn (x factor, log axis).
const PAIRED_DODGE: f64 = 1.07;

/// The predicted loss between and around the measured rates, as the
/// recommendation charges it ([`crate::pipeline::Budgets::model`]'s curve: at each
/// rate the cost of the measured rate at or below it with the largest
/// upper bound, raised to the paired loss's cost where the model
/// under-predicts): the line at the cost, the band over its 95 % interval. From the lowest recommended or measured rate to the highest
/// measured; None without a model.
fn model_curve(a: &Findings, answers: impl Iterator<Item = f64>) -> Option<FitLine> {
    let curve = a.budgets.model.as_ref()?.curve();
    let measured: Vec<f64> = curve.points.iter().map(|p| p.freq_hz as f64).collect();
    let hi = measured.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lo = measured
        .iter()
        .copied()
        .chain(answers)
        .fold(f64::INFINITY, f64::min);
    if !(lo > 0.0 && hi > lo) {
        return None;
    }
    // A log grid, plus each measured rate and a hair below it, where the
    // charged cost steps.
    let n = 160;
    let mut xs: Vec<f64> = (0..=n)
        .map(|i| lo * (hi / lo).powf(f64::from(i) / f64::from(n)))
        .chain(measured.iter().flat_map(|&f| [f * (1.0 - 1e-9), f]))
        .filter(|&x| x >= lo && x <= hi)
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let charged: Vec<(f64, Estimate)> = xs.iter().map(|&x| (x, curve.at(x).cost_ns)).collect();
    let loss = |pick: fn(&Estimate) -> f64| -> Vec<f64> {
        charged
            .iter()
            .map(|(x, c)| crate::percost::predicted_loss_pct(*x, pick(c)))
            .collect()
    };
    Some(FitLine {
        label: "predicted loss, rate x the cost per sample charged".to_string(),
        intercept: 0.0,
        slope: 0.0,
        band_lo: loss(|c| c.lo),
        band_hi: loss(|c| c.hi),
        curve: xs.iter().copied().zip(loss(|c| c.value)).collect(),
        band_x: xs,
        band_label: "the next run's 95% prediction interval".to_string(),
        colour: Some((0, 0, 0)),
        ..FitLine::default()
    })
}

/// Handler utilisation against the rate, log-log, with the 2014 points.
fn util_plot(files: &mut PlotOutcome, out: &Path, a: &Findings, reference: &Reference) {
    if !a.tables.util.is_empty() {
        let pts: Vec<(u64, Estimate)> = a
            .tables
            .util
            .iter()
            .map(|r| (r.freq_hz, r.util_pct))
            .collect();
        let s = series("this host (95% CI)", &pts);
        let (lo, hi) = range(&s.x);
        let mut fits = Vec::new();
        if let Some(f) = &a.tables.fits.util_origin {
            fits.push(fit_line(
                format!("util = {:.4} %/kHz x f", f.slope),
                f,
                lo,
                hi,
            ));
        }
        // Utilisation spans three decades from 100 Hz to 100 kHz: on a
        // linear axis the production rates sit on the floor.
        files.add(plot_vs_freq_axes(
            "Handler CPU utilisation",
            (
                "sampling frequency (Hz)",
                "handler utilisation (%, log scale)",
            ),
            &[s, reference_series("2014 reference", &reference.util)],
            &fits,
            Axes {
                log_x: true,
                log_y: true,
                y_include: None,
            },
            &out.join("util_vs_freq"),
        ));
    }
}

/// Throughput loss against the rate, with the 2014 points and the fit.
fn loss_plot(files: &mut PlotOutcome, out: &Path, a: &Findings, reference: &Reference) {
    let ref_loss: Vec<(u64, f64)> = reference
        .loss
        .iter()
        .map(|r| (r.freq_hz, r.loss_pct))
        .collect();
    let primary = a.tables.primary_loss();
    if !primary.is_empty() {
        let pts: Vec<(u64, Estimate)> = primary.iter().map(|r| (r.freq_hz, r.trusted())).collect();
        let s = series("this host (95% CI)", &pts);
        let (lo, hi) = range(&s.x);
        let mut fits = Vec::new();
        if let Some(f) = &a.tables.fits.loss_line {
            fits.push(fit_line(
                format!("loss = {:.3}% + {:.4} %/kHz x f", f.intercept, f.slope),
                f,
                lo,
                hi,
            ));
        }
        files.add(plot_vs_freq(
            "Workload performance loss",
            "sampling frequency (Hz)",
            "loss (%)",
            &[s, reference_series("2014 reference", &ref_loss)],
            &fits,
            true,
            &out.join("loss_vs_freq"),
        ));
    }
}

/// The handler durations' distribution per rate.
fn durations_plot(files: &mut PlotOutcome, out: &Path, a: &Findings) {
    let groups: Vec<(String, Vec<f64>)> = a
        .tables
        .durations
        .iter()
        .filter(|g| !g.durations_ns.is_empty())
        .map(|g| {
            (
                format!("{} Hz", g.freq_hz),
                g.durations_ns.iter().map(|&d| d as f64).collect(),
            )
        })
        .collect();
    if !groups.is_empty() {
        files.add(plot_durations(
            "Handler duration distribution",
            &groups,
            &out.join("handler_durations"),
        ));
    }
}

/// The gaps design's cost per sample against the rate.
fn cost_plot(files: &mut PlotOutcome, out: &Path, a: &Findings) {
    if let Some(ps) = &a.gaps.per_sample {
        let pts: Vec<(u64, Estimate)> = ps
            .rows
            .iter()
            .filter(|r| r.total_ns.value.is_finite())
            .map(|r| (r.freq_hz, r.total_ns))
            .collect();
        if !pts.is_empty() {
            files.add(plot_vs_freq(
                "What one sample costs the application (gaps design)",
                "sampling frequency (Hz)",
                "total cost per sample (ns)",
                &[series("direct + after-effect (95% CI)", &pts)],
                &[],
                true,
                &out.join("cost_per_sample"),
            ));
        }
    }
}

/// Each gaps run's cost per sample against its start in the sweep, one
/// series per rate: drift shows as a slope or a step shared by the rates.
fn cost_over_time_plot(files: &mut PlotOutcome, out: &Path, a: &Findings) {
    let Some(ps) = &a.gaps.per_sample else {
        return;
    };
    let costs: Vec<_> = ps
        .run_costs
        .iter()
        .filter(|c| c.total_ns.is_finite())
        .collect();
    let Some(t0) = costs.iter().map(|c| c.started_at_ns).min() else {
        return;
    };
    let mut freqs: Vec<u64> = costs.iter().map(|c| c.freq_hz).collect();
    freqs.sort_unstable();
    freqs.dedup();
    let by: Vec<PointSeries> = freqs
        .iter()
        .map(|&f| {
            let at: Vec<_> = costs.iter().filter(|c| c.freq_hz == f).collect();
            PointSeries {
                label: format!("{f} Hz"),
                x: at
                    .iter()
                    .map(|c| c.started_at_ns.saturating_sub(t0) as f64 / 60e9)
                    .collect(),
                y: at.iter().map(|c| c.total_ns).collect(),
                y_lo: Vec::new(),
                y_hi: Vec::new(),
            }
        })
        .collect();
    files.add(plot_vs_freq(
        "The cost of one sample, run by run, in sweep order",
        "minutes into the sweep (run start)",
        "total cost per sample (ns)",
        &by,
        &[],
        false,
        &out.join("cost_over_time"),
    ));
}

/// The cost per sample by contents (handler and application).
fn contents_plots(files: &mut PlotOutcome, out: &Path, a: &Findings) {
    if a.contents.names.len() > 1 {
        type Pick = fn(&crate::contents::ContentsRow) -> Option<Estimate>;
        let measures: [(&str, &str, Pick); 2] = [
            ("handler", "handler time per sample (ns)", |r| r.handler_ns),
            ("application", "application cost per sample (ns)", |r| {
                r.total_ns
            }),
        ];
        for (stem, y_label, pick) in measures {
            let by: Vec<PointSeries> = a
                .contents
                .names
                .iter()
                .filter_map(|c| {
                    let pts: Vec<(u64, Estimate)> = a
                        .contents
                        .rows
                        .iter()
                        .filter(|r| &r.sample == c)
                        .filter_map(|r| pick(r).map(|e| (r.freq_hz, e)))
                        .filter(|(_, e)| e.value.is_finite())
                        .collect();
                    (!pts.is_empty()).then(|| series(&format!("{c} (95% CI)"), &pts))
                })
                .collect();
            if !by.is_empty() {
                files.add(plot_vs_freq(
                    &format!("What one sample costs by contents: {stem}"),
                    "sampling frequency (Hz)",
                    y_label,
                    &by,
                    &[],
                    true,
                    &out.join(format!("cost_by_contents_{stem}")),
                ));
            }
        }
    }
}

/// The loop's speed recovery after a gap.
fn recovery_plot(files: &mut PlotOutcome, out: &Path, a: &Findings) {
    if !a.gaps.recovery.is_empty() {
        files.add(plot_vs_freq(
            "Speed recovery after a gap",
            "time since the end of the last gap (ns)",
            "mean excess per chunk (ns)",
            &recovery_series(&a.gaps.recovery),
            &[],
            true,
            &out.join("recovery"),
        ));
    }
}

/// A paired run per rate: the loop rate per phase.
fn paired_plot(files: &mut PlotOutcome, out: &Path, a: &Findings) {
    let mut seen = std::collections::BTreeSet::new();
    let traces: Vec<PairedTrace> = a
        .tables
        .paired
        .iter()
        .filter(|t| !t.t_s.is_empty() && t.rate.iter().all(|r| r.is_finite()))
        .filter(|t| seen.insert(t.freq_hz))
        .take(MAX_PAIRED_TRACES)
        .map(|t| PairedTrace {
            label: format!("run {} at {} Hz", t.run_id, t.freq_hz),
            t_s: t.t_s.clone(),
            rate: t.rate.clone(),
            sampling: t.sampling.clone(),
        })
        .collect();
    if !traces.is_empty() {
        files.add(plot_paired(
            "Paired runs: loop rate per phase",
            &traces,
            &out.join("paired_phases"),
        ));
    }
}

/// Rates a production profiler uses (and the article's low rates).
const PRODUCTION_MAX_HZ: u64 = 4000;

/// The production rates alone (<= 4 kHz), so their values are not flattened
/// by 100 kHz on one linear axis: handler utilisation, the gaps design's
/// predicted loss and the paired throughput loss, all % of a CPU. None when
/// no rate that low was measured.
fn production_rates(a: &Findings, stem: &Path) -> Option<Result<Vec<PathBuf>, PlotError>> {
    let low = |f: u64| f > 0 && f <= PRODUCTION_MAX_HZ;
    let util: Vec<(u64, Estimate)> = a
        .tables
        .util
        .iter()
        .filter(|r| low(r.freq_hz))
        .map(|r| (r.freq_hz, r.util_pct))
        .collect();
    let predicted: Vec<(u64, Estimate)> = a
        .gaps
        .per_sample
        .iter()
        .flat_map(|ps| &ps.rows)
        .filter(|r| low(r.freq_hz) && r.predicted_loss_pct.value.is_finite())
        .map(|r| (r.freq_hz, r.predicted_loss_pct))
        .collect();
    let paired: Vec<(u64, Estimate)> = a
        .tables
        .primary_loss()
        .into_iter()
        .filter(|r| low(r.freq_hz))
        .map(|r| (r.freq_hz, r.trusted()))
        .collect();
    let series: Vec<PointSeries> = [
        ("handler utilisation (95% CI)", &util),
        ("predicted loss, gaps design (95% CI)", &predicted),
        ("throughput loss (95% CI)", &paired),
    ]
    .into_iter()
    .filter(|(_, pts)| !pts.is_empty())
    .map(|(label, pts)| series(label, pts))
    .collect();
    (!series.is_empty()).then(|| {
        plot_vs_freq(
            &format!("What sampling costs at production rates (<= {PRODUCTION_MAX_HZ} Hz)"),
            "sampling frequency (Hz)",
            "% of a CPU",
            &series,
            &[],
            true,
            stem,
        )
    })
}

/// Where a recovery bin is drawn on the log axis: its geometric middle
/// (half the upper edge for the first bin, twice the lower edge for the
/// open last one).
fn bin_x(from_ns: u64, to_ns: u64) -> f64 {
    match (from_ns, to_ns) {
        (0, t) => t as f64 / 2.0,
        (f, u64::MAX) => f as f64 * 2.0,
        (f, t) => (f as f64 * t as f64).sqrt(),
    }
}

/// Per distance bin (from_ns, to_ns): summed excess (ns) and chunks.
type BinSums = BTreeMap<(u64, u64), (f64, u64)>;

/// The recovery curve, one series per frequency: per distance bin, the
/// excess pooled over the frequency's runs / their chunks. Bins without
/// chunks are left out.
fn recovery_series(rows: &[RecoveryRow]) -> Vec<PointSeries> {
    let mut by: BTreeMap<u64, BinSums> = BTreeMap::new();
    for r in rows {
        let e = by
            .entry(r.freq_hz)
            .or_default()
            .entry((r.from_ns, r.to_ns))
            .or_default();
        e.0 += r.excess_ns_sum;
        e.1 += r.chunks;
    }
    by.into_iter()
        .map(|(f, bins)| {
            let pts: Vec<(f64, f64)> = bins
                .into_iter()
                .filter(|(_, (e, c))| *c > 0 && e.is_finite())
                .map(|((from, to), (e, c))| (bin_x(from, to), e / c as f64))
                .collect();
            PointSeries {
                label: format!("{f} Hz"),
                x: pts.iter().map(|p| p.0).collect(),
                y: pts.iter().map(|p| p.1).collect(),
                y_lo: Vec::new(),
                y_hi: Vec::new(),
            }
        })
        .filter(|s| !s.x.is_empty())
        .collect()
}
