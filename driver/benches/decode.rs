//! Decoding throughput of perf records on a synthetic ring region shaped like
//! a 100 kHz cpu-clock run with all four handler tracepoints (per sample: a
//! 48-byte sample, an 80-byte hrtimer entry, a 64-byte exit and two 56-byte
//! local_timer records), plus the hrtimer raw-field extraction the drain
//! thread does. Target: >= 50 million records/s.
//!
//! `cargo bench -p driver --bench decode`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use driver::perf::attr::sample as st;
use driver::perf::record::{
    Formats, RECORD_SAMPLE, Record, Sample, encode, for_each_record, for_each_record_bytes,
    parse_record, parse_sample_record, record_kind,
};

const SAMPLING: u64 = st::IDENTIFIER | st::TID | st::TIME | st::CPU | st::PERIOD;
const TRACE: u64 = st::IDENTIFIER | st::TID | st::TIME | st::CPU | st::RAW;

fn buffer(n_samples: usize) -> (Vec<u8>, usize) {
    let entry_raw = [7u8; 32];
    let exit_raw = [7u8; 16];
    let lt_raw = [7u8; 12];
    let mut buf = Vec::new();
    let mut records = 0;
    for i in 0..n_samples as u64 {
        let t = 1_000_000 + i * 10_000;
        let mut push = |sample_type: u64, id: u64, time: u64, raw: Option<&[u8]>| {
            let s = Sample {
                id: Some(id),
                tid: Some((1, 1)),
                time: Some(time),
                cpu: Some(1),
                period: Some(10_000),
                raw,
            };
            buf.extend(encode::sample(sample_type, &s));
            records += 1;
        };
        push(TRACE, 3, t - 2000, Some(&lt_raw));
        push(TRACE, 1, t - 1000, Some(&entry_raw));
        push(SAMPLING, 0, t, None);
        push(TRACE, 2, t + 1000, Some(&exit_raw));
        push(TRACE, 4, t + 2000, Some(&lt_raw));
    }
    (buf, records)
}

fn bench(c: &mut Criterion) {
    let formats = Formats::by_id(
        &[
            (0, SAMPLING),
            (1, TRACE),
            (2, TRACE),
            (3, TRACE),
            (4, TRACE),
        ],
        true,
    )
    .unwrap();
    let (buf, records) = buffer(20_000);
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(records as u64));
    // Split in the middle of a record: one record goes through the scratch copy.
    let split = buf.len() / 2 + 4;
    let mut scratch = Vec::new();
    g.bench_function("for_each_record", |b| {
        b.iter(|| {
            let (a, bb) = buf.split_at(split);
            let mut n = 0u64;
            let mut sum = 0u64;
            for_each_record(a, bb, &formats, &mut scratch, |r| {
                n += 1;
                if let Record::Sample(s) = r {
                    sum = sum.wrapping_add(s.time.unwrap_or(0));
                    if let Some(raw) = s.raw {
                        sum = sum.wrapping_add(u64::from(raw[8]));
                    }
                }
            })
            .unwrap();
            assert_eq!(n as usize, records);
            std::hint::black_box(sum)
        })
    });
    // The drain thread's path: framing, then samples without the generic match.
    g.bench_function("drain_path", |b| {
        b.iter(|| {
            let (a, bb) = buf.split_at(split);
            let mut n = 0u64;
            let mut sum = 0u64;
            for_each_record_bytes(a, bb, &mut scratch, |rec, at| {
                n += 1;
                if record_kind(rec) == RECORD_SAMPLE {
                    let s = parse_sample_record(rec, &formats, at)?;
                    sum = sum.wrapping_add(s.time.unwrap_or(0));
                    if let Some(raw) = s.raw {
                        sum = sum.wrapping_add(u64::from(raw[8]));
                    }
                } else {
                    std::hint::black_box(parse_record(rec, &formats, at)?);
                }
                Ok(())
            })
            .unwrap();
            assert_eq!(n as usize, records);
            std::hint::black_box(sum)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
