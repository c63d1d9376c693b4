//! Handler-interval aggregation (the hot path of `analysis report`) on a
//! synthetic trace of 10 million intervals: in memory, and from parquet;
//! the exact 1-ns histogram (`aggregate_intervals`, what the report uses).
//! docs/methodology.md ("Aggregation") records its comparison with a
//! polars lazy query, made while polars' lazy engine was still in the
//! build (it left to keep the binary small).

use std::hint::black_box;

use analysis::load::intervals::{aggregate_intervals, read_run_intervals};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use polars::prelude::*;
use rand::{Rng, SeedableRng, rngs::StdRng};

const N: usize = 10_000_000;

fn synthetic(n: usize) -> (Vec<u32>, Vec<u64>, Vec<u64>, Vec<&'static str>) {
    let mut rng = StdRng::seed_from_u64(42);
    let mut cpu = Vec::with_capacity(n);
    let mut entry = Vec::with_capacity(n);
    let mut dur = Vec::with_capacity(n);
    let mut src = Vec::with_capacity(n);
    let mut t = 0u64;
    for i in 0..n {
        t += 10_000;
        // 3/4 handler intervals, 1/4 whole-interrupt; 90 % on CPU 1.
        cpu.push(if rng.random_range(0..10) == 0 { 0 } else { 1 });
        entry.push(t);
        dur.push(1000 + rng.random_range(0..2000u64));
        src.push(if i % 4 == 3 { "local_timer" } else { "hrtimer" });
    }
    (cpu, entry, dur, src)
}

fn bench(c: &mut Criterion) {
    let (cpu, entry, dur, src) = synthetic(N);
    let df = DataFrame::new(
        N,
        vec![
            Column::new("cpu".into(), &cpu),
            Column::new("entry_ns".into(), &entry),
            Column::new("duration_ns".into(), &dur),
            Column::new("source".into(), &src),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("run-0.parquet");
    analysis::write_intervals_parquet(&path, &cpu, &entry, &dur, &src)
        .unwrap_or_else(|e| panic!("{e}"));

    let mut g = c.benchmark_group("aggregate");
    g.sample_size(10);
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("in_memory_10M", |b| {
        b.iter(|| {
            let mut d = df.clone();
            black_box(aggregate_intervals(&mut d, 1).unwrap_or_else(|e| panic!("{e}")))
        })
    });
    g.bench_function("from_parquet_10M", |b| {
        b.iter(|| black_box(read_run_intervals(&path, 1).unwrap_or_else(|e| panic!("{e}"))))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
