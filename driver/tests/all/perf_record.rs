//! Record decoding and tracepoint format parsing on byte fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::encode;
use driver::perf::attr::sample as st;
use driver::perf::record::{
    DecodeError, Formats, Record, RecordIter, Sample, ThrottleRecord, for_each_record, parse_record,
};
use driver::perf::tracefs;
use proptest::prelude::*;

const SAMPLING: u64 = st::IDENTIFIER | st::TID | st::TIME | st::CPU | st::PERIOD;
const TRACE: u64 = st::IDENTIFIER | st::TID | st::TIME | st::CPU | st::RAW;

fn formats() -> Formats {
    Formats::by_id(&[(7, SAMPLING), (9, TRACE)], true).unwrap()
}

/// A record of `sample_type`, its trailer naming the event of that type.
fn encoded(sample_type: u64, r: &Record<'_>) -> Vec<u8> {
    let id = if sample_type == SAMPLING { 7 } else { 9 };
    encode::record(sample_type, Some(id), r)
}

fn every_record_type(raw: &[u8]) -> Vec<(u64, Record<'_>)> {
    vec![
        (
            SAMPLING,
            Record::Sample(Sample {
                id: Some(7),
                tid: Some((100, 101)),
                time: Some(123_456_789),
                cpu: Some(1),
                period: Some(1_000_000),
                raw: None,
                ..Sample::default()
            }),
        ),
        (
            TRACE,
            Record::Sample(Sample {
                id: Some(9),
                tid: Some((0, 0)),
                time: Some(123_456_790),
                cpu: Some(1),
                period: None,
                raw: Some(raw),
                ..Sample::default()
            }),
        ),
        (SAMPLING, Record::Lost { id: 7, lost: 42 }),
        (SAMPLING, Record::LostSamples { lost: 3 }),
        (
            SAMPLING,
            Record::Throttle(ThrottleRecord {
                time: 10,
                id: 7,
                stream_id: 7,
            }),
        ),
        (
            TRACE,
            Record::Unthrottle(ThrottleRecord {
                time: 11,
                id: 9,
                stream_id: 9,
            }),
        ),
    ]
}

