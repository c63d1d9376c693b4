//! The sampler against the real kernel. With PERF_TESTS=require these fail
//! when perf is unavailable; otherwise they skip with a printed reason
//! (tests/all/common).
//!
//! What they assert holds however busy the host is: a session
//! opened, sampled the CPU it was given, lost nothing, and its records are
//! consistent with each other (samples inside handler intervals, on the
//! right CPU, in time order). How many samples a second the kernel
//! delivered is a magnitude a busy host moves: only a loose floor (a tenth
//! to a quarter of the rate) is asserted; the rate achieved is measured by
//! the main command's report (runs.csv achieved_hz) and by
//! analysis/validate/gaps_vs_perf_record.py on a quiet machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use driver::handler::HandlerSource;
use driver::perf::PerfError;
use driver::probe::spin_on_cpu;
use driver::sampler::{self, EventKind, Sampler, SamplerConfig, SamplerOutcome};
use results_format::RunRow;

/// One session at a time: they share the CPUs.
static SERIAL: Mutex<()> = Mutex::new(());

fn measured_cpu() -> u32 {
    *sampler::online_cpus().unwrap().last().unwrap()
}

/// A session of `secs` on a spinning measured CPU: its row's columns and
/// the rest of what it measured.
fn run(cfg: &SamplerConfig, secs: f64) -> (RunRow, SamplerOutcome) {
    let s = Sampler::open(cfg).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = spin_on_cpu(cfg.measured_cpu, Arc::clone(&stop));
    std::thread::sleep(Duration::from_millis(30));
    s.enable().unwrap();
    std::thread::sleep(Duration::from_secs_f64(secs));
    s.disable().unwrap();
    stop.store(true, Ordering::Relaxed);
    spinner.join().unwrap();
    let mut row = RunRow::default();
    let o = s.finish(&mut row).unwrap();
    (row, o)
}

#[test]
fn cpu_clock_1khz_samples_and_handler_intervals() {
    if !common::perf_ready() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cpu = measured_cpu();
    let mut cfg = SamplerConfig::new(EventKind::CpuClock, 1000, cpu);
    cfg.trace_handler = true;
    let (r, o) = run(&cfg, 0.5);
    let expected = 1000.0 * r.window_ns as f64 / 1e9;
    // Enabled across the 0.5 s sleep; a busy host can wake this thread
    // late, so the ceiling (0.8 s on a quiet host) is loose.
    assert!(
        r.window_ns > 450_000_000 && r.window_ns < 5_000_000_000,
        "{}",
        r.window_ns
    );
    // A quarter of the rate at least (0.9 on a quiet host, a magnitude).
    assert!(
        r.samples as f64 >= 0.25 * expected,
        "samples {} expected {expected}",
        r.samples
    );
    // Each sample lies inside one of our handler intervals.
    let matched = o
        .sample_times_ns
        .iter()
        .filter(|&&t| {
            let i = o.intervals.partition_point(|iv| iv.entry_ns <= t);
            i > 0 && t <= o.intervals[i - 1].exit_ns()
        })
        .count();
    assert!(
        matched as f64 >= 0.95 * r.samples as f64,
        "matched {matched} of {}",
        r.samples
    );
    assert!(
        o.intervals
            .iter()
            .all(|i| i.source == HandlerSource::Hrtimer && i.cpu == cpu)
    );
    assert!(
        o.intervals
            .iter()
            .all(|i| i.duration_ns > 0 && i.duration_ns < 1_000_000)
    );
    assert_eq!(r.lost, 0);
    assert_eq!(o.drain_passes_on_measured_cpu, 0);
    assert!(o.sample_times_ns.windows(2).all(|w| w[0] <= w[1]));
}

/// cpu-clock at 100 kHz on the measured CPU for 1 s with all four handler
/// tracepoints; `expected`: the duration the rings are sized for.
fn traced_100khz(expected: Option<Duration>) -> (SamplerConfig, RunRow, SamplerOutcome) {
    let mut cfg = SamplerConfig::new(EventKind::CpuClock, 100_000, measured_cpu());
    cfg.trace_handler = true;
    cfg.trace_irq = true;
    cfg.expected_duration = expected;
    let (r, o) = run(&cfg, 1.0);
    // Nothing lost, busy host or not: a ring sized for the run holds it
    // all; the 16 MiB one receives ~18 MB in this second, so the drain
    // thread decodes while it runs, which it does in time even sharing its
    // CPU with a busy loop (stress-ng on CPU 0, the drain's, 2026-11-26).
    assert_eq!(r.lost, 0, "lost {} records", r.lost);
    assert_eq!(r.lost_samples, 0);
    // The kernel throttles cpu-clock above ~50 kHz, and with all four
    // tracepoints on a slow day it delivered 46 799 in this second
    // (2026-11-25, when a sample cost this VM ~20 us): the check is that
    // the run sampled densely and lost nothing, not a rate (a tenth of it).
    assert!(r.samples > 10_000, "samples {}", r.samples);
    (cfg, r, o)
}

