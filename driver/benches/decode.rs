//! Decoding throughput of perf records on synthetic ring regions shaped like
//! a 100 kHz cpu-clock run with all four handler tracepoints: per sample a
//! local_timer entry, an hrtimer entry, the sample, the hrtimer exit and a
//! local_timer exit. Two layouts:
//!
//! - `full`: every field the decoder supports (IDENTIFIER, TID, TIME, CPU,
//!   PERIOD; RAW on tracepoints): 48-byte samples, 80/64/56-byte tracepoints,
//!   the sizes `perf record` would write;
//! - `driver`: the sample types the sampler actually opens (IDENTIFIER and
//!   TIME; RAW only where the raw data is used): 24, 64, 48 and 24 bytes.
//!
//! Both go through [`for_each_record`], the path the drain thread uses, and
//! read the time and one raw byte of each record. Target: >= 50 million
//! records/s.
//!
//! `cargo test --release --workspace --bench decode -- --bench` (reuses the
//! test build; `cargo bench` would compile polars again under the bench
//! profile).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use driver::perf::attr::sample as st;
use driver::perf::record::{Formats, Record, Sample, for_each_record};

/// The tests' encoder; the benchmark uses only its `sample`.
#[path = "../tests/all/encode.rs"]
#[allow(dead_code)]
mod encode;

struct Layout {
    name: &'static str,
    sampling: u64,
    hrtimer: u64,
    local_timer: u64,
}

const FULL: Layout = Layout {
    name: "full",
    sampling: st::IDENTIFIER | st::TID | st::TIME | st::CPU | st::PERIOD,
    hrtimer: st::IDENTIFIER | st::TID | st::TIME | st::CPU | st::RAW,
    local_timer: st::IDENTIFIER | st::TID | st::TIME | st::CPU | st::RAW,
};

const DRIVER: Layout = Layout {
    name: "driver",
    sampling: st::IDENTIFIER | st::TIME,
    hrtimer: st::IDENTIFIER | st::TIME | st::RAW,
    local_timer: st::IDENTIFIER | st::TIME,
};

fn buffer(l: &Layout, n_samples: usize) -> (Vec<u8>, usize) {
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
                raw: raw.filter(|_| sample_type & st::RAW != 0),
                ..Sample::default()
            };
            buf.extend(encode::sample(sample_type, &s));
            records += 1;
        };
        push(l.local_timer, 3, t - 2000, Some(&lt_raw));
        push(l.hrtimer, 1, t - 1000, Some(&entry_raw));
        push(l.sampling, 0, t, None);
        push(l.hrtimer, 2, t + 1000, Some(&exit_raw));
        push(l.local_timer, 4, t + 2000, Some(&lt_raw));
    }
    (buf, records)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode");
    for l in [FULL, DRIVER] {
        let formats = Formats::by_id(
            &[
                (0, l.sampling),
                (1, l.hrtimer),
                (2, l.hrtimer),
                (3, l.local_timer),
                (4, l.local_timer),
            ],
            true,
        )
        .unwrap();
        let (buf, records) = buffer(&l, 20_000);
        g.throughput(Throughput::Elements(records as u64));
        // Split in the middle of a record: one record goes through the scratch copy.
        let split = buf.len() / 2 + 4;
        let mut scratch = Vec::new();
        g.bench_function(format!("for_each_record/{}", l.name), |b| {
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
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
