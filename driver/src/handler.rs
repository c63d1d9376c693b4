//! Handler timing from kernel tracepoints: one abstraction, three sources.
//!
//! - [`HandlerSource::Nmi`]: `nmi:nmi_handler` records of perf's NMI handler
//!   (`perf_event_nmi_handler`) for PMU sampling; the record is emitted when
//!   the handler returns and carries its duration, so entry = time - delta_ns.
//! - [`HandlerSource::Hrtimer`]: `timer:hrtimer_expire_entry` (filtered to
//!   `perf_swevent_hrtimer`) and `timer:hrtimer_expire_exit`, paired by the
//!   hrtimer pointer per CPU, for cpu-clock sampling.
//! - [`HandlerSource::LocalTimer`]: `irq_vectors:local_timer_entry/exit`, the
//!   whole timer interrupt around the hrtimer handler.
//!
//! Telling ours from foreign: other processes' perf timers expire through
//! the same `perf_swevent_hrtimer` callback. Each perf event owns one
//! hrtimer, so the pointer identifies the event: the pointers of intervals
//! that contain one of our samples' timestamps are ours, and every interval
//! of those pointers is kept (also those whose sample was lost or
//! throttled); intervals of other pointers are counted as foreign.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::perf::tracefs::{Field, Format};

/// Which kernel instrumentation timed a handler interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandlerSource {
    /// `nmi:nmi_handler` (PMU sampling).
    Nmi,
    /// `timer:hrtimer_expire_entry/exit` of `perf_swevent_hrtimer` (cpu-clock).
    Hrtimer,
    /// `irq_vectors:local_timer_entry/exit` (the whole timer interrupt).
    LocalTimer,
}

impl HandlerSource {
    /// `nmi`, `hrtimer` or `local_timer` (the `source` column of the results).
    pub fn as_str(&self) -> &'static str {
        match self {
            HandlerSource::Nmi => "nmi",
            HandlerSource::Hrtimer => "hrtimer",
            HandlerSource::LocalTimer => "local_timer",
        }
    }
}

impl std::fmt::Display for HandlerSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One execution of the sampling handler (or of the interrupt around it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandlerInterval {
    /// CPU it ran on.
    pub cpu: u32,
    /// Entry, CLOCK_MONOTONIC_RAW ns.
    pub entry_ns: u64,
    /// Exit - entry, ns.
    pub duration_ns: u64,
    /// Which instrumentation timed it.
    pub source: HandlerSource,
}

impl HandlerInterval {
    /// Exit time.
    pub fn exit_ns(&self) -> u64 {
        self.entry_ns.saturating_add(self.duration_ns)
    }
}

/// One decoded tracepoint record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceEvent {
    /// `timer:hrtimer_expire_entry`.
    HrtimerEntry {
        /// CPU.
        cpu: u32,
        /// Record time.
        time_ns: u64,
        /// `hrtimer` field.
        hrtimer: u64,
    },
    /// `timer:hrtimer_expire_exit`.
    HrtimerExit {
        /// CPU.
        cpu: u32,
        /// Record time.
        time_ns: u64,
        /// `hrtimer` field.
        hrtimer: u64,
    },
    /// `irq_vectors:local_timer_entry`.
    LocalTimerEntry {
        /// CPU.
        cpu: u32,
        /// Record time.
        time_ns: u64,
    },
    /// `irq_vectors:local_timer_exit`.
    LocalTimerExit {
        /// CPU.
        cpu: u32,
        /// Record time.
        time_ns: u64,
    },
    /// `nmi:nmi_handler` (emitted when the handler returns).
    Nmi {
        /// CPU.
        cpu: u32,
        /// Record time (handler exit).
        time_ns: u64,
        /// `handler` field: the handler's address.
        handler: u64,
        /// `delta_ns` field: the handler's duration.
        delta_ns: u64,
        /// `handled` field.
        handled: u32,
    },
}

