//! The driver: opens perf sampling events with perf_event_open, captures the
//! kernel tracepoints that time the sampling handler, runs the workload and
//! writes results.
//!
//! Layout: `perf/` is the kernel interface (the only unsafe code lives in
//! `perf/sys.rs`); `handler` turns tracepoint records into handler intervals;
//! `sampler` is one measurement session on top of both, `contents` what each
//! sample carries; `probe` reports what
//! the host can measure. The sweep is split into `config` (options and
//! experiment files), `plan` (which runs, in which order), `ring_limits`
//! (whether the runs' rings fit this host), `exec` (running
//! them through a backend trait), `backend` (the real one: workload child
//! and sampler), `gaps` (the gaps design's matching), `user_command`
//! (the user's own program, `--command`: its warm-up and its run), `results` (the
//! on-disk format), `system` (settings changed on the host and their
//! restoration), `hoststate` (the record of those changes that survives a
//! kill, and the host-wide sweep lock) and `sweep` (the command that ties
//! them together); `check` is `driver check`, a small sweep judged against
//! a budget.
#![deny(unsafe_code)]

mod backend;
pub mod block;
pub mod check;
pub mod config;
pub mod contents;
pub mod exec;
pub mod gaps;
pub mod handler;
pub mod hoststate;
pub mod perf;
pub mod plan;
pub mod probe;
pub mod results;
pub mod ring_limits;
pub mod sampler;
pub mod subject;
pub mod sweep;
pub mod system;
