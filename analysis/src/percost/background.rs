//! The background coincidence b: the excess a sampler at F would match on
//! the 0 Hz gaps runs by coincidence alone, drawn with periodic timestamps
//! from random phases, and the A/A null control that checks it
//! (docs/methodology.md, "Gaps design").

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::{GapsRun, LONG_EPISODE_NS};
use crate::stats::{Estimate, t_interval};
use results_format::timeline::{Episode, MATCH_SLACK_NS, match_times};

/// Sampler timestamps drawn per 0 Hz run and frequency, at least (in
/// replications of one run's length each).
pub const COINCIDENCE_TIMESTAMPS: usize = 200_000;
/// Replications (independent random phases) per 0 Hz run, at least.
pub const MIN_REPLICATIONS: usize = 8;

/// The most timestamps one replication lays over a run's window: 100 s
/// at 100 kHz, far beyond any run (8 s at 100 kHz is 8e5). At the 1e8 it
/// was, a degenerate timeline.csv could ask for 8 replications of 1e8
/// timestamps per 0 Hz run and rate: 800 MB and seconds each.
const MAX_DRAWN_STAMPS: f64 = 1e7;

/// Excess per timestamp, each episode's excess capped at `cap_ns` per
/// timestamp it holds, that a sampler at `rate_hz` would match on one run
/// by coincidence, drawn: `replications` times, timestamps one period apart
/// from a random phase over [`start_ns`, `end_ns`) (a periodic hrtimer, as
/// the sampler is), matched with [`match_times`]; the sum of the (capped)
/// excess of the distinct matched episodes of each replication (as
/// `matched_excess_ns` counts them), over all replications, / the number of
/// timestamps. The A/A control draws this way; b is its exact expectation
/// ([`coincidence_exact`]).
pub fn coincidence_capped(
    episodes: &[Episode],
    (start_ns, end_ns): (u64, u64),
    rate_hz: f64,
    cap_ns: f64,
    replications: usize,
    rng: &mut ChaCha8Rng,
) -> f64 {
    if !rate_hz.is_finite() || rate_hz <= 0.0 || end_ns <= start_ns || replications == 0 {
        return f64::NAN;
    }
    let period = 1e9 / rate_hz;
    let window = (end_ns - start_ns) as f64;
    if window / period > MAX_DRAWN_STAMPS {
        // No run holds that many samples: the window is not a measured one
        // (a degenerate timeline.csv asked for 1e15 timestamps and the
        // report never ended). Unavailable, as for no window at all.
        return f64::NAN;
    }
    let (mut excess, mut stamps) = (0f64, 0usize);
    let mut times = Vec::new();
    for _ in 0..replications {
        let phase: f64 = rng.random::<f64>() * period;
        times.clear();
        let mut k = 0.0;
        while phase + k * period < window {
            times.push(start_ns + (phase + k * period) as u64);
            k += 1.0;
        }
        // The episode being matched and how many timestamps it holds: an
        // episode counts once, its excess capped at the cap per timestamp.
        let (mut last, mut held) = (None::<&Episode>, 0u32);
        let flush = |e: Option<&Episode>, k: u32| {
            e.map_or(0.0, |e| (e.excess_ns as f64).min(cap_ns * f64::from(k)))
        };
        for m in match_times(episodes, &times) {
            let e = usize::try_from(m).ok().and_then(|i| episodes.get(i));
            match e {
                // In a stretch the CPU was taken away: left out, as the
                // samples in one are.
                Some(e) if e.excess_ns >= LONG_EPISODE_NS => continue,
                Some(e) if last.is_some_and(|l| std::ptr::eq(l, e)) => held += 1,
                Some(e) => {
                    excess += flush(last, held);
                    (last, held) = (Some(e), 1);
                }
                _ => {}
            }
            stamps += 1;
        }
        excess += flush(last, held);
    }
    if stamps == 0 {
        return f64::NAN;
    }
    excess / stamps as f64
}

