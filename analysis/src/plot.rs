//! Plots of the analysis results, each written twice: SVG (for the report and
//! for diffing) and PNG (1000x650, for quick viewing).
//!
//! Text is laid out with the DejaVu Sans font compiled into the binary
//! (`analysis/assets/DejaVuSans.ttf`, see `analysis/assets/README.md`) and
//! registered with plotters once per process, so rendering needs no font from
//! the host.
//!
//! Every function validates its input before drawing: no data, mismatched
//! vector lengths and NaN/infinite values are errors that name the output
//! file, the series and the index. Points that cannot be shown (x <= 0 on a
//! logarithmic axis) are skipped with a `tracing` warning and a note on the
//! plot, never silently.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

mod durations;
mod paired;
mod ticks;
mod vs_freq;

pub use durations::*;
pub use paired::*;
use ticks::*;
pub use vs_freq::*;

/// Size of every PNG (and of the SVG canvas), in pixels.
pub const PNG_SIZE: (u32, u32) = (1000, 650);

/// Font family name under which the embedded font is registered.
const FONT: &str = "sans-serif";
static DEJAVU_SANS: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Okabe-Ito colour-blind safe palette (black last).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(230, 159, 0),   // orange
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(120, 110, 20),  // dark yellow (Okabe-Ito yellow is too light on white)
    RGBColor(0, 0, 0),       // black
];

/// The colour the `i`-th series of a plot gets, RGB: a line drawn in it
/// belongs to that series.
pub fn series_colour(i: usize) -> (u8, u8, u8) {
    let c = PALETTE[i % PALETTE.len()];
    (c.0, c.1, c.2)
}

// Font sizes as plotters takes them: it draws glyphs at size / 1.24 pixels.
const TITLE_PX: u32 = 30;
const SUBTITLE_PX: u32 = 19;
const AXIS_DESC_PX: u32 = 22;
const TICK_PX: u32 = 19;
const LEGEND_PX: u32 = 19;

/// One measured series: its points, each with its error bar.
#[derive(Debug, Clone)]
pub struct PointSeries {
    pub label: String,
    pub points: Vec<Point>,
}

/// A measured point at `x`: `y` with its error bar `lo..=hi` (both equal
/// to `y` when there is no error bar).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub lo: f64,
    pub hi: f64,
}

impl PointSeries {
    /// Points `(x, y)` without error bars.
    pub fn new(label: impl Into<String>, pts: impl IntoIterator<Item = (f64, f64)>) -> Self {
        let bare = pts.into_iter().map(|(x, y)| [x, y, y, y]);
        Self::with_bars(label, bare)
    }

    /// Points `[x, y, lo, hi]`, each with its error bar.
    pub fn with_bars(label: impl Into<String>, pts: impl IntoIterator<Item = [f64; 4]>) -> Self {
        let points = pts.into_iter().map(|[x, y, lo, hi]| Point { x, y, lo, hi });
        Self {
            label: label.into(),
            points: points.collect(),
        }
    }
}

/// A fitted line `y = intercept + slope * x`, with an optional confidence
/// band given point-wise (empty = no band).
#[derive(Debug, Clone, Default)]
pub struct FitLine {
    pub label: String,
    pub intercept: f64,
    pub slope: f64,
    /// The band's `(x, lo, hi)`.
    pub band: Vec<(f64, f64, f64)>,
    /// The line's own points `(x, y)` where it is no straight line (the
    /// model's loss, a step in cost): drawn instead of intercept + slope x.
    pub curve: Vec<(f64, f64)>,
    /// What the band is, for the legend; empty: "confidence band".
    pub band_label: String,
    /// The label written at the line's right end instead of in the legend
    /// (a budget line: the legend stays small enough to keep off the data).
    pub label_at_end: bool,
    /// Its colour (RGB); None: the palette's next after the series.
    pub colour: Option<(u8, u8, u8)>,
}

