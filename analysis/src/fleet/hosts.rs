//! One observation per host (its newest set, or every set with `--all`):
//! its cost per sample at the rate nearest `--at`, its budget answers and
//! its class; duplicates said once each.

use std::collections::{BTreeMap, BTreeSet};

use results_format::summary::{BudgetAnswer, HOST_TRAITS, SUMMARY_BUDGETS, SummaryRow, TraitOf};

use super::FleetOptions;
use super::pick::{Standing, in_scope, representative};
use super::scan::{FleetRow, Missing};
use crate::stats::grouped;

/// The class columns `--by` may name (summary columns) beside the host
/// traits ([`HOST_TRAITS`]), each with its value in a row as text.
const CLASSES: [(&str, TraitOf); 13] = [
    ("cpu_model_name", |r| r.cpu_model_name.clone()),
    ("virtualised", |r| {
        r.virtualised
            .map(|v| if v { "vm" } else { "bare metal" }.into())
    }),
    ("event", |r| r.event.clone()),
    ("cpu_vendor", |r| r.cpu_vendor.clone()),
    ("cpu_family", |r| r.cpu_family.map(|v| v.to_string())),
    ("cpu_model", |r| r.cpu_model.map(|v| v.to_string())),
    ("hypervisor", |r| r.hypervisor.clone()),
    ("pmu", |r| {
        r.pmu.map(|v| if v { "pmu" } else { "no pmu" }.into())
    }),
    ("scope", |r| r.scope.clone()),
    ("contents", |r| r.contents.clone()),
    ("work_kind", |r| r.work_kind.clone()),
    ("cpus", |r| r.cpus.map(|v| format!("{v} cpus"))),
    ("tool_version", |r| r.tool_version.clone()),
];

/// The class columns `--by` may name.
pub fn class_columns() -> impl Iterator<Item = &'static str> {
    CLASSES.iter().chain(&HOST_TRAITS).map(|(name, _)| *name)
}

/// The default classes: CPU model x virtualisation x event.
pub const DEFAULT_BY: [&str; 3] = ["cpu_model_name", "virtualised", "event"];

/// The summary columns the fleet reads with classes `by` (and the host
/// traits with `explain`): the scan decodes no other.
pub fn columns_read(by: &[String], explain: bool) -> Vec<String> {
    let mut cols: Vec<String> = "format_version set started_at subject config_primary hostname \
         freq_hz cost_per_sample_ns cost_per_sample_lo_ns cost_per_sample_hi_ns \
         cost_per_sample_pred_hi_ns drift_moved"
        .split_whitespace()
        .map(String::from)
        .collect();
    for (_, stem) in SUMMARY_BUDGETS {
        for what in ["max_hz", "basis", "at_highest_measured"] {
            cols.push(format!("budget_{stem}_{what}"));
        }
    }
    let traits = HOST_TRAITS.iter().map(|(n, _)| n.to_string());
    let traits = explain.then_some(traits).into_iter().flatten();
    // pmu_kind is made from these two.
    let pmu = explain.then(|| ["pmu".to_string(), "virtualised".to_string()]);
    for c in by
        .iter()
        .cloned()
        .chain(traits)
        .chain(pmu.into_iter().flatten())
    {
        if !cols.contains(&c) {
            cols.push(c);
        }
    }
    cols
}

/// A class column's value in a row, as text (`-` for null).
pub fn class_value(row: &SummaryRow, col: &str) -> String {
    let value = CLASSES
        .iter()
        .chain(&HOST_TRAITS)
        .find(|(name, _)| *name == col);
    value
        .and_then(|(_, of)| of(row))
        .unwrap_or_else(|| "-".to_string())
}

/// One host on one date: what the fleet's figures are made of.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HostObs {
    pub host: String,
    pub date: String,
    pub set: String,
    pub set_dir: String,
    /// The class's values, in `--by` order.
    pub class: Vec<String>,
    /// The host traits' values, as [`HOST_TRAITS`] (with `--explain`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub traits: Vec<String>,
    pub hostname: String,
    /// The rate whose cost stands for the host (nearest `--at`), Hz.
    pub freq_hz: i64,
    /// None where no rate of the set has one (no gaps design).
    pub cost_ns: Option<f64>,
    pub cost_lo_ns: Option<f64>,
    pub cost_hi_ns: Option<f64>,
    /// The upper end of the next run's 95 % prediction interval, ns.
    pub cost_pred_hi_ns: Option<f64>,
    /// The host's own answer per budget (as [`SUMMARY_BUDGETS`]).
    #[serde(skip)]
    pub budgets: Vec<BudgetAnswer>,
    pub max_hz: Vec<Option<f64>>,
    /// Its own 1 % answer was the conservative one (model and throughput
    /// disagreed).
    pub conservative: bool,
    /// Its cost moved during its sweep.
    pub drifted: bool,
    /// Some budget's answer rests on upper bounds only.
    pub bounds_only: bool,
    /// The summary was made from the set's tables.
    pub made: bool,
    pub started_at_us: Option<i64>,
}

/// The hosts, and what was said about the rows on the way.
#[derive(Debug, Default)]
pub struct Hosts {
    pub obs: Vec<HostObs>,
    /// One line per duplicate, per set without a cost, per row left out.
    pub notes: Vec<String>,
    /// Hosts that have a missing.json and no set since.
    pub missing: Vec<Missing>,
}