#[test]
fn every_record_type_round_trips() {
    let raw = [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
    let recs = every_record_type(&raw);
    let mut buf = Vec::new();
    for (t, r) in &recs {
        buf.extend(encoded(*t, r));
    }
    let f = formats();
    let got: Vec<Record<'_>> = RecordIter::new(&buf, &f).map(|r| r.unwrap()).collect();
    let want: Vec<Record<'_>> = recs.iter().map(|(_, r)| *r).collect();
    assert_eq!(got, want);
    // cpu-clock sample as seen on the machine: 40 bytes without PERIOD.
    let s = encode::sample(SAMPLING & !st::PERIOD, &Sample::default());
    assert_eq!(s.len(), 40);
}

#[test]
fn record_wrapping_the_ring_end_decodes_at_every_split() {
    let raw = [0xabu8; 20];
    let recs = every_record_type(&raw);
    let mut buf = Vec::new();
    for (t, r) in &recs {
        buf.extend(encoded(*t, r));
    }
    let f = formats();
    let want: Vec<Record<'_>> = recs.iter().map(|(_, r)| *r).collect();
    let mut scratch = Vec::new();
    for split in 0..=buf.len() {
        let (a, b) = buf.split_at(split);
        let mut got: Vec<String> = Vec::new();
        let n = for_each_record(a, b, &f, &mut scratch, |r| got.push(format!("{r:?}"))).unwrap();
        assert_eq!(n, buf.len(), "split {split}");
        let want_s: Vec<String> = want.iter().map(|r| format!("{r:?}")).collect();
        assert_eq!(got, want_s, "split {split}");
    }
}

#[test]
fn truncated_and_garbage_input_is_an_error() {
    let f = formats();
    let rec = encoded(SAMPLING, &every_record_type(&[])[0].1);
    // Truncated at every length: complete records only, never a panic.
    for cut in 1..rec.len() {
        let r: Vec<_> = RecordIter::new(&rec[..cut], &f).collect();
        assert!(r.last().unwrap().is_err(), "cut {cut}");
    }
    // Size 0 would loop forever: rejected.
    let mut zero = rec.clone();
    zero[6] = 0;
    zero[7] = 0;
    assert!(matches!(
        RecordIter::new(&zero, &f).next(),
        Some(Err(DecodeError::BadSize { size: 0, .. }))
    ));
    // Unknown id.
    let mut other = rec.clone();
    other[8] = 99;
    assert!(matches!(
        RecordIter::new(&other, &f).next(),
        Some(Err(DecodeError::UnknownId { id: 99 }))
    ));
    // A header size smaller than the sample's fields.
    let mut short = rec.clone();
    short[6] = 16;
    assert!(matches!(
        parse_record(&short[..16], &f, 0),
        Err(DecodeError::Truncated { .. })
    ));
    // Raw size pointing past the record.
    let t = encoded(TRACE, &every_record_type(&[1, 2, 3, 4])[1].1);
    let raw_size_at = 8 + 8 + 8 + 8 + 8;
    let mut bad = t.clone();
    bad[raw_size_at..raw_size_at + 4].copy_from_slice(&1000u32.to_ne_bytes());
    assert!(RecordIter::new(&bad, &f).next().unwrap().is_err());
}

#[test]
fn unsupported_sample_type_is_refused() {
    // PERF_SAMPLE_READ (1 << 4) and PERF_SAMPLE_WEIGHT (1 << 14) are not
    // parsed; the call chain, branch stack, user registers and stack are.
    for bit in [1u64 << 4, 1 << 14] {
        assert!(matches!(
            Formats::single(st::TIME | bit, true),
            Err(DecodeError::Unsupported { .. })
        ));
    }
    assert!(Formats::single(st::TIME | st::CALLCHAIN | st::STACK_USER, true).is_ok());
    // A shared ring needs IDENTIFIER in every event.
    assert!(Formats::by_id(&[(1, st::TIME)], true).is_err());
}

proptest! {
    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512), split in 0usize..512) {
        let f = formats();
        for r in RecordIter::new(&bytes, &f) {
            let _ = r;
        }
        let split = split.min(bytes.len());
        let (a, b) = bytes.split_at(split);
        let mut scratch = Vec::new();
        let _ = for_each_record(a, b, &f, &mut scratch, |_| {});
    }

    #[test]
    fn encoded_records_round_trip(
        items in proptest::collection::vec(
            (0u8..6, any::<u64>(), any::<u32>(), any::<(u32, u32)>(), proptest::collection::vec(any::<u8>(), 0..40)),
            1..40),
        split in 0usize..4000,
    ) {
        let f = formats();
        let mut buf = Vec::new();
        let mut want = Vec::new();
        for (k, x, cpu, tid, raw) in &items {
            let (t, r) = match k {
                0 => (SAMPLING, Record::Sample(Sample { id: Some(7), tid: Some(*tid), time: Some(*x), cpu: Some(*cpu), period: Some(x ^ 5), raw: None, ..Sample::default() })),
                1 => (TRACE, Record::Sample(Sample { id: Some(9), tid: Some(*tid), time: Some(*x), cpu: Some(*cpu), period: None, raw: Some(raw.as_slice()), ..Sample::default() })),
                2 => (SAMPLING, Record::Lost { id: 7, lost: *x }),
                3 => (SAMPLING, Record::LostSamples { lost: *x }),
                4 => (SAMPLING, Record::Throttle(ThrottleRecord { time: *x, id: 7, stream_id: 3 })),
                _ => (SAMPLING, Record::Unthrottle(ThrottleRecord { time: *x, id: 7, stream_id: 3 })),
            };
            buf.extend(encoded(t, &r));
            want.push(format!("{r:?}"));
        }
        let split = split.min(buf.len());
        let (a, b) = buf.split_at(split);
        let mut got = Vec::new();
        let mut scratch = Vec::new();
        let n = for_each_record(a, b, &f, &mut scratch, |r| got.push(format!("{r:?}"))).unwrap();
        prop_assert_eq!(n, buf.len());
        prop_assert_eq!(got, want);
    }
}

