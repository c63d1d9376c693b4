//! The `analysis` binary's subcommands, one function each over the layers
//! below (the top of the crate: nothing imports it). Each prints its answer
//! and returns; a failure is an error whose kind gives the exit status
//! ([`exit_status`]), so main.rs holds the arguments and nothing else.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::AnalysisError;
use crate::latency;
use crate::load::{self, ResultSet};
use crate::pipeline;
use crate::pipeline::Findings;
use crate::recommend::{parse_budget, recommend};
use results_format::summary::SummaryRow;

/// Exit status of a bad input: a flag's value, or a path that is no
/// results directory.
pub const BAD_INPUT: u8 = 2;

/// The one error -> exit status mapping: 2 for bad input (a flag's value,
/// a path that is no results directory, a fleet with no summary), 1 for
/// every other failure.
pub fn exit_status(e: &anyhow::Error) -> u8 {
    use results_format::FormatError;
    match e.downcast_ref::<AnalysisError>() {
        Some(
            AnalysisError::Invalid(_)
            | AnalysisError::NoSummary { .. }
            | AnalysisError::NoSuchDirectory { .. }
            | AnalysisError::NotADirectory { .. },
        ) => BAD_INPUT,
        Some(AnalysisError::Format(FormatError::Missing { path, .. }))
            if path
                .file_name()
                .is_some_and(|n| n == results_format::MANIFEST_JSON) =>
        {
            BAD_INPUT
        }
        _ => 1,
    }
}

fn invalid(e: impl std::fmt::Display) -> AnalysisError {
    AnalysisError::Invalid(e.to_string())
}

fn no_gaps(dir: &Path, what: &str) -> AnalysisError {
    invalid(format!(
        "{what} needs the gaps design, which times every interruption: {} has no gaps runs of our sampler; run `driver sweep --design gaps` (the default designs include it)",
        dir.display()
    ))
}

fn eprint_lines(lines: &[String]) {
    for line in lines {
        eprintln!("{line}");
    }
}

/// The answer box on stderr, then on stdout `json` where given, else the
/// report's path.
fn answer_and(
    answer: &[String],
    json: Option<&impl serde::Serialize>,
    md: &Path,
) -> anyhow::Result<()> {
    eprint_lines(answer);
    match json {
        Some(v) => {
            // Straight to stdout: a fleet's JSON is tens of MB.
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            serde_json::to_writer_pretty(&mut out, v)?;
            writeln!(out)?;
            out.flush()?;
        }
        None => println!("{}", md.display()),
    }
    Ok(())
}

/// `analysis report DIR`: the answer box on stderr, report.md's path on
/// stdout.
pub fn report(dir: &Path) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let written = crate::report_dir(dir)?;
    tracing::info!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "report written"
    );
    let md = written.dir.join("report.md");
    answer_and(&written.answer, None::<&()>, &md)
}

/// The set's summary rows of its primary configuration: what a `--json`
/// answer rests on.
fn primary_rows(rs: &ResultSet, a: &Findings) -> Vec<SummaryRow> {
    let rows = crate::summary::summary_rows(rs, a).into_iter();
    rows.filter(|r| r.config_primary != Some(false)).collect()
}

