//! The decoders never panic: property tests over the public decoding API
//! (record decoder, the framing that splits a ring's readable region into
//! records, the tracefs format parser). Each input gives an error or a
//! valid result, never a panic or an out-of-bounds read; and the results
//! that must not depend on the input's shape (where a ring wraps, a
//! damaged byte after a record) do not.
//!
//! "Real records" here are records laid out byte for byte as the kernel
//! writes them for the driver's events (the sample types of
//! `driver::sampler`: 24-byte cpu-clock samples, 64-byte
//! hrtimer_expire_entry and 48-byte exit records whose raw data follows the
//! format files in tests/fixtures/perf, LOST/THROTTLE/UNTHROTTLE with their
//! sample_id trailer), built with `record::encode`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::encode;
use driver::perf::attr::sample as st;
use driver::perf::record::{
    DecodeError, Formats, Record, RecordIter, SUPPORTED_SAMPLE_TYPE, Sample, ThrottleRecord,
    for_each_record, for_each_record_bytes, parse_record,
};
use driver::perf::tracefs::{self, Field};
use proptest::prelude::*;

/// The driver's cpu-clock samples and tracepoint records (sampler.rs).
const SAMPLING: u64 = st::IDENTIFIER | st::TIME;
const TRACE_RAW: u64 = st::IDENTIFIER | st::TIME | st::RAW;
const TRACE: u64 = st::IDENTIFIER | st::TIME;
const SAMPLING_ID: u64 = 11;
const ENTRY_ID: u64 = 12;
const EXIT_ID: u64 = 13;
const LOCAL_TIMER_ID: u64 = 14;

fn driver_formats() -> Formats {
    Formats::by_id(
        &[
            (SAMPLING_ID, SAMPLING),
            (ENTRY_ID, TRACE_RAW),
            (EXIT_ID, TRACE_RAW),
            (LOCAL_TIMER_ID, TRACE),
        ],
        true,
    )
    .unwrap()
}

/// The raw data of timer:hrtimer_expire_entry (common fields, hrtimer,
/// now, function: offsets of tests/fixtures/perf/timer_hrtimer_expire_entry.format).
fn hrtimer_entry_raw(hrtimer: u64, now: u64, function: u64) -> Vec<u8> {
    let mut raw = vec![0u8; 32];
    raw[0..2].copy_from_slice(&459u16.to_ne_bytes());
    raw[4..8].copy_from_slice(&1234i32.to_ne_bytes());
    raw[8..16].copy_from_slice(&hrtimer.to_ne_bytes());
    raw[16..24].copy_from_slice(&now.to_ne_bytes());
    raw[24..32].copy_from_slice(&function.to_ne_bytes());
    raw
}

fn hrtimer_exit_raw(hrtimer: u64) -> Vec<u8> {
    let mut raw = vec![0u8; 16];
    raw[0..2].copy_from_slice(&460u16.to_ne_bytes());
    raw[8..16].copy_from_slice(&hrtimer.to_ne_bytes());
    raw
}

