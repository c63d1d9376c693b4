//! `driver check`: what the rate in use costs now, in about a minute.
//!
//! A small sweep (the gaps design at the rate(s) against 0 Hz, in as many
//! randomised blocks as `--time` holds: `check/plan.rs`) planned and run
//! by the sweep's own code (options, planner, lock, settings guard and
//! restore, results directory, report), its summary rows judged in
//! process against the budget (`check/verdict.rs`) and written where
//! monitoring reads it: the answer on stderr, `--json`, a Prometheus
//! textfile, and the host's history.csv.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use results_format::textfile::{CheckOutcome, TEXTFILE};

use crate::config::{BudgetPct, FlagList, FlagSettings, Origin, parse_duration, parse_rate_list};
use crate::sweep::{BusyError, SweepFlags, UsageError};

mod plan;
mod verdict;

pub use plan::{CheckPlan, DEFAULT_TIME_NS, TooShort};

/// Where checks keep their history by default.
pub const DEFAULT_HISTORY: &str = "/var/lib/perf-overhead";

/// Arguments of `driver check`.
// The fields' doc comments are `driver check --help`'s text, written for a
// terminal: `<UTC time>-<host>` is not HTML there.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// The rate in use, Hz (comma-separated for several), e.g. 99.
    #[arg(long, visible_alias = "freq", value_name = "HZ", value_parser = rate_flag)]
    pub rate: FlagList<u64>,
    /// The loss budget: the share of the measured CPU's work sampling may
    /// take, e.g. 1% (a bare number is a percentage), above 0 and at most 100.
    #[arg(long, default_value = "1%", value_parser = budget_flag)]
    pub budget: f64,
    /// The time the whole check may take (its runs, set-up and report), e.g.
    /// 60s, 2min. Longer narrows the interval.
    #[arg(long, default_value = "60s", value_parser = time_flag)]
    pub time: u64,
    /// Write DIR/perf_overhead.prom (atomically) for node_exporter's
    /// textfile collector. DIR must exist and be writable.
    #[arg(long, value_name = "DIR")]
    pub textfile: Option<PathBuf>,
    /// The host's history: every check appends its rows to DIR/history.csv
    /// and keeps its result set in DIR/checks/<UTC time>-<host>/.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_HISTORY)]
    pub history: PathBuf,
    /// Keep only the newest N checks' result sets in HISTORY/checks/ (about
    /// 2 MB each); older ones are removed after this check, each named in
    /// the log. Their rows stay in history.csv. 0 keeps them all.
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub keep_sets: usize,
    /// Print the answer as JSON on stdout (docs/results-format.md, "--json answers").
    #[arg(long)]
    pub json: bool,
    /// A real profiler in place of our sampler, with {freq} and {cpu}
    /// where its rate and the measured CPU go, as `driver sweep --profiler`.
    #[arg(long, value_name = "'CMD {freq}'")]
    pub profiler: Option<String>,
    /// Sample contents, as `driver sweep --sample`.
    #[arg(long, value_name = "LIST", value_parser = crate::config::sample_flag)]
    pub sample: Option<FlagList<crate::contents::SampleContents>>,
    /// cpu, system or task, as `driver sweep --scope`. Default system.
    #[arg(long, value_parser = crate::config::scope_flag())]
    pub scope: Option<results_format::ScopeName>,
    /// Work kind, as `driver sweep --work` (`--workload`, its earlier name).
    #[arg(long = "work", alias = "workload", value_name = "LIST", value_parser = crate::config::workload_flag)]
    pub workload: Option<FlagList<workload::work::WorkKind>>,
    /// Sampling event, as `driver sweep --event`.
    #[arg(long, value_parser = crate::config::event_flag())]
    pub event: Option<results_format::EventKind>,
    /// Measured CPU, as `driver sweep --cpu`.
    #[arg(long, value_parser = crate::config::cpu_flag)]
    pub cpu: Option<u32>,
    /// Seed of the randomised order.
    #[arg(long, value_parser = crate::config::seed_flag)]
    pub seed: Option<u64>,
    /// Raise perf_event_max_sample_rate for the check when the rate is above it (restored at exit).
    #[arg(long)]
    pub raise_max_rate: bool,
}

fn rate_flag(text: &str) -> Result<FlagList<u64>, String> {
    let fix = "give the rate in use in Hz, e.g. --rate 99 (comma-separated for several)";
    let list = parse_rate_list(text, &Origin::Flag("--rate")).map_err(|e| e.to_string())?;
    if let Some(v) = list.iter().find(|&&v| v <= 0) {
        return Err(format!("the rate {v} Hz measures nothing; {fix}"));
    }
    let mut rates: Vec<u64> = list.iter().map(|&v| v.unsigned_abs()).collect();
    rates.sort_unstable();
    rates.dedup();
    Ok(FlagList(rates))
}

