//! One measurement session: the sampling event(s), the handler tracepoints,
//! their ring buffers and the thread that drains them.
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
//! [`drain_reserve`] (a quarter of the ring, at least 8 MiB), and on request
//! ([`Sampler::samples_synced`], which the sweep does not use: paired phases
//! count samples by timestamp); everything else is decoded after
//! [`Sampler::disable`], when the workload no longer runs. Measured at
//! 100 kHz with all four tracepoints for 10 s (examples/soak.rs): decoding
//! online from 16 MiB rings cost the drain thread 0.26-0.35 s of CPU during
//! the run; with rings that hold the run the driver's CPU while sampling
//! ([`SamplerOutcome::window_cpu_ns`]) is 7-10 ms.
//! Decoding pairs entry/exit records into compact pairs; telling our handler
//! intervals from other perf users' happens in [`Sampler::finish`] (see
//! [`crate::handler`]).
//!
//! Intervals: `hrtimer` ones are one handler run each; a `local_timer`
//! interval is one whole timer interrupt and may contain two handler runs
//! when the interrupt outlasts the sampling period (seen at 100 kHz), so
//! there can be fewer local_timer than hrtimer intervals.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::contents::SampleContents;
use crate::handler::{self, HandlerInterval, TraceEvent, TraceKind, TraceLayout};
use crate::perf::attr::{Attr, kind, read, sample};
use crate::perf::error::OpenContext;
use crate::perf::record::{Formats, Record};
use crate::perf::ring::{DEFAULT_RING_DATA_BYTES, Ring};
use crate::perf::{PerfError, sys, tracefs};

/// Kernel symbol of perf's NMI handler (filter of `nmi:nmi_handler`).
pub const NMI_HANDLER_SYMBOL: &str = "perf_event_nmi_handler";
/// Kernel symbol of the cpu-clock/task-clock hrtimer callback.
pub const HRTIMER_SYMBOL: &str = "perf_swevent_hrtimer";

/// The sampling event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// Software `cpu-clock` (hrtimer driven).
    #[default]
    CpuClock,
    /// Hardware `cycles` (PMU, NMI driven on x86).
    Cycles,
    /// Hardware `instructions`.
    Instructions,
    /// Software `task-clock` (hrtimer driven).
    TaskClock,
}

impl EventKind {
    /// All kinds.
    pub const ALL: [EventKind; 4] = [
        EventKind::CpuClock,
        EventKind::Cycles,
        EventKind::Instructions,
        EventKind::TaskClock,
    ];

    /// perf's name: `cpu-clock`, `cycles`, `instructions`, `task-clock`.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::CpuClock => "cpu-clock",
            EventKind::Cycles => "cycles",
            EventKind::Instructions => "instructions",
            EventKind::TaskClock => "task-clock",
        }
    }

    /// A hardware PMU event (sampled from the NMI handler).
    pub fn is_hardware(&self) -> bool {
        matches!(self, EventKind::Cycles | EventKind::Instructions)
    }

    /// Which tracepoints time this event's handler.
    pub fn handler_source(&self) -> handler::HandlerSource {
        if self.is_hardware() {
            handler::HandlerSource::Nmi
        } else {
            handler::HandlerSource::Hrtimer
        }
    }

    fn type_config(&self) -> (u32, u64) {
        match self {
            EventKind::CpuClock => (kind::SOFTWARE, kind::SW_CPU_CLOCK),
            EventKind::TaskClock => (kind::SOFTWARE, kind::SW_TASK_CLOCK),
            EventKind::Cycles => (kind::HARDWARE, kind::HW_CPU_CYCLES),
            EventKind::Instructions => (kind::HARDWARE, kind::HW_INSTRUCTIONS),
        }
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EventKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EventKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!("unknown event `{s}`; expected one of cpu-clock, cycles, instructions, task-clock")
            })
    }
}

/// Where the sampling event counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// CPU-wide on the measured CPU.
    Cpu,
    /// CPU-wide on every online CPU.
    System,
    /// One task (pid), on any CPU.
    Task(i32),
}

impl Scope {
    /// `cpu`, `system` or `task` (the `scope` column).
    pub fn name(&self) -> &'static str {
        match self {
            Scope::Cpu => "cpu",
            Scope::System => "system",
            Scope::Task(_) => "task",
        }
    }
}

