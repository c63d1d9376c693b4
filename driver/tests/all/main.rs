//! The driver's integration tests, as modules of one test binary: the
//! driver (and polars, through the analysis) is linked once, not once per
//! file. The real-kernel ones need root and perf (`common`); `cargo test
//! --release -p driver --test all MODULE::` runs one file's tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod build_revision;
mod check_real;
mod common;
mod config;
mod decoder_props;
mod encode;
mod fleet_ansible;
mod host_state;
mod perf_error;
mod perf_handler;
mod perf_kernel;
mod perf_record;
mod plan_judge;
mod probe_cli;
mod profiler_real;
mod split_real;
mod sweep_binary_replaced;
mod sweep_cli;
mod sweep_command;
mod sweep_exec;
mod sweep_real;
