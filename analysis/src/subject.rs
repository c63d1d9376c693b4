//! What a set measured, when it is not our sampler on the built-in loop:
//! each mode's code in one folder, its table (computed by the pipeline)
//! beside its report section and CSV (formatted by the report).
//! `command`: the user's own program (`--command`); `profiler`: a real
//! profiler in place of our sampler (`--profiler`).

pub mod command;
pub mod profiler;
