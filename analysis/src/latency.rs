//! Request latency from the gaps design's timeline (issue 28): requests of
//! W ns of the loop's work, arriving at uniform times, laid over each gaps
//! run's lost time; the percentiles of their elapsed time, per run.
//! [`table`] sets each rate against the 0 Hz runs of the same blocks and
//! [`model`] predicts the same from the per-sample cost and the rate
//! (docs/methodology.md, "Request latency").
//!
//! The loop is a stream of work. Each episode of a run takes its excess
//! away from the loop, just before the episode's end (the loop resumes at
//! the end of the chunk that held it). A request that arrives at t holds
//! W ns of that work and completes once the loop has done it: its elapsed
//! time is W plus every lost time from t to its completion, including the
//! rest of an episode it arrived in. W is work at the loop's own speed at
//! the time; a slower loop outside the gaps (issue 32) is not in it.

pub mod at_rate;
pub mod model;
pub mod predict;
pub mod table;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use results_format::thinning::Thinning;
use results_format::timeline::Episode;

use crate::load::gaps::LONG_EPISODE_NS;
use crate::stats::quantile_sorted;

/// The request sizes every gaps set answers, ns of the loop's work: sizes a
/// person recognises, from a fast RPC to a page render.
pub const SIZES_NS: [u64; 4] = [100_000, 1_000_000, 10_000_000, 100_000_000];

/// The percentiles every size is given at.
pub const PERCENTILES: [f64; 3] = [50.0, 99.0, 99.9];

/// Arrivals laid over one run per size: a grid from a random phase, so
/// that every stretch of the run is weighted by its length. Prime: a
/// thinned run's kept slices are alike, and a count that is a multiple of
/// theirs (50,000 over 500 slices) puts the arrivals at the same offsets in
/// every slice, so its cut requests at each slice's end were all missed or
/// all hit (analysis/validate/latency_numpy.py found it).
pub const ARRIVALS: usize = 49_999;

/// A request size as a person says it: 100 us, 1 ms.
pub fn size_label(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000_000 && n % 1_000_000_000 == 0 => format!("{} s", n / 1_000_000_000),
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{} ms", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{} us", n / 1_000),
        n => format!("{n} ns"),
    }
}

/// A run's lost time: each episode's excess as an interval that ends where
/// the episode ends, in time order and disjoint.
#[derive(Debug, Clone, Default)]
pub struct LostTime {
    /// Where each interval starts, ns.
    starts: Vec<u64>,
    /// Lost time before interval i (`before[i]`), and in all (`before[n]`).
    before: Vec<u64>,
    /// The work clock (time minus the lost time before it) where each
    /// interval starts: never decreasing.
    work_at: Vec<u64>,
}

impl LostTime {
    /// The lost time of `episodes` (any order): an episode's excess is
    /// clipped to the time since the previous one ended. Episodes of
    /// [`LONG_EPISODE_NS`] or more (the CPU taken away, not an interrupt)
    /// are cut out of the timeline, as the per-sample cost leaves them out:
    /// they belong to neither rate, and one 4 ms descheduling moves a run's
    /// p99 by more than sampling does.
    pub fn new(episodes: &[Episode]) -> Self {
        let mut eps: Vec<&Episode> = episodes
            .iter()
            .filter(|e| e.excess_ns < LONG_EPISODE_NS)
            .collect();
        eps.sort_by_key(|e| e.end_ns);
        let mut starts = Vec::with_capacity(eps.len());
        let mut before = Vec::with_capacity(eps.len() + 1);
        let mut work_at = Vec::with_capacity(eps.len());
        let (mut prev_end, mut total) = (0u64, 0u64);
        before.push(0);
        for e in eps {
            let start = e.end_ns.saturating_sub(e.excess_ns).max(prev_end);
            let len = e.end_ns.saturating_sub(start);
            if len == 0 {
                continue;
            }
            starts.push(start);
            work_at.push(start.saturating_sub(total));
            total = total.saturating_add(len);
            before.push(total);
            prev_end = e.end_ns;
        }
        LostTime {
            starts,
            before,
            work_at,
        }
    }

