//! One setting's value, parsed and checked: each error names the value,
//! where it came from (flag or experiment-file key) and the fix.

use super::{
    ConfigError, ContentsError, DEFAULT_MAX_SWEEP_NS, Design, EventKind, KNOWN_EVENTS,
    MAX_STACK_USER_BYTES, OneOrMany, Origin, PRESETS, SampleContents, ScopeName, WorkKind,
    check_warmup, invalid,
};

/// A setting that is a list: a comma-separated flag (already parsed) over
/// an experiment-file key (one value or a list, which must not be empty);
/// None when neither gives it.
pub(super) fn list_setting<T: Clone>(
    flag: Option<&FlagList<T>>,
    (file, origin): (Option<&OneOrMany<String>>, Origin),
    (empty, fix): (&str, &str),
    parse: fn(&str, &Origin) -> Result<T, ConfigError>,
) -> Result<Option<Vec<T>>, ConfigError> {
    if let Some(FlagList(list)) = flag {
        return Ok(Some(list.clone()));
    }
    let Some(list) = file else {
        return Ok(None);
    };
    let list = list.to_vec();
    if list.is_empty() {
        return Err(invalid("[]", &origin, empty, fix));
    }
    list.iter()
        .map(|s| parse(s, &origin))
        .collect::<Result<_, _>>()
        .map(Some)
}

