//! `analysis`: report, recommend and compare results directories.

use std::path::PathBuf;
use std::process::ExitCode;

use analysis::latency;
use analysis::recommend::{parse_budget, recommend};
use analysis::{compare, load, pipeline};
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
        /// Loss budget in percent, e.g. `1%` or `0.5`.
        #[arg(long, default_value = "1%")]
        budget: String,
        /// Latency budget, e.g. `p99:1ms:+5%`: what sampling may add to a
        /// request's percentile (in % of it at 0 Hz, or a time: +50us),
        /// predicted from the gaps runs, upper end of the 95% interval. The
        /// answer is the lower of the two budgets' rates.
        #[arg(long, value_name = "PCT:SIZE:+LIMIT")]
        latency_budget: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
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
        /// The request's work, e.g. 1ms, 250us, 1.8ms.
        #[arg(long)]
        size: String,
        /// Sampling rates, Hz, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "99,999,3999")]
        rates: Vec<f64>,
        /// Percentiles, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "50,99,99.9")]
        percentiles: Vec<f64>,
        /// Print JSON instead of Markdown.
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
        /// Class columns, comma-separated: cpu_model_name, virtualised,
        /// event, cpu_vendor, cpu_family, cpu_model, hypervisor, pmu,
        /// kernel, scope, contents, work_kind, cpus, tool_version.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "cpu_model_name,virtualised,event"
        )]
        by: Vec<String>,
        /// Keep every date per host (the report then shows each class over
        /// time), not only the newest set.
        #[arg(long)]
        all: bool,
        /// A host's cost per sample is taken at its measured rate nearest
        /// this, Hz.
        #[arg(long, default_value_t = 1000.0)]
        at: f64,
        /// The production rate every host is checked against, Hz (perf -F
        /// 99; Parca samples at 19, Pyroscope at 97).
        #[arg(long, default_value_t = 99.0)]
        rate: f64,
        /// Where the report goes. Default ROOT/report.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Skip sets without a summary instead of making one from their
        /// tables (that analyses each such set: slow for many).
        #[arg(long)]
        no_make: bool,
        /// Print the answer as JSON on stdout.
        #[arg(long)]
        json: bool,
        /// Read every summary, neither reading nor writing
        /// ROOT/.fleet-cache (by default a summary whose size and
        /// modification time are unchanged since the last run is taken
        /// from there).
        #[arg(long)]
        no_cache: bool,
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
        /// The rate whose checks are read, Hz. Default: the rate checked most often.
        #[arg(long)]
        rate: Option<u64>,
        /// The loss budget, e.g. 1%. Default: the one the checks judged against.
        #[arg(long)]
        budget: Option<String>,
        /// Group the checks by day or by hour (UTC).
        #[arg(long, value_enum, default_value = "day")]
        by: analysis::history::Period,
        /// Where the report goes. Default DIR/history-report.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the history as JSON on stdout.
        #[arg(long)]
        json: bool,
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

/// `analysis latency`: the model's prediction for one request size.
fn predict_latency(
    dir: &std::path::Path,
    size: &str,
    rates: &[f64],
    percentiles: &[f64],
    json: bool,
) -> anyhow::Result<ExitCode> {
    let bad = |e: String| {
        eprintln!("error: {e}");
        Ok(ExitCode::from(2))
    };
    let size_ns = match latency::predict::parse_request(size, rates, percentiles) {
        Ok(ns) => ns,
        Err(e) => return bad(e),
    };
    let rs = load::load(dir)?;
    let a = pipeline::analyse(&rs)?;
    let Some(t) = &a.gaps.latency else {
        return bad(format!(
            "{} has no gaps runs of our sampler, which the latency model needs; run `driver sweep --design gaps` (the default designs include it)",
            dir.display()
        ));
    };
    if let Err(e) = t.model.check_size(size_ns, &format!("--size {size}")) {
        return bad(e);
    }
    let rows = latency::predict::predict(&t.model, size_ns, rates, percentiles);
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", latency::predict::markdown(&rows));
    }
    Ok(ExitCode::SUCCESS)
}