impl FitLine {
    /// A horizontal line at `y` in `colour`, labelled at its right end (a
    /// budget, a median).
    pub fn level(label: String, y: f64, colour: (u8, u8, u8)) -> Self {
        FitLine {
            label,
            intercept: y,
            label_at_end: true,
            colour: Some(colour),
            ..Default::default()
        }
    }
}

/// One paired run: a point per phase.
#[derive(Debug, Clone)]
pub struct PairedTrace {
    pub label: String,
    pub phases: Vec<Phase>,
}

/// A phase of a paired run: `t_s` seconds since the run started, `rate`
/// loops per second in it, `sampling` whether the sampler was enabled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    pub t_s: f64,
    pub rate: f64,
    pub sampling: bool,
}

pub use crate::error::PlotError;

// ---------------------------------------------------------------- public API

/// Which axes of [`plot_vs_freq`] are log10.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Axes {
    pub log_x: bool,
    /// Values spanning decades (utilisation from 100 Hz to 100 kHz): points
    /// and fit lines at y <= 0 are skipped with a note under the title, and
    /// error bars and bands reaching below are cut at the plot's bottom.
    pub log_y: bool,
    /// A y value the axis shows whatever the data (the budget plot's 100 %
    /// loss: room above the data for the legend).
    pub y_include: Option<f64>,
}

impl Axes {
    /// Both linear.
    pub const LINEAR: Axes = Axes {
        log_x: false,
        ..Axes::LOG_X
    };
    /// Log x, linear y.
    pub const LOG_X: Axes = Axes {
        log_x: true,
        log_y: false,
        y_include: None,
    };
    /// Both log.
    pub const LOG_LOG: Axes = Axes {
        log_y: true,
        ..Axes::LOG_X
    };
}

// ---------------------------------------------------------------- rendering

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;
type Chart<'a, DB, X> = ChartContext<'a, DB, Cartesian2d<X, RangedCoordf64>>;

/// An axis range plotters can tick: its own tick search divides the step
/// by 10 until enough ticks fit, and on a range that is not finite, or
/// narrower than the precision of its values (a degenerate recovery.csv
/// gave one at 1e17), the step reaches 0 and the search never ends (the
/// report hung; issue 33). Such a range is widened around its middle (or
/// is 0..1 when nothing in it is finite); |values| beyond 1e15 are cut to
/// it. Any range a real result set gives is returned as it is.
pub(crate) fn plottable((lo, hi): (f64, f64)) -> (f64, f64) {
    const MAX: f64 = 1e15;
    let (lo, hi) = match (lo.is_finite(), hi.is_finite()) {
        (true, true) => (lo.min(hi), lo.max(hi)),
        (true, false) => (lo, lo),
        (false, true) => (hi, hi),
        (false, false) => return (0.0, 1.0),
    };
    let (lo, hi) = (lo.clamp(-MAX, MAX), hi.clamp(-MAX, MAX));
    let magnitude = lo.abs().max(hi.abs());
    if hi - lo > magnitude * 1e-9 && hi - lo > 1e-12 {
        return (lo, hi);
    }
    let mid = 0.5 * (lo + hi);
    let half = (mid.abs() * 1e-3).max(0.5);
    (mid - half, mid + half)
}

/// The frame every chart shares: margins, label areas sized for the y
/// ticks, grid colours, fonts, axis descriptions and tick formats. Returns
/// the chart ready for its series.
fn framed_chart<'a, DB, XS>(
    area: &'a DrawingArea<DB, Shift>,
    x_spec: XS,
    y: (f64, f64),
    (x_desc, y_desc): (&str, &str),
    x_fmt: &dyn Fn(&f64) -> String,
    y_fmt: TickFmt,
    y_labels: usize,
) -> Result<Chart<'a, DB, XS::CoordDescType>, DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    XS: AsRangedCoord<Value = f64>,
    XS::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let y = plottable(y);
    let mut chart = ChartBuilder::on(area)
        .margin_left(10)
        .margin_right(30)
        .margin_bottom(10)
        .x_label_area_size(55)
        .y_label_area_size(y_label_area(&y_fmt, y))
        .build_cartesian_2d(x_spec, y.0..y.1)?;
    let y_formatter = move |v: &f64| y_fmt.fmt(*v);
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style(font(AXIS_DESC_PX))
        .label_style(font(TICK_PX))
        .x_label_formatter(x_fmt)
        .y_label_formatter(&y_formatter)
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(RGBColor(240, 240, 240))
        .x_labels(10)
        .y_labels(y_labels)
        .max_light_lines(1)
        .draw()?;
    Ok(chart)
}