/// The values in their first-given order, each once.
pub(super) fn dedup_in_order<T: PartialEq>(list: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(list.len());
    for v in list {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

pub(super) fn legacy_workloads() -> Vec<WorkKind> {
    vec![WorkKind::Loop]
}

pub(super) fn parse_workload(s: &str, origin: &Origin) -> Result<WorkKind, ConfigError> {
    use workload::work::{KINDS_HELP, KindError};
    match WorkKind::parse(s) {
        Ok(WorkKind::Command) => Err(invalid(
            s,
            origin,
            "the command kind is the user's own program",
            "give it with --command 'CMD ARGS' (or `command` in the experiment file)",
        )),
        Ok(kind) => Ok(kind),
        // The list of kinds is the fix: said once.
        Err(KindError::Unknown(k)) => Err(invalid(
            s,
            origin,
            format!("unknown workload kind '{k}'"),
            KINDS_HELP,
        )),
        Err(e @ KindError::Bad(..)) => Err(invalid(s, origin, e.to_string(), KINDS_HELP)),
    }
}

pub(super) fn legacy_samples() -> Vec<SampleContents> {
    vec![SampleContents::Time]
}

pub(super) fn parse_contents(s: &str, origin: &Origin) -> Result<SampleContents, ConfigError> {
    SampleContents::parse(s).map_err(|e| {
        let size_fix = || {
            format!("give a multiple of 8 bytes from 8 to {MAX_STACK_USER_BYTES}, e.g. dwarf:8192")
        };
        let (what, fix) = match &e {
            ContentsError::Unknown(_) => ("unknown sample contents", format!("use {PRESETS}")),
            ContentsError::StackSize(size) if !size.starts_with(|c: char| c.is_ascii_digit()) => {
                ("the dwarf stack size is not a number of bytes", size_fix())
            }
            ContentsError::StackSize(_) => ("dwarf stack size refused by the kernel", size_fix()),
        };
        invalid(s, origin, what, fix)
    })
}

pub(super) fn parse_design(s: &str, origin: &Origin) -> Result<Design, ConfigError> {
    let fix = "use classic, paired, gaps or split (or several, comma-separated)";
    Design::named(s).ok_or_else(|| invalid(s, origin, "unknown design", fix))
}

pub(super) fn parse_scope(s: &str, origin: &Origin) -> Result<ScopeName, ConfigError> {
    ScopeName::named(s)
        .ok_or_else(|| invalid(s, origin, "unknown scope", "use one of cpu, system, task"))
}

/// Parses a positive duration such as `10s`, `250ms`, `1.5s`, `500us`,
/// `100ns`, `2min`, `1h` (a bare number is seconds) with the workspace's one
/// exact parser ([`workload::duration::parse_duration`]: no float rounding),
/// into nanoseconds.
pub fn parse_duration(text: &str, origin: &Origin) -> Result<u64, ConfigError> {
    use workload::duration::DurationError;
    let fix = "give a positive duration such as 10s, 1.5s, 250ms, 2min or 1h";
    let d = workload::duration::parse_duration(text).map_err(|e| {
        let problem = match e {
            DurationError::Empty(_) => "empty duration".to_owned(),
            DurationError::Syntax(_) => "not a number with a unit".to_owned(),
            DurationError::Unit { unit, .. } => {
                format!("unknown unit `{unit}` (ns, us, µs, ms, s, min, h)")
            }
            DurationError::TooPrecise(_) => "more precise than 1 ns".to_owned(),
            DurationError::TooLarge(_) => "out of range".to_owned(),
        };
        invalid(text, origin, problem, fix)
    })?;
    if d.is_zero() {
        return Err(invalid(text, origin, "must be greater than zero", fix));
    }
    u64::try_from(d.as_nanos()).map_err(|_| invalid(text, origin, "out of range", fix))
}

/// Parses a comma-separated rate list: non-negative integers, no duplicates.
pub fn parse_rate_list(text: &str, origin: &Origin) -> Result<Vec<i64>, ConfigError> {
    let fix =
        "give non-negative integer frequencies in Hz, comma-separated, e.g. --rates 100,1000,4000";
    if text.trim().is_empty() {
        return Err(invalid(text, origin, "empty frequency list", fix));
    }
    text.split(',')
        .map(|item| {
            let item = item.trim();
            if item.is_empty() {
                return Err(invalid(text, origin, "empty item in frequency list", fix));
            }
            item.parse::<i64>()
                .map_err(|_| invalid(item, origin, "not an integer frequency", fix))
        })
        .collect()
}

pub(super) fn check_rates(freqs: &[i64], origin: &Origin) -> Result<Vec<u64>, ConfigError> {
    let fix = "give non-negative integer frequencies in Hz without repeats, e.g. 100,1000,4000";
    if freqs.is_empty() {
        return Err(invalid("[]", origin, "empty frequency list", fix));
    }
    let mut out = Vec::with_capacity(freqs.len() + 1);
    for &f in freqs {
        if f < 0 {
            return Err(invalid(f.to_string(), origin, "negative frequency", fix));
        }
        let f = f.unsigned_abs();
        if out.contains(&f) {
            return Err(invalid(f.to_string(), origin, "duplicate frequency", fix));
        }
        out.push(f);
    }
    if out.iter().all(|&f| f == 0) {
        return Err(invalid(
            "0",
            origin,
            "no sampling frequency: 0 Hz runs measure only the background (they are added to \
             every sweep anyway)",
            "give at least one frequency above 0 Hz, e.g. 100,1000,4000",
        ));
    }
    if !out.contains(&0) {
        out.push(0);
    }
    out.sort_unstable();
    Ok(out)
}

pub(super) fn check_reps(reps: i64, origin: &Origin) -> Result<u32, ConfigError> {
    if reps <= 0 {
        return Err(invalid(
            reps.to_string(),
            origin,
            "repetitions must be at least 1",
            "give e.g. 5",
        ));
    }
    u32::try_from(reps).map_err(|_| {
        invalid(
            reps.to_string(),
            origin,
            "too many repetitions",
            "give e.g. 5",
        )
    })
}

pub(super) fn check_cpu(cpu: i64, online: &[u32], origin: &Origin) -> Result<u32, ConfigError> {
    let fix = format!(
        "this host's online CPUs are {} (/sys/devices/system/cpu/online); give one of them (default: the last)",
        match online {
            [] => "none".to_owned(),
            _ => workload::run::format_cpus(online.iter().map(|&c| u64::from(c))),
        }
    );
    if cpu < 0 {
        return Err(invalid(cpu.to_string(), origin, "negative CPU number", fix));
    }
    match u32::try_from(cpu) {
        Ok(c) if online.contains(&c) => Ok(c),
        _ => Err(invalid(cpu.to_string(), origin, "no such CPU online", fix)),
    }
}

pub(super) fn parse_event(event: &str, origin: &Origin) -> Result<EventKind, ConfigError> {
    event.parse().map_err(|_| {
        invalid(
            event,
            origin,
            "unknown sampling event",
            format!("use one of {}", KNOWN_EVENTS.join(", ")),
        )
    })
}

pub(super) fn parse_int(text: &str, origin: &Origin, fix: &str) -> Result<i64, ConfigError> {
    text.trim()
        .parse::<i64>()
        .map_err(|_| invalid(text, origin, "not an integer", fix))
}

/// A flag value parser's error: the problem and the fix of a
/// [`ConfigError::Invalid`] (the driver's `main` adds the value and the
/// flag, which clap knows). When the bad value is one item of a list, the
/// item is named first.
fn flag_error(e: ConfigError, text: &str) -> String {
    match e {
        ConfigError::Invalid {
            value,
            problem,
            fix,
            ..
        } if value.trim() != text.trim() => format!("{value:?}: {problem}; {fix}"),
        ConfigError::Invalid { problem, fix, .. } => format!("{problem}; {fix}"),
        other => other.to_string(),
    }
}

/// A comma-separated flag value, parsed item by item: `--rates`,
/// `--design`, `--sample`, `--work`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagList<T>(pub Vec<T>);

/// Parses each comma-separated item of `text` with `parse`.
fn list_flag<T>(
    text: &str,
    flag: &'static str,
    parse: fn(&str, &Origin) -> Result<T, ConfigError>,
) -> Result<FlagList<T>, String> {
    let o = Origin::Flag(flag);
    text.split(',')
        .map(|item| parse(item.trim(), &o).map_err(|e| flag_error(e, text)))
        .collect::<Result<_, _>>()
        .map(FlagList)
}

/// `--rates`: non-negative integers without repeats; 0 added, ascending.
pub(crate) fn rates_flag(text: &str) -> Result<FlagList<u64>, String> {
    let o = Origin::Flag("--rates");
    parse_rate_list(text, &o)
        .and_then(|list| check_rates(&list, &o))
        .map(FlagList)
        .map_err(|e| flag_error(e, text))
}

/// `--design`: designs, comma-separated.
pub(super) fn design_flag(text: &str) -> Result<FlagList<Design>, String> {
    list_flag(text, "--design", parse_design)
}

/// `--sample`: sample contents, comma-separated.
pub(crate) fn sample_flag(text: &str) -> Result<FlagList<SampleContents>, String> {
    list_flag(text, "--sample", parse_contents)
}

/// `--work`: work kinds, comma-separated.
pub(crate) fn workload_flag(text: &str) -> Result<FlagList<WorkKind>, String> {
    list_flag(text, "--work", parse_workload)
}

/// `--event`: one of perf's event names (listed by `--help`).
pub(crate) fn event_flag() -> impl clap::builder::TypedValueParser<Value = EventKind> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(KNOWN_EVENTS)
        .try_map(|s| parse_event(&s, &Origin::Flag("--event")).map_err(|e| flag_error(e, &s)))
}

/// `--warmup`: a whole number of runs, 1 to [`MAX_WARMUP`](super::MAX_WARMUP).
pub(super) fn warmup_flag(text: &str) -> Result<u32, String> {
    let o = Origin::Flag("--warmup");
    parse_int(text, &o, "give a whole number, e.g. --warmup 2")
        .and_then(|n| check_warmup(n, text, &o))
        .map_err(|e| flag_error(e, text))
}

/// `--duration`, `--phase` and `--max-sweep-time`: a positive duration, in
/// ns (the message names no flag: clap adds the one given).
pub(crate) fn duration_flag(text: &str) -> Result<u64, String> {
    parse_duration(text, &Origin::Flag("--duration")).map_err(|e| flag_error(e, text))
}

pub(super) fn default_max_sweep_ns() -> u64 {
    DEFAULT_MAX_SWEEP_NS
}

/// `--reps`: a positive integer.
pub(super) fn reps_flag(text: &str) -> Result<u32, String> {
    let o = Origin::Flag("--reps");
    parse_int(text, &o, "give a positive integer, e.g. --reps 5")
        .and_then(|r| check_reps(r, &o))
        .map_err(|e| flag_error(e, text))
}

/// `--cpu`: a CPU number (checked against the online list in resolve).
pub(crate) fn cpu_flag(text: &str) -> Result<u32, String> {
    let fix = "give an online CPU (/sys/devices/system/cpu/online), e.g. --cpu 1";
    let n = parse_int(text, &Origin::Flag("--cpu"), fix).map_err(|e| flag_error(e, text))?;
    if n < 0 {
        return Err(format!("negative CPU number; {fix}"));
    }
    u32::try_from(n).map_err(|_| format!("no such CPU online; {fix}"))
}

/// `--seed`: a non-negative integer.
pub(crate) fn seed_flag(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<u64>()
        .map_err(|_| "not a non-negative integer; give e.g. --seed 42".to_owned())
}

/// `--scope`: one of the scopes (listed by `--help`).
pub(crate) fn scope_flag() -> impl clap::builder::TypedValueParser<Value = ScopeName> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(ScopeName::ALL.iter().map(|s| s.as_str()))
        .try_map(|s| parse_scope(&s, &Origin::Flag("--scope")).map_err(|e| flag_error(e, &s)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::config::*;

    fn flags() -> FlagSettings {
        FlagSettings::default()
    }

    fn resolve_args(args: &[&str]) -> Result<SweepOptions, ConfigError> {
        let f = FlagSettings::from_args(args).unwrap();
        SweepOptions::resolve(&f, None, &[0, 1], 0).and_then(|r| r.finish(None))
    }

    #[test]
    fn bad_freqs_name_the_value() {
        let cases = [
            ("", "empty"),
            ("100,-5", "-5"),
            ("100,abc", "abc"),
            ("100,100", "duplicate"),
            ("100,,200", "empty item"),
        ];
        for (text, needle) in cases {
            // clap adds the value and the flag (the CLI test checks the line).
            let e = rates_flag(text).unwrap_err();
            assert!(
                e.contains(needle) && e.contains("100,1000,4000"),
                "{text}: {e}"
            );
            let e = FlagSettings::from_args(&["--freqs", text]).unwrap_err();
            assert!(e.to_string().contains("--rates"), "{text}: {e}");
        }
        // The offending item of a longer list is named.
        assert!(
            rates_flag("100,abc")
                .unwrap_err()
                .starts_with("\"abc\": not an integer")
        );
    }

    #[test]
    fn a_sweep_without_a_sampling_rate_or_with_runs_too_short_is_refused() {
        for text in ["0", " 0 "] {
            let e = rates_flag(text).unwrap_err();
            assert!(e.contains("no sampling frequency"), "{text}: {e}");
        }
        let e = resolve_args(&["--design=gaps", "--duration=1us", "--freqs=100"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"1us\" for --duration") && e.contains("at least 100 ms"),
            "{e}"
        );
        // Too short is said before the phase is blamed.
        let e = resolve_args(&["--duration=1ns", "--freqs=100"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--duration") && !e.contains("--phase"), "{e}");
        // 10 samples at the lowest rate: 5 Hz needs 2 s.
        let e = resolve_args(&["--duration=1s", "--freqs=5,1000"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("about 5 samples") && e.contains("at least 2.0 s"),
            "{e}"
        );
        assert!(resolve_args(&["--duration=2s", "--freqs=5,1000"]).is_ok());
        assert!(resolve_args(&["--duration=100ms", "--design=gaps", "--freqs=100"]).is_ok());
    }

    #[test]
    fn bad_cpu_and_design() {
        let cases: Vec<(FlagSettings, &str)> = vec![(
            FlagSettings {
                cpu: Some(2),
                ..flags()
            },
            "\"2\" for --cpu",
        )];
        let e = design_flag("paired,fancy").unwrap_err();
        assert!(e.starts_with("\"fancy\": unknown design"), "{e}");
        for (f, needle) in cases {
            let e = SweepOptions::resolve(&f, None, &[0, 1], 0)
                .and_then(|r| r.finish(None))
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn command_errors_name_the_value_the_origin_and_the_fix() {
        let cases: [(&[&str], &[&str]); 9] = [
            (
                &["--command", "no-such-program-xyz --fast"],
                &[
                    "no-such-program-xyz --fast",
                    "--command",
                    "no executable no-such-program-xyz on PATH",
                    "install it",
                ],
            ),
            (&["--command=/etc/passwd"], &["not an executable file"]),
            (
                &["--command", "sh -c 'exit"],
                &["cannot split", "--command"],
            ),
            (&["--command", "   "], &["no program"]),
            (
                &["--command=sh", "--duration=5s"],
                &["--duration", "runs to completion", "--reps"],
            ),
            (
                &["--command=sh", "--design=gaps"],
                &["--design", "whole runs", "classic"],
            ),
            (
                &["--command=sh", "--workload=loop"],
                &["\"loop\" for --work", "the command is the workload"],
            ),
            (
                &["--command=sh", "--scope=task"],
                &["--scope", "--scope cpu"],
            ),
            (&["--warmup=2"], &["\"2\" for --warmup", "for --command"]),
        ];
        for (args, needles) in cases {
            let e = resolve_args(args).unwrap_err().to_string();
            for n in needles {
                assert!(e.contains(n), "{args:?}: {e} lacks {n:?}");
            }
        }
        // Explicitly classic is fine.
        assert!(resolve_args(&["--command=sh", "--design=classic"]).is_ok());
        // Refused by the flags' value parsers (clap adds the value and flag).
        let e = warmup_flag("0").unwrap_err();
        assert!(e.contains("must be 1 to 100"), "{e}");
        let e = workload_flag("command").unwrap_err();
        assert!(e.contains("--command 'CMD ARGS'"), "{e}");
    }

    #[test]
    fn flag_value_parsers_give_the_problem_and_the_fix() {
        // clap adds the value and the flag (driver/src/main.rs); the CLI test
        // checks the whole line.
        let e = reps_flag("0").unwrap_err();
        assert!(e.contains("at least 1") && e.contains("give e.g. 5"), "{e}");
        assert!(reps_flag("x").unwrap_err().contains("not an integer"));
        assert_eq!(reps_flag(" 3 "), Ok(3));
        assert!(cpu_flag("-1").unwrap_err().contains("negative CPU number"));
        assert_eq!(cpu_flag("7"), Ok(7));
        assert!(seed_flag("-1").unwrap_err().contains("--seed 42"));
        assert_eq!(seed_flag("42"), Ok(42));
        assert_eq!(duration_flag("1.5s"), Ok(1_500_000_000));
        let e = duration_flag("0s").unwrap_err();
        assert!(e.contains("greater than zero") && e.contains("10s"), "{e}");
    }

    #[test]
    fn messages_say_the_problem_once_and_where() {
        // A stack size that is no number is not "refused by the kernel".
        let e = sample_flag("dwarf:abc").unwrap_err();
        assert!(e.contains("not a number of bytes"), "{e}");
        // The list of workload kinds once, as the fix.
        let e = workload_flag("memory").unwrap_err();
        assert_eq!(e.matches("memory:SIZE").count(), 1, "{e}");
        // A phase is written back as given, not in ms.
        let e = resolve_args(&["--design=paired", "--phase=10s"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"10s\" for --phase") && e.contains("run of 8s"),
            "{e}"
        );
        // An experiment file's error names the line and column.
        let e = ExperimentFile::parse("freqs = [100]\nreps = \"x\"\n", Path::new("e.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("e.toml: line 2, column 8: "), "{e}");
    }
}
