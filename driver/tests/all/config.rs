use std::path::Path;

use driver::config::*;
use results_format::EventKind;
use workload::work::WorkKind;

fn flags() -> FlagSettings {
    FlagSettings::default()
}

#[test]
fn defaults_are_the_article_frequencies_with_the_designs_that_resolve() {
    let o = SweepOptions::resolve(&flags(), None, &[0, 1], 7)
        .and_then(|r| r.finish(None))
        .unwrap();
    assert_eq!(o.rates_hz, vec![0, 100, 500, 2000, 4000, 100_000]);
    assert_eq!(o.duration_ns, 8_000_000_000);
    assert_eq!(o.reps, 5);
    assert_eq!(o.cpu, 1);
    assert_eq!(o.event, EventKind::Cycles);
    assert_eq!(o.scope, ScopeName::System);
    assert_eq!(o.designs, vec![Design::Paired, Design::Gaps, Design::Split]);
    assert_eq!(o.seed, 7);
    assert!(o.util);
}

#[test]
fn durations_parse_with_units() {
    let o = Origin::Flag("--duration");
    assert_eq!(parse_duration("10s", &o).unwrap(), 10_000_000_000);
    assert_eq!(parse_duration("250ms", &o).unwrap(), 250_000_000);
    assert_eq!(parse_duration("1.5", &o).unwrap(), 1_500_000_000);
    assert_eq!(parse_duration("2m", &o).unwrap(), 120_000_000_000);
    assert_eq!(parse_duration("2min", &o).unwrap(), 120_000_000_000);
    assert_eq!(parse_duration("1h", &o).unwrap(), 3_600_000_000_000);
    assert_eq!(parse_duration("250µs", &o).unwrap(), 250_000);
    // Exact, not rounded through a float.
    assert_eq!(parse_duration("4.35s", &o).unwrap(), 4_350_000_000);
    for bad in ["0s", "0", "-1s", "abc", "5 parsecs", "", "1.5ns", "1e3"] {
        let e = parse_duration(bad, &o).unwrap_err().to_string();
        assert!(e.contains("--duration"), "{e}");
    }
}

#[test]
fn zero_is_always_added_and_freqs_sorted() {
    let f = FlagSettings::from_args(&["--freqs", "4000, 100"]).unwrap();
    let o = SweepOptions::resolve(&f, None, &[0, 1], 0)
        .and_then(|r| r.finish(None))
        .unwrap();
    assert_eq!(o.rates_hz, vec![0, 100, 4000]);
    // --rates is the flag, --freqs its alias; the file's key is freqs or rates.
    assert_eq!(
        FlagSettings::from_args(&["--rates", "100,4000"]).unwrap(),
        f
    );
    let exp = ExperimentFile::parse("rates = [4000, 100]\n", Path::new("e.toml")).unwrap();
    assert_eq!(exp.freqs, Some(vec![4000, 100]));
}

#[test]
fn paired_needs_four_phases() {
    // 300 ms holds fewer than four default (100 ms) phases.
    let f = FlagSettings::from_args(&["--design=paired", "--duration=300ms"]).unwrap();
    let e = SweepOptions::resolve(&f, None, &[0, 1], 0)
        .and_then(|r| r.finish(None))
        .unwrap_err()
        .to_string();
    assert!(e.contains("--phase"), "{e}");
    let f = FlagSettings {
        phase_ns: Some(75_000_000),
        ..f
    };
    assert!(
        SweepOptions::resolve(&f, None, &[0, 1], 0)
            .and_then(|r| r.finish(None))
            .is_ok()
    );
}

#[test]
fn file_settings_and_flag_override() {
    let path = Path::new("experiments/x.toml");
    let exp = ExperimentFile::parse(
    "freqs = [0, 1000, 20000]\nduration = \"1s\"\nreps = 2\ndesign = [\"paired\", \"classic\"]\nphase = \"100ms\"\nseed = 3\nevent = \"cpu-clock\"\nscope = \"cpu\"\n",
    path,
)
.unwrap();
    let o = SweepOptions::resolve(&flags(), Some((&exp, path)), &[0, 1], 0)
        .and_then(|r| r.finish(None))
        .unwrap();
    assert_eq!(o.rates_hz, vec![0, 1000, 20000]);
    assert_eq!(o.duration_ns, 1_000_000_000);
    assert_eq!(o.reps, 2);
    assert_eq!(o.designs, vec![Design::Classic, Design::Paired]);
    assert_eq!(o.phase_ns, 100_000_000);
    assert_eq!(o.seed, 3);
    assert_eq!(o.scope, ScopeName::Cpu);
    let f = FlagSettings::from_args(&["--reps=4", "--design=classic", "--seed=9"]).unwrap();
    let o = SweepOptions::resolve(&f, Some((&exp, path)), &[0, 1], 0)
        .and_then(|r| r.finish(None))
        .unwrap();
    assert_eq!(o.reps, 4);
    assert_eq!(o.designs, vec![Design::Classic]);
    assert_eq!(o.seed, 9);
    assert_eq!(o.duration_ns, 1_000_000_000);
}