    fn end(&self, i: usize) -> u64 {
        self.starts[i].saturating_add(self.before[i + 1] - self.before[i])
    }

    /// Lost time before `t`, ns.
    fn lost_before(&self, t: u64) -> u64 {
        let j = self.starts.partition_point(|&s| s < t);
        // Intervals 0..j start before t; the last of them may hold t.
        if j == 0 {
            return 0;
        }
        let i = j - 1;
        let end = self.end(i);
        self.before[i] + (t.min(end) - self.starts[i])
    }

    /// When a request that arrives at `t` with `work_ns` of work completes.
    pub fn completion(&self, t: u64, work_ns: u64) -> u64 {
        // The work clock, t minus the lost time before t, is flat inside
        // an interval. The request completes when it reaches `target`;
        // every interval that starts before then is lost in full.
        let target = (t - self.lost_before(t)).saturating_add(work_ns);
        let k = self.work_at.partition_point(|&w| w < target);
        target.saturating_add(self.before[k])
    }
}

/// Where a run's timeline is whole: its window, or where its raw files
/// were thinned (`keep_every` > 1), the kept slices inside it
/// ([`Thinning::kept_spans`]), at most a million (10,000 s of kept time: a
/// degenerate window is not walked slice by slice).
pub fn spans((start, end): (u64, u64), keep_every: u64) -> Vec<(u64, u64)> {
    Thinning {
        every: keep_every.max(1),
    }
    .kept_spans(start, end, 1_000_000)
}

/// One request size on one run (latency_runs.csv's columns after the run's).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SizeLatency {
    pub size_ns: u64,
    /// Requests laid over the run (completed inside its whole timeline).
    pub requests: usize,
    /// Requests that would have completed past the end of their span
    /// (left out: their elapsed time is not known).
    pub cut: usize,
    /// Independent requests the run holds: its usable time over the size.
    pub independent: f64,
    /// Elapsed time at each of [`PERCENTILES`], ns; NaN where the run
    /// holds fewer than one independent request beyond it, or where more
    /// than a tenth of the requests beyond it were cut.
    #[serde(serialize_with = "percentiles")]
    pub elapsed_ns: [f64; 3],
    /// Share of requests with at least one sample inside (NaN without
    /// samples, at 0 Hz, or with over 1 % of them cut).
    pub hit_share: f64,
    /// Every elapsed time, sorted, ns: kept for 0 Hz runs only, for the
    /// model.
    #[serde(skip)]
    pub sorted_ns: Vec<f64>,
}

/// latency_runs.csv's elapsed times, one column per percentile.
fn percentiles<S: serde::Serializer>(v: &[f64; 3], s: S) -> Result<S::Ok, S::Error> {
    crate::columns::cells(s, "p50_ns p99_ns p999_ns", Some(*v))
}

impl SizeLatency {
    /// Whether the run resolves the `p`-th percentile (%): it holds one
    /// independent request beyond it at least, and the cut requests are a
    /// tenth of those beyond it at most (a cut request is a slow one).
    pub fn resolves(&self, p: f64) -> bool {
        let beyond = 1.0 - p / 100.0;
        let all = (self.cut + self.requests).max(1) as f64;
        self.requests > 0
            && self.independent * beyond >= 1.0
            && self.cut as f64 / all <= 0.1 * beyond
    }
}

