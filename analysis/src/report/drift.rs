//! The report's section "the cost per sample over the sweep" (its table is
//! `report/cost_by_run.csv`, `RunCost`): each gaps run's cost in sweep
//! order, how much it moved, and for which conditions the answer holds.

use std::fmt::Write as _;

use crate::percost::{CostDrift, PerSample};

/// The drift in one sentence, for the summary.
pub fn key_line(d: &CostDrift) -> String {
    format!(
        "Cost per sample during the sweep ({:.0} min, {} gaps runs): each run between {:+.0}% and {:+.0}% of its rate's mean{}; {}. The recommendations use the 95% prediction interval over runs, so they hold for a run as costly as these, not only for the mean.",
        d.span_s / 60.0,
        d.runs,
        d.low_pct,
        d.high_pct,
        d.trend_pct_per_h.map_or(String::new(), |t| format!(
            ", trend {:+.1} %/h [{:+.1}, {:+.1}]",
            t.value, t.lo, t.hi
        )),
        if d.moved() {
            "the cost MOVED while the sweep ran"
        } else {
            "no drift resolved"
        }
    )
}

/// The section, Markdown.
pub fn render(ps: &PerSample) -> String {
    let mut s = String::new();
    let Some(d) = &ps.drift else {
        return s;
    };
    let _ = writeln!(
        s,
        "## The cost per sample over the sweep\n\nEach gaps run's cost against its rate's mean, in sweep order: cost_by_run.csv, cost_over_time.svg; the drift is in the summary.\n"
    );
    let blocks: Vec<String> = d
        .by_block_pct
        .iter()
        .map(|(b, v)| format!("block {b}: {v:+.1}%"))
        .collect();
    if !blocks.is_empty() {
        let _ = writeln!(s, "- Mean by block: {}.", blocks.join(", "));
    }
    let _ = writeln!(
        s,
        "- Valid for the conditions measured: this host, this kernel and the host's state while the sweep ran (the manifest's started_at). On a shared host the cost of a sample can change from day to day, and nothing inside one sweep can see that. To re-check, run `driver sweep --freqs <the recommended rate> --design gaps --reps 5` and compare with `analysis compare <this dir> <new dir>`; if the cost moved beyond this sweep's prediction interval, run the full sweep again.\n"
    );
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {

    #[test]
    fn the_empty_header_is_the_row_type() {
        let c = crate::percost::RunCost {
            run_id: 1,
            block: 0,
            freq_hz: 100,
            started_at_ns: 5,
            rate_hz: 100.0,
            direct_ns: 1.0,
            above_cap_ns: 0.0,
            long_ns: 0.0,
            after_effect_ns: 0.5,
            after_effect_bounded: false,
            total_ns: 1.5,
        };
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(&c).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(
            text.lines().next().unwrap(),
            results_format::header_of::<crate::percost::RunCost>().join(",")
        );
    }
}
