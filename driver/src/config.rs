//! Sweep options: defaults (the 2014 article's protocol), experiment files
//! (`experiments/*.toml`) and command-line flags, merged in that order and
//! validated once into [`SweepOptions`].
//!
//! Every validation error is a [`ConfigError`]: it names the bad value, where
//! it came from (`--flag` or `key` in `file`) and the fix. The CLI maps it to
//! exit status 2.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::contents::{ContentsError, MAX_STACK_USER_BYTES, PRESETS, SampleContents};
use results_format::EventKind;
use workload::work::WorkKind;

mod profiler;
mod resolve;
mod subject;
mod user_command;
pub use user_command::find_program;
mod values;

pub use profiler::profiler_argv;
use profiler::*;
pub use resolve::{Resolved, expected_run_ns};
pub use subject::{Sampling, Subject};
use user_command::*;
pub use user_command::{DEFAULT_WARMUP, MAX_WARMUP};
use values::*;
pub use values::{FlagList, parse_duration, parse_rate_list};
pub(crate) use values::{cpu_flag, event_flag, sample_flag, scope_flag, seed_flag, workload_flag};
use values::{duration_flag, reps_flag};

/// The rates of the 2014 article, used when no `--rates`/`freqs` is given.
pub const ARTICLE_RATES_HZ: [u64; 5] = [100, 500, 2000, 4000, 100_000];
/// Default run length: 8 s (the article's 10 s is in
/// experiments/article-2014.toml), so the default plan (paired and gaps
/// runs at 0 Hz and five frequencies, util runs at five, five repetitions:
/// 85 runs) takes about 13 minutes.
pub const DEFAULT_DURATION_NS: u64 = 8_000_000_000;
/// Default repetitions: 5, as in the article.
pub const DEFAULT_REPS: u32 = 5;
/// Default phase length of the paired design: 100 ms, from a measurement
/// on the development VM (docs/methodology.md, "Phase length"): interleaved
/// 10 s runs at 0 Hz and 4 kHz, four each at 50, 100 and 250 ms phases,
/// gave a standard error per minute of running of 0.10-0.15 pp (over runs)
/// and 0.17-0.47 pp (over groups) at 100 ms, against 0.19-0.94 and
/// 0.64-0.99 pp at 250 ms; 50 ms was no better than 100 ms.
pub const DEFAULT_PHASE_NS: u64 = 100_000_000;
/// The shortest run a sweep accepts.
pub const MIN_RUN_NS: u64 = 100_000_000;
/// The fewest samples a run at the lowest sampling rate may hold.
pub const MIN_SAMPLES_PER_RUN: u64 = 10;

/// A run of `run_ns` at the lowest sampling rate of `freqs` (above 0 Hz)
/// when it would hold fewer than [`MIN_SAMPLES_PER_RUN`] samples: that
/// rate and the samples it holds; None when it holds enough (or nothing
/// samples).
pub fn too_few_samples(freqs: &[u64], run_ns: u64) -> Option<(u64, u128)> {
    let lowest = *freqs.iter().find(|&&f| f > 0)?;
    let samples = u128::from(lowest) * u128::from(run_ns) / 1_000_000_000;
    (samples < u128::from(MIN_SAMPLES_PER_RUN)).then_some((lowest, samples))
}
/// Default limit on a sweep's planned time (runs x run length): 24 h.
/// The longest shipped experiment plans ~13 minutes and the host's state
/// changes on a scale of hours to days (docs/methodology.md; one sweep
/// should see one state), so a plan longer than a day is far more likely a
/// unit slip (`--duration 10h` for 10s, `1000000h`) than a measurement
/// anyone wants; `--max-sweep-time` (`max_sweep_time`) lifts it.
pub const DEFAULT_MAX_SWEEP_NS: u64 = 24 * 3_600_000_000_000;
/// Sampling events the sweep knows (perf's names).
pub const KNOWN_EVENTS: [&str; 4] = ["cycles", "instructions", "cpu-clock", "task-clock"];

