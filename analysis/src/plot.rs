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

// Font sizes as plotters takes them: it draws glyphs at size / 1.24 pixels.
const TITLE_PX: u32 = 30;
const SUBTITLE_PX: u32 = 19;
const AXIS_DESC_PX: u32 = 22;
const TICK_PX: u32 = 19;
const LEGEND_PX: u32 = 19;

/// One measured series: a point per x with an error bar `y_lo..=y_hi`
/// (equal to `y` when there is no error bar; empty `y_lo`/`y_hi` also mean
/// "no error bars").
#[derive(Debug, Clone)]
pub struct PointSeries {
    pub label: String,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub y_lo: Vec<f64>,
    pub y_hi: Vec<f64>,
}

/// A fitted line `y = intercept + slope * x`, with an optional confidence
/// band given point-wise at `band_x` (all three vectors empty = no band).
#[derive(Debug, Clone)]
pub struct FitLine {
    pub label: String,
    pub intercept: f64,
    pub slope: f64,
    pub band_x: Vec<f64>,
    pub band_lo: Vec<f64>,
    pub band_hi: Vec<f64>,
}

/// One paired run: a point per phase, `t_s` seconds since the run started,
/// `rate` loops per second in that phase, `sampling` whether the sampler
/// was enabled in that phase.
#[derive(Debug, Clone)]
pub struct PairedTrace {
    pub label: String,
    pub t_s: Vec<f64>,
    pub rate: Vec<f64>,
    pub sampling: Vec<bool>,
}

/// Why a plot could not be written. `file` is the output path without its
/// `.svg`/`.png` extension, unless the error concerns one of the two files.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("cannot plot {}.{{svg,png}}: nothing to draw: {detail}", file.display())]
    NoData { file: PathBuf, detail: String },
    #[error(
        "cannot plot {}.{{svg,png}}: {what}[{index}] is {value}; every value must be finite \
         (drop or fix that row in the input)",
        file.display()
    )]
    NonFinite {
        file: PathBuf,
        what: String,
        index: usize,
        value: f64,
    },
    #[error("cannot plot {}.{{svg,png}}: {what}: {detail}", file.display())]
    InvalidData {
        file: PathBuf,
        what: String,
        detail: String,
    },
    #[error("cannot create directory {} for plot {}: {source}", dir.display(), file.display())]
    CreateDir {
        file: PathBuf,
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write plot {}: {message}", file.display())]
    Render { file: PathBuf, message: String },
    #[error(
        "the embedded font analysis/assets/DejaVuSans.ttf is not a valid TrueType font \
         (restore the file from git and rebuild)"
    )]
    Font,
}

// ---------------------------------------------------------------- public API

/// Plot measured series against frequency, with fitted lines and their
/// confidence bands. Writes `out_stem.svg` and `out_stem.png` and returns
/// both paths (SVG first).
///
/// With `log_x`, points with x <= 0 cannot be shown: they are skipped with a
/// warning and a note under the title. Non-finite values are an error.
pub fn plot_vs_freq(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[PointSeries],
    fits: &[FitLine],
    log_x: bool,
    out_stem: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    let axes = Axes {
        log_x,
        log_y: false,
    };
    let fig = VsFreq::prepare(title, (x_label, y_label), series, fits, axes, out_stem)?;
    render(&fig, out_stem)
}

/// Which axes of [`plot_vs_freq_axes`] are log10.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Axes {
    pub log_x: bool,
    /// Values spanning decades (utilisation from 100 Hz to 100 kHz): points
    /// and fit lines at y <= 0 are skipped with a note under the title, and
    /// error bars and bands reaching below are cut at the plot's bottom.
    pub log_y: bool,
}

/// [`plot_vs_freq`] with a choice of log axes.
pub fn plot_vs_freq_axes(
    title: &str,
    (x_label, y_label): (&str, &str),
    series: &[PointSeries],
    fits: &[FitLine],
    axes: Axes,
    out_stem: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    let fig = VsFreq::prepare(title, (x_label, y_label), series, fits, axes, out_stem)?;
    render(&fig, out_stem)
}

/// Plot the distribution of handler durations (ns), one outline histogram
/// per group (label, values), each normalised to percent of its own runs so
/// groups of different sizes compare. The x axis ends at the largest
/// per-group 99.5th percentile; how many values lie beyond is stated under
/// the title. Binning is a single O(n) pass per group (plus an O(n)
/// selection for the percentiles), so millions of values are cheap.
pub fn plot_durations(
    title: &str,
    groups: &[(String, Vec<f64>)],
    out_stem: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    let fig = Durations::prepare(title, groups, out_stem)?;
    render(&fig, out_stem)
}

