//! Results set -> Table 1 (handler utilisation), Table 2 (performance loss),
//! tracepoint cost and fitted factors ([`Tables`]).

use std::collections::BTreeMap;

use results_format::{Design, RunKind};

use crate::fit::{LineFit, fit_line, fit_origin, fit_rate_khz, weights_from_variances};
use crate::load::intervals::RunIntervals;
use crate::load::{Phase, ResultSet, Run};
use crate::stats::{Estimate, distinct_sorted, grouped, mean, on_off_loss};

mod rows;

use rows::{classic_loss, paired_loss, tracing_rows, util_table};

use crate::row_types::{LossRow, TracepointCostRow, UtilRow};

/// The fitted factors (rates in kHz: the achieved rate, [`fit_rate_khz`];
/// utilisation and loss in %).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Fits {
    /// util % = delta x f_kHz (the article's form).
    pub util_origin: Option<LineFit>,
    /// The highest rate up to which one through-origin factor describes
    /// the utilisation (lack-of-fit p >= 0.05 over the rates up to it,
    /// from the lowest), with that fit; None when not even the two lowest
    /// rates share one.
    pub util_factor_up_to_hz: Option<(u64, LineFit)>,
    /// util % = a + b f_kHz.
    pub util_line: Option<LineFit>,
    /// loss % = a + b f_kHz (a: fixed cost of having perf on; b: per sample).
    pub loss_line: Option<LineFit>,
    /// delta x 10^4: handler CPU time per sample in ns. util% / 100 =
    /// t_sample x f_Hz and f_Hz = 1000 f_kHz, so t_sample = delta / 10^5 s.
    pub cost_per_sample_ns: Option<f64>,
    /// The same from the slope of util = a + b f.
    pub cost_per_sample_line_ns: Option<f64>,
    /// The article's own estimator: the mean over frequencies of util/f_kHz.
    pub delta_mean_ratio: Option<f64>,
    /// Loss slope / util slope: how much more the application loses per
    /// sample than the handler's own CPU time.
    pub loss_to_util_slope_ratio: Option<f64>,
}

/// Durations sample for the distribution plot.
#[derive(Debug, Clone)]
pub struct DurationGroup {
    pub freq_hz: u64,
    pub durations_ns: Vec<u64>,
}

/// A paired run's phase trace (for plots): every phase that has a rate.
#[derive(Debug, Clone)]
pub struct PairedRunTrace {
    pub run_id: u32,
    pub freq_hz: u64,
    pub phases: Vec<crate::plot::Phase>,
}

/// Tables 1 (the handler's utilisation) and 2 (the loss), the tracepoint
/// cost, the fitted factors, and what their figures draw.
#[derive(Debug, Clone, Default)]
pub struct Tables {
    pub util: Vec<UtilRow>,
    pub loss: Vec<LossRow>,
    pub tracing: Vec<TracepointCostRow>,
    pub fits: Fits,
    pub durations: Vec<DurationGroup>,
    pub paired: Vec<PairedRunTrace>,
    /// Per-run aggregates of util runs, by run_id.
    pub run_intervals: BTreeMap<u32, RunIntervals>,
    /// Sampling events opened (non-empty, distinct).
    pub events: Vec<String>,
    pub scopes: Vec<String>,
}

/// One paired run's phases left out of the paired loss, with their ABBA
/// groups (results_format::phase_check says which and why).
#[derive(Debug, Clone, PartialEq)]
pub struct RunPhaseFaults {
    pub run_id: u32,
    pub freq_hz: u64,
    /// ABBA groups the run planned (the groups its phases.csv rows reach).
    pub groups: usize,
    /// Of those, the groups left out (a phase at fault, or incomplete).
    pub groups_excluded: usize,
    /// The phases at fault, each with its reason.
    pub excluded: Vec<results_format::phase_check::ExcludedPhase>,
}

impl Tables {
    /// The loss row used for fits and the recommendation at a frequency:
    /// the paired design where it exists (drift cancels within ABBA
    /// groups), else the split design's total (the same estimator on the
    /// same phases), else the classic one.
    pub fn primary_loss(&self) -> Vec<&LossRow> {
        let mut by_freq: BTreeMap<u64, &LossRow> = BTreeMap::new();
        for row in &self.loss {
            if row.freq_hz == 0 || !row.loss_pct.value.is_finite() {
                continue;
            }
            if (by_freq.get(&row.freq_hz)).is_none_or(|prev| prev.design != Design::Paired) {
                by_freq.insert(row.freq_hz, row);
            }
        }
        by_freq.into_values().collect()
    }
}

fn by_freq<'a>(runs: impl Iterator<Item = &'a Run>) -> BTreeMap<u64, Vec<&'a Run>> {
    let mut m = grouped(runs.map(|r| (r.freq_hz, r)));
    for v in m.values_mut() {
        v.sort_by_key(|r| (r.rep, r.run_id));
    }
    m
}

