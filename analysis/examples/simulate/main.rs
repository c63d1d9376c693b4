//! A simulator with known truth: synthetic result sets written through
//! `results_format`'s writers, analysed by the real analysis
//! (`load::load`, `pipeline::analyse`, `recommend::recommend`), and the
//! recommended rate judged against the truth.
//!
//! ```text
//! cargo build --release -p analysis --example simulate
//! target/release/examples/simulate --scenario all --sets 200 --out /tmp/sim
//! ```
//!
//! The truth: the workload is a counting loop; sampling at an achieved
//! rate a (Hz) costs each sample c ns of CPU, the excess of its gap in the
//! loop's timeline (direct) plus the slow chunks right after it
//! (after-effect, decaying with a 1 us time constant), and optionally o ns
//! outside every gap (a slower speed mode over the whole sampled run).
//! True loss at a: L(a) = min(a (c + o) 1e-9, 0.99); the true highest rate
//! within a budget of B %: f*(B) = B / 100 / ((c + o) 1e-9). Every
//! interruption, sample or not, has the same after-effect (the per-sample
//! model's assumption: every episode of a run is charged its run's
//! after-effect per episode).
//!
//! Each set is a default sweep: designs gaps, paired and split at 0 Hz
//! and every rate, 5 blocks in random order, 2 s runs, 100 ms phases
//! (4 settling phases, then 4 groups of ABBA or BAAB), a 250 Hz tick and
//! 200 random background interruptions per second.
//!
//! Scenarios (also in the output's legend, from `truth.rs`):
//!
//! - `quiet`: c = 12 us direct + 3 us after-effect, no outside part; cost
//!   noise 5 % per run, loop speed 1 % between runs, 0.3 % between phases.
//! - `busy`: quiet's cost on a host at ~60 % load: each run's speed x
//!   U(0.6, 1), 5 % between phases, 60 hog interruptions per second
//!   (exponential, mean 250 us, at most 3 ms) in every run, 0 Hz included,
//!   and slow speed modes (x0.5 for 1-4 s, 0.15 starts per second) across
//!   run and phase boundaries. No outside part: a charge is false.
//! - `xeon`: c = 12 us (9.6 + 2.4) and a true outside part o = 20 us per
//!   sample that slows the whole sampled run (off phases too: it cancels
//!   within runs, shows against the block's 0 Hz runs); loop speed 10 %
//!   between runs. A charge is right; its rate is the power.
//! - `throttled`: quiet plus 100 kHz requested, which the kernel delivers
//!   at ~30 kHz (runs.csv `throttled` > 0, `perf_event_max_sample_rate`
//!   lowered to 30000 after the run).
//!
//! Output: `simulation.csv` (one row per set and budget) and
//! `simulation.md` (the table) in `--out`, the table on stdout. Sets are
//! analysed `--jobs` at a time (default: one per CPU).
//! `--check-loose` exits 1, naming the failing cells, unless coverage >=
//! 0.85 in every cell, false charges <= 0.15 where the truth has no
//! outside part and the power >= 0.8 where it has one, and the median
//! ratio >= 0.6 in quiet.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use analysis::recommend::Recommendation;
use anyhow::Context as _;
use clap::Parser;

mod sweep;
mod tally;
mod truth;

use tally::Outcome;
use truth::Scenario;

#[derive(Parser, Debug)]
#[command(about = "Simulated result sets with known truth against the real analysis")]
struct Args {
    /// quiet, busy, xeon, throttled or all.
    #[arg(long, default_value = "all")]
    scenario: String,
    /// Sets per scenario.
    #[arg(long, default_value_t = 20)]
    sets: usize,
    /// Master seed: set k of scenario s uses hash(seed, s, k).
    #[arg(long, default_value_t = 2026)]
    seed: u64,
    /// Loss budgets, %, comma-separated.
    #[arg(long, default_value = "0.1,1,5", value_delimiter = ',')]
    budgets: Vec<f64>,
    /// Where simulation.csv and simulation.md go (default: print only).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Keep the simulated sets (their folder is printed).
    #[arg(long)]
    keep: bool,
    /// Exit 1 unless the loose bounds hold (see the module doc).
    #[arg(long)]
    check_loose: bool,
    /// The first set's index (to rerun set K alone: `--first K --sets 1`).
    #[arg(long, default_value_t = 0)]
    first: usize,
    /// Sets analysed at once (default: the CPUs).
    #[arg(long)]
    jobs: Option<usize>,
    /// Print the first set (`--first`) of each scenario's warnings, excluded runs,
    /// per-sample and split tables and recommendations.
    #[arg(long)]
    verbose: bool,
}

/// splitmix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The seed of set `k` of scenario `name` under master seed `seed`.
fn set_seed(seed: u64, name: &str, k: usize) -> u64 {
    let name_hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    mix(mix(mix(seed) ^ name_hash) ^ k as u64)
}