/// What to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplerConfig {
    /// Already resolved (no fallback inside the sampler; see [`resolve_event`]).
    pub event: EventKind,
    /// sample_freq; 0 opens a sampler that never fires (period
    /// [`NEVER_FIRES_PERIOD`]): the paired design's null control.
    pub freq_hz: u64,
    /// Where the sampling event counts.
    pub scope: Scope,
    /// The CPU the workload is pinned to.
    pub measured_cpu: u32,
    /// Open the handler tracepoints (util runs).
    pub trace_handler: bool,
    /// Also `irq_vectors:local_timer_entry/exit` (only with cpu-clock/task-clock).
    pub trace_irq: bool,
    /// Smallest ring data size per CPU, a power of two (default 16 MiB).
    pub ring_data_bytes: usize,
    /// How long sampling will stay enabled: sizes the rings to hold the
    /// whole run (see [`ring_bytes_for`]). None: rings of `ring_data_bytes`.
    pub expected_duration: Option<Duration>,
    /// CPU for the drain thread (not the measured one); None = first other online CPU.
    pub drain_cpu: Option<u32>,
    /// What each sample of the sampling event carries.
    pub contents: SampleContents,
    /// PERF_SAMPLE_* bits added to the tracepoints' records (default none:
    /// the lean layout of [`trace_sample_type`]). `perf record` writes
    /// IP, TID, CPU and PERIOD on them too; setting those reproduces its
    /// instrument, for comparisons with it.
    pub trace_extra_fields: u64,
}

impl SamplerConfig {
    /// A CPU-scope config without tracepoints and with the default ring.
    pub fn new(event: EventKind, freq_hz: u64, measured_cpu: u32) -> SamplerConfig {
        SamplerConfig {
            event,
            freq_hz,
            scope: Scope::Cpu,
            measured_cpu,
            trace_handler: false,
            trace_irq: false,
            ring_data_bytes: DEFAULT_RING_DATA_BYTES,
            expected_duration: None,
            drain_cpu: None,
            contents: SampleContents::DEFAULT,
            trace_extra_fields: 0,
        }
    }
}

/// Everything a finished session measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SamplerOutcome {
    /// The sampling event.
    pub event: EventKind,
    /// Samples on the measured CPU (all CPUs for Task scope).
    pub samples: u64,
    /// Samples on all CPUs.
    pub samples_all_cpus: u64,
    /// CLOCK_MONOTONIC_RAW timestamps of samples on the measured CPU (sorted).
    pub sample_times_ns: Vec<u64>,
    /// Time the sampling event was enabled (read() time_enabled of the
    /// measured CPU's event; own clock for Task scope).
    pub enabled_ns: u64,
    /// max(LOST records sum, PERF_FORMAT_LOST sum).
    pub lost: u64,
    /// Sum of PERF_RECORD_LOST_SAMPLES.
    pub lost_samples: u64,
    /// PERF_RECORD_THROTTLE records.
    pub throttled: u64,
    /// PERF_RECORD_UNTHROTTLE records.
    pub unthrottled: u64,
    /// Duplicated samples or tracepoint records dropped.
    pub duplicates: u64,
    /// Our handler intervals, sorted by entry.
    pub intervals: Vec<HandlerInterval>,
    /// Handler entries or exits that could not be paired.
    pub unmatched: u64,
    /// Handler intervals of other perf users (dropped).
    pub foreign_intervals: u64,
    /// CPU time of the drain thread, from its start to its end (including
    /// the decoding after the run).
    pub drain_cpu_ns: u64,
    /// CPU time of this whole process (every thread) while sampling was
    /// enabled: the driver's own cost during the run.
    pub window_cpu_ns: u64,
    /// Bytes decoded while sampling was enabled (0 when the rings held the
    /// whole run and nobody asked for a synced count).
    pub drained_in_window_bytes: u64,
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

