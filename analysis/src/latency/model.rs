//! The latency model: a request's elapsed time at a rate, predicted from
//! the 0 Hz runs' elapsed times, the rate and what one sample costs.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use statrs::distribution::{ContinuousCDF, Normal};

/// Requests the model draws per block: the 0 Hz run's elapsed times at
/// evenly spaced ranks, enough for 20 beyond the 99.9th percentile.
pub const MODEL_REQUESTS: usize = 20_000;

/// `sorted` at `n` evenly spaced ranks (itself when it holds no more).
pub fn thinned(sorted: &[f64], n: usize) -> Vec<f64> {
    if sorted.len() <= n {
        return sorted.to_vec();
    }
    let step = sorted.len() as f64 / n as f64;
    (0..n).map(|i| sorted[(i as f64 * step) as usize]).collect()
}

/// How the samples fall in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    /// One period apart from a random phase: a per-CPU hrtimer, as
    /// cpu-clock and cycles in frequency mode sample.
    Periodic,
    /// Independent arrivals at the rate (exponential gaps): what a model
    /// that ignores the timer would assume.
    Poisson,
}

/// Rounds one request may take: each adds the samples that fall in the
/// time the last one added, a share rate x mean cost of it, so 1,000 rounds
/// reach 1e-6 of the first round's time unless sampling takes over 98.6 %
/// of the CPU; such a request is infinite.
const MAX_ROUNDS: u32 = 1_000;

/// Samples a round adds one by one; above this their summed cost is drawn
/// from its normal approximation (k x mean, sqrt(k) x sd), in one step: a
/// 100 ms request at 100 kHz holds 10,000 samples.
const EXACT_MAX: u64 = 32;

/// Each of `base_ns` (elapsed times at 0 Hz) with samples at `rate_hz`
/// timed as `timing` says, each costing a draw from `costs_ns`; a sample
/// that falls in the time earlier samples added counts too. Returns the
/// elapsed times sorted, and the share of requests a sample fell in (a
/// sample of cost 0 counts as none). `base_ns` itself, sorted, when there
/// is nothing to add; NaN where the samples' mean cost is a period or
/// more (sampling alone would take the CPU).
pub fn predict(
    base_ns: &[f64],
    costs_ns: &[f64],
    rate_hz: f64,
    timing: Timing,
    seed: u64,
) -> (Vec<f64>, f64) {
    let mut out: Vec<f64> = base_ns.to_vec();
    if costs_ns.is_empty() || !rate_hz.is_finite() || rate_hz <= 0.0 {
        out.sort_by(f64::total_cmp);
        return (out, 0.0);
    }
    let mut hit = 0usize;
    let n = costs_ns.len() as f64;
    let mean = costs_ns.iter().sum::<f64>() / n;
    let sd = (costs_ns.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / n).sqrt();
    let normal = Normal::standard();
    let period = 1e9 / rate_hz;
    if mean >= period {
        // Sampling alone takes the whole CPU: no request completes.
        return (vec![f64::NAN; out.len()], f64::NAN);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut z = || normal.inverse_cdf(rng.random::<f64>().clamp(1e-12, 1.0 - 1e-12));
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    for x in &mut out {
        let mut elapsed = *x;
        // Each round draws the samples that fall in the time the last
        // round added (the first: in the request at 0 Hz).
        let mut next = match timing {
            Timing::Periodic => rng.random::<f64>() * period,
            Timing::Poisson => exponential(&mut rng, period),
        };
        let mut rounds = 0;
        while next < elapsed {
            rounds += 1;
            if rounds > MAX_ROUNDS {
                // Sampling takes nearly all of the CPU: the request does
                // not complete in any time the model can say.
                elapsed = f64::INFINITY;
                break;
            }
            let expected = (elapsed - next) / period;
            let added = if expected > EXACT_MAX as f64 {
                // Many in this round: their count and summed cost from the
                // normal approximation.
                let count = match timing {
                    Timing::Periodic => {
                        let c = expected.floor() + 1.0;
                        next += c * period;
                        c
                    }
                    Timing::Poisson => {
                        // Memoryless: the next arrival after this round's
                        // time is a fresh draw.
                        next = elapsed + exponential(&mut rng, period);
                        (expected + expected.sqrt() * z()).round().max(0.0)
                    }
                };
                (count * mean + count.sqrt() * sd * z()).max(0.0)
            } else {
                let mut added = 0.0;
                while next < elapsed {
                    added += costs_ns[rng.random_range(0..costs_ns.len())];
                    next += match timing {
                        Timing::Periodic => period,
                        Timing::Poisson => exponential(&mut rng, period),
                    };
                }
                added
            };
            elapsed += added;
        }
        hit += usize::from(elapsed > *x);
        *x = elapsed;
    }
    out.sort_by(f64::total_cmp);
    let share = hit as f64 / out.len().max(1) as f64;
    (out, share)
}

fn exponential(rng: &mut ChaCha8Rng, mean: f64) -> f64 {
    -mean * (1.0 - rng.random::<f64>()).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periodic_hits_a_share_of_size_times_rate_and_adds_one_cost() {
        // 1 ms requests at 99 Hz: periodic sampling hits 9.9 % of them,
        // each once; Poisson hits 1 - exp(-0.099) = 9.43 % and a few twice.
        let base = vec![1e6; 200_000];
        let (p, share) = predict(&base, &[10_000.0], 99.0, Timing::Periodic, 1);
        let hit = p.iter().filter(|&&x| x > 1e6).count() as f64 / p.len() as f64;
        assert!((hit - 0.099).abs() < 0.003, "{hit}");
        assert_eq!(share, hit);
        assert!(p.iter().all(|&x| x == 1e6 || x == 1.01e6));
        let (q, _) = predict(&base, &[10_000.0], 99.0, Timing::Poisson, 1);
        let hit = q.iter().filter(|&&x| x > 1e6).count() as f64 / q.len() as f64;
        assert!((hit - (1.0 - (-0.099f64).exp())).abs() < 0.003, "{hit}");
        assert!(q.iter().any(|&x| x >= 1.02e6));
    }

    #[test]
    fn dense_rates_add_their_samples_and_those_in_the_added_time() {
        // 10 ms at 4 kHz with 10 us each: 40 samples, plus those in the
        // 0.4 ms they add (1.6), and so on: 10 ms x f c / (1 - f c) =
        // 10 ms x 0.04 / 0.96 = 417 us, whether drawn one by one or not.
        let base = vec![1e7; 2_000];
        let (p, share) = predict(&base, &[10_000.0], 4_000.0, Timing::Periodic, 2);
        assert_eq!(share, 1.0);
        let mean_added = p.iter().map(|x| x - 1e7).sum::<f64>() / p.len() as f64;
        assert!((mean_added - 416_667.0).abs() < 12_000.0, "{mean_added}");
        // Periodic: the count varies by one at most; Poisson's by sqrt(40).
        let spread = p[p.len() - 1] - p[0];
        assert!(spread <= 20_000.0 + 1.0, "{spread}");
        let (q, _) = predict(&base, &[10_000.0], 4_000.0, Timing::Poisson, 2);
        assert!(q[q.len() - 1] - q[0] > 100_000.0);
    }

    #[test]
    fn nothing_to_add_returns_the_base_sorted() {
        assert_eq!(
            predict(&[3.0, 1.0], &[], 100.0, Timing::Periodic, 0),
            (vec![1.0, 3.0], 0.0)
        );
        assert_eq!(
            predict(&[3.0, 1.0], &[5.0], 0.0, Timing::Periodic, 0),
            (vec![1.0, 3.0], 0.0)
        );
    }
}
