//! `driver sweep --profiler` against the real kernel with real profilers
//! perf record (Debian's linux-perf) and bpftrace, which CI
//! installs. Under PERF_TESTS=require a missing profiler fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::path::Path;

use driver::results::read_runs;
use results_format::timeline::{TIMELINE_CSV, TimelineRow};

/// Whether `program` is on PATH; else skips (or fails under require).
fn have(program: &str) -> bool {
    let path = std::env::var("PATH").ok();
    if driver::config::find_program(program, path.as_deref()).is_ok() {
        return true;
    }
    common::skip_or_fail(&format!("{program} is not installed"));
    false
}

/// Extra interruptions per second at `freq` over 0 Hz, block by block.
fn excess_rates(out: &Path, freq: u64) -> Vec<f64> {
    let rows = read_runs(out).unwrap();
    let tl: Vec<TimelineRow> = results_format::read_csv_rows(&out.join(TIMELINE_CSV)).unwrap();
    let per_s = |id: u32| {
        let t = tl.iter().find(|t| t.run_id == id).unwrap();
        t.episodes as f64 * 1e9 / (t.loop_end_ns - t.loop_start_ns) as f64
    };
    let mut v = Vec::new();
    for r in rows.iter().filter(|r| r.freq_hz == freq) {
        let zero = rows
            .iter()
            .find(|z| z.freq_hz == 0 && z.block == r.block)
            .unwrap();
        v.push(per_s(r.run_id) - per_s(zero.run_id));
    }
    v
}

/// `perf ARGS -i DATA`'s stdout, which must succeed.
fn perf_out(args: &[&str], data: &Path) -> String {
    let o = std::process::Command::new("perf")
        .args(args)
        .arg("-i")
        .arg(data)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "perf {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// `driver sweep --profiler TEMPLATE --freqs F --reps N --duration 1s`
/// into `out`, run; its output.
fn profiled_sweep(template: &str, freq: &str, reps: &str, out: &Path) -> std::process::Output {
    common::sweep_into(
        &[
            "--profiler",
            template,
            "--freqs",
            freq,
            "--reps",
            reps,
            "--duration",
            "1s",
            "--no-host-look",
        ],
        out,
    )
    .timeout(std::time::Duration::from_secs(120))
    .output()
    .unwrap()
}

/// What this test asserts holds however busy the host is: the profiler
/// started, sampled the measured CPU (perf's own data file: its samples,
/// all on that CPU, none lost), was stopped and reaped, and the report
/// was written. How closely the profiler's extra interruptions track its
/// rate is a magnitude a busy host moves ([79, 388, 2198]/s at
/// 1 kHz one evening, where 500..2500 had been asserted): it is printed
/// here and measured by `analysis/validate/profiler_check.py` and
/// `gaps_vs_perf_record.py` on a quiet machine.
#[test]
fn perf_record_as_the_profiler() {
    let _serial = common::one_at_a_time();
    if !common::perf_ready() || !have("perf") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("perf");
    // Each run's perf record writes here (the last 1 kHz run's file stays;
    // perf renames the one before to perf.data.old).
    let data = tmp.path().join("perf.data");
    let o = profiled_sweep(
        &format!(
            "perf record -e cpu-clock -F {{freq}} -C {{cpu}} -o {}",
            data.display()
        ),
        "1000",
        "3",
        &out,
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("profiler: perf record -e cpu-clock"),
        "{stderr}"
    );
    let rows = read_runs(&out).unwrap();
    assert_eq!(rows.len(), 6, "{rows:?}");
    for r in &rows {
        assert!(r.ok(), "{r:?}");
        // Our sampler opened nothing: no event of ours, no samples.
        assert_eq!((r.event.as_str(), r.samples), ("", 0), "{r:?}");
        if r.freq_hz > 0 {
            assert!(
                r.profiler_cpu_ns.is_some() && r.profiler_peak_rss_kb > Some(0),
                "{r:?}"
            );
            assert!(!r.profiler_cpus.is_empty());
        } else {
            assert_eq!(r.profiler_cpu_ns, None);
        }
    }
    // It sampled: perf's own record of the last 1 kHz run holds samples of
    // the measured CPU and of no other, and perf lost none (its ring holds
    // far more than a second at 1 kHz). At least a tenth of the rate over
    // the run's 1 s: a loose bound that only a profiler that barely ran
    // misses; how many more interruptions the loop saw is printed, not
    // asserted (see above).
    let cpu = rows[0].cpu;
    let cpus = perf_out(&["script", "-F", "cpu"], &data);
    let samples: Vec<&str> = cpus.lines().map(str::trim).collect();
    assert!(samples.len() >= 100, "{} perf samples", samples.len());
    let on_cpu = format!("[{cpu:03}]");
    assert!(
        samples.iter().all(|c| *c == on_cpu),
        "perf record -C {cpu} sampled another CPU: {:?}",
        samples.iter().find(|c| **c != on_cpu)
    );
    let stats = perf_out(&["report", "--stats"], &data);
    for line in stats.lines().filter(|l| l.contains("LOST")) {
        let n = line.split_whitespace().nth(2).unwrap_or("?");
        assert!(n == "0", "perf lost records: {line}");
    }
    eprintln!(
        "extra interruptions/s at 1 kHz (not asserted): {:?}; perf samples in the last run: {}",
        excess_rates(&out, 1000),
        samples.len()
    );
    let md = std::fs::read_to_string(out.join("report/report.md")).unwrap();
    assert!(md.contains("## Your profiler"), "{md}");
    assert!(out.join("report/profiler.csv").is_file());
    // Nothing of the profiler is left running.
    let left = std::process::Command::new("pgrep")
        .args(["-f", "perf record -e cpu-clock -F 1000"])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&left.stdout)
    );
}