/// Plot loop rate over time for paired runs, sampling-on phases as filled
/// circles and sampling-off phases as open squares, each kind joined by its
/// own line: drift moves both lines together, the gap between them is the
/// sampling cost.
pub fn plot_paired(
    title: &str,
    traces: &[PairedTrace],
    out_stem: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    let fig = Paired::prepare(title, traces, out_stem)?;
    render(&fig, out_stem)
}

// ---------------------------------------------------------------- rendering

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;
type Chart<'a, DB, X> = ChartContext<'a, DB, Cartesian2d<X, RangedCoordf64>>;

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
    let render_err = |file: &Path| {
        let file = file.to_path_buf();
        move |e: &dyn std::fmt::Display| PlotError::Render {
            file: file.clone(),
            message: e.to_string(),
        }
    };
    {
        let root = SVGBackend::new(&svg, PNG_SIZE).into_drawing_area();
        let err = render_err(&svg);
        fig.draw(&root).map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    {
        let root = BitMapBackend::new(&png, PNG_SIZE).into_drawing_area();
        let err = render_err(&png);
        fig.draw(&root).map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    Ok(vec![svg, png])
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

fn check_finite(file: &Path, what: &str, values: &[f64]) -> Result<(), PlotError> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(index) => Err(PlotError::NonFinite {
            file: file.to_path_buf(),
            what: what.to_string(),
            index,
            value: values[index],
        }),
    }
}

