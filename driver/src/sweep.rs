//! `driver sweep`: plan, execute, write results, hand them to the analysis.

/// Arguments of `driver sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {}

/// Runs `driver sweep`.
pub fn cli(_args: &SweepArgs) -> anyhow::Result<std::process::ExitCode> {
    anyhow::bail!("driver sweep is not implemented yet")
}
