//! The measured-series-against-frequency chart, with fit lines, their
//! bands and log axes.

use std::path::{Path, PathBuf};

use super::{
    Axes, Extent, FitLine, PlotError, Point, PointSeries, check_finite, densify_log, render,
};

mod draw;

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
    /// On a log y axis, where a bar that reaches 0 or below is cut (its
    /// end is drawn as an arrow, not a cap).
    cut_y: Option<f64>,
}

/// Where y values go on the axis: unchanged on a linear axis; as log10 on a
/// log axis, with values at or below 0 raised to a tenth of the smallest
/// positive value the series hold, so bars and bands that reach 0 or below
/// are cut at the plot's bottom.
#[derive(Clone, Copy)]
struct YPlace {
    log_y: bool,
    floor_y: f64,
}

impl YPlace {
    /// The placement for these series on a linear (`log_y` false) or log y axis.
    fn new(log_y: bool, series: &[PointSeries]) -> Self {
        let values = series
            .iter()
            .flat_map(|s| s.points.iter().flat_map(|p| [p.y, p.lo]));
        let positive = values.filter(|v| *v > 0.0 && v.is_finite());
        let floor_y = positive.fold(f64::INFINITY, f64::min);
        Self { log_y, floor_y }
    }

    /// `v` as stored for the axis.
    fn at(self, v: f64) -> f64 {
        if self.log_y {
            v.max(self.floor_y / 10.0).log10()
        } else {
            v
        }
    }
}

/// The x and y ranges the drawn shapes span, in axis values.
struct Extents {
    x: Extent,
    y: Extent,
}