fn check_len(
    file: &Path,
    what: &str,
    (name, got): (&str, usize),
    (ref_name, want): (&str, usize),
) -> Result<(), PlotError> {
    if got == want {
        Ok(())
    } else {
        Err(PlotError::InvalidData {
            file: file.to_path_buf(),
            what: what.to_string(),
            detail: format!(
                "{name} has {got} values but {ref_name} has {want}; they must be equal"
            ),
        })
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

/// 1, 2 or 5 times a power of ten, the smallest such >= `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 || raw.is_infinite() {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let m = raw / mag;
    let f = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    f * mag
}

/// Tick label formatting chosen once per axis from its range: an SI prefix
/// when values are large, and as many decimals as the tick spacing needs.
#[derive(Debug, Clone, Copy)]
struct TickFmt {
    scale: f64,
    suffix: &'static str,
    decimals: usize,
    /// The axis holds log10 of the values: a tick at v is labelled 10^v.
    log10: bool,
}

impl TickFmt {
    fn new(lo: f64, hi: f64, si: bool) -> Self {
        let max_abs = lo.abs().max(hi.abs());
        let (scale, suffix) = if !si {
            (1.0, "")
        } else if max_abs >= 1e9 {
            (1e9, "G")
        } else if max_abs >= 1e6 {
            (1e6, "M")
        } else if max_abs >= 1e4 {
            (1e3, "k")
        } else {
            (1.0, "")
        };
        let step = nice_step((hi - lo).abs() / 10.0) / scale;
        let decimals = if step >= 1.0 {
            0
        } else {
            (-step.log10().floor()).clamp(0.0, 6.0) as usize
        };
        Self {
            scale,
            suffix,
            decimals,
            log10: false,
        }
    }
    /// Labels for an axis that holds log10 of the values.
    fn log10() -> Self {
        Self {
            scale: 1.0,
            suffix: "",
            decimals: 0,
            log10: true,
        }
    }
    fn fmt(&self, v: f64) -> String {
        if self.log10 {
            return fmt_significant(10f64.powf(v));
        }
        let s = format!("{:.*}", self.decimals, v / self.scale);
        // "-0" reads as noise and "0k" as a typo: zero is plain "0".
        if s.trim_start_matches(['-', '0', '.']).is_empty() {
            return s.trim_start_matches('-').to_string();
        }
        format!("{s}{}", self.suffix)
    }
}

/// Width of the y label area: room for the widest tick label plus the
/// rotated axis description, so the two never overlap.
fn y_label_area(fmt: &TickFmt, (lo, hi): (f64, f64)) -> u32 {
    let widest = [lo, hi, (lo + hi) / 2.0]
        .iter()
        .map(|v| fmt.fmt(*v).chars().count())
        .max()
        .unwrap_or(1);
    // Tick digits are ~10 px wide at TICK_PX; the description needs ~35 px.
    40 + 10 * widest as u32
}

/// Two significant digits, no exponent: 0.0032, 0.1, 3.2, 320, 4500.
fn fmt_significant(v: f64) -> String {
    if v <= 0.0 || !v.is_finite() {
        return "0".to_string();
    }
    let decimals = (1 - v.log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Compact label for a log-axis tick: 100, 2k, 10k, 1.5M.
fn fmt_log_tick(v: f64) -> String {
    let (scale, suffix) = if v >= 1e6 {
        (1e6, "M")
    } else if v >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let s = format!("{:.3}", v / scale);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{suffix}")
}

/// Tick positions for a log10 axis over [lo, hi] (lo > 0): labelled ticks
/// at powers of ten (or 1-2-5 steps when the range spans less than a
/// decade), grid-only ticks at the other integer multiples.
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let mut all = Vec::new();
    let mut k = lo.log10().floor() as i32;
    while 10f64.powi(k) <= hi {
        for m in 1..=9 {
            let v = f64::from(m) * 10f64.powi(k);
            if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                all.push((m, v));
            }
        }
        k += 1;
    }
    let decades: Vec<f64> = all.iter().filter(|(m, _)| *m == 1).map(|p| p.1).collect();
    let bold = if decades.len() >= 2 {
        decades
    } else {
        let one_two_five: Vec<f64> = all
            .iter()
            .filter(|(m, _)| matches!(m, 1 | 2 | 5))
            .map(|p| p.1)
            .collect();
        if one_two_five.len() >= 2 {
            one_two_five
        } else {
            all.iter().map(|p| p.1).collect()
        }
    };
    let light = all.iter().map(|p| p.1).collect();
    (bold, light)
}

/// Pick the legend corner that covers the fewest drawn points. Points are
/// given as fractions of the plot width/height (0,0 = lower left).
fn legend_corner(points: &[(f64, f64)], legend_h_frac: f64) -> SeriesLabelPosition {
    let w = 0.42;
    let h = legend_h_frac.clamp(0.15, 0.9);
    let count = |x_left: bool, y_top: bool| {
        points
            .iter()
            .filter(|(x, y)| {
                let in_x = if x_left { *x <= w } else { *x >= 1.0 - w };
                let in_y = if y_top { *y >= 1.0 - h } else { *y <= h };
                in_x && in_y
            })
            .count()
    };
    let candidates = [
        (SeriesLabelPosition::UpperLeft, count(true, true)),
        (SeriesLabelPosition::UpperRight, count(false, true)),
        (SeriesLabelPosition::LowerRight, count(false, false)),
        (SeriesLabelPosition::LowerLeft, count(true, false)),
    ];
    let mut best = 0;
    for (i, c) in candidates.iter().enumerate() {
        if c.1 < candidates[best].1 {
            best = i;
        }
    }
    match best {
        0 => SeriesLabelPosition::UpperLeft,
        1 => SeriesLabelPosition::UpperRight,
        2 => SeriesLabelPosition::LowerRight,
        _ => SeriesLabelPosition::LowerLeft,
    }
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

fn legend_style<'a, 'b, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &'b mut ChartContext<'a, DB, CT>,
    pos: SeriesLabelPosition,
) -> DrawResult<DB> {
    chart
        .configure_series_labels()
        .position(pos)
        .margin(12)
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(160, 160, 160))
        .label_font(font(LEGEND_PX))
        .draw()
}

/// Approximate legend height as a fraction of the plot area height.
fn legend_h_frac(entries: usize, plot_h_px: f64) -> f64 {
    // Measured on the PNG: ~24 px per legend row at LEGEND_PX plus ~16 px of
    // padding, and the legend sits 12 px inside the plot area.
    (entries as f64 * 24.0 + 16.0 + 12.0) / plot_h_px
}

// ---------------------------------------------------------------- y vs frequency

/// A fit ready to draw: its band sorted (and densified on a log axis), the
/// line sampled where it is supported and where it is extrapolated.
struct PreparedFit {
    fit: FitLine,
    solid: Vec<(f64, f64)>,
    dashed: Vec<Vec<(f64, f64)>>,
}

