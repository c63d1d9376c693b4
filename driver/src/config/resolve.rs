//! [`SweepOptions::resolve`]: each setting from its flag, else its
//! experiment-file key, else its default, through one lookup
//! (`Sources::given`, `Sources::given_at`).

use std::path::Path;

use super::values::{parse_contents, parse_design, parse_workload};

use super::{
    ARTICLE_RATES_HZ, BudgetPct, ConfigError, DEFAULT_DESIGNS, DEFAULT_DURATION_NS,
    DEFAULT_MAX_SWEEP_NS, DEFAULT_PHASE_NS, DEFAULT_REPS, Design, EventKind, ExperimentFile,
    FlagList, FlagSettings, MIN_RUN_NS, MIN_SAMPLES_PER_RUN, Origin, PRESETS, SampleContents,
    Sampling, ScopeName, Subject, SweepOptions, WorkKind, check_cpu, check_rates, check_reps,
    dedup_in_order, invalid, list_setting, parse_duration, parse_event, parse_scope,
    refuse_with_command, refuse_with_profiler, resolve_command, resolve_profiler, resolve_warmup,
    too_few_samples,
};

/// Where a resolve reads its settings: the flags, then the experiment file
/// (empty when none is given), whose keys errors name with its path.
pub(super) struct Sources<'a> {
    pub(super) flags: &'a FlagSettings,
    pub(super) exp: &'a ExperimentFile,
    path: Option<&'a Path>,
}

