//! Opening a sampler: the sampling events, their rings, the handler's
//! tracepoints, and how to decode what each writes.

use std::os::fd::{AsFd, OwnedFd};

use crate::perf::record::DecodeError;

use super::sampling_event::open;

use super::{
    Attr, EventKernel, Formats, HRTIMER_SYMBOL, IdRole, NEVER_FIRES_PERIOD, NMI_HANDLER_SYMBOL,
    OpenContext, OpenEvent, PerfError, READ_FORMAT, Ring, SamplerConfig, TraceKind, TraceLayout,
    ring_bytes_for, sampling_sample_type, set_filter, sys, trace_sample_type, tracefs,
};

/// The sampling event on each of `cpus` (pid -1, or the task's), and the
/// index of the measured CPU's.
pub(super) fn open_sampling(
    cfg: &SamplerConfig,
    cpus: &[u32],
    pid: i32,
) -> Result<(Vec<OpenEvent>, usize), PerfError> {
    // The same attr on every CPU: what the user asked each sample to carry,
    // at `freq_hz` (0: a sampler that never fires, the paired design's null
    // control).
    let (t, c) = cfg.event.type_config();
    let attr = Attr::new().type_(t).config(c);
    let attr = if cfg.freq_hz == 0 {
        attr.sample_period(NEVER_FIRES_PERIOD)
    } else {
        attr.sample_freq(cfg.freq_hz)
    };
    let attr = cfg
        .contents
        .apply(attr, cfg.task().is_some())
        .read_format(READ_FORMAT)
        .sample_id_all(true);
    let mut events = Vec::new();
    for &cpu in cpus {
        let mut attr = attr.clone();
        let ctx = OpenContext {
            event: cfg.event.as_str().into(),
            freq_hz: cfg.freq_hz,
            pid,
            cpu: cpu as i32,
        };
        let fd = open(&mut attr, &ctx)?;
        events.push(OpenEvent {
            id: event_id(&fd, cfg.event.as_str())?,
            fd,
            cpu,
            role: IdRole::Sampling,
        });
    }
    let measured = events.iter().position(|e| e.cpu == cfg.measured_cpu);
    let measured = measured.ok_or_else(|| {
        PerfError::config(
            "measured_cpu",
            cfg.measured_cpu,
            "the sampling event was not opened on it",
        )
    })?;
    Ok((events, measured))
}

/// A ring per sampling event, sized for the whole run (a smaller one,
/// said in the log, when that cannot be mapped); the measured CPU's size.
pub(super) fn map_rings(
    cfg: &SamplerConfig,
    events: &[OpenEvent],
) -> Result<(Vec<Ring>, usize), PerfError> {
    let mut rings = Vec::new();
    let initial = Formats::single(sampling_sample_type(cfg), true)
        .map_err(decode_error(cfg))?
        .with_regs_user(cfg.contents.regs_user_mask());
    let mut ring_bytes = 0;
    for ev in events {
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
    Ok((rings, ring_bytes))
}

/// The handler's (and the whole interrupt's) tracepoints on the measured
/// CPU, filtered to perf's own handler and writing into the measured CPU's
/// ring (`output`, its sampling event); the NMI handler's address when it
/// is traced.
pub(super) fn open_tracepoints(
    cfg: &SamplerConfig,
    output: &OwnedFd,
) -> Result<(Vec<OpenEvent>, Option<u64>), PerfError> {
    let mut events = Vec::new();
    let kinds = cfg.trace_kinds();
    if kinds.is_empty() {
        return Ok((events, None));
    }
    let mut nmi_handler = None;
    let root = tracefs::find_or_mount()?;
    for k in kinds {
        let (system, name) = k.tracepoint();
        let full = format!("{system}:{name}");
        let format = tracefs::tracepoint(&root, system, name)?;
        let layout = TraceLayout::new(k, &format).map_err(|field| PerfError::MissingField {
            event: full.clone(),
            field,
            path: root.join("events").join(system).join(name).join("format"),
        })?;
        let mut attr = Attr::new()
            .type_(perf_event_open_sys::bindings::PERF_TYPE_TRACEPOINT)
            .config(format.id)
            .sample_period(1)
            .sample_type(trace_sample_type(k) | cfg.trace_extra_fields)
            .read_format(READ_FORMAT)
            .sample_id_all(true);
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
        sys::set_output(fd.as_fd(), output.as_fd())
            .map_err(|e| PerfError::os("ioctl(PERF_EVENT_IOC_SET_OUTPUT)", full.clone(), e))?;
        events.push(OpenEvent {
            id: event_id(&fd, &full)?,
            fd,
            cpu: cfg.measured_cpu,
            role: IdRole::Trace(layout),
        });
    }
    Ok((events, nmi_handler))
}

/// PERF_EVENT_IOC_ID of an open event (`what` names it in errors).
fn event_id(fd: &OwnedFd, what: &str) -> Result<u64, PerfError> {
    sys::id(fd.as_fd()).map_err(|e| PerfError::os("ioctl(PERF_EVENT_IOC_ID)", what, e))
}

/// The decoding error of the session's formats, on the measured CPU.
fn decode_error(cfg: &SamplerConfig) -> impl FnOnce(DecodeError) -> PerfError {
    let cpu = cfg.measured_cpu;
    move |source| PerfError::Decode { cpu, source }
}

/// How to decode each id's records.
pub(super) fn formats_by_id(
    cfg: &SamplerConfig,
    ids: &[(u64, IdRole)],
) -> Result<Formats, PerfError> {
    let id_types: Vec<(u64, u64)> = ids
        .iter()
        .map(|(id, r)| {
            let t = match r {
                IdRole::Sampling => sampling_sample_type(cfg),
                IdRole::Trace(layout) => trace_sample_type(layout.kind) | cfg.trace_extra_fields,
            };
            (*id, t)
        })
        .collect();
    Formats::by_id(&id_types, true)
        .map_err(decode_error(cfg))
        .map(|f| f.with_regs_user(cfg.contents.regs_user_mask()))
}