/// The set's summary rows of its primary configuration: what a `--json`
/// answer rests on.
fn primary_rows(
    rs: &load::ResultSet,
    a: &analysis::findings::Findings,
) -> Vec<results_format::summary::SummaryRow> {
    analysis::summary::summary_rows(rs, a)
        .into_iter()
        .filter(|r| r.config_primary != Some(false))
        .collect()
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
        Command::Recommend {
            dir,
            budget,
            latency_budget,
            json,
        } => {
            let budget = match parse_budget(&budget) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(ExitCode::from(2));
                }
            };
            let lat_budget = match latency_budget
                .as_deref()
                .map(latency::budget::parse)
                .transpose()
            {
                Ok(b) => b.zip(latency_budget.clone()),
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(ExitCode::from(2));
                }
            };
            let rs = load::load(&dir)?;
            let a = pipeline::analyse(&rs)?;
            let lat = match (lat_budget, &a.gaps.latency) {
                (None, _) => None,
                (Some(_), None) => {
                    eprintln!(
                        "error: --latency-budget needs the gaps design, which times every interruption: {} has no gaps runs of our sampler; run `driver sweep --design gaps` (the default designs include it)",
                        dir.display()
                    );
                    return Ok(ExitCode::from(2));
                }
                (Some((b, text)), Some(t)) => match latency::budget::answer(&t.model, &b, &text) {
                    Ok(x) => Some(x),
                    Err(e) => {
                        eprintln!("error: {e}");
                        return Ok(ExitCode::from(2));
                    }
                },
            };
            if let Some(t) = &a.subject.profiler {
                for line in analysis::answer::answer_box(&rs, &a) {
                    eprintln!("{line}");
                }
                let rec = analysis::subject::profiler::recommend(t, budget);
                if json {
                    let answer = analysis::json_answer::profiler(&rec, t, primary_rows(&rs, &a));
                    println!("{}", serde_json::to_string_pretty(&answer)?);
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
                let mut answer = analysis::json_answer::sampler(&rec, primary_rows(&rs, &a));
                if let Some(l) = &lat {
                    answer = analysis::json_answer::with_latency(answer, l);
                }
                println!("{}", serde_json::to_string_pretty(&answer)?);
            } else {
                println!("{}", rec.headline());
                for line in &rec.reasoning {
                    println!("{line}");
                }
                if let Some(l) = &lat {
                    println!("{}", l.headline());
                    for line in &l.reasons {
                        println!("{line}");
                    }
                    match l.combined(rec.rate_hz) {
                        Some(r) => println!("Both budgets: {r} Hz (the lower of the two)."),
                        None => println!("Both budgets: no rate is within both."),
                    }
                }
            }
        }
        Command::Compact { dir } => return compact(&dir),
        Command::Latency {
            dir,
            size,
            rates,
            percentiles,
            json,
        } => return predict_latency(&dir, &size, &rates, &percentiles, json),
        Command::Fleet {
            root,
            by,
            all,
            at,
            rate,
            out,
            no_make,
            json,
            no_cache,
        } => {
            for (flag, v) in [("--at", at), ("--rate", rate)] {
                if !(v.is_finite() && v > 0.0) {
                    eprintln!("error: {flag} {v}: expected a rate in Hz above 0, e.g. {flag} 99");
                    return Ok(ExitCode::from(2));
                }
            }
            let opts = analysis::fleet::FleetOptions {
                by,
                at_hz: at,
                rate_hz: rate,
                all,
                make: !no_make,
                cache: !no_cache,
            };
            let fleet = match analysis::fleet::analyse(&root, &opts) {
                Ok(f) => f,
                Err(
                    e @ (analysis::AnalysisError::NoSummary { .. }
                    | analysis::AnalysisError::Invalid(_)
                    | analysis::AnalysisError::NoSuchDirectory { .. }),
                ) => {
                    eprintln!("error: {e}");
                    return Ok(ExitCode::from(2));
                }
                Err(e) => return Err(e.into()),
            };
            let out = out.unwrap_or_else(|| root.join("report"));
            let md = analysis::fleet::present::write(&out, &fleet)?;
            for line in analysis::fleet::present::answer_box(&fleet) {
                eprintln!("{line}");
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&fleet)?);
            } else {
                println!("{}", md.display());
            }
        }
        Command::History {
            dir,
            rate,
            budget,
            by,
            out,
            json,
        } => {
            let budget_pct = match budget.as_deref().map(parse_budget).transpose() {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(ExitCode::from(2));
                }
            };
            let opts = analysis::history::HistoryOptions {
                rate_hz: rate,
                budget_pct,
                period: by,
            };
            let h = match analysis::history::analyse(&dir, &opts) {
                Ok(h) => h,
                Err(
                    e @ (analysis::AnalysisError::Invalid(_)
                    | analysis::AnalysisError::NoSuchDirectory { .. }),
                ) => {
                    eprintln!("error: {e}");
                    return Ok(ExitCode::from(2));
                }
                Err(e) => return Err(e.into()),
            };
            let out = out.unwrap_or_else(|| dir.join("history-report"));
            let md = analysis::history::present::write(&out, &h)?;
            for line in analysis::history::present::answer_box(&h) {
                eprintln!("{line}");
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&h)?);
            } else {
                println!("{}", md.display());
            }
        }
        Command::Summary { dirs, into, host } => {
            return summaries(&dirs, into.as_deref(), host.as_deref());
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

/// `analysis summary DIR...`: each set's summary.parquet, in place or
/// into a fleet dataset; a set that fails is named and the others go on
/// (exit 1 when any failed).
fn summaries(
    dirs: &[PathBuf],
    into: Option<&std::path::Path>,
    host_name: Option<&str>,
) -> anyhow::Result<ExitCode> {
    use results_format::summary::{SUMMARY_PARQUET, write_summary};
    let mut failed = 0;
    for dir in dirs {
        let made = load::load(dir).map_err(anyhow::Error::from).and_then(|rs| {
            let a = pipeline::analyse(&rs)?;
            let rows = analysis::summary::summary_rows(&rs, &a);
            let target = match into {
                None => dir.clone(),
                Some(root) => {
                    let first = rows.first();
                    let host = host_name
                        .map(str::to_owned)
                        .or_else(|| first.and_then(|r| r.hostname.clone()))
                        .unwrap_or_else(|| "unknown".to_string());
                    let date = first
                        .and_then(|r| r.started_at)
                        .and_then(analysis::fleet::scan::day_of)
                        .unwrap_or_else(|| "unknown".to_string());
                    let name = dir
                        .file_name()
                        .map(|n| n.to_os_string())
                        .unwrap_or_default();
                    let t = root
                        .join(format!("host={host}"))
                        .join(format!("date={date}"))
                        .join(name);
                    std::fs::create_dir_all(&t)?;
                    std::fs::copy(
                        dir.join(results_format::MANIFEST_JSON),
                        t.join(results_format::MANIFEST_JSON),
                    )?;
                    t
                }
            };
            let path = target.join(SUMMARY_PARQUET);
            write_summary(&path, &rows)?;
            Ok((path, rows.len()))
        });
        match made {
            Ok((path, n)) => println!("{} ({n} rows)", path.display()),
            Err(e) => {
                failed += 1;
                eprintln!(
                    "error: {}: {}",
                    dir.display(),
                    results_format::message_chain(e.as_ref())
                );
            }
        }
    }
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
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