/// What a periodic sampler at `rate_hz` with a uniformly random phase
/// matches on one run by coincidence, exactly (its expectation, no draw):
/// per timestamp, the excess capped at `cap_ns` and the excess above it,
/// ns. Episode e (its match window `len + 2 x MATCH_SLACK_NS`) is hit at
/// least once with probability min(1, window / period) and counted once
/// (as `matched_excess_ns` counts it); the expected timestamps are the
/// run's window / period less those inside long episodes (left out, as the
/// samples in them are). The draw ([`coincidence_capped`]) converges to it;
/// with 8 phases at 4 kHz it phase-locks with a periodic background (the
/// tick) and scatters by 30-165 ns per run.
pub fn coincidence_exact(
    episodes: &[Episode],
    (start_ns, end_ns): (u64, u64),
    rate_hz: f64,
    cap_ns: f64,
) -> (f64, f64) {
    if !rate_hz.is_finite() || rate_hz <= 0.0 || end_ns <= start_ns {
        return (f64::NAN, f64::NAN);
    }
    let period = 1e9 / rate_hz;
    let slack = 2.0 * MATCH_SLACK_NS as f64;
    let (mut capped, mut above, mut stamps) = (0f64, 0f64, (end_ns - start_ns) as f64 / period);
    for e in episodes {
        let window = (e.end_ns - e.start_ns) as f64 + slack;
        if e.excess_ns >= LONG_EPISODE_NS {
            stamps -= window / period;
            continue;
        }
        let hit = (window / period).min(1.0);
        // Timestamps it holds when hit: one, or window / period for an
        // episode longer than a period; the cap is per timestamp.
        let cap = cap_ns * (window / period).max(1.0);
        let x = e.excess_ns as f64;
        capped += hit * x.min(cap);
        above += hit * (x - cap).max(0.0);
    }
    if stamps <= 0.0 {
        return (f64::NAN, f64::NAN);
    }
    (capped / stamps, above / stamps)
}

/// The replications needed on a run of `window_ns` at `rate_hz` to draw at
/// least [`COINCIDENCE_TIMESTAMPS`] timestamps (and [`MIN_REPLICATIONS`]).
pub fn replications_for(window_ns: f64, rate_hz: f64) -> usize {
    let per = (window_ns * 1e-9 * rate_hz).max(1.0);
    ((COINCIDENCE_TIMESTAMPS as f64 / per).ceil() as usize).max(MIN_REPLICATIONS)
}

/// Which random stream a coincidence draw uses: b and the A/A control must
/// not reuse each other's timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draw {
    /// b, the background coincidence.
    Background,
    /// The A/A null control.
    Null,
}

/// The generator for one run, frequency and purpose: seeded from the
/// run id, one stream per (frequency, purpose).
pub fn draw_rng(run_id: u32, freq_hz: u64, draw: Draw) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(u64::from(run_id));
    rng.set_stream(freq_hz.wrapping_mul(2) + u64::from(draw == Draw::Null));
    rng
}

/// Coincidence per timestamp (drawn, each episode's excess capped at
/// `cap_ns`) on each 0 Hz run at `rate_hz` (same order as `zero`), the
/// runs in parallel.
pub fn coincidence_by_run_capped(
    zero: &[&GapsRun],
    freq_hz: u64,
    rate_hz: f64,
    draw: Draw,
    cap_ns: f64,
) -> Vec<f64> {
    let draw_one = |r: &&GapsRun| {
        let reps = replications_for(r.window_ns(), rate_hz);
        let one = || {
            let mut rng = draw_rng(r.row.run_id, freq_hz, draw);
            coincidence_capped(&r.episodes, r.window(), rate_hz, cap_ns, reps, &mut rng)
        };
        // A draw that panicked is NaN: b is then unavailable, not wrong.
        std::panic::catch_unwind(one).unwrap_or(f64::NAN)
    };
    zero.par_iter().map(draw_one).collect()
}

/// The A/A null control: per 0 Hz run i, its own coincidence (drawn from
/// the null stream) minus the mean of the others' b (leave-one-out); t
/// interval over the runs. None below two runs.
pub fn aa_control(own: &[f64], b_by_run: &[f64]) -> Option<Estimate> {
    let n = own.len();
    if n < 2 || b_by_run.len() != n {
        return None;
    }
    let total: f64 = b_by_run.iter().sum();
    let diffs: Vec<f64> = (0..n)
        .map(|i| own[i] - (total - b_by_run[i]) / (n - 1) as f64)
        .collect();
    Some(t_interval(&diffs))
}
