//! Cost of the loop's stop mechanism and counter publishing.
//!
//! Variants, all doing the same number of loop iterations `N` with the
//! production chunk size (calibrated as in a real run):
//!
//! - `bare`: one `count_chunk(0, N)`: the loop with nothing else;
//! - `stop_check`: `run_until` without a counter: per chunk, one Relaxed load of
//!   the stop flag and a compare (what a run without `--counter` does);
//! - `stop_check+publish`: as above plus a Release store of the count into a
//!   mapped counter file (what a run with `--counter` does);
//! - `clock_check`: `run_until_clock`: a CLOCK_MONOTONIC_RAW read per chunk
//!   (the amortised-clock alternative, used in the last margin of a run).
//!
//! The variants run interleaved in rounds (order rotated each round); the
//! overhead is the median over rounds of (variant time / bare time in the same
//! round) - 1, so slow spells of the shared VM hit both sides of a ratio.
//! Minimum times are reported too.
//!
//! `cargo bench -p workload --bench stop_check` (timing), or for exact
//! instruction counts run the bench binary under callgrind with
//! `--callgrind <variant>` and compare the `Ir` of `count_chunk` with the
//! self cost of `run_until` / `run_until_clock`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use workload::clock::monotonic_raw_ns;
use workload::counter::CounterWriter;
use workload::run::{calibrate_chunk, run_until, run_until_clock};
use workload::work::Loop;
use workload::work::count_chunk;

const VARIANTS: [&str; 4] = ["bare", "stop_check", "stop_check+publish", "clock_check"];