/// `analysis recommend`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct RecommendArgs {
    /// Loss budget in percent, e.g. `1%` or `0.5`.
    #[arg(long, default_value = "1%")]
    pub budget: String,
    /// Latency budget, e.g. `p99:1ms:+5%`: what sampling may add to a
    /// request's percentile (in % of it at 0 Hz, or a time: +50us),
    /// predicted from the gaps runs, upper end of the 95% interval. The
    /// answer is the lower of the two budgets' rates.
    #[arg(long, value_name = "PCT:SIZE:+LIMIT")]
    pub latency_budget: Option<String>,
    /// The setting of the profiler you run at the budget, and what it
    /// rests on: perf, perf-dwarf, bpftrace, parca, otel, alloy,
    /// async-profiler or all.
    #[arg(long = "for", value_name = "NAME")]
    pub for_profiler: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `analysis recommend DIR`: the highest rate within the budget (and within
/// the latency budget where given), the answer box on stderr; with `--for`
/// a profiler's setting.
pub fn recommend_rate(dir: &Path, args: &RecommendArgs) -> anyhow::Result<()> {
    let (for_profiler, json) = (args.for_profiler.as_deref(), args.json);
    let budget = parse_budget(&args.budget)?;
    let names = crate::profilers::names();
    if let Some(n) = for_profiler.filter(|n| !names.contains(n)) {
        let names = names.join(", ");
        return Err(invalid(format!("--for {n}: no such profiler; use one of {names}")).into());
    }
    let lat_budget = (args.latency_budget.as_deref())
        .map(|t| crate::recommend::latency::parse(t).map(|b| (b, t)));
    let lat_budget = lat_budget.transpose().map_err(invalid)?;
    let rs = load::load(dir)?;
    let a = pipeline::analyse(&rs)?;
    let lat = match (lat_budget, &a.gaps.latency) {
        (None, _) => None,
        (Some(_), None) => return Err(no_gaps(dir, "--latency-budget").into()),
        (Some((b, text)), Some(t)) => {
            Some(crate::recommend::latency::answer(&t.model, &b, text).map_err(invalid)?)
        }
    };
    let settings = for_profiler.and_then(|n| crate::profilers::settings(&a, n, budget));
    let mut answer_box = crate::answer::answer_box(&rs, &a);
    if let Some([one]) = settings.as_deref() {
        answer_box = crate::answer::with_line(answer_box, &one.short());
    }
    eprint_lines(&answer_box);
    if let (Some(settings), false) = (&settings, json) {
        settings.iter().for_each(|s| println!("{}", s.words()));
        return Ok(());
    }
    let with_settings = |mut answer: results_format::answer::Answer| {
        if let Some(s) = &settings {
            let v = serde_json::to_value(s).unwrap_or_default();
            answer.extra.insert("profiler_settings".into(), v);
        }
        answer
    };
    if let Some(t) = &a.subject.profiler {
        let rec = crate::subject::profiler::recommend(t, budget);
        if json {
            let answer = crate::json_answer::profiler(&rec, t, primary_rows(&rs, &a));
            println!("{}", serde_json::to_string_pretty(&with_settings(answer))?);
        } else {
            println!("{}", rec.headline());
        }
        return Ok(());
    }
    let rec = recommend(&a, budget)?;
    if json {
        let mut answer = crate::json_answer::sampler(&rec, primary_rows(&rs, &a));
        if let Some(l) = &lat {
            answer = crate::json_answer::with_latency(answer, l);
        }
        println!("{}", serde_json::to_string_pretty(&with_settings(answer))?);
        return Ok(());
    }
    println!("{}", rec.headline());
    rec.reasoning.iter().for_each(|l| println!("{l}"));
    if let Some(l) = &lat {
        println!("{}", l.headline());
        l.reasons.iter().for_each(|r| println!("{r}"));
        match l.combined(rec.rate_hz) {
            Some(r) => println!("Both budgets: {r} Hz (the lower of the two)."),
            None => println!("Both budgets: no rate is within both."),
        }
    }
    Ok(())
}

/// `analysis latency`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct LatencyArgs {
    /// The request's work, e.g. 1ms, 250us, 1.8ms.
    #[arg(long)]
    pub size: String,
    /// Sampling rates, Hz, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "99,999,3999")]
    pub rates: Vec<f64>,
    /// Percentiles, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "50,99,99.9")]
    pub percentiles: Vec<f64>,
    /// Print JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
}

/// `analysis latency DIR --size`: the model's prediction for one request
/// size, Markdown or JSON on stdout.
pub fn predict_latency(dir: &Path, args: &LatencyArgs) -> anyhow::Result<()> {
    let (size, rates, percentiles) = (&args.size, &args.rates, &args.percentiles);
    let size_ns = latency::predict::parse_request(size, rates, percentiles).map_err(invalid)?;
    let rs = load::load(dir)?;
    let a = pipeline::analyse(&rs)?;
    let t = a
        .gaps
        .latency
        .as_ref()
        .ok_or_else(|| no_gaps(dir, "the latency model"))?;
    let checked = t.model.check_size(size_ns, &format!("--size {size}"));
    checked.map_err(invalid)?;
    let rows = latency::predict::predict(&t.model, size_ns, rates, percentiles);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", latency::predict::markdown(&rows));
    }
    Ok(())
}

/// `analysis fleet ROOT`: the answer box on stderr; report.md's path (or
/// the JSON answer) on stdout.
pub fn fleet(
    root: &Path,
    opts: &crate::fleet::FleetOptions,
    out: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<()> {
    for (flag, v) in [("--at", opts.at_hz), ("--rate", opts.rate_hz)] {
        if !(v.is_finite() && v > 0.0) {
            return Err(invalid(format!(
                "{flag} {v}: expected a rate in Hz above 0, e.g. {flag} 99"
            ))
            .into());
        }
    }
    if let Some(to) = &opts.compact {
        return compact_fleet(root, to, &opts.dates, json);
    }
    let fleet = crate::fleet::analyse(root, opts)?;
    let md = crate::fleet::present::write(&out.unwrap_or_else(|| root.join("report")), &fleet)?;
    answer_and(
        &crate::fleet::present::answer_box(&fleet),
        json.then_some(&fleet),
        &md,
    )
}

/// `analysis fleet ROOT --compact OUT`: one line per day on stderr, the
/// tables' paths on stdout (--json: what was done).
fn compact_fleet(root: &Path, out: &Path, dates: &[String], json: bool) -> anyhow::Result<()> {
    let done = crate::fleet::compact::compact(root, out, dates)?;
    for s in &done.skipped {
        eprintln!("skipped {}: {}", s.path.display(), s.reason);
    }
    for d in &done.days {
        eprintln!(
            "{}: {} sets ({} from the landing zone, {} kept), {} rows, {:.1} MB",
            d.date,
            d.sets,
            d.from_landing,
            d.kept,
            d.rows,
            d.bytes as f64 / 1e6
        );
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&done)?);
    } else {
        done.days
            .iter()
            .for_each(|d| println!("{}", d.table.display()));
    }
    Ok(())
}

