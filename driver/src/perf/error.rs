//! errno from perf_event_open and friends, translated into causes and fixes.
//!
//! See perf_event_open(2), section ERRORS.

use std::io;
use std::path::{Path, PathBuf};

use super::record::DecodeError;

/// Where a perf_event_open call came from, for error messages.
#[derive(Debug, Clone, Default)]
pub struct OpenContext {
    /// Event name (`cpu-clock`, `cycles`, `timer:hrtimer_expire_entry` ...).
    pub event: String,
    /// Requested sample_freq, 0 for counting events and tracepoints.
    pub freq_hz: u64,
    /// pid argument (-1 = CPU-wide).
    pub pid: i32,
    /// cpu argument (-1 = any CPU).
    pub cpu: i32,
}

/// Everything that can go wrong in the kernel interface.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    /// ENOENT / EOPNOTSUPP: the kernel has no such event.
    #[error(
        "perf_event_open({event}) failed with {errno}: this host has no such PMU event \
         (a VM without a virtual PMU, or a CPU without that counter). Fix: use the software \
         event `cpu-clock` (the driver falls back to it for `cycles`/`instructions` with a warning)"
    )]
    NoSuchEvent {
        /// The event that was asked for.
        event: String,
        /// The errno name.
        errno: &'static str,
    },
    /// EACCES / EPERM: not allowed.
    #[error(
        "perf_event_open({event}, pid {pid}, cpu {cpu}) was refused ({errno}): \
         /proc/sys/kernel/perf_event_paranoid is {paranoid}. Fix: run as root, or give the \
         binary CAP_PERFMON (and read access to tracefs, /sys/kernel/tracing, for the handler \
         tracepoints), or lower the sysctl: `sysctl kernel.perf_event_paranoid=-1`"
    )]
    Permission {
        /// The event that was asked for.
        event: String,
        /// pid argument.
        pid: i32,
        /// cpu argument.
        cpu: i32,
        /// The errno name.
        errno: &'static str,
        /// Current value of perf_event_paranoid (or why it is unknown).
        paranoid: String,
    },
    /// EINVAL with sample_freq above the kernel's limit.
    #[error(
        "perf_event_open({event}) rejected sample_freq {freq_hz} Hz (EINVAL): it is above \
         kernel.perf_event_max_sample_rate, currently {max_rate} \
         (/proc/sys/kernel/perf_event_max_sample_rate). Fix: ask for at most {max_rate} Hz, or \
         raise the sysctl (`sysctl kernel.perf_event_max_sample_rate={freq_hz}`; `driver sweep \
         --raise-max-rate` does it and restores it afterwards)"
    )]
    SampleRateTooHigh {
        /// The event that was asked for.
        event: String,
        /// Requested sample_freq.
        freq_hz: u64,
        /// Current value of the sysctl (or why it is unknown).
        max_rate: String,
    },
    /// EINVAL for another reason.
    #[error(
        "perf_event_open({event}, pid {pid}, cpu {cpu}) rejected the attributes (EINVAL): an \
         unsupported field combination for this kernel (e.g. a clockid the event cannot use, \
         or a CPU that is offline)"
    )]
    InvalidAttr {
        /// The event that was asked for.
        event: String,
        /// pid argument.
        pid: i32,
        /// cpu argument.
        cpu: i32,
    },
    /// E2BIG: the kernel is older than the attr struct and the tail is not zero.
    #[error(
        "perf_event_open({event}) failed with E2BIG: the kernel does not know a \
         perf_event_attr field this driver set (the kernel is older than the struct). Fix: \
         a newer kernel, or do not request the newer feature"
    )]
    AttrTooBig {
        /// The event that was asked for.
        event: String,
    },
    /// ESRCH: the task is gone.
    #[error(
        "perf_event_open({event}, pid {pid}) failed with ESRCH: the task exited before the \
         event was opened. Fix: open the event before the workload finishes (start it stopped)"
    )]
    TaskExited {
        /// The event that was asked for.
        event: String,
        /// The pid.
        pid: i32,
    },
    /// EMFILE / ENFILE: out of file descriptors.
    #[error(
        "perf_event_open({event}) failed with {errno}: too many open files. Fix: raise the \
         limit (`ulimit -n 65536`) or use fewer CPUs/events"
    )]
    TooManyFiles {
        /// The event that was asked for.
        event: String,
        /// The errno name.
        errno: &'static str,
    },
    /// Any other OS error.
    #[error("{op} ({what}) failed: {source}")]
    Os {
        /// The operation (`perf_event_open`, `ioctl(SET_FILTER)`, `mmap` ...).
        op: &'static str,
        /// What it was applied to.
        what: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A tracepoint filter was rejected.
    #[error(
        "the kernel rejected tracepoint filter `{filter}` on {event} ({source}). Note: \
         `function == <symbol>` is EINVAL; use `function == 0x<addr>` or \
         `function.function == <symbol>`"
    )]
    Filter {
        /// The tracepoint.
        event: String,
        /// The filter text.
        filter: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// tracefs is not mounted and could not be mounted.
    #[error("tracefs not found ({tried}). {fix}")]
    TracefsMissing {
        /// The places that were looked at.
        tried: String,
        /// What to do.
        fix: String,
    },
    /// A tracefs/procfs file could not be read.
    #[error("cannot read {path}: {source}. Fix: run as root (tracefs is usually mode 0700)")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A tracepoint `format` (or `id`) file did not parse.
    #[error("{path}: line {line}: {reason}")]
    Format {
        /// The file.
        path: PathBuf,
        /// 1-based line number (0 = whole file).
        line: usize,
        /// What was wrong.
        reason: String,
    },
    /// A field the driver needs is missing from a tracepoint.
    #[error("tracepoint {event} has no field `{field}` (format file {path})")]
    MissingField {
        /// The tracepoint.
        event: String,
        /// The field.
        field: String,
        /// The format file.
        path: PathBuf,
    },
    /// A kernel symbol address is not available.
    #[error(
        "kernel symbol `{symbol}` {reason} in /proc/kallsyms. Fix: run as root and set \
         `sysctl kernel.kptr_restrict=0` if addresses read as 0"
    )]
    Symbol {
        /// The symbol.
        symbol: String,
        /// Not found / zero address.
        reason: &'static str,
    },
    /// A bad configuration value.
    #[error("invalid {field} = {value}: {fix}")]
    Config {
        /// The field (flag or key).
        field: &'static str,
        /// The value.
        value: String,
        /// What is allowed.
        fix: String,
    },
    /// A record in the ring did not decode.
    #[error("malformed record in the ring buffer of cpu {cpu}: {source}")]
    Decode {
        /// The ring's CPU.
        cpu: u32,
        /// The decoding error.
        #[source]
        source: DecodeError,
    },
    /// The drain thread failed or panicked.
    #[error("the ring buffer drain thread failed: {0}")]
    Drain(String),
}