fn est(e: &analysis::stats::Estimate) -> String {
    format!("{:.0} [{:.0}, {:.0}]", e.value, e.lo, e.hi)
}

/// `--verbose`: what the analysis made of one set.
fn describe(a: &analysis::pipeline::Findings, recs: &[(f64, Recommendation)]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "  warnings ({}):", a.quality.warnings.len());
    for w in &a.quality.warnings {
        let _ = writeln!(s, "    - [{:?}] {}", w.rule, w.text);
    }
    let _ = writeln!(s, "  excluded runs: {}", a.quality.excluded.len());
    for x in &a.quality.excluded {
        let _ = writeln!(s, "    - {}", x.line());
    }
    let faults: usize = a.phase_faults.iter().map(|f| f.groups_excluded).sum();
    let _ = writeln!(s, "  phase groups left out: {faults}");
    if let Some(ps) = &a.gaps.per_sample {
        let _ = writeln!(s, "  per-sample cost (ns; 0 Hz runs {}):", ps.zero_runs);
        for r in &ps.rows {
            let _ = writeln!(
                s,
                "    {:>6} Hz ({:.0} achieved): direct {} after {} total {} pred {} paired loss {} {}",
                r.freq_hz,
                r.achieved_hz,
                est(&r.direct_ns),
                est(&r.after_effect_ns),
                est(&r.total_ns),
                est(&r.total_pred_ns),
                r.paired_loss_pct.map_or("-".to_string(), |p| format!(
                    "{:.3}% [{:.3}, {:.3}]",
                    p.value, p.lo, p.hi
                )),
                r.agreement.map_or("", |g| g.word()),
            );
        }
    } else {
        let _ = writeln!(s, "  no per-sample table");
    }
    let pct = |e: &analysis::stats::Estimate| format!("{:.2} [{:.2}, {:.2}]", e.value, e.lo, e.hi);
    let _ = writeln!(s, "  split (%):");
    for r in &a.gaps.split.rows {
        let _ = writeln!(
            s,
            "    {:>6} Hz: total {} in gaps {} outside {} carry-over {} outside vs 0 Hz {}",
            r.freq_hz,
            pct(&r.total),
            pct(&r.in_gaps),
            pct(&r.outside),
            pct(&r.carryover),
            pct(&r.outside_vs_zero)
        );
    }
    if let Some(m) = &a.budgets.model {
        for f in &m.fits {
            let _ = writeln!(
                s,
                "  {:?}: {} ns, tau2 {:.3}, df {:.1}, p {:.4} (Holm {:.4})",
                f.class,
                est(&f.cost_ns),
                f.tau2,
                f.df,
                f.p,
                f.p_holm
            );
        }
        for e in &m.evidence {
            let _ = writeln!(
                s,
                "    {:?} {} Hz: {:+.3} (se {:.3})",
                e.source, e.freq_hz, e.excess_pct, e.se_pct
            );
        }
        let _ = writeln!(s, "  heterogeneity p {:?}", m.heterogeneity_p);
    }
    for (b, r) in recs {
        let _ = writeln!(
            s,
            "  budget {b} %: rate {:?} ({}), outside charged {}",
            r.rate_hz,
            analysis::summary::basis_word(r),
            r.outside_ns.map_or("no".to_string(), |o| est(&o))
        );
    }
    s
}

/// One set's outcomes, its times to write and to analyse, s, and (with
/// `--verbose`) what the analysis made of it.
struct SetResult {
    outcomes: Vec<Outcome>,
    written_s: f64,
    analysed_s: f64,
    described: Option<String>,
}

