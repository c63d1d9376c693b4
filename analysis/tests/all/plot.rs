//! The plots: each function writes an SVG and a 1000x650 PNG from realistic
//! data, and refuses empty or non-finite input with an error naming the file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use analysis::plot::{
    Axes, FitLine, PNG_SIZE, PairedTrace, Phase, PlotError, Point, PointSeries, plot_durations,
    plot_paired, plot_vs_freq,
};

const FREQS: [f64; 7] = [100.0, 250.0, 1000.0, 2500.0, 10_000.0, 25_000.0, 100_000.0];

/// Output directory: a fresh temporary one, or `$PLOT_TEST_OUT` to keep the
/// files for looking at them.
fn out_dir() -> (Option<tempfile::TempDir>, PathBuf) {
    match std::env::var_os("PLOT_TEST_OUT") {
        Some(d) => (None, PathBuf::from(d)),
        None => {
            let t = tempfile::tempdir().unwrap();
            let p = t.path().to_path_buf();
            (Some(t), p)
        }
    }
}

/// All text of an SVG written by plotters (each `<text>` element holds its
/// string on its own line), joined by spaces: wrapped notes read as one.
fn svg_text(svg: &str) -> String {
    svg.split("</text>")
        .filter_map(|chunk| chunk.rsplit_once('>'))
        .map(|(_, text)| text.trim())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Width and height from the PNG signature and IHDR chunk.
fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap();
    assert!(
        bytes.len() > 33,
        "{} is too short for a PNG",
        path.display()
    );
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} lacks the PNG signature",
        path.display()
    );
    assert_eq!(
        &bytes[12..16],
        b"IHDR",
        "{}: first chunk is not IHDR",
        path.display()
    );
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    (w, h)
}

fn check_outputs(paths: &[PathBuf], stem: &Path, texts: &[&str]) -> String {
    let svg = PathBuf::from(format!("{}.svg", stem.display()));
    let png = PathBuf::from(format!("{}.png", stem.display()));
    assert_eq!(paths, [svg.clone(), png.clone()]);
    assert_eq!(png_size(&png), PNG_SIZE);
    // A blank 1000x650 PNG compresses to a few kB; a drawn plot does not.
    let png_len = std::fs::metadata(&png).unwrap().len();
    assert!(
        png_len > 10_000,
        "{} is only {png_len} bytes",
        png.display()
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "{} is not an SVG", svg.display());
    for t in texts {
        assert!(text.contains(t), "{} lacks the text {t:?}", svg.display());
    }
    text
}

/// Utilisation grows linearly with frequency: ~0.015 % per 100 Hz.
fn util_series() -> (PointSeries, PointSeries, FitLine) {
    let y: Vec<f64> = FREQS
        .iter()
        .map(|f| 0.02 + 1.5e-4 * f * (1.0 + 0.03 * (f.ln().sin())))
        .collect();
    let measured = PointSeries::with_bars(
        "this host (median of 5 runs)",
        FREQS
            .iter()
            .zip(&y)
            .map(|(&x, &y)| [x, y, y * 0.93, y * 1.07]),
    );
    let reference = PointSeries::new(
        "2014 reference",
        [
            (100.0, 0.05),
            (1000.0, 0.4),
            (10_000.0, 3.8),
            (100_000.0, 15.0),
        ],
    );
    let fit = FitLine {
        label: "fit: util = 0.02 + 1.5e-4 * freq".into(),
        intercept: 0.02,
        slope: 1.5e-4,
        band: FREQS
            .iter()
            .map(|x| (*x, 0.01 + 1.4e-4 * x, 0.03 + 1.6e-4 * x))
            .collect(),
        ..FitLine::default()
    };
    (measured, reference, fit)
}