/// Where a setting came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A command-line flag, e.g. `--freqs`.
    Flag(&'static str),
    /// A key in an experiment file.
    File {
        /// The key.
        key: &'static str,
        /// The file.
        file: PathBuf,
    },
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Flag(flag) => write!(f, "{flag}"),
            Origin::File { key, file } => write!(f, "key `{key}` in {}", file.display()),
        }
    }
}

/// A bad option value. Always a usage error (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A bad value of a setting.
    #[error("invalid value {value:?} for {origin}: {problem}; {fix}")]
    Invalid {
        /// The value as given.
        value: String,
        /// Flag or file key.
        origin: Origin,
        /// What is wrong with it.
        problem: String,
        /// How to fix it.
        fix: String,
    },
    /// The plan runs longer than the limit on a sweep's planned time.
    #[error(
        "the planned sweep takes at least {} ({settings}), over the limit of {} ({limit_origin}) on a sweep's planned time; \
         give a shorter --duration, fewer --reps, frequencies or designs{lift}",
        workload::duration::format_long_ns(*planned_ns), workload::duration::format_long_ns(u128::from(*limit_ns))
    )]
    TooLong {
        /// Runs x run length, ns.
        planned_ns: u128,
        /// The limit, ns.
        limit_ns: u64,
        /// Where the limit came from (the flag for the default).
        limit_origin: String,
        /// Which settings make the plan that long, each with its origin.
        settings: String,
        /// How to lift the limit (", or lift it with ...").
        lift: String,
    },
    /// A command too short to measure, told by its warm-up runs.
    #[error("{0}")]
    ShortCommand(String),
    /// The experiment file could not be read.
    #[error("cannot read experiment file {}: {source}; give an existing file, e.g. experiments/quick.toml", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The experiment file is not valid TOML or has an unknown key.
    #[error("experiment file {}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (names an unknown key).
        message: String,
    },
}

fn invalid(
    value: impl Into<String>,
    origin: &Origin,
    problem: impl Into<String>,
    fix: impl Into<String>,
) -> ConfigError {
    ConfigError::Invalid {
        value: value.into(),
        origin: origin.clone(),
        problem: problem.into(),
        fix: fix.into(),
    }
}

pub use results_format::{Design, ScopeName};

/// The designs run when none is given: the ones that resolve production
/// rates on a noisy host (the article's classic design stays in
/// experiments/article-2014.toml), and the split design, which measures
/// the loss outside the gaps in the same runs (docs/methodology.md, "The
/// main command runs it"). Split is left out, with a warning, where a
/// phase cannot hold a sample at the lowest rate.
pub const DEFAULT_DESIGNS: [Design; 3] = [Design::Paired, Design::Gaps, Design::Split];

/// A TOML value that may be one item or a list.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// One item.
    One(T),
    /// A list.
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// An experiment file (`experiments/NAME.toml`). Every key is optional;
/// unknown keys are errors.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    /// Free text, kept in the manifest.
    pub description: Option<String>,
    /// Sampling rates in Hz, at least one above 0 (0 is added if absent);
    /// `rates` is the same key.
    #[serde(alias = "rates")]
    pub freqs: Option<Vec<i64>>,
    /// Run length, e.g. "10s", "500ms": at least 100 ms, and 10 samples at the lowest rate.
    pub duration: Option<String>,
    /// Repetitions per frequency.
    pub reps: Option<i64>,
    /// Measured CPU.
    pub cpu: Option<i64>,
    /// Sampling event.
    pub event: Option<String>,
    /// Scope: cpu, system or task.
    pub scope: Option<String>,
    /// Design(s): "classic", "paired", "gaps", "split" or a list.
    pub design: Option<OneOrMany<String>>,
    /// Phase length of the paired and split designs, e.g. "250ms".
    pub phase: Option<String>,
    /// Seed of the randomised order.
    pub seed: Option<u64>,
    /// Also run the handler-utilisation runs (default true).
    pub util: Option<bool>,
    /// Sample contents: a preset ("perf-default", "callchain", "dwarf:8192",
    /// "lbr", "time") or field list, or a list of them.
    pub sample: Option<OneOrMany<String>>,
    /// Workload kind(s): "loop", "stack:32", "memory:8M", or a list.
    pub workload: Option<OneOrMany<String>>,
    /// The user's own program in place of the workload: one string split
    /// like a shell splits words ("gzip -9 -c data.bin"), or the argv as a
    /// list (["gzip", "-9", "-c", "data.bin"]).
    pub command: Option<OneOrMany<String>>,
    /// Unmeasured runs of the command before the first measured one.
    pub warmup: Option<i64>,
    /// A real profiler run as the sampler in place of ours, with `{freq}`
    /// and `{cpu}` where its rate and the measured CPU go.
    pub profiler: Option<String>,
    /// The longest planned sweep time accepted, e.g. "48h" (default 24h).
    pub max_sweep_time: Option<String>,
}

