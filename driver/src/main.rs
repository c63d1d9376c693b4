//! `driver`: measure what perf sampling costs on this host.
use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "driver",
    version,
    about = "Measure what perf sampling costs on this host, at each sampling rate",
    long_about = "Measure what perf sampling costs on this host, at each sampling rate.\n\n\
        `driver probe` tells what this host can measure; `driver sweep` runs the \
        experiment and writes a results directory with its report.\n\
        Needs root (or CAP_PERFMON plus access to tracefs)."
)]
struct Cli {
    /// More log output on stderr (-v: debug, -vv: trace). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Report what this host can measure (PMU, event, tracepoints, privileges) and self-test it.
    Probe(driver::probe::ProbeArgs),
    /// Run a sampling-overhead sweep over a set of frequencies.
    Sweep(driver::sweep::SweepArgs),
    /// Run the workload (the same code as the `workload` binary); used by sweeps.
    #[command(hide = true, disable_help_flag = true)]
    Workload {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour only on a terminal: logs redirected to a file stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
}

fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    if let Command::Workload { args } = &cli.command {
        let argv = std::iter::once(OsString::from("workload")).chain(args.iter().cloned());
        return Ok(workload::cli::main_from(argv));
    }
    init_logging(cli.verbose);
    match &cli.command {
        Command::Probe(args) => driver::probe::cli(args),
        Command::Sweep(args) => driver::sweep::cli(args),
        Command::Workload { .. } => Ok(ExitCode::SUCCESS),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
