//! The paired design's loop rate per phase over time.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::ticks::TickFmt;
use super::{
    Chart, DrawResult, Extent, Figure, PALETTE, PairedTrace, PlotError, check_finite, frac,
    framed_chart, header, legend_h_frac, legend_line, legend_style, render,
};

pub(super) struct Paired {
    title: String,
    traces: Vec<PairedTrace>,
    x: (f64, f64),
    y: (f64, f64),
}

/// Plot loop rate over time for paired runs, sampling-on phases as filled
/// circles and sampling-off phases as open squares, each kind joined by its
/// own line: drift moves both lines together, the gap between them is the
/// sampling cost.
pub fn plot_paired(
    title: &str,
    traces: &[PairedTrace],
    file: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    let mut xe = Extent::empty();
    let mut ye = Extent::empty();
    let mut kept = Vec::new();
    for t in traces {
        let what = |field: &str| format!("trace '{}' {field}", t.label);
        check_finite(file, &what("t_s"), t.phases.iter().map(|p| p.t_s))?;
        check_finite(file, &what("rate"), t.phases.iter().map(|p| p.rate))?;
        if t.phases.is_empty() {
            tracing::warn!(trace = %t.label, plot = %file.display(), "paired trace has no phases; left out of the plot");
            continue;
        }
        for p in &t.phases {
            xe.add(p.t_s);
            ye.add(p.rate);
        }
        kept.push(t.clone());
    }
    if kept.is_empty() {
        return Err(PlotError::NoData {
            file: file.to_path_buf(),
            detail: if traces.is_empty() {
                "no paired traces were given".to_string()
            } else {
                format!("all {} paired traces have no phases", traces.len())
            },
        });
    }
    // Pad both sides even below t = 0, so a phase at the run's start is
    // not drawn half-hidden on the y axis.
    let (_, x_hi) = xe.padded_linear(0.03, 0.03);
    let x = (xe.lo - (x_hi - xe.hi), x_hi);
    // Rates are far from zero: keep the axis tight so drift is visible.
    let span = (ye.hi - ye.lo).max(ye.hi.abs() * 1e-3);
    let span = if span > 0.0 { span } else { 1.0 };
    // Keep the top of the plot free for the legend: with `f` the legend's
    // share of the plot height, a top pad of 1.08 f / (1 - f) spans leaves
    // that share above the highest point (plot ~540 px high); 0.08 more
    // keeps a gap.
    let entries = paired_legend_entries(&kept);
    let f = (legend_h_frac(entries, 540.0) + 0.03).min(0.6);
    let y = (
        ye.lo - 0.08 * span,
        ye.hi + (0.08 + 1.08 * f / (1.0 - f)) * span,
    );
    let fig = Paired {
        title: title.to_string(),
        traces: kept,
        x,
        y,
    };
    render(&fig, file)
}

/// Legend rows of a paired plot (see `Paired::draw`).
pub(super) fn paired_legend_entries(traces: &[PairedTrace]) -> usize {
    if traces.len() == 1 {
        let on = traces[0].phases.iter().any(|p| p.sampling);
        let off = traces[0].phases.iter().any(|p| !p.sampling);
        usize::from(on) + usize::from(off)
    } else {
        traces.len() + 2
    }
}

/// The marker of a phase kind 10 pixels right of `(x, y)` (a legend entry's
/// position; a point's is `(-10, 0)`): a filled circle for sampling on, an
/// open square for sampling off.
fn phase_marker<'a, DB: DrawingBackend>(
    on: bool,
    colour: RGBColor,
    (x, y): (i32, i32),
) -> DynElement<'a, DB, (i32, i32)> {
    if on {
        Circle::new((x + 10, y), 4, colour.filled()).into_dyn()
    } else {
        Rectangle::new([(x + 6, y - 4), (x + 14, y + 4)], colour.stroke_width(2)).into_dyn()
    }
}

impl Paired {
    /// The colours of trace `i`'s sampling-on and sampling-off phases: two
    /// for a single trace, one per trace for several.
    fn colours(&self, i: usize) -> (RGBColor, RGBColor) {
        if self.traces.len() == 1 {
            (PALETTE[1], PALETTE[0])
        } else {
            let c = PALETTE[i % PALETTE.len()];
            (c, c)
        }
    }

    /// The phases of trace `t` with the sampler enabled (`on`) or not, as
    /// (s since run start, loops/s).
    fn phase_points(t: &PairedTrace, on: bool) -> Vec<(f64, f64)> {
        let phases = t.phases.iter().filter(|p| p.sampling == on);
        phases.map(|p| (p.t_s, p.rate)).collect()
    }

    /// Trace `i`: its sampling-on and sampling-off phases, each kind joined
    /// by a faint line and marked (filled circles on, open squares off);
    /// the points go to `legend_points`. One trace gets a legend entry per
    /// kind ("label: sampling on/off"), several one entry per trace.
    fn draw_trace<'a, DB: DrawingBackend + 'a>(
        &self,
        chart: &mut Chart<'a, DB, RangedCoordf64>,
        i: usize,
        legend_points: &mut Vec<(f64, f64)>,
    ) -> DrawResult<DB> {
        let t = &self.traces[i];
        let single = self.traces.len() == 1;
        let (on_c, off_c) = self.colours(i);
        for on in [true, false] {
            let pts = Self::phase_points(t, on);
            if pts.is_empty() {
                continue;
            }
            legend_points.extend(
                pts.iter()
                    .map(|p| (frac(p.0, self.x.0, self.x.1), frac(p.1, self.y.0, self.y.1))),
            );
            let colour = if on { on_c } else { off_c };
            chart.draw_series(LineSeries::new(
                pts.iter().copied(),
                colour.mix(0.45).stroke_width(1),
            ))?;
            let marked = pts
                .iter()
                .map(|&p| EmptyElement::at(p) + phase_marker(on, colour, (-10, 0)));
            let anno = chart.draw_series(marked)?;
            if single {
                let prefix = if t.label.is_empty() {
                    String::new()
                } else {
                    format!("{}: ", t.label)
                };
                let label = format!("{prefix}sampling {}", if on { "on" } else { "off" });
                anno.label(label)
                    .legend(move |c| phase_marker(on, colour, c));
            }
        }
        if !single {
            chart
                .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
                .label(t.label.clone())
                .legend(legend_line(on_c.stroke_width(3)));
        }
        Ok(())
    }
}

impl Figure for Paired {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let area = header(root, &self.title, &[])?;
        let x_fmt = TickFmt::new(self.x.0, self.x.1, false);
        let mut chart = framed_chart(
            &area,
            {
                let x = crate::plot::plottable(self.x);
                x.0..x.1
            },
            self.y,
            ("time since run start (s)", "loop rate (loops/s)"),
            &move |v: &f64| x_fmt.fmt(*v),
            TickFmt::new(self.y.0, self.y.1, true),
            8,
        )?;
        let mut legend_points = Vec::new();
        for i in 0..self.traces.len() {
            self.draw_trace(&mut chart, i, &mut legend_points)?;
        }
        // Several traces: one colour per trace, and the marker legend given
        // once, in grey, so the legend grows by one row per trace rather
        // than two.
        if self.traces.len() != 1 {
            let grey = RGBColor(90, 90, 90);
            for on in [true, false] {
                chart
                    .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
                    .label(if on { "sampling on" } else { "sampling off" })
                    .legend(move |c| phase_marker(on, grey, c));
            }
        }
        let entries = paired_legend_entries(&self.traces);
        legend_style(&mut chart, &legend_points, entries)
    }
}