impl Sources<'_> {
    /// An experiment-file key, for messages.
    pub(super) fn key(&self, key: &'static str) -> Origin {
        Origin::File {
            key,
            file: self.path.map(Path::to_path_buf).unwrap_or_default(),
        }
    }

    /// A setting as given, with where it came from: its `flag`'s value,
    /// else its experiment-file `key`'s; None when neither gives it.
    pub(super) fn given_at<T>(
        &self,
        (flag, name): (Option<T>, &'static str),
        (file, key): (Option<T>, &'static str),
    ) -> Option<(T, Origin)> {
        flag.map(|v| (v, Origin::Flag(name)))
            .or_else(|| file.map(|v| (v, self.key(key))))
    }

    /// A setting given by its flag (parsed by clap) or else by its
    /// experiment-file `key` (parsed here by `parse`); None when neither
    /// gives it.
    fn given<F, T>(
        &self,
        flag: Option<T>,
        file: Option<F>,
        key: &'static str,
        parse: impl FnOnce(F, &Origin) -> Result<T, ConfigError>,
    ) -> Result<Option<T>, ConfigError> {
        match (flag, file) {
            (Some(v), _) => Ok(Some(v)),
            (None, Some(f)) => parse(f, &self.key(key)).map(Some),
            (None, None) => Ok(None),
        }
    }

    /// A duration setting (`name`, `key`): its value, else `default`, and
    /// where it came from (the flag also names the default).
    fn duration(
        &self,
        (flag, file): (Option<u64>, Option<&str>),
        (name, key): (&'static str, &'static str),
        default: u64,
    ) -> Result<(u64, Origin), ConfigError> {
        let ns = self.given(flag, file, key, parse_duration)?;
        let origin = if flag.is_none() && file.is_some() {
            self.key(key)
        } else {
            Origin::Flag(name)
        };
        Ok((ns.unwrap_or(default), origin))
    }

    /// Rates, ascending, with 0; default the article's.
    fn rates(&self) -> Result<Vec<u64>, ConfigError> {
        let flag = self.flags.rates.clone().map(|FlagList(rates)| rates);
        let given = self.given(flag, self.exp.freqs.as_deref(), "freqs", check_rates)?;
        // The article's rates are ascending and above 0.
        Ok(given.unwrap_or_else(|| std::iter::once(0).chain(ARTICLE_RATES_HZ).collect()))
    }

    /// The loop's run length, checked ([`check_run_length`]).
    fn run_length(&self, rates: &[u64]) -> Result<u64, ConfigError> {
        let given = (self.flags.duration_ns, self.exp.duration.as_deref());
        let (ns, origin) = self.duration(given, ("--duration", "duration"), DEFAULT_DURATION_NS)?;
        check_run_length(rates, ns, &origin)?;
        Ok(ns)
    }

    /// The measured CPU, one of `online`; default the last online CPU.
    fn cpu(&self, online: &[u32]) -> Result<u32, ConfigError> {
        match (self.flags.cpu, self.exp.cpu) {
            (Some(c), _) => check_cpu(i64::from(c), online, &Origin::Flag("--cpu")),
            (None, Some(c)) => check_cpu(c, online, &self.key("cpu")),
            (None, None) => Ok(online.last().copied().unwrap_or(0)),
        }
    }

    /// The designs in canonical order, each once; default classic for a
    /// command, else [`DEFAULT_DESIGNS`].
    fn designs(&self, subject: &Subject) -> Result<Vec<Design>, ConfigError> {
        let mut designs = list_setting(
            self.flags.design.as_ref(),
            (self.exp.design.as_ref(), self.key("design")),
            (
                "no design",
                "use \"classic\", \"paired\", \"gaps\" or a list of them",
            ),
            parse_design,
        )?
        .unwrap_or_else(|| match subject {
            Subject::Command { .. } => vec![Design::Classic],
            Subject::Loop => DEFAULT_DESIGNS.to_vec(),
        });
        designs.sort_unstable();
        designs.dedup();
        Ok(designs)
    }

    /// The default designs without split where its phase cannot hold a
    /// sample at the lowest rate (a given split design is refused there
    /// instead, by [`Self::phase_ns`]): said, with the fix.
    fn split_where_it_fits(&self, mut designs: Vec<Design>, freqs: &[u64]) -> Vec<Design> {
        let defaulted = self.flags.design.is_none() && self.exp.design.is_none();
        // A phase that does not parse is refused later, by phase_ns.
        if let (true, Ok((phase_ns, _))) = (defaulted, self.given_phase())
            && designs.contains(&Design::Split)
            && let Some((f, shortest)) = split_phase_short(phase_ns, freqs)
        {
            designs.retain(|&d| d != Design::Split);
            tracing::warn!(
                "the split design (the loss outside the gaps) is left out of this sweep: its \
                 {} phases cannot hold a sample at the lowest rate, {f} Hz; give --phase {} \
                 to run it",
                shown_duration(phase_ns),
                shown_duration(shortest)
            );
        }
        designs
    }

    /// The phase length: the flag, the file's, or the default; with where
    /// it came from.
    fn given_phase(&self) -> Result<(u64, Origin), ConfigError> {
        let given = (self.flags.phase_ns, self.exp.phase.as_deref());
        self.duration(given, ("--phase", "phase"), DEFAULT_PHASE_NS)
    }

    /// The paired design's phase length, which must fit one ABBA cycle
    /// (four phases) into a run when that design is planned.
    fn phase_ns(
        &self,
        designs: &[Design],
        rates_hz: &[u64],
        duration_ns: u64,
        sampling: &Sampling,
    ) -> Result<u64, ConfigError> {
        let phased = designs.iter().any(|d| d.has_phases());
        let (phase_ns, origin) = self.given_phase()?;
        // A --phase for a plan without the paired design would be ignored:
        // refused, not silently dropped. (A file's phase stays valid when a
        // flag replaces the file's designs: it belongs to the file's plan.)
        if self.flags.phase_ns.is_some() && !phased {
            let names: Vec<&str> = designs.iter().map(|d| d.as_str()).collect();
            return Err(invalid(
                shown_duration(phase_ns),
                &origin,
                format!(
                    "the phase length is the paired and split designs', and this plan has \
                     neither (designs: {})",
                    names.join(", ")
                ),
                match sampling {
                    Sampling::Profiler { .. } => {
                        "drop --phase: a --profiler sweep runs the gaps design only"
                    }
                    Sampling::Ours => "drop --phase, or add paired to --design",
                },
            ));
        }
        if phased && phase_ns.saturating_mul(4) > duration_ns {
            return Err(invalid(
                shown_duration(phase_ns),
                &origin,
                format!(
                    "the paired design needs at least 4 phases (one ABBA cycle) per run of {}",
                    shown_duration(duration_ns)
                ),
                "give a shorter --phase or a longer --duration",
            ));
        }
        if designs.contains(&Design::Split)
            && let Some((f, shortest)) = split_phase_short(phase_ns, rates_hz)
        {
            return Err(invalid(
                shown_duration(phase_ns),
                &origin,
                format!(
                    "a split phase must hold a sample at the lowest rate, {f} Hz (one every {})",
                    shown_duration(shortest)
                ),
                format!(
                    "give --phase {} or longer, or drop {f} Hz from the split design's rates",
                    shown_duration(shortest)
                ),
            ));
        }
        Ok(phase_ns)
    }

    /// Where a setting came from, for the refusal of a long plan:
    /// `--flag`, the file's key, or the default (named by its flag).
    fn origin_text(&self, flag: bool, file: bool, name: &'static str, key: &'static str) -> String {
        match (flag, file) {
            (true, _) => name.to_owned(),
            (false, true) => self.key(key).to_string(),
            (false, false) => format!("default; {name}"),
        }
    }

    /// The limit on the planned sweep time and where it came from.
    fn max_sweep(&self) -> Result<(u64, String), ConfigError> {
        let given = (self.flags.max_sweep_ns, self.exp.max_sweep_time.as_deref());
        let names = ("--max-sweep-time", "max_sweep_time");
        let (ns, origin) = self.duration(given, names, DEFAULT_MAX_SWEEP_NS)?;
        Ok(match given {
            (None, None) => (ns, "the default; --max-sweep-time sets it".to_owned()),
            _ => (ns, origin.to_string()),
        })
    }

    /// The sample contents in the order given, each once; default
    /// perf-default.
    fn samples(&self) -> Result<Vec<SampleContents>, ConfigError> {
        let presets = format!("use {PRESETS}");
        let samples = list_setting(
            self.flags.sample.as_ref(),
            (self.exp.sample.as_ref(), self.key("sample")),
            ("no sample contents", &presets),
            parse_contents,
        )?;
        Ok(dedup_in_order(
            samples.unwrap_or_else(|| vec![SampleContents::DEFAULT]),
        ))
    }

    /// The loop's kinds in the order given, each once; default the loop.
    fn workloads(&self) -> Result<Vec<WorkKind>, ConfigError> {
        let kinds = list_setting(
            self.flags.workload.as_ref(),
            (self.exp.workload.as_ref(), self.key("workload")),
            (
                "no workload kind",
                "use loop, stack:32 or memory:8M, or a list of them",
            ),
            parse_workload,
        )?;
        Ok(dedup_in_order(
            kinds.unwrap_or_else(|| vec![WorkKind::Loop]),
        ))
    }
}

/// Refuses runs too short to measure anything: under [`MIN_RUN_NS`], or
/// holding fewer than [`MIN_SAMPLES_PER_RUN`] samples at the lowest
/// sampling rate. Checked before the phase, which would otherwise be
/// blamed for a run that is simply too short.
fn check_run_length(freqs: &[u64], duration_ns: u64, origin: &Origin) -> Result<(), ConfigError> {
    let shown = shown_duration(duration_ns);
    if duration_ns < MIN_RUN_NS {
        return Err(invalid(
            shown,
            origin,
            format!(
                "a run must last at least {} ms: a shorter one holds too little of the loop \
                 and too few samples to measure",
                MIN_RUN_NS / 1_000_000
            ),
            "give e.g. --duration 8s (the default) or 1s for a quick look",
        ));
    }
    if let Some((lowest, samples)) = too_few_samples(freqs, duration_ns) {
        // Rounded up to 0.1 s, so the duration named is enough.
        let tenths = (u128::from(MIN_SAMPLES_PER_RUN) * 10).div_ceil(u128::from(lowest));
        return Err(invalid(
            shown,
            origin,
            format!(
                "a run at {lowest} Hz would hold about {samples} samples, fewer than the \
                 {MIN_SAMPLES_PER_RUN} a cost per sample needs"
            ),
            format!(
                "give a --duration of at least {}.{} s or a higher lowest frequency",
                tenths / 10,
                tenths % 10
            ),
        ));
    }
    Ok(())
}

/// The split design compares each phase's gaps and samples, so a phase
/// must hold at least one sample period at the lowest rate: where a phase
/// of `phase_ns` cannot, that rate and the shortest phase (whole us) that
/// would.
fn split_phase_short(phase_ns: u64, freqs: &[u64]) -> Option<(u64, u64)> {
    let f = freqs.iter().copied().filter(|&f| f > 0).min()?;
    (u128::from(phase_ns) * u128::from(f) < 1_000_000_000)
        .then(|| (f, 1_000_000_000u64.div_ceil(f).div_ceil(1000) * 1000))
}

impl SweepOptions {
    /// Resolves flags over an experiment file over defaults and checks
    /// every value known before anything runs. `online` is this host's
    /// online CPUs (`sampler::online_cpus`, the list the sampler opens its
    /// events on); `default_seed` is used when neither flag nor file sets
    /// a seed. [`Resolved::finish`] gives the options.
    pub fn resolve(
        flags: &FlagSettings,
        file: Option<(&ExperimentFile, &Path)>,
        online: &[u32],
        default_seed: u64,
    ) -> Result<Resolved, ConfigError> {
        let empty = ExperimentFile::default();
        let (exp, path) = file.map_or((&empty, None), |(e, p)| (e, Some(p)));
        let src = Sources { flags, exp, path };

        let rates_hz = src.rates()?;
        let subject = match resolve_command(&src)? {
            Some(argv) => {
                refuse_with_command(&src)?;
                let warmup = resolve_warmup(&src, true)?;
                Subject::Command { argv, warmup }
            }
            None => {
                resolve_warmup(&src, false)?;
                Subject::Loop
            }
        };
        let sampling = match (resolve_profiler(&src)?, &subject) {
            (Some(template), Subject::Loop) => {
                refuse_with_profiler(&src)?;
                Sampling::Profiler { template }
            }
            // The command's checks hold: whole runs (classic) only.
            (Some(template), Subject::Command { .. }) => Sampling::Profiler { template },
            (None, _) => Sampling::Ours,
        };
        // A command's run length is its warm-up runs' (`Resolved::finish`).
        let duration_ns = match subject {
            Subject::Loop => src.run_length(&rates_hz)?,
            Subject::Command { .. } => 0,
        };
        let reps = src.given(flags.reps, exp.reps, "reps", check_reps)?;
        let cpu = src.cpu(online)?;
        let event = src.given(flags.event, exp.event.as_deref(), "event", parse_event)?;
        let scope = src.given(flags.scope, exp.scope.as_deref(), "scope", parse_scope)?;
        let designs = match (&subject, &sampling) {
            (Subject::Loop, Sampling::Profiler { .. }) => vec![Design::Gaps],
            _ => src.split_where_it_fits(src.designs(&subject)?, &rates_hz),
        };
        let phase_ns = src.phase_ns(&designs, &rates_hz, duration_ns, &sampling)?;
        let (max_sweep_ns, limit_origin) = src.max_sweep()?;
        let workloads = match subject {
            Subject::Loop => src.workloads()?,
            Subject::Command { .. } => vec![WorkKind::Command],
        };
        let opts = SweepOptions {
            rates_hz,
            duration_ns,
            reps: reps.unwrap_or(DEFAULT_REPS),
            cpu,
            // The sweep falls back to cpu-clock without a PMU, and says so.
            event: event.unwrap_or(EventKind::Cycles),
            scope: scope.unwrap_or(ScopeName::System),
            designs,
            phase_ns,
            seed: flags.seed.or(exp.seed).unwrap_or(default_seed),
            // A profiler's handler is not ours to trace: no util runs.
            util: matches!(sampling, Sampling::Ours) && !flags.no_util && exp.util.unwrap_or(true),
            contents: src.samples()?,
            workloads,
            subject,
            sampling,
            max_sweep_ns,
            experiment: path.map(Path::to_path_buf),
            description: exp.description.clone(),
            budget_pct: None,
        };
        let origins = SweepTimeOrigins {
            duration: src.origin_text(
                flags.duration_ns.is_some(),
                exp.duration.is_some(),
                "--duration",
                "duration",
            ),
            reps: src.origin_text(flags.reps.is_some(), exp.reps.is_some(), "--reps", "reps"),
            limit: limit_origin,
        };
        // The limit on the sweep's time, checked once the run length is
        // known: the loop's now, a command's after its warm-up (`finish`).
        if let Subject::Loop = opts.subject {
            check_sweep_time(&opts, &origins)?;
        }
        Ok(Resolved {
            opts,
            checks: Some(origins),
        })
    }
}

/// Where the run length, the repetitions and the limit on a sweep's
/// planned time came from, for the refusal of a long plan.
#[derive(Debug)]
struct SweepTimeOrigins {
    duration: String,
    reps: String,
    limit: String,
}

/// Options resolved and checked but for what only a run tells: a
/// command's run length, which its warm-up runs measure. [`Self::finish`]
/// gives them, checked, once; nothing changes them after.
#[derive(Debug)]
pub struct Resolved {
    opts: SweepOptions,
    /// None for a resumed sweep's recorded options (checked when recorded).
    checks: Option<SweepTimeOrigins>,
}

impl Resolved {
    /// A resumed sweep's recorded options, as they are.
    pub fn recorded(opts: SweepOptions) -> Self {
        Resolved { opts, checks: None }
    }

    /// With the loss budget a `driver check` judges against.
    pub fn with_budget(mut self, budget_pct: Option<BudgetPct>) -> Self {
        self.opts.budget_pct = budget_pct;
        self
    }

    /// The options so far (a command's run length not yet known).
    pub fn options(&self) -> &SweepOptions {
        &self.opts
    }

    /// The options, final. `walls`: the wall times of a command's warm-up
    /// runs, ns, which set its run length (twice the longest) and must each
    /// hold [`super::MIN_SAMPLES_PER_RUN`] samples at the lowest rate, as a
    /// `--duration` must; its plan is then checked against the limit on a
    /// sweep's time, as the loop's was in `resolve`. A resumed sweep's
    /// options stay as recorded.
    pub fn finish(self, walls: Option<&[u64]>) -> Result<SweepOptions, ConfigError> {
        let Resolved { mut opts, checks } = self;
        let Some(mut origins) = checks else {
            return Ok(opts);
        };
        if let (Subject::Command { argv, .. }, Some(walls)) = (&opts.subject, walls) {
            refuse_short_command(argv, walls, &opts.rates_hz)?;
            opts.duration_ns = expected_run_ns(walls);
            origins.duration = "twice the command's longest warm-up run".to_owned();
            origins.reps = "--reps".to_owned();
            check_sweep_time(&opts, &origins)?;
        }
        Ok(opts)
    }
}

/// A command whose runs are too short to hold [`MIN_SAMPLES_PER_RUN`]
/// samples at the lowest rate (its shortest warm-up run): refused before
/// anything is measured, as a `--duration` that short is. A 1 ms command at
/// 100 Hz holds no sample, and its per-sample cost is noise.
fn refuse_short_command(argv: &[String], walls: &[u64], rates: &[u64]) -> Result<(), ConfigError> {
    let Some(&shortest) = walls.iter().min() else {
        return Ok(());
    };
    let Some((lowest, samples)) = too_few_samples(rates, shortest) else {
        return Ok(());
    };
    let need_ms = (u128::from(MIN_SAMPLES_PER_RUN) * 1000).div_ceil(u128::from(lowest));
    Err(ConfigError::ShortCommand(format!(
        "--command {}: a run takes {:.1} ms (its shortest warm-up run), so at {lowest} Hz it holds about \
         {samples} samples, fewer than the {MIN_SAMPLES_PER_RUN} a cost per sample needs; give \
         work that runs for at least {need_ms} ms (a larger input, or a loop in a shell), or \
         higher frequencies",
        shell_words::join(argv),
        shortest as f64 / 1e6,
    )))
}

/// What a command's measured run is expected to last, from its warm-up:
/// twice the longest warm-up run (at least 100 ms). Sizes the sampler's
/// rings.
pub fn expected_run_ns(warmup_walls_ns: &[u64]) -> u64 {
    warmup_walls_ns
        .iter()
        .max()
        .copied()
        .unwrap_or(0)
        .saturating_mul(2)
        .max(100_000_000)
}

/// Refuses `opts` when its plan's runs take longer than
/// `opts.max_sweep_ns` ([`ConfigError::TooLong`], naming the run length and
/// repetitions with where each came from, the block's make-up and where
/// the limit came from).
fn check_sweep_time(opts: &SweepOptions, origins: &SweepTimeOrigins) -> Result<(), ConfigError> {
    use crate::block::{block_text, plan, planned_loop_ns};
    let runs = plan(opts.block_spec(), 1, 0)
        .len()
        .saturating_mul(usize::try_from(opts.reps).unwrap_or(usize::MAX));
    let planned_ns = planned_loop_ns(runs, opts.duration_ns);
    if planned_ns <= u128::from(opts.max_sweep_ns) {
        return Ok(());
    }
    let per_block = runs / usize::try_from(opts.reps.max(1)).unwrap_or(1);
    let settings = format!(
        "{runs} runs of {} ({}): {} blocks ({}) of {per_block}, each {}",
        workload::duration::format_long_ns(u128::from(opts.duration_ns)),
        origins.duration,
        opts.reps,
        origins.reps,
        block_text(opts.block_spec()),
    );
    // The smallest whole number of hours that holds the plan, when a
    // duration can say it (u64 nanoseconds: up to ~5.1 million hours).
    let hour = 3_600_000_000_000u128;
    let hours = planned_ns.div_ceil(hour);
    let lift = if hours.saturating_mul(hour) <= u128::from(u64::MAX) {
        format!(", or lift the limit with --max-sweep-time {hours}h")
    } else {
        " (no --max-sweep-time can lift it: the largest is about 5 million hours)".to_owned()
    };
    Err(ConfigError::TooLong {
        planned_ns,
        limit_ns: opts.max_sweep_ns,
        limit_origin: origins.limit.clone(),
        settings,
        lift,
    })
}

/// A run or phase length as it is accepted back ("10s", "250ms", "1us").
fn shown_duration(ns: u64) -> String {
    workload::duration::format_duration(std::time::Duration::from_nanos(ns))
}
