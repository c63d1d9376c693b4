//! `workload`: see `workload --help`.
fn main() -> std::process::ExitCode {
    // Logs go to stderr (RUST_LOG, default warn); stdout carries data only.
    workload::cli::init_logging("warn", 0);
    workload::cli::main_from(std::env::args_os())
}
