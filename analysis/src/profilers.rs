//! The answer in the words of the profiler a user runs: each production
//! profiler's rate setting at a budget (`analysis recommend --for NAME`),
//! and the measured configuration of the set it rests on. A profiler that
//! walks stacks pays more per sample than perf-default contents, so each
//! setting rests only on a configuration that samples what that profiler
//! samples; without one, the line says its rate is only an upper bound
//! (perf-default's cost is a lower bound on any profiler's) and gives the
//! command that measures the right thing. Flags and units are the
//! profilers' own (docs/guide.md cites each one's documentation).

use serde::Serialize;

use crate::pipeline::Findings;
use crate::recommend::{nice_prime_below, recommend};

/// What a measured configuration samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// perf-default contents or `perf record` without a call graph: what
    /// every sample pays at least.
    Floor,
    /// Kernel and user frame-pointer chains (`perf record -g`).
    FramePointers,
    /// `--call-graph dwarf`: registers and a copy of the user stack.
    Dwarf,
    /// bpftrace's `profile:hz` probe collecting kernel and user stacks.
    Bpftrace,
    /// The agent itself, run by `--profiler`.
    Parca,
    Otel,
    Alloy,
    AsyncProfiler,
}

/// The command a template runs, as a walk: the first match wins.
fn walk_of_template(t: &str) -> Option<Walk> {
    // A word, or a program by its file name (`/usr/bin/parca-agent`).
    let has = |w: &str| {
        let names = t
            .split_whitespace()
            .map(|x| x.rsplit('/').next().unwrap_or(x));
        names.into_iter().any(|x| x.starts_with(w))
    };
    let agents = [
        ("parca-agent", Walk::Parca),
        ("ebpf-profiler", Walk::Otel),
        ("otelcol-ebpf-profiler", Walk::Otel),
        ("alloy", Walk::Alloy),
        ("asprof", Walk::AsyncProfiler),
        ("bpftrace", Walk::Bpftrace),
    ];
    let agent = agents.iter().find(|(cmd, _)| has(cmd)).map(|(_, w)| *w);
    let perf = t.contains("perf record");
    agent.or(match () {
        _ if perf && t.contains("dwarf") => Some(Walk::Dwarf),
        _ if perf && (has("-g") || has("--call-graph")) => Some(Walk::FramePointers),
        _ if perf => Some(Walk::Floor),
        _ => None,
    })
}

/// A sample contents preset (`--sample`), as a walk.
fn walk_of_contents(c: &str) -> Option<Walk> {
    match c.split(" @ ").next().unwrap_or(c) {
        "perf-default" | "time" => Some(Walk::Floor),
        "callchain" => Some(Walk::FramePointers),
        d if d.starts_with("dwarf") => Some(Walk::Dwarf),
        _ => None,
    }
}

/// A profiler users run, in its own words.
struct Profiler {
    name: &'static str,
    title: &'static str,
    /// What measures its cost, best first; a later one stands in.
    rests_on: &'static [Walk],
    /// The line to paste at a rate (Hz).
    line: fn(u64) -> String,
    /// Its own default rate, Hz.
    default_hz: f64,
    /// The command that measures it with this suite, where one can.
    measure: Option<&'static str>,
}

