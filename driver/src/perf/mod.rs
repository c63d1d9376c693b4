//! The kernel interface: perf_event_open, the ring buffer, records, tracefs.
//!
//! - [`sys`]: the only unsafe code of the driver (syscall, ioctls, mmap, the
//!   ring's head/tail atomics, mount).
//! - [`attr`]: every `perf_event_attr` field write.
//! - [`error`]: errno translated into causes and fixes.
//! - [`ring`]: the mmapped ring buffer (geometry from the control page).
//! - [`record`]: record decoding, safe code over byte slices.
//! - [`tracefs`]: tracefs lookup, tracepoint `id`/`format` parsing, kallsyms.

pub mod attr;
pub mod error;
pub mod record;
pub mod ring;
pub mod sys;
pub mod tracefs;

pub use error::PerfError;
