//! The report's section on the user's own program (`--command`); its
//! table is command.csv (`CommandRow`).

use std::fmt::Write as _;

use crate::columns::markdown_table;
use crate::format::opt_est;
use crate::subject::command::{CommandRow, OUTLIER_MIN_RUNS, OUTLIER_Z};

/// The markdown section (empty without command runs).
pub fn render(rows: &[CommandRow], command: Option<&str>, profiler: Option<&str>) -> String {
    let mut s = String::new();
    if rows.is_empty() {
        return s;
    }
    let _ = writeln!(s, "## Your command: loss from whole runs\n");
    if let Some(c) = command {
        let _ = writeln!(
            s,
            "Command: `{c}`, pinned to the measured CPU, stdout discarded.\n"
        );
    }
    if let Some(p) = profiler {
        let _ = writeln!(
            s,
            "Sampled by your profiler `{p}` (`{{freq}}` each rate, `{{cpu}}` the measured CPU), started 1 s before each run above 0 Hz and stopped after it, not by our sampler: we do not see its samples, so the samples and cost columns are empty and the loss is what the profiler costs the command. Its own CPU time and peak RSS are in runs.csv (`profiler_*`).\n"
        );
    }
    let _ = writeln!(
        s,
        "This loss comes from whole runs of the command (its wall time per run, from just before the fork to its exit), not from a per-interrupt measurement: each randomised block ran the command once at 0 Hz and once per configuration, after unmeasured warm-up runs. Loss = 1 - exp(-mean d) with d = ln(wall at F / wall at 0 Hz) in the same block, and its 95% t interval over blocks, so drift between blocks cancels and the interval is as wide as the run-to-run noise of the command on this host. Cost per sample = mean over blocks of (wall at F - wall at 0 Hz) / samples. Outliers: runs whose modified z-score (0.6745 (x - median) / MAD) exceeds {OUTLIER_Z} among their configuration's runs (at least {OUTLIER_MIN_RUNS}); they are kept in the estimates and named here.\n"
    );
    let header = "contents | freq_hz | runs (failed) | achieved_hz | samples/run | wall s: mean +- sd | median [min, max] | loss % [95% CI] | cost ns/sample [95% CI] | outliers (run ids)";
    s += &markdown_table(header, rows.iter().map(|r| {
        format!(
            "{} | {} | {} ({}) | {} | {:.0} | {:.4} +- {:.4} | {:.4} [{:.4}, {:.4}] | {} | {} | {}",
            if r.sample.is_empty() { "-" } else { &r.sample },
            r.freq_hz,
            r.runs,
            r.failed,
            if r.achieved_hz.is_finite() {
                format!("{:.0}", r.achieved_hz)
            } else {
                "-".to_string()
            },
            r.samples_per_run,
            r.wall_mean_s,
            r.wall_sd_s,
            r.wall_median_s,
            r.wall_min_s,
            r.wall_max_s,
            opt_est(r.loss_pct.as_ref(), 3),
            opt_est(r.cost_per_sample_ns.as_ref(), 0),
            if r.outliers.is_empty() {
                "none".to_string()
            } else {
                r.outliers
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        )
    }));
    s.push('\n');
    s
}
