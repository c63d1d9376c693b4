//! One simulated default sweep, written through `results_format`'s own
//! writers: runs.csv and phases.csv (`ResultsDir`), timeline.csv and
//! recovery.csv (`append_rows`), gaps/ and samples/ (their Parquet
//! writers), manifest.json.
//!
//! Every run is laid out in time as the driver runs it (blocks in a
//! random order, one run after the other): its interruptions (samples,
//! the timer tick, random background, a hog's), each a gap of the loop's
//! timeline with an after-effect that decays with `AFTER_TAU_NS` until
//! the next gap; the loop's work in any stretch is its speed (the run's,
//! the phase's, the speed mode's) times the time left after the gaps,
//! their after-effects and the outside part. Gaps, episodes, matched
//! samples and the recovery histogram are made from the same gaps, with
//! the crate's `join_episodes` and `match_times`, so the files agree with
//! each other as the driver's do.

use std::path::Path;

use anyhow::Context as _;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use results_format::timeline::{
    Gap, RECOVERY_CSV, RecoveryRow, TIMELINE_CSV, TimelineRow, gaps_path, join_episodes,
    match_times, samples_path, write_gaps_parquet, write_samples_parquet,
};
use results_format::{
    Design, FORMAT_VERSION, Manifest, PhaseRow, ResultsDir, RunKind, RunRow, RunStatus, ScopeName,
    Status,
};
use serde_json::json;

use crate::truth::{AFTER_TAU_NS, Hog, Scenario};

/// Requested length of every run's loop, ns.
pub const DURATION_NS: u64 = 2_000_000_000;
/// Paired and split designs: one phase, ns, and the settling phases
/// before phase 0 (2 s = 4 settling + 16 phases: 4 ABBA groups).
pub const PHASE_NS: u64 = 100_000_000;
const SETTLE_PHASES: u64 = 4;
/// Blocks (repetitions) of the sweep.
pub const BLOCKS: u32 = 5;
/// The plain loop's speed, iterations per ns; the timeline loop's (gaps
/// and split designs) is `STAMPED` of it.
const SPEED: f64 = 2.4;
const STAMPED: f64 = 0.9;
/// One stamped chunk of the timeline loop, ns, and its iterations.
const CHUNK_NS: f64 = 100.0;
const CHUNK_ITERATIONS: u64 = 240;
/// Background interruptions: the timer tick and random ones per second.
const TICK_HZ: f64 = 250.0;
const BACKGROUND_PER_S: f64 = 200.0;
/// The sweep's designs, each at 0 Hz and every rate in every block.
const DESIGNS: [Design; 3] = [Design::Gaps, Design::Paired, Design::Split];
/// The first run's start, CLOCK_MONOTONIC_RAW ns, and the pause between
/// runs.
const SWEEP_START_NS: u64 = 1_000_000_000_000;
const BETWEEN_RUNS_NS: u64 = 60_000_000;
/// The kernel's limit on the sampling rate, and where the throttled
/// scenario's kernel lowers it.
const MAX_SAMPLE_RATE: u64 = 100_000;

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// An exponential draw of mean `mean`.
fn exponential(rng: &mut impl Rng, mean: f64) -> f64 {
    -rng.random::<f64>().max(f64::MIN_POSITIVE).ln() * mean
}

/// A planned run.
#[derive(Debug, Clone, Copy)]
struct Planned {
    run_id: u32,
    design: Design,
    freq_hz: u64,
    block: u32,
}

/// One interruption of the loop, laid out.
#[derive(Debug, Clone, Copy)]
struct Interruption {
    start_ns: u64,
    excess_ns: u64,
    length_ns: u64,
    /// Its after-effect's size, ns (what it would cost with no gap after).
    after_ns: f64,
    /// The sample's timestamp, for a sample's gap.
    sample_ns: Option<u64>,
    /// A hog's interruption (the loop waited on the run queue).
    hog: bool,
}

/// The recovery histogram's bin edges, ns: 0, 200, 400, ... 819200, open.
fn bin_edges() -> Vec<(u64, u64)> {
    let mut edges = vec![(0u64, 200u64)];
    while edges.len() < 13 {
        let (_, to) = edges[edges.len() - 1];
        edges.push((to, 2 * to));
    }
    let (_, last) = edges[edges.len() - 1];
    edges.push((last, u64::MAX));
    edges
}

