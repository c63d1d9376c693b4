//! Soak test of the sampler: cpu-clock at 100 kHz with every handler
//! tracepoint on, a busy loop pinned to the measured CPU, for 10 s (or
//! `soak <seconds> <freq_hz> <cpu> [no-irq] [online] [sample=CONTENTS]
//! [perf-trace]`: `sample=` sets the sample contents as `driver sweep
//! --sample` does, `perf-trace` gives the tracepoint records the fields
//! `perf record` writes on them: IP, TID, CPU, PERIOD). Prints samples, lost
//! records, the handler durations, and what the driver cost: the process's
//! CPU time while sampling was enabled (the busy loop runs in a child
//! process, so this is the driver alone) and the drain thread's CPU time in
//! all, decoding after the run included.
//!
//! `online` sizes the rings as without an expected duration (16 MiB), so
//! records are decoded while the workload runs, as before the rings held the
//! whole run.
//!
//! `cargo run --release -p driver --example soak -- 10 100000 1`
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use driver::contents::SampleContents;
use driver::handler::HandlerSource;
use driver::perf::attr::sample;
use driver::sampler::{EventKind, Sampler, SamplerConfig, SamplerOutcome};
use results_format::RunRow;

fn spin(cpu: u32, secs: f64) {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu as usize);
    let _ = rustix::thread::sched_setaffinity(None, &set);
    let t = Instant::now();
    let mut n = 0u64;
    while t.elapsed().as_secs_f64() < secs {
        for _ in 0..1000 {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn run() -> anyhow::Result<ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--spin") {
        spin(args[1].parse()?, args[2].parse()?);
        return Ok(ExitCode::SUCCESS);
    }
    let soak = Soak::parse(&args)?;
    let (r, o, finish_s) = soak.measure()?;
    soak.print(&r, &o, finish_s);
    Ok(ExitCode::SUCCESS)
}

/// What to soak: for how long, at what rate, on which CPU, with which
/// sampler.
struct Soak {
    /// Sampling time, s.
    secs: f64,
    /// Sampling frequency, Hz.
    freq: u64,
    /// The measured CPU (the busy loop runs there).
    cpu: u32,
    /// The sampler's configuration.
    cfg: SamplerConfig,
}

impl Soak {
    /// From the command line (see the module docs).
    fn parse(args: &[String]) -> anyhow::Result<Soak> {
        let secs: f64 = args.first().map_or(Ok(10.0), |s| s.parse())?;
        let freq: u64 = args.get(1).map_or(Ok(100_000), |s| s.parse())?;
        let cpu: u32 = args.get(2).map_or(Ok(1), |s| s.parse())?;
        let irq = !args.iter().any(|s| s == "no-irq");
        let online = args.iter().any(|s| s == "online");
        let mut cfg = SamplerConfig::new(EventKind::CpuClock, freq, cpu);
        if let Some(c) = args.iter().find_map(|s| s.strip_prefix("sample=")) {
            cfg.contents = SampleContents::parse(c)?;
        }
        if args.iter().any(|s| s == "perf-trace") {
            cfg.trace_extra_fields = sample::IP | sample::TID | sample::CPU | sample::PERIOD;
        }
        cfg.trace_handler = true;
        cfg.trace_irq = irq;
        if !online {
            cfg.expected_duration = Some(Duration::from_secs_f64(secs));
        }
        Ok(Soak {
            secs,
            freq,
            cpu,
            cfg,
        })
    }

    /// Opens the sampler, starts the busy loop, samples it for `secs` and
    /// finishes the sampler; returns what it measured and how long
    /// finishing took, s.
    fn measure(&self) -> anyhow::Result<(RunRow, SamplerOutcome, f64)> {
        let s = Sampler::open(&self.cfg)?;
        // /proc/self/exe, not current_exe(): the running binary even when a
        // rebuild has replaced the file at its path (as the driver does).
        let mut child = Command::new("/proc/self/exe")
            .args([
                "--spin",
                &self.cpu.to_string(),
                &(self.secs + 1.0).to_string(),
            ])
            .spawn()?;
        std::thread::sleep(Duration::from_millis(200));
        s.enable()?;
        std::thread::sleep(Duration::from_secs_f64(self.secs));
        s.disable()?;
        let t = Instant::now();
        let mut r = RunRow::default();
        let o = s.finish(&mut r)?;
        let finish_s = t.elapsed().as_secs_f64();
        let _ = child.wait();
        Ok((r, o, finish_s))
    }

    /// Prints the outcome, one `name value` line each.
    fn print(&self, r: &RunRow, o: &SamplerOutcome, finish_s: f64) {
        let (secs, freq, cpu) = (self.secs, self.freq, self.cpu);
        let of = |src: HandlerSource| -> Vec<u64> {
            o.intervals
                .iter()
                .filter(|i| i.source == src)
                .map(|i| i.duration_ns)
                .collect()
        };
        let (hr, lt) = (of(HandlerSource::Hrtimer), of(HandlerSource::LocalTimer));
        println!("duration_s              {secs}");
        println!("freq_hz                 {freq}");
        println!("measured_cpu            {cpu}");
        println!("ring_mib                {}", o.ring_bytes >> 20);
        println!("enabled_ns              {}", r.window_ns);
        println!("samples                 {}", r.samples);
        println!(
            "achieved_hz             {:.0}",
            r.samples as f64 / (r.window_ns as f64 / 1e9)
        );
        println!("sample_contents         {}", self.cfg.contents);
        println!(
            "hrtimer_intervals       {} (median {} ns, mean {:.1} ns)",
            hr.len(),
            median(hr.clone()),
            hr.iter().sum::<u64>() as f64 / hr.len().max(1) as f64
        );
        println!(
            "callchain_mean          {:.1}",
            o.contents.callchain_entries as f64 / o.contents.samples.max(1) as f64
        );
        println!(
            "local_timer_intervals   {} (median {} ns)",
            lt.len(),
            median(lt.clone())
        );
        println!("unmatched               {}", r.unmatched);
        println!("foreign_intervals       {}", r.foreign_intervals);
        println!("duplicates              {}", r.duplicates);
        println!(
            "lost                    {} (LOST records {}, PERF_FORMAT_LOST {})",
            r.lost, o.lost_records, o.lost_read
        );
        println!("lost_samples            {}", r.lost_samples);
        println!("throttled/unthrottled   {}/{}", r.throttled, r.unthrottled);
        println!("drained_bytes           {}", o.drained_bytes);
        println!("drained_in_window_bytes {}", r.decoded_while_sampling_bytes);
        println!(
            "window_cpu_s            {:.4}   <- the driver's CPU while sampling",
            r.driver_cpu_sampling_ns as f64 / 1e9
        );
        println!(
            "drain_cpu_s             {:.4}   (drain thread in all, decoding after the run included)",
            o.drain_cpu_ns as f64 / 1e9
        );
        println!("finish_wall_s           {finish_s:.3}");
        println!("drain_cpu               {:?}", o.drain_cpu);
        println!(
            "drain_passes            {} ({} on the measured cpu)",
            o.drain_passes, o.drain_passes_on_measured_cpu
        );
    }
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
