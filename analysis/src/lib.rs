//! Results directory -> utilisation and loss tables, fitted factors, plots,
//! report, safe-rate recommendation and cross-host comparison.
//!
//! Layering (after criterion): `stats` and `fit` (pure numerics) ->
//! `load` / `events` / `timeline` / `percost_load` (the results format) ->
//! `tables`, `percost` (analysis) ->
//! `report`, `recommend`, `compare` (outputs) -> `plots`.

#![forbid(unsafe_code)]

pub mod aftereffect;
pub mod command;
mod command_report;
pub mod compare;
pub mod contents;
mod contents_report;
pub mod error;
pub mod events;
pub mod fit;
pub mod load;
pub mod parquet;
pub mod percost;
pub mod percost_load;
mod percost_report;
pub mod plot;
mod plots;
pub mod recommend;
pub mod reference;
pub mod report;
pub mod stats;
pub mod tables;
pub mod timeline;
mod warnings;

pub use error::AnalysisError;
pub use events::write_intervals_parquet;
pub use report::write_report;
