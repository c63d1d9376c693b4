//! What the pipeline finds in a result set: [`Findings`], plain data in
//! parts named for what they hold. `pipeline` computes every field; the
//! presentation (`report`, `answer`, `json_answer`, `compare`) and the
//! summary only read them.

use results_format::timeline::RecoveryRow;

use crate::aftereffect::AfterRow;
use crate::contents::{ContentsRow, ThrottleLimits, ThrottlePrediction};
use crate::load::{ExcludedRun, RawRemoved};
use crate::percost::PerSample;
use crate::recommend::model::LossModel;
use crate::recommend::recommendation::Budgeted;
use crate::subject::command::CommandRow;
use crate::subject::profiler::{ProfilerRecommendation, ProfilerTable};
use crate::tables::{RunPhaseFaults, Tables};
use crate::warnings::warning::Warning;

/// One configuration's findings (the primary's, with the others in
/// [`Findings::other_configs`]).
#[derive(Debug)]
pub struct Findings {
    /// Tables 1 and 2, the tracepoint cost and the fits.
    pub tables: Tables,
    /// The gaps design's cost per sample and speed recovery.
    pub gaps: GapsCost,
    /// The tables by sample contents (filled in the primary only).
    pub contents: ContentsTables,
    /// A `--command` or `--profiler` set's own table (filled in the
    /// primary only).
    pub subject: SubjectTables,
    /// What the data lack: warnings, runs and phases left out, raw folders
    /// removed.
    pub quality: Quality,
    /// The answers at the report budgets.
    pub budgets: Budgets,
    /// Each other configuration's own findings, by name (the summary's
    /// rows and budget answers per configuration); empty in those.
    pub other_configs: Vec<(String, Findings)>,
}

/// The gaps design's findings (empty without gaps runs).
#[derive(Debug, Default)]
pub struct GapsCost {
    /// The table "what one sample costs the application".
    pub per_sample: Option<PerSample>,
    /// The gaps runs' speed-recovery histograms (for the plot).
    pub recovery: Vec<RecoveryRow>,
    /// What sampling adds to a request's latency (None without gaps runs).
    pub latency: Option<crate::latency::table::LatencyTable>,
    /// The split design's loss in the gaps and outside them (empty
    /// without split runs).
    pub split: crate::split::SplitTable,
}

/// The tables that set the sample contents side by side.
#[derive(Debug, Default)]
pub struct ContentsTables {
    /// The sample contents of the sweep, primary first: every other table
    /// is computed on the primary's runs (and the 0 Hz runs).
    pub names: Vec<String>,
    /// What a sample costs by contents and rate (every contents).
    pub rows: Vec<ContentsRow>,
    /// The kernel's throttle predicted per contents (None: the manifest
    /// lacks the host's limits).
    pub throttle: Option<(ThrottleLimits, Vec<ThrottlePrediction>)>,
    /// The after-effect from throughput (paired loss - gaps direct cost),
    /// by configuration and rate.
    pub after_rows: Vec<AfterRow>,
}

/// What a set measured when it is not our sampler on the loop.
#[derive(Debug, Default)]
pub struct SubjectTables {
    /// A `--profiler` set's table (None for our own sampler's sets).
    pub profiler: Option<ProfilerTable>,
    /// A `--command` set's table, one row per configuration and rate
    /// (empty for the built-in loop's sets).
    pub command: Vec<CommandRow>,
}

/// The answer at each report budget ([`crate::recommend::BUDGETS_PCT`]),
/// worked out once for the answer box, the budget plot, report.md, the
/// summary and `compare`.
#[derive(Debug, Default)]
pub struct Budgets {
    /// Our sampler's ([`crate::recommend::recommend`]); empty for a
    /// `--profiler` set.
    pub sampler: Vec<Budgeted>,
    /// A `--profiler` set's, from its table
    /// ([`crate::subject::profiler::recommend`]); empty otherwise.
    pub profiler: Vec<ProfilerRecommendation>,
    /// The loss model the sampler's answers rest on (None without a gaps
    /// term): its curve is the budget plot's, and the answer box and
    /// report.md say its outside term.
    pub model: Option<LossModel>,
    /// What sampling at the 1 % budget's rate adds to the p99 of a 1 ms
    /// request (None without gaps runs that resolve it).
    pub latency: Option<crate::latency::at_rate::LatencyLine>,
}

/// The data's quality: what was left out or doubtful, and why.
#[derive(Debug, Default)]
pub struct Quality {
    /// Every warning, typed until the report writes its line.
    pub warnings: Vec<Warning>,
    /// Runs whose files could not be read: left out of every table.
    pub excluded: Vec<ExcludedRun>,
    /// The raw folders removed on purpose (their tables are skipped).
    pub raw_removed: RawRemoved,
    /// The paired runs with phases the controller could not keep (or
    /// phases.csv rows that are nonsense), and the ABBA groups left out
    /// with them; empty when every phase was kept.
    pub phase_faults: Vec<RunPhaseFaults>,
}

impl Findings {
    /// The findings of `tables` alone, every other part empty (the
    /// pipeline fills them).
    pub fn of_tables(tables: Tables, phase_faults: Vec<RunPhaseFaults>) -> Self {
        Self {
            tables,
            gaps: GapsCost::default(),
            contents: ContentsTables::default(),
            subject: SubjectTables::default(),
            quality: Quality {
                phase_faults,
                ..Quality::default()
            },
            budgets: Budgets::default(),
            other_configs: Vec::new(),
        }
    }
}
