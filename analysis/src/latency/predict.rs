//! `analysis latency`: what sampling at the rates asked adds to the
//! percentiles of a request of one size, predicted by the model of a set's
//! gaps runs ([`super::at_rate::AtSize::added`]). For a request size that
//! no table of the report shows, such as a real server's measured service
//! time.

use serde::Serialize;

use super::at_rate::Model;
use crate::stats::Estimate;

/// One rate and percentile of the prediction.
#[derive(Debug, Clone, Serialize)]
pub struct Prediction {
    /// The rate asked, Hz.
    pub rate_hz: f64,
    /// The percentile, %.
    pub percentile: f64,
    /// The request's work, ns.
    pub size_ns: u64,
    /// The percentile at 0 Hz, mean over the blocks that resolve it, ns
    /// (None where none does).
    pub baseline_ns: Option<f64>,
    /// What sampling at the rate adds to it, ns, with its 95 % interval
    /// over blocks (None where not resolved).
    pub added_ns: Option<Estimate>,
    /// The measured rate whose per-sample costs stand for the rate asked.
    pub basis_hz: Option<u64>,
}

/// A time with its unit, ns (`1ms`, `100us`, `2.5s`), through the
/// workspace's one duration parser; a bare number is refused here (a
/// request size or a limit says its unit).
pub fn time_ns(s: &str) -> Option<f64> {
    let s = s.trim();
    if !s.ends_with(|c: char| c.is_ascii_alphabetic() || c == 'µ') {
        return None;
    }
    workload::duration::parse_duration(s)
        .ok()
        .map(|d| d.as_nanos() as f64)
}

/// `analysis latency`'s flags: the size in ns, or the one-line error
/// (exit 2) naming the value and the form.
pub fn parse_request(size: &str, rates: &[f64], percentiles: &[f64]) -> Result<u64, String> {
    let Some(size_ns) = time_ns(size).filter(|&x| x >= 1.0) else {
        return Err(format!(
            "--size `{size}`: expected a time above 0 with its unit, e.g. --size 1ms or 250us"
        ));
    };
    if let Some(r) = rates.iter().find(|r| !(r.is_finite() && **r > 0.0)) {
        return Err(format!(
            "--rates {r}: expected rates in Hz above 0, e.g. --rates 99,999,3999"
        ));
    }
    if let Some(p) = percentiles.iter().find(|p| !(1.0..=99.99).contains(*p)) {
        return Err(format!(
            "--percentiles {p}: expected percentiles from 1 to 99.99, e.g. --percentiles 50,99,99.9"
        ));
    }
    Ok(size_ns.round() as u64)
}

/// The prediction at each of `rates_hz` and `percentiles` for requests of
/// `size_ns` (checked with [`Model::check_size`] first).
pub fn predict(
    model: &Model,
    size_ns: u64,
    rates_hz: &[f64],
    percentiles: &[f64],
) -> Vec<Prediction> {
    let at = percentiles.iter().map(|&p| (p, model.at_size(size_ns, p)));
    at.flat_map(|(percentile, at)| {
        rates_hz.iter().map(move |&rate_hz| Prediction {
            rate_hz,
            percentile,
            size_ns,
            baseline_ns: at.is_resolved().then(|| at.baseline_ns()),
            added_ns: at.added(rate_hz),
            basis_hz: model.basis_hz(rate_hz),
        })
    })
    .collect()
}

/// The predictions as a Markdown table.
pub fn markdown(rows: &[Prediction]) -> String {
    let header =
        "rate Hz | percentile | size us | at 0 Hz us | added us [95% CI] | costs measured at Hz";
    let us = |x: f64| format!("{:.1}", x / 1e3);
    crate::columns::markdown_table(
        header,
        rows.iter().map(|r| {
            format!(
                "{} | p{} | {} | {} | {} | {}",
                r.rate_hz,
                r.percentile,
                us(r.size_ns as f64),
                r.baseline_ns.map_or("-".into(), us),
                r.added_ns.map_or("not resolved".into(), |e| format!(
                    "{:+.1} [{:+.1}, {:+.1}]",
                    e.value / 1e3,
                    e.lo / 1e3,
                    e.hi / 1e3
                )),
                r.basis_hz.map_or("-".into(), |b| b.to_string()),
            )
        }),
    )
}
