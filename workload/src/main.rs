//! `workload`: see `workload --help`.
fn main() -> std::process::ExitCode {
    workload::cli::main_from(std::env::args_os())
}