/// Every profiler `--for` names, in the order `--for all` lists them.
const PROFILERS: &[Profiler] = &[
    Profiler {
        name: "perf",
        title: "perf record -g",
        rests_on: &[Walk::FramePointers],
        line: |hz| format!("perf record -F {hz} -g -a"),
        default_hz: 4000.0,
        measure: Some(
            "driver sweep --profiler 'perf record -F {freq} -g -a -o /dev/null' --rates 19,99,999,3999",
        ),
    },
    Profiler {
        name: "perf-dwarf",
        title: "perf record --call-graph dwarf",
        rests_on: &[Walk::Dwarf],
        line: |hz| format!("perf record -F {hz} --call-graph dwarf -a"),
        default_hz: 4000.0,
        measure: Some("driver sweep --sample dwarf:8192 --rates 19,99,999,3999"),
    },
    Profiler {
        name: "bpftrace",
        title: "bpftrace profile probe",
        rests_on: &[Walk::Bpftrace],
        line: |hz| format!("profile:hz:{hz} {{ @[kstack, ustack] = count(); }}"),
        default_hz: f64::NAN,
        measure: Some(
            "driver sweep --profiler \"bpftrace -e 'profile:hz:{freq} { @[ustack, kstack] = count(); }'\" --rates 19,99,999,3999",
        ),
    },
    Profiler {
        name: "parca",
        title: "Parca Agent",
        rests_on: &[Walk::Parca, Walk::Bpftrace],
        line: |hz| format!("parca-agent --profiling-cpu-sampling-frequency={hz}"),
        default_hz: 19.0,
        measure: Some(
            "driver sweep --profiler 'parca-agent --profiling-cpu-sampling-frequency={freq} <its other flags>' --rates 19,99,999",
        ),
    },
    Profiler {
        name: "otel",
        title: "OpenTelemetry eBPF profiler",
        rests_on: &[Walk::Otel, Walk::Bpftrace],
        line: |hz| format!("ebpf-profiler -samples-per-second={hz}"),
        default_hz: 20.0,
        measure: Some(
            "driver sweep --profiler 'ebpf-profiler -samples-per-second={freq} <its other flags>' --rates 19,99,999",
        ),
    },
    Profiler {
        name: "alloy",
        title: "Grafana Alloy pyroscope.ebpf",
        rests_on: &[Walk::Alloy, Walk::Bpftrace],
        line: |hz| format!("pyroscope.ebpf \"default\" {{ sample_rate = {hz} }}"),
        default_hz: 19.0,
        measure: Some(
            "driver sweep --profiler 'alloy run <a config whose pyroscope.ebpf has sample_rate = {freq}>' --rates 19,99,999",
        ),
    },
    Profiler {
        name: "async-profiler",
        title: "async-profiler, cpu mode",
        rests_on: &[Walk::AsyncProfiler],
        line: |hz| format!("asprof -e cpu -i {} <pid>", period_ns(hz)),
        default_hz: 100.0,
        measure: None,
    },
];

/// async-profiler's interval for a rate: ns of CPU time between samples.
fn period_ns(hz: u64) -> u64 {
    (1e9 / hz.max(1) as f64).round() as u64
}

/// The names `--for` takes.
pub fn names() -> Vec<&'static str> {
    PROFILERS.iter().map(|p| p.name).chain(["all"]).collect()
}

/// One profiler's setting at a budget.
#[derive(Debug, Clone, Serialize)]
pub struct Setting {
    /// `--for`'s name.
    pub name: &'static str,
    pub profiler: &'static str,
    pub budget_pct: f64,
    /// The rate to set (a prime below `max_hz`), Hz.
    pub rate_hz: Option<u64>,
    /// The highest rate within the budget, Hz.
    pub max_hz: Option<f64>,
    /// The line to paste, at `rate_hz`.
    pub line: Option<String>,
    /// What the line costs: the loss at `rate_hz` at the upper end the
    /// answer charges, % (budget x rate / max: the charged cost per sample
    /// does not grow as the rate falls). Null for an upper-bound rate,
    /// whose configuration costs less than the profiler.
    pub loss_at_most_pct: Option<f64>,
    /// The profiler's own default rate, Hz (null where it has none).
    pub default_hz: Option<f64>,
    /// The measured configuration the rate rests on.
    pub rests_on: Option<String>,
    /// The configuration stands in for the profiler (bpftrace's stack walk
    /// for an eBPF agent's unwinder).
    pub stand_in: bool,
    /// Nothing here samples what it samples: the rate rests on the
    /// cheapest configuration, so it is an upper bound (its cost a lower
    /// bound).
    pub upper_bound: bool,
    /// The command that measures what it samples, where this set lacks it.
    pub measure: Option<String>,
    /// Whether the profiler's default rate is above the highest within the
    /// budget; null for an upper-bound rate or a profiler without one.
    pub default_over: Option<bool>,
    /// What the default costs when it is within: budget x default / max,
    /// at the upper end the answer charges, %.
    pub default_loss_at_most_pct: Option<f64>,
}

