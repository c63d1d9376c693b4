//! Drawing the measured-series-against-frequency chart: bands, fit lines,
//! series with their error bars, and the legend.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{PreparedFit, VsFreq};
use crate::plot::ticks::{TickFmt, fmt_log_tick, log_ticks};
use crate::plot::{
    Chart, DrawResult, Figure, FitLine, PALETTE, Point, font, frac, framed_chart, header,
    legend_line, legend_style,
};

impl VsFreq {
    /// `v` as a fraction of the plot's width, on a log or linear x axis.
    fn x_frac(&self, v: f64) -> f64 {
        if self.log_x {
            frac(v.log10(), self.x.0.log10(), self.x.1.log10())
        } else {
            frac(v, self.x.0, self.x.1)
        }
    }

    /// A point as fractions of the plot's width and height (0,0 = lower
    /// left), as `legend_corner` takes it.
    fn plot_frac(&self, (x, y): (f64, f64)) -> (f64, f64) {
        (self.x_frac(x), frac(y, self.y.0, self.y.1))
    }

    /// The colour of fit `i`: the fits take the palette after the series.
    fn fit_colour(&self, i: usize) -> RGBColor {
        match self.fits[i].fit.colour {
            Some((r, g, b)) => RGBColor(r, g, b),
            None => PALETTE[(self.series.len() + i) % PALETTE.len()],
        }
    }

    /// The fits whose band can be drawn (two points or more), with their
    /// colours.
    fn fits_with_band(&self) -> impl Iterator<Item = (&FitLine, RGBColor)> {
        let fits = self.fits.iter().enumerate();
        let banded = fits.filter(|(_, pf)| pf.fit.band.len() >= 2);
        banded.map(|(i, pf)| (&pf.fit, self.fit_colour(i)))
    }

    /// The x tick labels: compact powers of ten on a log axis, else plain
    /// numbers.
    fn x_tick_label(&self) -> impl Fn(&f64) -> String + use<> {
        let log_x = self.log_x;
        let x_fmt = TickFmt::new(self.x.0, self.x.1, true);
        move |v: &f64| {
            if log_x {
                fmt_log_tick(*v)
            } else {
                x_fmt.fmt(*v)
            }
        }
    }

    /// The y tick format: log10 values on a log axis, else plain numbers.
    fn y_tick_fmt(&self) -> TickFmt {
        if self.log_y {
            TickFmt::log10()
        } else {
            TickFmt::new(self.y.0, self.y.1, false)
        }
    }

    /// The fits' confidence bands, as filled polygons.
    fn draw_bands<DB, X>(&self, chart: &mut Chart<'_, DB, X>) -> DrawResult<DB>
    where
        DB: DrawingBackend,
        X: Ranged<ValueType = f64>,
    {
        for (fit, colour) in self.fits_with_band() {
            let upper = fit.band.iter().map(|b| (b.0, b.2));
            let lower = fit.band.iter().rev().map(|b| (b.0, b.1));
            let poly: Vec<(f64, f64)> = upper.chain(lower).collect();
            chart.draw_series(std::iter::once(Polygon::new(
                poly,
                colour.mix(0.18).filled(),
            )))?;
        }
        Ok(())
    }

    /// The fit lines, solid and dashed; their points go to `legend_points`.
    fn draw_fit_lines<DB, X>(
        &self,
        chart: &mut Chart<'_, DB, X>,
        legend_points: &mut Vec<(f64, f64)>,
    ) -> DrawResult<DB>
    where
        DB: DrawingBackend,
        X: Ranged<ValueType = f64>,
    {
        for (i, pf) in self.fits.iter().enumerate() {
            let style = self.fit_colour(i).stroke_width(2);
            chart.draw_series(LineSeries::new(pf.solid.iter().copied(), style))?;
            for part in &pf.dashed {
                chart.draw_series(DashedLineSeries::new(part.iter().copied(), 8, 6, style))?;
            }
            legend_points.extend(pf.line_points().map(|&p| self.plot_frac(p)));
            if pf.fit.label_at_end {
                let end = pf.line_points().max_by(|a, b| a.0.total_cmp(&b.0));
                if let Some(&(x, y)) = end {
                    let colour = self.fit_colour(i);
                    let style = font(15)
                        .color(&colour)
                        .pos(Pos::new(HPos::Right, VPos::Bottom));
                    chart.draw_series(std::iter::once(
                        EmptyElement::at((x, y)) + Text::new(pf.fit.label.clone(), (-2, -3), style),
                    ))?;
                }
            }
        }
        Ok(())
    }

    /// Series `i`: its error bars with end caps, its points in the series'
    /// marker (circle, triangle, square in turn) and its legend entry; the
    /// bars' ends go to `legend_points`.
    fn draw_series<'a, DB, X>(
        &self,
        chart: &mut Chart<'a, DB, X>,
        i: usize,
        legend_points: &mut Vec<(f64, f64)>,
    ) -> DrawResult<DB>
    where
        DB: DrawingBackend + 'a,
        X: Ranged<ValueType = f64>,
    {
        let s = &self.series[i];
        let colour = PALETTE[i % PALETTE.len()];
        let bar = colour.stroke_width(1);
        let bars: Vec<&Point> = s.points.iter().filter(|p| p.hi > p.lo).collect();
        chart.draw_series(
            bars.iter()
                .map(|p| PathElement::new(vec![(p.x, p.lo), (p.x, p.hi)], bar)),
        )?;
        // A bar cut at the bottom of a log axis (its end at 0 or below)
        // ends in an arrow, so the cut is not read as a lower bound.
        let cut = |y: f64| self.cut_y.is_some_and(|c| (y - c).abs() < 1e-12);
        chart.draw_series(bars.iter().flat_map(|p| {
            [p.lo, p.hi].map(|y| {
                let end = if cut(y) {
                    vec![(-5, -7), (0, 0), (5, -7)]
                } else {
                    vec![(-4, 0), (4, 0)]
                };
                EmptyElement::at((p.x, y)) + PathElement::new(end, bar)
            })
        }))?;
        let marked = s
            .points
            .iter()
            .map(|p| EmptyElement::at((p.x, p.y)) + marker(i, colour, (0, 0)));
        let legend = move |(x, y)| marker(i, colour, (x + 10, y));
        chart
            .draw_series(marked)?
            .label(s.label.clone())
            .legend(legend);
        for p in &s.points {
            legend_points.push(self.plot_frac((p.x, p.lo)));
            legend_points.push(self.plot_frac((p.x, p.hi)));
        }
        Ok(())
    }

