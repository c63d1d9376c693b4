//! The paired design's phases left out (Rule::Phases): those the phase
//! controller could not keep, per rate, with the groups they cost each run;
//! and phases.csv rows that are not measurements (bad input), named.

use results_format::phase_check::ExcludedPhase;

use super::{Rule, Warning};
use crate::findings::Measured;
use crate::format::plural;
use crate::tables::RunPhaseFaults;

/// One warning per rate with phases the controller could not keep, and one
/// for nonsense rows; each run with its groups left out.
pub(super) fn phases(a: &Measured) -> Vec<Warning> {
    let by_freq = crate::stats::grouped(a.phase_faults.iter().map(|r| (r.freq_hz, r)));
    let mut out = Vec::new();
    for (freq_hz, runs) in &by_freq {
        // The controller's faults (every recorded run has some fault or a
        // group left out, paired_loss records no other).
        let faults = runs.iter().flat_map(|r| &r.excluded);
        let controller: Vec<&ExcludedPhase> = faults.filter(|e| !e.fault.is_bad_input()).collect();
        let groups: usize = runs.iter().map(|r| r.groups).sum();
        let left: usize = runs.iter().map(|r| r.groups_excluded).sum();
        let per_run = runs.iter().filter(|r| r.groups_excluded > 0).map(|r| {
            (
                r.run_id,
                format!("{} of {} groups left out", r.groups_excluded, r.groups),
            )
        });
        if controller.is_empty() {
            // Only bad-input rows or incomplete groups at this rate: the
            // bad input has its own warning below; an incomplete group is
            // said here.
            if left > runs.iter().map(|r| bad_groups(r)).sum::<usize>() {
                out.push(
                    Warning::new(
                        Rule::Phases,
                        format!(
                            "paired design at {freq_hz} Hz: {left} of {groups} ABBA groups \
                             incomplete or left out; the loss uses the others"
                        ),
                    )
                    .with_values(per_run),
                );
            }
            continue;
        }
        out.push(
            Warning::with_remedy(
                Rule::Phases,
                format!(
                    "paired design at {freq_hz} Hz: the phase controller could not keep {} in {} \
                     ({}), so {left} of {groups} ABBA groups were left out",
                    plural(controller.len(), "phase"),
                    plural(runs.len(), "run"),
                    reasons(&controller),
                ),
                "each phase is in excluded_phases.csv; the loss at that rate uses the kept \
                 groups only; docs/methodology.md (\"Phases the controller could not keep\") \
                 gives the rule and how the driver keeps its timing",
            )
            .with_values(per_run),
        );
    }
    let faults = a.phase_faults.iter().flat_map(|r| &r.excluded);
    let bad: Vec<&ExcludedPhase> = faults.filter(|e| e.fault.is_bad_input()).collect();
    if !bad.is_empty() {
        out.push(
            Warning::with_remedy(
                Rule::Phases,
                format!(
                    "phases.csv: {} not a measurement; their ABBA groups are left out, the \
                     other phases and runs are analysed",
                    if bad.len() == 1 {
                        "1 row is".to_string()
                    } else {
                        format!("{} rows are", bad.len())
                    },
                ),
                "results are never hand-edited: take phases.csv from the sweep again",
            )
            .with_values(
                bad.iter()
                    .map(|e| (e.run_id, format!("phase {}: {}", e.phase, e.fault))),
            ),
        );
    }
    out
}

/// Groups of a run that hold a nonsense row.
fn bad_groups(r: &RunPhaseFaults) -> usize {
    let bad = r.excluded.iter().filter(|e| e.fault.is_bad_input());
    let mut g: Vec<u32> = bad.map(|e| e.phase / 4).collect();
    g.dedup();
    g.len()
}

/// "40 with 0 iterations, 12 of the wrong length, 10 started late".
fn reasons(faults: &[&ExcludedPhase]) -> String {
    let by_code = crate::stats::grouped(faults.iter().map(|e| (e.fault.code(), e)));
    let word = |code: &str| match code {
        "no_iterations" => "with 0 iterations",
        "length" => "not of the planned length",
        "late" => "started late",
        _ => "unreadable",
    };
    let counts: Vec<String> = by_code
        .iter()
        .map(|(code, of)| format!("{} {}", of.len(), word(code)))
        .collect();
    counts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use results_format::phase_check::PhaseFault;

    fn analysis_with(faults: Vec<RunPhaseFaults>) -> Measured {
        let (tables, _) = crate::tables::build_tables(
            &crate::load::ResultSet {
                dir: "x".into(),
                manifest: crate::load::Manifest::default(),
                runs: Vec::new(),
                phases: Vec::new(),
                unrecorded: Default::default(),
            },
            Default::default(),
        );
        Measured::of_tables(tables, faults)
    }

    fn excluded(run_id: u32, phase: u32, fault: PhaseFault) -> ExcludedPhase {
        ExcludedPhase {
            run_id,
            phase,
            fault,
        }
    }

    #[test]
    fn names_the_rate_the_reasons_and_each_runs_groups() {
        let a = analysis_with(vec![
            RunPhaseFaults {
                run_id: 16,
                freq_hz: 100_000,
                groups: 19,
                groups_excluded: 3,
                excluded: vec![
                    excluded(16, 5, PhaseFault::Length { ratio: 28.2 }),
                    excluded(16, 6, PhaseFault::Late { by: 27.0 }),
                    excluded(16, 7, PhaseFault::NoIterations),
                    excluded(16, 8, PhaseFault::NoIterations),
                ],
            },
            RunPhaseFaults {
                run_id: 29,
                freq_hz: 100_000,
                groups: 19,
                groups_excluded: 1,
                excluded: vec![excluded(29, 3, PhaseFault::NoIterations)],
            },
        ]);
        let w = phases(&a);
        assert_eq!(w.len(), 1, "{w:?}");
        let t = &w[0].text;
        assert!(t.contains("at 100000 Hz"), "{t}");
        assert!(t.contains("could not keep 5 phases in 2 runs"), "{t}");
        assert!(t.contains("3 with 0 iterations"), "{t}");
        assert!(
            t.contains("1 started late") && t.contains("1 not of the planned length"),
            "{t}"
        );
        assert!(t.contains("4 of 38 ABBA groups"), "{t}");
        let runs: Vec<(u32, &str)> = w[0]
            .runs
            .iter()
            .map(|r| (r.run_id, r.value.as_str()))
            .collect();
        assert_eq!(
            runs,
            [
                (16, "3 of 19 groups left out"),
                (29, "1 of 19 groups left out")
            ]
        );
    }

    #[test]
    fn nonsense_rows_are_bad_input_named_by_run_and_phase() {
        let a = analysis_with(vec![RunPhaseFaults {
            run_id: 3,
            freq_hz: 1000,
            groups: 2,
            groups_excluded: 1,
            excluded: vec![excluded(3, 5, PhaseFault::NoLength)],
        }]);
        let w = phases(&a);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].text.contains("1 row is not a measurement"),
            "{}",
            w[0].text
        );
        assert_eq!(w[0].runs[0].run_id, 3);
        assert_eq!(w[0].runs[0].value, "phase 5: ends before it starts");
        assert!(phases(&analysis_with(Vec::new())).is_empty());
    }
}
