//! Soak test of the sampler: cpu-clock at 100 kHz with every handler
//! tracepoint on, a busy loop pinned to the measured CPU, for 10 s (or
//! `soak <seconds> <freq_hz> <cpu> [no-irq]`). Prints samples, lost records and the
//! drain thread's CPU time and placement.
//!
//! `cargo run --release -p driver --example soak -- 10 100000 1`
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use driver::probe::spin_on_cpu;
use driver::sampler::{EventKind, Sampler, SamplerConfig};

fn run() -> anyhow::Result<ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let secs: f64 = args.first().map_or(Ok(10.0), |s| s.parse())?;
    let freq: u64 = args.get(1).map_or(Ok(100_000), |s| s.parse())?;
    let cpu: u32 = args.get(2).map_or(Ok(1), |s| s.parse())?;
    // Fourth argument `no-irq`: only the hrtimer handler tracepoints.
    let irq = args.get(3).is_none_or(|s| s != "no-irq");
    let mut cfg = SamplerConfig::new(EventKind::CpuClock, freq, cpu);
    cfg.trace_handler = true;
    cfg.trace_irq = irq;
    let s = Sampler::open(&cfg)?;
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = spin_on_cpu(cpu, Arc::clone(&stop));
    std::thread::sleep(Duration::from_millis(50));
    s.enable()?;
    std::thread::sleep(Duration::from_secs_f64(secs));
    s.disable()?;
    stop.store(true, Ordering::Relaxed);
    let _ = spinner.join();
    let o = s.finish()?;
    let hr = o
        .intervals
        .iter()
        .filter(|i| i.source == driver::handler::HandlerSource::Hrtimer)
        .count();
    let lt = o.intervals.len() - hr;
    println!("duration_s              {secs}");
    println!("freq_hz                 {freq}");
    println!("measured_cpu            {cpu}");
    println!("enabled_ns              {}", o.enabled_ns);
    println!("samples                 {}", o.samples);
    println!(
        "achieved_hz             {:.0}",
        o.samples as f64 / (o.enabled_ns as f64 / 1e9)
    );
    println!("hrtimer_intervals       {hr}");
    println!("local_timer_intervals   {lt}");
    println!("unmatched               {}", o.unmatched);
    println!("foreign_intervals       {}", o.foreign_intervals);
    println!("duplicates              {}", o.duplicates);
    println!(
        "lost                    {} (LOST records {}, PERF_FORMAT_LOST {})",
        o.lost, o.lost_records, o.lost_read
    );
    println!("lost_samples            {}", o.lost_samples);
    println!("throttled/unthrottled   {}/{}", o.throttled, o.unthrottled);
    println!("drained_bytes           {}", o.drained_bytes);
    println!("drain_cpu_s             {:.4}", o.drain_cpu_ns as f64 / 1e9);
    println!("drain_cpu               {:?}", o.drain_cpu);
    println!(
        "drain_passes            {} ({} on the measured cpu)",
        o.drain_passes, o.drain_passes_on_measured_cpu
    );
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    match run() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