/// A prepared (validated, ranged) figure that can draw itself on any backend.
trait Figure {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

fn ensure_font() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, DEJAVU_SANS).is_ok()
    });
    if ok { Ok(()) } else { Err(PlotError::Font) }
}

/// A written plot's file name, when it is an SVG (the one a report links).
pub fn svg_name(p: &Path) -> Option<String> {
    let name = p
        .file_name()
        .filter(|_| p.extension().is_some_and(|e| e == "svg"));
    name.map(|n| n.to_string_lossy().into_owned())
}

fn with_ext(stem: &Path, ext: &str) -> PathBuf {
    let mut s = stem.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

fn render<F: Figure>(fig: &F, stem: &Path) -> Result<Vec<PathBuf>, PlotError> {
    ensure_font()?;
    if let Some(dir) = stem.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| PlotError::CreateDir {
            file: stem.to_path_buf(),
            dir: dir.to_path_buf(),
            source,
        })?;
    }
    let svg = with_ext(stem, "svg");
    let png = with_ext(stem, "png");
    draw_on(fig, SVGBackend::new(&svg, PNG_SIZE), &svg)?;
    let (width, height) = PNG_SIZE;
    let mut pixels = vec![0u8; 3 * width as usize * height as usize];
    draw_on(fig, BitMapBackend::with_buffer(&mut pixels, PNG_SIZE), &png)?;
    write_png(&png, &pixels, PNG_SIZE).map_err(|e| render_err(&png, &e))?;
    Ok(vec![svg, png])
}

/// `fig` drawn on `backend` and presented; an error names `file`.
fn draw_on<F: Figure, DB: DrawingBackend>(
    fig: &F,
    backend: DB,
    file: &Path,
) -> Result<(), PlotError> {
    let root = backend.into_drawing_area();
    fig.draw(&root).map_err(|e| render_err(file, &e))?;
    root.present().map_err(|e| render_err(file, &e))
}

fn render_err(file: &Path, e: &dyn std::fmt::Display) -> PlotError {
    PlotError::Render {
        file: file.to_path_buf(),
        message: e.to_string(),
    }
}

/// Encodes RGB pixels as PNG with the best compression and adaptive filters
/// (plotters' own `present` uses the fastest: its plots were twice as large,
/// and every report commits them).
fn write_png(path: &Path, rgb: &[u8], (width, height): (u32, u32)) -> image::ImageResult<()> {
    use image::ImageEncoder;
    use image::codecs::png::{CompressionType, FilterType, PngEncoder};
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    PngEncoder::new_with_quality(file, CompressionType::Best, FilterType::Adaptive).write_image(
        rgb,
        width,
        height,
        image::ColorType::Rgb8,
    )
}

fn font(px: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, px).into_font()).color(&BLACK)
}

/// White background, centred title and optional grey subtitle lines; returns
/// the area left for the chart.
fn header<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    notes: &[String],
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let width = root.dim_in_pixel().0;
    let note_style = font(SUBTITLE_PX).color(&RGBColor(80, 80, 80));
    // Wrap each note at word boundaries to the canvas width less a margin.
    let mut lines: Vec<String> = Vec::new();
    for note in notes {
        let mut line = String::new();
        for word in note.split(' ') {
            let candidate = if line.is_empty() {
                word.to_string()
            } else {
                format!("{line} {word}")
            };
            let (w, _) = root.estimate_text_size(&candidate, &note_style)?;
            if w + 40 > width && !line.is_empty() {
                lines.push(std::mem::replace(&mut line, word.to_string()));
            } else {
                line = candidate;
            }
        }
        lines.push(line);
    }
    let height = 44 + 20 * lines.len() as u32;
    let (top, rest) = root.split_vertically(height);
    let centre = (width / 2) as i32;
    let centred = Pos::new(HPos::Center, VPos::Top);
    top.draw(&Text::new(
        title.to_string(),
        (centre, 10),
        font(TITLE_PX).pos(centred),
    ))?;
    for (i, line) in lines.into_iter().enumerate() {
        top.draw(&Text::new(
            line,
            (centre, 42 + 20 * i as i32),
            note_style.clone().pos(centred),
        ))?;
    }
    Ok(rest)
}