impl TraceEvent {
    /// CPU of the record.
    pub fn cpu(&self) -> u32 {
        match *self {
            TraceEvent::HrtimerEntry { cpu, .. }
            | TraceEvent::HrtimerExit { cpu, .. }
            | TraceEvent::LocalTimerEntry { cpu, .. }
            | TraceEvent::LocalTimerExit { cpu, .. }
            | TraceEvent::Nmi { cpu, .. } => cpu,
        }
    }
    /// Time of the record.
    pub fn time_ns(&self) -> u64 {
        match *self {
            TraceEvent::HrtimerEntry { time_ns, .. }
            | TraceEvent::HrtimerExit { time_ns, .. }
            | TraceEvent::LocalTimerEntry { time_ns, .. }
            | TraceEvent::LocalTimerExit { time_ns, .. }
            | TraceEvent::Nmi { time_ns, .. } => time_ns,
        }
    }
}

/// Which tracepoint a raw record came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceKind {
    /// `timer:hrtimer_expire_entry`.
    HrtimerEntry,
    /// `timer:hrtimer_expire_exit`.
    HrtimerExit,
    /// `irq_vectors:local_timer_entry`.
    LocalTimerEntry,
    /// `irq_vectors:local_timer_exit`.
    LocalTimerExit,
    /// `nmi:nmi_handler`.
    Nmi,
}

impl TraceKind {
    /// `system`, `name` in tracefs.
    pub fn tracepoint(&self) -> (&'static str, &'static str) {
        match self {
            TraceKind::HrtimerEntry => ("timer", "hrtimer_expire_entry"),
            TraceKind::HrtimerExit => ("timer", "hrtimer_expire_exit"),
            TraceKind::LocalTimerEntry => ("irq_vectors", "local_timer_entry"),
            TraceKind::LocalTimerExit => ("irq_vectors", "local_timer_exit"),
            TraceKind::Nmi => ("nmi", "nmi_handler"),
        }
    }

    /// The fields this kind needs from the format file.
    pub fn needed_fields(&self) -> &'static [&'static str] {
        match self {
            TraceKind::HrtimerEntry | TraceKind::HrtimerExit => &["hrtimer"],
            TraceKind::LocalTimerEntry | TraceKind::LocalTimerExit => &[],
            TraceKind::Nmi => &["handler", "delta_ns", "handled"],
        }
    }
}

/// How to read one tracepoint's raw data (offsets from its format file).
#[derive(Debug, Clone)]
pub struct TraceLayout {
    /// The tracepoint.
    pub kind: TraceKind,
    fields: Vec<Field>,
}

impl TraceLayout {
    /// Takes the needed fields' offsets from `format`; None names the missing field.
    pub fn new(kind: TraceKind, format: &Format) -> Result<TraceLayout, String> {
        let mut fields = Vec::new();
        for name in kind.needed_fields() {
            fields.push(
                format
                    .field(name)
                    .cloned()
                    .ok_or_else(|| (*name).to_string())?,
            );
        }
        Ok(TraceLayout { kind, fields })
    }

    /// Decodes a raw record; None when the raw data is too short.
    #[inline]
    pub fn decode(&self, cpu: u32, time_ns: u64, raw: &[u8]) -> Option<TraceEvent> {
        let f = |i: usize| self.fields.get(i).and_then(|f| f.read_u64(raw));
        Some(match self.kind {
            TraceKind::HrtimerEntry => TraceEvent::HrtimerEntry {
                cpu,
                time_ns,
                hrtimer: f(0)?,
            },
            TraceKind::HrtimerExit => TraceEvent::HrtimerExit {
                cpu,
                time_ns,
                hrtimer: f(0)?,
            },
            TraceKind::LocalTimerEntry => TraceEvent::LocalTimerEntry { cpu, time_ns },
            TraceKind::LocalTimerExit => TraceEvent::LocalTimerExit { cpu, time_ns },
            TraceKind::Nmi => TraceEvent::Nmi {
                cpu,
                time_ns,
                handler: f(0)?,
                delta_ns: f(1)?,
                handled: f(2)? as u32,
            },
        })
    }
}