#[test]
fn unknown_key_is_named_with_the_file() {
    let path = Path::new("experiments/typo.toml");
    let e = ExperimentFile::parse("freqs = [1]\nrepetitions = 3\n", path)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("repetitions") && e.contains("experiments/typo.toml"),
        "{e}"
    );
}

#[test]
fn bad_file_values_name_the_key_and_file() {
    let path = Path::new("e.toml");
    let exp = ExperimentFile::parse("freqs = [100, 100]\n", path).unwrap();
    let e = SweepOptions::resolve(&flags(), Some((&exp, path)), &[0, 1], 0)
        .and_then(|r| r.finish(None))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("key `freqs` in e.toml") && e.contains("duplicate"),
        "{e}"
    );
    let exp = ExperimentFile::parse("reps = 0\n", path).unwrap();
    let e = SweepOptions::resolve(&flags(), Some((&exp, path)), &[0, 1], 0)
        .and_then(|r| r.finish(None))
        .unwrap_err()
        .to_string();
    assert!(e.contains("key `reps`"), "{e}");
}

#[test]
fn a_command_is_split_found_and_replaces_the_workload_with_whole_runs() {
    let f = FlagSettings {
        command: Some("sh -c 'exit 0'".to_owned()),
        rates: Some(FlagList(vec![0, 1000, 10_000])),
        ..flags()
    };
    let o = SweepOptions::resolve(&f, None, &[0, 1], 0)
        .and_then(|r| r.finish(None))
        .unwrap();
    assert_eq!(
        o.subject,
        Subject::Command {
            argv: vec!["sh".to_owned(), "-c".to_owned(), "exit 0".to_owned()],
            warmup: DEFAULT_WARMUP
        }
    );
    assert_eq!(o.designs, vec![Design::Classic]);
    assert_eq!(o.workloads, vec![WorkKind::Command]);
    // Set from the warm-up by the sweep.
    assert_eq!(o.duration_ns, 0);

    // The same from an experiment file, as an argv list.
    let exp = ExperimentFile::parse(
        "command = [\"sh\", \"-c\", \"exit 0\"]\nwarmup = 3\n",
        Path::new("e.toml"),
    )
    .unwrap();
    let o = SweepOptions::resolve(&flags(), Some((&exp, Path::new("e.toml"))), &[0, 1], 0)
        .and_then(|r| r.finish(None))
        .unwrap();
    assert!(matches!(o.subject, Subject::Command { ref argv, warmup: 3 } if argv.len() == 3));
}

/// Resolves the settings `args` give, without an experiment file.
fn resolve_args(args: &[&str]) -> Result<SweepOptions, ConfigError> {
    let f = FlagSettings::from_args(args).unwrap();
    SweepOptions::resolve(&f, None, &[0, 1], 0).and_then(|r| r.finish(None))
}

#[test]
fn cpu_must_be_online_and_the_message_names_the_online_list() {
    // CPU 1 offline: the default is the last online CPU, and --cpu 1 is
    // refused naming the list the sampler would open its events on.
    let online = [0, 2, 3, 5];
    let o = SweepOptions::resolve(&flags(), None, &online, 0)
        .and_then(|r| r.finish(None))
        .unwrap();
    assert_eq!(o.cpu, 5);
    let f = FlagSettings {
        cpu: Some(1),
        ..flags()
    };
    let e = SweepOptions::resolve(&f, None, &online, 0)
        .and_then(|r| r.finish(None))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"1\" for --cpu") && e.contains("no such CPU online") && e.contains("0,2-3,5"),
        "{e}"
    );
    let f = FlagSettings {
        cpu: Some(3),
        ..flags()
    };
    assert_eq!(
        SweepOptions::resolve(&f, None, &online, 0)
            .and_then(|r| r.finish(None))
            .unwrap()
            .cpu,
        3
    );
}

