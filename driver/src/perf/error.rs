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
    /// perf_event_open failed with an errno whose cause is known (see
    /// [`PerfError::from_open`]); the message names the cause and the fix.
    #[error("{}", open_message(ctx, *errno, sysctl))]
    Open {
        /// The call.
        ctx: OpenContext,
        /// The errno.
        errno: i32,
        /// The sysctl the cause depends on, as read when the call failed:
        /// perf_event_paranoid (EACCES, EPERM) or
        /// perf_event_max_sample_rate (EINVAL); empty for the others.
        sysctl: String,
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

/// The cause and fix of a failed perf_event_open, by errno
/// (perf_event_open(2), ERRORS); `sysctl` as in [`PerfError::Open`].
fn open_message(ctx: &OpenContext, errno: i32, sysctl: &str) -> String {
    let OpenContext {
        event,
        freq_hz,
        pid,
        cpu,
    } = ctx;
    let name = match errno {
        libc::ENOENT => "ENOENT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENODEV => "ENODEV",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::EMFILE => "EMFILE",
        libc::ENFILE => "ENFILE",
        _ => "error",
    };
    match errno {
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => format!(
            "perf_event_open({event}) failed with {name}: this host has no such PMU event \
             (a VM without a virtual PMU, or a CPU without that counter). Fix: use the software \
             event `cpu-clock` (the driver falls back to it for `cycles`/`instructions` with a warning)"
        ),
        libc::EACCES | libc::EPERM => format!(
            "perf_event_open({event}, pid {pid}, cpu {cpu}) was refused ({name}): \
             /proc/sys/kernel/perf_event_paranoid is {sysctl}. Fix: run as root, or give the \
             binary CAP_PERFMON (and read access to tracefs, /sys/kernel/tracing, for the handler \
             tracepoints), or lower the sysctl: `sysctl kernel.perf_event_paranoid=-1`"
        ),
        libc::EINVAL if sysctl.parse::<u64>().is_ok_and(|max| *freq_hz > max) => format!(
            "perf_event_open({event}) rejected sample_freq {freq_hz} Hz (EINVAL): it is above \
             kernel.perf_event_max_sample_rate, currently {sysctl} \
             (/proc/sys/kernel/perf_event_max_sample_rate). Fix: ask for at most {sysctl} Hz, or \
             raise the sysctl (`sysctl kernel.perf_event_max_sample_rate={freq_hz}`; `driver sweep \
             --raise-max-rate` does it and restores it afterwards)"
        ),
        libc::EINVAL => format!(
            "perf_event_open({event}, pid {pid}, cpu {cpu}) rejected the attributes (EINVAL): an \
             unsupported field combination for this kernel (e.g. a clockid the event cannot use, \
             or a CPU that is offline)"
        ),
        libc::E2BIG => format!(
            "perf_event_open({event}) failed with E2BIG: the kernel does not know a \
             perf_event_attr field this driver set (the kernel is older than the struct). Fix: \
             a newer kernel, or do not request the newer feature"
        ),
        libc::ESRCH => format!(
            "perf_event_open({event}, pid {pid}) failed with ESRCH: the task exited before the \
             event was opened. Fix: open the event before the workload finishes (start it stopped)"
        ),
        // EMFILE and ENFILE, the last errnos `from_open` keeps.
        _ => format!(
            "perf_event_open({event}) failed with {name}: too many open files. Fix: raise the \
             limit (`ulimit -n 65536`) or use fewer CPUs/events"
        ),
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
    /// Translates a failed perf_event_open into a cause and a fix: an
    /// errno of known cause becomes [`PerfError::Open`], with the sysctl
    /// its message quotes read now; any other is [`PerfError::Os`].
    pub fn from_open(err: io::Error, ctx: &OpenContext) -> PerfError {
        let errno = err.raw_os_error().unwrap_or(0);
        let sysctl = match errno {
            libc::EACCES | libc::EPERM => read_sysctl(PARANOID_PATH),
            libc::EINVAL => read_sysctl(MAX_RATE_PATH),
            libc::ENOENT
            | libc::EOPNOTSUPP
            | libc::ENODEV
            | libc::E2BIG
            | libc::ESRCH
            | libc::EMFILE
            | libc::ENFILE => String::new(),
            _ => {
                let what = format!("{}, pid {}, cpu {}", ctx.event, ctx.pid, ctx.cpu);
                return PerfError::os("perf_event_open", what, err);
            }
        };
        PerfError::Open {
            ctx: ctx.clone(),
            errno,
            sysctl,
        }
    }

    /// True when the error means "no such PMU event" (the cpu-clock fallback applies).
    pub fn is_no_such_event(&self) -> bool {
        matches!(
            self,
            PerfError::Open {
                errno: libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV,
                ..
            }
        )
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
