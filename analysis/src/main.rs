//! `analysis`: report, recommend and compare results directories.

use std::path::PathBuf;
use std::process::ExitCode;

use analysis::recommend::{parse_budget, recommend};
use analysis::{compare, load, tables};
use clap::{Parser, Subcommand};

/// Results directory -> tables, fits, plots, report; safe-rate recommendation;
/// comparison across hosts.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// More log output on stderr (-v: debug, -vv: trace; as in `driver`). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write DIR/report/: report.md, util.csv, loss.csv, tracing.csv, fit.json, plots.
    Report {
        /// Results directory written by `driver sweep`.
        dir: PathBuf,
    },
    /// Print the highest sampling frequency whose loss stays within a budget.
    Recommend {
        /// Results directory written by `driver sweep`.
        dir: PathBuf,
        /// Loss budget in percent, e.g. `1%` or `0.5`.
        #[arg(long, default_value = "1%")]
        budget: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Put result sets side by side with the 2014 reference (Markdown).
    Compare {
        /// Results directories.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// CSV instead of Markdown.
        #[arg(long)]
        csv: bool,
    },
}

fn run() -> anyhow::Result<ExitCode> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return Ok(ExitCode::from(code));
        }
    };
    workload::cli::init_logging("warn", cli.verbose);
    match cli.command {
        Command::Report { dir } => {
            let started = std::time::Instant::now();
            let out = analysis::write_report(&dir)?;
            tracing::info!(
                elapsed_ms = started.elapsed().as_millis() as u64,
                "report written"
            );
            if let Ok(answer) = std::fs::read_to_string(out.join(analysis::report::ANSWER_TXT)) {
                eprint!("{answer}");
            }
            println!("{}", out.join("report.md").display());
        }
        Command::Recommend { dir, budget, json } => {
            let budget = match parse_budget(&budget) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(ExitCode::from(2));
                }
            };
            let rs = load::load(&dir)?;
            let a = tables::analyse(&rs)?;
            let rec = recommend(&a, budget)?;
            for line in analysis::answer::answer_box(&rs, &a) {
                eprintln!("{line}");
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&rec)?);
            } else {
                println!("{}", rec.headline());
                for line in &rec.reasoning {
                    println!("{line}");
                }
            }
        }
        Command::Compare { dirs, csv } => {
            let refs: Vec<&std::path::Path> = dirs.iter().map(|d| d.as_path()).collect();
            let c = compare::compare(&refs)?;
            if csv {
                print!("{}", c.to_csv()?);
            } else {
                print!("{}", c.to_markdown());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
