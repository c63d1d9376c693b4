//! The drain thread: decodes the rings (during the run only when a ring
//! runs short of space) into samples, handler intervals and loss counts.

use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::system::clock::thread_cpu_ns;

use super::{PerfError, Record, Ring, TraceEvent, TraceKind, TraceLayout, drain_reserve, handler};

/// What the sampling event's samples on the measured CPU carried, summed
/// over the run (their variable-length fields, as decoded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ContentsStats {
    /// Samples counted.
    pub samples: u64,
    /// Samples with a call chain.
    pub callchains: u64,
    /// Call-chain entries (frames and context markers), summed.
    pub callchain_entries: u64,
    /// Longest call chain.
    pub callchain_max: u32,
    /// Samples with a user-stack copy.
    pub stack_copies: u64,
    /// User-stack bytes copied, summed.
    pub stack_user_bytes: u64,
    /// Of those, bytes that were really stack (dyn_size), summed.
    pub stack_dyn_bytes: u64,
    /// Branch-stack entries, summed.
    pub branches: u64,
}

impl ContentsStats {
    fn add(&mut self, s: &crate::perf::record::Sample<'_>) {
        self.samples += 1;
        if let Some(n) = s.callchain {
            self.callchains += 1;
            self.callchain_entries += u64::from(n);
            self.callchain_max = self.callchain_max.max(n);
        }
        if let Some(su) = s.stack_user {
            self.stack_copies += 1;
            self.stack_user_bytes += su.size;
            self.stack_dyn_bytes += su.dyn_size;
        }
        if let Some(n) = s.branches {
            self.branches += u64::from(n);
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct Shared {
    pub(super) stop: AtomicBool,
    /// Sampling is enabled (between enable and disable).
    pub(super) enabled: AtomicBool,
}

#[derive(Debug, Default)]
pub(super) struct DrainOutput {
    pub(super) sample_keys: Vec<(u32, u64)>,
    pub(super) contents: ContentsStats,
    pub(super) samples_all: u64,
    pub(super) pairer: handler::Pairer,
    pub(super) nmi: Vec<TraceEvent>,
    pub(super) lost_records: u64,
    pub(super) lost_samples: u64,
    pub(super) throttled: u64,
    pub(super) unthrottled: u64,
    pub(super) cpu_ns: u64,
    pub(super) passes: u64,
    pub(super) passes_on_measured: u64,
    pub(super) bytes: u64,
    pub(super) bytes_in_window: u64,
    pub(super) first_error: Option<PerfError>,
    pub(super) bad_trace_records: u64,
}

#[derive(Debug, Clone)]
pub(super) enum IdRole {
    Sampling,
    Trace(TraceLayout),
}

pub(super) struct Drainer {
    pub(super) rings: Vec<Ring>,
    pub(super) ids: Vec<(u64, IdRole)>,
    pub(super) measured_cpu: u32,
    pub(super) all_cpu_samples: bool,
    pub(super) shared: Arc<Shared>,
    pub(super) out: DrainOutput,
    pub(super) interval: Duration,
}

impl Drainer {
    /// Decodes every ring whose free space fell below [`drain_reserve`], or
    /// every ring when `all`.
    pub(super) fn pass(&mut self, all: bool) {
        let Drainer {
            rings,
            ids,
            measured_cpu,
            all_cpu_samples,
            out,
            shared,
            ..
        } = self;
        let in_window = shared.enabled.load(Ordering::Acquire);
        for ring in rings.iter_mut() {
            if !all && ring.pending() < ring.size() - drain_reserve(ring.size()) {
                continue;
            }
            let ring_cpu = ring.cpu();
            let r = ring.drain(|rec| match rec {
                Record::Sample(s) => {
                    let id = s.id.unwrap_or(0);
                    let cpu = s.cpu.unwrap_or(ring_cpu);
                    let time = s.time.unwrap_or(0);
                    match ids.iter().find(|e| e.0 == id).map(|e| &e.1) {
                        Some(IdRole::Sampling) => {
                            out.samples_all += 1;
                            if *all_cpu_samples || cpu == *measured_cpu {
                                out.sample_keys.push((cpu, time));
                                out.contents.add(&s);
                            }
                        }
                        Some(IdRole::Trace(layout)) => {
                            match layout.decode(cpu, time, s.raw.unwrap_or_default()) {
                                Some(ev) if ev.kind == TraceKind::Nmi => out.nmi.push(ev),
                                Some(ev) => out.pairer.push(&ev),
                                None => out.bad_trace_records += 1,
                            }
                        }
                        None => out.bad_trace_records += 1,
                    }
                }
                Record::Lost { lost, .. } => out.lost_records += lost,
                Record::LostSamples { lost, .. } => out.lost_samples += lost,
                Record::Throttle(_) => out.throttled += 1,
                Record::Unthrottle(_) => out.unthrottled += 1,
                Record::Other { .. } => {}
            });
            match r {
                Ok(n) => {
                    out.bytes += n as u64;
                    if in_window {
                        out.bytes_in_window += n as u64;
                    }
                }
                Err(e) => {
                    tracing::warn!("{e}");
                    out.first_error.get_or_insert(e);
                }
            }
        }
        out.passes += 1;
        if rustix::thread::sched_getcpu() == *measured_cpu as usize {
            out.passes_on_measured += 1;
        }
    }

    pub(super) fn run(mut self, pin: Option<u32>) -> DrainOutput {
        if let Some(cpu) = pin
            && let Err(e) = crate::system::process::pin_to([cpu])
        {
            tracing::warn!("could not pin the drain thread to cpu {cpu}: {e}");
        }
        let start = thread_cpu_ns();
        loop {
            let stop = self.shared.stop.load(Ordering::Acquire);
            self.pass(stop);
            if stop {
                break;
            }
            std::thread::park_timeout(self.interval);
        }
        self.out.cpu_ns = thread_cpu_ns().saturating_sub(start);
        self.out
    }
}
