//! The handler-duration histograms.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::ticks::{TickFmt, nice_step};
use super::{
    DrawResult, Figure, PALETTE, PlotError, check_finite, frac, framed_chart, header, legend_line,
    legend_style, render,
};

pub(super) struct Hist {
    label: String,
    /// Percent of the group's values per bin.
    pct: Vec<f64>,
}

pub(super) struct Durations {
    title: String,
    hists: Vec<Hist>,
    bins: Bins,
    y_max: f64,
    notes: Vec<String>,
}

/// Percentiles of one group, by O(n) selection (nearest rank).
///
/// Not [`crate::stats::quantile_type7`], on purpose: these only label and
/// bound the duration plot (the legend's median, the end of the x axis),
/// and nearest rank makes both an observed duration. Type 7 would
/// interpolate between two and change the legends and axes of the
/// committed plots.
pub(super) struct GroupStats {
    pub(super) min: f64,
    pub(super) median: f64,
    pub(super) p995: f64,
}

pub(super) fn group_stats(values: &[f64]) -> GroupStats {
    let mut v = values.to_vec();
    let n = v.len();
    let k995 = (((0.995 * n as f64).ceil() as usize).max(1) - 1).min(n - 1);
    let (left, p995, _) = v.select_nth_unstable_by(k995, f64::total_cmp);
    let p995 = *p995;
    let kmed = (n - 1) / 2;
    let median = if kmed < k995 {
        *left.select_nth_unstable_by(kmed, f64::total_cmp).1
    } else {
        p995
    };
    let min = if left.is_empty() {
        p995
    } else {
        left.iter().copied().fold(f64::INFINITY, f64::min)
    };
    GroupStats { min, median, p995 }
}

pub(super) fn fmt_count(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub(super) const DURATION_BINS: f64 = 100.0;

/// One group kept for the plot: its label, its durations (ns) and their
/// percentiles.
struct Group<'a> {
    label: &'a str,
    values: &'a [f64],
    stats: GroupStats,
}

/// The groups that have durations, each checked (finite, not negative);
/// an empty group is left out with a warning.
fn checked_groups<'a>(
    groups: &'a [(String, Vec<f64>)],
    file: &Path,
) -> Result<Vec<Group<'a>>, PlotError> {
    let mut kept = Vec::new();
    for (label, values) in groups {
        let what = format!("durations of group '{label}'");
        check_finite(file, &what, values.iter().copied())?;
        if let Some(index) = values.iter().position(|v| *v < 0.0) {
            return Err(PlotError::InvalidData {
                file: file.to_path_buf(),
                what,
                detail: format!(
                    "value [{index}] is {} ns; a handler duration cannot be negative \
                     (check the start/end pairing of the records)",
                    values[index]
                ),
            });
        }
        if values.is_empty() {
            tracing::warn!(group = %label, plot = %file.display(), "duration group is empty; left out of the plot");
            continue;
        }
        kept.push(Group {
            label,
            values,
            stats: group_stats(values),
        });
    }
    Ok(kept)
}

/// The histogram bins every group shares, in ns: from `lo` in steps of
/// `width`, `count` of them, the last one holding `top`.
struct Bins {
    lo: f64,
    width: f64,
    count: usize,
    /// The largest per-group 99.5th percentile, where the x axis ends.
    top: f64,
}

impl Bins {
    /// About [`DURATION_BINS`] bins of a nice width from the smallest
    /// duration to the largest per-group 99.5th percentile.
    fn new(groups: &[Group]) -> Self {
        let stats = groups.iter().map(|g| &g.stats);
        let min = stats.clone().map(|s| s.min).fold(f64::INFINITY, f64::min);
        let top = stats.map(|s| s.p995).fold(f64::NEG_INFINITY, f64::max);
        let span = if top > min {
            top - min
        } else {
            (min * 0.1).max(1.0)
        };
        // Whole-nanosecond data binned finer than 1 ns would alternate full
        // and empty bins: never go below 1 ns then.
        let mut values = groups.iter().flat_map(|g| g.values);
        let integral = values.all(|v| v.fract() == 0.0);
        let width = nice_step(span / DURATION_BINS);
        let width = if integral { width.max(1.0) } else { width };
        let lo = (min / width).floor() * width;
        let count = (((top - lo) / width).floor() as usize + 1).max(1);
        Self {
            lo,
            width,
            count,
            top,
        }
    }

