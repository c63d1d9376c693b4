//! Handler timing sources on synthetic tracepoint records.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use driver::handler::{
    HandlerSource, Pairer, TraceEvent, TraceKind, TraceLayout, nmi_intervals, select_hrtimer,
    select_local_timer,
};
use driver::perf::tracefs;

const OURS: u64 = 0xffff_ffff_8124_e360;
const OTHER: u64 = 0xffff_ffff_8100_1000;

fn ev(kind: TraceKind, cpu: u32, time_ns: u64, fields: [u64; 3]) -> TraceEvent {
    TraceEvent {
        kind,
        cpu,
        time_ns,
        fields,
    }
}

fn nmi(cpu: u32, time_ns: u64, handler: u64, delta_ns: u64) -> TraceEvent {
    ev(TraceKind::Nmi, cpu, time_ns, [handler, delta_ns, 1])
}

#[test]
fn nmi_source_keeps_our_handler_and_counts_foreign_ones() {
    let events = vec![
        nmi(1, 10_000, OURS, 1_500),
        nmi(1, 20_000, OTHER, 700), // another NMI handler (e.g. a watchdog)
        nmi(1, 30_000, OURS, 2_000),
        nmi(1, 30_000, OURS, 2_000), // duplicate record
        nmi(0, 15_000, OURS, 900),
        exit(1, 1, 5), // ignored
    ];
    let p = nmi_intervals(&events, OURS, None);
    assert_eq!(p.foreign, 1);
    assert_eq!(p.duplicates, 1);
    let got: Vec<(u32, u64, u64)> = p
        .intervals
        .iter()
        .map(|i| (i.cpu, i.entry_ns, i.duration_ns))
        .collect();
    // entry = record time - delta_ns, sorted by entry.
    assert_eq!(
        got,
        vec![(1, 8_500, 1_500), (0, 14_100, 900), (1, 28_000, 2_000)]
    );
    assert!(p.intervals.iter().all(|i| i.source == HandlerSource::Nmi));

    // With our samples given, perf NMIs of other perf users (no sample of
    // ours inside) are foreign too.
    let samples = vec![(1, 9_000), (1, 29_000)];
    let p = nmi_intervals(&events, OURS, Some(&samples));
    assert_eq!(p.intervals.len(), 2);
    assert_eq!(p.foreign, 2);
}

#[test]
fn nmi_records_decode_with_offsets_from_the_format_file() {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perf/nmi_nmi_handler.format");
    let f = tracefs::parse_format(&std::fs::read_to_string(&p).unwrap(), &p).unwrap();
    let layout = TraceLayout::new(TraceKind::Nmi, &f).unwrap();
    let mut raw = vec![0u8; 28];
    raw[8..16].copy_from_slice(&OURS.to_ne_bytes());
    raw[16..24].copy_from_slice(&1234i64.to_ne_bytes());
    raw[24..28].copy_from_slice(&1i32.to_ne_bytes());
    assert_eq!(layout.decode(1, 99, &raw), Some(nmi(1, 99, OURS, 1234)));
    assert_eq!(layout.decode(1, 99, &raw[..20]), None);
    // A format without the field is refused, naming it.
    let p2 = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/perf/timer_hrtimer_expire_exit.format");
    let f2 = tracefs::parse_format(&std::fs::read_to_string(&p2).unwrap(), &p2).unwrap();
    assert_eq!(
        TraceLayout::new(TraceKind::Nmi, &f2).unwrap_err(),
        "handler"
    );
}

fn entry(cpu: u32, t: u64, h: u64) -> TraceEvent {
    ev(TraceKind::HrtimerEntry, cpu, t, [h, 0, 0])
}
fn exit(cpu: u32, t: u64, h: u64) -> TraceEvent {
    ev(TraceKind::HrtimerExit, cpu, t, [h, 0, 0])
}

#[test]
fn hrtimer_pairs_by_pointer_and_keeps_only_our_timer() {
    let ours = 0xaaaa;
    let theirs = 0xbbbb;
    let events = vec![
        // Exit before any entry of that pointer (tracing started mid-handler):
        // not yet known as a perf timer, so not counted.
        exit(1, 500, ours),
        entry(1, 1_000, ours),
        exit(1, 2_300, ours),
        entry(1, 3_000, theirs), // another process's perf timer
        exit(1, 3_400, theirs),
        entry(1, 11_000, ours),
        exit(1, 12_000, ours), // our sample lost here: kept by pointer
        exit(1, 12_500, ours), // a second exit: unmatched
        entry(1, 21_000, ours),
        exit(1, 21_900, ours),
        exit(1, 22_000, 0xcccc), // an unrelated timer's exit: not counted
        entry(1, 31_000, ours),  // no exit
    ];
    let samples = vec![(1, 2_000), (1, 21_500)];
    let p = paired(&events);
    let (intervals, foreign, ptrs) = select_hrtimer(&p.hrtimer, &samples);
    assert!(ptrs.contains(&(1, ours)) && !ptrs.contains(&(1, theirs)));
    let got: Vec<(u64, u64)> = intervals
        .iter()
        .map(|i| (i.entry_ns, i.duration_ns))
        .collect();
    assert_eq!(got, vec![(1_000, 1_300), (11_000, 1_000), (21_000, 900)]);
    assert_eq!(foreign, 1);
    assert_eq!(p.hrtimer_unmatched_entries, 1);
    assert_eq!(p.hrtimer_unmatched_exits, 1);
}

/// The records paired as the sampler's drain pairs them (in the order of
/// the ring), every open entry counted unmatched at the end.
fn paired(events: &[TraceEvent]) -> Pairer {
    let mut p = Pairer::default();
    for e in events {
        p.push(e);
    }
    p.finish();
    p
}

#[test]
fn local_timer_kept_when_it_contains_our_handler() {
    let events = vec![
        ev(TraceKind::LocalTimerEntry, 1, 900, [0; 3]),
        ev(TraceKind::LocalTimerExit, 1, 5_000, [0; 3]),
        ev(TraceKind::LocalTimerEntry, 1, 7_000, [0; 3]),
        ev(TraceKind::LocalTimerExit, 1, 8_000, [0; 3]), // a tick without our handler
    ];
    let timer = paired(&[entry(1, 1_000, 7), exit(1, 2_000, 7)]);
    let (inner, _, _) = select_hrtimer(&timer.hrtimer, &[(1, 1_500)]);
    let kept = select_local_timer(&paired(&events).local_timer, &inner);
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].entry_ns, 900);
    assert_eq!(kept[0].duration_ns, 4_100);
    assert_eq!(kept[0].source.as_str(), "local_timer");
}
