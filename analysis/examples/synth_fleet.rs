//! A synthetic fleet dataset for `analysis fleet`'s scale benchmark and
//! the DuckDB cross-check, drawn from real hosts' summaries:
//!
//! ```text
//! cargo run --release -p analysis --example synth_fleet -- \
//!     --hosts 100000 --out /tmp/fleet-100k --from results --from /path/to/more/sets
//! ```
//!
//! Every result set under the `--from` roots with a cost per sample is one
//! real observation (its summary, or one made from its tables), grouped into the fleet's default classes (CPU model x
//! virtualisation x event). A synthetic host takes a class at random
//! (weighted by its observations), one of that class's sets as its shape,
//! and multiplies every cost by a log-normal factor whose spread is the
//! class's own: the standard deviation of the log cost over its
//! observations (0.25 where a class has one). Its rates within budget are
//! divided by the same factor, since a sample costing f times as much
//! allows 1/f the rate. Written as `OUT/host=syn-NNNNNN/date=D/<set>/
//! summary.parquet`, D one of `--days` days ending 2026-11-27.
//!
//! `--day-tables`: every host measured on every one of the `--days` days
//! instead, written straight into the compacted form (`OUT/date=D/
//! summaries.parquet`, as `analysis fleet --compact` writes it: a year of
//! 10 000 hosts is 3.65 M sets, too many files otherwise); each day's cost
//! is the host's times a day-to-day draw (log sd `--day-sd`, default
//! 0.05). `--plant DAY:CLASS:FACTOR` multiplies the costs of the class
//! whose label starts with CLASS by FACTOR from day DAY (0-based) on: a
//! known move for `analysis fleet --all` to find.
//!
//! Each host (not with `--day-tables`) gets host traits drawn at random
//! apart from its cost ([`TRAITS`], from a second generator, so the costs
//! are those of the same seed without traits); `--plant-trait
//! NAME=VALUE:FACTOR` multiplies the costs of the hosts whose trait NAME
//! is VALUE by FACTOR: a known effect for `analysis fleet --explain`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use analysis::fleet::{classes, hosts, scan};
use rand::{Rng, SeedableRng};
use results_format::summary::{DAY_TABLE, DayRow, write_day_table};
use results_format::summary::{SUMMARY_BUDGETS, SUMMARY_PARQUET, SummaryRow, write_summary};

struct Args {
    hosts: usize,
    out: PathBuf,
    from: Vec<PathBuf>,
    seed: u64,
    days: u32,
    day_tables: bool,
    day_sd: f64,
    plant: Option<(u32, String, f64)>,
    plant_trait: Option<(String, String, f64)>,
}

/// The traits each host draws, each value with probability 1/2.
const TRAITS: [(&str, [&str; 2]); 4] = [
    ("mitigations", ["mitigated", "vulnerable"]),
    ("preempt", ["dynamic(full)", "dynamic(voluntary)"]),
    ("cpuidle_governor", ["menu", "haltpoll"]),
    ("clocksource", ["tsc", "kvm-clock"]),
];

