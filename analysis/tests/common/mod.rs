//! A small synthetic results directory in the documented format
//! (docs/results-format.md) with known utilisation and loss.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::path::Path;

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