#[test]
fn a_plan_over_the_time_limit_is_refused_and_the_flag_lifts_it() {
    // Default plan: 5 blocks of 3 designs x 6 frequencies + 5 util runs =
    // 115 runs; of 10 h each, 1150 h.
    let f = FlagSettings::from_args(&["--duration", "10h"]).unwrap();
    let e = SweepOptions::resolve(&f, None, &[0, 1], 0)
        .and_then(|r| r.finish(None))
        .unwrap_err();
    assert!(matches!(e, ConfigError::TooLong { .. }), "{e:?}");
    let e = e.to_string();
    for needle in [
        "at least 1150 h",
        "115 runs of 10 h (--duration)",
        "5 blocks (default; --reps) of 23",
        "3 designs (--design) x 6 frequencies with 0 Hz (--rates) + 5 util runs",
        "limit of 24 h",
        "--max-sweep-time 1150h",
    ] {
        assert!(e.contains(needle), "lacks {needle:?}: {e}");
    }
    // The limit lifted to exactly the plan: accepted; an hour short: not.
    let ok = FlagSettings::from_args(&["--duration", "10h", "--max-sweep-time", "1150h"]).unwrap();
    assert_eq!(
        SweepOptions::resolve(&ok, None, &[0, 1], 0)
            .and_then(|r| r.finish(None))
            .unwrap()
            .max_sweep_ns,
        1150 * 3_600_000_000_000
    );
    let short =
        FlagSettings::from_args(&["--duration", "10h", "--max-sweep-time", "1149h"]).unwrap();
    let e = SweepOptions::resolve(&short, None, &[0, 1], 0)
        .and_then(|r| r.finish(None))
        .unwrap_err()
        .to_string();
    assert!(e.contains("limit of 1149 h (--max-sweep-time)"), "{e}");
    // The default plan (115 runs of 8 s) is far inside the default.
    let o = SweepOptions::resolve(&flags(), None, &[0, 1], 0)
        .and_then(|r| r.finish(None))
        .unwrap();
    assert_eq!(o.max_sweep_ns, DEFAULT_MAX_SWEEP_NS);
}

#[test]
fn the_time_limit_and_what_sets_the_plan_come_from_the_file_too() {
    let path = Path::new("experiments/long.toml");
    let exp = ExperimentFile::parse(
    "freqs = [1000]\nduration = \"1min\"\nreps = 40\ndesign = \"classic\"\nutil = false\nmax_sweep_time = \"1h\"\n",
    path,
)
.unwrap();
    // 40 blocks of 2 runs of 1 min: 80 min.
    let e = SweepOptions::resolve(&flags(), Some((&exp, path)), &[0, 1], 0)
        .and_then(|r| r.finish(None))
        .unwrap_err()
        .to_string();
    for needle in [
        "at least 1.3 h",
        "80 runs of 1 min (key `duration` in experiments/long.toml)",
        "40 blocks (key `reps` in experiments/long.toml) of 2",
        "1 design (--design) x 2 frequencies with 0 Hz (--rates)",
        "limit of 1 h (key `max_sweep_time` in experiments/long.toml)",
        "--max-sweep-time 2h",
    ] {
        assert!(e.contains(needle), "lacks {needle:?}: {e}");
    }
    // The flag overrides the file's limit.
    let f = FlagSettings::from_args(&["--max-sweep-time", "2h"]).unwrap();
    assert!(
        SweepOptions::resolve(&f, Some((&exp, path)), &[0, 1], 0)
            .and_then(|r| r.finish(None))
            .is_ok()
    );
}

#[test]
fn a_phase_for_a_plan_without_the_paired_design_is_refused() {
    let e = resolve_args(&["--design=classic", "--phase=200ms"])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"200ms\" for --phase")
            && e.contains("this plan has neither (designs: classic)"),
        "{e}"
    );
    assert!(resolve_args(&["--design=classic,paired", "--phase=200ms"]).is_ok());
    assert!(resolve_args(&["--design=classic"]).is_ok());
}