fn fixture(name: &str) -> (String, std::path::PathBuf) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/perf")
        .join(name);
    (std::fs::read_to_string(&p).unwrap(), p)
}

#[test]
fn format_files_parse_with_offsets_from_the_text() {
    let (text, path) = fixture("timer_hrtimer_expire_entry.format");
    let f = tracefs::parse_format(&text, &path).unwrap();
    assert_eq!(f.name, "hrtimer_expire_entry");
    assert_eq!(f.id, 459);
    let h = f.field("hrtimer").unwrap();
    assert_eq!(
        (h.offset, h.size, h.signed, h.c_type.as_str()),
        (8, 8, false, "void *")
    );
    let now = f.field("now").unwrap();
    assert_eq!((now.offset, now.size, now.signed), (16, 8, true));
    assert_eq!(f.field("function").unwrap().offset, 24);
    assert_eq!(f.field("common_pid").unwrap().offset, 4);

    let (text, path) = fixture("nmi_nmi_handler.format");
    let f = tracefs::parse_format(&text, &path).unwrap();
    assert_eq!(f.id, 170);
    assert_eq!(f.field("delta_ns").unwrap().offset, 16);
    assert_eq!(f.field("handled").unwrap().size, 4);

    let (text, path) = fixture("irq_vectors_local_timer_entry.format");
    let f = tracefs::parse_format(&text, &path).unwrap();
    assert_eq!(f.field("vector").unwrap().offset, 8);
    assert_eq!(f.fields.len(), 5);
}

#[test]
fn format_parser_rejects_bad_files_and_reads_arrays() {
    let p = Path::new("x/format");
    assert!(tracefs::parse_format("", p).is_err());
    assert!(tracefs::parse_format("name: a\nID: x\n", p).is_err());
    let bad = "name: a\nID: 1\nformat:\n\tfield:int a;\toffset:zz;\tsize:4;\tsigned:1;\n";
    let e = tracefs::parse_format(bad, p).unwrap_err().to_string();
    assert!(e.contains("line 4") && e.contains("offset"), "{e}");
    let arr = "name: a\nID: 1\nformat:\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n";
    let f = tracefs::parse_format(arr, p).unwrap();
    assert_eq!(f.field("comm").unwrap().size, 16);
}

#[test]
fn kallsyms_lookup_finds_exact_symbols() {
    let (text, _) = fixture("kallsyms.sample");
    assert_eq!(
        tracefs::kallsyms_lookup(&text, "perf_swevent_hrtimer"),
        Some(0xffffffff81591430)
    );
    assert_eq!(
        tracefs::kallsyms_lookup(&text, "perf_event_nmi_handler"),
        Some(0xffffffff8124e360)
    );
    assert_eq!(tracefs::kallsyms_lookup(&text, "perf_swevent"), None);
    assert_eq!(
        tracefs::kallsyms_lookup("0000000000000000 t foo\n", "foo"),
        Some(0)
    );
}

#[test]
fn mounts_are_scanned_for_tracefs() {
    let m = "proc /proc proc rw 0 0\nnodev /sys/kernel/tracing tracefs rw 0 0\nx /mnt/my\\040trace tracefs rw 0 0\n";
    let got = tracefs::mounts_tracefs(m);
    assert_eq!(
        got,
        vec![
            Path::new("/sys/kernel/tracing").to_path_buf(),
            Path::new("/mnt/my trace").to_path_buf()
        ]
    );
}