/// Slow speed-mode stretches of the whole sweep, sorted, disjoint.
fn speed_modes(rng: &mut impl Rng, hog: &Hog, from_ns: u64, to_ns: u64) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut t = from_ns as f64;
    loop {
        t += exponential(rng, 1e9 / hog.modes_per_s);
        if t >= to_ns as f64 {
            return out;
        }
        let len = rng.random_range(hog.mode_min_s..hog.mode_max_s) * 1e9;
        let (a, b) = (t as u64, (t + len) as u64);
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
}

/// What the sweep holds and where its runs stand.
struct Sweep<'a> {
    sc: &'a Scenario,
    modes: Vec<(u64, u64)>,
    edges: Vec<(u64, u64)>,
    /// exp(-edge / tau) at each bin's lower edge, and 0 past the last.
    decay: Vec<f64>,
}

/// One run as simulated: its rows.
struct RunOut {
    run: RunRow,
    phases: Vec<PhaseRow>,
    /// Gaps and split designs: the timeline's files.
    timeline: Option<Timeline>,
}

/// A run's timeline files: its timeline.csv row, recovery.csv rows, gaps,
/// and sample times with their episodes.
struct Timeline {
    row: TimelineRow,
    recovery: Vec<RecoveryRow>,
    gaps: Vec<Gap>,
    times: Vec<u64>,
    episodes: Vec<i64>,
}

