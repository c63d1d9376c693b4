//! The measured-series-against-frequency chart, with fit lines, their
//! bands and log axes.

use super::*;

/// A fit ready to draw: its band sorted (and densified on a log axis), the
/// line sampled where it is supported and where it is extrapolated.
pub(super) struct PreparedFit {
    fit: FitLine,
    solid: Vec<(f64, f64)>,
    dashed: Vec<Vec<(f64, f64)>>,
}

/// Points of `y = intercept + slope x` over [a, b]: two on a linear axis;
/// on a log axis it is a curve, sampled evenly in log x.
pub(super) fn sample_line(
    intercept: f64,
    slope: f64,
    a: f64,
    b: f64,
    log_x: bool,
) -> Vec<(f64, f64)> {
    let segments: u32 = if log_x { 80 } else { 1 };
    (0..=segments)
        .map(|i| {
            let t = f64::from(i) / f64::from(segments);
            let x = if log_x {
                10f64.powf(a.log10() + t * (b.log10() - a.log10()))
            } else {
                a + t * (b - a)
            };
            (x, intercept + slope * x)
        })
        .collect()
}

pub(super) struct VsFreq {
    title: String,
    x_label: String,
    y_label: String,
    series: Vec<PointSeries>,
    fits: Vec<PreparedFit>,
    log_x: bool,
    /// y values (points, bars, fit lines, bands) are stored as log10.
    log_y: bool,
    x: (f64, f64),
    y: (f64, f64),
    notes: Vec<String>,
}