impl ExperimentFile {
    /// Reads and parses an experiment file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses experiment-file text; `path` is for messages.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| {
            // Where in the file, as an editor counts: line and column from 1.
            let place = e.span().map(|span| {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                format!("line {line}, column {column}: ")
            });
            ConfigError::Parse {
                path: path.to_owned(),
                message: format!("{}{}", place.unwrap_or_default(), e.message()),
            }
        })
    }
}

/// The settings flags of `driver sweep` (flattened into its arguments),
/// each typed by clap's value parser (lists item by item); the command
/// stays text and is split and looked up by [`SweepOptions::resolve`]. A bad value is reported on one line naming
/// the value, the flag and the fix (the driver's `main` renders clap's
/// error that way), with exit status 2.
// The fields' doc comments are `driver sweep --help`'s text, written for a
// terminal: `dwarf[:SIZE]` and `results/<UTC time>-<host>` are not links or
// HTML there.
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct FlagSettings {
    /// Sampling rates in Hz, comma-separated, at least one above 0 (0 Hz
    /// is always added). Default: the 2014 article's
    /// 100,500,2000,4000,100000.
    #[arg(long = "rates", visible_alias = "freqs", allow_hyphen_values = true, value_name = "LIST", value_parser = rates_flag)]
    pub rates: Option<FlagList<u64>>,
    /// Workload run length: a number with a unit ns, us, ms, s, min or h
    /// (10s, 500ms, 1.5min; a bare number is seconds), at least 100ms and
    /// 10 samples at the lowest frequency. Default 8s.
    #[arg(long = "duration", value_name = "DURATION", allow_hyphen_values = true, value_parser = duration_flag)]
    pub duration_ns: Option<u64>,
    /// Repetitions (randomised blocks). Default 5.
    #[arg(long, allow_hyphen_values = true, value_parser = reps_flag)]
    pub reps: Option<u32>,
    /// Measured CPU (the workload is pinned there), one of
    /// /sys/devices/system/cpu/online. Default: the last online CPU.
    #[arg(long, allow_hyphen_values = true, value_parser = cpu_flag)]
    pub cpu: Option<u32>,
    /// Sampling event (cycles falls back to cpu-clock without a PMU).
    /// Default cycles.
    #[arg(long, value_parser = event_flag())]
    pub event: Option<EventKind>,
    /// cpu (the measured CPU, like perf record -C), system (every CPU, like
    /// -a, the article's setup) or task (the workload only). Default system.
    #[arg(long, value_parser = scope_flag())]
    pub scope: Option<ScopeName>,
    /// Designs, comma-separated: gaps (every interruption of the loop timed
    /// on its own timeline; a sample's cost is the gap that holds it),
    /// paired (sampling switched on and off in ABBA phases within a run),
    /// classic (whole runs per frequency, the article's), split (paired
    /// phases in a run that stamps its timeline: the loss split into what
    /// the gaps hold and what lies outside them). Default paired,gaps,split
    /// (split left out, with a warning, where a phase cannot hold a sample
    /// at the lowest rate).
    #[arg(long, allow_hyphen_values = true, value_name = "LIST", value_parser = design_flag)]
    pub design: Option<FlagList<Design>>,
    /// Phase length of the paired and split designs. Default 100ms (measured to give
    /// the smallest standard error per minute here; docs/methodology.md).
    #[arg(long = "phase", value_name = "DURATION", allow_hyphen_values = true, value_parser = duration_flag)]
    pub phase_ns: Option<u64>,
    /// Seed of the randomised run order. Default: from the clock (recorded).
    #[arg(long, allow_hyphen_values = true, value_parser = seed_flag)]
    pub seed: Option<u64>,
    /// Skip the handler-utilisation runs (tracepoints on).
    #[arg(long)]
    pub no_util: bool,
    /// What each sample carries, comma-separated; several make contents a
    /// sweep dimension. Presets: perf-default (what `perf record` writes: ip,
    /// tid, time, cpu, period, identifier), callchain (`perf record -g`:
    /// kernel and user frame-pointer chain), dwarf[:SIZE] (`--call-graph
    /// dwarf,SIZE`: kernel chain, user registers and SIZE bytes of user
    /// stack; default 8192), lbr (branch stack; needs a hardware PMU), time
    /// (timestamp only, the cheapest record); or a field list such as
    /// ip+tid+period. Default perf-default.
    #[arg(long, allow_hyphen_values = true, value_name = "LIST", value_parser = sample_flag)]
    pub sample: Option<FlagList<SampleContents>>,
    /// What the workload's loop does, comma-separated; several make it a
    /// sweep dimension: loop (one increment per iteration, the article's),
    /// stack[:DEPTH] (the counting DEPTH frames deep, default 32, so call
    /// chains and stack copies walk real frames), memory:SIZE (a dependent
    /// pointer chase over SIZE bytes, e.g. 32K, 8M, 1G: an interrupt's cache
    /// and TLB pollution shows as lost work). Default loop. (`--workload`
    /// is the same flag, its earlier name.)
    #[arg(long = "work", alias = "workload", allow_hyphen_values = true, value_name = "LIST", value_parser = workload_flag)]
    pub workload: Option<FlagList<WorkKind>>,
    /// Your own program in place of the built-in workload, e.g. --command
    /// 'gzip -9 -c data.bin' (split into words like a shell does; for pipes
    /// or redirections give "sh -c '...'"). It runs pinned to --cpu with
    /// stdout on /dev/null, once per run, in randomised blocks with 0 Hz;
    /// its loss is measured from its wall time per run (classic design,
    /// whole runs), after --warmup unmeasured runs. A run that exits
    /// non-zero is recorded as failed with its stderr.
    #[arg(long, value_name = "'CMD ARGS'")]
    pub command: Option<String>,
    /// Unmeasured runs of --command before the first measured run (at
    /// least 1: the first checks the command and tells how long it runs).
    /// Default 1.
    #[arg(long, allow_hyphen_values = true, value_name = "N", value_parser = warmup_flag)]
    pub warmup: Option<u32>,
    /// The profiler you run, measured in place of our sampler: a command
    /// with {freq} where its rate goes and {cpu} for the measured CPU, e.g.
    /// --profiler 'perf record -F {freq} -g -a -o /dev/null' or
    /// --profiler "bpftrace -e 'profile:hz:{freq} { @[ustack, kstack] =
    /// count(); }'". At each frequency it runs while the built-in loop runs
    /// on --cpu (gaps design: every interruption timed), started before the
    /// loop (its start-up is not measured) and stopped with SIGINT after it;
    /// 0 Hz runs without it are interleaved in randomised blocks. Its own
    /// CPU, memory and writes are recorded. Not with --command.
    #[arg(long, value_name = "'CMD {freq}'")]
    pub profiler: Option<String>,
    /// The longest sweep accepted, as planned (runs x run length; the same
    /// units as --duration): a longer plan is refused before anything runs
    /// or is written, naming what makes it long. Default 24h.
    #[arg(long = "max-sweep-time", value_name = "DURATION", allow_hyphen_values = true, value_parser = duration_flag)]
    pub max_sweep_ns: Option<u64>,
}