impl Sweep<'_> {
    /// The loop's speed integral over [a, b) relative to its own speed
    /// (the slow modes at `mode_factor`), ns.
    fn speed_ns(&self, a: u64, b: u64) -> f64 {
        let Some(hog) = self.sc.hog else {
            return b.saturating_sub(a) as f64;
        };
        let slow: u64 = self
            .modes
            .iter()
            .map(|&(x, y)| y.min(b).saturating_sub(x.max(a)))
            .sum();
        b.saturating_sub(a) as f64 - (1.0 - hog.mode_factor) * slow as f64
    }

    fn run(&self, rng: &mut ChaCha8Rng, p: Planned, started_ns: u64) -> RunOut {
        let sc = self.sc;
        let phased = p.design != Design::Gaps;
        let timeline = p.design != Design::Paired;
        // The run's speed, cost and rate.
        let hog_factor = sc
            .hog
            .map_or(1.0, |h| rng.random_range(h.run_factor_lo..1.0));
        let speed = SPEED
            * (1.0 + sc.speed_noise * normal(rng)).max(0.3)
            * hog_factor
            * if timeline { STAMPED } else { 1.0 };
        let m = (1.0 + sc.cost_noise * normal(rng)).max(0.5);
        let (direct, after, outside) = (sc.direct_ns * m, sc.after_ns * m, sc.outside_ns * m);
        let throttled = sc.throttle.is_some_and(|(req, _)| p.freq_hz >= req);
        let rate = if p.freq_hz == 0 {
            0.0
        } else if throttled {
            sc.achieved_hz(p.freq_hz) * (1.0 + 0.02 * normal(rng))
        } else {
            p.freq_hz as f64 * (1.0 - rng.random_range(0.0..0.01))
        };
        let loop_start = started_ns + 2_000_000;
        let loop_end = loop_start + DURATION_NS;

        // Phases: settling, then groups of four, ABBA or BAAB.
        let settle = SETTLE_PHASES * PHASE_NS;
        let n_phases = ((DURATION_NS - settle) / PHASE_NS) as usize;
        let mut bounds: Vec<u64> = (0..=n_phases)
            .map(|k| loop_start + settle + k as u64 * PHASE_NS)
            .collect();
        for b in bounds.iter_mut().skip(1) {
            *b += rng.random_range(0..20_000);
        }
        let orders: Vec<bool> = (0..n_phases / 4).map(|_| rng.random()).collect();
        let sampling = |k: usize| {
            let abba = orders[k / 4];
            let inner = matches!(k % 4, 1 | 2);
            abba == inner
        };
        let on_spans: Vec<(u64, u64)> = if p.freq_hz == 0 {
            Vec::new()
        } else if phased {
            (0..n_phases)
                .filter(|&k| sampling(k))
                .map(|k| (bounds[k], bounds[k + 1]))
                .collect()
        } else {
            vec![(loop_start, loop_end)]
        };

        // The interruptions.
        let mut ev: Vec<Interruption> = Vec::new();
        let mut push = |start: f64, excess: f64, sample: Option<u64>, hog: bool| {
            ev.push(Interruption {
                start_ns: start as u64,
                excess_ns: excess.round() as u64,
                length_ns: 0,
                after_ns: after,
                sample_ns: sample,
                hog,
            });
        };
        if rate > 0.0 {
            let period = 1e9 / rate;
            for &(a, b) in &on_spans {
                let mut t = a as f64 + rng.random::<f64>() * period;
                while t < b as f64 - 20_000.0 {
                    let at = t + rng.random_range(-300.0..300.0);
                    let excess = direct * (1.0 + 0.05 * normal(rng)).max(0.2);
                    push(
                        at - rng.random_range(0.0..CHUNK_NS),
                        excess,
                        Some(at as u64),
                        false,
                    );
                    t += period;
                }
            }
        }
        let window = (loop_start as f64, loop_end as f64);
        let mut t = window.0 + rng.random::<f64>() * 1e9 / TICK_HZ;
        while t < window.1 {
            push(t, (2_500.0 + 300.0 * normal(rng)).max(1_100.0), None, false);
            t += 1e9 / TICK_HZ + 2_000.0 * normal(rng);
        }
        let mut t = window.0;
        loop {
            t += exponential(rng, 1e9 / BACKGROUND_PER_S);
            if t >= window.1 {
                break;
            }
            let excess = (1_500.0 * (0.5 * normal(rng)).exp()).clamp(1_100.0, 50_000.0);
            push(t, excess, None, false);
        }
        if let Some(h) = sc.hog {
            let mut t = window.0;
            loop {
                t += exponential(rng, 1e9 / h.per_s);
                if t >= window.1 {
                    break;
                }
                let excess = exponential(rng, h.mean_ns).clamp(2_000.0, h.max_ns);
                push(t, excess, None, true);
            }
        }
        ev.sort_by_key(|e| e.start_ns);
        // Laid out: one gap at a time (a gap that would start inside the
        // one before starts one chunk after it: the two join into one
        // episode), each a chunk longer than its excess.
        let mut laid: Vec<Interruption> = Vec::with_capacity(ev.len());
        let mut prev_end = loop_start;
        for mut e in ev {
            e.start_ns = e.start_ns.max(prev_end + CHUNK_NS as u64);
            e.length_ns = e.excess_ns + (CHUNK_NS * rng.random_range(1.0..1.2)) as u64;
            if e.start_ns + e.length_ns + 1_000 > loop_end {
                continue;
            }
            prev_end = e.start_ns + e.length_ns;
            laid.push(e);
        }

        // Each gap's after-effect until the next gap, and (timeline
        // designs) the recovery histogram of the chunks in between.
        let mut lost = Vec::with_capacity(laid.len());
        let mut chunks = vec![0f64; self.edges.len()];
        let mut after_sum = vec![0f64; self.edges.len()];
        for (i, e) in laid.iter().enumerate() {
            let end = e.start_ns + e.length_ns;
            let next = laid.get(i + 1).map_or(loop_end, |n| n.start_ns);
            let room = next.saturating_sub(end) as f64;
            let left = (-room / AFTER_TAU_NS).exp();
            lost.push(e.excess_ns as f64 + e.after_ns * (1.0 - left));
            if !timeline {
                continue;
            }
            for (k, &(from, to)) in self.edges.iter().enumerate() {
                let from = from as f64;
                if from >= room {
                    break;
                }
                let (to, decayed_to) = if (to as f64) < room {
                    (to as f64, self.decay[k + 1])
                } else {
                    (room, left)
                };
                chunks[k] += (to - from) / CHUNK_NS;
                after_sum[k] += e.after_ns * (self.decay[k] - decayed_to);
            }
        }
        // Running sums of the lost time by gap start.
        let mut cum = vec![0f64; laid.len() + 1];
        for (i, l) in lost.iter().enumerate() {
            cum[i + 1] = cum[i] + l;
        }
        let starts: Vec<u64> = laid.iter().map(|e| e.start_ns).collect();
        let lost_in = |a: u64, b: u64| {
            cum[starts.partition_point(|&s| s < b)] - cum[starts.partition_point(|&s| s < a)]
        };
        let mut hog_cum = vec![0u64; laid.len() + 1];
        for (i, e) in laid.iter().enumerate() {
            hog_cum[i + 1] = hog_cum[i] + if e.hog { e.excess_ns } else { 0 };
        }
        let hog_in = |a: u64, b: u64| {
            hog_cum[starts.partition_point(|&s| s < b)]
                - hog_cum[starts.partition_point(|&s| s < a)]
        };
        let mut times: Vec<u64> = laid.iter().filter_map(|e| e.sample_ns).collect();
        times.sort_unstable();
        let samples_in = |a: u64, b: u64| {
            (times.partition_point(|&t| t < b) - times.partition_point(|&t| t < a)) as u64
        };
        // The outside part slows the whole sampled run.
        let outside_share = rate * outside * 1e-9;
        let work = |a: u64, b: u64, factor: f64| -> u64 {
            let len = b.saturating_sub(a) as f64;
            if len <= 0.0 {
                return 0;
            }
            let busy = (lost_in(a, b) / len + outside_share).min(0.999);
            (speed * factor * self.speed_ns(a, b) * (1.0 - busy)).round() as u64
        };

        // Phases.
        let mut phases = Vec::new();
        let mut iterations;
        if phased {
            let mut phase_factor = || (1.0 + sc.phase_noise * normal(rng)).max(0.1);
            iterations = work(loop_start, bounds[0], phase_factor());
            for k in 0..n_phases {
                let (a, b) = (bounds[k], bounds[k + 1]);
                let mid = a + (b - a) / 2;
                let f = phase_factor();
                let (first, second) = (work(a, mid, f), work(mid, b, f));
                iterations += first + second;
                let wait = hog_in(a, b);
                phases.push(PhaseRow {
                    run_id: p.run_id,
                    phase: k as u32,
                    sampling: sampling(k),
                    start_ns: a,
                    end_ns: b,
                    iterations: first + second,
                    samples: samples_in(a, b),
                    freq_hz: p.freq_hz,
                    task_ns: (b - a).saturating_sub(wait),
                    wait_ns: wait,
                    group: (k / 4) as u32,
                    order: if orders[k / 4] { "ABBA" } else { "BAAB" }.to_string(),
                    settle_ns: settle,
                    mid_ns: mid,
                    mid_iterations: first,
                    unreadable: None,
                });
            }
        } else {
            iterations = work(loop_start, loop_end, 1.0);
        }

        // runs.csv.
        let (window_ns, samples) = if phased {
            let on: Vec<&PhaseRow> = phases.iter().filter(|p| p.sampling).collect();
            (
                on.iter().map(|p| p.end_ns - p.start_ns).sum::<u64>(),
                on.iter().map(|p| p.samples).sum::<u64>(),
            )
        } else if p.freq_hz > 0 {
            (DURATION_NS, samples_in(loop_start, loop_end))
        } else {
            (0, 0)
        };
        let hog_ns = hog_in(loop_start, loop_end);
        let noisy = hog_ns as f64 > 0.01 * DURATION_NS as f64;
        let sampler = p.freq_hz > 0 || phased;
        let event = if sampler { "cpu-clock" } else { "" }.to_string();
        let throttles = if throttled {
            rng.random_range(3..12)
        } else {
            0
        };
        let limit_after = if throttled {
            sc.throttle.map_or(MAX_SAMPLE_RATE, |(_, got)| got as u64)
        } else {
            MAX_SAMPLE_RATE
        };
        let ended_ns = loop_end + 3_000_000;
        let run = RunRow {
            run_id: p.run_id,
            kind: RunKind::Loss,
            design: p.design,
            block: p.block,
            freq_hz: p.freq_hz,
            rep: p.block,
            requested_event: event.clone(),
            event,
            scope: ScopeName::System,
            cpu: 1,
            duration_ns: DURATION_NS,
            iterations,
            wall_ns: loop_end - loop_start,
            window_ns,
            samples,
            achieved_hz: if window_ns > 0 {
                samples as f64 * 1e9 / window_ns as f64
            } else {
                0.0
            },
            throttled: throttles,
            unthrottled: throttles,
            nivcsw: laid.iter().filter(|e| e.hog).count() as u64,
            quiet: !noisy,
            noisy,
            noise_reasons: if noisy {
                "run-queue wait over 1% of wall (other tasks on its CPU)".to_string()
            } else {
                String::new()
            },
            started_at_ns: started_ns,
            ended_at_ns: ended_ns,
            status: RunStatus::Ok,
            samples_all_cpus: samples,
            contents: "time".to_string(),
            workload: "loop".to_string(),
            perf_event_max_sample_rate_before: Some(MAX_SAMPLE_RATE),
            perf_event_max_sample_rate_after: Some(limit_after),
            perf_cpu_time_max_percent_before: Some(25),
            perf_cpu_time_max_percent_after: Some(25),
            wait_ns: Some(hog_ns),
            ..RunRow::default()
        };
        if !timeline {
            return RunOut {
                run,
                phases,
                timeline: None,
            };
        }

        // The timeline's files.
        let mut gaps: Vec<Gap> = laid
            .iter()
            .map(|e| Gap {
                start_ns: e.start_ns,
                end_ns: e.start_ns + e.length_ns,
                excess_ns: e.excess_ns,
                episode: 0,
            })
            .collect();
        let episodes = join_episodes(&mut gaps);
        let matched = match_times(&episodes, &times);
        let mut distinct: Vec<i64> = matched.iter().copied().filter(|&m| m >= 0).collect();
        distinct.dedup();
        let row = TimelineRow {
            run_id: p.run_id,
            freq_hz: p.freq_hz,
            rep: p.block,
            stamp_chunk_iterations: CHUNK_ITERATIONS,
            stamp_chunk_ns: CHUNK_NS,
            stamp_cost_ns: CHUNK_NS * (1.0 - STAMPED),
            gap_threshold_ns: 1_000,
            loop_start_ns: loop_start,
            loop_end_ns: loop_end,
            tsc_per_ns: 2.6,
            gaps: gaps.len() as u64,
            gaps_dropped: 0,
            episodes: episodes.len() as u64,
            gap_time_ns: gaps.iter().map(|g| g.excess_ns).sum(),
            samples: times.len() as u64,
            matched_samples: matched.iter().filter(|&&m| m >= 0).count() as u64,
            unmatched_samples: matched.iter().filter(|&&m| m < 0).count() as u64,
            matched_episodes: distinct.len() as u64,
            matched_excess_ns: distinct
                .iter()
                .filter_map(|&m| episodes.get(usize::try_from(m).ok()?))
                .map(|e| e.excess_ns)
                .sum(),
            warnings: String::new(),
        };
        // Each chunk's excess over the reference at the last gap: the
        // after-effect, a per-run offset (a median of three is not a
        // mean) and noise.
        let offset: f64 = rng.random_range(-2.0..2.0);
        let recovery = self
            .edges
            .iter()
            .enumerate()
            .map(|(k, &(from_ns, to_ns))| {
                let n = chunks[k].round();
                let excess = if n > 0.0 {
                    after_sum[k] + n * offset + 3.0 * n.sqrt() * normal(rng)
                } else {
                    0.0
                };
                RecoveryRow {
                    run_id: p.run_id,
                    freq_hz: p.freq_hz,
                    bin: k as u32,
                    from_ns,
                    to_ns,
                    chunks: n as u64,
                    chunk_ns_sum: n * CHUNK_NS + excess,
                    excess_ns_sum: excess,
                }
            })
            .collect();
        RunOut {
            run,
            phases,
            timeline: Some(Timeline {
                row,
                recovery,
                gaps,
                times,
                episodes: matched,
            }),
        }
    }
}

