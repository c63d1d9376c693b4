//! The workload: a fixed-duration counting loop pinned to one CPU, and the
//! host clock calibration (`workload clocks`).
//!
//! Only `sys` may use unsafe code (mmap, rdtsc, the stop timer, raw clock
//! calls); everything else is safe.

pub mod cli;
pub mod clock;
pub mod clocks;
pub mod counter;
pub mod duration;
pub mod run;
pub mod summary;
mod sys;
pub mod timeline;
pub mod work;