#[test]
fn utilisation_vs_log_frequency_writes_svg_and_png() {
    let (_keep, dir) = out_dir();
    let stem = dir.join("nested/util_vs_freq");
    let (measured, reference, fit) = util_series();
    let paths = plot_vs_freq(
        "Sampling cost: utilisation vs frequency",
        ("sample_freq (Hz)", "handler utilisation (%)"),
        &[measured, reference],
        &[fit],
        Axes::LOG_X,
        &stem,
    )
    .unwrap();
    let svg = check_outputs(
        &paths,
        &stem,
        &[
            "Sampling cost: utilisation vs frequency",
            "sample_freq (Hz)",
            "handler utilisation (%)",
            "2014 reference",
            "fit: util = 0.02 + 1.5e-4 * freq",
            "fit: util = 0.02 + 1.5e-4 * freq: confidence band",
        ],
    );
    // Decade ticks on the log axis, in compact form.
    for tick in [">\n100\n<", ">\n1k\n<", ">\n10k\n<", ">\n100k\n<"] {
        assert!(svg.contains(tick), "log axis lacks tick {tick}");
    }
    // No "not shown" note when every x is positive, and no extrapolation
    // note when the band spans every point.
    assert!(!svg.contains("not shown"));
    assert!(!svg.contains("extrapolated"));
}

/// Utilisation from 100 Hz to 100 kHz spans three decades: on a log y axis
/// the lowest rates are off the floor, ticks read as plain values, and a
/// point at y <= 0 is left out with a note.
#[test]
fn utilisation_on_log_log_axes_shows_the_low_rates() {
    let (_keep, dir) = out_dir();
    let stem = dir.join("util_log_log");
    let (mut measured, reference, fit) = util_series();
    measured.points.push(Point {
        x: 50.0,
        y: -0.001,
        lo: -0.002,
        hi: 0.001,
    });
    let paths = plot_vs_freq(
        "Utilisation, log-log",
        ("sample_freq (Hz)", "handler utilisation (%, log scale)"),
        &[measured, reference],
        &[fit],
        Axes {
            log_x: true,
            log_y: true,
            y_include: None,
        },
        &stem,
    )
    .unwrap();
    let svg = check_outputs(&paths, &stem, &["Utilisation, log-log", "2014 reference"]);
    let text = svg_text(&svg);
    assert!(
        text.contains("1 point(s) with handler utilisation (%, log scale) &lt;= 0 not shown"),
        "{text}"
    );
    // Decade ticks on the y axis, written as values (0.1 % up to 10 %).
    for tick in [">\n0.1\n<", ">\n1\n<", ">\n10\n<"] {
        assert!(svg.contains(tick), "log y axis lacks tick {tick}");
    }
}

#[test]
fn fit_beyond_its_band_is_drawn_dashed_and_noted() {
    let (_keep, dir) = out_dir();
    let stem = dir.join("util_extrapolated");
    let (measured, reference, mut fit) = util_series();
    // The band (the measured range) covers 1k..10k only.
    fit.band.retain(|b| (1000.0..=10_000.0).contains(&b.0));
    let paths = plot_vs_freq(
        "Extrapolated fit",
        ("sample_freq (Hz)", "handler utilisation (%)"),
        &[measured, reference],
        &[fit],
        Axes::LOG_X,
        &stem,
    )
    .unwrap();
    let svg = check_outputs(&paths, &stem, &["Extrapolated fit"]);
    assert!(
        svg_text(&svg).contains("dashed: fit extrapolated beyond the range of its confidence band"),
        "no extrapolation note"
    );
}

#[test]
fn loss_vs_linear_frequency_with_error_bars() {
    let (_keep, dir) = out_dir();
    let stem = dir.join("loss");
    let x = [1000.0, 5000.0, 10_000.0, 20_000.0, 40_000.0];
    let y = [0.0, 0.1, 0.4, 1.1, 2.9];
    let series = PointSeries::with_bars(
        "records lost",
        x.iter()
            .zip(y)
            .map(|(&x, y)| [x, y, (y - 0.2_f64).max(0.0), y + 0.2]),
    );
    let fit = FitLine {
        label: "linear fit".into(),
        intercept: -0.3,
        slope: 7.5e-5,
        ..FitLine::default()
    };
    let paths = plot_vs_freq(
        "Record loss",
        ("sample_freq (Hz)", "loss_pct (%)"),
        &[series],
        &[fit],
        Axes::LINEAR,
        &stem,
    )
    .unwrap();
    check_outputs(
        &paths,
        &stem,
        &[
            "Record loss",
            "sample_freq (Hz)",
            "loss_pct (%)",
            "linear fit",
        ],
    );
}

