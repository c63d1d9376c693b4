//! `workload`: see `workload --help`.
fn main() -> std::process::ExitCode {
    // Logs go to stderr (RUST_LOG, default warn); stdout carries data only.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // Colour only on a terminal: logs redirected to a file stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
    workload::cli::main_from(std::env::args_os())
}