/// Writes, analyses and judges set `k` of `sc`; the outcome per budget.
fn one_set(
    sc: &Scenario,
    k: usize,
    args: &Args,
    root: &std::path::Path,
    verbose: bool,
) -> anyhow::Result<SetResult> {
    let seed = set_seed(args.seed, sc.name, k);
    let dir = root.join(format!("{}-{k:04}", sc.name));
    let t0 = Instant::now();
    sweep::write_set(&dir, sc, seed)?;
    let written = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let rs = analysis::load::load(&dir)?;
    let a = analysis::pipeline::analyse(&rs)?;
    let mut recs = Vec::new();
    let mut outcomes = Vec::new();
    for &b in &args.budgets {
        let rec = analysis::recommend::recommend(&a, b)?;
        let true_loss_pct = rec.rate_hz.map(|r| sc.true_loss(r) * 100.0);
        outcomes.push(Outcome {
            scenario: sc.name,
            set: k,
            seed,
            budget_pct: b,
            true_max_hz: sc.true_max_hz(b),
            rate_hz: rec.rate_hz,
            true_loss_pct,
            covered: true_loss_pct.is_none_or(|l| l <= b),
            charged: rec.outside_ns.is_some(),
            basis: analysis::summary::basis_word(&rec),
        });
        recs.push((b, rec));
    }
    let analysed = t1.elapsed().as_secs_f64();
    let described = verbose.then(|| {
        format!(
            "{} set {k} (seed {seed}, {}):\n{}",
            sc.name,
            dir.display(),
            describe(&a, &recs)
        )
    });
    if !args.keep {
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(SetResult {
        outcomes,
        written_s: written,
        analysed_s: analysed,
        described,
    })
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let scenarios: Vec<Scenario> = truth::all()
        .into_iter()
        .filter(|s| args.scenario == "all" || args.scenario == s.name)
        .collect();
    if scenarios.is_empty() {
        anyhow::bail!(
            "--scenario {}: expected quiet, busy, xeon, throttled or all",
            args.scenario
        );
    }
    if args.budgets.iter().any(|b| !(*b > 0.0 && *b < 100.0)) {
        anyhow::bail!("--budgets: each in (0, 100) %");
    }
    // Sets go to memory where there is a tmpfs: the writers sync every row.
    let shm = std::path::Path::new("/dev/shm");
    let tmp = if shm.is_dir() {
        tempfile::Builder::new()
            .prefix("simulate-")
            .tempdir_in(shm)?
    } else {
        tempfile::Builder::new().prefix("simulate-").tempdir()?
    };
    // The sets, shared out to `--jobs` workers; the outcomes do not
    // depend on the order (each set has its own seed).
    let jobs: Vec<(usize, usize)> = (0..scenarios.len())
        .flat_map(|s| (args.first..args.first + args.sets).map(move |k| (s, k)))
        .collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<SetResult>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let started = Instant::now();
    let workers = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let handles: Vec<_> = (0..workers.max(1))
            .map(|_| {
                scope.spawn(|| -> anyhow::Result<()> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&(s, k)) = jobs.get(i) else {
                            return Ok(());
                        };
                        let sc = &scenarios[s];
                        let r = one_set(sc, k, &args, tmp.path(), args.verbose && k == args.first)
                            .with_context(|| format!("{} set {k}", sc.name))?;
                        if let Some(d) = &r.described {
                            eprint!("{d}");
                        }
                        results.lock().map_err(|_| anyhow::anyhow!("poisoned"))?[i] = Some(r);
                        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                        if n.is_multiple_of(10) || n == jobs.len() {
                            eprintln!(
                                "{n}/{} sets ({:.0} s)",
                                jobs.len(),
                                started.elapsed().as_secs_f64()
                            );
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| anyhow::anyhow!("a worker panicked"))??;
        }
        Ok(())
    })?;
    let results: Vec<SetResult> = results
        .into_inner()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .into_iter()
        .flatten()
        .collect();
    let sets = results.len();
    let write_s: f64 = results.iter().map(|r| r.written_s).sum();
    let analyse_s: f64 = results.iter().map(|r| r.analysed_s).sum();
    let outcomes: Vec<Outcome> = results.into_iter().flat_map(|r| r.outcomes).collect();
    eprintln!(
        "{sets} sets in {:.1} s with {workers} workers: {:.3} s per set to write, {:.3} s to \
         analyse (each on one worker)",
        started.elapsed().as_secs_f64(),
        write_s / sets.max(1) as f64,
        analyse_s / sets.max(1) as f64
    );
    if args.keep {
        eprintln!("sets kept in {}", tmp.keep().display());
    }
    let cells: Vec<tally::Cell> = scenarios
        .iter()
        .flat_map(|s| tally::cells(&outcomes, s.name, s.has_outside(), &args.budgets))
        .collect();
    let mut md = format!(
        "# Simulated sweeps against the analysis\n\n{} sets per scenario, master seed {}; \
         coverage: the true loss at the recommended rate within the budget (no rate counts as \
         covered); charges: `outside_ns` set; ratio: recommended / true highest rate (no rate: \
         0).\n\n",
        args.sets, args.seed
    );
    for s in &scenarios {
        md.push_str(&format!("- {}\n", s.legend()));
    }
    md.push('\n');
    md.push_str(&tally::markdown(&cells));
    print!("{md}");
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out)?;
        let mut csv = std::fs::File::create(out.join("simulation.csv"))?;
        writeln!(csv, "{}", tally::CSV_HEADER)?;
        for o in &outcomes {
            writeln!(csv, "{}", tally::csv_line(o))?;
        }
        std::fs::write(out.join("simulation.md"), &md)?;
    }
    if args.check_loose {
        let failed = tally::loose_failures(&cells);
        if !failed.is_empty() {
            for f in &failed {
                eprintln!("check-loose: {f}");
            }
            std::process::exit(1);
        }
        eprintln!("check-loose: every cell within the loose bounds");
    }
    Ok(())
}
