//! The analysis crate's integration tests, as modules of one test binary:
//! polars is linked once, not once per file (as ripgrep's tests/ are).
//! `cargo test --release -p analysis --test all MODULE::` runs one file's
//! tests.

mod committed;
mod common;
mod corrupt;
mod degenerate;
mod fixtures;
mod fleet;
mod latency_cli;
mod loss_model;
mod percost;
mod plot;
mod profiler;
mod props;
mod report;
mod report_docs;
mod report_html;
mod simulate;
