//! The report's section "the host before the sweep": what `driver sweep`
//! saw of the measured CPU before its first run (manifest `host_look`).

use std::fmt::Write as _;

use results_format::HostLook;

use crate::format::lines_after;

/// The section, Markdown; empty when the sweep did not look.
pub fn render(look: Option<&HostLook>) -> String {
    let mut s = String::new();
    let Some(h) = look else {
        return s;
    };
    let _ = writeln!(s, "## The host before the sweep\n");
    let _ = writeln!(
        s,
        "A {:.1} s look at CPU {} with nothing sampled (manifest `host_look`), before the first run:\n",
        h.duration_ns as f64 * 1e-9,
        h.cpu
    );
    let _ = writeln!(
        s,
        "- loop speed in {} slices of {:.0} ms: coefficient of variation {:.2} %, slowest / fastest {:.3}; ABBA noise per group of four slices {:.2} % (sd)",
        h.slice_rates.len(),
        h.slice_ns as f64 * 1e-6,
        h.slice_cv_pct,
        h.slice_min_max_ratio,
        h.abba_sd_pct
    );
    let _ = writeln!(
        s,
        "- background episodes: {:.0}/s, excess median {} ns, p99 {} ns, max {} ns; {:.3} % of the time in episodes >= 100 us, {:.3} % in >= 1 ms",
        h.episodes_per_s,
        h.episode_median_ns,
        h.episode_p99_ns,
        h.episode_max_ns,
        h.episode_share_100us_pct,
        h.episode_share_1ms_pct
    );
    let _ = writeln!(s, "- steal: {:.2} % of the look", h.steal_pct);
    let basis = &h.resolvable_basis;
    let resolution = match h.resolvable_loss_pct {
        Some(v) => {
            format!("smallest throughput loss the plan could resolve here: +-{v:.2} pp ({basis})")
        }
        None => format!("throughput resolution: {basis}"),
    };
    let _ = writeln!(s, "- {resolution}");
    lines_after(&mut s, "- ", &h.warnings);
    s.push('\n');
    s
}