impl FlagSettings {
    /// Whether any setting is given (`--resume` refuses them).
    pub fn any(&self) -> bool {
        *self != FlagSettings::default()
    }

    /// The settings given by `args` (flags as on the command line, without
    /// the program name), parsed by the same value parsers as `driver sweep`.
    pub fn from_args(args: &[&str]) -> Result<Self, clap::Error> {
        #[derive(clap::Parser)]
        struct Settings {
            #[command(flatten)]
            flags: FlagSettings,
        }
        let argv = std::iter::once("settings").chain(args.iter().copied());
        <Settings as clap::Parser>::try_parse_from(argv).map(|s| s.flags)
    }
}

/// The sweep options as resolved: flags over experiment file over defaults.
/// Stored in the manifest as `options` and re-read by `--resume`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepOptions {
    /// Rates in Hz, ascending, always including 0 (`freqs_hz` in the
    /// manifest).
    #[serde(rename = "freqs_hz")]
    pub rates_hz: Vec<u64>,
    /// Requested workload duration per run.
    pub duration_ns: u64,
    /// Repetitions per frequency.
    pub reps: u32,
    /// Measured CPU (the workload is pinned there).
    pub cpu: u32,
    /// Requested sampling event.
    pub event: EventKind,
    /// Scope of the sampling event.
    pub scope: ScopeName,
    /// Designs to run, in canonical order.
    pub designs: Vec<Design>,
    /// Phase length of the paired design.
    pub phase_ns: u64,
    /// Seed of the randomised order.
    pub seed: u64,
    /// Whether util runs (handler tracepoints on) are planned.
    pub util: bool,
    /// What each sample carries, in the order given (the first is the
    /// report's primary contents). Manifests written before contents were a
    /// dimension ran with `time`.
    #[serde(default = "legacy_samples", rename = "samples")]
    pub contents: Vec<SampleContents>,
    /// What the workload's loop does, in the order given (`loop` in
    /// manifests written before kinds existed).
    #[serde(default = "legacy_workloads")]
    pub workloads: Vec<WorkKind>,
    /// What is measured: the loop or the user's program (`--command`,
    /// with its warm-up runs); in the manifest as `command` and `warmup`.
    #[serde(flatten)]
    pub subject: Subject,
    /// What samples it: our sampler or a real profiler (`--profiler`); in
    /// the manifest as `profiler`.
    #[serde(flatten)]
    pub sampling: Sampling,
    /// The longest planned sweep time accepted (`--max-sweep-time`);
    /// manifests written before the limit existed read as the default.
    #[serde(default = "default_max_sweep_ns")]
    pub max_sweep_ns: u64,
    /// Experiment file the options came from, if any.
    pub experiment: Option<PathBuf>,
    /// The experiment file's description.
    pub description: Option<String>,
    /// The loss budget a `driver check` judges against, %; absent from a
    /// sweep's manifest. The analysis fills the summary's `budget_pct`,
    /// `within_budget` and `budget_max_hz` from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_pct: Option<BudgetPct>,
}

/// A loss budget, % (compared bit for bit, so the options stay `Eq`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BudgetPct(pub f64);

impl PartialEq for BudgetPct {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for BudgetPct {}

impl SweepOptions {
    /// The lists one randomised block is made of (`crate::block`).
    pub fn block_spec(&self) -> crate::block::BlockSpec<'_> {
        crate::block::BlockSpec {
            rates_hz: &self.rates_hz,
            designs: &self.designs,
            contents: &self.contents,
            workloads: &self.workloads,
            util: self.util,
        }
    }

    /// Highest requested rate.
    pub fn max_rate_hz(&self) -> u64 {
        self.rates_hz.iter().copied().max().unwrap_or(0)
    }
}