fn budget_flag(text: &str) -> Result<f64, String> {
    let fix = "give a percentage above 0 and at most 100, e.g. --budget 1%";
    let v: f64 = text
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| format!("not a percentage; {fix}"))?;
    if !(v > 0.0 && v <= 100.0) {
        return Err(format!(
            "a budget must be above 0 % and at most 100 %; {fix}"
        ));
    }
    Ok(v)
}

fn time_flag(text: &str) -> Result<u64, String> {
    parse_duration(text, &Origin::Flag("--time")).map_err(|e| e.to_string())
}

/// Exit statuses, as `driver check --help` documents them.
pub mod exit {
    pub const WITHIN: u8 = 0;
    pub const OVER: u8 = 1;
    pub const BAD_INPUT: u8 = 2;
    pub const UNRESOLVED: u8 = 3;
}

/// A directory the check writes into: it exists and a file can be made in it.
fn writable_dir(dir: &Path, flag: &str, fix: &str) -> Result<(), String> {
    if !dir.is_dir() {
        return Err(format!(
            "{flag} {}: no such directory; {fix}",
            dir.display()
        ));
    }
    let probe = dir.join(format!(".perf-overhead-probe-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map(|_| {
            let _ = std::fs::remove_file(&probe);
        })
        .map_err(|e| format!("{flag} {}: not writable ({e}); {fix}", dir.display()))
}

/// Everything refused before anything is measured (exit 2).
fn preflight(args: &CheckArgs) -> Result<CheckPlan, String> {
    if let Some(dir) = &args.textfile {
        writable_dir(
            dir,
            "--textfile",
            "give the directory node_exporter's --collector.textfile.directory reads, writable by this user",
        )?;
    }
    std::fs::create_dir_all(&args.history).map_err(|e| {
        format!(
            "--history {}: cannot create it ({e}); give a writable directory",
            args.history.display()
        )
    })?;
    writable_dir(&args.history, "--history", "give a writable directory")?;
    plan::plan(args.time, &args.rate.0, args.profiler.is_some()).map_err(|e| e.to_string())
}

/// The sweep a check runs: its plan, the rates, the passed-through
/// settings, into `root`.
fn sweep_flags(args: &CheckArgs, p: CheckPlan, root: PathBuf) -> SweepFlags {
    SweepFlags {
        settings: FlagSettings {
            // 0 Hz is each block's control, as in a sweep.
            rates: Some(FlagList(
                std::iter::once(0)
                    .chain(args.rate.0.iter().copied())
                    .collect(),
            )),
            duration_ns: Some(p.run_ns),
            reps: Some(p.blocks),
            design: Some(FlagList(vec![results_format::Design::Gaps])),
            no_util: true,
            cpu: args.cpu,
            event: args.event,
            scope: args.scope,
            sample: args.sample.clone(),
            workload: args.workload.clone(),
            profiler: args.profiler.clone(),
            seed: args.seed,
            ..FlagSettings::default()
        },
        out: Some(root),
        raise_max_rate: args.raise_max_rate,
        no_host_look: true,
        ..SweepFlags::default()
    }
}

fn now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Writes the textfile, if asked; a failure is said, and the check's own
/// answer stands.
fn write_textfile(
    args: &CheckArgs,
    rows: &[results_format::summary::SummaryRow],
    o: &CheckOutcome,
) {
    let Some(dir) = args.textfile.as_ref().filter(|d| d.is_dir()) else {
        return;
    };
    let text = results_format::textfile::render(rows, o);
    let path = dir.join(TEXTFILE);
    if let Err(e) = results_format::write_atomic(&path, text.as_bytes()) {
        tracing::error!("cannot write {}: {e}", path.display());
    }
}

/// A check that ended before judging: the refusal written to the
/// textfile (timestamp and success 0 only), and its exit status.
fn refused(args: &CheckArgs, code: u8, line: &str) -> ExitCode {
    eprintln!("error: {line}");
    if args.json {
        // A script reading --json gets an answer whatever happened: no
        // rows, the exit status and the reason.
        let j = verdict::Judged {
            rows: Vec::new(),
            exit: code,
            reasons: vec![line.to_string()],
        };
        println!("{}", verdict::answer_json(&j, args, Path::new("")));
    }
    write_textfile(
        args,
        &[],
        &CheckOutcome {
            timestamp_s: now_s(),
            success: false,
            exit_code: None,
        },
    );
    ExitCode::from(code)
}

