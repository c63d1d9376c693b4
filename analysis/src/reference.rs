//! The 2014 article's published tables, shipped as data in
//! results/reference/article-2014/ (see its README for provenance) and
//! embedded here so every report can show them.

use crate::error::AnalysisError;

/// The article's stated factor: util % = delta x f_kHz.
pub const ARTICLE_DELTA_PCT_PER_KHZ: f64 = 0.157_431_335_4;

const UTIL_CSV: &str = include_str!("../../results/reference/article-2014/util.csv");
const LOSS_CSV: &str = include_str!("../../results/reference/article-2014/loss.csv");
const UTIL_PATH: &str = "results/reference/article-2014/util.csv";
const LOSS_PATH: &str = "results/reference/article-2014/loss.csv";

/// The committed main set whose host is the reference host.
pub const REFERENCE_HOST_SET: &str = "results/20261126T0217Z-vm";
/// Its host's traits, probed on the same VM after that set
/// (results/reference/host-vm/README.md), as manifest.json's `host`.
pub const REFERENCE_HOST: &str = include_str!("../../results/reference/host-vm/traits.json");

/// The article's two tables.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// (freq_hz, util_pct)
    pub util: Vec<(u64, f64)>,
    /// (freq_hz, loss_pct), the loss as printed (rounded to 2 decimals by
    /// the author).
    pub loss: Vec<(u64, f64)>,
}

/// A line of loss.csv: freq_hz, the five runs' iterations, their mean,
/// loss_pct.
type LossLine = (u64, [u64; 5], f64, f64);

impl Reference {
    /// The embedded copy of results/reference/article-2014.
    pub fn article_2014() -> Result<Self, AnalysisError> {
        let loss: Vec<LossLine> = read(LOSS_CSV, LOSS_PATH)?;
        Ok(Self {
            loss: loss.into_iter().map(|(f, _, _, pct)| (f, pct)).collect(),
            util: read(UTIL_CSV, UTIL_PATH)?,
        })
    }

    /// Utilisation at a frequency, if the article measured it.
    pub fn util_at(&self, freq_hz: u64) -> Option<f64> {
        at(&self.util, freq_hz)
    }

    /// Loss at a frequency, if the article measured it.
    pub fn loss_at(&self, freq_hz: u64) -> Option<f64> {
        at(&self.loss, freq_hz)
    }
}

/// The value of `table` at `freq_hz`.
fn at(table: &[(u64, f64)], freq_hz: u64) -> Option<f64> {
    table.iter().find(|(f, _)| *f == freq_hz).map(|(_, v)| *v)
}

/// The rows of the embedded CSV `text` (from `path`).
fn read<T: serde::de::DeserializeOwned>(text: &str, path: &str) -> Result<Vec<T>, AnalysisError> {
    let rows = csv::Reader::from_reader(text.as_bytes()).into_deserialize();
    rows.collect::<Result<_, _>>()
        .map_err(|e| AnalysisError::corrupt(path, e))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn reference_tables_are_self_consistent() {
        let r = Reference::article_2014().unwrap();
        assert_eq!(r.util.len(), 5);
        assert_eq!(r.loss.len(), 6);
        let lines: Vec<LossLine> = read(LOSS_CSV, LOSS_PATH).unwrap();
        let base = lines[0].2;
        for (_, runs, mean, loss_pct) in lines {
            let m = runs.iter().sum::<u64>() as f64 / 5.0;
            assert!((m - mean).abs() < 0.11, "{} {}", m, mean);
            // The printed loss is 1 - mean/mean0 rounded to 2 decimals.
            let loss = 100.0 * (1.0 - mean / base);
            assert!((loss - loss_pct).abs() < 0.006, "{} vs {}", loss, loss_pct);
        }
        assert_eq!(r.util_at(4000), Some(0.5585349));
    }
}
