//! What a sweep measures: the built-in loop sampled by our sampler, the
//! user's own program (`--command`, sampled by our sampler or by a real
//! profiler), or the loop sampled by a real profiler (`--profiler`). One enum where there were two `Option`s; the
//! manifest keeps its keys (`command`, `warmup`, `profiler`), so every
//! set and `--resume` reads as before.

use serde::{Deserialize, Serialize};

/// What a sweep measures.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Subject {
    /// The built-in loop, sampled by our sampler.
    #[default]
    Loop,
    /// The user's program in place of the loop (`--command`), as argv,
    /// with its unmeasured warm-up runs, sampled by our sampler or, with
    /// `--profiler`, by that profiler (its template).
    Command {
        argv: Vec<String>,
        warmup: u32,
        profiler: Option<String>,
    },
    /// A real profiler in place of our sampler (`--profiler`), as its
    /// template with `{freq}` and `{cpu}`.
    Profiler { template: String },
}

impl Subject {
    /// The command's argv (`--command`), if that is what is measured.
    pub fn command(&self) -> Option<&[String]> {
        match self {
            Subject::Command { argv, .. } => Some(argv),
            _ => None,
        }
    }

    /// The profiler's template (`--profiler`), if that is what samples
    /// (the loop or the command).
    pub fn profiler(&self) -> Option<&str> {
        match self {
            Subject::Profiler { template } => Some(template),
            Subject::Command { profiler, .. } => profiler.as_deref(),
            Subject::Loop => None,
        }
    }

    /// Whether a real profiler samples in place of our sampler.
    pub fn has_profiler(&self) -> bool {
        self.profiler().is_some()
    }

    /// The command's warm-up runs (0 without a command).
    pub fn warmup(&self) -> u32 {
        match self {
            Subject::Command { warmup, .. } => *warmup,
            _ => 0,
        }
    }
}

/// The manifest's keys for the subject, as they always were.
#[derive(Serialize, Deserialize, Default)]
struct SubjectKeys {
    /// The user's program as argv; null for the built-in workload.
    #[serde(default)]
    command: Option<Vec<String>>,
    /// Unmeasured runs of the command (0 without one).
    #[serde(default)]
    warmup: u32,
    /// The profiler's template; null for our own sampler.
    #[serde(default)]
    profiler: Option<String>,
}

impl Serialize for Subject {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        SubjectKeys {
            command: self.command().map(<[String]>::to_vec),
            warmup: self.warmup(),
            profiler: self.profiler().map(str::to_owned),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Subject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let k = SubjectKeys::deserialize(d)?;
        Ok(match (k.command, k.profiler) {
            (Some(argv), profiler) => Subject::Command {
                argv,
                warmup: k.warmup,
                profiler,
            },
            (None, Some(template)) => Subject::Profiler { template },
            (None, None) => Subject::Loop,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The manifest's keys, both ways, for each subject.
    #[test]
    fn the_manifest_keys_are_kept() {
        #[derive(Serialize, Deserialize)]
        struct Opts {
            #[serde(flatten)]
            subject: Subject,
        }
        for (subject, json) in [
            (
                Subject::Loop,
                r#"{"command":null,"warmup":0,"profiler":null}"#,
            ),
            (
                Subject::Command {
                    argv: vec!["gzip".into(), "-9".into()],
                    warmup: 2,
                    profiler: None,
                },
                r#"{"command":["gzip","-9"],"warmup":2,"profiler":null}"#,
            ),
            (
                Subject::Command {
                    argv: vec!["gzip".into()],
                    warmup: 1,
                    profiler: Some("perf record -F {freq}".into()),
                },
                r#"{"command":["gzip"],"warmup":1,"profiler":"perf record -F {freq}"}"#,
            ),
            (
                Subject::Profiler {
                    template: "perf record -F {freq}".into(),
                },
                r#"{"command":null,"warmup":0,"profiler":"perf record -F {freq}"}"#,
            ),
        ] {
            let text = serde_json::to_string(&Opts {
                subject: subject.clone(),
            })
            .unwrap();
            assert_eq!(text, json);
            let back: Opts = serde_json::from_str(json).unwrap();
            assert_eq!(back.subject, subject);
        }
        // A manifest written before either existed reads as the loop.
        let old: Opts = serde_json::from_str("{}").unwrap();
        assert_eq!(old.subject, Subject::Loop);
    }
}