// ---------------------------------------------------------------- helpers

fn check_finite(
    file: &Path,
    what: &str,
    values: impl IntoIterator<Item = f64>,
) -> Result<(), PlotError> {
    match values.into_iter().enumerate().find(|(_, v)| !v.is_finite()) {
        None => Ok(()),
        Some((index, value)) => Err(PlotError::NonFinite {
            file: file.to_path_buf(),
            what: what.to_string(),
            index,
            value,
        }),
    }
}

/// Running min/max over finite values.
#[derive(Debug, Clone, Copy)]
struct Extent {
    lo: f64,
    hi: f64,
}

impl Extent {
    fn empty() -> Self {
        Self {
            lo: f64::INFINITY,
            hi: f64::NEG_INFINITY,
        }
    }
    fn add(&mut self, v: f64) {
        if v.is_finite() {
            self.lo = self.lo.min(v);
            self.hi = self.hi.max(v);
        }
    }
    fn is_empty(&self) -> bool {
        self.lo > self.hi
    }
    /// Pad a linear range by `frac` of its span on both sides (and widen a
    /// zero-width range so the axis is drawable).
    fn padded_linear(&self, frac_lo: f64, frac_hi: f64) -> (f64, f64) {
        let span = self.hi - self.lo;
        let span = if span > 0.0 {
            span
        } else {
            (self.lo.abs() * 0.1).max(1.0)
        };
        let (mut lo, hi) = (self.lo - frac_lo * span, self.hi + frac_hi * span);
        // A quantity that cannot go negative keeps 0 as the axis floor.
        if self.lo >= 0.0 && lo < 0.0 {
            lo = 0.0;
        }
        (lo, hi)
    }
}

/// Pick the legend corner that covers the fewest drawn points. Points are
/// given as fractions of the plot width/height (0,0 = lower left).
fn legend_corner(points: &[(f64, f64)], legend_h_frac: f64) -> SeriesLabelPosition {
    let w = 0.42;
    let h = legend_h_frac.clamp(0.15, 0.9);
    let count = |x_left: bool, y_top: bool| {
        let in_x = |x: f64| if x_left { x <= w } else { x >= 1.0 - w };
        let in_y = |y: f64| if y_top { y >= 1.0 - h } else { y <= h };
        points.iter().filter(|&&(x, y)| in_x(x) && in_y(y)).count()
    };
    use SeriesLabelPosition::{LowerLeft, LowerRight, UpperLeft, UpperRight};
    let corners = [
        (UpperLeft, true, true),
        (UpperRight, false, true),
        (LowerRight, false, false),
    ];
    // The first of the fewest covered.
    (corners.into_iter().chain([(LowerLeft, true, false)]))
        .min_by_key(|&(_, left, top)| count(left, top))
        .map_or(UpperLeft, |c| c.0)
}

/// A band given at a few x values is drawn with straight edges between them;
/// on a log x axis those edges would cut across the fitted curve. Insert
/// points spaced evenly in log x, interpolating linearly in x (exact for a
/// band that is linear in x between its given points).
fn densify_log(band: &[(f64, f64, f64)]) -> Vec<(f64, f64, f64)> {
    const STEPS: u32 = 16;
    let mut out = Vec::with_capacity(band.len() * STEPS as usize + 1);
    for pair in band.windows(2) {
        let ((x0, lo0, hi0), (x1, lo1, hi1)) = (pair[0], pair[1]);
        for k in 0..STEPS {
            let t = f64::from(k) / f64::from(STEPS);
            let x = 10f64.powf(x0.log10() + t * (x1.log10() - x0.log10()));
            let u = if x1 > x0 { (x - x0) / (x1 - x0) } else { 0.0 };
            out.push((x, lo0 + u * (lo1 - lo0), hi0 + u * (hi1 - hi0)));
        }
    }
    if let Some(last) = band.last() {
        out.push(*last);
    }
    out
}