fn run_variant(v: usize, n: u64, chunk: u64, stop: &AtomicBool, w: &CounterWriter) -> u64 {
    match v {
        0 => count_chunk(0, n),
        1 => run_until(&mut Loop, stop, None, chunk, 0, n),
        2 => run_until(&mut Loop, stop, Some(w.iterations_slot()), chunk, 0, n),
        _ => {
            // Deadline far away: stop by count instead. Run `n / chunk` chunks.
            let mut count = 0;
            while count < n {
                count = run_until_clock(&mut Loop, None, chunk, count, 0).0;
                // (deadline 0 ends after one chunk: one clock read per chunk)
            }
            count
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = tempfile::tempdir().unwrap();
    let writer = CounterWriter::create(&dir.path().join("counter")).unwrap();
    let stop = AtomicBool::new(false);

    if let Some(i) = args.iter().position(|a| a == "--callgrind") {
        let name = args.get(i + 1).map(String::as_str).unwrap_or("stop_check");
        callgrind(name, &stop, &writer);
        return;
    }

    // Pin to the last allowed CPU, like the workload under test.
    if let Ok(cpus) = workload::run::allowed_cpus()
        && let Some(&cpu) = cpus.last()
    {
        let _ = workload::run::pin_to_cpu(cpu as u32);
    }
    let settings = Settings::calibrated();
    let times = interleaved_rounds(&settings, &stop, &writer);
    print_table(&settings, &times);
}

/// One variant with a fixed chunk and a fixed N, for deterministic
/// instruction counts under callgrind.
fn callgrind(name: &str, stop: &AtomicBool, writer: &CounterWriter) {
    let v = VARIANTS
        .iter()
        .position(|&x| x == name)
        .expect("unknown variant");
    let n = 1u64 << 22;
    let chunk = 4096;
    let got = black_box(run_variant(v, n, chunk, stop, writer));
    println!("{name}: {got} iterations, chunk {chunk}");
}

/// The bench's sizes: the chunk (calibrated, or forced), the iterations
/// per sample and how long to run.
struct Settings {
    /// Iterations per chunk.
    chunk: u64,
    /// Time of one chunk, ns.
    chunk_ns: f64,
    /// Iterations per sample.
    n: u64,
    /// How long the rounds run, s.
    budget_s: f64,
}

impl Settings {
    /// Calibrates the chunk as a real run does. STOP_CHECK_CHUNK=<iterations>
    /// forces a (short) chunk so the per-boundary cost is magnified above
    /// the noise (its time is scaled from the real chunk);
    /// STOP_CHECK_SECONDS sets the time (default 4 s).
    fn calibrated() -> Settings {
        let (mut chunk, mut chunk_ns) = calibrate_chunk(&mut workload::work::Loop, 1 << 16);
        if let Some(c) = std::env::var("STOP_CHECK_CHUNK")
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
        {
            chunk_ns *= c as f64 / chunk as f64;
            chunk = c;
        }
        let budget_s: f64 = std::env::var("STOP_CHECK_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(4.0);
        Settings {
            chunk,
            chunk_ns,
            n: 1 << 22,
            budget_s,
        }
    }
}

/// Each variant's time per iteration (ns), one entry per round.
struct Times {
    /// Indexed by variant, then round.
    per_variant: Vec<Vec<f64>>,
    /// Rounds run.
    rounds: usize,
}

/// Warms each variant up once, then runs them in rounds, the order rotated
/// each round, until the time budget is spent.
fn interleaved_rounds(s: &Settings, stop: &AtomicBool, writer: &CounterWriter) -> Times {
    let (n, chunk) = (s.n, s.chunk);
    for v in 0..VARIANTS.len() {
        black_box(run_variant(v, n, chunk, stop, writer));
    }

    let mut times: Vec<Vec<f64>> = vec![Vec::new(); VARIANTS.len()];
    let started = Instant::now();
    let mut round = 0usize;
    while started.elapsed().as_secs_f64() < s.budget_s {
        for k in 0..VARIANTS.len() {
            let v = (k + round) % VARIANTS.len();
            let t0 = monotonic_raw_ns();
            let got = black_box(run_variant(v, n, chunk, stop, writer));
            let dt = monotonic_raw_ns() - t0;
            assert!(got >= n);
            // Normalise by the iterations actually done (whole chunks).
            times[v].push(dt as f64 / got as f64);
        }
        round += 1;
    }
    Times {
        per_variant: times,
        rounds: round,
    }
}

/// The table: per variant, its time per iteration and its overhead over
/// `bare`, as a share and per chunk boundary.
fn print_table(s: &Settings, t: &Times) {
    let (n, chunk, chunk_ns, round) = (s.n, s.chunk, s.chunk_ns, t.rounds);
    let times = &t.per_variant;
    println!(
        "stop_check bench: N = {n} iterations per sample, chunk = {chunk} iterations (~{chunk_ns:.0} ns), {round} interleaved rounds"
    );
    println!(
        "{:<20} {:>12} {:>12} {:>16} {:>16} {:>14}",
        "variant", "min ns/it", "median ns/it", "overhead median", "overhead IQR", "overhead (min)"
    );
    let bare_min = times[0].iter().copied().fold(f64::INFINITY, f64::min);
    for (v, name) in VARIANTS.iter().enumerate() {
        let mut ratios: Vec<f64> = times[v]
            .iter()
            .zip(&times[0])
            .map(|(x, b)| (x / b - 1.0) * 100.0)
            .collect();
        ratios.sort_by(f64::total_cmp);
        let q = |p: f64| ratios[((ratios.len() - 1) as f64 * p).round() as usize];
        let mut sorted = times[v].clone();
        sorted.sort_by(f64::total_cmp);
        let min = sorted[0];
        let med = sorted[sorted.len() / 2];
        // Cost per chunk boundary in ns, from the minima and from the median ratio.
        let per_boundary_min = (min - bare_min) * chunk as f64;
        let bare_med = {
            let mut b = times[0].clone();
            b.sort_by(f64::total_cmp);
            b[b.len() / 2]
        };
        let per_boundary_med = q(0.5) / 100.0 * bare_med * chunk as f64;
        println!(
            "{:<20} {:>12.4} {:>12.4} {:>15.3}% {:>7.3}..{:<7.3}% {:>13.3}%   per chunk: {:.2} ns (min) {:.2} ns (median ratio)",
            name,
            min,
            med,
            q(0.5),
            q(0.25),
            q(0.75),
            (min / bare_min - 1.0) * 100.0,
            per_boundary_min,
            per_boundary_med
        );
    }
}
