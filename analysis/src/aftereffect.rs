//! The after-effect of a sample measured from throughput: what the
//! workload loses per sample in the paired design (sampling switched on
//! and off within a run, so the host's drift cancels) minus what the gaps
//! design measures inside the interrupt (the direct cost). The remainder is
//! everything the interrupt costs after it has returned: caches and TLB
//! refilled by the loop, the slower clock of a core that was busy. It needs
//! no model of the loop's recovery, so it checks the timeline's own
//! after-effect (chunks after a gap against the run's speed beyond a
//! horizon), which is biased for loops whose chunk times are irregular
//! (a pointer chase beyond the caches).

use crate::columns::lo_hi;
use crate::contents::ConfigTables;
use crate::stats::{Estimate, difference};

/// One configuration and rate with both paired and gaps runs (a row of
/// after_effect.csv).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct AfterRow {
    /// The configuration ("contents @ workload").
    pub sample: String,
    pub freq_hz: u64,
    /// Achieved rate of the gaps runs, Hz.
    pub achieved_hz: f64,
    /// Paired throughput loss per sample, ns (its trusted interval, scaled).
    #[serde(serialize_with = "lo_hi")]
    pub throughput_ns: Estimate,
    /// Gaps design: the direct cost per sample (inside the episode), ns.
    #[serde(serialize_with = "lo_hi")]
    pub direct_ns: Estimate,
    /// throughput - direct, ns, Welch interval (independent runs).
    #[serde(serialize_with = "lo_hi")]
    pub after_ns: Estimate,
    /// The timeline's own after-effect estimate, ns, for comparison.
    #[serde(serialize_with = "lo_hi")]
    pub timeline_after_ns: Estimate,
}

/// The rows of every configuration (each analysed alone) at every rate
/// where the paired loss and the gaps direct cost both exist.
pub fn rows(analyses: &[ConfigTables<'_>]) -> Vec<AfterRow> {
    let each = analyses
        .iter()
        .filter_map(|a| Some((a.name, &a.per_sample?.rows)));
    let rows = each.flat_map(|(sample, rows)| rows.iter().map(move |r| (sample, r)));
    rows.filter(|(_, r)| r.freq_hz > 0 && r.achieved_hz > 0.0)
        .filter_map(|(sample, r)| {
            let paired = r.paired_loss_pct.filter(|p| p.value.is_finite())?;
            // loss % / 100 of each second, per achieved sample, in ns.
            let throughput_ns = paired.scaled(1e7 / r.achieved_hz);
            Some(AfterRow {
                sample: sample.to_string(),
                freq_hz: r.freq_hz,
                achieved_hz: r.achieved_hz,
                after_ns: difference(&throughput_ns, &r.direct_ns),
                throughput_ns,
                direct_ns: r.direct_ns,
                timeline_after_ns: r.after_effect_ns,
            })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn difference_adds_the_errors_in_quadrature() {
        let a = Estimate {
            value: 10.0,
            lo: 4.0,
            hi: 16.0,
            se: 3.0,
            n: 4,
        };
        let b = Estimate {
            value: 4.0,
            lo: 0.0,
            hi: 8.0,
            se: 4.0,
            n: 5,
        };
        let d = difference(&a, &b);
        assert_eq!((d.value, d.se, d.n), (6.0, 5.0, 4));
        // Welch: df = 25^2 / (9^2 / 3 + 16^2 / 4) = 6.868; scipy.stats.t.ppf
        // (0.975, 6.868131868131868) = 2.373859011841078, x se 5.
        assert!((d.lo - -5.869295059205388).abs() < 1e-9, "{d:?}");
        assert!((d.hi - 17.86929505920539).abs() < 1e-9, "{d:?}");
    }

    #[test]
    fn throughput_per_sample_is_the_loss_share_over_the_rate() {
        // 2 % loss at 4000 samples/s: 0.02 s of each second / 4000 = 5 us.
        let loss = Estimate {
            value: 2.0,
            lo: 1.0,
            hi: 3.0,
            se: 0.5,
            n: 4,
        };
        let t = loss.scaled(1e7 / 4000.0);
        assert!((t.value - 5000.0).abs() < 1e-9);
        assert!((t.lo - 2500.0).abs() < 1e-9 && (t.hi - 7500.0).abs() < 1e-9);
        assert!((t.se - 1250.0).abs() < 1e-9);
    }
}
