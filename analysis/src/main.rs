//! `analysis`: report, recommend and compare results directories.

use std::path::PathBuf;
use std::process::ExitCode;

use analysis::subcommands as sub;
use clap::{Parser, Subcommand};

/// polars allocates and frees in many threads at once; glibc's malloc
/// spent a quarter of `analysis fleet`'s time on 10 000 summaries in
/// malloc and free (perf), mimalloc a fraction of it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        #[command(flatten)]
        args: sub::RecommendArgs,
    },
    /// Predict what sampling adds to a request's latency: for requests of
    /// --size of work, the added p50, p99 and p99.9 (or --percentiles) at
    /// each of --rates, from the set's gaps runs (the model of the report's
    /// "Request latency" section: each block's 0 Hz run with periodic
    /// samples costing what that block's runs measured at the nearest
    /// rate), with 95% intervals over blocks. Markdown, or --json.
    Latency {
        /// Results directory written by `driver sweep` (with gaps runs).
        dir: PathBuf,
        #[command(flatten)]
        args: sub::LatencyArgs,
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
    /// Answer for a fleet: read every result set's summary.parquet under
    /// ROOT (a fleet dataset, host=NAME/date=DAY/<set>/, as deploy/fleet.yml
    /// fetches it, or any folder of result sets), take each host's newest
    /// set, group hosts into classes, and write ROOT/report/ (report.md,
    /// report.html, fleet.csv, hosts.csv, missing.csv, skipped.csv, the
    /// figure). The answer box on stderr, report.md's path on stdout
    /// (--json: the answer as JSON on stdout). Exit 2 when ROOT holds no
    /// usable summary.
    Fleet {
        /// The fleet dataset's root.
        root: PathBuf,
        #[command(flatten)]
        opts: analysis::fleet::FleetOptions,
        /// Where the report goes. Default ROOT/report.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the answer as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// A host's `driver check` history: read DIR/history.csv (and any
    /// history.N.csv), group the checks at one rate by day or hour, and
    /// write DIR/history-report/ (history.md, checks.csv, periods.csv,
    /// history_cost.svg/png): the rate that held on every period and on
    /// 95 % of them, and the periods whose cost moved beyond the
    /// run-to-run spread. The answer on stderr, history.md's path on stdout
    /// (--json: the whole history as JSON). Exit 2 when DIR holds no history.
    History {
        /// The history directory (`driver check --history`, default /var/lib/perf-overhead).
        dir: PathBuf,
        #[command(flatten)]
        args: sub::HistoryArgs,
    },
    /// Write DIR/summary.parquet (the set's answer per configuration and
    /// rate; `analysis report` writes it too) for each result set given,
    /// without rewriting its report. With --into ROOT, write it instead
    /// into a fleet dataset, ROOT/host=HOSTNAME/date=DAY/<set>/ with the
    /// set's manifest.json, so sets measured by hand join a fleet.
    Summary {
        /// Results directories.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// A fleet dataset's root to place the summaries in.
        #[arg(long)]
        into: Option<PathBuf>,
        /// The host's name in the fleet (the `host=` folder) with --into;
        /// default the hostname the set recorded (two hosts both called
        /// `vm` need names of their own).
        #[arg(long, requires = "into")]
        host: Option<String>,
    },
}

fn run() -> anyhow::Result<()> {
    // A bad flag exits with clap's usage status, 2, which is
    // `sub::BAD_INPUT`; --help and --version with 0.
    let cli = Cli::parse();
    workload::cli::init_logging("warn", cli.verbose);
    match cli.command {
        Command::Report { dir } => sub::report(&dir),
        Command::Recommend { dir, args } => sub::recommend_rate(&dir, &args),
        Command::Latency { dir, args } => sub::predict_latency(&dir, &args),
        Command::Compact { dir } => sub::compact(&dir),
        Command::Compare { dirs, csv } => sub::compare(&dirs, csv),
        Command::Fleet {
            root,
            opts,
            out,
            json,
        } => sub::fleet(&root, &opts, out, json),
        Command::History { dir, args } => sub::history(&dir, args),
        Command::Summary { dirs, into, host } => {
            sub::summaries(&dirs, into.as_deref(), host.as_deref())
        }
    }
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
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", results_format::message_chain(e.as_ref()));
            ExitCode::from(sub::exit_status(&e))
        }
    }
}