/// Writes one simulated sweep of scenario `sc` into the new directory
/// `dir`, drawn from `seed`.
pub fn write_set(dir: &Path, sc: &Scenario, seed: u64) -> anyhow::Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let freqs: Vec<u64> = std::iter::once(0).chain(sc.rates.iter().copied()).collect();
    let mut plan: Vec<Planned> = Vec::new();
    for block in 0..BLOCKS {
        let mut runs: Vec<(Design, u64)> = DESIGNS
            .iter()
            .flat_map(|&d| freqs.iter().map(move |&f| (d, f)))
            .collect();
        runs.shuffle(&mut rng);
        for (design, freq_hz) in runs {
            plan.push(Planned {
                run_id: plan.len() as u32,
                design,
                freq_hz,
                block,
            });
        }
    }
    let run_ns = DURATION_NS + 5_000_000 + BETWEEN_RUNS_NS;
    let sweep_end = SWEEP_START_NS + plan.len() as u64 * run_ns;
    let edges = bin_edges();
    let sweep = Sweep {
        sc,
        modes: sc.hog.map_or_else(Vec::new, |h| {
            speed_modes(&mut rng, &h, SWEEP_START_NS, sweep_end)
        }),
        decay: edges
            .iter()
            .map(|&(from, _)| (-(from as f64) / AFTER_TAU_NS).exp())
            .chain(std::iter::once(0.0))
            .collect(),
        edges,
    };
    let mut out = ResultsDir::create(dir).context("creating the set")?;
    let mut phases = Vec::new();
    let mut timeline = Vec::new();
    let mut recovery = Vec::new();
    let mut started = SWEEP_START_NS;
    for &p in &plan {
        let r = sweep.run(&mut rng, p, started);
        started = r.run.ended_at_ns + BETWEEN_RUNS_NS;
        out.append_run(&r.run)?;
        phases.extend(r.phases);
        if let Some(t) = r.timeline {
            out.ensure_parent(&gaps_path(dir, p.run_id))?;
            out.ensure_parent(&samples_path(dir, p.run_id))?;
            write_gaps_parquet(&gaps_path(dir, p.run_id), &t.gaps)?;
            write_samples_parquet(&samples_path(dir, p.run_id), &t.times, &t.episodes)?;
            timeline.push(t.row);
            recovery.extend(t.recovery);
        }
    }
    out.append_phases(&phases)?;
    out.append_rows(TIMELINE_CSV, &timeline)?;
    out.append_rows(RECOVERY_CSV, &recovery)?;
    let manifest: Manifest = Manifest {
        format_version: FORMAT_VERSION,
        tool_version: "simulate".to_string(),
        git_revision: None,
        status: Status::Complete,
        started_at: "2026-12-01T00:00:00Z".to_string(),
        ended_at: Some("2026-12-01T00:10:00Z".to_string()),
        host: json!({
            "hostname": format!("sim-{}", sc.name),
            "cpu_model": "Simulated CPU",
            "kernel": "6.18.0-sim",
            "cpus": 2,
            "hypervisor_flag": true,
            "pmu_present": false,
            "sampling_event": "cpu-clock",
            "handler_source": "hrtimer",
            "kernel_hz": 250,
            "perf_event_max_sample_rate": MAX_SAMPLE_RATE,
            "perf_cpu_time_max_percent": 25,
            "perf_event_max_stack": 127,
        }),
        options: json!({
            "freqs_hz": freqs,
            "duration_ns": DURATION_NS,
            "reps": BLOCKS,
            "cpu": 1,
            "event": "cpu-clock",
            "scope": "system",
            "designs": ["paired", "gaps", "split"],
            "phase_ns": PHASE_NS,
            "seed": seed,
            "util": false,
            "samples": ["time"],
            "workloads": ["loop"],
            "command": null,
            "warmup": 0,
            "profiler": null,
            "experiment": null,
            "description": format!("simulated sweep, scenario {}", sc.name),
        }),
        seed,
        event: "cpu-clock".to_string(),
        plan: plan
            .iter()
            .map(|p| {
                json!({
                    "run_id": p.run_id,
                    "kind": "loss",
                    "design": p.design,
                    "freq_hz": p.freq_hz,
                    "sample": "time",
                    "workload": "loop",
                    "rep": p.block,
                    "block": p.block,
                })
            })
            .collect(),
        ..Manifest::default()
    };
    out.write_manifest(&manifest)?;
    Ok(())
}