impl VsFreq {
    pub(super) fn prepare(
        title: &str,
        (x_label, y_label): (&str, &str),
        series: &[PointSeries],
        fits: &[FitLine],
        axes: Axes,
        file: &Path,
    ) -> Result<Self, PlotError> {
        let Axes { log_x, log_y } = axes;
        let mut kept_series = Vec::new();
        let mut skipped = 0usize;
        let mut skipped_y = 0usize;
        // With log_y the smallest positive value seen sets where bars and
        // bands that reach 0 or below are cut.
        let floor_y = series
            .iter()
            .flat_map(|s| s.y.iter().chain(&s.y_lo))
            .copied()
            .filter(|v| *v > 0.0 && v.is_finite())
            .fold(f64::INFINITY, f64::min);
        let ly = |v: f64| {
            if log_y {
                v.max(floor_y / 10.0).log10()
            } else {
                v
            }
        };
        let mut xe = Extent::empty();
        let mut ye = Extent::empty();
        for s in series {
            let what = |field: &str| format!("series '{}' {field}", s.label);
            let n = s.x.len();
            check_len(file, &what("y"), ("y", s.y.len()), ("x", n))?;
            let has_bars = !(s.y_lo.is_empty() && s.y_hi.is_empty());
            if has_bars {
                check_len(file, &what("y_lo"), ("y_lo", s.y_lo.len()), ("x", n))?;
                check_len(file, &what("y_hi"), ("y_hi", s.y_hi.len()), ("x", n))?;
            }
            check_finite(file, &what("x"), &s.x)?;
            check_finite(file, &what("y"), &s.y)?;
            check_finite(file, &what("y_lo"), &s.y_lo)?;
            check_finite(file, &what("y_hi"), &s.y_hi)?;
            let mut kept = PointSeries {
                label: s.label.clone(),
                x: Vec::with_capacity(n),
                y: Vec::with_capacity(n),
                y_lo: Vec::with_capacity(n),
                y_hi: Vec::with_capacity(n),
            };
            for i in 0..n {
                if log_x && s.x[i] <= 0.0 {
                    skipped += 1;
                    tracing::warn!(
                        series = %s.label, x = s.x[i], plot = %file.display(),
                        "point with x <= 0 cannot be shown on a log axis; skipped"
                    );
                    continue;
                }
                if log_y && s.y[i] <= 0.0 {
                    skipped_y += 1;
                    continue;
                }
                let (lo, hi) = if has_bars {
                    (ly(s.y_lo[i].min(s.y[i])), ly(s.y_hi[i].max(s.y[i])))
                } else {
                    (ly(s.y[i]), ly(s.y[i]))
                };
                kept.x.push(s.x[i]);
                kept.y.push(ly(s.y[i]));
                kept.y_lo.push(lo);
                kept.y_hi.push(hi);
                xe.add(s.x[i]);
                ye.add(lo);
                ye.add(hi);
            }
            if !kept.x.is_empty() {
                kept_series.push(kept);
            }
        }
        for f in fits {
            let what = |field: &str| format!("fit '{}' {field}", f.label);
            check_finite(file, &what("intercept"), &[f.intercept])?;
            check_finite(file, &what("slope"), &[f.slope])?;
            let n = f.band_x.len();
            check_len(
                file,
                &what("band_lo"),
                ("band_lo", f.band_lo.len()),
                ("band_x", n),
            )?;
            check_len(
                file,
                &what("band_hi"),
                ("band_hi", f.band_hi.len()),
                ("band_x", n),
            )?;
            check_finite(file, &what("band_x"), &f.band_x)?;
            check_finite(file, &what("band_lo"), &f.band_lo)?;
            check_finite(file, &what("band_hi"), &f.band_hi)?;
            for i in 0..n {
                if log_x && f.band_x[i] <= 0.0 {
                    continue;
                }
                xe.add(f.band_x[i]);
                ye.add(ly(f.band_lo[i]));
                ye.add(ly(f.band_hi[i]));
            }
        }
        if xe.is_empty() {
            let detail = if series.is_empty() && fits.is_empty() {
                "no series and no fits were given".to_string()
            } else if skipped > 0 {
                format!("all {skipped} points have x <= 0, which a log x axis cannot show")
            } else {
                "the series have no points and the fits no band to set the x range".to_string()
            };
            return Err(PlotError::NoData {
                file: file.to_path_buf(),
                detail,
            });
        }
        // Fit curves over the data's x extent, sampled densely enough to be
        // smooth on either axis type.
        let mut prepared_fits = Vec::new();
        let mut extrapolated = false;
        for f in fits {
            let mut band: Vec<(f64, f64, f64)> = (0..f.band_x.len())
                .filter(|&i| !log_x || f.band_x[i] > 0.0)
                .map(|i| (f.band_x[i], ly(f.band_lo[i]), ly(f.band_hi[i])))
                .collect();
            band.sort_by(|a, b| a.0.total_cmp(&b.0));
            // Solid where the band says the fit is supported (the whole x
            // extent when there is no band), dashed where it is extended to
            // the rest of the plotted data.
            let (s_lo, s_hi) = match (band.first(), band.last()) {
                (Some(a), Some(b)) if b.0 > a.0 => (a.0.max(xe.lo), b.0.min(xe.hi)),
                _ => (xe.lo, xe.hi),
            };
            // On a log y axis a line is a curve and its points at y <= 0
            // cannot be shown: sampled densely, those left out.
            let line = |a: f64, b: f64| {
                let pts = sample_line(f.intercept, f.slope, a, b, log_x || (log_y && a > 0.0));
                if log_y {
                    pts.into_iter()
                        .filter(|p| p.1 > 0.0)
                        .map(|(x, y)| (x, y.log10()))
                        .collect()
                } else {
                    pts
                }
            };
            let solid = line(s_lo, s_hi);
            let dashed: Vec<Vec<(f64, f64)>> = [(xe.lo, s_lo), (s_hi, xe.hi)]
                .into_iter()
                .filter(|(a, b)| b > a)
                .map(|(a, b)| line(a, b))
                .collect();
            extrapolated |= !dashed.is_empty();
            for p in solid.iter().chain(dashed.iter().flatten()) {
                ye.add(p.1);
            }
            if log_x {
                band = densify_log(&band);
            }
            let mut fit = f.clone();
            fit.band_x = band.iter().map(|b| b.0).collect();
            fit.band_lo = band.iter().map(|b| b.1).collect();
            fit.band_hi = band.iter().map(|b| b.2).collect();
            prepared_fits.push(PreparedFit { fit, solid, dashed });
        }
        let x = if log_x {
            let (lo, hi) = (xe.lo / 1.5, xe.hi * 1.5);
            (lo, hi)
        } else {
            xe.padded_linear(0.04, 0.04)
        };
        let y = ye.padded_linear(0.06, 0.10);
        let mut notes = Vec::new();
        if skipped > 0 {
            notes.push(format!(
                "{skipped} point(s) with {x_label} <= 0 not shown (log axis)"
            ));
        }
        if skipped_y > 0 {
            notes.push(format!(
                "{skipped_y} point(s) with {y_label} <= 0 not shown (log axis)"
            ));
        }
        if extrapolated {
            notes.push("dashed: fit extrapolated beyond the range of its confidence band".into());
        }
        Ok(Self {
            title: title.to_string(),
            x_label: x_label.to_string(),
            y_label: y_label.to_string(),
            series: kept_series,
            fits: prepared_fits,
            log_x,
            log_y,
            x,
            y,
            notes,
        })
    }

    fn x_frac(&self, v: f64) -> f64 {
        if self.log_x {
            frac(v.log10(), self.x.0.log10(), self.x.1.log10())
        } else {
            frac(v, self.x.0, self.x.1)
        }
    }

    fn draw_chart<DB, XS>(&self, area: &DrawingArea<DB, Shift>, x_spec: XS) -> DrawResult<DB>
    where
        DB: DrawingBackend,
        XS: AsRangedCoord<Value = f64>,
        XS::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let log_x = self.log_x;
        let x_fmt = TickFmt::new(self.x.0, self.x.1, true);
        let x_formatter = move |v: &f64| {
            if log_x {
                fmt_log_tick(*v)
            } else {
                x_fmt.fmt(*v)
            }
        };
        let mut chart = framed_chart(
            area,
            x_spec,
            self.y,
            (self.x_label.as_str(), self.y_label.as_str()),
            &x_formatter,
            if self.log_y {
                TickFmt::log10()
            } else {
                TickFmt::new(self.y.0, self.y.1, false)
            },
            10,
        )?;