fn frac(v: f64, lo: f64, hi: f64) -> f64 {
    if hi > lo { (v - lo) / (hi - lo) } else { 0.5 }
}

/// The legend of `entries` rows, in the corner of the plot that covers
/// the fewest of `points` (fractions of the plot, as [`legend_corner`]
/// takes them).
fn legend_style<'a, 'b, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &'b mut ChartContext<'a, DB, CT>,
    points: &[(f64, f64)],
    entries: usize,
) -> DrawResult<DB> {
    let plot_h = f64::from(chart.plotting_area().dim_in_pixel().1);
    let pos = legend_corner(points, legend_h_frac(entries, plot_h));
    chart
        .configure_series_labels()
        .position(pos)
        .margin(12)
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(160, 160, 160))
        .label_font(font(LEGEND_PX))
        .draw()
}

/// A legend entry's sample of a line drawn in `style`.
fn legend_line(style: ShapeStyle) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style)
}

/// Approximate legend height as a fraction of the plot area height.
fn legend_h_frac(entries: usize, plot_h_px: f64) -> f64 {
    // Measured on the PNG: ~24 px per legend row at LEGEND_PX plus ~16 px of
    // padding, and the legend sits 12 px inside the plot area.
    (entries as f64 * 24.0 + 16.0 + 12.0) / plot_h_px
}

// ---------------------------------------------------------------- y vs frequency

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_are_decades_over_three_decades() {
        let (bold, light) = log_ticks(66.0, 150_000.0);
        assert_eq!(bold, vec![100.0, 1000.0, 10_000.0, 100_000.0]);
        assert!(light.contains(&200.0) && light.contains(&90_000.0));
        assert!(!light.contains(&200_000.0));
    }

    #[test]
    fn log_ticks_within_one_decade_use_1_2_5() {
        let (bold, _) = log_ticks(1500.0, 6000.0);
        assert_eq!(bold, vec![2000.0, 5000.0]);
    }

    #[test]
    fn log_tick_labels_are_compact() {
        let got: Vec<String> = [100.0, 1000.0, 2500.0, 10_000.0, 100_000.0, 1e6]
            .iter()
            .map(|v| fmt_log_tick(*v))
            .collect();
        assert_eq!(got, ["100", "1k", "2.5k", "10k", "100k", "1M"]);
    }

    #[test]
    fn tick_fmt_uses_si_prefix_and_enough_decimals() {
        let f = TickFmt::new(1.20e8, 1.25e8, true);
        assert_eq!(f.fmt(1.215e8), "121.5M");
        let g = TickFmt::new(0.0, 15.0, false);
        assert_eq!(g.fmt(2.0), "2");
        let h = TickFmt::new(0.0, 0.4, false);
        assert_eq!(h.fmt(0.05), "0.05");
    }

    #[test]
    fn group_stats_match_sorting() {
        let v: Vec<f64> = (0..1000).rev().map(f64::from).collect();
        let s = group_stats(&v);
        assert_eq!(s.min, 0.0);
        assert_eq!(s.median, 499.0);
        assert_eq!(s.p995, 994.0);
    }

    #[test]
    fn legend_avoids_the_crowded_corner() {
        // Rising data fills lower-left and upper-right.
        let pts: Vec<(f64, f64)> = (0..50)
            .map(|i| (i as f64 / 49.0, i as f64 / 49.0))
            .collect();
        assert!(matches!(
            legend_corner(&pts, 0.2),
            SeriesLabelPosition::UpperLeft
        ));
        let falling: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, 1.0 - p.1)).collect();
        assert!(matches!(
            legend_corner(&falling, 0.2),
            SeriesLabelPosition::UpperRight
        ));
    }
}