fn now_raw_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicRaw);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Online CPUs from /sys/devices/system/cpu/online ("0-3,5").
pub fn online_cpus() -> Result<Vec<u32>, PerfError> {
    let path = "/sys/devices/system/cpu/online";
    let text = std::fs::read_to_string(path).map_err(|source| PerfError::Read {
        path: path.into(),
        source,
    })?;
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

// The sampling event's records carry what the user asked for
// (`SamplerConfig::contents`, by default what `perf record` writes): that is
// the cost being measured. The tracepoints' records are the instrument, kept
// small so the drain stays cheap at 100 kHz (its cost is mostly pulling the
// ring's cache lines over from the measured CPU): no PERF_SAMPLE_CPU (each
// ring belongs to one CPU), no TID (their raw data has common_pid), and RAW
// only on tracepoints whose raw fields are read: 64-byte hrtimer entries,
// 48-byte exits, 24-byte local_timer entries and exits (their time is all
// we use).
fn trace_sample_type(kind: TraceKind) -> u64 {
    if kind.needed_fields().is_empty() {
        sample::IDENTIFIER | sample::TIME
    } else {
        sample::IDENTIFIER | sample::TIME | sample::RAW
    }
}
/// How often the drain thread looks at the rings' heads. At 100 kHz with
/// four tracepoints (~18 MB/s) the 8 MiB minimum reserve of
/// [`drain_reserve`] lasts over 0.4 s, eight looks.
pub const DRAIN_INTERVAL: Duration = Duration::from_millis(50);
/// Largest ring [`ring_bytes_for`] asks for: 1 GiB per CPU (a 10 s run at
/// 100 kHz with all four tracepoints needs 256 MiB).
pub const MAX_RING_DATA_BYTES: usize = 1 << 30;

/// Estimated record bytes per second on `cpu`'s ring: samples of the
/// sampling event, plus, on the measured CPU, the tracepoint records per
/// sample (with the sample types above; hrtimer exits of other timers and
/// throttle records are few).
pub fn ring_bytes_per_sec(cfg: &SamplerConfig, cpu: u32) -> u64 {
    let mut per_sample = cfg
        .contents
        .est_record_bytes(matches!(cfg.scope, Scope::Task(_)));
    if cpu == cfg.measured_cpu {
        if cfg.trace_handler {
            // nmi_handler: 24 + raw (8 common + 8 handler + 8 delta + 4 handled,
            // +4 size, padded) = 56; hrtimer entry 64 + exit 48.
            per_sample += if cfg.event.is_hardware() { 56 } else { 64 + 48 };
        }
        if cfg.trace_irq {
            per_sample += 24 + 24;
        }
    }
    cfg.freq_hz.saturating_mul(per_sample)
}

/// Smallest ring of a CPU other than the measured one when rings hold the
/// whole run: those rings carry that CPU's samples only, and on a big host
/// (system scope maps one ring per CPU) a 16 MiB floor each is gigabytes of
/// locked memory for a few hundred KiB of records.
pub const OTHER_CPU_MIN_RING_BYTES: usize = 1 << 20;

/// Ring data size for `cpu`: with an expected duration, the smallest power
/// of two whose space above [`drain_reserve`] holds the estimated bytes of
/// the run plus half a second, between `ring_data_bytes` (the measured CPU)
/// or [`OTHER_CPU_MIN_RING_BYTES`] (the others: their rings carry their own
/// samples only) and
/// [`MAX_RING_DATA_BYTES`].
pub fn ring_bytes_for(cfg: &SamplerConfig, cpu: u32) -> usize {
    let Some(d) = cfg.expected_duration else {
        return cfg.ring_data_bytes;
    };
    let floor = if cpu == cfg.measured_cpu {
        cfg.ring_data_bytes
    } else {
        cfg.ring_data_bytes.min(OTHER_CPU_MIN_RING_BYTES)
    };
    let secs = d.as_secs_f64() + 0.5;
    let want = ring_bytes_per_sec(cfg, cpu) as f64 * secs;
    let want = usize::try_from(want as u64).unwrap_or(MAX_RING_DATA_BYTES);
    let max = MAX_RING_DATA_BYTES.max(floor);
    let mut size = floor.max(1).next_power_of_two();
    while size < max && size - drain_reserve(size) < want {
        size *= 2;
    }
    size.min(max)
}

/// Free space below which a ring of `size` bytes is decoded during the run:
/// a quarter of it, at least 8 MiB (at most half of a small ring).
pub fn drain_reserve(size: usize) -> usize {
    (size / 4).max((8 << 20).min(size / 2))
}
const READ_FORMAT: u64 =
    read::TOTAL_TIME_ENABLED | read::TOTAL_TIME_RUNNING | read::ID | read::LOST;

fn sampling_sample_type(cfg: &SamplerConfig) -> u64 {
    cfg.contents
        .sample_type(matches!(cfg.scope, Scope::Task(_)))
}

/// The sample period of a 0 Hz sampler: 2^62 events (ns for cpu-clock,
/// about 146 years; decades of cycles), so it never fires. The paired
/// design's null control opens and toggles it like a real sampler, so any
/// bias of the toggling itself shows in the null control.
pub const NEVER_FIRES_PERIOD: u64 = 1 << 62;

fn sampling_attr(cfg: &SamplerConfig) -> Attr {
    let (t, c) = cfg.event.type_config();
    let attr = Attr::new().type_(t).config(c);
    let attr = if cfg.freq_hz == 0 {
        attr.sample_period(NEVER_FIRES_PERIOD)
    } else {
        attr.sample_freq(cfg.freq_hz)
    };
    cfg.contents
        .apply(attr, matches!(cfg.scope, Scope::Task(_)))
        .read_format(READ_FORMAT)
        .sample_id_all(true)
        .disabled(true)
}

fn open(attr: &mut Attr, ctx: &OpenContext) -> Result<OwnedFd, PerfError> {
    sys::perf_event_open(attr.raw_mut(), ctx.pid, ctx.cpu, None)
        .map_err(|e| PerfError::from_open(e, ctx))
}

/// Opens `requested` briefly (counting, this process, any CPU). On
/// ENOENT/EOPNOTSUPP for a hardware event returns (CpuClock, Some(warning)).
pub fn resolve_event(requested: EventKind) -> Result<(EventKind, Option<String>), PerfError> {
    let (t, c) = requested.type_config();
    let mut attr = Attr::new().type_(t).config(c).read_format(READ_FORMAT);
    let ctx = OpenContext {
        event: requested.name().into(),
        freq_hz: 0,
        pid: 0,
        cpu: -1,
    };
    match open(&mut attr, &ctx) {
        Ok(_fd) => Ok((requested, None)),
        Err(e) if e.is_no_such_event() && requested.is_hardware() => Ok((
            EventKind::CpuClock,
            Some(format!(
                "WARNING: event `{}` is not available on this host ({e}). FALLING BACK to the \
                 software event `cpu-clock`: its sampling interrupt is an hrtimer, not a PMU NMI, \
                 so the measured overhead is that of cpu-clock, not of {}.",
                requested.name(),
                requested.name()
            )),
        )),
        Err(e) => Err(e),
    }
}

#[derive(Debug, Clone, Copy)]
enum Role {
    Sampling,
    Trace,
}

#[derive(Debug)]
struct OpenEvent {
    fd: OwnedFd,
    cpu: u32,
    role: Role,
}

#[derive(Debug, Default)]
struct Shared {
    stop: AtomicBool,
    /// Sampling is enabled (between enable and disable).
    enabled: AtomicBool,
    samples: AtomicU64,
    requested: AtomicU64,
    completed: AtomicU64,
}

#[derive(Debug, Default)]
struct DrainOutput {
    sample_keys: Vec<(u32, u64)>,
    contents: ContentsStats,
    samples_all: u64,
    pairer: handler::Pairer,
    nmi: Vec<TraceEvent>,
    lost_records: u64,
    lost_samples: u64,
    throttled: u64,
    unthrottled: u64,
    cpu_ns: u64,
    passes: u64,
    passes_on_measured: u64,
    bytes: u64,
    bytes_in_window: u64,
    first_error: Option<PerfError>,
    bad_trace_records: u64,
}

#[derive(Debug, Clone)]
enum IdRole {
    Sampling,
    Trace(TraceLayout),
}

struct Drainer {
    rings: Vec<Ring>,
    ids: Vec<(u64, IdRole)>,
    measured_cpu: u32,
    all_cpu_samples: bool,
    shared: Arc<Shared>,
    out: DrainOutput,
    interval: Duration,
}

impl Drainer {
    /// Decodes every ring whose free space fell below [`drain_reserve`], or
    /// every ring when `all`.
    fn pass(&mut self, all: bool) {
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
                                Some(ev @ TraceEvent::Nmi { .. }) => out.nmi.push(ev),
                                Some(ev) => out.pairer.push(&ev),
                                None => out.bad_trace_records += 1,
                            }
                        }
                        None => out.bad_trace_records += 1,
                    }
                }
                Record::Lost { lost, .. } => out.lost_records += lost,
                Record::LostSamples { lost, .. } => out.lost_samples += lost,
                Record::Throttle { .. } => out.throttled += 1,
                Record::Unthrottle { .. } => out.unthrottled += 1,
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
        self.shared
            .samples
            .store(out.sample_keys.len() as u64, Ordering::Release);
    }

    fn run(mut self, pin: Option<u32>) -> DrainOutput {
        if let Some(cpu) = pin {
            let mut set = rustix::thread::CpuSet::new();
            set.set(cpu as usize);
            if let Err(e) = rustix::thread::sched_setaffinity(None, &set) {
                tracing::warn!("could not pin the drain thread to cpu {cpu}: {e}");
            }
        }
        let start = thread_cpu_ns();
        loop {
            let req = self.shared.requested.load(Ordering::Acquire);
            let stop = self.shared.stop.load(Ordering::Acquire);
            let asked = req != self.shared.completed.load(Ordering::Acquire);
            self.pass(stop || asked);
            self.shared.completed.store(req, Ordering::Release);
            if stop {
                break;
            }
            std::thread::park_timeout(self.interval);
        }
        self.out.cpu_ns = thread_cpu_ns().saturating_sub(start);
        self.out
    }
}

