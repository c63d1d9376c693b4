//! One measurement session: the sampling event(s), the handler tracepoints,
//! their ring buffers and the thread that drains them. What a session is
//! asked to do and how big its rings are is in `sampler/config.rs`; the
//! drain thread in `sampler/drain.rs`; opening one event in
//! `sampler/sampling_event.rs`; the session (open all, enable, finish) here.
//!
//! Layout: one ring per CPU the sampling event is opened on; the handler
//! tracepoints (CPU-wide on `measured_cpu`) send their records into the
//! measured CPU's ring with SET_OUTPUT (same CPU, same clockid
//! CLOCK_MONOTONIC_RAW). Everything is opened DISABLED; [`Sampler::enable`]
//! enables the sampling events AND the tracepoints, [`Sampler::disable`]
//! disables both, so handler intervals only come from enabled phases.
//!
//! Scopes: `Cpu` opens the sampling event CPU-wide on `measured_cpu`;
//! `System` on every online CPU (handler tracepoints still only on
//! `measured_cpu`: the intervals describe the measured CPU); `Task(pid)`
//! opens one per-task event per online CPU (pid, cpu) so each can have a
//! ring and SET_OUTPUT works, tracepoints CPU-wide on `measured_cpu`.
//!
//! Draining: the cheapest drain is none. With
//! [`SamplerConfig::expected_duration`] set, each ring is sized to hold the
//! whole run ([`ring_bytes_for`]: the estimated record bytes with a third of
//! margin, up to [`MAX_RING_DATA_BYTES`]), and the drain thread, pinned to
//! `drain_cpu` (default: the first online CPU other than `measured_cpu`),
//! only looks at each ring's head every [`DRAIN_INTERVAL`] (50 ms). It
//! decodes a ring during the run only when the ring's free space falls below
//! [`drain_reserve`] (a quarter of the ring, at least 8 MiB); everything
//! else is decoded after [`Sampler::disable`], when the workload no longer
//! runs (paired phases count samples by timestamp). Measured at
//! 100 kHz with all four tracepoints for 10 s (examples/soak.rs): decoding
//! online from 16 MiB rings cost the drain thread 0.26-0.35 s of CPU during
//! the run; with rings that hold the run the driver's CPU while sampling
//! (`driver_cpu_sampling_ns` of its row) is 7-10 ms.
//! Decoding pairs entry/exit records into compact pairs; telling our handler
//! intervals from other perf users' happens in [`Sampler::finish`] (see
//! [`crate::handler`]).
//!
//! Intervals: `hrtimer` ones are one handler run each; a `local_timer`
//! interval is one whole timer interrupt and may contain two handler runs
//! when the interrupt outlasts the sampling period (seen at 100 kHz), so
//! there can be fewer local_timer than hrtimer intervals.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
use workload::clock::monotonic_raw_ns;

use results_format::RunRow;
use serde::Serialize;

use crate::contents::SampleContents;
use crate::handler::{self, HandlerInterval, TraceEvent, TraceKind, TraceLayout};
use crate::perf::attr::{Attr, sample};
use crate::perf::error::OpenContext;
use crate::perf::record::{Formats, Record};
use crate::perf::ring::{DEFAULT_RING_DATA_BYTES, Ring};
use crate::perf::{PerfError, sys, tracefs};

mod config;
mod drain;
mod open;
mod sampling_event;

pub use config::*;
pub use drain::ContentsStats;
use drain::{DrainOutput, Drainer, IdRole, Shared};
use open::*;
use sampling_event::*;
pub use sampling_event::{NEVER_FIRES_PERIOD, resolve_event};

/// What a finished session measured besides the run's row (its columns
/// are written by [`Sampler::finish`] into the row it is given).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SamplerOutcome {
    /// The sampling event.
    pub event: EventKind,
    /// CLOCK_MONOTONIC_RAW timestamps of samples on the measured CPU (sorted).
    pub sample_times_ns: Vec<u64>,
    /// When it was first enabled, CLOCK_MONOTONIC_RAW ns (the clock of the
    /// records): a window enabled once is `[enabled_from_ns, +
    /// row.window_ns)`.
    pub enabled_from_ns: u64,
    /// Our handler intervals, sorted by entry.
    pub intervals: Vec<HandlerInterval>,
    /// CPU time of the drain thread, from its start to its end (including
    /// the decoding after the run).
    pub drain_cpu_ns: u64,
    /// Ring data size per CPU actually mapped.
    pub ring_bytes: usize,
    /// LOST records sum alone.
    pub lost_records: u64,
    /// PERF_FORMAT_LOST sum alone.
    pub lost_read: u64,
    /// CPU the drain thread was pinned to (None: could not pin, single CPU).
    pub drain_cpu: Option<u32>,
    /// Drain passes that ran on the measured CPU (should be 0).
    pub drain_passes_on_measured_cpu: u64,
    /// Drain passes in total.
    pub drain_passes: u64,
    /// Bytes of records drained.
    pub drained_bytes: u64,
    /// What the measured CPU's samples carried.
    pub contents: ContentsStats,
}