#[test]
fn non_positive_x_on_log_axis_is_skipped_and_noted() {
    let (_keep, dir) = out_dir();
    let stem = dir.join("skip");
    let s = PointSeries::new(
        "with a zero",
        [(0.0, 0.0), (100.0, 0.1), (1000.0, 1.0), (10_000.0, 10.0)],
    );
    let paths = plot_vs_freq(
        "Skip",
        ("freq (Hz)", "util (%)"),
        std::slice::from_ref(&s),
        &[],
        Axes::LOG_X,
        &stem,
    )
    .unwrap();
    check_outputs(
        &paths,
        &stem,
        &["1 point(s) with freq (Hz) &lt;= 0 not shown (log axis)"],
    );

    let only_zero = PointSeries::new(s.label, [(0.0, 1.0), (-5.0, 2.0)]);
    let err = plot_vs_freq(
        "Skip",
        ("freq (Hz)", "util (%)"),
        &[only_zero],
        &[],
        Axes::LOG_X,
        &stem,
    )
    .unwrap_err();
    assert!(matches!(err, PlotError::NoData { .. }), "{err:?}");
    assert!(
        err.to_string().contains("all 2 points have x <= 0"),
        "{err}"
    );
}

#[test]
fn empty_and_bad_vs_freq_input_is_a_clear_error() {
    let (_keep, dir) = out_dir();
    let stem = dir.join("bad");
    let err = plot_vs_freq("t", ("x", "y"), &[], &[], Axes::LOG_X, &stem).unwrap_err();
    assert!(matches!(err, PlotError::NoData { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&stem.display().to_string()),
        "{err}"
    );
    assert!(!stem.with_extension("svg").exists());

    let (mut measured, _, fit) = util_series();
    measured.points[3].y = f64::NAN;
    let err = plot_vs_freq(
        "t",
        ("x", "y"),
        &[measured.clone()],
        &[],
        Axes::LOG_X,
        &stem,
    )
    .unwrap_err();
    match &err {
        PlotError::NonFinite { what, index, .. } => {
            assert_eq!(*index, 3);
            assert!(what.contains("this host"), "{what}");
        }
        other => panic!("expected NonFinite, got {other:?}"),
    }
    assert!(err.to_string().contains("[3] is NaN"), "{err}");

    let mut bad_fit = fit;
    bad_fit.slope = f64::INFINITY;
    let err = plot_vs_freq("t", ("x", "y"), &[], &[bad_fit], Axes::LOG_X, &stem).unwrap_err();
    assert!(err.to_string().contains("slope[0] is inf"), "{err}");
}

/// Deterministic long-tailed durations: 1000 ns floor plus an exponential
/// tail with mean `mean_ns` (inverse CDF at evenly spaced quantiles).
fn durations(n: usize, mean_ns: f64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let u = (i as f64 + 0.5) / n as f64;
            1000.0 + mean_ns * -(1.0 - u).ln()
        })
        .collect()
}

#[test]
fn durations_of_a_million_values_clip_at_p995() {
    let (_keep, dir) = out_dir();
    let stem = dir.join("durations");
    let groups = vec![
        ("1000 Hz".to_string(), durations(1_000_000, 200.0)),
        ("10000 Hz".to_string(), durations(200_000, 150.0)),
    ];
    // Its speed is shown, not asserted (a timed assertion fails on a
    // loaded host for no fault of the code).
    let started = Instant::now();
    let paths = plot_durations("Handler duration by sample_freq", &groups, &stem).unwrap();
    eprintln!(
        "plot_durations of 1.2M values (SVG + PNG): {:?}",
        started.elapsed()
    );

    let svg = check_outputs(
        &paths,
        &stem,
        &[
            "Handler duration by sample_freq",
            "handler duration (ns)",
            "share of handler runs per bin (%)",
            "1000 Hz: n=1,000,000",
            "10000 Hz: n=200,000",
        ],
    );
    // The clip point is the larger group's p99.5, computed here by sorting.
    let mut sorted = groups[0].1.clone();
    sorted.sort_by(f64::total_cmp);
    let p995 = sorted[(0.995 * sorted.len() as f64).ceil() as usize - 1];
    let text = svg_text(&svg);
    let note = format!("99.5th percentile ({:.0} ns)", p995);
    assert!(text.contains(&note), "SVG lacks {note:?}");
    // What lies beyond is stated, and is at most 0.5 % of all values.
    let pct: f64 = text
        .split("durations (")
        .nth(1)
        .and_then(|s| s.split('%').next())
        .expect("clip note with a percentage")
        .parse()
        .unwrap();
    assert!(pct > 0.0 && pct <= 0.5, "beyond share {pct}%");
    // Medians in the legend match sorting too.
    let median = sorted[(sorted.len() - 1) / 2];
    assert!(
        svg.contains(&format!("median {:.0} ns", median)),
        "median {median}"
    );
}