fn count(o: &SamplerOutcome, source: HandlerSource) -> f64 {
    o.intervals.iter().filter(|i| i.source == source).count() as f64
}

#[test]
fn cpu_clock_100khz_with_all_tracepoints_loses_nothing() {
    if !common::perf_ready() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_, r, o) = traced_100khz(None);
    // ~18 MB into a 16 MiB ring: the drain thread had to decode during the
    // run (its free space fell below the 8 MiB reserve), and lost nothing.
    // On a slow day the kernel delivers less (a sample cost 2x as much on
    // 2026-11-28 and 11-29, and under 8 MiB arrived): the decoding during
    // the run is checked where more than 12 MiB arrived, so that the free
    // space surely fell below the reserve.
    assert_eq!(o.ring_bytes, 16 << 20);
    if o.drained_bytes > 12 << 20 {
        assert!(
            r.decoded_while_sampling_bytes > 0,
            "nothing decoded during the run, of {} bytes",
            o.drained_bytes
        );
    } else {
        eprintln!(
            "only {} bytes arrived: the ring never needed a drain during the run",
            o.drained_bytes
        );
    }
    let lt = count(&o, HandlerSource::LocalTimer);
    assert!(lt > 0.5 * r.samples as f64, "local_timer intervals {lt}");
}

#[test]
fn a_ring_sized_for_the_run_is_not_decoded_while_it_runs() {
    if !common::perf_ready() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (cfg, r, o) = traced_100khz(Some(Duration::from_secs(1)));
    assert_eq!(
        o.ring_bytes,
        sampler::ring_bytes_for(&cfg, cfg.measured_cpu)
    );
    assert!(o.ring_bytes > 16 << 20, "ring {}", o.ring_bytes);
    assert_eq!(r.decoded_while_sampling_bytes, 0);
    // Everything was decoded after the run.
    assert!(o.drained_bytes as f64 > 100.0 * r.samples as f64);
    let hr = count(&o, HandlerSource::Hrtimer);
    assert!(
        hr >= 0.95 * r.samples as f64,
        "{hr} hrtimer intervals for {} samples",
        r.samples
    );
}

