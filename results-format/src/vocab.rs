//! The words that appear in the files (runs.csv, the manifest and its plan),
//! as enums: one spelling, shared by the driver that writes them and the
//! analysis that compares them.

use serde::{Deserialize, Serialize};

macro_rules! names {
    ($ty:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every variant, in the order of their names here.
            pub const ALL: &[$ty] = &[$($ty::$variant),+];

            /// The name used in files and on the command line.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }

            /// The variant of that name ([`Self::as_str`]), if any.
            pub fn named(name: &str) -> Option<$ty> {
                Self::ALL.iter().copied().find(|v| v.as_str() == name)
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// Experiment design (runs.csv `design`, `options.designs`, the plan).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Design {
    /// Whole runs per frequency in randomised blocks (rows written before
    /// designs existed were classic, hence the default).
    #[default]
    Classic,
    /// Sampling switched on and off in alternating ABBA phases within one run.
    Paired,
    /// Whole runs with the workload's timeline on: every interruption of
    /// the loop is a gap, and each sample's cost is the gap that holds it.
    Gaps,
    /// The paired design's phases in a run whose loop stamps its timeline:
    /// the same run gives the paired loss and the gap time and loop speed
    /// outside the gaps, sampling on against off, so the loss splits into
    /// what the gaps hold and what lies outside them.
    Split,
}

names!(Design { Classic => "classic", Paired => "paired", Gaps => "gaps", Split => "split" });

impl Design {
    /// Whether its loss runs switch sampling in ABBA phases (paired, split).
    pub fn has_phases(self) -> bool {
        matches!(self, Design::Paired | Design::Split)
    }

    /// Whether its loss runs stamp the loop's timeline (gaps, split).
    pub fn stamps(self) -> bool {
        matches!(self, Design::Gaps | Design::Split)
    }
}

/// What a run measures (runs.csv `kind`, the plan).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// No tracepoints; the workload's loop count is the measurement.
    #[default]
    Loss,
    /// Handler tracepoints on; handler intervals are the measurement.
    Util,
}

names!(RunKind { Loss => "loss", Util => "util" });

/// The sampling event (runs.csv `event` and `requested_event`, the
/// manifest's `event` and `options.event`): perf's name for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// Software `cpu-clock` (hrtimer driven).
    #[default]
    CpuClock,
    /// Hardware `cycles` (PMU, NMI driven on x86).
    Cycles,
    /// Hardware `instructions`.
    Instructions,
    /// Software `task-clock` (hrtimer driven).
    TaskClock,
}

names!(EventKind {
    CpuClock => "cpu-clock",
    Cycles => "cycles",
    Instructions => "instructions",
    TaskClock => "task-clock",
});

impl EventKind {
    /// A hardware PMU event (sampled from the NMI handler).
    pub fn is_hardware(&self) -> bool {
        matches!(self, EventKind::Cycles | EventKind::Instructions)
    }
}

impl std::str::FromStr for EventKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EventKind::named(s).ok_or_else(|| {
            let names: Vec<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
            format!("unknown event `{s}`; expected one of {}", names.join(", "))
        })
    }
}

/// Which kernel instrumentation timed a handler interval (the `source`
/// column of a run's intervals file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandlerSource {
    /// `nmi:nmi_handler` (PMU sampling).
    Nmi,
    /// `timer:hrtimer_expire_entry/exit` of `perf_swevent_hrtimer` (cpu-clock).
    Hrtimer,
    /// `irq_vectors:local_timer_entry/exit` (the whole timer interrupt).
    LocalTimer,
}

names!(HandlerSource { Nmi => "nmi", Hrtimer => "hrtimer", LocalTimer => "local_timer" });

/// Which CPUs the sampling event watches (runs.csv `scope`,
/// `options.scope`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScopeName {
    /// The measured CPU only (`perf record -C`).
    Cpu,
    /// Every CPU (`perf record -a`, the article's setup, the default).
    #[default]
    System,
    /// The workload process only.
    Task,
}

names!(ScopeName { Cpu => "cpu", System => "system", Task => "task" });

/// How a run ended (runs.csv `status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// The run finished and its numbers can be used.
    Ok,
    /// The run failed; the reason is in `error` (the default: a row whose
    /// status was never set is not used).
    #[default]
    Failed,
    /// Never in a file: the analysis marks a run whose events, gaps or
    /// samples file is unreadable, so every table leaves it out.
    Excluded,
}

names!(RunStatus { Ok => "ok", Failed => "failed", Excluded => "excluded" });

/// Sweep status (manifest.json `status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Runs in progress (or the driver died).
    Running,
    /// Every planned run done.
    Complete,
    /// Stopped by Ctrl-C/SIGTERM or an error; resumable.
    Interrupted,
    /// Absent or a word this build does not know (never written).
    #[default]
    #[serde(other)]
    Unknown,
}

names!(Status {
    Running => "running",
    Complete => "complete",
    Interrupted => "interrupted",
    Unknown => "unknown",
});

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serde_names() {
        for d in [Design::Classic, Design::Paired, Design::Gaps] {
            assert_eq!(serde_json::to_string(&d).unwrap(), format!("\"{d}\""));
        }
        for k in [RunKind::Loss, RunKind::Util] {
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{k}\""));
        }
        for s in [ScopeName::Cpu, ScopeName::System, ScopeName::Task] {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
        for s in [RunStatus::Ok, RunStatus::Failed, RunStatus::Excluded] {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
        for s in [Status::Running, Status::Complete, Status::Interrupted] {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
    }

    #[test]
    fn an_unknown_sweep_status_reads_as_unknown() {
        let s: Status = serde_json::from_str("\"paused\"").unwrap();
        assert_eq!(s, Status::Unknown);
        let s: Status = serde_json::from_str("\"complete\"").unwrap();
        assert_eq!(s, Status::Complete);
    }
}