/// Requests of `size_ns` laid over a run: `lost` its lost time, `spans`
/// where its timeline is whole, `samples` its sample times (sorted; empty
/// at 0 Hz), `seed` the run's random phase.
pub fn measure(
    lost: &LostTime,
    spans: &[(u64, u64)],
    samples: &[u64],
    size_ns: u64,
    seed: u64,
    keep_sorted: bool,
) -> SizeLatency {
    // Each span's arrivals [s, e - W) and its end.
    let usable: Vec<(u64, u64, u64)> = spans
        .iter()
        .filter(|(s, e)| e - s > size_ns)
        .map(|&(s, e)| (s, e - size_ns, e))
        .collect();
    let total: u64 = usable.iter().map(|(s, last, _)| last - s).sum();
    let mut out = SizeLatency {
        size_ns,
        independent: total as f64 / size_ns.max(1) as f64,
        elapsed_ns: [f64::NAN; 3],
        hit_share: f64::NAN,
        ..SizeLatency::default()
    };
    if total == 0 || size_ns == 0 {
        return out;
    }
    let step = total as f64 / ARRIVALS as f64;
    let phase: f64 = ChaCha8Rng::seed_from_u64(seed).random::<f64>() * step;
    let mut elapsed = Vec::with_capacity(ARRIVALS);
    let mut hit = 0usize;
    let (mut span, mut offset) = (0usize, 0u64);
    for k in 0..ARRIVALS {
        let u = (phase + k as f64 * step) as u64;
        while span < usable.len() && u >= offset + (usable[span].1 - usable[span].0) {
            offset += usable[span].1 - usable[span].0;
            span += 1;
        }
        let Some(&(s, _, end)) = usable.get(span) else {
            break;
        };
        let t = s + (u - offset);
        let done = lost.completion(t, size_ns);
        if done > end {
            out.cut += 1;
            continue;
        }
        if !samples.is_empty() {
            let first = samples.partition_point(|&x| x < t);
            hit += usize::from(samples.get(first).is_some_and(|&x| x < done));
        }
        elapsed.push((done - t) as f64);
    }
    out.requests = elapsed.len();
    if elapsed.is_empty() {
        return out;
    }
    elapsed.sort_by(f64::total_cmp);
    let cut_share = out.cut as f64 / (out.cut + out.requests) as f64;
    for (i, &p) in PERCENTILES.iter().enumerate() {
        if out.resolves(p) {
            out.elapsed_ns[i] = quantile_sorted(&elapsed, p / 100.0);
        }
    }
    if !samples.is_empty() && cut_share <= 0.01 {
        out.hit_share = hit as f64 / out.requests as f64;
    }
    if keep_sorted {
        out.sorted_ns = elapsed;
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use results_format::thinning::RAW_SLICE_NS;
    use results_format::timeline::Episode;

    use super::*;

    fn ep(start_ns: u64, end_ns: u64, excess_ns: u64) -> Episode {
        Episode {
            start_ns,
            end_ns,
            excess_ns,
            gaps: 1,
        }
    }

    #[test]
    fn a_request_waits_for_every_lost_time_it_meets() {
        // Lost: [1000, 1100) and [2000, 2050).
        let lost = LostTime::new(&[ep(900, 1100, 100), ep(1990, 2050, 50)]);
        // Before both, done before the first: W only.
        assert_eq!(lost.completion(0, 500), 500);
        // Its work reaches 1000 exactly: done at 1000, the lost time after it
        // is not its own.
        assert_eq!(lost.completion(0, 1000), 1000);
        // Meets the first: W + 100.
        assert_eq!(lost.completion(500, 600), 1200);
        // Meets both: W + 150.
        assert_eq!(lost.completion(500, 1500), 2150);
        // Arrives inside the first: waits for its rest (50), then W.
        assert_eq!(lost.completion(1050, 10), 1110);
        // After both.
        assert_eq!(lost.completion(3000, 10), 3010);
    }

    #[test]
    fn overlapping_or_empty_episodes_lose_each_moment_once() {
        // The second's excess reaches back into the first: clipped at its end.
        let lost = LostTime::new(&[ep(0, 1000, 100), ep(1000, 1040, 200), ep(5, 5, 0)]);
        assert_eq!(lost.completion(0, 2000), 2000 + 100 + 40);
    }

    /// The brute force: one ns at a time, the work advancing outside lost time.
    fn walk(lost: &[(u64, u64)], t: u64, work: u64) -> u64 {
        let (mut now, mut done) = (t, 0);
        while done < work {
            if !lost.iter().any(|&(a, b)| a <= now && now < b) {
                done += 1;
            }
            now += 1;
        }
        now
    }

    proptest! {
        #[test]
        fn completion_matches_walking_the_timeline(
            gaps in proptest::collection::vec((1u64..200, 1u64..60), 0..8),
            t in 0u64..1500,
            work in 1u64..400,
        ) {
            let mut episodes = Vec::new();
            let mut lost = Vec::new();
            let mut end = 0;
            for (space, len) in gaps {
                end += space + len;
                episodes.push(ep(end - len, end, len));
                lost.push((end - len, end));
            }
            let got = LostTime::new(&episodes).completion(t, work);
            prop_assert_eq!(got, walk(&lost, t, work));
        }
    }

    #[test]
    fn thinned_runs_keep_their_kept_slices_only() {
        let s = RAW_SLICE_NS;
        assert_eq!(spans((5, 100), 1), vec![(5, 100)]);
        assert_eq!(spans((100, 5), 1), vec![]);
        // Slices 0, 3 and 6 of [s/2, 6.5 s).
        assert_eq!(
            spans((s / 2, 6 * s + s / 2), 3),
            vec![(s / 2, s), (3 * s, 4 * s), (6 * s, 6 * s + s / 2)]
        );
    }

    #[test]
    fn periodic_interruptions_hit_the_share_they_cover() {
        // A 2 s run interrupted for 10 us every 1 ms (1 kHz), samples at each.
        let period = 1_000_000u64;
        let cost = 10_000u64;
        let episodes: Vec<Episode> = (1..2000)
            .map(|k| ep(k * period, k * period + cost, cost))
            .collect();
        let samples: Vec<u64> = (1..2000).map(|k| k * period + 1).collect();
        let lost = LostTime::new(&episodes);
        let sp = spans((0, 2_000 * period), 1);
        // 100 us requests: a sample falls in 100 of every 1000 us of arrivals
        // (those that arrive inside an interruption, after its sample, wait
        // for its rest but hold no sample); the hit ones take W + the cost.
        let r = measure(&lost, &sp, &samples, 100_000, 7, true);
        assert!(r.cut == 0 && r.requests > 49_000, "{r:?}");
        // The grid (40 us apart) against a period of exactly 1 ms aliases by a
        // few %: 2 or 3 arrivals fall in each 100 us.
        assert!((r.hit_share - 0.10).abs() < 0.004, "{}", r.hit_share);
        assert_eq!(r.elapsed_ns[0], 100_000.0);
        assert!(
            (r.elapsed_ns[1] - 110_000.0).abs() < 1.0,
            "{:?}",
            r.elapsed_ns
        );
        assert_eq!(r.sorted_ns.len(), r.requests);
        // 10 ms requests hold 10 interruptions, sometimes 11, and resolve
        // p50 and p99 (199 independent requests in the run) but not p99.9.
        let r = measure(&lost, &sp, &samples, 10_000_000, 7, false);
        assert_eq!(r.elapsed_ns[0], 10_100_000.0);
        assert!(
            r.elapsed_ns[1] <= 10_110_000.0 && r.elapsed_ns[1] >= 10_100_000.0,
            "{r:?}"
        );
        assert!(r.elapsed_ns[2].is_nan());
        assert!(r.sorted_ns.is_empty());
        // A request longer than the run: none.
        let r = measure(&lost, &sp, &samples, 3_000 * period, 7, false);
        assert_eq!(r.requests, 0);
        assert!(r.elapsed_ns.iter().all(|x| x.is_nan()));
    }
}
