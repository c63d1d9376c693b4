//! `analysis fleet --explain`: how much of the spread in cost per sample
//! between hosts of one class each host trait explains (docs/methodology.md,
//! "Which host traits explain a fleet's spread"). Each host's log cost
//! less its class's median is one value; per trait, eta squared (one-way
//! analysis of variance over the trait's values), its p from permuting
//! the values among each class's hosts, Holm-adjusted over the traits; a
//! bootstrap over hosts within each value gives 95 % intervals of eta
//! squared and of the effect, the ratio of the costliest value's median
//! to the cheapest's.

use rand::{Rng, SeedableRng};
use results_format::summary::HOST_TRAITS;

use super::classes::label;
use super::hosts::HostObs;
use crate::stats::{grouped, holm, median, sorted};

/// A trait explains part of the spread when its Holm-adjusted p is below
/// this (the family: every trait tested).
pub const EXPLAIN_ALPHA: f64 = 0.05;
/// Fewest hosts with a cost for a class to take part (its median is the
/// hosts' reference), and for a trait's value to be compared.
pub const EXPLAIN_MIN_HOSTS: usize = 3;
/// Bootstrap resamples and permutations, from a fixed seed (the same
/// fleet, the same output).
pub const RESAMPLES: usize = 1000;
const PERMUTATIONS: usize = 999;

/// What one trait explains.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct TraitEffect {
    #[serde(rename = "trait")]
    pub name: String,
    /// Hosts compared (in values of at least [`EXPLAIN_MIN_HOSTS`]).
    pub hosts: usize,
    /// The values compared.
    pub values: usize,
    /// The share of the within-class variance of log cost between the
    /// values, with its 95 % bootstrap interval.
    pub eta2: Option<f64>,
    pub eta2_lo: Option<f64>,
    pub eta2_hi: Option<f64>,
    /// The permutation p, and Holm's over the traits tested.
    pub p: Option<f64>,
    pub p_holm: Option<f64>,
    /// The values with the highest and the lowest median cost, and the
    /// ratio of those medians (class-adjusted) with its 95 % interval.
    pub high: Option<String>,
    pub low: Option<String>,
    pub ratio: Option<f64>,
    pub ratio_lo: Option<f64>,
    pub ratio_hi: Option<f64>,
    pub explains: bool,
    /// Why it was not tested, or what was left out.
    pub note: String,
}

/// The traits, ranked: those that explain part of the spread first, each
/// group by eta squared.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Explain {
    /// Hosts in classes of at least [`EXPLAIN_MIN_HOSTS`] with a cost.
    pub hosts: usize,
    pub classes: usize,
    /// Hosts with a cost in smaller classes, left out.
    pub left_out: usize,
    pub traits: Vec<TraitEffect>,
}

/// Each observation with a cost: its log cost less its class's median
/// (classes of at least [`EXPLAIN_MIN_HOSTS`]), with its trait values.
fn within_class(obs: &[HostObs]) -> (Vec<(usize, &HostObs, f64)>, usize, usize) {
    let with_cost = obs.iter().filter_map(|o| {
        let cost = o.cost_ns.filter(|c| *c > 0.0)?;
        Some((label(o), (o, cost.ln())))
    });
    let by_class = grouped(with_cost);
    let (mut out, mut classes, mut left_out) = (Vec::new(), 0, 0);
    for members in by_class.into_values() {
        if members.len() < EXPLAIN_MIN_HOSTS {
            left_out += members.len();
            continue;
        }
        let m = median(&members.iter().map(|p| p.1).collect::<Vec<_>>());
        out.extend(members.into_iter().map(|(o, y)| (classes, o, y - m)));
        classes += 1;
    }
    (out, classes, left_out)
}

