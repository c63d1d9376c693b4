//! `analysis`: report, recommend and compare results directories.

use std::path::PathBuf;
use std::process::ExitCode;

use analysis::recommend::{parse_budget, recommend};
use analysis::{compare, load, pipeline};
use clap::{Parser, Subcommand};

/// Results directory -> tables, fits, plots, report; safe-rate recommendation;
/// comparison across hosts.
#[derive(Debug, Parser)]
#[command(
    version,
    about,
    after_help = "Exit status: 0 done; 1 an error (it says which file and why); 2 bad input \
        (no results directory, a bad flag); 70 the analysis panicked: a bug, reported as one."
)]
struct Cli {
    /// More log output on stderr (-v: debug, -vv: trace; as in `driver`). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write DIR/report/ and print the answer box on stderr (the path of
    /// report.md on stdout): answer.txt (the box), report.md and
    /// report.html (self-contained), the tables as CSV (util, loss,
    /// per_sample, ...), fit.json, and every plot as SVG and PNG, the budget
    /// plot first. A report made while raw files were present is kept in
    /// report/with-raw-files/ once they are removed.
    Report {
        /// Results directory written by `driver sweep`.
        dir: PathBuf,
    },
    /// Print the highest sampling frequency whose loss stays within a budget,
    /// with its basis (the answer box on stderr; --json for tools).
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
    /// Rewrite a results directory's raw Parquet files (events/, gaps/,
    /// samples/) from the earlier form (LZ4, absolute times) into the
    /// current one (zstd, times as steps): about a third of the size. Each
    /// file is replaced only where its new copy reads back exactly the same;
    /// any other is left as it was and named (exit 1).
    Compact {
        /// Results directory written by `driver sweep`.
        dir: PathBuf,
    },
    /// Put result sets side by side (Markdown): the highest rate within each
    /// budget as each answer box gives it, what one sample costs and the
    /// loss it predicts, then the fits, utilisation and throughput loss at
    /// each rate (with the interval over runs, as the reports use), with
    /// the 2014 reference.
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
            let written = analysis::report_dir(&dir)?;
            tracing::info!(
                elapsed_ms = started.elapsed().as_millis() as u64,
                "report written"
            );
            for line in &written.answer {
                eprintln!("{line}");
            }
            println!("{}", written.dir.join("report.md").display());
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
            let a = pipeline::analyse(&rs)?;
            if let Some(t) = &a.profiler {
                for line in analysis::answer::answer_box(&rs, &a) {
                    eprintln!("{line}");
                }
                let rec = analysis::profiler::recommend(t, budget);
                if json {
                    println!("{}", serde_json::to_string_pretty(&rec)?);
                } else {
                    println!("{}", rec.headline());
                }
                return Ok(ExitCode::SUCCESS);
            }
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
        Command::Compact { dir } => return compact(&dir),
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

/// `analysis compact DIR`: every raw file brought into the current form,
/// with a progress bar, one line per file left alone, and a summary.
fn compact(dir: &std::path::Path) -> anyhow::Result<ExitCode> {
    use results_format::compact::{Compacted, compact_file, raw_files};
    if !dir.join(results_format::MANIFEST_JSON).is_file() {
        eprintln!(
            "error: {} holds no {}: give a results directory written by `driver sweep`",
            dir.display(),
            results_format::MANIFEST_JSON
        );
        return Ok(ExitCode::from(2));
    }
    let files = raw_files(dir)?;
    let pb = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        indicatif::ProgressBar::new(files.len() as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} files, ETA {eta} {msg}")
    {
        pb.set_style(style);
    }
    let (mut rewritten, mut already, mut before, mut after, mut left) = (0, 0, 0u64, 0u64, 0);
    for f in &files {
        pb.set_message(f.display().to_string());
        match compact_file(f)? {
            Compacted::AlreadyCompact => already += 1,
            Compacted::Rewritten {
                before: b,
                after: a,
            } => {
                rewritten += 1;
                before += b;
                after += a;
            }
            Compacted::Differs(why) => {
                left += 1;
                pb.suspend(|| eprintln!("left as it was: {}: {why}", f.display()));
            }
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    let mb = |b: u64| b as f64 / 1e6;
    eprintln!(
        "{}: {rewritten} files rewritten ({:.1} MB -> {:.1} MB), {already} already compact, {left} left as they were",
        dir.display(),
        mb(before),
        mb(after)
    );
    Ok(if left == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Exit status when the analysis panicked: a bug in it, never the user's
/// problem (sysexits' EX_SOFTWARE, "internal software error").
const PANICKED: u8 = 70;

fn main() -> ExitCode {
    // The boundary: a panic anywhere below is caught here, said as a bug
    // with where to report it, and ends with its own status. The report
    // is written into a staging folder and moved into place only whole
    // (`analysis::report::write`), so a panic leaves the previous report.
    let outcome = std::panic::catch_unwind(run);
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(payload) => {
            let text = results_format::panic_message(payload.as_ref());
            eprintln!(
                "error: the analysis panicked ({text}). This is a bug in `analysis`, not a \
                 problem with your data: please report it on the project's issue tracker with \
                 the command line and the results directory. Nothing was written half: an \
                 earlier report, if any, is as it was."
            );
            return ExitCode::from(PANICKED);
        }
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", results_format::message_chain(e.as_ref()));
            if not_a_results_directory(&e) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// A path that is no results directory (absent, a file, or without its
/// manifest): bad input, exit status 2 as for `compact` and bad flags.
fn not_a_results_directory(e: &anyhow::Error) -> bool {
    use analysis::AnalysisError;
    use results_format::FormatError;
    match e.downcast_ref::<AnalysisError>() {
        Some(AnalysisError::NoSuchDirectory { .. } | AnalysisError::NotADirectory { .. }) => true,
        Some(AnalysisError::Format(FormatError::Missing { path, .. })) => path
            .file_name()
            .is_some_and(|n| n == results_format::MANIFEST_JSON),
        _ => false,
    }
}
