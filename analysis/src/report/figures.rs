//! The report's figures: which tables each plot draws, through the plotting module (`plot`).

use std::path::{Path, PathBuf};

use crate::error::AnalysisError;
use crate::fit::LineFit;
use crate::pipeline::Findings;
use crate::plot::{
    Axes, FitLine, PairedTrace, PlotError, Point, PointSeries, plot_durations, plot_paired,
    plot_vs_freq,
};
use crate::reference::Reference;
use crate::report::latency;
use crate::stats::{Estimate, grouped};
use results_format::timeline::RecoveryRow;

/// Most paired runs drawn (one per frequency, lowest run id first).
const MAX_PAIRED_TRACES: usize = 6;

/// The x axis of the plots against the requested rate.
const FREQ: &str = "sampling frequency (Hz)";

/// A series of estimates with their 95 % bars (a bound that is not finite:
/// no bar on that side).
fn series(label: &str, pts: &[(u64, Estimate)]) -> PointSeries {
    let or_value = |v: f64, e: &Estimate| if v.is_finite() { v } else { e.value };
    let bar = |(f, e): &(u64, Estimate)| [*f as f64, e.value, or_value(e.lo, e), or_value(e.hi, e)];
    PointSeries::with_bars(label, pts.iter().map(bar))
}

/// The 2014 reference's points above 0 Hz, without bars.
fn reference_series(pts: &[(u64, f64)]) -> PointSeries {
    let shown = pts.iter().filter(|(f, _)| *f > 0);
    PointSeries::new("2014 reference", shown.map(|&(f, v)| (f as f64, v)))
}

/// A fit in %/kHz drawn against x in Hz, with its 95 % band over the
/// measured range (geometric grid, as the x axis is logarithmic; no band
/// where any of it is not finite).
fn fit_line(label: String, fit: &LineFit, (lo, hi): (f64, f64)) -> FitLine {
    let grid =
        (lo > 0.0 && hi > lo).then(|| (0..=60).map(|i| lo * (hi / lo).powf(i as f64 / 60.0)));
    let band: Option<Vec<(f64, f64, f64)>> = (grid.into_iter().flatten())
        .map(|x| {
            let (y, h) = (fit.at(x / 1000.0), fit.band_half_width(x / 1000.0));
            h.is_finite().then_some((x, y - h, y + h))
        })
        .collect();
    FitLine {
        label,
        intercept: fit.intercept,
        slope: fit.slope / 1000.0,
        band: band.unwrap_or_default(),
        ..FitLine::default()
    }
}

/// The smallest positive and the largest x of `points`.
fn range(points: &[Point]) -> (f64, f64) {
    let x = points.iter().map(|p| p.x);
    let lo = x.clone().filter(|v| *v > 0.0);
    (lo.fold(f64::INFINITY, f64::min), x.fold(0.0, f64::max))
}

/// Plots written and plots that failed (a failed plot does not cost the
/// tables: it is reported at the top of report.md instead).
#[derive(Debug, Default)]
pub struct PlotOutcome {
    pub files: Vec<PathBuf>,
    pub errors: Vec<String>,
}

impl PlotOutcome {
    fn add(&mut self, r: Result<Vec<PathBuf>, PlotError>) {
        match r {
            Ok(f) => self.files.extend(f),
            Err(e) => {
                let e = AnalysisError::from(e);
                tracing::warn!("{e}");
                self.errors.push(e.to_string());
            }
        }
    }

    /// `series` against a log x axis without fit lines, into `stem`.svg
    /// and `stem`.png.
    fn points(&mut self, stem: PathBuf, title: &str, labels: (&str, &str), series: &[PointSeries]) {
        self.add(plot_vs_freq(title, labels, series, &[], Axes::LOG_X, &stem));
    }
}