/// Runs `driver check`.
pub fn cli(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let p = match preflight(args) {
        Ok(p) => p,
        Err(line) => return Ok(refused(args, exit::BAD_INPUT, &line)),
    };
    let root = args.history.join("checks").join(crate::sweep::set_name());
    let started = std::time::Instant::now();
    tracing::info!(
        "checking {} Hz: {} blocks of {} runs of {} ms, about {} s (--time {} s)",
        join(&args.rate.0),
        p.blocks,
        args.rate.0.len() + 1,
        p.run_ns / 1_000_000,
        args.time / 1_000_000_000,
        args.time / 1_000_000_000
    );
    let flags = sweep_flags(args, p, root);
    let ran = match crate::sweep::measure(&flags, Some(BudgetPct(args.budget))) {
        Ok(Ok(ran)) => ran,
        // Stopped before its first run (Ctrl-C): nothing judged.
        Ok(Err(code)) => return Ok(code),
        Err(e) => {
            let (code, line) = if let Some(u) = e.downcast_ref::<UsageError>() {
                (exit::BAD_INPUT, u.to_string())
            } else if let Some(b) = e.downcast_ref::<BusyError>() {
                let line = format!("{b}; nothing was measured: run the check when it has finished");
                (exit::UNRESOLVED, line)
            } else {
                let chain = results_format::message_chain(e.as_ref());
                (
                    exit::UNRESOLVED,
                    format!("the check stopped: {chain}; nothing was judged"),
                )
            };
            return Ok(refused(args, code, &line));
        }
    };
    let s = match crate::sweep::summarise(ran) {
        Ok(s) => s,
        Err(interrupted) => return Ok(interrupted),
    };
    let root = s.root.clone();
    let judged = verdict::judge(s, args);
    let elapsed = started.elapsed();
    verdict::print_box(&judged, args, elapsed);
    let o = CheckOutcome {
        timestamp_s: now_s(),
        success: judged.rows.iter().any(|r| r.cost_per_sample_ns.is_some()),
        exit_code: Some(judged.exit),
    };
    write_textfile(args, &judged.rows, &o);
    if !judged.rows.is_empty() {
        match results_format::history::append(&args.history, &judged.rows) {
            Ok(a) => {
                for d in &a.passed_over {
                    tracing::error!(
                        "the history file {d}: left as it is; this check's row went to {}",
                        a.path.display()
                    );
                }
            }
            Err(e) => tracing::error!("cannot append to the history: {e}"),
        }
    }
    prune_sets(&args.history.join("checks"), args.keep_sets);
    if args.json {
        println!("{}", verdict::answer_json(&judged, args, &root));
    } else {
        println!("{}", root.display());
    }
    Ok(ExitCode::from(judged.exit))
}

/// Removes all but the newest `keep` result sets under `checks` (their
/// names start with the UTC time, so name order is time order); 0 keeps
/// all. Only folders with a manifest.json are touched.
fn prune_sets(checks: &Path, keep: usize) {
    if keep == 0 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(checks) else {
        return;
    };
    let mut sets: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join(results_format::MANIFEST_JSON).is_file())
        .collect();
    sets.sort();
    let extra = sets.len().saturating_sub(keep);
    for old in &sets[..extra] {
        match std::fs::remove_dir_all(old) {
            Ok(()) => tracing::info!(
                "removed {} (--keep-sets {keep}; its rows stay in history.csv)",
                old.display()
            ),
            Err(e) => tracing::warn!("cannot remove {}: {e}", old.display()),
        }
    }
}

fn join(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// `driver check --help`'s closing text.
pub const AFTER_HELP: &str = "Exit status, as monitoring checks use it: 0 the rate is within \
    the budget (the loss at the cost's 95 % prediction interval's upper end fits); 1 over the \
    budget (even the confidence interval's lower end does not fit); 3 unresolved (the interval \
    holds the budget: a longer --time narrows it; or nothing was measured, a setting was not \
    restored, or a sweep holds the host: the line on stderr says which and what resolves it); \
    2 bad input, nothing measured; 130 interrupted (Ctrl-C or SIGTERM; settings restored, \
    nothing judged, no textfile written). A check beside a running sweep or check does not \
    wait: it refuses with 3.";

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The oldest sets go, by name (UTC time first); a folder that is not
    /// a result set is never touched; 0 keeps all.
    #[test]
    fn only_the_newest_sets_are_kept() {
        let d = tempfile::tempdir().unwrap();
        for name in [
            "20261127T0300Z-vm",
            "20261127T0100Z-vm",
            "20261127T0200Z-vm",
        ] {
            let p = d.path().join(name);
            std::fs::create_dir(&p).unwrap();
            std::fs::write(p.join(results_format::MANIFEST_JSON), "{}").unwrap();
        }
        std::fs::create_dir(d.path().join("00-notes")).unwrap();
        prune_sets(d.path(), 0);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 4);
        prune_sets(d.path(), 2);
        let mut left: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["00-notes", "20261127T0200Z-vm", "20261127T0300Z-vm"]);
    }

    #[test]
    fn budgets_parse_as_percentages() {
        assert_eq!(budget_flag("1%"), Ok(1.0));
        assert_eq!(budget_flag(" 0.5 % "), Ok(0.5));
        assert_eq!(budget_flag("100"), Ok(100.0));
        for bad in ["0", "-1%", "100.01", "one", "NaN"] {
            assert!(budget_flag(bad).is_err(), "{bad}");
        }
        assert_eq!(rate_flag("999,99,99").unwrap().0, vec![99, 999]);
        assert!(rate_flag("99,0").is_err());
    }
}