impl Setting {
    /// The setting, what it rests on, any bound, and what would measure it.
    pub fn words(&self) -> String {
        let mut s = self.short();
        match (
            self.default_over,
            self.default_hz,
            self.default_loss_at_most_pct,
        ) {
            (Some(true), Some(d), _) => {
                s.push_str(&format!(
                    "; its default {d} Hz is over the {} % budget",
                    self.budget_pct
                ));
            }
            (Some(false), Some(d), Some(l)) => {
                s.push_str(&format!("; its default {d} Hz costs at most {l:.2} %"));
            }
            _ => {}
        }
        if let Some(m) = &self.measure {
            s.push_str(&format!("; measure it: {m}"));
        }
        s
    }

    /// One line for the answer box: the setting and what it rests on.
    pub fn short(&self) -> String {
        let (Some(line), Some(on)) = (&self.line, &self.rests_on) else {
            let why = "nothing here samples what it samples";
            return format!("{}: no answer at {} % ({why})", self.name, self.budget_pct);
        };
        let basis = match (self.stand_in, self.upper_bound) {
            (true, _) => format!("stand-in: {on}"),
            (_, true) => format!("at most: {on} costs less"),
            _ => format!("on {on}"),
        };
        let cost = self.loss_at_most_pct.map_or_else(
            || format!("{} %", self.budget_pct),
            |l| format!("costs at most {l:.2} % of a {} % budget", self.budget_pct),
        );
        format!("{}: {line} ({cost}, {basis})", self.name)
    }
}

/// A configuration of the set: what it samples, its name, its highest
/// rate within the budget.
struct Config {
    walk: Walk,
    name: String,
    max_hz: Option<f64>,
}

/// Each configuration of the set that says what some profiler samples.
fn configs(a: &Findings, budget_pct: f64) -> Vec<Config> {
    if let Some(t) = &a.subject.profiler {
        let rec = crate::subject::profiler::recommend(t, budget_pct);
        return (walk_of_template(&t.template).into_iter())
            .map(|walk| Config {
                walk,
                name: format!(
                    "--profiler {}",
                    t.template.split_whitespace().next().unwrap_or("")
                ),
                max_hz: rec.max_hz,
            })
            .collect();
    }
    let primary = a.contents.names.first().map(|n| (n.as_str(), a));
    let others = a.other_configs.iter().map(|(n, f)| (n.as_str(), f));
    (primary.into_iter().chain(others))
        .filter_map(|(name, f)| {
            let walk = walk_of_contents(name)?;
            let max_hz = recommend(f, budget_pct).ok().and_then(|r| r.max_hz);
            let name = format!("contents {name}");
            Some(Config { walk, name, max_hz })
        })
        .collect()
}

/// The settings for `name` (one profiler, or `all`) at `budget_pct`; None
/// for a name `--for` does not take.
pub fn settings(a: &Findings, name: &str, budget_pct: f64) -> Option<Vec<Setting>> {
    let chosen: Vec<&Profiler> = PROFILERS
        .iter()
        .filter(|p| name == "all" || p.name == name)
        .collect();
    if chosen.is_empty() {
        return None;
    }
    let configs = configs(a, budget_pct);
    Some(
        chosen
            .into_iter()
            .map(|p| setting(p, &configs, budget_pct))
            .collect(),
    )
}

