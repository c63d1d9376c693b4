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