/// Draw every plot that has data into `out`; the budget plot marks the
/// answers at the report budgets ([`Findings::budgets`]).
pub fn write_plots(out: &Path, a: &Findings, reference: &Reference) -> PlotOutcome {
    let mut files = PlotOutcome::default();
    let primary = a.tables.primary_loss();
    let paired: Vec<(u64, Estimate)> = primary.iter().map(|r| (r.freq_hz, r.trusted())).collect();
    let util = a.tables.util.iter();
    let util: Vec<(u64, Estimate)> = util.map(|r| (r.freq_hz, r.util_pct)).collect();
    let per_sample = a.gaps.per_sample.iter().flat_map(|ps| &ps.rows);
    budget_plot(&mut files, out, a, &paired, &reference.loss);
    let fits = &a.tables.fits;
    // Utilisation spans three decades from 100 Hz to 100 kHz: on a linear
    // axis the production rates sit on the floor.
    let util_fit =
        (fits.util_origin.as_ref()).map(|f| (format!("util = {:.4} %/kHz x f", f.slope), f));
    host_plot(
        &mut files,
        out.join("util_vs_freq"),
        (
            "Handler CPU utilisation",
            "handler utilisation (%, log scale)",
        ),
        &util,
        &reference.util,
        util_fit,
        Axes::LOG_LOG,
    );
    let loss_fit = fits.loss_line.as_ref().map(|f| {
        let label = format!("loss = {:.3}% + {:.4} %/kHz x f", f.intercept, f.slope);
        (label, f)
    });
    host_plot(
        &mut files,
        out.join("loss_vs_freq"),
        ("Workload performance loss", "loss (%)"),
        &paired,
        &reference.loss,
        loss_fit,
        Axes::LOG_X,
    );
    durations_plot(&mut files, out, a);
    let cost = per_sample.clone().filter(|r| r.total_ns.value.is_finite());
    let cost: Vec<(u64, Estimate)> = cost.map(|r| (r.freq_hz, r.total_ns)).collect();
    if !cost.is_empty() {
        files.points(
            out.join("cost_per_sample"),
            "What one sample costs the application (gaps design)",
            (FREQ, "total cost per sample (ns)"),
            &[series("direct + after-effect (95% CI)", &cost)],
        );
    }
    cost_over_time_plot(&mut files, out, a);
    contents_plots(&mut files, out, a);
    let predicted = per_sample.filter(|r| r.predicted_loss_pct.value.is_finite());
    let predicted: Vec<(u64, Estimate)> = predicted
        .map(|r| (r.freq_hz, r.predicted_loss_pct))
        .collect();
    production_rates(&mut files, out, [&util, &predicted, &paired]);
    if !a.gaps.recovery.is_empty() {
        files.points(
            out.join("recovery"),
            "Speed recovery after a gap",
            (
                "time since the end of the last gap (ns)",
                "mean excess per chunk (ns)",
            ),
            &recovery_series(&a.gaps.recovery),
        );
    }
    paired_plot(&mut files, out, a);
    if let Some(r) = a.gaps.latency.as_ref().and_then(|t| latency::plot(out, t)) {
        files.add(r);
    }
    files
}

/// This host's points against the rate (95 % bars) beside the 2014
/// reference's, with the fit over the points' range where there is one.
fn host_plot(
    files: &mut PlotOutcome,
    stem: PathBuf,
    (title, y_label): (&str, &str),
    pts: &[(u64, Estimate)],
    reference: &[(u64, f64)],
    fit: Option<(String, &LineFit)>,
    axes: Axes,
) {
    if pts.is_empty() {
        return;
    }
    let s = series("this host (95% CI)", pts);
    let fits = Vec::from_iter(fit.map(|(label, f)| fit_line(label, f, range(&s.points))));
    let all = [s, reference_series(reference)];
    files.add(plot_vs_freq(
        title,
        (FREQ, y_label),
        &all,
        &fits,
        axes,
        &stem,
    ));
}

