//! What a sweep measures when it is not our sampler on the built-in loop,
//! one module per mode: `command` (the user's program: its warm-up and its
//! runs, `--command`), `profiler` (a real profiler's process: start,
//! settle, stop, its cost from /proc, `--profiler`). The options say which
//! (`config::Subject`); the backend runs them (`backend/user_command_run.rs`,
//! `backend.rs`).

pub mod command;
pub mod profiler;