/// The observations: per host the newest date, then the newest start
/// (`--all`: every set), each set's representative row at `--at`, its
/// class by `--by`.
pub fn hosts(
    rows: &[FleetRow],
    left_out: usize,
    missing: &[Missing],
    opts: &FleetOptions,
) -> Hosts {
    let (by, at, all, explain) = (&opts.by, opts.at_hz, opts.all, opts.explain);
    let mut out = Hosts::default();
    let left_out = left_out + rows.iter().filter(|r| !in_scope((&r.row).into())).count();
    if left_out > 0 {
        out.notes.push(format!(
            "{left_out} rows of other subjects (--profiler, --command) or other configurations \
             are left out: the fleet answers for the built-in sampler's primary configuration"
        ));
    }
    let by_host = grouped(
        rows.iter()
            .filter(|r| in_scope((&r.row).into()))
            .map(|r| (r.host.as_str(), r)),
    );
    // A host's sets, keyed (so ordered) by date, started_at, set dir.
    type SetKey = (String, Option<i64>, String);
    let set_key = |r: &FleetRow| {
        (
            r.date.clone(),
            r.row.started_at,
            r.set_dir.display().to_string(),
        )
    };
    // Sets without a cost per sample, by host and date: one note.
    let mut no_cost: BTreeMap<String, usize> = BTreeMap::new();
    // The same set under two host names (copied twice): counted once.
    let mut seen: BTreeMap<(String, Option<i64>, String), String> = BTreeMap::new();
    for (host, rows) in by_host {
        let sets = grouped(rows.into_iter().map(|r| (set_key(r), r)));
        let mut chosen: Vec<(&SetKey, &Vec<&FleetRow>)> = sets.iter().collect();
        if !all {
            let newest = &chosen[chosen.len() - 1].0.0;
            let same_day = chosen.iter().filter(|c| &c.0.0 == newest).count();
            if same_day > 1 {
                out.notes.push(format!(
                    "host {host} appears {same_day} times on {newest}: the newest set is used"
                ));
            }
            chosen.drain(..chosen.len() - 1);
        }
        for (key, set_rows) in chosen {
            let first = &set_rows[0].row;
            let set = first.set.clone().unwrap_or_default();
            let ident = (
                set,
                first.started_at,
                first.hostname.clone().unwrap_or_default(),
            );
            if let Some(other) = seen.get(&ident) {
                out.notes.push(format!(
                    "the set {} appears under host {other} and host {host}: counted once, as {other}",
                    ident.0
                ));
                continue;
            }
            seen.insert(ident, host.to_string());
            let set_summary: Vec<Standing> = set_rows.iter().map(|r| (&r.row).into()).collect();
            let Some(rep) = representative(&set_summary, at).map(|i| set_rows[i]) else {
                let dir = &key.2;
                out.notes
                    .push(format!("host {host} ({dir}): no rate above 0 Hz; left out"));
                continue;
            };
            if rep.row.cost_per_sample_ns.is_none() {
                *no_cost.entry(format!("{host} on {}", key.0)).or_insert(0) += 1;
            }
            out.obs.push(observation(host, rep, by, explain));
        }
    }
    if !no_cost.is_empty() {
        let sets: usize = no_cost.values().sum();
        let which: Vec<String> = no_cost
            .iter()
            .map(|(k, n)| {
                if *n == 1 {
                    k.clone()
                } else {
                    format!("{k} ({n} sets)")
                }
            })
            .collect();
        out.notes.push(format!(
            "{sets} sets have no cost per sample (no gaps design, or its raw files removed): \
             their budget answers count, their cost does not: {}",
            which.join(", ")
        ));
    }
    // A host measured on or after its missing.json's date is not missing.
    let mut newest: BTreeMap<&str, &str> = BTreeMap::new();
    for o in &out.obs {
        let date = newest.entry(&o.host).or_default();
        *date = (*date).max(o.date.as_str());
    }
    let mut named: BTreeSet<(&str, &str)> = BTreeSet::new();
    for m in missing {
        let measured_since = newest
            .get(m.host.as_str())
            .is_some_and(|d| *d >= m.date.as_str());
        if !measured_since && named.insert((m.host.as_str(), m.date.as_str())) {
            out.missing.push(m.clone());
        }
    }
    out
}

fn observation(host: &str, rep: &FleetRow, by: &[String], explain: bool) -> HostObs {
    let r = &rep.row;
    let budgets: Vec<BudgetAnswer> = SUMMARY_BUDGETS.iter().map(|(_, s)| r.budget(s)).collect();
    HostObs {
        host: host.to_string(),
        date: rep.date.clone(),
        set: r.set.clone().unwrap_or_default(),
        set_dir: rep.set_dir.display().to_string(),
        class: by.iter().map(|c| class_value(r, c)).collect(),
        traits: match explain {
            true => HOST_TRAITS.iter().map(|(c, _)| class_value(r, c)).collect(),
            false => Vec::new(),
        },
        hostname: r.hostname.clone().unwrap_or_default(),
        freq_hz: r.freq_hz.unwrap_or_default(),
        cost_ns: r.cost_per_sample_ns,
        cost_lo_ns: r.cost_per_sample_lo_ns,
        cost_hi_ns: r.cost_per_sample_hi_ns,
        cost_pred_hi_ns: r.cost_per_sample_pred_hi_ns,
        max_hz: budgets.iter().map(|b| b.max_hz).collect(),
        conservative: r.budget_1_basis.as_deref() == Some("conservative"),
        drifted: r.drift_moved == Some(true),
        bounds_only: budgets.iter().any(|b| b.basis.as_deref() == Some("bounds")),
        made: rep.made,
        started_at_us: r.started_at,
        budgets,
    }
}
