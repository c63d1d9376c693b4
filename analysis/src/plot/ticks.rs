//! Tick positions and labels: nice linear steps, log decades, compact
//! and significant-digit labels.

/// 1, 2 or 5 times a power of ten, the smallest such >= `raw`.
pub(super) fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 || raw.is_infinite() {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let m = raw / mag;
    let f = [1.0, 2.0, 5.0].into_iter().find(|&f| m <= f);
    f.unwrap_or(10.0) * mag
}

/// Tick label formatting chosen once per axis from its range: an SI prefix
/// when values are large, and as many decimals as the tick spacing needs.
#[derive(Debug, Clone, Copy)]
pub(super) struct TickFmt {
    scale: f64,
    suffix: &'static str,
    decimals: usize,
    /// The axis holds log10 of the values: a tick at v is labelled 10^v.
    log10: bool,
}

impl TickFmt {
    pub(super) fn new(lo: f64, hi: f64, si: bool) -> Self {
        let max_abs = lo.abs().max(hi.abs());
        // (from, scale, suffix): thousands from 10 000 up.
        let si_scales = [(1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")];
        let si_scale = si_scales.into_iter().find(|t| si && max_abs >= t.0);
        let (scale, suffix) = si_scale.map_or((1.0, ""), |t| (t.1, t.2));
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
    pub(super) fn log10() -> Self {
        Self {
            log10: true,
            ..Self::new(0.0, 0.0, false)
        }
    }
    pub(super) fn fmt(&self, v: f64) -> String {
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
pub(super) fn y_label_area(fmt: &TickFmt, (lo, hi): (f64, f64)) -> u32 {
    let widest = [lo, hi, (lo + hi) / 2.0]
        .iter()
        .map(|v| fmt.fmt(*v).chars().count())
        .max()
        .unwrap_or(1);
    // Tick digits are ~10 px wide at TICK_PX; the description needs ~35 px.
    40 + 10 * widest as u32
}

/// Two significant digits, no exponent: 0.0032, 0.1, 3.2, 320, 4500.
pub(super) fn fmt_significant(v: f64) -> String {
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
pub(super) fn fmt_log_tick(v: f64) -> String {
    let si = [(1e6, "M"), (1e3, "k")].into_iter().find(|t| v >= t.0);
    let (scale, suffix) = si.unwrap_or((1.0, ""));
    let s = format!("{:.3}", v / scale);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{suffix}")
}

/// Tick positions for a log10 axis over [lo, hi] (lo > 0): labelled ticks
/// at powers of ten (or 1-2-5 steps when the range spans less than a
/// decade), grid-only ticks at the other integer multiples.
pub(super) fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
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
    let at = |ms: &[i32]| -> Vec<f64> {
        all.iter()
            .filter(|(m, _)| ms.contains(m))
            .map(|p| p.1)
            .collect()
    };
    let light = at(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // The decades, else 1-2-5, else every tick, whichever first gives two.
    let bold = [at(&[1]), at(&[1, 2, 5])]
        .into_iter()
        .find(|b| b.len() >= 2);
    (bold.unwrap_or_else(|| light.clone()), light)
}
