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
    #[command(
        after_help = "Exit status: 0 every run recorded and the report written; 1 runs failed, \
            or a setting could not be restored; 2 bad input, nothing measured; 4 every run \
            recorded but the report failed (the error and `analysis report DIR`, which makes \
            it again, are on stderr; the directory on stdout as always); 130 interrupted \
            (Ctrl-C or SIGTERM; `--resume DIR` finishes it)."
    )]
    Sweep(Box<driver::sweep::SweepFlags>),
    /// Measure what the rate in use costs now, in about a minute, and judge it against a budget.
    #[command(after_help = driver::check::AFTER_HELP)]
    Check(Box<driver::check::CheckArgs>),
    /// Run the workload (the same code as the `workload` binary); used by sweeps.
    #[command(hide = true, disable_help_flag = true)]
    Workload {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
}

/// A bad flag value in the form of the driver's other usage errors: one
/// line naming the value, the flag and the fix (clap's own message spans
/// several lines). None for other clap errors, help and version.
fn one_line_value_error(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(
        e.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    ) {
        return None;
    }
    let ContextValue::String(flag) = e.get(ContextKind::InvalidArg)? else {
        return None;
    };
    let flag = flag.split_whitespace().next().unwrap_or(flag);
    let ContextValue::String(value) = e.get(ContextKind::InvalidValue)? else {
        return None;
    };
    let reason = match (e.kind(), e.get(ContextKind::ValidValue)) {
        (ErrorKind::InvalidValue, Some(ContextValue::Strings(choices))) => {
            format!("not one of the choices; use one of {}", choices.join(", "))
        }
        _ => std::error::Error::source(e)?.to_string(),
    };
    Some(format!("invalid value {value:?} for {flag}: {reason}"))
}

fn run() -> anyhow::Result<ExitCode> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            if let Some(line) = one_line_value_error(&e) {
                eprintln!("error: {line}");
                return Ok(ExitCode::from(2));
            }
            // Help and version to stdout (0), other errors to stderr (2).
            e.exit();
        }
    };
    if let Command::Workload { args } = &cli.command {
        let argv = std::iter::once(OsString::from("workload")).chain(args.iter().cloned());
        return Ok(workload::cli::main_from(argv));
    }
    workload::cli::init_logging("info", cli.verbose);
    match &cli.command {
        Command::Probe(args) => driver::probe::cli(args),
        Command::Sweep(args) => driver::sweep::cli(args),
        Command::Check(args) => driver::check::cli(args),
        Command::Workload { .. } => Ok(ExitCode::SUCCESS),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", results_format::message_chain(err.as_ref()));
            ExitCode::FAILURE
        }
    }
}