#[test]
fn sample_freq_above_the_max_names_the_sysctl() {
    if !common::perf_ready() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let max: u64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let cfg = SamplerConfig::new(EventKind::CpuClock, max + 1, measured_cpu());
    let err = Sampler::open(&cfg).unwrap_err();
    assert!(
        matches!(
            err,
            PerfError::Open {
                errno: libc::EINVAL,
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("kernel.perf_event_max_sample_rate"), "{msg}");
    assert!(
        msg.contains(&max.to_string()) && msg.contains("--raise-max-rate"),
        "{msg}"
    );
}

#[test]
fn cycles_resolves_to_itself_or_falls_back_loudly() {
    if !common::perf_ready() {
        return;
    }
    match sampler::resolve_event(EventKind::Cycles).unwrap() {
        (EventKind::Cycles, None) => {}
        (EventKind::CpuClock, Some(w)) => {
            assert!(w.contains("cpu-clock") && w.contains("cycles"), "{w}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        sampler::resolve_event(EventKind::CpuClock).unwrap(),
        (EventKind::CpuClock, None)
    );
}

#[test]
fn a_zero_hz_sampler_opens_counts_and_never_fires() {
    if !common::perf_ready() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = SamplerConfig::new(EventKind::CpuClock, 0, measured_cpu());
    let (r, _) = run(&cfg, 0.3);
    // Enabled (the toggling is real) but not one sample in 0.3 s of a busy CPU.
    assert!(r.window_ns > 250_000_000, "{r:?}");
    assert_eq!((r.samples, r.samples_all_cpus, r.lost), (0, 0, 0), "{r:?}");
}

#[test]
fn bad_config_is_refused_before_opening() {
    let mut cfg = SamplerConfig::new(EventKind::CpuClock, 1000, 0);
    cfg.measured_cpu = 4096;
    let e = Sampler::open(&cfg).unwrap_err().to_string();
    assert!(e.contains("measured_cpu") && e.contains("4096"), "{e}");
}

#[test]
fn task_scope_samples_a_child_process_with_handler_intervals() {
    if !common::perf_ready() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cpu = measured_cpu();
    let mut child = std::process::Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu as usize);
    rustix::thread::sched_setaffinity(rustix::process::Pid::from_raw(pid), &set).unwrap();
    let mut cfg = SamplerConfig::new(EventKind::CpuClock, 1000, cpu);
    cfg.scope = sampler::Scope::Task(pid);
    cfg.trace_handler = true;
    let s = Sampler::open(&cfg).unwrap();
    s.enable().unwrap();
    std::thread::sleep(Duration::from_millis(400));
    s.disable().unwrap();
    let mut r = RunRow::default();
    let o = s.finish(&mut r).unwrap();
    child.kill().unwrap();
    let _ = child.wait();
    // 400 ms at 1 kHz of a child that shares its CPU with whatever else
    // runs there: a tenth, not a rate (a magnitude; 300 had been asserted).
    assert!(r.samples >= 40, "samples {}", r.samples);
    assert!(
        o.intervals.len() as f64 >= 0.9 * r.samples as f64,
        "{} intervals",
        o.intervals.len()
    );
    assert!(r.window_ns >= 400_000_000, "{}", r.window_ns);
}

#[test]
fn system_scope_opens_every_cpu_and_keeps_measured_cpu_apart() {
    if !common::perf_ready() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cpus = sampler::online_cpus().unwrap();
    let mut cfg = SamplerConfig::new(EventKind::CpuClock, 1000, measured_cpu());
    cfg.scope = sampler::Scope::System;
    cfg.trace_handler = true;
    let (r, o) = run(&cfg, 0.3);
    // A tenth of 0.3 s at 1 kHz (a magnitude; 250 had been asserted).
    assert!(r.samples >= 30, "samples {}", r.samples);
    if cpus.len() > 1 {
        assert!(
            r.samples_all_cpus > r.samples,
            "{} vs {}",
            r.samples_all_cpus,
            r.samples
        );
    }
    assert!(o.intervals.iter().all(|i| i.cpu == cfg.measured_cpu));
    assert!(o.intervals.len() as f64 >= 0.9 * r.samples as f64);
}

/// Each sample-contents preset opens, and its samples carry what it asks
/// for: call chains walk kernel and user frames, a dwarf stack copy holds
/// the requested bytes of a user stack that is really there.
#[test]
fn sample_contents_presets_carry_their_fields() {
    use driver::contents::SampleContents;
    if !common::perf_ready() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cpu = measured_cpu();
    for contents in [
        SampleContents::Time,
        SampleContents::PerfDefault,
        SampleContents::Callchain,
        SampleContents::Dwarf { stack_bytes: 4096 },
    ] {
        let mut cfg = SamplerConfig::new(EventKind::CpuClock, 2000, cpu);
        cfg.contents = contents;
        let (r, o) = run(&cfg, 0.3);
        let c = o.contents;
        // A tenth of 0.3 s at 2 kHz (a magnitude; 300 had been asserted).
        assert!(r.samples > 60, "{contents}: {} samples", r.samples);
        assert_eq!(c.samples, r.samples, "{contents}");
        assert_eq!(r.lost, 0, "{contents}");
        match contents {
            SampleContents::Callchain => {
                assert_eq!(c.callchains, c.samples);
                // A context marker and at least one frame in each of kernel
                // and user space.
                assert!(
                    c.callchain_entries as f64 / c.samples as f64 >= 4.0,
                    "{c:?}"
                );
                assert_eq!(c.stack_copies, 0);
            }
            SampleContents::Dwarf { stack_bytes } => {
                assert_eq!(c.stack_copies, c.samples, "{c:?}");
                // Each copy is the size asked for, or empty where a sample
                // caught a task with no user stack (a kernel thread on
                // the CPU: 598 of 599 samples carried one in a CI run);
                // nearly all caught the spinner.
                let full = c.samples * u64::from(stack_bytes);
                assert_eq!(c.stack_user_bytes % u64::from(stack_bytes), 0, "{c:?}");
                assert!(
                    c.stack_user_bytes <= full && c.stack_user_bytes * 10 >= full * 9,
                    "{c:?}"
                );
                // The spinner runs in user space: most samples hold real stack.
                assert!(c.stack_dyn_bytes > 0, "{c:?}");
                assert_eq!(c.callchains, c.samples, "kernel chain");
            }
            _ => {
                assert_eq!((c.callchains, c.stack_copies), (0, 0), "{contents}");
            }
        }
    }
}