/// One measurement session (see the module docs).
#[derive(Debug)]
pub struct Sampler {
    cfg: SamplerConfig,
    events: Vec<OpenEvent>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<DrainOutput>>,
    drain_cpu: Option<u32>,
    nmi_handler: Option<u64>,
    enabled_at: AtomicU64,
    enabled_total: AtomicU64,
    cpu_at_enable: AtomicU64,
    window_cpu: AtomicU64,
    ring_bytes: usize,
}

fn validate(cfg: &SamplerConfig, online: &[u32]) -> Result<(), PerfError> {
    if !online.contains(&cfg.measured_cpu) {
        return Err(PerfError::Config {
            field: "measured_cpu",
            value: cfg.measured_cpu.to_string(),
            fix: format!("must be an online CPU ({online:?})"),
        });
    }
    if let Some(d) = cfg.drain_cpu
        && (d == cfg.measured_cpu || !online.contains(&d))
    {
        return Err(PerfError::Config {
            field: "drain_cpu",
            value: d.to_string(),
            fix: format!(
                "must be an online CPU other than the measured cpu {}",
                cfg.measured_cpu
            ),
        });
    }
    Ok(())
}

impl Sampler {
    /// Opens everything DISABLED, maps the rings and starts the drain thread.
    pub fn open(cfg: &SamplerConfig) -> Result<Sampler, PerfError> {
        let online = online_cpus()?;
        validate(cfg, &online)?;
        let cpus: Vec<u32> = match cfg.scope {
            Scope::Cpu => vec![cfg.measured_cpu],
            Scope::System | Scope::Task(_) => online.clone(),
        };
        let pid = match cfg.scope {
            Scope::Task(pid) => pid,
            _ => -1,
        };
        let mut events = Vec::new();
        let mut rings = Vec::new();
        let mut ids = HashMap::new();
        let mut measured_fd_index = None;
        for &cpu in &cpus {
            let mut attr = sampling_attr(cfg);
            let ctx = OpenContext {
                event: cfg.event.name().into(),
                freq_hz: cfg.freq_hz,
                pid,
                cpu: cpu as i32,
            };
            let fd = open(&mut attr, &ctx)?;
            let id = sys::id(fd.as_fd())
                .map_err(|e| PerfError::os("ioctl(PERF_EVENT_IOC_ID)", cfg.event.name(), e))?;
            ids.insert(id, IdRole::Sampling);
            if cpu == cfg.measured_cpu {
                measured_fd_index = Some(events.len());
            }
            events.push(OpenEvent {
                fd,
                cpu,
                role: Role::Sampling,
            });
        }
        let measured_fd_index = measured_fd_index.ok_or_else(|| PerfError::Config {
            field: "measured_cpu",
            value: cfg.measured_cpu.to_string(),
            fix: "the sampling event was not opened on it".into(),
        })?;

        // SET_OUTPUT needs the target's ring mapped: map before the tracepoints.
        let initial = Formats::single(sampling_sample_type(cfg), true)
            .map_err(|source| PerfError::Decode {
                cpu: cfg.measured_cpu,
                source,
            })?
            .with_regs_user(cfg.contents.regs_user_mask());
        let mut ring_bytes = 0;
        for ev in &events {
            let want = ring_bytes_for(cfg, ev.cpu);
            let ring = match Ring::new(ev.fd.as_fd(), ev.cpu, want, initial.clone()) {
                Err(e) if want > cfg.ring_data_bytes => {
                    tracing::warn!(
                        "a {} MiB ring for the whole run could not be mapped on cpu {} ({e}); \
                         using {} MiB, so records will be decoded while the workload runs \
                         (drained_in_window_bytes says how much)",
                        want >> 20,
                        ev.cpu,
                        cfg.ring_data_bytes >> 20
                    );
                    Ring::new(ev.fd.as_fd(), ev.cpu, cfg.ring_data_bytes, initial.clone())?
                }
                r => r?,
            };
            if ev.cpu == cfg.measured_cpu {
                ring_bytes = ring.size();
            }
            rings.push(ring);
        }

        let mut nmi_handler = None;
        if cfg.trace_handler || cfg.trace_irq {
            let root = tracefs::find_or_mount()?;
            let mut kinds = Vec::new();
            if cfg.trace_handler {
                if cfg.event.is_hardware() {
                    kinds.push(TraceKind::Nmi);
                } else {
                    kinds.push(TraceKind::HrtimerEntry);
                    kinds.push(TraceKind::HrtimerExit);
                }
            }
            if cfg.trace_irq {
                kinds.push(TraceKind::LocalTimerEntry);
                kinds.push(TraceKind::LocalTimerExit);
            }
            for k in kinds {
                let (system, name) = k.tracepoint();
                let full = format!("{system}:{name}");
                let format = tracefs::tracepoint(&root, system, name)?;
                let layout =
                    TraceLayout::new(k, &format).map_err(|field| PerfError::MissingField {
                        event: full.clone(),
                        field,
                        path: root.join("events").join(system).join(name).join("format"),
                    })?;
                let mut attr = Attr::new()
                    .type_(kind::TRACEPOINT)
                    .config(format.id)
                    .sample_period(1)
                    .sample_type(trace_sample_type(k) | cfg.trace_extra_fields)
                    .read_format(READ_FORMAT)
                    .sample_id_all(true)
                    .disabled(true);
                let ctx = OpenContext {
                    event: full.clone(),
                    freq_hz: 0,
                    pid: -1,
                    cpu: cfg.measured_cpu as i32,
                };
                let fd = open(&mut attr, &ctx)?;
                match k {
                    TraceKind::HrtimerEntry => {
                        let filter = match tracefs::kallsyms_address(HRTIMER_SYMBOL) {
                            Ok(addr) => format!("function == 0x{addr:x}"),
                            Err(e) => {
                                tracing::debug!("{e}; filtering by symbol name instead");
                                format!("function.function == {HRTIMER_SYMBOL}")
                            }
                        };
                        set_filter(&fd, &full, &filter)?;
                    }
                    TraceKind::Nmi => {
                        let addr = tracefs::kallsyms_address(NMI_HANDLER_SYMBOL)?;
                        nmi_handler = Some(addr);
                        set_filter(&fd, &full, &format!("handler == 0x{addr:x}"))?;
                    }
                    _ => {}
                }
                sys::set_output(fd.as_fd(), events[measured_fd_index].fd.as_fd()).map_err(|e| {
                    PerfError::os("ioctl(PERF_EVENT_IOC_SET_OUTPUT)", full.clone(), e)
                })?;
                let id = sys::id(fd.as_fd())
                    .map_err(|e| PerfError::os("ioctl(PERF_EVENT_IOC_ID)", full.clone(), e))?;
                ids.insert(id, IdRole::Trace(layout));
                events.push(OpenEvent {
                    fd,
                    cpu: cfg.measured_cpu,
                    role: Role::Trace,
                });
            }
        }

        let id_types: Vec<(u64, u64)> = ids
            .iter()
            .map(|(&id, r)| {
                let t = match r {
                    IdRole::Sampling => sampling_sample_type(cfg),
                    IdRole::Trace(layout) => {
                        trace_sample_type(layout.kind) | cfg.trace_extra_fields
                    }
                };
                (id, t)
            })
            .collect();
        let formats = Formats::by_id(&id_types, true)
            .map_err(|source| PerfError::Decode {
                cpu: cfg.measured_cpu,
                source,
            })?
            .with_regs_user(cfg.contents.regs_user_mask());
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
            ids: ids.into_iter().collect(),
            measured_cpu: cfg.measured_cpu,
            all_cpu_samples: matches!(cfg.scope, Scope::Task(_)),
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
            events,
            shared,
            thread: Some(thread),
            drain_cpu,
            nmi_handler,
            enabled_at: AtomicU64::new(0),
            enabled_total: AtomicU64::new(0),
            cpu_at_enable: AtomicU64::new(0),
            window_cpu: AtomicU64::new(0),
            ring_bytes,
        })
    }

    /// The config this session was opened with.
    pub fn config(&self) -> &SamplerConfig {
        &self.cfg
    }

    /// Enables the tracepoints, then the sampling event(s).
    pub fn enable(&self) -> Result<(), PerfError> {
        for ev in self.events.iter().filter(|e| matches!(e.role, Role::Trace)) {
            sys::enable(ev.fd.as_fd())
                .map_err(|e| PerfError::os("ioctl(PERF_EVENT_IOC_ENABLE)", "tracepoint", e))?;
        }
        self.shared.enabled.store(true, Ordering::Release);
        self.cpu_at_enable
            .store(crate::system::process_cpu_ns(), Ordering::Relaxed);
        self.enabled_at.store(now_raw_ns(), Ordering::Relaxed);
        for ev in self
            .events
            .iter()
            .filter(|e| matches!(e.role, Role::Sampling))
        {
            sys::enable(ev.fd.as_fd()).map_err(|e| {
                PerfError::os("ioctl(PERF_EVENT_IOC_ENABLE)", self.cfg.event.name(), e)
            })?;
        }
        Ok(())
    }

    /// Disables the sampling event(s), then the tracepoints.
    pub fn disable(&self) -> Result<(), PerfError> {
        for ev in self
            .events
            .iter()
            .filter(|e| matches!(e.role, Role::Sampling))
        {
            sys::disable(ev.fd.as_fd()).map_err(|e| {
                PerfError::os("ioctl(PERF_EVENT_IOC_DISABLE)", self.cfg.event.name(), e)
            })?;
        }
        let since = self.enabled_at.swap(0, Ordering::Relaxed);
        if since != 0 {
            self.enabled_total
                .fetch_add(now_raw_ns().saturating_sub(since), Ordering::Relaxed);
            let cpu0 = self.cpu_at_enable.swap(0, Ordering::Relaxed);
            self.window_cpu.fetch_add(
                crate::system::process_cpu_ns().saturating_sub(cpu0),
                Ordering::Relaxed,
            );
        }
        self.shared.enabled.store(false, Ordering::Release);
        for ev in self.events.iter().filter(|e| matches!(e.role, Role::Trace)) {
            sys::disable(ev.fd.as_fd())
                .map_err(|e| PerfError::os("ioctl(PERF_EVENT_IOC_DISABLE)", "tracepoint", e))?;
        }
        Ok(())
    }

    /// Samples decoded so far (on the measured CPU; all CPUs for Task
    /// scope). Rings are decoded lazily (see the module docs), so with rings
    /// that hold the whole run this stays 0 until [`Sampler::finish`]; see
    /// [`Sampler::samples_synced`], which forces a decode.
    pub fn samples_so_far(&self) -> u64 {
        self.shared.samples.load(Ordering::Acquire)
    }

    /// Asks the drain thread for a pass now, waits for it (at most ~1 s) and
    /// returns the sample count, which then includes every sample written
    /// before this call.
    pub fn samples_synced(&self) -> u64 {
        let want = self.shared.requested.fetch_add(1, Ordering::AcqRel) + 1;
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
        let deadline = now_raw_ns() + 1_000_000_000;
        while self.shared.completed.load(Ordering::Acquire) < want && now_raw_ns() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        self.samples_so_far()
    }

    /// The CPU the drain thread is pinned to.
    pub fn drain_cpu(&self) -> Option<u32> {
        self.drain_cpu
    }

    /// Disables everything, drains a last time, stops the thread and pairs
    /// the handler intervals.
    pub fn finish(mut self) -> Result<SamplerOutcome, PerfError> {
        self.disable()?;
        // Counts after disable: [value, time_enabled, time_running, id, lost].
        let mut lost_read = 0;
        let mut enabled_ns = self.enabled_total.load(Ordering::Relaxed);
        for ev in &self.events {
            let mut buf = [0u64; 5];
            let n = sys::read_counts(ev.fd.as_fd(), &mut buf)
                .map_err(|e| PerfError::os("read", "perf counts", e))?;
            if n == 5 {
                lost_read += buf[4];
                if matches!(ev.role, Role::Sampling)
                    && ev.cpu == self.cfg.measured_cpu
                    && !matches!(self.cfg.scope, Scope::Task(_))
                {
                    enabled_ns = buf[1];
                }
            }
        }
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
        let mut keys = out.sample_keys;
        keys.sort_unstable();
        let before = keys.len();
        keys.dedup();
        let mut duplicates = (before - keys.len()) as u64;
        let mut sample_times: Vec<u64> = keys.iter().map(|&(_, t)| t).collect();
        sample_times.sort_unstable();

        let mut intervals = Vec::new();
        let mut unmatched = 0;
        let mut foreign = 0;
        let traced_keys: Vec<(u32, u64)> = keys
            .iter()
            .copied()
            .filter(|&(c, _)| c == self.cfg.measured_cpu)
            .collect();
        let mut pairer = out.pairer;
        pairer.finish();
        if self.cfg.trace_handler || self.cfg.trace_irq {
            let mut inner = Vec::new();
            if self.cfg.event.is_hardware() {
                if self.cfg.trace_handler {
                    let p = handler::nmi_intervals(
                        &out.nmi,
                        self.nmi_handler.unwrap_or(0),
                        Some(&traced_keys),
                    );
                    duplicates += p.duplicates;
                    unmatched += p.unmatched();
                    foreign += p.foreign;
                    inner = p.intervals;
                }
            } else {
                let (ours, f, _) = handler::select_hrtimer(&pairer.hrtimer, &traced_keys);
                unmatched += pairer.hrtimer_unmatched_entries + pairer.hrtimer_unmatched_exits;
                foreign += f;
                inner = ours;
            }
            if self.cfg.trace_irq {
                intervals.extend(handler::select_local_timer(&pairer.local_timer, &inner));
                unmatched += pairer.local_unmatched_entries + pairer.local_unmatched_exits;
            }
            if self.cfg.trace_handler {
                intervals.extend(inner);
            }
            intervals.sort_by_key(|i| (i.entry_ns, i.cpu, i.source));
        }
        let samples = keys.len() as u64;
        Ok(SamplerOutcome {
            event: self.cfg.event,
            samples,
            samples_all_cpus: out.samples_all,
            sample_times_ns: sample_times,
            enabled_ns,
            lost: out.lost_records.max(lost_read),
            lost_samples: out.lost_samples,
            throttled: out.throttled,
            unthrottled: out.unthrottled,
            duplicates,
            intervals,
            unmatched,
            foreign_intervals: foreign,
            drain_cpu_ns: out.cpu_ns,
            window_cpu_ns: self.window_cpu.load(Ordering::Relaxed),
            drained_in_window_bytes: out.bytes_in_window,
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

fn set_filter(fd: &OwnedFd, event: &str, filter: &str) -> Result<(), PerfError> {
    let c = std::ffi::CString::new(filter).map_err(|_| PerfError::Config {
        field: "tracepoint filter",
        value: filter.into(),
        fix: "no NUL bytes".into(),
    })?;
    sys::set_filter(fd.as_fd(), &c).map_err(|source| PerfError::Filter {
        event: event.into(),
        filter: filter.into(),
        source,
    })
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.stop_thread();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn traced(freq_hz: u64, secs: f64) -> SamplerConfig {
        let mut cfg = SamplerConfig::new(EventKind::CpuClock, freq_hz, 1);
        cfg.trace_handler = true;
        cfg.trace_irq = true;
        cfg.expected_duration = Some(Duration::from_secs_f64(secs));
        cfg
    }

    #[test]
    fn rings_hold_the_run_above_the_reserve() {
        // The sweep's heaviest run: 10 s at 100 kHz, all four tracepoints.
        let cfg = traced(100_000, 10.0);
        // perf record's samples (56 bytes) and the lean tracepoint records.
        assert_eq!(
            ring_bytes_per_sec(&cfg, 1),
            100_000 * (56 + 64 + 48 + 24 + 24)
        );
        assert_eq!(ring_bytes_for(&cfg, 1), 512 << 20);
        // Other CPUs' rings carry samples only.
        assert_eq!(ring_bytes_per_sec(&cfg, 0), 100_000 * 56);
        // Timestamp-only samples: 24 bytes.
        let mut lean = traced(100_000, 10.0);
        lean.contents = SampleContents::Time;
        assert_eq!(ring_bytes_for(&lean, 1), 256 << 20);
        // An 8 KiB stack copy at 100 kHz (~830 MB/s) cannot be held: the
        // ring is capped and the drain decodes during the run.
        let mut dwarf = traced(100_000, 10.0);
        dwarf.contents = SampleContents::Dwarf { stack_bytes: 8192 };
        assert!(ring_bytes_per_sec(&dwarf, 0) > 800_000_000);
        assert_eq!(ring_bytes_for(&dwarf, 1), MAX_RING_DATA_BYTES);
        for (freq, secs) in [
            (100, 10.0),
            (4000, 10.0),
            (100_000, 1.0),
            (100_000, 30.0),
            (50_000, 7.5),
        ] {
            let cfg = traced(freq, secs);
            let size = ring_bytes_for(&cfg, 1);
            assert!(size.is_power_of_two());
            assert!((DEFAULT_RING_DATA_BYTES..=MAX_RING_DATA_BYTES).contains(&size));
            let run = ring_bytes_per_sec(&cfg, 1) as f64 * (secs + 0.5);
            if size < MAX_RING_DATA_BYTES {
                assert!(
                    run <= (size - drain_reserve(size)) as f64,
                    "{freq} Hz {secs} s: {run} bytes in a {size}-byte ring"
                );
            }
        }
        // Too long for one ring: capped; the reserve then decodes during the run.
        assert_eq!(
            ring_bytes_for(&traced(100_000, 600.0), 1),
            MAX_RING_DATA_BYTES
        );
        // No expected duration: the configured size.
        let mut cfg = traced(100_000, 10.0);
        cfg.expected_duration = None;
        assert_eq!(ring_bytes_for(&cfg, 1), DEFAULT_RING_DATA_BYTES);
    }

    #[test]
    fn other_cpus_rings_follow_their_own_rate() {
        for (freq, secs) in [(100, 10.0), (4000, 10.0), (20_000, 8.0), (100_000, 10.0)] {
            let cfg = traced(freq, secs);
            let size = ring_bytes_for(&cfg, 0);
            assert!(size.is_power_of_two());
            assert!(size >= OTHER_CPU_MIN_RING_BYTES);
            // Holds the run without reaching the reserve: nothing decoded
            // while sampling.
            let run = ring_bytes_per_sec(&cfg, 0) as f64 * (secs + 0.5);
            assert!(
                run <= (size - drain_reserve(size)) as f64,
                "{freq} Hz {secs} s: {run} bytes in a {size}-byte ring"
            );
            assert!(size <= ring_bytes_for(&cfg, 1));
        }
        // At production rates below the measured CPU's 16 MiB floor
        // (perf-default samples, 56 bytes: 59 KB, 2.4 MB and 59 MB a run).
        assert_eq!(ring_bytes_for(&traced(100, 10.0), 0), 1 << 20);
        assert_eq!(ring_bytes_for(&traced(4000, 10.0), 0), 8 << 20);
        assert_eq!(ring_bytes_for(&traced(100_000, 10.0), 0), 128 << 20);
    }

    #[test]
    fn reserve_is_a_quarter_with_an_8_mib_floor_below_half() {
        assert_eq!(drain_reserve(256 << 20), 64 << 20);
        assert_eq!(drain_reserve(32 << 20), 8 << 20);
        assert_eq!(drain_reserve(16 << 20), 8 << 20);
        assert_eq!(drain_reserve(1 << 20), 512 << 10);
    }
}
