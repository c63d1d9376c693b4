//! `driver probe`: what this host can measure and how.

/// Arguments of `driver probe`.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// Print one JSON object instead of the human-readable report.
    #[arg(long)]
    pub json: bool,
}

/// Runs `driver probe`.
pub fn cli(_args: &ProbeArgs) -> anyhow::Result<std::process::ExitCode> {
    anyhow::bail!("driver probe is not implemented yet")
}