fn set_trait(r: &mut SummaryRow, name: &str, value: &str) {
    let v = Some(value.to_string());
    match name {
        "mitigations" => r.mitigations = v,
        "preempt" => r.preempt = v,
        "cpuidle_governor" => r.cpuidle_governor = v,
        _ => r.clocksource = v,
    }
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        hosts: 1000,
        out: PathBuf::new(),
        from: Vec::new(),
        seed: 2026,
        days: 1,
        day_tables: false,
        day_sd: 0.05,
        plant: None,
        plant_trait: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag}: needs a value"));
        match flag.as_str() {
            "--hosts" => a.hosts = value()?.parse().map_err(|e| format!("--hosts: {e}"))?,
            "--out" => a.out = PathBuf::from(value()?),
            "--from" => a.from.push(PathBuf::from(value()?)),
            "--seed" => a.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--days" => a.days = value()?.parse().map_err(|e| format!("--days: {e}"))?,
            "--day-tables" => a.day_tables = true,
            "--day-sd" => a.day_sd = value()?.parse().map_err(|e| format!("--day-sd: {e}"))?,
            "--plant" => {
                let v = value()?;
                let bad = || format!("--plant {v}: expected DAY:CLASS:FACTOR, e.g. 200:AMD:1.3");
                let mut it = v.splitn(3, ':');
                let day = it.next().and_then(|d| d.parse().ok()).ok_or_else(bad)?;
                let class = it.next().ok_or_else(bad)?.to_string();
                let f = it.next().and_then(|f| f.parse().ok()).ok_or_else(bad)?;
                a.plant = Some((day, class, f));
            }
            "--plant-trait" => {
                let v = value()?;
                let bad = || {
                    format!(
                        "--plant-trait {v}: expected NAME=VALUE:FACTOR, e.g. mitigations=mitigated:1.5"
                    )
                };
                let (name, rest) = v.split_once('=').ok_or_else(bad)?;
                let (value, f) = rest.rsplit_once(':').ok_or_else(bad)?;
                let f = f.parse().map_err(|_| bad())?;
                if !TRAITS
                    .iter()
                    .any(|(n, vs)| *n == name && vs.contains(&value))
                {
                    return Err(format!(
                        "--plant-trait {v}: the traits drawn are {TRAITS:?}"
                    ));
                }
                a.plant_trait = Some((name.into(), value.into(), f));
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if a.out.as_os_str().is_empty() || a.from.is_empty() {
        return Err("usage: synth_fleet --hosts N --out DIR --from ROOT [--from ROOT ...] [--seed S] [--days D] [--day-tables [--day-sd SD] [--plant DAY:CLASS:FACTOR]] [--plant-trait NAME=VALUE:FACTOR]".into());
    }
    if a.out.exists() {
        return Err(format!("{}: exists; give a new directory", a.out.display()));
    }
    Ok(a)
}

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn scaled(rows: &[SummaryRow], f: f64) -> Vec<SummaryRow> {
    let mul = |v: Option<f64>| v.map(|x| x * f);
    rows.iter()
        .map(|r| {
            let mut r = r.clone();
            r.cost_per_sample_ns = mul(r.cost_per_sample_ns);
            r.cost_per_sample_lo_ns = mul(r.cost_per_sample_lo_ns);
            r.cost_per_sample_hi_ns = mul(r.cost_per_sample_hi_ns);
            r.cost_per_sample_pred_lo_ns = mul(r.cost_per_sample_pred_lo_ns);
            r.cost_per_sample_pred_hi_ns = mul(r.cost_per_sample_pred_hi_ns);
            r.predicted_loss_pct = mul(r.predicted_loss_pct);
            r.predicted_loss_lo_pct = mul(r.predicted_loss_lo_pct);
            r.predicted_loss_hi_pct = mul(r.predicted_loss_hi_pct);
            for (_, stem) in SUMMARY_BUDGETS {
                let mut b = r.budget(stem);
                b.max_hz = b.max_hz.map(|m| m / f);
                b.rate_hz = b
                    .max_hz
                    .and_then(analysis::recommend::nice_prime_below)
                    .map(|v| v as i64);
                r.set_budget(stem, b);
            }
            r
        })
        .collect()
}

fn main() -> Result<(), String> {
    let a = args()?;
    // Real observations: every set with a summary, by class.
    let by: Vec<String> = hosts::DEFAULT_BY.iter().map(|s| s.to_string()).collect();
    let mut shapes: BTreeMap<String, Vec<Vec<SummaryRow>>> = BTreeMap::new();
    let mut costs: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for root in &a.from {
        let s = scan::scan(
            root,
            &scan::ScanOptions {
                make: true,
                ..Default::default()
            },
        )
        .map_err(|e| format!("{}: {e}", root.display()))?;
        // Every set at 1000 Hz by the default classes (hosts reads only
        // `by`, `at_hz` and `all`).
        let opts = analysis::fleet::FleetOptions {
            by: by.clone(),
            at_hz: 1000.0,
            rate_hz: 99.0,
            all: true,
            explain: false,
            make: true,
            cache: false,
            compact: None,
            dates: Vec::new(),
        };
        let obs = hosts::hosts(&s.rows, 0, &[], &opts);
        for o in &obs.obs {
            let Some(cost) = o.cost_ns else { continue };
            let set_rows: Vec<SummaryRow> = s
                .rows
                .iter()
                .filter(|r| {
                    r.set_dir.display().to_string() == o.set_dir
                        && analysis::fleet::pick::in_scope((&r.row).into())
                })
                .map(|r| r.row.clone())
                .collect();
            let class = classes::label(o);
            shapes.entry(class.clone()).or_default().push(set_rows);
            costs.entry(class).or_default().push(cost.ln());
        }
    }
    if shapes.is_empty() {
        return Err(
            "no set with a summary under the --from roots (`analysis summary DIR` makes one)"
                .into(),
        );
    }
    let sigma: BTreeMap<&String, f64> = costs
        .iter()
        .map(|(c, v)| {
            let n = v.len() as f64;
            let m = v.iter().sum::<f64>() / n;
            let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            (
                c,
                if v.len() > 1 && sd.is_finite() {
                    sd
                } else {
                    0.25
                },
            )
        })
        .collect();
    for (c, s) in &sigma {
        eprintln!(
            "class {c}: {} real sets, log-cost sd {s:.3}",
            shapes[*c].len()
        );
    }
    let weighted: Vec<&String> = shapes
        .iter()
        .flat_map(|(c, v)| std::iter::repeat_n(c, v.len()))
        .collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(a.seed);
    let started = std::time::Instant::now();
    let last = chrono::NaiveDate::from_ymd_opt(2026, 11, 27).ok_or("date")?;
    let days: Vec<chrono::NaiveDate> = (0..a.days.max(1))
        .rev()
        .map(|back| last - chrono::Days::new(u64::from(back)))
        .collect();
    if a.day_tables {
        return day_tables(&a, &days, &shapes, &sigma, &weighted, &mut rng);
    }
    let mut trait_rng = rand_chacha::ChaCha8Rng::seed_from_u64(a.seed ^ 0x7e57);
    for i in 0..a.hosts {
        let class = weighted[rng.random_range(0..weighted.len())];
        let options = &shapes[class];
        let shape = &options[rng.random_range(0..options.len())];
        let day = days[rng.random_range(0..days.len())];
        let traits = TRAITS.map(|(n, v)| (n, v[trait_rng.random_range(0..2)]));
        let planted = match &a.plant_trait {
            Some((n, v, f)) if traits.contains(&(n.as_str(), v.as_str())) => *f,
            _ => 1.0,
        };
        let factor = (sigma[class] * normal(&mut rng)).exp() * planted;
        let host = format!("syn-{i:06}");
        let date = day.format("%Y-%m-%d").to_string();
        let set = format!("{}T0000Z-{host}", date.replace('-', ""));
        let started_at = chrono::NaiveDate::parse_from_str(&date, "%Y-%m-%d")
            .map_err(|e| e.to_string())?
            .and_hms_opt(0, 0, 0)
            .map(|t| t.and_utc().timestamp_micros());
        let mut rows = scaled(shape, factor);
        for r in &mut rows {
            traits.iter().for_each(|(n, v)| set_trait(r, n, v));
            r.hostname = Some(host.clone());
            r.set = Some(set.clone());
            r.started_at = started_at;
        }
        let dir = a
            .out
            .join(format!("host={host}"))
            .join(format!("date={date}"))
            .join(&set);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        write_summary(&dir.join(SUMMARY_PARQUET), &rows).map_err(|e| e.to_string())?;
        if (i + 1) % 10_000 == 0 {
            eprintln!(
                "{} hosts written ({:.1} s)",
                i + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    eprintln!(
        "{} hosts in {} ({:.1} s)",
        a.hosts,
        a.out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `--day-tables`: every host on every day, one day table per day.
fn day_tables(
    a: &Args,
    days: &[chrono::NaiveDate],
    shapes: &BTreeMap<String, Vec<Vec<SummaryRow>>>,
    sigma: &BTreeMap<&String, f64>,
    weighted: &[&String],
    rng: &mut rand_chacha::ChaCha8Rng,
) -> Result<(), String> {
    let started = std::time::Instant::now();
    // Each host: its class, shape and own cost factor, kept every day.
    let hosts: Vec<(&String, &Vec<SummaryRow>, f64)> = (0..a.hosts)
        .map(|_| {
            let class = weighted[rng.random_range(0..weighted.len())];
            let options = &shapes[class];
            let shape = &options[rng.random_range(0..options.len())];
            (class, shape, (sigma[class] * normal(rng)).exp())
        })
        .collect();
    let mut n = 0usize;
    for (d, day) in days.iter().enumerate() {
        let date = day.format("%Y-%m-%d").to_string();
        let started_at = day
            .and_hms_opt(0, 0, 0)
            .map(|t| t.and_utc().timestamp_micros());
        let mut table = Vec::new();
        for (i, (class, shape, factor)) in hosts.iter().enumerate() {
            let planted = match &a.plant {
                Some((from, prefix, f))
                    if d as u32 >= *from && class.starts_with(prefix.as_str()) =>
                {
                    *f
                }
                _ => 1.0,
            };
            let f = factor * planted * (a.day_sd * normal(rng)).exp();
            let host = format!("syn-{i:06}");
            let set = format!("{}T0000Z-{host}", date.replace('-', ""));
            for mut r in scaled(shape, f) {
                r.hostname = Some(host.clone());
                r.set = Some(set.clone());
                r.started_at = started_at;
                let set_dir = format!("host={host}/date={date}/{set}");
                table.push(DayRow {
                    host: host.clone(),
                    set_dir,
                    row: r,
                });
            }
            n += 1;
        }
        let dir = a.out.join(format!("date={date}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        write_day_table(&dir.join(DAY_TABLE), &table).map_err(|e| e.to_string())?;
        if (d + 1) % 30 == 0 {
            eprintln!(
                "{} days written ({:.1} s)",
                d + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    eprintln!(
        "{n} host-days ({} hosts x {} days) in {} ({:.1} s)",
        a.hosts,
        days.len(),
        a.out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