/// Points of `y = intercept + slope x` over [a, b]: two on a linear axis;
/// on a log axis it is a curve, sampled evenly in log x.
fn sample_line(intercept: f64, slope: f64, a: f64, b: f64, log_x: bool) -> Vec<(f64, f64)> {
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

struct VsFreq {
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
    fn prepare(
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

struct Hist {
    label: String,
    /// Percent of the group's values per bin.
    pct: Vec<f64>,
}

struct Durations {
    title: String,
    hists: Vec<Hist>,
    lo: f64,
    width: f64,
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
struct GroupStats {
    min: f64,
    median: f64,
    p995: f64,
}

fn group_stats(values: &[f64]) -> GroupStats {
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

fn fmt_count(n: usize) -> String {
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

const DURATION_BINS: f64 = 100.0;

impl Durations {
    fn prepare(title: &str, groups: &[(String, Vec<f64>)], file: &Path) -> Result<Self, PlotError> {
        if groups.is_empty() {
            return Err(PlotError::NoData {
                file: file.to_path_buf(),
                detail: "no duration groups were given".to_string(),
            });
        }
        let mut stats = Vec::new();
        for (label, values) in groups {
            let what = format!("durations of group '{label}'");
            check_finite(file, &what, values)?;
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
            stats.push((label, values, group_stats(values)));
        }
        if stats.is_empty() {
            return Err(PlotError::NoData {
                file: file.to_path_buf(),
                detail: format!("all {} duration groups are empty", groups.len()),
            });
        }
        let min = stats.iter().map(|s| s.2.min).fold(f64::INFINITY, f64::min);
        let top = stats
            .iter()
            .map(|s| s.2.p995)
            .fold(f64::NEG_INFINITY, f64::max);
        let span = if top > min {
            top - min
        } else {
            (min * 0.1).max(1.0)
        };
        // Whole-nanosecond data binned finer than 1 ns would alternate full
        // and empty bins: never go below 1 ns then.
        let integral = stats
            .iter()
            .all(|(_, values, _)| values.iter().all(|v| v.fract() == 0.0));
        let width = nice_step(span / DURATION_BINS);
        let width = if integral { width.max(1.0) } else { width };
        let lo = (min / width).floor() * width;
        let nbins = (((top - lo) / width).floor() as usize + 1).max(1);

        let mut hists = Vec::new();
        let mut beyond_total = 0usize;
        let mut total = 0usize;
        let mut y_max: f64 = 0.0;
        for (label, values, st) in &stats {
            let mut counts = vec![0u64; nbins];
            let mut beyond = 0usize;
            for &v in values.iter() {
                let idx = ((v - lo) / width) as usize;
                match counts.get_mut(idx) {
                    Some(c) => *c += 1,
                    None => beyond += 1,
                }
            }
            let n = values.len() as f64;
            let pct: Vec<f64> = counts.iter().map(|&c| 100.0 * c as f64 / n).collect();
            y_max = pct.iter().copied().fold(y_max, f64::max);
            beyond_total += beyond;
            total += values.len();
            hists.push(Hist {
                label: format!(
                    "{label}: n={}, median {} ns",
                    fmt_count(values.len()),
                    TickFmt::new(0.0, st.median, false).fmt(st.median)
                ),
                pct,
            });
        }
        let notes = vec![
            format!(
                "x axis clipped at the largest per-group 99.5th percentile ({} ns)",
                TickFmt::new(0.0, top, false).fmt(top),
            ),
            format!(
                "{} of {} durations ({:.2}%) lie beyond it and are not drawn; bin width {} ns",
                fmt_count(beyond_total),
                fmt_count(total),
                100.0 * beyond_total as f64 / total as f64,
                TickFmt::new(0.0, 10.0 * width, false).fmt(width),
            ),
        ];
        Ok(Self {
            title: title.to_string(),
            hists,
            lo,
            width,
            y_max: if y_max > 0.0 { y_max * 1.12 } else { 1.0 },
            notes,
        })
    }

    fn hi(&self) -> f64 {
        self.lo + self.width * self.hists.first().map_or(1, |h| h.pct.len()) as f64
    }
}

impl Figure for Durations {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let area = header(root, &self.title, &self.notes)?;
        let (lo, hi) = (self.lo, self.hi());
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
                let x0 = lo + b as f64 * self.width;
                steps.push((x0, p));
                steps.push((x0 + self.width, p));
                if p > 0.0 {
                    legend_points.push((frac(x0, lo, hi), frac(p, 0.0, self.y_max)));
                }
            }
            steps.push((hi, 0.0));
            chart
                .draw_series(LineSeries::new(steps, colour.stroke_width(2)))?
                .label(h.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
        }
        let plot_h = f64::from(chart.plotting_area().dim_in_pixel().1);
        let pos = legend_corner(&legend_points, legend_h_frac(self.hists.len(), plot_h));
        legend_style(&mut chart, pos)
    }
}

// ---------------------------------------------------------------- paired traces

struct Paired {
    title: String,
    traces: Vec<PairedTrace>,
    x: (f64, f64),
    y: (f64, f64),
}

impl Paired {
    fn prepare(title: &str, traces: &[PairedTrace], file: &Path) -> Result<Self, PlotError> {
        let mut xe = Extent::empty();
        let mut ye = Extent::empty();
        let mut kept = Vec::new();
        for t in traces {
            let what = |field: &str| format!("trace '{}' {field}", t.label);
            let n = t.t_s.len();
            check_len(file, &what("rate"), ("rate", t.rate.len()), ("t_s", n))?;
            check_len(
                file,
                &what("sampling"),
                ("sampling", t.sampling.len()),
                ("t_s", n),
            )?;
            check_finite(file, &what("t_s"), &t.t_s)?;
            check_finite(file, &what("rate"), &t.rate)?;
            if n == 0 {
                tracing::warn!(trace = %t.label, plot = %file.display(), "paired trace has no phases; left out of the plot");
                continue;
            }
            t.t_s.iter().for_each(|&v| xe.add(v));
            t.rate.iter().for_each(|&v| ye.add(v));
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
        Ok(Self {
            title: title.to_string(),
            traces: kept,
            x,
            y,
        })
    }

    fn colours(&self, i: usize) -> (RGBColor, RGBColor) {
        if self.traces.len() == 1 {
            (PALETTE[1], PALETTE[0])
        } else {
            let c = PALETTE[i % PALETTE.len()];
            (c, c)
        }
    }
}

/// Legend rows of a paired plot (see `Paired::draw`).
fn paired_legend_entries(traces: &[PairedTrace]) -> usize {
    if traces.len() == 1 {
        let on = traces[0].sampling.iter().any(|&s| s);
        let off = traces[0].sampling.iter().any(|&s| !s);
        usize::from(on) + usize::from(off)
    } else {
        traces.len() + 2
    }
}

impl Figure for Paired {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let area = header(root, &self.title, &[])?;
        let x_fmt = TickFmt::new(self.x.0, self.x.1, false);
        let mut chart = framed_chart(
            &area,
            self.x.0..self.x.1,
            self.y,
            ("time since run start (s)", "loop rate (loops/s)"),
            &move |v: &f64| x_fmt.fmt(*v),
            TickFmt::new(self.y.0, self.y.1, true),
            8,
        )?;
        let mut legend_points = Vec::new();
        // One trace: legend "label: sampling on/off" in two colours. Several:
        // one colour per trace, and the marker legend given once, in grey, so
        // the legend grows by one row per trace rather than two.
        let single = self.traces.len() == 1;
        for (i, t) in self.traces.iter().enumerate() {
            let (on_c, off_c) = self.colours(i);
            let prefix = if t.label.is_empty() {
                String::new()
            } else {
                format!("{}: ", t.label)
            };
            for on in [true, false] {
                let pts: Vec<(f64, f64)> = (0..t.t_s.len())
                    .filter(|&j| t.sampling[j] == on)
                    .map(|j| (t.t_s[j], t.rate[j]))
                    .collect();
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
                let anno = if on {
                    chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, colour.filled())))?
                } else {
                    chart.draw_series(pts.iter().map(|&p| {
                        EmptyElement::at(p)
                            + Rectangle::new([(-4, -4), (4, 4)], colour.stroke_width(2))
                    }))?
                };
                if single {
                    let label = format!("{prefix}sampling {}", if on { "on" } else { "off" });
                    anno.label(label).legend(move |(x, y)| {
                        if on {
                            Circle::new((x + 10, y), 4, colour.filled()).into_dyn()
                        } else {
                            Rectangle::new(
                                [(x + 6, y - 4), (x + 14, y + 4)],
                                colour.stroke_width(2),
                            )
                            .into_dyn()
                        }
                    });
                }
            }
            if !single {
                chart
                    .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
                    .label(t.label.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], on_c.stroke_width(3))
                    });
            }
        }
        if !single {
            let grey = RGBColor(90, 90, 90);
            for on in [true, false] {
                chart
                    .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
                    .label(if on { "sampling on" } else { "sampling off" })
                    .legend(move |(x, y)| {
                        if on {
                            Circle::new((x + 10, y), 4, grey.filled()).into_dyn()
                        } else {
                            Rectangle::new([(x + 6, y - 4), (x + 14, y + 4)], grey.stroke_width(2))
                                .into_dyn()
                        }
                    });
            }
        }
        let entries = paired_legend_entries(&self.traces);
        let plot_h = f64::from(chart.plotting_area().dim_in_pixel().1);
        let pos = legend_corner(&legend_points, legend_h_frac(entries, plot_h));
        legend_style(&mut chart, pos)
    }
}

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
