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
