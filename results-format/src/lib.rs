//! The results directory's format (docs/results-format.md), written down
//! once: a type for every file, one writer and one reader each, and the
//! words that appear in them as enums. The driver writes with it, the
//! analysis reads with it.
//!
//! | file | type | writer | reader |
//! |---|---|---|---|
//! | `manifest.json` | [`Manifest`] | [`write_manifest`] | [`read_manifest`] |
//! | `runs.csv` | [`RunRow`] | [`ResultsDir::append_run`] | [`read_runs`] |
//! | `phases.csv` | [`PhaseRow`] | [`ResultsDir::append_phases`] | [`read_phases`] |
//! | `events/run-<id>.parquet` | [`events::EVENT_COLUMNS`] | [`events::write_intervals_parquet`] | [`events::read_intervals`] |
//! | `timeline.csv`, `recovery.csv` | [`timeline::TimelineRow`], [`timeline::RecoveryRow`] | [`ResultsDir::append_rows`] | [`read_csv_rows`] |
//! | `gaps/run-<id>.parquet` | [`timeline::Gap`] | [`timeline::write_gaps_parquet`] | [`timeline::read_gaps_parquet`] |
//! | `samples/run-<id>.parquet` | (time_ns, episode) | [`timeline::write_samples_parquet`] | [`timeline::read_samples_parquet`] |
//! | `summary.parquet` | [`summary::SummaryRow`] | [`summary::write_summary`] | [`summary::read_summary`] |
//!
//! A test (tests/docs.rs) checks docs/results-format.md against these
//! types: every column and key documented, nothing documented that is not
//! written.

#![forbid(unsafe_code)]

pub mod answer;
pub mod compact;
mod dir;
pub mod doc_tables;
mod error;
pub mod events;
pub mod history;
mod manifest;
mod parquet;
pub mod phase_check;
mod runs;
pub mod summary;
pub mod textfile;
pub mod thinning;
pub mod timeline;
mod vocab;

pub use dir::{COMMAND_DIR_VAR, ResultsDir, command_dir, events_path, workload_path};
pub use error::{FormatError, message_chain, panic_message};
pub use manifest::{
    HostLook, MANIFEST_JSON, Manifest, SettingChange, read_manifest, write_atomic, write_manifest,
};
pub use parquet::write_atomic as write_parquet_atomic;
pub use runs::{
    LEGACY_SAMPLE, LEGACY_WORKLOAD, PHASE_REQUIRED, PHASES_CSV, PhaseRow, RUN_REQUIRED, RUNS_CSV,
    RunRow, header_of, read_csv_rows, read_phases, read_runs,
};
pub use vocab::{Design, EventKind, HandlerSource, RunKind, RunStatus, ScopeName, Status};

/// Version of the on-disk format. Readers refuse a manifest of another
/// version; a change that old readers would misread bumps it.
pub const FORMAT_VERSION: u32 = 1;
