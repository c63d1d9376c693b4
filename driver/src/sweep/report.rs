//! A sweep's end: what it says on stderr and stdout, and its report
//! (`analysis::report_dir`), after `run`; an interrupted sweep says how to
//! finish it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use results_format::summary::SummaryRow;
use std::sync::atomic::{AtomicBool, Ordering};

use super::run::Ran;
use crate::exec::ExecSummary;

/// Says how the runs ended and writes the report (unless `report` is
/// false); prints the results directory on stdout. `raise_max_rate`: the
/// resume command needs it again (an action, not a recorded setting). The
/// exit status: 0, 1 (runs failed or a setting not restored),
/// [`REPORT_FAILED`], 130 (interrupted).
pub(crate) fn report(ran: Ran, report: bool, raise_max_rate: bool) -> ExitCode {
    let (root, summary) = (&ran.root, &ran.summary);
    if summary.interrupted {
        let code = stopped(summary, root, raise_max_rate, &ran.interrupt);
        drop(ran.lock);
        return code;
    }
    log_done(summary);
    let mut code = if ran.restore_errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    if report {
        match report_step(root, |d| analysis::report_dir(d).map(|w| w.answer)) {
            Ok(answer) => {
                // The answer first, on stderr: stdout keeps the directory.
                for line in answer {
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
    drop(ran.lock);
    println!("{}", root.display());
    code
}

/// A check's runs, reported: the summary rows the analysis made in
/// process, for the check's verdict.
pub(crate) struct Summarised {
    /// The result set.
    pub root: PathBuf,
    /// The summary rows (also in summary.parquet), or why there are none.
    pub rows: Result<Vec<SummaryRow>, String>,
    /// Every run recorded, every setting restored and the report made.
    pub clean: bool,
}

/// `driver check`'s end of a sweep: the report and its summary rows, with
/// no answer box, no directory on stdout and no resume offered. `Err(130)`
/// when interrupted (Ctrl-C or SIGTERM): nothing is judged.
pub(crate) fn summarise(ran: Ran) -> Result<Summarised, ExitCode> {
    let (root, summary) = (&ran.root, &ran.summary);
    let reason = summary.stop_reason.as_deref().unwrap_or("interrupted");
    if summary.interrupted {
        eprintln!(
            "stopped ({reason}) after {} runs in {}: nothing was judged",
            summary.recorded,
            root.display()
        );
        if ran.interrupt.load(Ordering::SeqCst) {
            return Err(ExitCode::from(130));
        }
        return Ok(Summarised {
            rows: Err(format!(
                "the runs stopped ({reason}), so no report was made; `analysis report {}` says more",
                root.display()
            )),
            root: ran.root,
            clean: false,
        });
    }
    log_done(summary);
    let rows = report_step(root, |d| {
        analysis::report_and_summary(d).map(|(_, rows)| rows)
    });
    if let Err(why) = &rows {
        tracing::error!("{why}");
    }
    drop(ran.lock);
    Ok(Summarised {
        clean: ran.restore_errors.is_empty() && rows.is_ok(),
        rows,
        root: ran.root,
    })
}

fn log_done(summary: &ExecSummary) {
    tracing::info!(
        "sweep done: {} runs, {} failed, {} noisy",
        summary.recorded,
        summary.failed,
        summary.noisy
    );
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
    if interrupt.load(Ordering::SeqCst) {
        ExitCode::from(130)
    } else {
        ExitCode::FAILURE
    }
}

/// The analysis report through `make` (`analysis::report_dir` or
/// `report_and_summary`): what it returns, or what went wrong (an error, or a panic caught
/// here, at the boundary: the measurements are never lost to a bug in the
/// report) with the command that makes the report again.
fn report_step<T>(
    root: &Path,
    make: impl FnOnce(&Path) -> Result<T, analysis::AnalysisError>,
) -> Result<T, String> {
    let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| make(root)));
    let why = match made {
        Ok(Ok(made)) => return Ok(made),
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
        let e = report_step(root, |_| -> Result<(), _> {
            panic!("called `Result::unwrap()` on an `Err` value")
        })
        .unwrap_err();
        assert!(e.contains("the analysis panicked"), "{e}");
        assert!(e.contains("`Result::unwrap()`"), "{e}");
        assert!(
            e.contains("`analysis report results/20261126T2110Z-vm`"),
            "{e}"
        );
        let e = report_step(root, |p| -> Result<(), _> {
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
            .map(|w| w.answer)
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
