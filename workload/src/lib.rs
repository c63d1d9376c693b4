//! The workload: a fixed-duration counting loop pinned to one CPU, and the
//! host clock calibration (`workload clocks`).

pub mod cli;