/// Eta squared: the between-value sum of squares over the total; None
/// without spread.
fn eta2(groups: &[Vec<f64>]) -> Option<f64> {
    let n = groups.iter().map(Vec::len).sum::<usize>() as f64;
    let grand = groups.iter().flatten().sum::<f64>() / n;
    let sst: f64 = groups.iter().flatten().map(|y| (y - grand).powi(2)).sum();
    let ssb: f64 = groups
        .iter()
        .map(|g| g.len() as f64 * (g.iter().sum::<f64>() / g.len() as f64 - grand).powi(2))
        .sum();
    (sst > 0.0).then_some(ssb / sst)
}

/// The permutation p of eta squared `observed`: the trait's values
/// shuffled among the hosts of each class ([`PERMUTATIONS`] times).
fn permutation_p(
    points: &[(usize, usize, f64)],
    k: usize,
    observed: f64,
    rng: &mut impl Rng,
) -> f64 {
    use rand::seq::SliceRandom;
    let mut labels: Vec<usize> = points.iter().map(|p| p.1).collect();
    let mut ends = vec![0];
    ends.extend((1..points.len()).filter(|&i| points[i].0 != points[i - 1].0));
    ends.push(points.len());
    let mut as_high = 0;
    for _ in 0..PERMUTATIONS {
        for w in ends.windows(2) {
            labels[w[0]..w[1]].shuffle(rng);
        }
        let mut groups = vec![Vec::new(); k];
        for (p, &l) in points.iter().zip(&labels) {
            groups[l].push(p.2);
        }
        as_high += usize::from(eta2(&groups).is_some_and(|e| e >= observed - 1e-12));
    }
    (1 + as_high) as f64 / (1 + PERMUTATIONS) as f64
}

/// The log ratio of the highest group median to the lowest, and their
/// indices.
fn spread(groups: &[Vec<f64>]) -> (f64, usize, usize) {
    let m: Vec<f64> = groups.iter().map(|g| median(g)).collect();
    let by = |a: &usize, b: &usize| m[*a].total_cmp(&m[*b]);
    let hi = (0..m.len()).max_by(by).unwrap_or(0);
    let lo = (0..m.len()).min_by(by).unwrap_or(0);
    (m[hi] - m[lo], hi, lo)
}

/// The 2.5th and 97.5th percentiles of `v`.
fn interval(v: Vec<f64>) -> (Option<f64>, Option<f64>) {
    let v = sorted(v);
    let q = |q| super::classes::quantile(&v, q);
    (q(0.025), q(0.975))
}

/// What one trait explains; `points` are (class, value, log cost less
/// the class's median), by class.
fn effect(name: &str, points: &[(usize, &str, f64)], rng: &mut impl Rng) -> TraitEffect {
    let known = points.iter().filter(|p| p.1 != "-");
    let mut by_value = grouped(known.map(|&(_, v, y)| (v, y)));
    let known: usize = by_value.values().map(Vec::len).sum();
    let (unknown, all_values) = (points.len() - known, by_value.len());
    by_value.retain(|_, g| g.len() >= EXPLAIN_MIN_HOSTS);
    let (names, groups): (Vec<&str>, Vec<Vec<f64>>) = by_value.into_iter().unzip();
    let hosts: usize = groups.iter().map(Vec::len).sum();
    let mut e = TraitEffect {
        name: name.to_string(),
        hosts,
        values: groups.len(),
        ..TraitEffect::default()
    };
    let small = known - hosts;
    let mut notes = Vec::new();
    if unknown > 0 && all_values > 0 {
        notes.push(format!("{unknown} hosts without it"));
    }
    if small > 0 {
        notes.push(format!(
            "{small} hosts in values of fewer than {EXPLAIN_MIN_HOSTS} left out"
        ));
    }
    let Some(eta) = (groups.len() >= 2).then(|| eta2(&groups)).flatten() else {
        notes.push(match all_values {
            0 => "not recorded".to_string(),
            1 => "one value: nothing to compare".to_string(),
            _ if groups.len() < 2 => {
                format!("too few hosts: needs two values of {EXPLAIN_MIN_HOSTS} hosts or more")
            }
            _ => "no spread within its values".to_string(),
        });
        e.note = notes.join("; ");
        return e;
    };
    let index = |v: &str| names.iter().position(|n| *n == v);
    let kept: Vec<(usize, usize, f64)> = points
        .iter()
        .filter_map(|&(c, v, y)| Some((c, index(v)?, y)))
        .collect();
    let p = permutation_p(&kept, groups.len(), eta, rng);
    let (log_ratio, hi, lo) = spread(&groups);
    let (mut etas, mut ratios) = (Vec::new(), Vec::new());
    for _ in 0..RESAMPLES {
        let again: Vec<Vec<f64>> = groups
            .iter()
            .map(|g| {
                (0..g.len())
                    .map(|_| g[rng.random_range(0..g.len())])
                    .collect()
            })
            .collect();
        etas.extend(eta2(&again));
        ratios.push((median(&again[hi]) - median(&again[lo])).exp());
    }
    ((e.eta2_lo, e.eta2_hi), (e.ratio_lo, e.ratio_hi)) = (interval(etas), interval(ratios));
    (e.eta2, e.p, e.ratio) = (Some(eta), Some(p), Some(log_ratio.exp()));
    (e.high, e.low) = (Some(names[hi].to_string()), Some(names[lo].to_string()));
    e.note = notes.join("; ");
    e
}