fn setting(p: &Profiler, configs: &[Config], budget_pct: f64) -> Setting {
    let exact = p.rests_on.iter().enumerate().find_map(|(rank, w)| {
        let c = configs.iter().find(|c| c.walk == *w)?;
        Some((c, rank > 0))
    });
    let floor = || configs.iter().find(|c| c.walk == Walk::Floor);
    let (config, stand_in, upper_bound) = match exact {
        Some((c, stand_in)) => (Some(c), stand_in, false),
        None => (floor(), false, true),
    };
    let max_hz = config.and_then(|c| c.max_hz);
    let rate_hz = max_hz.and_then(nice_prime_below);
    let default_hz = Some(p.default_hz).filter(|d| d.is_finite());
    // The default is judged where the rate rests on what it samples.
    let judged = max_hz.filter(|_| !upper_bound).zip(default_hz);
    let measure = (stand_in || upper_bound)
        .then_some(p.measure)
        .flatten()
        .map(str::to_string);
    Setting {
        name: p.name,
        profiler: p.title,
        budget_pct,
        rate_hz,
        max_hz,
        line: rate_hz.map(p.line),
        loss_at_most_pct: (rate_hz.zip(max_hz))
            .filter(|_| !upper_bound)
            .map(|(r, m)| budget_pct * r as f64 / m),
        default_hz,
        rests_on: config.map(|c| c.name.clone()),
        stand_in,
        upper_bound,
        measure,
        default_over: judged.map(|(m, d)| d > m),
        default_loss_at_most_pct: judged
            .filter(|(m, d)| d <= m)
            .map(|(m, d)| budget_pct * d / m),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn templates_and_contents_say_what_they_sample() {
        let t = walk_of_template;
        assert_eq!(
            t("perf record -F {freq} -g -a -o /dev/null"),
            Some(Walk::FramePointers)
        );
        assert_eq!(
            t("perf record -F {freq} --call-graph dwarf,8192 -a"),
            Some(Walk::Dwarf)
        );
        assert_eq!(
            t("perf record -F {freq} -a -o /dev/null"),
            Some(Walk::Floor)
        );
        let bt = "bpftrace -e 'profile:hz:{freq} { @[ustack, kstack] = count(); }'";
        assert_eq!(t(bt), Some(Walk::Bpftrace));
        let parca = "/usr/bin/parca-agent --profiling-cpu-sampling-frequency={freq}";
        assert_eq!(t(parca), Some(Walk::Parca));
        assert_eq!(t("sleep 1"), None);
        assert_eq!(
            walk_of_contents("callchain @ loop"),
            Some(Walk::FramePointers)
        );
        assert_eq!(walk_of_contents("dwarf:4096"), Some(Walk::Dwarf));
        assert_eq!(walk_of_contents("lbr"), None);
    }

    fn config(walk: Walk, hz: f64) -> Config {
        let name = format!("{walk:?}");
        Config {
            walk,
            name,
            max_hz: Some(hz),
        }
    }

    #[test]
    fn a_setting_rests_on_what_the_profiler_samples_or_says_it_is_a_bound() {
        let parca = PROFILERS.iter().find(|p| p.name == "parca").unwrap();
        let perf = PROFILERS.iter().find(|p| p.name == "perf").unwrap();
        let asp = PROFILERS
            .iter()
            .find(|p| p.name == "async-profiler")
            .unwrap();
        // A bpftrace run stands in for the agent; perf -g has nothing and
        // gets perf-default's rate as an upper bound, never silently.
        let set = [config(Walk::Floor, 659.0), config(Walk::Bpftrace, 602.0)];
        let s = setting(parca, &set, 1.0);
        let hz = nice_prime_below(602.0).unwrap();
        assert_eq!(
            (s.rate_hz, s.stand_in, s.upper_bound),
            (Some(hz), true, false)
        );
        let line = format!("parca-agent --profiling-cpu-sampling-frequency={hz}");
        assert_eq!(s.line, Some(line));
        assert!(
            s.measure
                .as_deref()
                .unwrap()
                .contains("parca-agent --profiling-cpu-sampling-frequency={freq}")
        );
        let s = setting(perf, &set, 1.0);
        assert!(s.upper_bound && s.rests_on.as_deref() == Some("Floor"));
        assert!(s.words().contains("at most") && s.words().contains("perf record -F {freq} -g"));
        // The agent's own run is preferred to the stand-in.
        let own = [config(Walk::Bpftrace, 602.0), config(Walk::Parca, 300.0)];
        let s = setting(parca, &own, 1.0);
        assert_eq!(
            (s.max_hz, s.stand_in, s.measure),
            (Some(300.0), false, None)
        );
        // async-profiler's interval is ns of CPU time.
        let s = setting(asp, &set, 1.0);
        let hz = nice_prime_below(659.0).unwrap();
        let ns = (1e9 / hz as f64).round();
        assert_eq!(s.line, Some(format!("asprof -e cpu -i {ns} <pid>")));
        assert!(s.upper_bound);
        // Nothing measured: no answer, and the command.
        let s = setting(perf, &[], 1.0);
        assert_eq!((s.rate_hz, s.line.is_none()), (None, true));
        assert!(s.words().contains("no answer"));
    }
}
