//! Command-line entry shared by the `workload` binary and `driver workload`.
use std::ffi::OsString;
use std::process::ExitCode;

/// Parses `args` (program name first) and runs the workload; returns the exit code.
pub fn main_from<I: IntoIterator<Item = OsString>>(_args: I) -> ExitCode {
    eprintln!("workload: not implemented yet");
    ExitCode::FAILURE
}
