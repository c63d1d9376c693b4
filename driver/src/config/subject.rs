//! What a sweep measures ([`Subject`]: the built-in loop or the user's
//! program) and what samples it ([`Sampling`]: our sampler or a real
//! profiler), each one enum, so a profiler has one place whatever it
//! samples. The manifest keeps its keys (`command`, `warmup`,
//! `profiler`), so every set and `--resume` reads as before.

use serde::{Deserialize, Serialize};

/// What a sweep measures.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Subject {
    /// The built-in loop.
    #[default]
    Loop,
    /// The user's program in place of the loop (`--command`), as argv,
    /// with its unmeasured warm-up runs.
    Command { argv: Vec<String>, warmup: u32 },
}

/// What samples the subject.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Sampling {
    /// Our own sampler.
    #[default]
    Ours,
    /// A real profiler (`--profiler`), as its template with `{freq}` and
    /// `{cpu}`.
    Profiler { template: String },
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
}

/// The manifest's key for the sampling: the profiler's template, null
/// for our own sampler.
#[derive(Serialize, Deserialize, Default)]
struct SamplingKeys {
    #[serde(default)]
    profiler: Option<String>,
}

impl Serialize for Subject {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (command, warmup) = match self {
            Subject::Loop => (None, 0),
            Subject::Command { argv, warmup } => (Some(argv.clone()), *warmup),
        };
        SubjectKeys { command, warmup }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Subject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let k = SubjectKeys::deserialize(d)?;
        Ok(match k.command {
            Some(argv) => Subject::Command {
                argv,
                warmup: k.warmup,
            },
            None => Subject::Loop,
        })
    }
}

impl Serialize for Sampling {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let profiler = match self {
            Sampling::Ours => None,
            Sampling::Profiler { template } => Some(template.clone()),
        };
        SamplingKeys { profiler }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Sampling {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match SamplingKeys::deserialize(d)?.profiler {
            Some(template) => Sampling::Profiler { template },
            None => Sampling::Ours,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The manifest's keys, both ways, for each subject and sampling.
    #[test]
    fn the_manifest_keys_are_kept() {
        #[derive(Serialize, Deserialize)]
        struct Opts {
            #[serde(flatten)]
            subject: Subject,
            #[serde(flatten)]
            sampling: Sampling,
        }
        let gzip = |warmup| Subject::Command {
            argv: vec!["gzip".into(), "-9".into()],
            warmup,
        };
        let perf = || Sampling::Profiler {
            template: "perf record -F {freq}".into(),
        };
        for (subject, sampling, json) in [
            (
                Subject::Loop,
                Sampling::Ours,
                r#"{"command":null,"warmup":0,"profiler":null}"#,
            ),
            (
                gzip(2),
                Sampling::Ours,
                r#"{"command":["gzip","-9"],"warmup":2,"profiler":null}"#,
            ),
            (
                gzip(1),
                perf(),
                r#"{"command":["gzip","-9"],"warmup":1,"profiler":"perf record -F {freq}"}"#,
            ),
            (
                Subject::Loop,
                perf(),
                r#"{"command":null,"warmup":0,"profiler":"perf record -F {freq}"}"#,
            ),
        ] {
            let opts = Opts { subject, sampling };
            let text = serde_json::to_string(&opts).unwrap();
            assert_eq!(text, json);
            let back: Opts = serde_json::from_str(json).unwrap();
            assert_eq!((back.subject, back.sampling), (opts.subject, opts.sampling));
        }
        // A manifest written before either existed reads as the loop.
        let old: Opts = serde_json::from_str("{}").unwrap();
        assert_eq!((old.subject, old.sampling), (Subject::Loop, Sampling::Ours));
    }
}