#[test]
fn bad_durations_are_a_clear_error() {
    let (_keep, dir) = out_dir();
    let stem = dir.join("d");
    let err = plot_durations("t", &[], &stem).unwrap_err();
    assert!(matches!(err, PlotError::NoData { .. }), "{err:?}");
    let err = plot_durations("t", &[("1 kHz".into(), vec![])], &stem).unwrap_err();
    assert!(
        err.to_string().contains("all 1 duration groups are empty"),
        "{err}"
    );
    let err =
        plot_durations("t", &[("1 kHz".into(), vec![10.0, f64::INFINITY])], &stem).unwrap_err();
    assert!(err.to_string().contains("group '1 kHz'[1] is inf"), "{err}");
    let err = plot_durations("t", &[("1 kHz".into(), vec![10.0, -3.0])], &stem).unwrap_err();
    assert!(err.to_string().contains("cannot be negative"), "{err}");
    assert!(!dir.join("d.png").exists());
}

#[test]
fn a_single_duration_value_still_plots() {
    let (_keep, dir) = out_dir();
    let stem = dir.join("one");
    let paths = plot_durations("One", &[("100 Hz".into(), vec![1234.0])], &stem).unwrap();
    check_outputs(&paths, &stem, &["One", "100 Hz: n=1, median 1234 ns"]);
}

fn paired_trace(label: &str, base: f64) -> PairedTrace {
    // 40 phases of 1.5 s alternating on/off; the rate drifts down 2 % over
    // the run and sampling costs 1 %.
    let phase = |i: u32| {
        let (t_s, sampling) = (0.75 + 1.5 * f64::from(i), i.is_multiple_of(2));
        let rate = base * (1.0 - 0.02 * t_s / 60.0) * if sampling { 0.99 } else { 1.0 };
        Phase {
            t_s,
            rate,
            sampling,
        }
    };
    PairedTrace {
        label: label.into(),
        phases: (0..40).map(phase).collect(),
    }
}

#[test]
fn paired_traces_show_on_and_off_phases() {
    let (_keep, dir) = out_dir();
    let stem = dir.join("paired");
    let one = [paired_trace("10 kHz", 1.2e8)];
    let paths = plot_paired("Paired run at 10 kHz", &one, &stem).unwrap();
    let svg = check_outputs(
        &paths,
        &stem,
        &[
            "Paired run at 10 kHz",
            "time since run start (s)",
            "loop rate (loops/s)",
            "10 kHz: sampling on",
            "10 kHz: sampling off",
        ],
    );
    // Rates around 1.2e8 get SI tick labels.
    assert!(svg.contains("M\n</text>"), "no M-suffixed tick label");

    let stem2 = dir.join("paired2");
    let two = [paired_trace("1 kHz", 1.2e8), paired_trace("10 kHz", 1.19e8)];
    let paths = plot_paired("Two paired runs", &two, &stem2).unwrap();
    // Several traces: one legend row per trace plus the two markers once.
    let svg = check_outputs(
        &paths,
        &stem2,
        &["1 kHz", "10 kHz", "sampling on", "sampling off"],
    );
    assert!(!svg.contains("1 kHz: sampling"), "per-trace marker rows");
}

#[test]
fn bad_paired_input_is_a_clear_error() {
    let (_keep, dir) = out_dir();
    let stem = dir.join("p");
    let err = plot_paired("t", &[], &stem).unwrap_err();
    assert!(matches!(err, PlotError::NoData { .. }), "{err:?}");
    let mut t = paired_trace("x", 1e8);
    t.phases[7].rate = f64::NAN;
    let err = plot_paired("t", &[t], &stem).unwrap_err();
    assert!(
        err.to_string().contains("trace 'x' rate[7] is NaN"),
        "{err}"
    );
}