/// The traits of `obs` (observations made with `--explain`), ranked.
pub fn explain(obs: &[HostObs]) -> Explain {
    let (points, classes, left_out) = within_class(obs);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2026);
    let mut traits: Vec<TraitEffect> = (HOST_TRAITS.iter().enumerate())
        .map(|(i, (name, _))| {
            let values: Vec<(usize, &str, f64)> = points
                .iter()
                .map(|&(c, o, y)| (c, o.traits.get(i).map_or("-", String::as_str), y))
                .collect();
            effect(name, &values, &mut rng)
        })
        .collect();
    let tested: Vec<usize> = (0..traits.len())
        .filter(|&i| traits[i].p.is_some())
        .collect();
    let p: Vec<f64> = tested.iter().filter_map(|&i| traits[i].p).collect();
    for (&i, adjusted) in tested.iter().zip(holm(&p)) {
        traits[i].p_holm = Some(adjusted);
        traits[i].explains = adjusted < EXPLAIN_ALPHA;
    }
    let rank = |t: &TraitEffect| (!t.explains, t.eta2.is_none(), -t.eta2.unwrap_or(0.0));
    traits.sort_by(|a, b| {
        rank(a)
            .partial_cmp(&rank(b))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    Explain {
        hosts: points.len(),
        classes,
        left_out,
        traits,
    }
}

/// The text table: one line per trait.
pub fn lines(x: &Explain) -> Vec<String> {
    let f = |v: Option<f64>, d: usize| v.map_or("-".into(), |v| format!("{v:.d$}"));
    let mut out = vec![format!(
        "traits, by the share of the within-class spread of log cost each explains \
         ({} hosts in {} classes of {EXPLAIN_MIN_HOSTS}+{}):",
        x.hosts,
        x.classes,
        match x.left_out {
            0 => String::new(),
            n => format!("; {n} hosts in smaller classes left out"),
        }
    )];
    for t in &x.traits {
        let (name, note) = (&t.name, &t.note);
        let (Some(h), Some(l)) = (&t.high, &t.low) else {
            out.push(format!("  {name:<17} not tested: {note}"));
            continue;
        };
        let verdict = match t.explains {
            true => "explains",
            false => "explains nothing (Holm p >= 0.05)",
        };
        let (eta, lo, hi) = (f(t.eta2, 3), f(t.eta2_lo, 3), f(t.eta2_hi, 3));
        let p = f(t.p_holm, 3);
        let (r, rlo, rhi) = (f(t.ratio, 2), f(t.ratio_lo, 2), f(t.ratio_hi, 2));
        let note = match note.is_empty() {
            true => String::new(),
            false => format!(" ({note})"),
        };
        out.push(format!(
            "  {name:<17} {verdict}: eta2 {eta} [{lo}, {hi}], Holm p {p}, {h} {r}x {l} [{rlo}, {rhi}]{note}"
        ));
    }
    out
}

#[cfg(test)]
pub mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A fleet of `n` hosts in three classes (log-cost sd 0.15 within
    /// each), every trait drawn at random apart from the cost; with
    /// `plant`, hosts whose `mitigations` is `mitigated` cost that much more.
    pub fn synthetic(n: usize, plant: Option<f64>, seed: u64) -> Vec<HostObs> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let values = [["mitigated", "vulnerable"], ["dynamic(full)", "none"]];
        (0..n)
            .map(|i| {
                let class = i % 3;
                let traits: Vec<String> = (0..HOST_TRAITS.len())
                    .map(|t| values[t % 2][rng.random_range(0..2)].to_string())
                    .collect();
                let z: f64 = (0..12).map(|_| rng.random::<f64>()).sum::<f64>() - 6.0;
                let mut cost = 10_000.0 * (1.0 + class as f64) * (0.15 * z).exp();
                if traits[0] == "mitigated" {
                    cost *= plant.unwrap_or(1.0);
                }
                HostObs {
                    host: format!("h{i}"),
                    date: String::new(),
                    set: String::new(),
                    set_dir: String::new(),
                    class: vec![format!("c{class}")],
                    traits,
                    hostname: String::new(),
                    freq_hz: 1000,
                    cost_ns: Some(cost),
                    cost_lo_ns: None,
                    cost_hi_ns: None,
                    cost_pred_hi_ns: None,
                    budgets: Vec::new(),
                    max_hz: Vec::new(),
                    conservative: false,
                    drifted: false,
                    bounds_only: false,
                    made: false,
                    started_at_us: None,
                }
            })
            .collect()
    }

    #[test]
    fn a_planted_trait_ranks_first_with_its_ratio() {
        assert_eq!(HOST_TRAITS[0].0, "mitigations");
        let x = explain(&synthetic(150, Some(1.5), 7));
        let first = &x.traits[0];
        assert_eq!(first.name, "mitigations", "{:#?}", x.traits);
        assert!(first.explains);
        assert_eq!(first.high.as_deref(), Some("mitigated"));
        let (lo, hi) = (first.ratio_lo.unwrap(), first.ratio_hi.unwrap());
        assert!(lo < 1.5 && 1.5 < hi, "[{lo}, {hi}]");
        assert!(x.traits[1..].iter().all(|t| !t.explains), "{:#?}", x.traits);
        assert_eq!((x.hosts, x.classes), (150, 3));
    }

    #[test]
    fn small_values_and_one_value_are_said() {
        let mut obs = synthetic(12, None, 1);
        obs.iter_mut()
            .for_each(|o| o.traits[1] = "dynamic(full)".into());
        obs[0].traits[0] = "-".into();
        let x = explain(&obs);
        let t = |n: &str| x.traits.iter().find(|t| t.name == n).unwrap();
        assert!(
            t("preempt").note.contains("one value"),
            "{:?}",
            t("preempt")
        );
        assert!(t("mitigations").note.contains("1 hosts without it"));
        assert_eq!(holm(&[0.01, 0.04, 0.03]), vec![0.03, 0.06, 0.06]);
    }

    /// 100 fleets with no trait effect: at most 5 may find one.
    #[test]
    #[ignore = "slow: cargo test --release -p analysis --lib null_fleets -- --ignored --nocapture"]
    fn null_fleets_find_nothing_95_times_in_100() {
        let found: Vec<u64> = (0..100u64)
            .filter(|&seed| explain(&synthetic(60, None, 1000 + seed)).traits[0].explains)
            .collect();
        println!(
            "{} of 100 null fleets found a trait: seeds {found:?}",
            found.len()
        );
        assert!(found.len() <= 5);
    }
}