/// The question itself, first: the loss each rate costs (the model's
/// prediction with the next run's 95 % prediction interval, the paired
/// throughput loss with its interval), the budgets as lines and each
/// recommended rate on its budget, log-log, with the 2014 points.
fn budget_plot(
    files: &mut PlotOutcome,
    out: &Path,
    a: &Findings,
    paired: &[(u64, Estimate)],
    ref_loss: &[(u64, f64)],
) {
    let predicted: Vec<(u64, Estimate)> = (a.gaps.per_sample.iter().flat_map(|ps| &ps.rows))
        .filter(|r| r.predicted_loss_pct.value.is_finite() && r.total_pred_ns.hi.is_finite())
        .map(|r| {
            let at = |c: f64| crate::percost::predicted_loss_pct(r.achieved_hz, c);
            let (lo, hi) = (at(r.total_pred_ns.lo), at(r.total_pred_ns.hi));
            (
                r.freq_hz,
                Estimate {
                    lo,
                    hi,
                    ..r.predicted_loss_pct
                },
            )
        })
        .collect();
    if predicted.is_empty() && paired.is_empty() {
        return;
    }
    let sampler = a.budgets.sampler.iter();
    let answers = sampler.filter_map(|(b, r)| Some((r.as_ref().ok()?.rate_hz? as f64, *b)));
    let answers: Vec<(f64, f64)> = answers.collect();
    let model = model_curve(a, answers.iter().map(|(hz, _)| *hz));
    // The paired points a little right of their rate, so a prediction
    // that agrees does not hide under them.
    let mut paired_series = series("paired throughput loss (95% CI; drawn just right)", paired);
    for p in &mut paired_series.points {
        p.x *= PAIRED_DODGE;
    }
    let mut all = vec![
        series("predicted loss (bars: the next run's 95% PI)", &predicted),
        paired_series,
        PointSeries::new("recommended rate, on its budget", answers),
        reference_series(ref_loss),
    ];
    // Shapes go circle, triangle, square in series order: the answers get
    // their own; the 2014 points, last, a circle of another colour.
    all.retain(|s| !s.points.is_empty());
    let mut lines: Vec<FitLine> = (crate::recommend::BUDGETS_PCT.iter())
        .map(|&b| FitLine::level(format!("budget {b} %"), b, budget_colour(b)))
        .collect();
    lines.extend(model);
    let labels = (
        "sampling rate (Hz, log scale)",
        "loss of the application (%, log scale)",
    );
    // All of the application's time: the top the losses approach, and
    // room above the budgets for the legend.
    let axes = Axes {
        y_include: Some(100.0),
        ..Axes::LOG_LOG
    };
    let title = "What each sampling rate costs, against the budgets";
    files.add(plot_vs_freq(
        title,
        labels,
        &all,
        &lines,
        axes,
        &out.join("budget"),
    ));
}

/// Each budget's line colour, the same in every report: orange, sky blue,
/// dark yellow (Okabe-Ito), from the tightest budget up.
fn budget_colour(budget_pct: f64) -> (u8, u8, u8) {
    const COLOURS: [(u8, u8, u8); 2] = [(230, 159, 0), (86, 180, 233)];
    let i = crate::recommend::BUDGETS_PCT
        .iter()
        .position(|&b| b == budget_pct);
    *i.and_then(|i| COLOURS.get(i)).unwrap_or(&(120, 110, 20))
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
    let lo = measured.iter().copied().chain(answers);
    let lo = lo.fold(f64::INFINITY, f64::min);
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
    let loss = crate::percost::predicted_loss_pct;
    Some(FitLine {
        label: "predicted loss, rate x the cost per sample charged".to_string(),
        band: charged
            .iter()
            .map(|&(x, c)| (x, loss(x, c.lo), loss(x, c.hi)))
            .collect(),
        curve: charged
            .iter()
            .map(|&(x, c)| (x, loss(x, c.value)))
            .collect(),
        band_label: "the next run's 95% prediction interval".to_string(),
        colour: Some((0, 0, 0)),
        ..FitLine::default()
    })
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
        let title = "Handler duration distribution";
        files.add(plot_durations(
            title,
            &groups,
            &out.join("handler_durations"),
        ));
    }
}

