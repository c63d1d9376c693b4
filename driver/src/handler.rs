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

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::perf::tracefs::{Field, Format};

pub use results_format::HandlerSource;

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
pub struct TraceEvent {
    /// The tracepoint.
    pub kind: TraceKind,
    /// CPU.
    pub cpu: u32,
    /// Record time (`nmi:nmi_handler`'s is the handler's exit).
    pub time_ns: u64,
    /// The kind's [`TraceKind::needed_fields`], in that order (0 after
    /// them): the hrtimer's `hrtimer` pointer; the NMI's `handler` address,
    /// `delta_ns` (its duration) and `handled`.
    pub fields: [u64; 3],
}

impl TraceEvent {
    /// CPU and time of the record.
    pub fn key(&self) -> (u32, u64) {
        (self.cpu, self.time_ns)
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
        let fields = kind
            .needed_fields()
            .iter()
            .map(|&name| format.field(name).cloned().ok_or_else(|| name.to_string()));
        Ok(TraceLayout {
            kind,
            fields: fields.collect::<Result<_, _>>()?,
        })
    }

    /// Decodes a raw record; None when the raw data is too short.
    #[inline]
    pub fn decode(&self, cpu: u32, time_ns: u64, raw: &[u8]) -> Option<TraceEvent> {
        let mut fields = [0; 3];
        for (value, field) in fields.iter_mut().zip(&self.fields) {
            *value = field.read_u64(raw)?;
        }
        Some(TraceEvent {
            kind: self.kind,
            cpu,
            time_ns,
            fields,
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
    events.sort_by_key(TraceEvent::key);
    let before = events.len();
    let mut seen = HashSet::with_capacity(before);
    events.retain(|e| seen.insert(*e));
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
        .filter(|e| e.kind == TraceKind::Nmi)
        .copied()
        .collect();
    let mut p = Pairing {
        duplicates: sort_dedup(&mut evs),
        ..Pairing::default()
    };
    for TraceEvent {
        cpu,
        time_ns,
        fields: [handler, delta_ns, _],
        ..
    } in evs
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
    p.intervals.sort_by_key(|i| (i.entry_ns, i.cpu));
    p
}

/// An entry/exit pair before telling ours from foreign: 24 bytes, so the
/// drain thread can keep hundreds of thousands per second cheaply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawInterval {
    /// hrtimer pointer (0 for local_timer).
    pub hrtimer: u64,
    /// Entry time.
    pub entry_ns: u64,
    /// Exit - entry (saturated at u32::MAX ns).
    pub duration_ns: u32,
    /// CPU.
    pub cpu: u32,
}

impl RawInterval {
    fn exit_ns(&self) -> u64 {
        self.entry_ns + u64::from(self.duration_ns)
    }
    fn interval(&self, source: HandlerSource) -> HandlerInterval {
        HandlerInterval {
            cpu: self.cpu,
            entry_ns: self.entry_ns,
            duration_ns: u64::from(self.duration_ns),
            source,
        }
    }
}

/// Online pairing of entry/exit records in the order a ring delivers them:
/// hrtimer records by (cpu, hrtimer pointer), local_timer records by cpu.
#[derive(Debug, Default)]
pub struct Pairer {
    open: Vec<(u32, u64, u64)>,
    known: Vec<(u32, u64)>,
    /// Completed hrtimer pairs.
    pub hrtimer: Vec<RawInterval>,
    /// Completed local_timer pairs.
    pub local_timer: Vec<RawInterval>,
    /// hrtimer entries without exit.
    pub hrtimer_unmatched_entries: u64,
    /// hrtimer exits without entry, for pointers already seen at an entry
    /// (other timers' exits are not filtered by the kernel and are ignored).
    pub hrtimer_unmatched_exits: u64,
    /// local_timer entries without exit.
    pub local_unmatched_entries: u64,
    /// local_timer exits without entry.
    pub local_unmatched_exits: u64,
}

/// Key of an open local_timer entry (no hrtimer has this pointer).
const LOCAL: u64 = u64::MAX;

impl Pairer {
    /// Feeds one record; NMI records are ignored.
    #[inline]
    pub fn push(&mut self, ev: &TraceEvent) {
        let TraceEvent {
            kind,
            cpu,
            time_ns,
            fields: [hrtimer, ..],
        } = *ev;
        match kind {
            TraceKind::HrtimerEntry => {
                self.hrtimer_unmatched_entries += u64::from(self.open_entry(cpu, hrtimer, time_ns));
                if !self.known.contains(&(cpu, hrtimer)) {
                    self.known.push((cpu, hrtimer));
                }
            }
            TraceKind::HrtimerExit => match self.close(cpu, hrtimer) {
                Some(entry) => self.hrtimer.push(raw(hrtimer, cpu, entry, time_ns)),
                None if self.known.contains(&(cpu, hrtimer)) => self.hrtimer_unmatched_exits += 1,
                None => {}
            },
            TraceKind::LocalTimerEntry => {
                self.local_unmatched_entries += u64::from(self.open_entry(cpu, LOCAL, time_ns));
            }
            TraceKind::LocalTimerExit => match self.close(cpu, LOCAL) {
                Some(entry) => self.local_timer.push(raw(0, cpu, entry, time_ns)),
                None => self.local_unmatched_exits += 1,
            },
            TraceKind::Nmi => {}
        }
    }

    /// Records an entry; true when one was already open for the key.
    #[inline]
    fn open_entry(&mut self, cpu: u32, key: u64, time: u64) -> bool {
        if let Some(e) = self.open.iter_mut().find(|e| e.0 == cpu && e.1 == key) {
            e.2 = time;
            true
        } else {
            self.open.push((cpu, key, time));
            false
        }
    }

    #[inline]
    fn close(&mut self, cpu: u32, key: u64) -> Option<u64> {
        let i = self.open.iter().position(|e| e.0 == cpu && e.1 == key)?;
        Some(self.open.swap_remove(i).2)
    }

    /// Counts the entries still open as unmatched.
    pub fn finish(&mut self) {
        for &(_, key, _) in &self.open {
            if key == LOCAL {
                self.local_unmatched_entries += 1;
            } else {
                self.hrtimer_unmatched_entries += 1;
            }
        }
        self.open.clear();
    }
}

fn raw(hrtimer: u64, cpu: u32, entry: u64, exit: u64) -> RawInterval {
    RawInterval {
        hrtimer,
        entry_ns: entry,
        duration_ns: u32::try_from(exit.saturating_sub(entry)).unwrap_or(u32::MAX),
        cpu,
    }
}

/// Keeps the hrtimer pairs of our pointers: those with at least one pair
/// containing one of `samples` (sorted (cpu, time)). Returns our intervals
/// (sorted by entry), the number of foreign pairs and our pointers.
pub fn select_hrtimer(
    pairs: &[RawInterval],
    samples: &[(u32, u64)],
) -> (Vec<HandlerInterval>, u64, HashSet<(u32, u64)>) {
    let ours: HashSet<(u32, u64)> = pairs
        .iter()
        .filter(|i| contains_sample(samples, i.cpu, i.entry_ns, i.exit_ns()))
        .map(|i| (i.cpu, i.hrtimer))
        .collect();
    let mut out = Vec::with_capacity(pairs.len());
    let mut foreign = 0;
    for p in pairs {
        if ours.contains(&(p.cpu, p.hrtimer)) {
            out.push(p.interval(HandlerSource::Hrtimer));
        } else {
            foreign += 1;
        }
    }
    out.sort_by_key(|i| (i.entry_ns, i.cpu));
    (out, foreign, ours)
}

/// Keeps the local_timer pairs that contain the entry of one of `inner`
/// (our handler intervals); the others (ticks, other timers) are dropped
/// without being counted.
pub fn select_local_timer(
    pairs: &[RawInterval],
    inner: &[HandlerInterval],
) -> Vec<HandlerInterval> {
    let mut keys: Vec<(u32, u64)> = inner.iter().map(|i| (i.cpu, i.entry_ns)).collect();
    keys.sort_unstable();
    let mut out: Vec<HandlerInterval> = pairs
        .iter()
        .filter(|p| contains_sample(&keys, p.cpu, p.entry_ns, p.exit_ns()))
        .map(|p| p.interval(HandlerSource::LocalTimer))
        .collect();
    out.sort_by_key(|i| (i.entry_ns, i.cpu));
    out
}
