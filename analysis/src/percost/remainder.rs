//! Where the model and the paired throughput loss differ: the remainder,
//! its size with an interval, and where it lies: in gaps that no sample
//! matched, or outside every gap (a slower loop between interruptions).

use crate::stats::Estimate;

/// The paired loss minus the model's predicted loss, split by where the
/// time went; percentage points of the CPU.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Remainder {
    /// paired - predicted (Welch interval, independent runs).
    pub total_pp: Estimate,
    /// Excess gap time over 0 Hz minus the predicted direct loss (t
    /// interval over the runs at F): lost time inside gaps that the
    /// matched samples do not account for (more or longer interruptions
    /// besides the samples' own).
    pub in_gaps_pp: Estimate,
    /// paired - (predicted + in gaps) (Welch interval; the two parts from
    /// the same runs, summed per run): lost time outside every gap,
    /// the loop running slower between interruptions (an after-effect
    /// beyond the horizon, a slower core), or an artefact of the paired
    /// design.
    pub outside_gaps_pp: Estimate,
}

impl Remainder {
    /// From the paired loss, the predicted loss, the in-gaps part and
    /// their per-run sum `explained` (all %, the last three over the same
    /// gaps runs); None unless all have an interval.
    pub fn of(
        paired: &Estimate,
        predicted: &Estimate,
        in_gaps: Estimate,
        explained: &Estimate,
    ) -> Option<Self> {
        let all = [paired, predicted, &in_gaps, explained];
        if !all.iter().all(|e| e.se.is_finite()) {
            return None;
        }
        Some(Self {
            total_pp: crate::stats::difference(paired, predicted),
            in_gaps_pp: in_gaps,
            outside_gaps_pp: crate::stats::difference(paired, explained),
        })
    }

    /// One sentence: its size and where it lies.
    pub fn words(&self) -> String {
        let part = |e: &Estimate| {
            format!(
                "{:.2} pp [{:.2}, {:.2}]{}",
                e.value,
                e.lo,
                e.hi,
                if e.lo > 0.0 || e.hi < 0.0 {
                    ""
                } else {
                    " (contains 0)"
                }
            )
        };
        let total = part(&self.total_pp);
        let in_gaps = part(&self.in_gaps_pp);
        let outside = part(&self.outside_gaps_pp);
        if self.total_pp.value < 0.0 {
            return format!(
                "remainder (paired - predicted) {total}: the prediction exceeds the paired loss (in gaps {in_gaps}, outside every gap {outside}); the model is the conservative one here"
            );
        }
        format!(
            "remainder (paired - predicted) {total}: in gaps that no sample matched {in_gaps} (interruptions besides the samples' own, e.g. host work that the exits let in), outside every gap {outside} (the loop slower between interruptions: an after-effect beyond the horizon, a slower core, or the paired design itself)"
        )
    }
}