#[test]
fn degenerate_ranges_still_plot() {
    let (_keep, dir) = out_dir();
    // One point: zero-width x and y ranges on a log axis.
    let one = PointSeries::new("single", [(1000.0, 0.5)]);
    let stem = dir.join("one_point");
    let paths = plot_vs_freq(
        "One point",
        ("f (Hz)", "u (%)"),
        &[one],
        &[],
        Axes::LOG_X,
        &stem,
    )
    .unwrap();
    check_outputs(&paths, &stem, &["One point", "single"]);
    // A constant rate of zero and a single phase.
    let phase = |t_s, sampling| Phase {
        t_s,
        rate: 0.0,
        sampling,
    };
    let flat = PairedTrace {
        label: "flat".into(),
        phases: vec![phase(0.0, true), phase(1.0, false)],
    };
    let stem = dir.join("flat");
    let paths = plot_paired("Flat", &[flat], &stem).unwrap();
    check_outputs(&paths, &stem, &["flat: sampling on", "flat: sampling off"]);
}

#[test]
fn whole_nanosecond_durations_are_not_binned_finer_than_1_ns() {
    let (_keep, dir) = out_dir();
    let stem = dir.join("narrow");
    // 40 ns of spread in whole ns: 100 bins would be 0.5 ns wide.
    let values: Vec<f64> = (0..10_000)
        .map(|i| f64::from(1000 + (i * 7) % 41))
        .collect();
    let paths = plot_durations("Narrow", &[("1 kHz".into(), values)], &stem).unwrap();
    let svg = check_outputs(&paths, &stem, &["Narrow"]);
    assert!(
        svg_text(&svg).contains("bin width 1 ns"),
        "bin width not 1 ns"
    );
}

/// The budget plot's pieces: a curve drawn as given with its band named
/// in the legend, a line labelled at its end instead of in the legend, and
/// a bar whose lower end is below 0 on a log axis, ending in an arrow.
#[test]
fn a_curve_an_end_label_and_a_cut_bar_on_log_axes() {
    let (_keep, dir) = out_dir();
    let stem = dir.join("budget_like");
    let points = PointSeries::with_bars(
        "paired loss",
        [
            [100.0, 0.2, -0.1, 0.5],
            [1000.0, 1.2, 1.0, 1.4],
            [10_000.0, 11.0, 10.0, 12.0],
        ],
    );
    // A step in cost at 1 kHz: no straight line.
    let cost = |f: f64| if f < 1000.0 { 1.3e-3 } else { 1.1e-3 };
    let grid: Vec<f64> = (0..=40)
        .map(|i| 100.0 * 100f64.powf(f64::from(i) / 40.0))
        .collect();
    let model = FitLine {
        label: "model curve".into(),
        intercept: 0.0,
        slope: 0.0,
        band: (grid.iter())
            .map(|&f| (f, 0.9 * f * cost(f), 1.1 * f * cost(f)))
            .collect(),
        curve: grid.iter().map(|&f| (f, f * cost(f))).collect(),
        band_label: "the next run interval".into(),
        ..FitLine::default()
    };
    let budget = FitLine {
        label: "budget 1 %".into(),
        intercept: 1.0,
        slope: 0.0,
        label_at_end: true,
        ..FitLine::default()
    };
    let paths = plot_vs_freq(
        "budget-like",
        ("rate (Hz)", "loss (%)"),
        &[points],
        &[model, budget],
        Axes {
            log_x: true,
            log_y: true,
            y_include: None,
        },
        &stem,
    )
    .unwrap();
    let svg = check_outputs(
        &paths,
        &stem,
        &["model curve", "the next run interval", "budget 1 %"],
    );
    // The curve is drawn as given: one polyline through its 41 points.
    assert!(
        svg.lines()
            .any(|l| l.contains("<polyline") && l.matches(',').count() == 41),
        "{svg}"
    );
    // Named once: at the line's end, not also in the legend; the band is
    // not called a confidence band.
    assert_eq!(svg.matches("budget 1 %").count(), 1, "{svg}");
    assert!(!svg.contains("confidence band"), "{svg}");
    // The 100 Hz bar's lower end is cut: an arrow (a three-point path)
    // instead of a two-point cap.
    let three_point_paths = svg
        .lines()
        .filter(|l| l.contains("<polyline") && l.matches(',').count() == 3)
        .count();
    assert!(three_point_paths >= 1, "{svg}");
}