/// One record of a real ring, chosen by `kind`, with time `t`.
fn real_record(kind: u8, t: u64, raws: &mut Vec<Vec<u8>>) -> Vec<u8> {
    match kind % 7 {
        0 => encode::record(
            SAMPLING,
            Some(SAMPLING_ID),
            &Record::Sample(Sample {
                id: Some(SAMPLING_ID),
                time: Some(t),
                ..Sample::default()
            }),
        ),
        1 => {
            raws.push(hrtimer_entry_raw(
                0xffff_8880_1234_5678,
                t,
                0xffff_ffff_8159_1430,
            ));
            encode::sample(
                TRACE_RAW,
                &Sample {
                    id: Some(ENTRY_ID),
                    time: Some(t),
                    raw: raws.last().map(Vec::as_slice),
                    ..Sample::default()
                },
            )
        }
        2 => {
            raws.push(hrtimer_exit_raw(0xffff_8880_1234_5678));
            encode::sample(
                TRACE_RAW,
                &Sample {
                    id: Some(EXIT_ID),
                    time: Some(t),
                    raw: raws.last().map(Vec::as_slice),
                    ..Sample::default()
                },
            )
        }
        3 => encode::sample(
            TRACE,
            &Sample {
                id: Some(LOCAL_TIMER_ID),
                time: Some(t),
                ..Sample::default()
            },
        ),
        4 => encode::record(
            SAMPLING,
            Some(SAMPLING_ID),
            &Record::Throttle(ThrottleRecord {
                time: t,
                id: SAMPLING_ID,
                stream_id: SAMPLING_ID,
            }),
        ),
        5 => encode::record(
            SAMPLING,
            Some(SAMPLING_ID),
            &Record::Unthrottle(ThrottleRecord {
                time: t,
                id: SAMPLING_ID,
                stream_id: SAMPLING_ID,
            }),
        ),
        _ => encode::record(
            SAMPLING,
            Some(SAMPLING_ID),
            &Record::Lost {
                id: SAMPLING_ID,
                lost: t % 1000,
            },
        ),
    }
}

/// A ring's worth of real records, and the offset where each one starts.
fn real_stream(kinds: &[u8]) -> (Vec<u8>, Vec<usize>) {
    let mut buf = Vec::new();
    let mut starts = Vec::new();
    let mut raws = Vec::new();
    for (i, &k) in kinds.iter().enumerate() {
        starts.push(buf.len());
        buf.extend(real_record(k, 1_000_000 + i as u64 * 10_000, &mut raws));
    }
    (buf, starts)
}

/// What a decoding pass returns: bytes consumed, or the error and the bytes
/// consumed before it.
type Outcome = Result<usize, (DecodeError, usize)>;

/// Decodes `a ++ b`: the records (as text) and the outcome.
fn decode(a: &[u8], b: &[u8], f: &Formats) -> (Vec<String>, Outcome) {
    let mut got = Vec::new();
    let mut scratch = Vec::new();
    let r = for_each_record(a, b, f, &mut scratch, |r| got.push(format!("{r:?}")));
    (got, r)
}

/// The framing alone: (offset, length) of each record handed out.
fn frame(a: &[u8], b: &[u8]) -> (Vec<(usize, usize)>, Outcome) {
    let mut got = Vec::new();
    let mut scratch = Vec::new();
    let r = for_each_record_bytes(a, b, &mut scratch, |rec, at| {
        got.push((at, rec.len()));
        Ok(())
    });
    (got, r)
}

fn sample_type() -> impl Strategy<Value = u64> {
    any::<u64>().prop_map(|bits| bits & SUPPORTED_SAMPLE_TYPE)
}

