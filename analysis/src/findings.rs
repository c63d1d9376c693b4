//! What the analysis measured in a result set: [`Measured`], plain data in
//! parts named for what they hold (the compute layer's tables, before any
//! judgement). `pipeline` fills it and adds what is judged of it
//! (`pipeline::Findings`: warnings, the answers at the report budgets).

use results_format::timeline::RecoveryRow;

use crate::aftereffect::AfterRow;
use crate::contents::{ContentsRow, ThrottleLimits, ThrottlePrediction};
use crate::percost::PerSample;
use crate::subject::command::CommandRow;
use crate::subject::profiler::ProfilerTable;
use crate::tables::{RunPhaseFaults, Tables};

/// One configuration's measured tables: what the warnings and the loss
/// model read.
#[derive(Debug, Default)]
pub struct Measured {
    /// Tables 1 and 2, the tracepoint cost and the fits.
    pub tables: Tables,
    /// The gaps design's cost per sample and speed recovery.
    pub gaps: GapsCost,
    /// The tables by sample contents (filled in the primary only).
    pub contents: ContentsTables,
    /// A `--command` or `--profiler` set's own table (filled in the
    /// primary only).
    pub subject: SubjectTables,
    /// The paired runs with phases the controller could not keep (or
    /// phases.csv rows that are nonsense), and the ABBA groups left out
    /// with them; empty when every phase was kept.
    pub phase_faults: Vec<RunPhaseFaults>,
}

impl Measured {
    /// The findings of `tables` alone, every other part empty (the
    /// pipeline fills them).
    pub fn of_tables(tables: Tables, phase_faults: Vec<RunPhaseFaults>) -> Self {
        Self {
            tables,
            phase_faults,
            ..Self::default()
        }
    }
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
