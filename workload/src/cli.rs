//! Command-line entry shared by the `workload` binary and `driver workload`.
//!
//! `workload --duration 10s [--cpu N] [--json] [--counter PATH [--wait-go]]`
//! runs the timed loop and prints the loop count (or a [`RunSummary`] as one
//! JSON object); `workload clocks [--json]` measures the host's clocks.
//!
//! [`RunSummary`]: crate::summary::RunSummary
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};

use crate::clocks;
use crate::duration::parse_duration;
use crate::run::{self, RunOptions};
use crate::work::WorkKind;

#[derive(Debug, Parser)]
#[command(
    name = "workload",
    version,
    about = "Fixed-duration counting loop on one CPU (prints the loop count), and host clock calibration",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    /// How long the loop runs: a number with a unit ns, us, ms, s, min or h
    /// (10s, 500ms, 2.5s, 250us, 1.5min), or a bare number of seconds.
    #[arg(long, value_parser = parse_positive_duration, required = true)]
    duration: Option<Duration>,

    /// Pin to this CPU (sched_setaffinity) before the loop. Default: no pinning.
    #[arg(long, value_name = "N")]
    cpu: Option<u32>,

    /// Print one JSON object (RunSummary) instead of the bare loop count.
    #[arg(long)]
    json: bool,

    /// Publish the running loop count in this shared-memory file (created, replacing any file there).
    #[arg(long, value_name = "PATH")]
    counter: Option<PathBuf>,

    /// After setup, set state=ready in the counter file and wait until a reader sets go.
    #[arg(long, requires = "counter")]
    wait_go: bool,

    /// Longest wait for go with --wait-go.
    #[arg(long, value_parser = parse_positive_duration, default_value = "60s", value_name = "DURATION")]
    go_timeout: Duration,

    /// Timeline mode: stamp the loop's progress with the TSC every ~100 ns of
    /// loop, record every chunk longer than the calibrated threshold as a gap
    /// (written to PATH as little-endian u64 start_ns, end_ns, excess_ns in
    /// CLOCK_MONOTONIC_RAW), and keep the speed-recovery histogram (in the
    /// JSON report's `timeline`).
    #[arg(long, value_name = "PATH")]
    timeline: Option<PathBuf>,

    /// What one iteration does: loop (one increment, the 2014 article's),
    /// stack[:DEPTH] (the same counting DEPTH frames down a call stack,
    /// default 32, so call chains and stack copies walk real frames) or
    /// memory:SIZE (a dependent pointer chase over SIZE bytes, e.g. 32K, 8M,
    /// 1G, so an interrupt's cache and TLB pollution shows as lost work).
    #[arg(long = "work", alias = "kind", value_parser = parse_kind, default_value = "loop", value_name = "KIND")]
    kind: WorkKind,

    /// Most gaps stored with --timeline (memory: 24 bytes each, allocated
    /// and touched before the loop); more are counted, not stored.
    /// Default: 250 000 per second of --duration, at least 100 000.
    #[arg(long, value_name = "N", requires = "timeline")]
    max_gaps: Option<u64>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measure the cost, granularity and monotonicity of every way to read time here.
    Clocks {
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
}

fn parse_kind(s: &str) -> Result<WorkKind, String> {
    WorkKind::parse(s).map_err(|e| e.to_string())
}

fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s).map_err(|e| e.to_string())?;
    if d.is_zero() {
        return Err(format!(
            "duration '{s}' is zero: give a positive duration, e.g. 10s"
        ));
    }
    Ok(d)
}

/// Installs a binary's log subscriber, the same for `workload`, `driver`
/// and `analysis`: stderr (stdout carries data only), colour only on a
/// terminal, the level from RUST_LOG, else `-v` (debug) or `-vv` (trace),
/// else `quiet` (each binary's default: the driver's info lines are its
/// progress, the others' are timings).
pub fn init_logging(quiet: &str, verbose: u8) {
    let default = match verbose {
        0 => quiet,
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}

/// Parses `args` (program name first) and runs the workload; returns the exit code.
pub fn main_from<I: IntoIterator<Item = OsString>>(args: I) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with status 0, errors to stderr with 2.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            let usage = e
                .downcast_ref::<run::RunError>()
                .is_some_and(run::RunError::is_usage);
            eprintln!("error: {e:#}");
            if usage {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let text = if let Some(Command::Clocks { json }) = cli.command {
        let report = clocks::measure_all(clocks::CalibrationTimes::default());
        match json {
            true => serde_json::to_string(&report)? + "\n",
            false => clocks::format_table(&report),
        }
    } else {
        let duration = cli
            .duration
            .context("--duration is required: give e.g. --duration 10s")?;
        let opts = RunOptions {
            duration,
            cpu: cli.cpu,
            counter: cli.counter,
            wait_go: cli.wait_go,
            go_timeout: cli.go_timeout,
            timeline: cli.timeline,
            max_gaps: cli.max_gaps,
            kind: cli.kind,
        };
        let report = run::run(&opts)?;
        tracing::info!(
            iterations = report.iterations,
            overrun_ns = report.overrun_ns,
            chunk = report.chunk_iterations,
            "run done"
        );
        match cli.json {
            true => serde_json::to_string(&report)? + "\n",
            false => format!("{}\n", report.iterations),
        }
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