/// The header size field of the record at `at` (bytes 6..8).
fn header_size(buf: &[u8], at: usize) -> usize {
    usize::from(u16::from_ne_bytes([buf[at + 6], buf[at + 7]]))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Any bytes, any supported layout, any wrap point: an error or
    /// records, never a panic; the framing only hands out whole records
    /// whose length is their header's size, and consumes whole records.
    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..1024),
        t in sample_type(),
        t2 in sample_type(),
        sid_all in any::<bool>(),
        split in any::<prop::sample::Index>(),
    ) {
        let single = Formats::single(t, sid_all).unwrap();
        let shared = Formats::by_id(
            &[(1, t | st::IDENTIFIER), (2, t2 | st::IDENTIFIER)],
            sid_all,
        )
        .unwrap();
        let at = split.index(bytes.len() + 1);
        let (a, b) = bytes.split_at(at);
        for f in [&single, &shared] {
            let _ = parse_record(&bytes, f, 0);
            for r in RecordIter::new(&bytes, f) {
                let _ = r;
            }
            let (_, r) = decode(a, b, f);
            let consumed = match r { Ok(n) => n, Err((_, n)) => n };
            prop_assert!(consumed <= bytes.len());
            prop_assert_eq!(consumed % 8, 0);
        }
        let (recs, r) = frame(a, b);
        for &(off, len) in &recs {
            prop_assert!(len >= 8 && off + len <= bytes.len());
            prop_assert_eq!(len, header_size(&bytes, off));
        }
        let consumed = match r { Ok(n) => n, Err((_, n)) => n };
        prop_assert_eq!(consumed, recs.last().map_or(0, |&(o, l)| o + l));
    }

    /// Where the ring wraps does not change what is decoded or how far:
    /// the same records, the same bytes consumed, the same error (kind and
    /// offset in the whole region), for garbage and for real records alike.
    #[test]
    fn the_wrap_point_does_not_change_the_outcome(
        kinds in proptest::collection::vec(any::<u8>(), 0..40),
        garbage in proptest::collection::vec(any::<u8>(), 0..64),
        damage in any::<bool>(),
        split in any::<prop::sample::Index>(),
    ) {
        let (mut buf, _) = real_stream(&kinds);
        if damage {
            buf.extend_from_slice(&garbage);
        }
        let f = driver_formats();
        let whole = decode(&buf, &[], &f);
        let at = split.index(buf.len() + 1);
        let (a, b) = buf.split_at(at);
        prop_assert_eq!(decode(a, b, &f), whole);
        prop_assert_eq!(frame(a, b), frame(&buf, &[]));
    }

    /// A real stream cut anywhere (the ring's head mid-record cannot
    /// happen, but a damaged or short read can): the whole records before
    /// the cut decode exactly as before, the cut one is an error, never a
    /// shorter record, and the bytes consumed end at a record boundary.
    #[test]
    fn truncated_real_records_are_errors_not_short_records(
        kinds in proptest::collection::vec(any::<u8>(), 1..30),
        cut in any::<prop::sample::Index>(),
        split in any::<prop::sample::Index>(),
    ) {
        let (buf, starts) = real_stream(&kinds);
        let f = driver_formats();
        let (all, r) = decode(&buf, &[], &f);
        prop_assert_eq!(r, Ok(buf.len()));
        let cut = cut.index(buf.len() + 1);
        let part = &buf[..cut];
        let at = split.index(cut + 1);
        let (got, r) = decode(&part[..at], &part[at..], &f);
        let ends: Vec<usize> = starts[1..].iter().copied().chain([buf.len()]).collect();
        let whole = ends.iter().filter(|&&e| e <= cut).count();
        let boundary = if whole == 0 { 0 } else { ends[whole - 1] };
        prop_assert_eq!(&got[..], &all[..whole]);
        if cut == boundary {
            prop_assert_eq!(r, Ok(cut));
        } else {
            prop_assert!(
                matches!(r, Err((DecodeError::Truncated { .. }, n)) if n == boundary),
                "{:?}", r
            );
        }
        // Each record cut on its own decodes or fails, never panics.
        for (i, &s) in starts.iter().enumerate() {
            let end = starts.get(i + 1).copied().unwrap_or(buf.len());
            for k in 0..=(end - s) {
                let _ = parse_record(&buf[s..s + k], &f, s);
            }
        }
    }

    /// One flipped bit anywhere in a real stream: no panic, the records
    /// before the damaged one decode exactly as before, and nothing is
    /// consumed beyond the region.
    #[test]
    fn bit_flipped_real_records_never_panic(
        kinds in proptest::collection::vec(any::<u8>(), 1..30),
        bit in any::<prop::sample::Index>(),
        split in any::<prop::sample::Index>(),
    ) {
        let (buf, starts) = real_stream(&kinds);
        let f = driver_formats();
        let (all, _) = decode(&buf, &[], &f);
        let bit = bit.index(buf.len() * 8);
        let mut bad = buf.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        let at = split.index(bad.len() + 1);
        let (got, r) = decode(&bad[..at], &bad[at..], &f);
        let damaged = starts.iter().filter(|&&s| s <= bit / 8).count() - 1;
        prop_assert!(got.len() >= damaged, "{} < {damaged}", got.len());
        prop_assert_eq!(&got[..damaged], &all[..damaged]);
        let consumed = match r { Ok(n) => n, Err((_, n)) => n };
        prop_assert!(consumed <= bad.len());
        prop_assert_eq!(consumed % 8, 0);
    }

    /// The tracefs format parser: any text, and real format files with
    /// bytes changed, deleted or lines dropped, give a format or an error;
    /// a format it accepts has a name and well-formed field names.
    #[test]
    fn format_parser_never_panics(
        text in ".{0,400}",
        which in 0usize..5,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<char>(), 0u8..3), 0..8),
    ) {
        let p = Path::new("events/x/y/format");
        check_format(tracefs::parse_format(&text, p));
        let names = [
            "timer_hrtimer_expire_entry.format",
            "timer_hrtimer_expire_exit.format",
            "nmi_nmi_handler.format",
            "irq_vectors_local_timer_entry.format",
            "irq_vectors_local_timer_exit.format",
        ];
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/perf")
            .join(names[which]);
        let mut chars: Vec<char> = std::fs::read_to_string(&path).unwrap().chars().collect();
        for (idx, c, op) in edits {
            if chars.is_empty() {
                break;
            }
            let i = idx.index(chars.len());
            match op {
                0 => chars[i] = c,
                1 => {
                    chars.remove(i);
                }
                _ => chars.insert(i, c),
            }
        }
        let mutated: String = chars.into_iter().collect();
        check_format(tracefs::parse_format(&mutated, &path));
    }

    /// Reading a field from raw data: Some only when the field lies inside
    /// the data and has a size of 1, 2, 4 or 8 bytes; never a panic, even
    /// for offsets near usize::MAX (a damaged format file).
    #[test]
    fn field_reads_stay_in_bounds(
        raw in proptest::collection::vec(any::<u8>(), 0..64),
        offset in prop_oneof![0usize..80, (usize::MAX - 16)..=usize::MAX],
        size in prop_oneof![0usize..17, Just(usize::MAX)],
    ) {
        let f = Field {
            name: "x".into(),
            c_type: "u64".into(),
            offset,
            size,
            signed: false,
        };
        let fits = offset.checked_add(size).is_some_and(|end| end <= raw.len());
        let v = f.read_u64(&raw);
        prop_assert_eq!(v.is_some(), fits && [1, 2, 4, 8].contains(&size));
    }
}

