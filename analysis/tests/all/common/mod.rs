//! A small synthetic results directory in the documented format
//! (docs/results-format.md) with known utilisation and loss.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::path::Path;

use assert_cmd::Command;

/// The `analysis` binary.
pub fn bin() -> Command {
    Command::cargo_bin("analysis").unwrap()
}

/// `analysis recommend DIR --budget BUDGET --json`, which must succeed, parsed.
pub fn recommend_json(dir: &Path, budget: &str) -> serde_json::Value {
    let out = bin()
        .args([
            "recommend",
            dir.to_str().unwrap(),
            "--budget",
            budget,
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

/// Handler duration (ns, mean over the run) and the resulting factor.
pub const HANDLER_NS: u64 = 1500;
/// util % = f_kHz x HANDLER_NS x 1e-4 -> 0.15 %/kHz.
pub const DELTA: f64 = 0.15;
pub const LOSS_FIXED_PCT: f64 = 0.2;
pub const LOSS_PER_KHZ_PCT: f64 = 0.25;
pub const BASE_ITER: f64 = 1.0e9;
pub const DURATION_NS: u64 = 10_000_000_000;
pub const WINDOW_NS: u64 = 1_000_000_000;
pub const UTIL_FREQS: [u64; 3] = [1000, 4000, 10000];
pub const LOSS_FREQS: [u64; 4] = [0, 1000, 4000, 10000];
/// Extra loss in util runs (tracepoints on) at 10 kHz, in pp.
pub const TRACING_EXTRA_PP: f64 = 1.5;

pub fn loss_pct(freq_hz: u64) -> f64 {
    if freq_hz == 0 {
        0.0
    } else {
        LOSS_FIXED_PCT + LOSS_PER_KHZ_PCT * freq_hz as f64 / 1000.0
    }
}

/// Multipliers with mean exactly 1, so the mean loss is exact.
const NOISE: [f64; 4] = [1.0008, 0.9992, 1.0004, 0.9996];

struct Row {
    run_id: usize,
    kind: &'static str,
    design: &'static str,
    freq: u64,
    rep: usize,
    iterations: u64,
    throttled: u64,
    achieved: f64,
    status: &'static str,
    error: &'static str,
}

/// Write the directory. Returns the run ids of the util runs.
pub fn write_results(dir: &Path) -> Vec<usize> {
    std::fs::create_dir_all(dir.join("events")).unwrap();
    let mut rows = Vec::new();
    let mut id = 0;
    for &f in &LOSS_FREQS {
        for (rep, n) in NOISE.iter().enumerate() {
            let it = BASE_ITER * (1.0 - loss_pct(f) / 100.0) * n;
            rows.push(Row {
                run_id: id,
                kind: "loss",
                design: "classic",
                freq: f,
                rep,
                iterations: it.round() as u64,
                throttled: 0,
                achieved: f as f64,
                status: "ok",
                error: "",
            });
            id += 1;
        }
    }
    let mut util_ids = Vec::new();
    for &f in &UTIL_FREQS {
        for (rep, noise) in NOISE.iter().enumerate().take(3) {
            let extra = if f == 10000 { TRACING_EXTRA_PP } else { 0.0 };
            let it = BASE_ITER * (1.0 - (loss_pct(f) + extra) / 100.0) * noise;
            rows.push(Row {
                run_id: id,
                kind: "util",
                design: "classic",
                freq: f,
                rep,
                iterations: it.round() as u64,
                throttled: if f == 10000 && rep == 1 { 3 } else { 0 },
                achieved: f as f64,
                status: "ok",
                error: "",
            });
            write_events(dir, id, f, rep);
            util_ids.push(id);
            id += 1;
        }
    }
    // A failed run: excluded, warned about.
    rows.push(Row {
        run_id: id,
        kind: "loss",
        design: "classic",
        freq: 4000,
        rep: 9,
        iterations: 0,
        throttled: 0,
        achieved: 0.0,
        status: "failed",
        error: "workload exited with status 1",
    });
    id += 1;
    // A paired run at 4000 Hz (ABBA groups).
    let paired_id = id;
    rows.push(Row {
        run_id: paired_id,
        kind: "loss",
        design: "paired",
        freq: 4000,
        rep: 0,
        iterations: 0,
        throttled: 0,
        achieved: 3000.0, // below 90% of the request: a warning
        status: "ok",
        error: "",
    });

    let mut csv = String::from(
        "run_id,kind,design,block,freq_hz,rep,event,requested_event,scope,cpu,duration_ns,iterations,wall_ns,window_ns,samples,achieved_hz,throttled,lost,duplicates,handler_intervals,unmatched,steal_ns,nvcsw,nivcsw,quiet,noisy,driver_cpu_ns,started_at_ns,ended_at_ns,status,error,extra_driver_column,driver_cpu_sampling_ns\n",
    );
    for r in &rows {
        let event = if r.freq == 0 { "" } else { "cpu-clock" };
        let req = if r.freq == 0 { "" } else { "cycles" };
        writeln!(
            csv,
            "{},{},{},0,{},{},{event},{req},cpu,1,{DURATION_NS},{},{DURATION_NS},{WINDOW_NS},{},{},{},0,0,0,0,0,1,0,true,false,1000,0,0,{},\"{}\",x,{}",
            r.run_id, r.kind, r.design, r.freq, r.rep, r.iterations, r.freq, r.achieved, r.throttled, r.status, r.error,
            // One util run whose driver used 5% of the 1 s window: warned about.
            if r.kind == "util" && r.freq == 10000 && r.rep == 2 { 50_000_000 } else { 2_000_000 }
        )
        .unwrap();
    }
    std::fs::write(dir.join("runs.csv"), csv).unwrap();

    // Phases of the paired run: off,on,on,off x 3 groups, 1 s each, with a
    // linear drift that ABBA cancels.
    let mut ph = String::from("run_id,phase,sampling,start_ns,end_ns,iterations,samples\n");
    let mut t = 1_000_000_000u64;
    for g in 0..3 {
        for (k, on) in [false, true, true, false].iter().enumerate() {
            let idx = g * 4 + k;
            let drift = 1.0 - 0.0005 * idx as f64;
            let rate = 1.0e8
                * drift
                * if *on {
                    1.0 - loss_pct(4000) / 100.0
                } else {
                    1.0
                };
            writeln!(
                ph,
                "{paired_id},{idx},{on},{t},{},{},{}",
                t + 1_000_000_000,
                rate.round() as u64,
                if *on { 4000 } else { 0 }
            )
            .unwrap();
            t += 1_000_000_000;
        }
    }
    std::fs::write(dir.join("phases.csv"), ph).unwrap();

    let manifest = serde_json::json!({
        "format_version": 1,
        "tool_version": "0.1.0",
        "git_revision": null,
        "status": "complete",
        "started_at": "2026-11-23T10:00:00Z",
        "ended_at": "2026-11-23T10:10:00Z",
        "host": {"hostname": "synth", "cpu_model": "Synthetic CPU", "kernel": "6.18.0", "handler_source": "hrtimer"},
        "options": {},
        "seed": 1,
        "plan": [],
        "warnings": ["cycles: ENOENT (no hardware PMU); fell back to cpu-clock"],
        "settings_changed": [],
    });
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&manifest).unwrap(),
    )
    .unwrap();
    util_ids
}

/// Handler intervals: f per second over WINDOW_NS on CPU 1, durations
/// alternating HANDLER_NS -/+ 500 (+ 10 ns per rep above/below the mean so
/// reps differ but average to HANDLER_NS), local_timer intervals of 4000 ns,
/// and the same on CPU 0 (must be ignored).
fn write_events(dir: &Path, run_id: usize, freq: u64, rep: usize) {
    let n = (freq * WINDOW_NS / 1_000_000_000) as usize;
    let shift = [0i64, 10, -10][rep];
    let mut cpu = Vec::new();
    let mut entry = Vec::new();
    let mut dur = Vec::new();
    let mut src = Vec::new();
    for c in [1u32, 0] {
        for i in 0..n {
            let d = HANDLER_NS as i64 + if i % 2 == 0 { -500 } else { 500 } + shift;
            let t = 1_000_000 + i as u64 * (1_000_000_000 / freq);
            cpu.push(c);
            entry.push(t);
            dur.push(d as u64);
            src.push("hrtimer");
            cpu.push(c);
            entry.push(t);
            dur.push(4000);
            src.push("local_timer");
        }
    }
    analysis::write_intervals_parquet(
        &dir.join(format!("events/run-{run_id}.parquet")),
        &cpu,
        &entry,
        &dur,
        &src,
    )
    .unwrap();
}

/// A results directory shaped like a default sweep: 55 runs, util runs of
/// 10 s at 100 ... 100 000 Hz (hrtimer + local_timer intervals on the
/// measured CPU: ~2 M rows per 100 kHz run), 5 repetitions each, and 30
/// loss runs. Returns the number of interval rows written.
pub fn write_default_sweep(dir: &Path) -> usize {
    std::fs::create_dir_all(dir.join("events")).unwrap();
    let freqs = [100u64, 500, 2000, 4000, 100_000];
    let window = 10_000_000_000u64;
    let mut csv = String::from(
        "run_id,kind,design,block,freq_hz,rep,event,requested_event,scope,cpu,duration_ns,iterations,wall_ns,window_ns,samples,achieved_hz,throttled,lost,duplicates,handler_intervals,unmatched,steal_ns,nvcsw,nivcsw,quiet,noisy,driver_cpu_ns,started_at_ns,ended_at_ns,status,error\n",
    );
    let mut id = 0;
    let mut rows = 0;
    for rep in 0..5 {
        for &f in [0u64].iter().chain(&freqs) {
            let it = (BASE_ITER * (1.0 - loss_pct(f) / 100.0) * NOISE[rep % 4]) as u64;
            writeln!(csv, "{id},loss,classic,{rep},{f},{rep},cpu-clock,cpu-clock,cpu,1,{window},{it},{window},{window},{},{f},0,0,0,0,0,0,1,0,true,false,0,0,0,ok,", f * 10).unwrap();
            id += 1;
        }
        for &f in &freqs {
            let n = (f * 10) as usize;
            let mut cpu = Vec::with_capacity(2 * n);
            let mut entry = Vec::with_capacity(2 * n);
            let mut dur = Vec::with_capacity(2 * n);
            let mut src = Vec::with_capacity(2 * n);
            for i in 0..n {
                let t = i as u64 * (1_000_000_000 / f);
                let d = 1000 + (i as u64 * 7919) % 1000;
                cpu.push(1u32);
                entry.push(t);
                dur.push(d);
                src.push("hrtimer");
                cpu.push(1u32);
                entry.push(t);
                dur.push(d + 3000);
                src.push("local_timer");
            }
            rows += cpu.len();
            analysis::write_intervals_parquet(
                &dir.join(format!("events/run-{id}.parquet")),
                &cpu,
                &entry,
                &dur,
                &src,
            )
            .unwrap();
            let it = (BASE_ITER * (1.0 - loss_pct(f) / 100.0)) as u64;
            writeln!(csv, "{id},util,classic,{rep},{f},{rep},cpu-clock,cpu-clock,cpu,1,{window},{it},{window},{window},{n},{f},0,0,0,{n},0,0,1,0,true,false,0,0,0,ok,").unwrap();
            id += 1;
        }
    }
    assert_eq!(id, 55);
    std::fs::write(dir.join("runs.csv"), csv).unwrap();
    let manifest = serde_json::json!({
        "format_version": 1, "status": "complete", "host": {"hostname": "speed"},
        "warnings": [], "plan": [], "options": {}, "seed": 1, "settings_changed": [],
    });
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    rows
}

/// Gaps design: what one sample costs the loop in the synthetic set (the
/// excess of its gap), ns.
pub const GAPS_SAMPLE_EXCESS_NS: u64 = 11_900;
/// After-effect per sample in the synthetic recovery histograms, ns.
pub const GAPS_AFTER_NS: f64 = 2_000.0;
/// Background episodes' excess, ns, and their after-effect, ns: the same
/// after-effect per episode as a sample's, as the model assumes (every
/// episode of a run is charged the run's after-effect per episode).
pub const GAPS_BG_EXCESS_NS: u64 = 3_000;
pub const GAPS_BG_AFTER_NS: f64 = GAPS_AFTER_NS;
/// Frequencies of the synthetic gaps runs (0 Hz = background).
pub const GAPS_FREQS: [u64; 3] = [0, 1000, 10_000];
/// Loop window of every synthetic gaps run, ns.
pub const GAPS_WINDOW_NS: u64 = 1_000_000_000;

/// A deterministic pseudo-random stream (xorshift64*), for test data only.
pub struct Lcg(pub u64);
impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The gaps and sample times of one synthetic run: background gaps of 4 us
/// (excess [`GAPS_BG_EXCESS_NS`] x `bg_scale`) about every 700 us at
/// random, and at F > 0 one gap of 12 us (excess
/// [`GAPS_SAMPLE_EXCESS_NS`]) around each sample, periodic at F; a
/// background gap overlapping a sample's is dropped.
pub fn synthetic_gaps(
    seed: u64,
    freq_hz: u64,
    start_ns: u64,
    bg_scale: u64,
) -> (Vec<results_format::timeline::Gap>, Vec<u64>) {
    use results_format::timeline::Gap;
    let mut rng = Lcg(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let end = start_ns + GAPS_WINDOW_NS;
    let mut gaps = Vec::new();
    let mut t = start_ns + rng.next() % 700_000;
    while t + 4_000 < end {
        gaps.push(Gap {
            start_ns: t,
            end_ns: t + 4_000,
            excess_ns: GAPS_BG_EXCESS_NS * bg_scale,
            episode: 0,
        });
        t += 200_000 + rng.next() % 1_000_000;
    }
    let mut samples = Vec::new();
    if let Some(period) = 1_000_000_000u64.checked_div(freq_hz) {
        let mut s = start_ns + 20_000 + rng.next() % period;
        while s + 12_000 < end {
            samples.push(s);
            gaps.push(Gap {
                start_ns: s - 500,
                end_ns: s + 11_500,
                excess_ns: GAPS_SAMPLE_EXCESS_NS,
                episode: 0,
            });
            s += period;
        }
    }
    gaps.sort_by_key(|g| g.start_ns);
    let mut kept: Vec<Gap> = Vec::new();
    for g in gaps {
        match kept.last() {
            Some(p) if g.start_ns < p.end_ns + 100 => {
                // Overlap: keep the sample's gap (the longer one).
                if g.excess_ns == GAPS_SAMPLE_EXCESS_NS {
                    kept.pop();
                    kept.push(g);
                }
            }
            _ => kept.push(g),
        }
    }
    (kept, samples)
}

/// Write one synthetic gaps run's files; returns its timeline.csv row and
/// recovery.csv rows.
pub fn write_gaps_run(
    dir: &Path,
    run_id: u32,
    freq_hz: u64,
    rep: u32,
    bg_scale: u64,
) -> (
    results_format::timeline::TimelineRow,
    Vec<results_format::timeline::RecoveryRow>,
) {
    use results_format::timeline::*;
    let start = 5_000_000_000 + u64::from(run_id) * 2 * GAPS_WINDOW_NS;
    let (mut gaps, samples) = synthetic_gaps(u64::from(run_id) + 1, freq_hz, start, bg_scale);
    let episodes = join_episodes(&mut gaps);
    let matched = match_times(&episodes, &samples);
    let mut distinct: Vec<i64> = matched.iter().copied().filter(|&m| m >= 0).collect();
    distinct.dedup();
    let bg = gaps
        .iter()
        .filter(|g| g.excess_ns != GAPS_SAMPLE_EXCESS_NS)
        .count();
    std::fs::create_dir_all(dir.join("gaps")).unwrap();
    std::fs::create_dir_all(dir.join("samples")).unwrap();
    write_gaps_parquet(&gaps_path(dir, run_id), &gaps).unwrap();
    if freq_hz > 0 {
        write_samples_parquet(&samples_path(dir, run_id), &samples, &matched).unwrap();
    }
    let row = TimelineRow {
        run_id,
        freq_hz,
        rep,
        stamp_chunk_iterations: 40,
        stamp_chunk_ns: 100.0,
        stamp_cost_ns: 11.4,
        gap_threshold_ns: 400,
        loop_start_ns: start,
        loop_end_ns: start + GAPS_WINDOW_NS,
        tsc_per_ns: 2.5,
        gaps: gaps.len() as u64,
        gaps_dropped: 0,
        episodes: episodes.len() as u64,
        gap_time_ns: gaps.iter().map(|g| g.excess_ns).sum(),
        samples: samples.len() as u64,
        matched_samples: matched.iter().filter(|&&m| m >= 0).count() as u64,
        unmatched_samples: matched.iter().filter(|&&m| m < 0).count() as u64,
        matched_episodes: distinct.len() as u64,
        matched_excess_ns: distinct
            .iter()
            .map(|&m| episodes[m as usize].excess_ns)
            .sum(),
        warnings: String::new(),
    };
    // Recovery: the after-effect spread over the first three bins.
    let total =
        bg as f64 * GAPS_BG_AFTER_NS * bg_scale as f64 + samples.len() as f64 * GAPS_AFTER_NS;
    // The run's own reference speed is the open last bin, beyond every
    // recovery horizon (50 us at most); it has no excess.
    let edges = [
        (0u64, 250u64),
        (250, 500),
        (500, 1000),
        (1000, 100_000),
        (100_000, u64::MAX),
    ];
    let share = [0.5, 0.3, 0.2, 0.0, 0.0];
    let chunks = gaps.len() as u64 * 5;
    let rec = edges
        .iter()
        .zip(share)
        .enumerate()
        .map(|(bin, (&(from_ns, to_ns), sh))| RecoveryRow {
            run_id,
            freq_hz,
            bin: bin as u32,
            from_ns,
            to_ns,
            chunks: if bin >= 3 { 9_000_000 } else { chunks },
            chunk_ns_sum: 100.0 * chunks as f64 + total * sh,
            excess_ns_sum: total * sh,
        })
        .collect();
    (row, rec)
}

/// A results directory with the gaps design at [`GAPS_FREQS`] (3 runs
/// each; `heavy_zero_run`: the first 0 Hz run's background 10x heavier)
/// and paired runs at 10 kHz whose loss is `paired_loss_pct` +- 1.5 pp.
pub fn write_gaps_results(dir: &Path, paired_loss_pct: f64, heavy_zero_run: bool) {
    std::fs::create_dir_all(dir).unwrap();
    let mut csv = String::from(
        "run_id,kind,design,block,freq_hz,rep,event,requested_event,scope,cpu,duration_ns,iterations,wall_ns,window_ns,samples,achieved_hz,throttled,lost,duplicates,handler_intervals,unmatched,steal_ns,nivcsw,quiet,noisy,status,error\n",
    );
    let mut tl = csv::Writer::from_path(dir.join("timeline.csv")).unwrap();
    let mut rc = csv::Writer::from_path(dir.join("recovery.csv")).unwrap();
    let mut id = 0u32;
    for rep in 0..3u32 {
        for &f in &GAPS_FREQS {
            let scale = if heavy_zero_run && f == 0 && rep == 0 {
                10
            } else {
                1
            };
            let (row, rec) = write_gaps_run(dir, id, f, rep, scale);
            writeln!(csv, "{id},loss,gaps,{rep},{f},{rep},cpu-clock,cpu-clock,cpu,1,{GAPS_WINDOW_NS},1000000,{GAPS_WINDOW_NS},{GAPS_WINDOW_NS},{},{f},0,0,0,0,0,0,0,true,false,ok,", row.samples).unwrap();
            tl.serialize(&row).unwrap();
            for r in &rec {
                rc.serialize(r).unwrap();
            }
            id += 1;
        }
    }
    tl.flush().unwrap();
    rc.flush().unwrap();
    // Paired runs at 10 kHz: 2 runs x 3 ABBA groups.
    let mut ph = String::from("run_id,phase,sampling,start_ns,end_ns,iterations,samples\n");
    let noise = [[-1.5, 1.5, 0.5], [-0.5, 1.0, -1.0]];
    for (k, groups) in noise.iter().enumerate() {
        let pid = 100 + k;
        writeln!(csv, "{pid},loss,paired,0,10000,{k},cpu-clock,cpu-clock,cpu,1,12000000000,1000000,12000000000,6000000000,60000,10000,0,0,0,0,0,0,0,true,false,ok,").unwrap();
        let mut t = 0u64;
        for (g, n) in groups.iter().enumerate() {
            for (j, on) in [false, true, true, false].iter().enumerate() {
                let rate = if *on {
                    1e8 * (1.0 - (paired_loss_pct + n) / 100.0)
                } else {
                    1e8
                };
                writeln!(
                    ph,
                    "{pid},{},{on},{t},{},{},0",
                    g * 4 + j,
                    t + 1_000_000_000,
                    rate.round() as u64
                )
                .unwrap();
                t += 1_000_000_000;
            }
        }
    }
    std::fs::write(dir.join("runs.csv"), csv).unwrap();
    std::fs::write(dir.join("phases.csv"), ph).unwrap();
    let manifest = serde_json::json!({
        "format_version": 1, "status": "complete", "host": {"hostname": "gaps-synth"},
        "warnings": [], "plan": [], "options": {}, "seed": 1, "settings_changed": [],
    });
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
}