/// Each gaps run's cost per sample against its start in the sweep, one
/// series per rate: drift shows as a slope or a step shared by the rates.
fn cost_over_time_plot(files: &mut PlotOutcome, out: &Path, a: &Findings) {
    let Some(ps) = &a.gaps.per_sample else {
        return;
    };
    let costs = ps.run_costs.iter().filter(|c| c.total_ns.is_finite());
    let costs: Vec<_> = costs.collect();
    let Some(t0) = costs.iter().map(|c| c.started_at_ns).min() else {
        return;
    };
    let by_freq = grouped(costs.iter().map(|c| (c.freq_hz, c)));
    let by: Vec<PointSeries> = by_freq
        .into_iter()
        .map(|(f, at)| {
            let minutes = at
                .iter()
                .map(|c| (c.started_at_ns.saturating_sub(t0) as f64 / 60e9, c.total_ns));
            PointSeries::new(format!("{f} Hz"), minutes)
        })
        .collect();
    files.add(plot_vs_freq(
        "The cost of one sample, run by run, in sweep order",
        (
            "minutes into the sweep (run start)",
            "total cost per sample (ns)",
        ),
        &by,
        &[],
        Axes::LINEAR,
        &out.join("cost_over_time"),
    ));
}

/// The cost per sample by contents (handler and application).
fn contents_plots(files: &mut PlotOutcome, out: &Path, a: &Findings) {
    if a.contents.names.len() <= 1 {
        return;
    }
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
            files.points(
                out.join(format!("cost_by_contents_{stem}")),
                &format!("What one sample costs by contents: {stem}"),
                (FREQ, y_label),
                &by,
            );
        }
    }
}

/// A paired run per rate: the loop rate per phase.
fn paired_plot(files: &mut PlotOutcome, out: &Path, a: &Findings) {
    let mut seen = std::collections::BTreeSet::new();
    let traces: Vec<PairedTrace> = a
        .tables
        .paired
        .iter()
        .filter(|t| !t.phases.is_empty() && t.phases.iter().all(|p| p.rate.is_finite()))
        .filter(|t| seen.insert(t.freq_hz))
        .take(MAX_PAIRED_TRACES)
        .map(|t| PairedTrace {
            label: format!("run {} at {} Hz", t.run_id, t.freq_hz),
            phases: t.phases.clone(),
        })
        .collect();
    if !traces.is_empty() {
        let title = "Paired runs: loop rate per phase";
        files.add(plot_paired(title, &traces, &out.join("paired_phases")));
    }
}

/// Rates a production profiler uses (and the article's low rates).
const PRODUCTION_MAX_HZ: u64 = 4000;

/// The production rates alone (<= 4 kHz), so their values are not flattened
/// by 100 kHz on one linear axis: handler utilisation, the gaps design's
/// predicted loss and the paired throughput loss (`measures`, in that
/// order), all % of a CPU. No plot when no rate that low was measured.
fn production_rates(files: &mut PlotOutcome, out: &Path, measures: [&[(u64, Estimate)]; 3]) {
    let labels = [
        "handler utilisation (95% CI)",
        "predicted loss, gaps design (95% CI)",
        "throughput loss (95% CI)",
    ];
    let series: Vec<PointSeries> = (labels.into_iter().zip(measures))
        .map(|(label, pts)| {
            let low = pts
                .iter()
                .filter(|(f, _)| *f > 0 && *f <= PRODUCTION_MAX_HZ);
            series(label, &low.copied().collect::<Vec<_>>())
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if !series.is_empty() {
        files.points(
            out.join("production_rates"),
            &format!("What sampling costs at production rates (<= {PRODUCTION_MAX_HZ} Hz)"),
            (FREQ, "% of a CPU"),
            &series,
        );
    }
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

/// The recovery curve, one series per frequency: per distance bin, the
/// excess pooled over the frequency's runs / their chunks. Bins without
/// chunks are left out.
fn recovery_series(rows: &[RecoveryRow]) -> Vec<PointSeries> {
    let by_freq = grouped(rows.iter().map(|r| (r.freq_hz, r)));
    by_freq
        .into_iter()
        .map(|(f, rows)| {
            let bins = grouped(rows.into_iter().map(|r| ((r.from_ns, r.to_ns), r)));
            let pts = bins.into_iter().filter_map(|((from, to), rows)| {
                let excess: f64 = rows.iter().map(|r| r.excess_ns_sum).sum();
                let chunks: u64 = rows.iter().map(|r| r.chunks).sum();
                let mean = excess / chunks as f64;
                (chunks > 0 && excess.is_finite()).then_some((bin_x(from, to), mean))
            });
            PointSeries::new(format!("{f} Hz"), pts)
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}