    /// The group's histogram in percent of its values, labelled with its
    /// size and median, and how many of its values lie beyond the last bin.
    fn hist(&self, g: &Group) -> (Hist, usize) {
        let mut counts = vec![0u64; self.count];
        let mut beyond = 0usize;
        for &v in g.values {
            let idx = ((v - self.lo) / self.width) as usize;
            match counts.get_mut(idx) {
                Some(c) => *c += 1,
                None => beyond += 1,
            }
        }
        let n = g.values.len() as f64;
        let median = g.stats.median;
        let hist = Hist {
            label: format!(
                "{}: n={}, median {} ns",
                g.label,
                fmt_count(g.values.len()),
                TickFmt::new(0.0, median, false).fmt(median)
            ),
            pct: counts.iter().map(|&c| 100.0 * c as f64 / n).collect(),
        };
        (hist, beyond)
    }

    /// The notes under the title: where the x axis is clipped, how many of
    /// the `total` durations lie beyond it, and the bin width.
    fn notes(&self, beyond: usize, total: usize) -> Vec<String> {
        let (top, width) = (self.top, self.width);
        vec![
            format!(
                "x axis clipped at the largest per-group 99.5th percentile ({} ns)",
                TickFmt::new(0.0, top, false).fmt(top),
            ),
            format!(
                "{} of {} durations ({:.2}%) lie beyond it and are not drawn; bin width {} ns",
                fmt_count(beyond),
                fmt_count(total),
                100.0 * beyond as f64 / total as f64,
                TickFmt::new(0.0, 10.0 * width, false).fmt(width),
            ),
        ]
    }
}

/// Plot the distribution of handler durations (ns), one outline histogram
/// per group (label, values), each normalised to percent of its own runs so
/// groups of different sizes compare. The x axis ends at the largest
/// per-group 99.5th percentile; how many values lie beyond is stated under
/// the title. Binning is a single O(n) pass per group (plus an O(n)
/// selection for the percentiles), so millions of values are cheap.
///
/// Check the groups, bin them over a shared x range and write the notes.
pub fn plot_durations(
    title: &str,
    groups: &[(String, Vec<f64>)],
    file: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    if groups.is_empty() {
        return Err(PlotError::NoData {
            file: file.to_path_buf(),
            detail: "no duration groups were given".to_string(),
        });
    }
    let kept = checked_groups(groups, file)?;
    if kept.is_empty() {
        return Err(PlotError::NoData {
            file: file.to_path_buf(),
            detail: format!("all {} duration groups are empty", groups.len()),
        });
    }
    let bins = Bins::new(&kept);
    let mut hists = Vec::new();
    let (mut beyond_total, mut total) = (0usize, 0usize);
    let mut y_max: f64 = 0.0;
    for g in &kept {
        let (hist, beyond) = bins.hist(g);
        y_max = hist.pct.iter().copied().fold(y_max, f64::max);
        beyond_total += beyond;
        total += g.values.len();
        hists.push(hist);
    }
    let fig = Durations {
        title: title.to_string(),
        hists,
        y_max: if y_max > 0.0 { y_max * 1.12 } else { 1.0 },
        notes: bins.notes(beyond_total, total),
        bins,
    };
    render(&fig, file)
}

impl Figure for Durations {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let area = header(root, &self.title, &self.notes)?;
        let Bins {
            lo, width, count, ..
        } = self.bins;
        let (lo, hi) = crate::plot::plottable((lo, lo + width * count as f64));
        let x_fmt = TickFmt::new(lo, hi, false);
        let mut chart = framed_chart(
            &area,
            lo..hi,
            (0.0, self.y_max),
            ("handler duration (ns)", "share of handler runs per bin (%)"),
            &move |v: &f64| x_fmt.fmt(*v),
            TickFmt::new(0.0, self.y_max, false),
            8,
        )?;
        let mut legend_points = Vec::new();
        for (i, h) in self.hists.iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            let mut steps = Vec::with_capacity(2 * h.pct.len() + 2);
            steps.push((lo, 0.0));
            for (b, &p) in h.pct.iter().enumerate() {
                let x0 = lo + b as f64 * width;
                steps.push((x0, p));
                steps.push((x0 + width, p));
                if p > 0.0 {
                    legend_points.push((frac(x0, lo, hi), frac(p, 0.0, self.y_max)));
                }
            }
            steps.push((hi, 0.0));
            chart
                .draw_series(LineSeries::new(steps, colour.stroke_width(2)))?
                .label(h.label.clone())
                .legend(legend_line(colour.stroke_width(2)));
        }
        legend_style(&mut chart, &legend_points, self.hists.len())
    }
}

// ---------------------------------------------------------------- paired traces
