//! What a within-run contrast cannot see, from the split phases: the
//! slowdown that outlasts a phase, against the same block's 0 Hz runs
//! ([`against_zero_hz`]: the carry-over and the outside part against
//! 0 Hz), and the recovery inside the off phases that follow an on phase
//! ([`off_recovery`]).

use std::collections::BTreeMap;

use super::SplitPhase;
use crate::stats::{Estimate, grouped, mean, t_interval, t_interval_of};

/// Per block, 100 (1 - s / s0) of each rate's runs against the same
/// block's 0 Hz runs, s the mean speed outside the gaps of the phases that
/// `pick` keeps (s0: of every phase of the 0 Hz runs), with a t interval
/// over blocks. NaN at 0 Hz and where no block has both.
pub(super) fn against_zero_hz(
    phases: &[SplitPhase],
    block_of: &BTreeMap<u32, u32>,
    freq_hz: u64,
    pick: fn(&SplitPhase) -> bool,
) -> Estimate {
    let speeds = |f: u64, pick: &dyn Fn(&SplitPhase) -> bool| -> BTreeMap<u32, Vec<f64>> {
        let at = phases.iter().filter(|p| p.freq_hz == f && pick(p));
        let finite = at.filter(|p| p.speed_outside.is_finite());
        grouped(finite.filter_map(|p| Some((*block_of.get(&p.run_id)?, p.speed_outside))))
    };
    if freq_hz == 0 {
        return t_interval(&[]);
    }
    let zero = speeds(0, &|_| true);
    let losses: Vec<f64> = speeds(freq_hz, &pick)
        .iter()
        .filter_map(|(b, s)| Some(100.0 * (1.0 - mean(s) / mean(zero.get(b)?))))
        .filter(|x| x.is_finite())
        .collect();
    t_interval(&losses)
}

/// Per run, the mean of 100 (s_second / s_first - 1) over the off
/// phases at `freq_hz` that follow an on phase of the same run; a t
/// interval over runs ([`super::SplitRow::off_recovery`]).
pub(super) fn off_recovery(phases: &[SplitPhase], freq_hz: u64) -> Estimate {
    let at: Vec<&SplitPhase> = phases.iter().filter(|p| p.freq_hz == freq_hz).collect();
    let by_run = grouped(at.windows(2).filter_map(|w| {
        let (prev, p) = (w[0], w[1]);
        let x = 100.0 * (p.speed_second / p.speed_first - 1.0);
        let follows = prev.run_id == p.run_id && prev.phase + 1 == p.phase;
        (follows && prev.sampling && !p.sampling && x.is_finite()).then_some((p.run_id, x))
    }));
    t_interval_of(by_run.values().map(|v| mean(v)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::split::tests::phase as at_speed;

    /// An off phase right after an on phase whose second half ran 4 %
    /// faster counts; one after an off phase, or after a phase of
    /// another run, does not.
    #[test]
    fn off_phases_that_recover_inside_are_measured() {
        let at = |run_id: u32, phase: u32, sampling: bool, second: f64| SplitPhase {
            run_id,
            phase,
            speed_first: 1.0,
            speed_second: second,
            ..at_speed(sampling, 0, 1.0)
        };
        let phases = [
            at(0, 0, true, 1.0),
            at(0, 1, false, 1.04),
            at(0, 2, false, 1.5),
            at(0, 3, true, 1.0),
            at(1, 0, true, 1.0),
            at(1, 1, false, 1.02),
            at(2, 0, false, 1.9),
        ];
        let e = off_recovery(&phases, 1000);
        assert_eq!(e.n, 2);
        assert!((e.value - 3.0).abs() < 1e-9, "{e:?}");
    }

    /// Per block, the off phases' speed against the same block's 0 Hz
    /// run: 20 % and 30 % slower in blocks 0 and 1 give 25 % with a t
    /// interval over the two blocks; a block without a 0 Hz run counts
    /// for nothing; at 0 Hz there is nothing to compare.
    #[test]
    fn the_carryover_compares_off_phases_with_the_blocks_0hz_runs() {
        let at = |run_id: u32, freq_hz: u64, sampling: bool, speed: f64| SplitPhase {
            run_id,
            freq_hz,
            ..at_speed(sampling, 0, speed)
        };
        let phases = [
            at(0, 0, false, 1.0),
            at(0, 0, true, 1.0),
            at(1, 4000, false, 0.8),
            at(1, 4000, true, 0.75),
            at(2, 0, true, 2.0),
            at(2, 0, false, 2.0),
            at(3, 4000, false, 1.4),
            at(3, 4000, true, 1.3),
            at(4, 4000, false, 0.1),
        ];
        let block_of: BTreeMap<u32, u32> = [(0, 0), (1, 0), (2, 1), (3, 1), (4, 2)].into();
        let c = against_zero_hz(&phases, &block_of, 4000, |p| !p.sampling);
        assert_eq!(c.n, 2);
        assert!((c.value - 25.0).abs() < 1e-9, "{c:?}");
        // sd of (20, 30) is 7.07, its standard error 5.
        let hw = crate::stats::t_crit95(1.0) * 5.0;
        assert!((c.hi - c.value - hw).abs() < 1e-9, "{c:?} {hw}");
        let on = against_zero_hz(&phases, &block_of, 4000, |p| p.sampling);
        assert!((on.value - 30.0).abs() < 1e-9, "{on:?}");
        assert!(
            against_zero_hz(&phases, &block_of, 0, |p| !p.sampling)
                .value
                .is_nan()
        );
    }
}
