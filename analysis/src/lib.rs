//! Results directory -> utilisation and loss tables, fitted factors, plots,
//! report, safe-rate recommendation and cross-host comparison.
//!
//! Layering (after criterion): `stats` and `fit` (pure numerics) ->
//! the `results-format` crate (every file's type, reader and writer) ->
//! `load` / `events` / `percost_load` (reading a result set) ->
//! `tables`, `percost` (analysis) ->
//! `report`, `recommend`, `compare` (outputs) -> `plots`.

#![forbid(unsafe_code)]

pub mod aftereffect;
pub mod answer;
pub mod command;
mod command_report;
pub mod compare;
pub mod contents;
mod contents_report;
mod drift_report;
pub mod error;
pub mod events;
pub mod fit;
mod host_look_report;
pub mod load;
pub mod percost;
pub mod percost_load;
mod percost_report;
pub mod plot;
pub mod recommend;
pub mod reference;
pub mod report;
pub mod stats;
pub mod tables;
mod warnings;

pub use error::AnalysisError;
pub use report::write_report;
pub use results_format::events::write_intervals_parquet;