/// Build the tables from already aggregated intervals, with the paired
/// runs' phases left out (no warnings: the judge adds them,
/// [`crate::pipeline::analyse_with`]).
pub fn build_tables(
    rs: &ResultSet,
    run_intervals: BTreeMap<u32, RunIntervals>,
) -> (Tables, Vec<RunPhaseFaults>) {
    let util_runs = by_freq(
        rs.runs
            .iter()
            .filter(|r| r.ok() && r.kind == RunKind::Util && r.freq_hz > 0),
    );
    let (util, durations) = util_table(&util_runs, &run_intervals);

    // Table 2, classic design: the ok classic loss runs by rate, their
    // 0 Hz loop rates its baseline.
    let classic = by_freq(
        rs.runs
            .iter()
            .filter(|r| r.ok() && r.kind == RunKind::Loss && r.design == Design::Classic),
    );
    let baseline: Vec<f64> = classic
        .get(&0)
        .map_or_else(Vec::new, |v| v.iter().map(|r| r.rate()).collect());
    // The tracing-cost baseline: classic 0 Hz runs, else whole paired runs
    // at 0 Hz (no sampling in any phase).
    let tracing_baseline: Vec<f64> = if baseline.is_empty() {
        rs.runs
            .iter()
            .filter(|r| {
                r.ok()
                    && r.kind == RunKind::Loss
                    && r.design == Design::Paired
                    && r.freq_hz == 0
                    && r.iterations > 0
            })
            .map(|r| r.rate())
            .collect()
    } else {
        baseline.clone()
    };
    let mut loss = classic_loss(&classic, &baseline);

    // Table 2, paired design.
    let (paired_rows, mut paired, mut phase_faults) = paired_loss(rs, Design::Paired);
    loss.extend(paired_rows);
    // The split design's total is a paired loss too (its own rows: the
    // loop stamps its timeline there).
    let (split_loss, split_traces, split_faults) = paired_loss(rs, Design::Split);
    loss.extend(split_loss);
    paired.extend(split_traces);
    phase_faults.extend(split_faults);
    loss.sort_by_key(|a| (a.freq_hz, a.design));

    let events = rs.runs.iter().map(|r| r.event.clone());
    let scopes = rs.runs.iter().map(|r| r.scope.to_string());
    let mut tables = Tables {
        util,
        loss,
        tracing: Vec::new(),
        fits: Fits::default(),
        durations,
        paired,
        run_intervals,
        events: distinct_sorted(events.filter(|e| !e.is_empty())),
        scopes: distinct_sorted(scopes.filter(|s| !s.is_empty())),
    };

    // Tracing cost: util runs' loop rates against the loss baseline.
    tables.tracing = tracing_rows(&tables, &util_runs, &tracing_baseline);

    tables.fits = fit_all(&tables);
    (tables, phase_faults)
}

/// Losses (%) of the kept ABBA groups of one paired run
/// (`results_format::phase_check::judge_run`): loss = 1 - mean on-rate /
/// mean off-rate within the group. Linear drift cancels within an ABBA (or
/// BAAB) group. A group without both sampling states gives nothing.
pub fn abba_losses(groups: &[[&Phase; 4]]) -> Vec<f64> {
    let loss = |g: &[&Phase; 4]| on_off_loss(g, |p| p.sampling, |p| p.rate());
    groups
        .iter()
        .filter_map(loss)
        .filter(|l| l.is_finite())
        .collect()
}

/// A fit's x (the achieved rate, kHz), y and weights (from the
/// variances) over `rows`: (achieved Hz, requested Hz, estimate).
fn fit_points(
    rows: impl Iterator<Item = (f64, u64, Estimate)>,
) -> (Vec<f64>, Vec<f64>, Option<Vec<f64>>) {
    let (mut x, mut y, mut var) = (Vec::new(), Vec::new(), Vec::new());
    for (achieved_hz, freq_hz, e) in rows {
        x.push(fit_rate_khz(achieved_hz, freq_hz));
        y.push(e.value);
        var.push(e.se * e.se);
    }
    (x, y, weights_from_variances(&var))
}

/// Fit the factors from the tables.
pub fn fit_all(a: &Tables) -> Fits {
    let util = a
        .util
        .iter()
        .map(|r| (r.achieved_hz, r.freq_hz, r.util_pct));
    let (ux, uy, uw) = fit_points(util);
    let util_origin = fit_origin(&ux, &uy, uw.as_deref());
    let util_factor_up_to_hz = (2..=ux.len()).rev().find_map(|k| {
        fit_origin(&ux[..k], &uy[..k], uw.as_ref().map(|w| &w[..k]))
            .filter(LineFit::describes)
            .map(|f| (a.util[k - 1].freq_hz, f))
    });
    let util_line = fit_line(&ux, &uy, uw.as_deref()).filter(|_| ux.len() >= 3);

    let primary = a.primary_loss();
    let (lx, ly, lw) = fit_points(
        primary
            .iter()
            .map(|r| (r.achieved_hz, r.freq_hz, r.trusted())),
    );
    // fit_line needs two points.
    let loss_line = fit_line(&lx, &ly, lw.as_deref());
    let ratios: Vec<f64> = ux.iter().zip(&uy).map(|(x, y)| y / x).collect();
    Fits {
        cost_per_sample_ns: util_origin.map(|f| f.slope * 1e4),
        cost_per_sample_line_ns: util_line.map(|f| f.slope * 1e4),
        delta_mean_ratio: (!ratios.is_empty()).then(|| mean(&ratios)),
        loss_to_util_slope_ratio: match (loss_line, util_line.or(util_origin)) {
            (Some(l), Some(u)) if u.slope != 0.0 => Some(l.slope / u.slope),
            _ => None,
        },
        util_origin,
        util_factor_up_to_hz,
        util_line,
        loss_line,
    }
}