/// `analysis history`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct HistoryArgs {
    /// The rate whose checks are read, Hz. Default: the rate checked most often.
    #[arg(long)]
    pub rate: Option<u64>,
    /// The loss budget, e.g. 1%. Default: the one the checks judged against.
    #[arg(long)]
    pub budget: Option<String>,
    /// Group the checks by day or by hour (UTC).
    #[arg(long, value_enum, default_value = "day")]
    pub by: crate::history::Period,
    /// Where the report goes. Default DIR/history-report.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the history as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `analysis history DIR`: the answer on stderr; history.md's path (or
/// the JSON history) on stdout.
pub fn history(dir: &Path, args: HistoryArgs) -> anyhow::Result<()> {
    let opts = crate::history::HistoryOptions {
        rate_hz: args.rate,
        budget_pct: args.budget.as_deref().map(parse_budget).transpose()?,
        period: args.by,
    };
    let h = crate::history::analyse(dir, &opts)?;
    let out = args.out.unwrap_or_else(|| dir.join("history-report"));
    let md = crate::history::present::write(&out, &h)?;
    answer_and(
        &crate::history::present::answer_box(&h),
        args.json.then_some(&h),
        &md,
    )
}

/// `analysis compare DIR...`: Markdown or CSV on stdout.
pub fn compare(dirs: &[PathBuf], csv: bool) -> anyhow::Result<()> {
    let refs: Vec<&Path> = dirs.iter().map(|d| d.as_path()).collect();
    let c = crate::compare::compare(&refs)?;
    if csv {
        print!("{}", c.to_csv()?);
    } else {
        print!("{}", c.to_markdown());
    }
    Ok(())
}

/// `analysis summary DIR...`: each set's summary.parquet, in place or
/// into a fleet dataset (`into`, under the host's name); a set that fails
/// is named and the others go on (an error at the end when any failed).
pub fn summaries(dirs: &[PathBuf], into: Option<&Path>, host: Option<&str>) -> anyhow::Result<()> {
    let mut failed = 0;
    for dir in dirs {
        match summary_into(dir, into, host) {
            Ok((path, n)) => println!("{} ({n} rows)", path.display()),
            Err(e) => {
                failed += 1;
                let chain = results_format::message_chain(e.as_ref());
                eprintln!("error: {}: {chain}", dir.display());
            }
        }
    }
    match failed {
        0 => Ok(()),
        n => Err(AnalysisError::Insufficient(format!("{n} of {} sets failed", dirs.len())).into()),
    }
}

/// One set's summary.parquet: its path and row count.
fn summary_into(
    dir: &Path,
    into: Option<&Path>,
    host: Option<&str>,
) -> anyhow::Result<(PathBuf, usize)> {
    let rs = load::load(dir)?;
    let rows = crate::summary::summary_rows(&rs, &pipeline::analyse(&rs)?);
    let target = match into {
        None => dir.to_path_buf(),
        Some(root) => {
            let first = rows.first();
            let host = host.map(str::to_owned).or_else(|| first?.hostname.clone());
            let date = first.and_then(|r| crate::fleet::scan::day_of(r.started_at?));
            let (host, date) = (
                host.as_deref().unwrap_or("unknown"),
                date.as_deref().unwrap_or("unknown"),
            );
            let name = dir.file_name().unwrap_or_default();
            let t = root.join(format!("host={host}/date={date}")).join(name);
            std::fs::create_dir_all(&t)?;
            let manifest = results_format::MANIFEST_JSON;
            std::fs::copy(dir.join(manifest), t.join(manifest))?;
            t
        }
    };
    let path = target.join(results_format::summary::SUMMARY_PARQUET);
    results_format::summary::write_summary(&path, &rows)?;
    Ok((path, rows.len()))
}

/// `analysis compact DIR`: every raw file brought into the current form,
/// with a progress bar, one line per file left alone, and a summary (an
/// error when any was left).
pub fn compact(dir: &Path) -> anyhow::Result<()> {
    use results_format::compact::{Compacted, compact_file, raw_files};
    if !dir.join(results_format::MANIFEST_JSON).is_file() {
        return Err(invalid(format!(
            "{} holds no {}: give a results directory written by `driver sweep`",
            dir.display(),
            results_format::MANIFEST_JSON
        ))
        .into());
    }
    let files = raw_files(dir)?;
    // Drawn only where stderr is a terminal (indicatif hides it elsewhere).
    let pb = indicatif::ProgressBar::new(files.len() as u64);
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
                (rewritten, before, after) = (rewritten + 1, before + b, after + a);
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
    match left {
        0 => Ok(()),
        n => Err(AnalysisError::Insufficient(format!("{n} files left as they were")).into()),
    }
}