fn check_format(r: Result<tracefs::Format, driver::perf::PerfError>) {
    if let Ok(f) = r {
        assert!(!f.fields.is_empty());
        for field in &f.fields {
            assert!(
                !field.name.is_empty()
                    && field
                        .name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{field:?}"
            );
        }
    }
}

/// The properties above would pass on a decoder that rejects everything:
/// this pins that real streams decode, with the fields the kernel wrote.
#[test]
fn real_stream_decodes_with_its_fields() {
    let (buf, starts) = real_stream(&[0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(
        starts.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>(),
        vec![24, 64, 48, 24, 48, 48],
        "record sizes of the driver's events"
    );
    let f = driver_formats();
    let mut recs = Vec::new();
    let mut scratch = Vec::new();
    let n = for_each_record(&buf, &[], &f, &mut scratch, |r| {
        recs.push(match r {
            Record::Sample(s) => (
                s.id.unwrap(),
                s.time.unwrap(),
                s.raw.map(|r| r.len()).unwrap_or(0),
            ),
            Record::Throttle(t) => (5, t.time, 0),
            Record::Unthrottle(t) => (6, t.time, 0),
            Record::Lost { lost, .. } => (2, lost, 0),
            other => panic!("{other:?}"),
        })
    })
    .unwrap();
    assert_eq!(n, buf.len());
    assert_eq!(
        recs,
        vec![
            (SAMPLING_ID, 1_000_000, 0),
            (ENTRY_ID, 1_010_000, 32),
            (EXIT_ID, 1_020_000, 16),
            (LOCAL_TIMER_ID, 1_030_000, 0),
            (5, 1_040_000, 0),
            (6, 1_050_000, 0),
            (2, 1_060_000 % 1000, 0),
        ]
    );
}