/// The errno name of an `io::Error`, for the errnos whose messages name
/// it (the others are spelled out in their messages).
fn errno_name(err: &io::Error) -> &'static str {
    match err.raw_os_error() {
        Some(libc::ENOENT) => "ENOENT",
        Some(libc::EOPNOTSUPP) => "EOPNOTSUPP",
        Some(libc::ENODEV) => "ENODEV",
        Some(libc::EACCES) => "EACCES",
        Some(libc::EPERM) => "EPERM",
        Some(libc::EMFILE) => "EMFILE",
        Some(libc::ENFILE) => "ENFILE",
        _ => "error",
    }
}

/// Reads a one-line procfs/sysfs value, or says why it could not.
pub fn read_sysctl(path: &str) -> String {
    // Kept hand-written: procfs has no perf sysctls; the raw value is quoted.
    match std::fs::read_to_string(path) {
        Ok(s) => s.trim().to_string(),
        Err(e) => format!("unknown ({path}: {e})"),
    }
}

/// Path of the paranoid sysctl.
pub const PARANOID_PATH: &str = "/proc/sys/kernel/perf_event_paranoid";
/// Path of the max sample rate sysctl.
pub const MAX_RATE_PATH: &str = "/proc/sys/kernel/perf_event_max_sample_rate";

impl PerfError {
    /// Translates a failed perf_event_open into a cause and a fix.
    pub fn from_open(err: io::Error, ctx: &OpenContext) -> PerfError {
        let event = ctx.event.clone();
        match err.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => {
                PerfError::NoSuchEvent {
                    event,
                    errno: errno_name(&err),
                }
            }
            Some(libc::EACCES) | Some(libc::EPERM) => PerfError::Permission {
                event,
                pid: ctx.pid,
                cpu: ctx.cpu,
                errno: errno_name(&err),
                paranoid: read_sysctl(PARANOID_PATH),
            },
            Some(libc::EINVAL) => {
                let max = read_sysctl(MAX_RATE_PATH);
                let above = max.parse::<u64>().map(|m| ctx.freq_hz > m).unwrap_or(false);
                if above {
                    PerfError::SampleRateTooHigh {
                        event,
                        freq_hz: ctx.freq_hz,
                        max_rate: max,
                    }
                } else {
                    PerfError::InvalidAttr {
                        event,
                        pid: ctx.pid,
                        cpu: ctx.cpu,
                    }
                }
            }
            Some(libc::E2BIG) => PerfError::AttrTooBig { event },
            Some(libc::ESRCH) => PerfError::TaskExited {
                event,
                pid: ctx.pid,
            },
            Some(libc::EMFILE) | Some(libc::ENFILE) => PerfError::TooManyFiles {
                event,
                errno: errno_name(&err),
            },
            _ => PerfError::os(
                "perf_event_open",
                format!("{event}, pid {}, cpu {}", ctx.pid, ctx.cpu),
                err,
            ),
        }
    }

    /// True when the error means "no such PMU event" (the cpu-clock fallback applies).
    pub fn is_no_such_event(&self) -> bool {
        matches!(self, PerfError::NoSuchEvent { .. })
    }

    /// Reads a tracefs/procfs/sysfs file, the error naming it.
    pub fn read(path: &Path) -> Result<String, PerfError> {
        std::fs::read_to_string(path).map_err(|source| PerfError::Read {
            path: path.to_path_buf(),
            source,
        })
    }

    /// A bad configuration value: the field, the value and what is allowed.
    pub fn config(field: &'static str, value: impl ToString, fix: impl Into<String>) -> Self {
        let (value, fix) = (value.to_string(), fix.into());
        PerfError::Config { field, value, fix }
    }

    /// Wraps an OS error of another operation.
    pub fn os(op: &'static str, what: impl Into<String>, source: io::Error) -> PerfError {
        PerfError::Os {
            op,
            what: what.into(),
            source,
        }
    }
}