        let mut legend_points = Vec::new();
        let mut entries = 0usize;
        // Bands first so points and lines stay on top.
        for (i, PreparedFit { fit, .. }) in self.fits.iter().enumerate() {
            if fit.band_x.len() < 2 {
                continue;
            }
            let colour = PALETTE[(self.series.len() + i) % PALETTE.len()];
            let upper = fit.band_x.iter().zip(&fit.band_hi);
            let lower = fit.band_x.iter().zip(&fit.band_lo).rev();
            let poly: Vec<(f64, f64)> = upper.chain(lower).map(|(x, y)| (*x, *y)).collect();
            chart.draw_series(std::iter::once(Polygon::new(
                poly,
                colour.mix(0.18).filled(),
            )))?;
        }
        for (i, pf) in self.fits.iter().enumerate() {
            let colour = PALETTE[(self.series.len() + i) % PALETTE.len()];
            let style = colour.stroke_width(2);
            chart.draw_series(LineSeries::new(pf.solid.iter().copied(), style))?;
            for part in &pf.dashed {
                chart.draw_series(DashedLineSeries::new(part.iter().copied(), 8, 6, style))?;
            }
            legend_points.extend(
                pf.solid
                    .iter()
                    .chain(pf.dashed.iter().flatten())
                    .map(|p| (self.x_frac(p.0), frac(p.1, self.y.0, self.y.1))),
            );
        }
        for (i, s) in self.series.iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            let bar = colour.stroke_width(1);
            let bars: Vec<usize> = (0..s.x.len()).filter(|&j| s.y_hi[j] > s.y_lo[j]).collect();
            chart.draw_series(
                bars.iter().map(|&j| {
                    PathElement::new(vec![(s.x[j], s.y_lo[j]), (s.x[j], s.y_hi[j])], bar)
                }),
            )?;
            chart.draw_series(bars.iter().flat_map(|&j| {
                [s.y_lo[j], s.y_hi[j]].map(|y| {
                    EmptyElement::at((s.x[j], y)) + PathElement::new(vec![(-4, 0), (4, 0)], bar)
                })
            }))?;
            let pts = s.x.iter().zip(&s.y).map(|(x, y)| (*x, *y));
            let anno = match i % 3 {
                0 => chart.draw_series(pts.map(|p| Circle::new(p, 4, colour.filled())))?,
                1 => chart.draw_series(pts.map(|p| TriangleMarker::new(p, 6, colour.filled())))?,
                _ => chart.draw_series(pts.map(|p| {
                    EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], colour.filled())
                }))?,
            };
            anno.label(s.label.clone()).legend(move |(x, y)| {
                let c = (x + 10, y);
                match i % 3 {
                    0 => Circle::new(c, 4, colour.filled()).into_dyn(),
                    1 => TriangleMarker::new(c, 6, colour.filled()).into_dyn(),
                    _ => Rectangle::new([(c.0 - 4, c.1 - 4), (c.0 + 4, c.1 + 4)], colour.filled())
                        .into_dyn(),
                }
            });
            entries += 1;
            for j in 0..s.x.len() {
                let xf = self.x_frac(s.x[j]);
                legend_points.push((xf, frac(s.y_lo[j], self.y.0, self.y.1)));
                legend_points.push((xf, frac(s.y_hi[j], self.y.0, self.y.1)));
            }
        }
        // Legend entries for fits and bands come after the series'; the
        // shapes themselves were drawn first so the points stay on top.
        let nothing = || std::iter::empty::<PathElement<(f64, f64)>>();
        for (i, PreparedFit { fit, .. }) in self.fits.iter().enumerate() {
            let colour = PALETTE[(self.series.len() + i) % PALETTE.len()];
            chart
                .draw_series(nothing())?
                .label(fit.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
            entries += 1;
        }
        for (i, PreparedFit { fit, .. }) in self.fits.iter().enumerate() {
            if fit.band_x.len() < 2 {
                continue;
            }
            let colour = PALETTE[(self.series.len() + i) % PALETTE.len()];
            chart
                .draw_series(nothing())?
                .label(format!("{}: confidence band", fit.label))
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 20, y + 6)], colour.mix(0.18).filled())
                });
            entries += 1;
        }
        let plot_h = f64::from(chart.plotting_area().dim_in_pixel().1);
        let pos = legend_corner(&legend_points, legend_h_frac(entries, plot_h));
        legend_style(&mut chart, pos)
    }
}

impl Figure for VsFreq {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let area = header(root, &self.title, &self.notes)?;
        if self.log_x {
            let (bold, light) = log_ticks(self.x.0, self.x.1);
            let spec = (self.x.0..self.x.1)
                .log_scale()
                .with_key_points(bold)
                .with_light_points(light);
            self.draw_chart(&area, spec)
        } else {
            self.draw_chart(&area, self.x.0..self.x.1)
        }
    }
}

// ---------------------------------------------------------------- durations