/// A value of a point or of a band, named as the error messages name it.
type Field<T> = (&'static str, fn(&T) -> f64);

/// Every value of a series is finite (the bounds named `y_lo` and `y_hi`
/// in the error, as they always were).
fn check_series(file: &Path, s: &PointSeries) -> Result<(), PlotError> {
    let fields: [Field<Point>; 4] = [
        ("x", |p| p.x),
        ("y", |p| p.y),
        ("y_lo", |p| p.lo),
        ("y_hi", |p| p.hi),
    ];
    for (name, get) in fields {
        let what = format!("series '{}' {name}", s.label);
        check_finite(file, &what, s.points.iter().map(get))?;
    }
    Ok(())
}

/// A fit's coefficients, band and curve are finite.
fn check_fit(file: &Path, f: &FitLine) -> Result<(), PlotError> {
    let what = |field: &str| format!("fit '{}' {field}", f.label);
    check_finite(file, &what("intercept"), [f.intercept])?;
    check_finite(file, &what("slope"), [f.slope])?;
    let band: [Field<(f64, f64, f64)>; 3] = [
        ("band_x", |b| b.0),
        ("band_lo", |b| b.1),
        ("band_hi", |b| b.2),
    ];
    for (name, get) in band {
        check_finite(file, &what(name), f.band.iter().map(get))?;
    }
    check_finite(file, &what("curve x"), f.curve.iter().map(|p| p.0))?;
    check_finite(file, &what("curve y"), f.curve.iter().map(|p| p.1))
}

/// The points of `s` that `axes` can show, y values placed on the axis and
/// every bar holding its point; `extents` widened to them, and the points
/// left out counted in `skipped`: (x <= 0 on a log x axis, each logged as
/// a warning naming `file`; y <= 0 on a log y axis).
fn shown_series(
    s: &PointSeries,
    axes: Axes,
    place: YPlace,
    extents: &mut Extents,
    skipped: &mut (usize, usize),
    file: &Path,
) -> PointSeries {
    let mut kept = PointSeries::new(s.label.clone(), []);
    for &Point { x, y, lo, hi } in &s.points {
        if axes.log_x && x <= 0.0 {
            skipped.0 += 1;
            tracing::warn!(
                series = %s.label, x, plot = %file.display(),
                "point with x <= 0 cannot be shown on a log axis; skipped"
            );
            continue;
        }
        if axes.log_y && y <= 0.0 {
            skipped.1 += 1;
            continue;
        }
        let (lo, hi) = (place.at(lo.min(y)), place.at(hi.max(y)));
        let y = place.at(y);
        kept.points.push(Point { x, y, lo, hi });
        extents.x.add(x);
        extents.y.add(lo);
        extents.y.add(hi);
    }
    kept
}

impl PreparedFit {
    /// Fit `f`'s line and band ready to draw over the data's `x_extent`: the
    /// line solid where the band says the fit is supported (the whole extent
    /// when there is no band), dashed where it is extended to the rest of
    /// the plotted data; the band sorted by x, placed on the y axis and, on a
    /// log x axis, densified.
    fn new(f: &FitLine, axes: Axes, place: YPlace, x_extent: Extent) -> Self {
        let Axes { log_x, log_y, .. } = axes;
        let mut band: Vec<(f64, f64, f64)> = f
            .band
            .iter()
            .filter(|b| !log_x || b.0 > 0.0)
            .map(|&(x, lo, hi)| (x, place.at(lo), place.at(hi)))
            .collect();
        band.sort_by(|a, b| a.0.total_cmp(&b.0));
        let xe = x_extent;
        let (s_lo, s_hi) = match (band.first(), band.last()) {
            (Some(a), Some(b)) if b.0 > a.0 => (a.0.max(xe.lo), b.0.min(xe.hi)),
            _ => (xe.lo, xe.hi),
        };
        // On a log y axis a line is a curve and its points at y <= 0
        // cannot be shown: sampled densely, those left out.
        let line = |a: f64, b: f64| {
            let pts = sample_line(f.intercept, f.slope, a, b, log_x || (log_y && a > 0.0));
            let shown = pts.into_iter().filter(|p| !log_y || p.1 > 0.0);
            shown
                .map(|(x, y)| (x, if log_y { y.log10() } else { y }))
                .collect()
        };
        let (solid, dashed) = if f.curve.is_empty() {
            let outside = [(xe.lo, s_lo), (s_hi, xe.hi)]
                .into_iter()
                .filter(|(a, b)| b > a);
            let dashed: Vec<Vec<(f64, f64)>> = outside.map(|(a, b)| line(a, b)).collect();
            (line(s_lo, s_hi), dashed)
        } else {
            // A curve is drawn as given, where the axes can show it.
            let curve = f.curve.iter();
            let shown = curve.filter(|(x, y)| (!log_x || *x > 0.0) && (!log_y || *y > 0.0));
            let shown = shown.map(|&(x, y)| (x, place.at(y))).collect();
            (shown, Vec::new())
        };
        if log_x {
            band = densify_log(&band);
        }
        let fit = FitLine { band, ..f.clone() };
        Self { fit, solid, dashed }
    }

    /// Every point of the drawn line, solid and dashed.
    fn line_points(&self) -> impl Iterator<Item = &(f64, f64)> {
        self.solid.iter().chain(self.dashed.iter().flatten())
    }
}

/// Why a chart has nothing to draw: no input at all, every point at x <= 0
/// on a log axis (`skipped_x` of them), or no points and no band.
fn no_data_detail(no_input: bool, skipped_x: usize) -> String {
    if no_input {
        "no series and no fits were given".to_string()
    } else if skipped_x > 0 {
        format!("all {skipped_x} points have x <= 0, which a log x axis cannot show")
    } else {
        "the series have no points and the fits no band to set the x range".to_string()
    }
}

/// The notes under the title: how many points the log x and y axes could not
/// show (`skipped`, named by the axis labels) and whether a fit line is
/// extrapolated beyond its band.
fn chart_notes(
    (x_label, y_label): (&str, &str),
    (skipped_x, skipped_y): (usize, usize),
    extrapolated: bool,
) -> Vec<String> {
    let skipped = [(skipped_x, x_label), (skipped_y, y_label)].into_iter();
    let mut notes: Vec<String> = (skipped.filter(|(n, _)| *n > 0))
        .map(|(n, label)| format!("{n} point(s) with {label} <= 0 not shown (log axis)"))
        .collect();
    if extrapolated {
        notes.push("dashed: fit extrapolated beyond the range of its confidence band".into());
    }
    notes
}

/// Plot measured series against frequency, with fitted lines and their
/// confidence bands. Writes `file`.svg and `file`.png and returns
/// both paths (SVG first).
///
/// With `axes.log_x`, points with x <= 0 cannot be shown: they are skipped with a
/// warning and a note under the title. Non-finite values are an error.
///
/// Check the series and fits, keep what the axes can show, and set the
/// axis ranges and the notes under the title.
pub fn plot_vs_freq(
    title: &str,
    (x_label, y_label): (&str, &str),
    series: &[PointSeries],
    fits: &[FitLine],
    axes: Axes,
    file: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    let place = YPlace::new(axes.log_y, series);
    let mut extents = Extents {
        x: Extent::empty(),
        y: Extent::empty(),
    };
    let mut kept_series = Vec::new();
    let mut skipped = (0, 0);
    for s in series {
        check_series(file, s)?;
        let shown = shown_series(s, axes, place, &mut extents, &mut skipped, file);
        if !shown.points.is_empty() {
            kept_series.push(shown);
        }
    }
    for f in fits {
        check_fit(file, f)?;
        for &(x, lo, hi) in f.band.iter().filter(|b| !axes.log_x || b.0 > 0.0) {
            extents.x.add(x);
            extents.y.add(place.at(lo));
            extents.y.add(place.at(hi));
        }
        // A curve's x range; its y values come in with every drawn
        // line's points below.
        for &(x, y) in &f.curve {
            if (!axes.log_x || x > 0.0) && (!axes.log_y || y > 0.0) {
                extents.x.add(x);
            }
        }
    }
    if let Some(y) = axes.y_include.filter(|&y| !axes.log_y || y > 0.0) {
        extents.y.add(place.at(y));
    }
    if extents.x.is_empty() {
        return Err(PlotError::NoData {
            file: file.to_path_buf(),
            detail: no_data_detail(series.is_empty() && fits.is_empty(), skipped.0),
        });
    }
    // Fit curves over the data's x extent, sampled densely enough to be
    // smooth on either axis type.
    let prepared = fits
        .iter()
        .map(|f| PreparedFit::new(f, axes, place, extents.x));
    let prepared_fits: Vec<PreparedFit> = prepared.collect();
    for p in prepared_fits.iter().flat_map(PreparedFit::line_points) {
        extents.y.add(p.1);
    }
    let xe = extents.x;
    let x = if axes.log_x {
        (xe.lo / 1.5, xe.hi * 1.5)
    } else {
        xe.padded_linear(0.04, 0.04)
    };
    let extrapolated = prepared_fits.iter().any(|f| !f.dashed.is_empty());
    let notes = chart_notes((x_label, y_label), skipped, extrapolated);
    let fig = VsFreq {
        title: title.to_string(),
        x_label: x_label.to_string(),
        y_label: y_label.to_string(),
        series: kept_series,
        fits: prepared_fits,
        log_x: axes.log_x,
        log_y: axes.log_y,
        x,
        y: extents.y.padded_linear(0.06, 0.10),
        notes,
        cut_y: axes.log_y.then(|| place.at(0.0)),
    };
    render(&fig, file)
}