/// Online CPUs from /sys/devices/system/cpu/online ("0-3,5").
pub fn online_cpus() -> Result<Vec<u32>, PerfError> {
    let path = "/sys/devices/system/cpu/online";
    let text = PerfError::read(path.as_ref())?;
    parse_cpu_list(&text).ok_or_else(|| PerfError::Format {
        path: path.into(),
        line: 1,
        reason: format!("not a CPU list: `{}`", text.trim()),
    })
}

/// Parses a kernel CPU list ("0-3,5"); empty text is an empty list.
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?);
                if b < a {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// An open event: its fd, its CPU, its record id and what its records are.
#[derive(Debug)]
struct OpenEvent {
    fd: OwnedFd,
    cpu: u32,
    id: u64,
    role: IdRole,
}

/// One measurement session (see the module docs).
#[derive(Debug)]
pub struct Sampler {
    cfg: SamplerConfig,
    /// The sampling event on each CPU.
    sampling: Vec<OpenEvent>,
    /// The handler's tracepoints on the measured CPU.
    traces: Vec<OpenEvent>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<DrainOutput>>,
    drain_cpu: Option<u32>,
    nmi_handler: Option<u64>,
    enabled_at: AtomicU64,
    /// When the session was first enabled (CLOCK_MONOTONIC_RAW, ns; 0
    /// before): where the window of a run enabled once starts.
    first_enabled_at: AtomicU64,
    enabled_total: AtomicU64,
    cpu_at_enable: AtomicU64,
    window_cpu: AtomicU64,
    ring_bytes: usize,
}

impl Sampler {
    /// Opens everything DISABLED, maps the rings and starts the drain thread.
    pub fn open(cfg: &SamplerConfig) -> Result<Sampler, PerfError> {
        let online = online_cpus()?;
        validate(cfg, &online)?;
        let (sampling, measured) =
            open_sampling(cfg, &cfg.cpus(&online), cfg.task().unwrap_or(-1))?;
        // SET_OUTPUT needs the target's ring mapped: map before the tracepoints.
        let (mut rings, ring_bytes) = map_rings(cfg, &sampling)?;
        let (traces, nmi_handler) = open_tracepoints(cfg, &sampling[measured].fd)?;
        let ids: Vec<(u64, IdRole)> = (sampling.iter().chain(&traces))
            .map(|e| (e.id, e.role.clone()))
            .collect();
        let formats = formats_by_id(cfg, &ids)?;
        for ring in &mut rings {
            ring.set_formats(formats.clone());
        }

        let drain_cpu = cfg
            .drain_cpu
            .or_else(|| online.iter().copied().find(|&c| c != cfg.measured_cpu));
        if drain_cpu.is_none() {
            tracing::warn!("only one online CPU: the drain thread shares the measured CPU");
        }
        let shared = Arc::new(Shared::default());
        let drainer = Drainer {
            rings,
            ids,
            measured_cpu: cfg.measured_cpu,
            all_cpu_samples: cfg.task().is_some(),
            shared: Arc::clone(&shared),
            out: DrainOutput::default(),
            interval: Duration::from_millis(
                std::env::var("PERF_DRAIN_MS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(DRAIN_INTERVAL.as_millis() as u64),
            ),
        };
        let thread = std::thread::Builder::new()
            .name("perf-drain".into())
            .spawn(move || drainer.run(drain_cpu))
            .map_err(|e| PerfError::Drain(format!("cannot start the drain thread: {e}")))?;
        Ok(Sampler {
            cfg: cfg.clone(),
            sampling,
            traces,
            shared,
            thread: Some(thread),
            drain_cpu,
            nmi_handler,
            enabled_at: AtomicU64::new(0),
            first_enabled_at: AtomicU64::new(0),
            enabled_total: AtomicU64::new(0),
            cpu_at_enable: AtomicU64::new(0),
            window_cpu: AtomicU64::new(0),
            ring_bytes,
        })
    }

    /// PERF_EVENT_IOC_ENABLE (`on`) or DISABLE on `events` (`what` names
    /// them in errors).
    fn switch(events: &[OpenEvent], what: &str, on: bool) -> Result<(), PerfError> {
        let (ioctl, op): (fn(std::os::fd::BorrowedFd<'_>) -> std::io::Result<()>, _) = if on {
            (sys::enable, "ioctl(PERF_EVENT_IOC_ENABLE)")
        } else {
            (sys::disable, "ioctl(PERF_EVENT_IOC_DISABLE)")
        };
        for ev in events {
            ioctl(ev.fd.as_fd()).map_err(|e| PerfError::os(op, what, e))?;
        }
        Ok(())
    }

    /// Enables the tracepoints, then the sampling event(s).
    pub fn enable(&self) -> Result<(), PerfError> {
        Self::switch(&self.traces, "tracepoint", true)?;
        self.shared.enabled.store(true, Ordering::Release);
        self.cpu_at_enable
            .store(crate::system::clock::process_cpu_ns(), Ordering::Relaxed);
        let now = monotonic_raw_ns();
        self.enabled_at.store(now, Ordering::Relaxed);
        let _ =
            self.first_enabled_at
                .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
        Self::switch(&self.sampling, self.cfg.event.as_str(), true)
    }

    /// Disables the sampling event(s), then the tracepoints.
    pub fn disable(&self) -> Result<(), PerfError> {
        Self::switch(&self.sampling, self.cfg.event.as_str(), false)?;
        let since = self.enabled_at.swap(0, Ordering::Relaxed);
        if since != 0 {
            self.enabled_total
                .fetch_add(monotonic_raw_ns().saturating_sub(since), Ordering::Relaxed);
            let cpu0 = self.cpu_at_enable.swap(0, Ordering::Relaxed);
            self.window_cpu.fetch_add(
                crate::system::clock::process_cpu_ns().saturating_sub(cpu0),
                Ordering::Relaxed,
            );
        }
        self.shared.enabled.store(false, Ordering::Release);
        Self::switch(&self.traces, "tracepoint", false)
    }

    /// Disables everything, drains a last time, stops the thread and pairs
    /// the handler intervals. What the session counted goes straight into
    /// `row`'s columns (window_ns, samples, lost, throttled, unmatched, the
    /// driver's CPU while sampling, the per-sample means of the contents
    /// ...: docs/results-format.md, "runs.csv"); the rest is returned.
    pub fn finish(mut self, row: &mut RunRow) -> Result<SamplerOutcome, PerfError> {
        self.disable()?;
        let (lost_read, enabled_ns) = self.final_counts()?;
        let out = self.stop_thread()?;
        if let Some(e) = out.first_error {
            return Err(e);
        }
        if out.bad_trace_records > 0 {
            tracing::warn!(
                "{} records with an unknown id or short raw data",
                out.bad_trace_records
            );
        }
        let samples = SampleSet::from_keys(out.sample_keys);
        let handler = self.handler_intervals(&out.nmi, out.pairer, &samples.keys);
        let c = &out.contents;
        let per_sample =
            |n: u64, sum: u64| (n > 0 && c.samples > 0).then(|| sum as f64 / c.samples as f64);
        *row = RunRow {
            window_ns: enabled_ns,
            samples: samples.keys.len() as u64,
            samples_all_cpus: out.samples_all,
            throttled: out.throttled,
            unthrottled: out.unthrottled,
            lost: out.lost_records.max(lost_read),
            lost_samples: out.lost_samples,
            duplicates: samples.duplicates + handler.duplicates,
            unmatched: handler.unmatched,
            foreign_intervals: handler.foreign,
            driver_cpu_sampling_ns: self.window_cpu.load(Ordering::Relaxed),
            decoded_while_sampling_bytes: out.bytes_in_window,
            callchain_mean: per_sample(c.callchains, c.callchain_entries),
            stack_user_mean_bytes: per_sample(c.stack_copies, c.stack_user_bytes),
            stack_dyn_mean_bytes: per_sample(c.stack_copies, c.stack_dyn_bytes),
            ..std::mem::take(row)
        };
        Ok(SamplerOutcome {
            event: self.cfg.event,
            sample_times_ns: samples.times_ns,
            enabled_from_ns: self.first_enabled_at.load(Ordering::Relaxed),
            intervals: handler.intervals,
            drain_cpu_ns: out.cpu_ns,
            ring_bytes: self.ring_bytes,
            lost_records: out.lost_records,
            lost_read,
            drain_cpu: self.drain_cpu,
            drain_passes_on_measured_cpu: out.passes_on_measured,
            drain_passes: out.passes,
            drained_bytes: out.bytes,
            contents: out.contents,
        })
    }

    /// Reads every event's counts after disable ([value, time_enabled,
    /// time_running, id, lost]): the records lost in all (by
    /// PERF_FORMAT_LOST, over every event), and how long the measured CPU's
    /// sampling event was enabled, ns (by the kernel's count except in Task
    /// scope, where the session's own clock stands).
    fn final_counts(&self) -> Result<(u64, u64), PerfError> {
        let mut lost_read = 0;
        let mut enabled_ns = self.enabled_total.load(Ordering::Relaxed);
        for ev in self.sampling.iter().chain(&self.traces) {
            let mut buf = [0u64; 5];
            let n = sys::read_counts(ev.fd.as_fd(), &mut buf)
                .map_err(|e| PerfError::os("read", "perf counts", e))?;
            if n == 5 {
                lost_read += buf[4];
                if matches!(ev.role, IdRole::Sampling)
                    && ev.cpu == self.cfg.measured_cpu
                    && self.cfg.task().is_none()
                {
                    enabled_ns = buf[1];
                }
            }
        }
        Ok((lost_read, enabled_ns))
    }

    /// Pairs the handler tracepoints' records into intervals and keeps
    /// ours: those holding one of the measured CPU's samples (`keys`, as
    /// (cpu, time)), with the local_timer intervals around them.
    fn handler_intervals(
        &self,
        nmi: &[TraceEvent],
        mut pairer: handler::Pairer,
        keys: &[(u32, u64)],
    ) -> HandlerMatch {
        let mut matched = HandlerMatch::default();
        let traced_keys: Vec<(u32, u64)> = keys
            .iter()
            .copied()
            .filter(|&(c, _)| c == self.cfg.measured_cpu)
            .collect();
        pairer.finish();
        if !(self.cfg.trace_handler || self.cfg.trace_irq) {
            return matched;
        }
        let mut inner = Vec::new();
        if self.cfg.event.is_hardware() {
            if self.cfg.trace_handler {
                let p =
                    handler::nmi_intervals(nmi, self.nmi_handler.unwrap_or(0), Some(&traced_keys));
                matched.duplicates += p.duplicates;
                matched.unmatched += p.unmatched();
                matched.foreign += p.foreign;
                inner = p.intervals;
            }
        } else {
            let (ours, f, _) = handler::select_hrtimer(&pairer.hrtimer, &traced_keys);
            matched.unmatched += pairer.hrtimer_unmatched_entries + pairer.hrtimer_unmatched_exits;
            matched.foreign += f;
            inner = ours;
        }
        if self.cfg.trace_irq {
            matched
                .intervals
                .extend(handler::select_local_timer(&pairer.local_timer, &inner));
            matched.unmatched += pairer.local_unmatched_entries + pairer.local_unmatched_exits;
        }
        if self.cfg.trace_handler {
            matched.intervals.extend(inner);
        }
        matched
            .intervals
            .sort_by_key(|i| (i.entry_ns, i.cpu, i.source));
        matched
    }

    fn stop_thread(&mut self) -> Result<DrainOutput, PerfError> {
        self.shared.stop.store(true, Ordering::Release);
        match self.thread.take() {
            Some(t) => {
                t.thread().unpark();
                t.join()
                    .map_err(|_| PerfError::Drain("the drain thread panicked".into()))
            }
            None => Err(PerfError::Drain(
                "the drain thread was already stopped".into(),
            )),
        }
    }
}

/// The decoded samples, each once.
struct SampleSet {
    /// (cpu, time) of each sample, sorted, duplicates dropped.
    keys: Vec<(u32, u64)>,
    /// Their times, sorted.
    times_ns: Vec<u64>,
    /// Samples decoded twice (dropped).
    duplicates: u64,
}

impl SampleSet {
    /// Sorts the drained sample keys and drops duplicates.
    fn from_keys(mut keys: Vec<(u32, u64)>) -> SampleSet {
        keys.sort_unstable();
        let before = keys.len();
        keys.dedup();
        let duplicates = (before - keys.len()) as u64;
        let mut times_ns: Vec<u64> = keys.iter().map(|&(_, t)| t).collect();
        times_ns.sort_unstable();
        SampleSet {
            keys,
            times_ns,
            duplicates,
        }
    }
}

/// Our handler intervals and what was left over when pairing them.
#[derive(Default)]
struct HandlerMatch {
    /// Our intervals, sorted by (entry_ns, cpu, source).
    intervals: Vec<HandlerInterval>,
    /// Entries and exits that could not be paired.
    unmatched: u64,
    /// Intervals of other perf users (dropped).
    foreign: u64,
    /// Tracepoint records seen twice (dropped).
    duplicates: u64,
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.stop_thread();
        }
    }
}