#[test]
fn bpftrace_as_the_profiler() {
    let _serial = common::one_at_a_time();
    if !common::perf_ready() || !have("bpftrace") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("bpf");
    // bpftrace prints its maps into this file when the driver stops it
    // with SIGINT: the last 500 Hz run's count of the measured CPU's
    // samples is there.
    let printed = tmp.path().join("bpftrace.out");
    let o = profiled_sweep(
        &format!(
            "bpftrace -o {} -e 'profile:hz:{{freq}} /cpu == {{cpu}}/ {{ @[kstack] = count(); @samples = count(); }}'",
            printed.display()
        ),
        "500",
        "3",
        &out,
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let rows = read_runs(&out).unwrap();
    assert_eq!(rows.len(), 6, "{rows:?}");
    assert!(rows.iter().all(|r| r.ok()), "{rows:?}");
    // It sampled, and was stopped the way that makes it print its maps:
    // at least a tenth of 500 Hz over the run's 1 s, a loose bound that
    // only a profiler that barely ran misses. How many more interruptions
    // the loop saw is a magnitude a busy host moves (a burst in one 0 Hz
    // run once made a block read -741/s): printed, not asserted;
    // `analysis/validate/profiler_check.py` measures it on a quiet host.
    let text = std::fs::read_to_string(&printed).unwrap();
    let samples: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("@samples: "))
        .unwrap_or_else(|| panic!("no @samples in bpftrace's output: {text}"))
        .trim()
        .parse()
        .unwrap();
    assert!(samples >= 50, "{samples} bpftrace samples");
    assert!(out.join("report/report.md").is_file(), "{stderr}");
    eprintln!(
        "extra interruptions/s at 500 Hz (not asserted): {:?}; bpftrace samples in the last run: {samples}",
        excess_rates(&out, 500)
    );
    // Nothing of the profiler is left running.
    let left = std::process::Command::new("pgrep")
        .args(["-f", "profile:hz:500"])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&left.stdout)
    );
}

#[test]
fn a_profiler_that_cannot_start_stops_the_sweep_before_anything_is_measured() {
    let _serial = common::one_at_a_time();
    if !common::perf_ready() || !have("perf") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("bad");
    let o = profiled_sweep(
        "perf record -e no-such-event -F {freq} -C {cpu} -o /dev/null",
        "100",
        "1",
        &out,
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("exited during its start-up") && stderr.contains("nothing was measured"),
        "{stderr}"
    );
    assert!(!out.exists());
}

/// `--profiler` on the user's `--command` (as analysis/validate/
/// nginx_latency.py runs its real server): perf record samples the
/// measured CPU while the command runs,
/// started before it and stopped after; our sampler opens nothing; each
/// run's command finds its own folder in PERF_OVERHEAD_RUN_DIR and what it
/// writes there stays in the set; the report says who sampled.
#[test]
fn perf_record_on_your_command() {
    let _serial = common::one_at_a_time();
    if !common::perf_ready() || !have("perf") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("cmd");
    let data = tmp.path().join("perf.data");
    // About 0.2 s of shell work; it writes where it was told to.
    let command = "sh -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; \
                   echo \"$PERF_OVERHEAD_RUN_DIR\" > \"$PERF_OVERHEAD_RUN_DIR/where\"'";
    let o = common::sweep_into(
        &[
            "--command",
            command,
            "--profiler",
            &format!(
                "perf record -e cpu-clock -F {{freq}} -C {{cpu}} -o {}",
                data.display()
            ),
            "--freqs",
            "1000",
            "--reps",
            "2",
            "--no-host-look",
        ],
        &out,
    )
    .timeout(std::time::Duration::from_secs(120))
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let rows = read_runs(&out).unwrap();
    assert_eq!(rows.len(), 4, "{rows:?}");
    for r in &rows {
        assert!(r.ok(), "{r:?}");
        assert_eq!((r.event.as_str(), r.samples), ("", 0), "{r:?}");
        assert_eq!(r.iterations, 1, "{r:?}");
        assert_eq!(r.profiler_cpu_ns.is_some(), r.freq_hz > 0, "{r:?}");
        let dir = results_format::command_dir(&out, r.run_id);
        let said = std::fs::read_to_string(dir.join("where")).unwrap();
        assert_eq!(said.trim(), dir.display().to_string());
    }
    // perf sampled the measured CPU while the last 1 kHz run's command ran
    // (about 0.1 s of shell work; cpu-clock -C does not sample the idle
    // CPU of perf's 1 s settling: 78 samples here). At least a fifth: only
    // a profiler that barely ran misses it.
    let cpu = rows[0].cpu;
    let cpus = perf_out(&["script", "-F", "cpu"], &data);
    let on_cpu = format!("[{cpu:03}]");
    assert!(
        cpus.lines().count() >= 20,
        "{} samples",
        cpus.lines().count()
    );
    assert!(cpus.lines().all(|c| c.trim() == on_cpu), "{cpus}");
    let report = std::fs::read_to_string(out.join("report").join("report.md")).unwrap();
    assert!(report.contains("## Your command"), "{report}");
    assert!(
        report.contains("Sampled by your profiler `perf record"),
        "{report}"
    );
}
