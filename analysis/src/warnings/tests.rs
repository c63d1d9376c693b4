//! The warnings' rules on made-up runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

#[test]
fn thinned_runs_are_said() {
    let mut runs = vec![run(0, 100_000, 0, 0), run(1, 100, 0, 0)];
    assert!(thinned(&runs).is_none());
    runs[0].raw_keep_every = Some(8);
    runs[0].raw_kept_ns = Some(1_000_000_000);
    runs[0].window_ns = 8_000_000_000;
    let w = thinned(&runs).unwrap();
    assert_eq!(w.rule, Rule::Thinned);
    assert!(w.text.contains("1 runs at 100000 Hz"), "{}", w.text);
    assert!(w.text.contains("slices, 12% of"), "{}", w.text);
    assert!(w.text.contains("run_id 0;"), "{}", w.text);
}

fn run(id: u32, freq_hz: u64, before: u64, after: u64) -> Run {
    Run {
        run_id: id,
        freq_hz,
        status: RunStatus::Ok,
        perf_event_max_sample_rate_before: (before > 0).then_some(before),
        perf_event_max_sample_rate_after: (after > 0).then_some(after),
        ..Run::default()
    }
}

#[test]
fn no_warning_when_the_limit_never_went_down() {
    let runs = vec![
        run(0, 100, 100_000, 100_000),
        run(1, 4000, 100_000, 100_000),
    ];
    assert_eq!(lowered_limit(&runs), None);
    // Older result sets have no such columns (0): nothing to say.
    assert_eq!(lowered_limit(&[run(0, 100, 0, 0)]), None);
}

#[test]
fn names_the_run_it_went_down_in_and_the_runs_after_it() {
    let runs = vec![
        run(0, 100, 100_000, 100_000),
        run(1, 100_000, 100_000, 63_000),
        run(2, 4000, 63_000, 63_000),
        run(3, 100_000, 63_000, 50_000),
    ];
    let w = lowered_limit(&runs).map(|w| w.line()).unwrap_or_default();
    assert!(w.contains("run 1 at 100000 Hz: 100000 -> 63000"), "{w}");
    assert!(
        w.contains("2 runs started under a lowered limit (run_id 2, 3)"),
        "{w}"
    );
    assert!(w.contains("went down to 50000"), "{w}");
    assert!(w.contains("(run_id 1, 3) were throttled or refused"), "{w}");
    assert!(!w.contains("run 0"), "{w}");
}

#[test]
fn each_check_names_its_runs_and_stays_quiet_without_them() {
    let mut runs = vec![run(1, 1000, 0, 0), run(2, 1000, 0, 0), run(3, 0, 0, 0)];
    assert_eq!(throttled(&runs), None);
    assert_eq!(failed(&runs), None);
    runs[0].throttled = 3;
    runs[1].status = RunStatus::Failed;
    runs[1].error = "workload exited".into();
    let t = throttled(&runs).unwrap();
    assert_eq!(t.rule, Rule::Throttled);
    assert!(
        t.text
            .contains("saw 3 PERF_RECORD_THROTTLE records (at 1000 Hz; run_id 1)"),
        "{}",
        t.text
    );
    assert_eq!(t.remedy, None);
    let f = failed(&runs).unwrap();
    assert_eq!(f.rule, Rule::Failed);
    assert!(f.text.contains("(run_id 2): workload exited"), "{}", f.text);
    runs[0].lost = 2;
    let r = records(&runs).unwrap();
    assert_eq!(
        r.remedy.as_deref(),
        Some("utilisation of those runs is a lower bound")
    );
    assert!(
        r.line()
            .ends_with("(run_id 1); utilisation of those runs is a lower bound"),
        "{}",
        r.line()
    );
    // Loss runs exist only at 0 Hz here: nothing to compute a loss from.
    runs.iter_mut().for_each(|r| r.kind = RunKind::Util);
    assert_eq!(no_loss(&runs).map(|w| w.rule), Some(Rule::NoLoss));
}
