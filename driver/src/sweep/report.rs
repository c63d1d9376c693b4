//! A sweep's end: what it says on stderr and stdout, and its report
//! (`analysis::report_dir`), after `run`; an interrupted sweep says how to
//! finish it.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use super::run::Ran;
use crate::exec::ExecSummary;

/// How the sweep ends: whether to report, and what to print.
pub(crate) struct Ending {
    /// Whether to write the analysis report.
    pub report: bool,
    /// Whether `--raise-max-rate` was given: the resume command needs it
    /// again (it is an action, not a recorded setting).
    pub raise_max_rate: bool,
    /// For `driver check`: no answer box, no directory on stdout, no
    /// resume offered.
    pub quiet: bool,
}

/// Says how the runs ended and writes the report; prints the results
/// directory on stdout (unless quiet). The exit status: 0, 1 (runs failed
/// or a setting not restored), [`REPORT_FAILED`], 130 (interrupted).
pub(crate) fn report(ran: Ran, end: &Ending) -> ExitCode {
    let Ran {
        root,
        summary,
        restore_errors,
        interrupt,
        lock,
    } = ran;
    if summary.interrupted {
        let code = if end.quiet {
            eprintln!(
                "stopped ({}) after {} runs in {}: nothing was judged",
                summary.stop_reason.as_deref().unwrap_or("interrupted"),
                summary.recorded,
                root.display()
            );
            stopped_code(&interrupt)
        } else {
            stopped(&summary, &root, end.raise_max_rate, &interrupt)
        };
        drop(lock);
        return code;
    }
    tracing::info!(
        "sweep done: {} runs, {} failed, {} noisy",
        summary.recorded,
        summary.failed,
        summary.noisy
    );
    let mut code = if restore_errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    if end.report {
        match report_step(&root, analysis::report_dir) {
            Ok(answer) => {
                // The answer first, on stderr: stdout keeps the directory.
                for line in answer.iter().filter(|_| !end.quiet) {
                    eprintln!("{line}");
                }
                tracing::info!("report in {}", root.join("report").display());
            }
            Err(why) => {
                tracing::error!("{why}");
                code = ExitCode::from(REPORT_FAILED);
            }
        }
    }
    drop(lock);
    if !end.quiet {
        println!("{}", root.display());
    }
    code
}

/// Exit status of a sweep whose runs are all recorded and whose settings
/// are restored but whose report failed (documented in `driver sweep
/// --help`): the result set is complete, and `analysis report DIR` makes
/// the report again.
pub const REPORT_FAILED: u8 = 4;

/// An interrupted sweep: how to finish it, the directory on stdout, and
/// exit status 130 after Ctrl-C (1 after too many failed runs).
fn stopped(
    summary: &ExecSummary,
    root: &Path,
    raise_max_rate: bool,
    interrupt: &AtomicBool,
) -> ExitCode {
    eprintln!(
        "sweep stopped ({}): {} runs recorded in {}; finish it with:\n  {}",
        summary.stop_reason.as_deref().unwrap_or("interrupted"),
        summary.recorded,
        root.display(),
        resume_command(root, raise_max_rate)
    );
    println!("{}", root.display());
    stopped_code(interrupt)
}

/// 130 after Ctrl-C or SIGTERM, 1 after too many failed runs.
fn stopped_code(interrupt: &AtomicBool) -> ExitCode {
    if interrupt.load(Ordering::SeqCst) {
        ExitCode::from(130)
    } else {
        ExitCode::FAILURE
    }
}

/// The analysis report through `make` (`analysis::report_dir`):
/// the answer box's lines, or what went wrong (an error, or a panic caught
/// here, at the boundary: the measurements are never lost to a bug in the
/// report) with the command that makes the report again.
fn report_step(
    root: &Path,
    make: impl FnOnce(&Path) -> Result<analysis::report::Written, analysis::AnalysisError>,
) -> Result<Vec<String>, String> {
    let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| make(root)));
    let why = match made {
        Ok(Ok(written)) => return Ok(written.answer),
        Ok(Err(e)) => results_format::message_chain(&e),
        Err(panic) => format!(
            "the analysis panicked ({}): a bug, please report it with this results directory",
            results_format::panic_message(panic.as_ref())
        ),
    };
    Err(format!(
        "the report failed: {why}. Every run is recorded in {dir} (complete); make the report \
         again with `analysis report {dir}` (in a checkout: `cargo run --release -p analysis -- \
         report {dir}`)",
        dir = root.display()
    ))
}

/// The command that finishes a stopped sweep: `--resume DIR`, and the one
/// action flag it needs again (the settings are recorded in the manifest).
fn resume_command(root: &Path, raise_max_rate: bool) -> String {
    let mut command = format!("driver sweep --resume {}", root.display());
    if raise_max_rate {
        command.push_str(" --raise-max-rate");
    }
    command
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A report step that panics (as statrs did on a starved 100 kHz set)
    /// or fails leaves the sweep's outcome to the caller: the error names
    /// the cause, the results directory and the command that re-makes the
    /// report; a report that works gives its answer box.
    #[test]
    fn a_failing_report_step_says_how_to_make_it_again() {
        let root = Path::new("results/20261126T2110Z-vm");
        let e = report_step(root, |_| {
            panic!("called `Result::unwrap()` on an `Err` value")
        })
        .unwrap_err();
        assert!(e.contains("the analysis panicked"), "{e}");
        assert!(e.contains("`Result::unwrap()`"), "{e}");
        assert!(
            e.contains("`analysis report results/20261126T2110Z-vm`"),
            "{e}"
        );
        let e = report_step(root, |p| {
            Err(analysis::AnalysisError::NoSuchDirectory {
                path: p.to_path_buf(),
            })
        })
        .unwrap_err();
        assert!(
            e.starts_with("the report failed: ") && e.contains("complete"),
            "{e}"
        );
        let ok = report_step(root, |p| {
            Ok(analysis::report::Written {
                dir: p.join("report"),
                answer: vec!["+- box -+".into()],
            })
        });
        assert_eq!(ok, Ok(vec!["+- box -+".to_string()]));
    }

    #[test]
    fn the_resume_command_keeps_raise_max_rate() {
        let root = Path::new("results/x");
        assert_eq!(
            resume_command(root, false),
            "driver sweep --resume results/x"
        );
        assert_eq!(
            resume_command(root, true),
            "driver sweep --resume results/x --raise-max-rate"
        );
    }
}