#[test]
fn a_profiler_samples_a_command_in_whole_runs_only() {
    let o = resolve_args(&[
        "--command",
        "sh -c 'exit 0'",
        "--profiler",
        "perf record -F {freq} -C {cpu} -o /dev/null",
    ])
    .unwrap();
    assert!(matches!(o.subject, Subject::Command { ref argv, .. } if argv.len() == 3));
    assert_eq!(
        o.sampling,
        Sampling::Profiler {
            template: "perf record -F {freq} -C {cpu} -o /dev/null".into()
        }
    );
    // Whole runs of the command, as without a profiler; no util runs (the
    // profiler's handler is not ours to trace).
    assert_eq!(o.designs, vec![Design::Classic]);
    assert!(!o.util);
    // The paired or gaps design has no meaning there: refused, naming the
    // value, the flag and the fix.
    for design in ["paired", "gaps", "classic,gaps"] {
        let e = resolve_args(&[
            "--command",
            "sh -c 'exit 0'",
            "--profiler",
            "perf record -F {freq}",
            "--design",
            design,
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains(design) && e.contains("--design"), "{e}");
        assert!(e.contains("give --design classic"), "{e}");
    }
    // On the loop, gaps only, as before.
    let e = resolve_args(&["--profiler", "perf record -F {freq}", "--design", "classic"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("give --design gaps"), "{e}");
}

#[test]
fn the_split_design_has_phases_that_hold_a_sample() {
    let o = resolve_args(&["--design=split", "--freqs=500,4000", "--phase=100ms"]).unwrap();
    assert_eq!(o.designs, vec![Design::Split]);
    assert!(Design::Split.has_phases() && Design::Split.stamps());
    // A --phase is the split design's too.
    assert!(resolve_args(&["--design=split", "--phase=200ms"]).is_ok());
    // 19 Hz samples every 52.632 ms: a 25 ms phase may hold none. Refused,
    // with the shortest phase that works.
    let e = resolve_args(&["--design=split", "--freqs=19,99", "--phase=25ms"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("25ms") && e.contains("--phase"), "{e}");
    assert!(
        e.contains("19 Hz") && e.contains("give --phase 52.632ms or longer"),
        "{e}"
    );
    assert!(resolve_args(&["--design=split", "--freqs=19,99", "--phase=60ms"]).is_ok());
    // The paired design alone keeps its rule (it counts loop work only).
    assert!(resolve_args(&["--design=paired", "--freqs=19,99", "--phase=25ms"]).is_ok());
    // The default designs hold split where it fits and leave it out (with
    // a warning) where it does not: a default never refuses a sweep that
    // the designs it stands for can run.
    let o = resolve_args(&["--freqs=19,99"]).unwrap();
    assert_eq!(o.designs, vec![Design::Paired, Design::Gaps, Design::Split]);
    let o = resolve_args(&["--freqs=19,99", "--phase=25ms"]).unwrap();
    assert_eq!(o.designs, vec![Design::Paired, Design::Gaps]);
    let o = resolve_args(&["--freqs=5,99"]).unwrap();
    assert_eq!(o.designs, vec![Design::Paired, Design::Gaps]);
}

/// The limit's origin is carried, not guessed from its value: the default
/// passed as a flag is the flag's.
#[test]
fn the_limits_origin_is_where_it_was_set() {
    // Where the limit of a plan of 1 h runs came from, as its refusal says.
    let limit_origin = |f: &FlagSettings, file| {
        let f = FlagSettings {
            duration_ns: Some(3_600_000_000_000),
            ..f.clone()
        };
        match SweepOptions::resolve(&f, file, &[0, 1], 0).and_then(|r| r.finish(None)) {
            Err(ConfigError::TooLong { limit_origin, .. }) => limit_origin,
            other => panic!("{other:?}"),
        }
    };
    let given = FlagSettings::from_args(&["--max-sweep-time", "24h"]).unwrap();
    assert_eq!(given.max_sweep_ns, Some(DEFAULT_MAX_SWEEP_NS));
    assert_eq!(limit_origin(&given, None), "--max-sweep-time");
    assert_eq!(
        limit_origin(&flags(), None),
        "the default; --max-sweep-time sets it"
    );
    let path = Path::new("experiments/long.toml");
    let exp = ExperimentFile::parse("max_sweep_time = \"1h\"\n", path).unwrap();
    let origin = limit_origin(&flags(), Some((&exp, path)));
    assert!(origin.contains("key `max_sweep_time`"), "{origin}");
}