    /// Legend entries for the fit lines, then for their bands; the shapes
    /// themselves were drawn before the series so the points stay on top.
    fn fit_legend_entries<'a, DB, X>(&self, chart: &mut Chart<'a, DB, X>) -> DrawResult<DB>
    where
        DB: DrawingBackend + 'a,
        X: Ranged<ValueType = f64>,
    {
        let nothing = || std::iter::empty::<PathElement<(f64, f64)>>();
        let fits = self.fits.iter().enumerate();
        for (i, PreparedFit { fit, .. }) in fits.filter(|(_, pf)| !pf.fit.label_at_end) {
            let colour = self.fit_colour(i);
            chart
                .draw_series(nothing())?
                .label(fit.label.clone())
                .legend(legend_line(colour.stroke_width(2)));
        }
        for (fit, colour) in self.fits_with_band() {
            chart
                .draw_series(nothing())?
                .label(if fit.band_label.is_empty() {
                    format!("{}: confidence band", fit.label)
                } else {
                    fit.band_label.clone()
                })
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 20, y + 6)], colour.mix(0.18).filled())
                });
        }
        Ok(())
    }

    /// The whole chart in its frame: bands first so points and lines stay on
    /// top, then fit lines, series, and the legend in the corner with fewest
    /// points.
    fn draw_chart<DB, XS>(&self, area: &DrawingArea<DB, Shift>, x_spec: XS) -> DrawResult<DB>
    where
        DB: DrawingBackend,
        XS: AsRangedCoord<Value = f64>,
        XS::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let mut chart = framed_chart(
            area,
            x_spec,
            self.y,
            (self.x_label.as_str(), self.y_label.as_str()),
            &self.x_tick_label(),
            self.y_tick_fmt(),
            10,
        )?;
        let mut legend_points = Vec::new();
        self.draw_bands(&mut chart)?;
        self.draw_fit_lines(&mut chart, &mut legend_points)?;
        for i in 0..self.series.len() {
            self.draw_series(&mut chart, i, &mut legend_points)?;
        }
        self.fit_legend_entries(&mut chart)?;
        let in_legend = self.fits.iter().filter(|pf| !pf.fit.label_at_end).count();
        let entries = self.series.len() + in_legend + self.fits_with_band().count();
        legend_style(&mut chart, &legend_points, entries)
    }
}

/// Series `i`'s marker, centred at pixel `c`: a circle, a triangle or a
/// square, in turn.
fn marker<'a, DB: DrawingBackend>(
    i: usize,
    colour: RGBColor,
    c: (i32, i32),
) -> DynElement<'a, DB, (i32, i32)> {
    match i % 3 {
        0 => Circle::new(c, 4, colour.filled()).into_dyn(),
        1 => TriangleMarker::new(c, 6, colour.filled()).into_dyn(),
        _ => Rectangle::new([(c.0 - 4, c.1 - 4), (c.0 + 4, c.1 + 4)], colour.filled()).into_dyn(),
    }
}

impl Figure for VsFreq {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let area = header(root, &self.title, &self.notes)?;
        let x = crate::plot::plottable(self.x);
        if self.log_x && x.0 > 0.0 {
            let (bold, light) = log_ticks(x.0, x.1);
            let spec = (x.0..x.1)
                .log_scale()
                .with_key_points(bold)
                .with_light_points(light);
            self.draw_chart(&area, spec)
        } else {
            self.draw_chart(&area, x.0..x.1)
        }
    }
}
