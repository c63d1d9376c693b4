//! Opening the sampling event: the open itself with its errors
//! translated, the event resolution with its loud fallback, and the checks
//! before anything opens.

use std::os::fd::AsFd;
use std::os::fd::OwnedFd;

use super::config::EventKernel;
use perf_event_open_sys::bindings as b;

use super::{Attr, EventKind, OpenContext, PerfError, SamplerConfig, sys};

/// What reading an event's fd gives: its value, time enabled and running,
/// id and records lost.
pub(super) const READ_FORMAT: u64 = (b::PERF_FORMAT_TOTAL_TIME_ENABLED
    | b::PERF_FORMAT_TOTAL_TIME_RUNNING
    | b::PERF_FORMAT_ID
    | b::PERF_FORMAT_LOST) as u64;

pub(super) fn sampling_sample_type(cfg: &SamplerConfig) -> u64 {
    cfg.contents.sample_type(cfg.task().is_some())
}

/// The sample period of a 0 Hz sampler: 2^62 events (ns for cpu-clock,
/// about 146 years; decades of cycles), so it never fires. The paired
/// design's null control opens and toggles it like a real sampler, so any
/// bias of the toggling itself shows in the null control.
pub const NEVER_FIRES_PERIOD: u64 = 1 << 62;

pub(super) fn open(attr: &mut Attr, ctx: &OpenContext) -> Result<OwnedFd, PerfError> {
    sys::perf_event_open(attr.raw_mut(), ctx.pid, ctx.cpu, None)
        .map_err(|e| PerfError::from_open(e, ctx))
}

/// Opens `requested` briefly (counting, this process, any CPU). On
/// ENOENT/EOPNOTSUPP for a hardware event returns (CpuClock, Some(warning)).
pub fn resolve_event(requested: EventKind) -> Result<(EventKind, Option<String>), PerfError> {
    let (t, c) = requested.type_config();
    let mut attr = Attr::new().type_(t).config(c).read_format(READ_FORMAT);
    let ctx = OpenContext {
        event: requested.as_str().into(),
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
                requested.as_str(),
                requested.as_str()
            )),
        )),
        Err(e) => Err(e),
    }
}

pub(super) fn validate(cfg: &SamplerConfig, online: &[u32]) -> Result<(), PerfError> {
    if !online.contains(&cfg.measured_cpu) {
        let fix = format!("must be an online CPU ({online:?})");
        return Err(PerfError::config("measured_cpu", cfg.measured_cpu, fix));
    }
    if let Some(d) = cfg.drain_cpu
        && (d == cfg.measured_cpu || !online.contains(&d))
    {
        let fix = format!(
            "must be an online CPU other than the measured cpu {}",
            cfg.measured_cpu
        );
        return Err(PerfError::config("drain_cpu", d, fix));
    }
    Ok(())
}

pub(super) fn set_filter(fd: &OwnedFd, event: &str, filter: &str) -> Result<(), PerfError> {
    let c = std::ffi::CString::new(filter)
        .map_err(|_| PerfError::config("tracepoint filter", filter, "no NUL bytes"))?;
    sys::set_filter(fd.as_fd(), &c).map_err(|source| PerfError::Filter {
        event: event.into(),
        filter: filter.into(),
        source,
    })
}
