//! Thins a copy of a result set's raw files as the driver thins a dense
//! run's (results-format `thinning`), to see what thinning does to the
//! tables on data that kept every record:
//!
//! ```sh
//! git checkout c881df8 -- results/20261125T150001Z-vm   # its raw files
//! cp -r results/20261125T150001Z-vm /tmp/full && cp -r /tmp/full /tmp/thin
//! cargo run --release -p results-format --example thin -- /tmp/thin
//! analysis report /tmp/full/ && analysis report /tmp/thin/
//! ```
//!
//! A util run's window start is not in runs.csv (the driver has it when it
//! writes); here it is the first handler entry, which differs from the
//! enable by one sampling period.

use std::path::Path;

use results_format::thinning::{Thinning, thin_timeline};
use results_format::timeline::{
    TimelineRow, gaps_path, read_gaps_parquet, read_samples_parquet, samples_path,
    write_gaps_parquet, write_samples_parquet,
};
use results_format::{RunRow, events, events_path, read_csv_rows};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: thin COPY_OF_A_RESULT_SET")?;
    let dir = Path::new(&dir);
    let timeline: Vec<TimelineRow> = read_csv_rows(&dir.join("timeline.csv"))?;
    let mut runs: Vec<RunRow> = read_csv_rows(&dir.join("runs.csv"))?;
    for run in runs.iter_mut().filter(|r| r.freq_hz > 0) {
        let id = run.run_id;
        let (t, kept) = if let Some(row) = timeline.iter().find(|t| t.run_id == id) {
            let gaps = read_gaps_parquet(&gaps_path(dir, id))?;
            let (times, eps) = read_samples_parquet(&samples_path(dir, id))?;
            let t = Thinning::for_records(gaps.len().max(times.len()) as u64);
            if t.is_all() || times.is_empty() {
                continue;
            }
            let (g, st, se) = thin_timeline(&gaps, &times, &eps, t);
            write_gaps_parquet(&gaps_path(dir, id), &g)?;
            write_samples_parquet(&samples_path(dir, id), &st, &se)?;
            (t, t.kept_ns(row.loop_start_ns, row.loop_end_ns))
        } else if events_path(dir, id).exists() {
            let p = events_path(dir, id);
            let (iv, _) = events::read_intervals_form(&p)?;
            let t = Thinning::for_records(iv.entry_ns.len() as u64);
            let Some(&from) = iv.entry_ns.iter().min() else {
                continue;
            };
            if t.is_all() {
                continue;
            }
            let keep: Vec<usize> = (0..iv.entry_ns.len())
                .filter(|&i| t.keeps(iv.entry_ns[i]))
                .collect();
            let kept = events::Intervals {
                cpu: keep.iter().map(|&i| iv.cpu[i]).collect(),
                entry_ns: keep.iter().map(|&i| iv.entry_ns[i]).collect(),
                duration_ns: keep.iter().map(|&i| iv.duration_ns[i]).collect(),
                source: keep.iter().map(|&i| iv.source[i].clone()).collect(),
            };
            events::write_intervals(&p, &kept)?;
            (t, t.kept_ns(from, from + run.window_ns))
        } else {
            continue;
        };
        println!(
            "run {id} at {} Hz: one slice in {}, {kept} ns kept",
            run.freq_hz, t.every
        );
        run.raw_keep_every = Some(t.every);
        run.raw_kept_ns = Some(kept);
    }
    let mut w = csv::Writer::from_path(dir.join("runs.csv"))?;
    for r in &runs {
        w.serialize(r)?;
    }
    w.flush()?;
    Ok(())
}