/// Intervals of one source plus what could not be used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pairing {
    /// Our intervals, sorted by (entry_ns, cpu).
    pub intervals: Vec<HandlerInterval>,
    /// Entries with no exit.
    pub unmatched_entries: u64,
    /// Exits with no entry (only for pointers seen at an entry).
    pub unmatched_exits: u64,
    /// Records seen twice (dropped).
    pub duplicates: u64,
    /// Intervals of other perf users (dropped).
    pub foreign: u64,
}

impl Pairing {
    /// Entries plus exits that could not be paired.
    pub fn unmatched(&self) -> u64 {
        self.unmatched_entries + self.unmatched_exits
    }
}

/// Sorts by (cpu, time), drops exact duplicates; returns the duplicates count.
fn sort_dedup(events: &mut Vec<TraceEvent>) -> u64 {
    events.sort_by_key(|e| (e.cpu(), e.time_ns()));
    let before = events.len();
    // Equal keys are adjacent; exact duplicates among them are removed.
    let mut out: Vec<TraceEvent> = Vec::with_capacity(events.len());
    for e in events.drain(..) {
        let dup = out
            .iter()
            .rev()
            .take_while(|p| p.cpu() == e.cpu() && p.time_ns() == e.time_ns())
            .any(|p| *p == e);
        if !dup {
            out.push(e);
        }
    }
    *events = out;
    (before - events.len()) as u64
}

/// True when a sorted list of (cpu, time) samples has one in [lo, hi] on cpu.
fn contains_sample(samples: &[(u32, u64)], cpu: u32, lo: u64, hi: u64) -> bool {
    let i = samples.partition_point(|&s| s < (cpu, lo));
    samples.get(i).is_some_and(|&(c, t)| c == cpu && t <= hi)
}

/// NMI source: `nmi:nmi_handler` records whose handler is `our_handler`
/// (perf_event_nmi_handler's address). When `samples` (sorted (cpu, time))
/// is given, only handler calls that contain one of our samples are ours
/// (other perf users' PMU interrupts go through the same handler); the rest
/// count as foreign.
pub fn nmi_intervals(
    events: &[TraceEvent],
    our_handler: u64,
    samples: Option<&[(u32, u64)]>,
) -> Pairing {
    let mut evs: Vec<TraceEvent> = events
        .iter()
        .filter(|e| matches!(e, TraceEvent::Nmi { .. }))
        .copied()
        .collect();
    let mut p = Pairing {
        duplicates: sort_dedup(&mut evs),
        ..Pairing::default()
    };
    for e in evs {
        if let TraceEvent::Nmi {
            cpu,
            time_ns,
            handler,
            delta_ns,
            ..
        } = e
        {
            let entry = time_ns.saturating_sub(delta_ns);
            let ours = handler == our_handler
                && samples.is_none_or(|s| contains_sample(s, cpu, entry, time_ns));
            if ours {
                p.intervals.push(HandlerInterval {
                    cpu,
                    entry_ns: entry,
                    duration_ns: delta_ns,
                    source: HandlerSource::Nmi,
                });
            } else {
                p.foreign += 1;
            }
        }
    }
    p.intervals.sort_by_key(|i| (i.entry_ns, i.cpu));
    p
}

