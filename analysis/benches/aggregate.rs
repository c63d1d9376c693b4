//! Handler-interval aggregation (the hot path of `analysis report`) on a
//! synthetic trace of 10 million intervals: in memory, and from parquet;
//! the exact 1-ns histogram (`aggregate_intervals`, what the report uses)
//! against the same statistics as a polars lazy query (filter, group_by,
//! agg with count, sum, mean, type-7 quantiles and max), which is what the
//! histogram would be replaced by. docs/methodology.md ("Aggregation")
//! records the outcome.

use std::hint::black_box;

use analysis::events::{aggregate_intervals, read_run_intervals};
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

/// The histogram's statistics per source on `cpu`, as a polars lazy query.
fn lazy_stats(lf: LazyFrame, cpu: u32) -> PolarsResult<DataFrame> {
    let d = || col("duration_ns");
    lf.filter(col("cpu").eq(lit(cpu)))
        .group_by([col("source")])
        .agg([
            d().count().alias("count"),
            d().sum().alias("sum_ns"),
            d().mean().alias("mean_ns"),
            d().quantile(lit(0.5), QuantileMethod::Linear)
                .alias("median_ns"),
            d().quantile(lit(0.99), QuantileMethod::Linear)
                .alias("p99_ns"),
            d().max().alias("max_ns"),
        ])
        .collect()
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

    // The two give the same numbers (type-7 quantiles on exact values).
    let mut d = df.clone();
    let exact = aggregate_intervals(&mut d, 1).unwrap_or_else(|e| panic!("{e}"));
    let lazy = lazy_stats(df.clone().lazy(), 1).unwrap_or_else(|e| panic!("{e}"));
    let lazy = lazy
        .sort(["source"], SortMultipleOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let f = |name: &str, i: usize| -> f64 {
        let c = lazy.column(name).unwrap_or_else(|e| panic!("{e}"));
        c.cast(&DataType::Float64)
            .unwrap_or_else(|e| panic!("{e}"))
            .f64()
            .unwrap_or_else(|e| panic!("{e}"))
            .get(i)
            .unwrap_or(f64::NAN)
    };
    // Sorted: hrtimer (the handler), then local_timer.
    let local = exact.local_timer.unwrap_or_default();
    for (i, s) in [(0, &exact.handler), (1, &local)] {
        assert_eq!(f("count", i), s.count as f64);
        assert_eq!(f("sum_ns", i), s.sum_ns as f64);
        assert!((f("median_ns", i) - s.median_ns).abs() < 1e-9);
        assert!((f("p99_ns", i) - s.p99_ns).abs() < 1e-9);
        assert_eq!(f("max_ns", i), s.max_ns as f64);
    }
    eprintln!("polars lazy and the histogram agree: {:?}", exact.handler);

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
    g.bench_function("polars_lazy_in_memory_10M", |b| {
        b.iter(|| black_box(lazy_stats(df.clone().lazy(), 1).unwrap_or_else(|e| panic!("{e}"))))
    });
    g.bench_function("polars_lazy_from_parquet_10M", |b| {
        b.iter(|| {
            let p = PlRefPath::try_from_path(&path).unwrap_or_else(|e| panic!("{e}"));
            let lf = LazyFrame::scan_parquet(p, ScanArgsParquet::default())
                .unwrap_or_else(|e| panic!("{e}"));
            black_box(lazy_stats(lf, 1).unwrap_or_else(|e| panic!("{e}")))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
