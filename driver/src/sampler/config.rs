//! What a session is asked to do (`SamplerConfig`, the event, the scope)
//! and how big its rings are.

use serde::Deserialize;
use serde::Serialize;
use std::time::Duration;

use perf_event_open_sys::bindings as b;

use super::{DEFAULT_RING_DATA_BYTES, SampleContents, TraceKind, handler, sample};

/// Kernel symbol of perf's NMI handler (filter of `nmi:nmi_handler`).
pub const NMI_HANDLER_SYMBOL: &str = "perf_event_nmi_handler";
/// Kernel symbol of the cpu-clock/task-clock hrtimer callback.
pub const HRTIMER_SYMBOL: &str = "perf_swevent_hrtimer";

pub use results_format::EventKind;

/// What the kernel needs to know of an event: its `perf_event_attr` type
/// and config, and the tracepoints that time its handler.
pub trait EventKernel {
    /// Which tracepoints time this event's handler.
    fn handler_source(&self) -> handler::HandlerSource;
    /// `perf_event_attr.type` and `.config`.
    fn type_config(&self) -> (u32, u64);
}

impl EventKernel for EventKind {
    fn handler_source(&self) -> handler::HandlerSource {
        if self.is_hardware() {
            handler::HandlerSource::Nmi
        } else {
            handler::HandlerSource::Hrtimer
        }
    }

    fn type_config(&self) -> (u32, u64) {
        match self {
            EventKind::CpuClock => (b::PERF_TYPE_SOFTWARE, b::PERF_COUNT_SW_CPU_CLOCK.into()),
            EventKind::TaskClock => (b::PERF_TYPE_SOFTWARE, b::PERF_COUNT_SW_TASK_CLOCK.into()),
            EventKind::Cycles => (b::PERF_TYPE_HARDWARE, b::PERF_COUNT_HW_CPU_CYCLES.into()),
            EventKind::Instructions => {
                (b::PERF_TYPE_HARDWARE, b::PERF_COUNT_HW_INSTRUCTIONS.into())
            }
        }
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

/// What to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplerConfig {
    /// Already resolved (no fallback inside the sampler; see [`resolve_event`](super::resolve_event)).
    pub event: EventKind,
    /// sample_freq; 0 opens a sampler that never fires (period
    /// [`NEVER_FIRES_PERIOD`](super::NEVER_FIRES_PERIOD)): the paired design's null control.
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
    /// the lean layout of `trace_sample_type`). `perf record` writes
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

    /// The pid of the task the sampling event follows (task scope).
    pub fn task(&self) -> Option<i32> {
        match self.scope {
            Scope::Task(pid) => Some(pid),
            Scope::Cpu | Scope::System => None,
        }
    }

    /// The CPUs the sampling event is opened on, one ring each.
    pub fn cpus(&self, online: &[u32]) -> Vec<u32> {
        match self.scope {
            Scope::Cpu => vec![self.measured_cpu],
            Scope::System | Scope::Task(_) => online.to_vec(),
        }
    }

    /// The tracepoints opened on the measured CPU: the handler's (the NMI
    /// for a hardware event, the hrtimer's entry and exit otherwise), then
    /// the whole timer interrupt's.
    pub fn trace_kinds(&self) -> Vec<TraceKind> {
        let mut kinds = Vec::new();
        if self.trace_handler && self.event.is_hardware() {
            kinds.push(TraceKind::Nmi);
        } else if self.trace_handler {
            kinds.extend([TraceKind::HrtimerEntry, TraceKind::HrtimerExit]);
        }
        if self.trace_irq {
            kinds.extend([TraceKind::LocalTimerEntry, TraceKind::LocalTimerExit]);
        }
        kinds
    }
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
pub(super) fn trace_sample_type(kind: TraceKind) -> u64 {
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
    let mut per_sample = cfg.contents.est_record_bytes(cfg.task().is_some());
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