/// hrtimer source: pairs `hrtimer_expire_entry` (already filtered to
/// perf_swevent_hrtimer) with the next `hrtimer_expire_exit` of the same
/// hrtimer pointer on the same CPU, then keeps the pointers that contain one
/// of `samples` (sorted (cpu, time)); see the module docs.
pub fn hrtimer_intervals(
    events: &[TraceEvent],
    samples: &[(u32, u64)],
) -> (Pairing, HashSet<(u32, u64)>) {
    let mut evs: Vec<TraceEvent> = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                TraceEvent::HrtimerEntry { .. } | TraceEvent::HrtimerExit { .. }
            )
        })
        .copied()
        .collect();
    let mut p = Pairing {
        duplicates: sort_dedup(&mut evs),
        ..Pairing::default()
    };
    let known: HashSet<(u32, u64)> = evs
        .iter()
        .filter_map(|e| match *e {
            TraceEvent::HrtimerEntry { cpu, hrtimer, .. } => Some((cpu, hrtimer)),
            _ => None,
        })
        .collect();
    let mut open: HashMap<(u32, u64), u64> = HashMap::new();
    let mut all: Vec<(u64, HandlerInterval)> = Vec::new();
    for e in evs {
        match e {
            TraceEvent::HrtimerEntry {
                cpu,
                time_ns,
                hrtimer,
            } if open.insert((cpu, hrtimer), time_ns).is_some() => {
                p.unmatched_entries += 1;
            }
            TraceEvent::HrtimerExit {
                cpu,
                time_ns,
                hrtimer,
            } => match open.remove(&(cpu, hrtimer)) {
                Some(entry) => all.push((
                    hrtimer,
                    HandlerInterval {
                        cpu,
                        entry_ns: entry,
                        duration_ns: time_ns - entry,
                        source: HandlerSource::Hrtimer,
                    },
                )),
                None if known.contains(&(cpu, hrtimer)) => p.unmatched_exits += 1,
                None => {}
            },
            _ => {}
        }
    }
    p.unmatched_entries += open.len() as u64;
    let ours: HashSet<(u32, u64)> = all
        .iter()
        .filter(|(_, i)| contains_sample(samples, i.cpu, i.entry_ns, i.exit_ns()))
        .map(|(ptr, i)| (i.cpu, *ptr))
        .collect();
    for (ptr, i) in all {
        if ours.contains(&(i.cpu, ptr)) {
            p.intervals.push(i);
        } else {
            p.foreign += 1;
        }
    }
    p.intervals.sort_by_key(|i| (i.entry_ns, i.cpu));
    (p, ours)
}

/// local_timer source: pairs entry/exit per CPU in order and keeps the
/// interrupts that contain one of `inner` (our handler intervals); the
/// others (ticks, other timers) are dropped without being counted.
pub fn local_timer_intervals(events: &[TraceEvent], inner: &[HandlerInterval]) -> Pairing {
    let mut evs: Vec<TraceEvent> = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                TraceEvent::LocalTimerEntry { .. } | TraceEvent::LocalTimerExit { .. }
            )
        })
        .copied()
        .collect();
    let mut p = Pairing {
        duplicates: sort_dedup(&mut evs),
        ..Pairing::default()
    };
    let mut inner_keys: Vec<(u32, u64)> = inner.iter().map(|i| (i.cpu, i.entry_ns)).collect();
    inner_keys.sort_unstable();
    let mut open: HashMap<u32, u64> = HashMap::new();
    for e in evs {
        match e {
            TraceEvent::LocalTimerEntry { cpu, time_ns } if open.insert(cpu, time_ns).is_some() => {
                p.unmatched_entries += 1;
            }
            TraceEvent::LocalTimerExit { cpu, time_ns } => match open.remove(&cpu) {
                Some(entry) => {
                    if contains_sample(&inner_keys, cpu, entry, time_ns) {
                        p.intervals.push(HandlerInterval {
                            cpu,
                            entry_ns: entry,
                            duration_ns: time_ns - entry,
                            source: HandlerSource::LocalTimer,
                        });
                    }
                }
                None => p.unmatched_exits += 1,
            },
            _ => {}
        }
    }
    p.unmatched_entries += open.len() as u64;
    p.intervals.sort_by_key(|i| (i.entry_ns, i.cpu));
    p
}
