//! The executor with a mock backend: deterministic, no perf needed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

use driver::config::{Design, FlagSettings, SweepOptions};
use driver::exec::{Backend, RunError, RunOutcome, RunSpec, execute};
use driver::handler::{HandlerInterval, HandlerSource};
use driver::plan::{RunKind, build_plan};
use driver::results::{
    FORMAT_VERSION, Manifest, ResultsDir, Status, missing_runs, read_manifest, read_phases,
    read_runs,
};
use driver::system::quiet::QuietReport;
use results_format::RunStatus;

/// A backend whose loop count falls 1% per kHz, that can fail or interrupt
/// at a given run id, and that checks that every earlier run is already in
/// runs.csv when the next one starts.
struct Mock {
    root: std::path::PathBuf,
    started: Rc<RefCell<Vec<u32>>>,
    fail_at: Option<u32>,
    interrupt_at: Option<u32>,
    interrupt_flag: Option<std::sync::Arc<AtomicBool>>,
    rows_seen_at_start: Rc<RefCell<Vec<usize>>>,
}

impl Backend for Mock {
    fn quiet_check(&mut self, _cpu: u32, _: &AtomicBool) -> QuietReport {
        QuietReport {
            quiet: true,
            busy_pct: 1.0,
            procs_running: 1,
            waited_ns: 100,
        }
    }

    fn run(&mut self, spec: &RunSpec<'_>, _interrupt: &AtomicBool) -> Result<RunOutcome, RunError> {
        let id = spec.run.run_id;
        self.rows_seen_at_start
            .borrow_mut()
            .push(read_runs(&self.root).unwrap().len());
        self.started.borrow_mut().push(id);
        if self.interrupt_at == Some(id) {
            if let Some(f) = &self.interrupt_flag {
                f.store(true, Ordering::SeqCst);
            }
            return Err(RunError::Interrupted);
        }
        if self.fail_at == Some(id) {
            return Err(RunError::Failed(
                "workload killed by signal 9\nstderr: oops".into(),
            ));
        }
        let f = spec.run.freq_hz;
        let iterations = 1_000_000 - f * 10;
        let phases = spec
            .phases
            .iter()
            .enumerate()
            .map(|(i, &on)| driver::results::PhaseRow {
                phase: u32::try_from(i).unwrap(),
                sampling: on,
                iterations: if on { 100 - f / 1000 } else { 100 },
                ..Default::default()
            })
            .collect();
        Ok(RunOutcome {
            row: driver::results::RunRow {
                iterations,
                wall_ns: spec.opts.duration_ns,
                window_ns: if f > 0 { spec.opts.duration_ns } else { 0 },
                samples: f * spec.opts.duration_ns / 1_000_000_000,
                nivcsw: if id == 1 { 1_000_000 } else { 0 },
                ..Default::default()
            },
            intervals: if spec.run.kind == RunKind::Util {
                vec![HandlerInterval {
                    cpu: 1,
                    entry_ns: 5,
                    duration_ns: 1500,
                    source: HandlerSource::Hrtimer,
                }]
            } else {
                Vec::new()
            },
            phases,
            workload_json: format!("{{\"iterations\":{iterations}}}"),
            ..RunOutcome::default()
        })
    }

    fn driver_cpu_ns(&mut self) -> u64 {
        0
    }
}

fn options(design: &str) -> SweepOptions {
    let mut args = vec![
        "--freqs=1000,20000",
        "--duration=1s",
        "--reps=2",
        "--design",
        design,
        "--seed=11",
        "--event=cpu-clock",
    ];
    // A phase only where it applies (it is refused without paired).
    if design.contains("paired") {
        args.push("--phase=100ms");
    }
    let f = FlagSettings::from_args(&args).unwrap();
    SweepOptions::resolve(&f, None, &[0, 1], 0)
        .and_then(|r| r.finish(None))
        .unwrap()
}

fn manifest(opts: SweepOptions) -> Manifest {
    Manifest {
        format_version: FORMAT_VERSION,
        tool_version: "test".into(),
        git_revision: None,
        status: Status::Running,
        started_at: "2026-01-01T00:00:00Z".into(),
        ended_at: None,
        host: serde_json::json!({}),
        seed: opts.seed,
        event: "cpu-clock".into(),
        plan: build_plan(&opts),
        options: opts,
        warnings: vec![],
        settings_changed: vec![],
        command: vec![],
        host_look: None,
    }
}

fn mock(root: &Path) -> Mock {
    Mock {
        root: root.to_owned(),
        started: Rc::default(),
        fail_at: None,
        interrupt_at: None,
        interrupt_flag: None,
        rows_seen_at_start: Rc::default(),
    }
}

fn write_csv_intervals(path: &Path, iv: &[HandlerInterval]) -> Result<(), String> {
    let text: String = iv
        .iter()
        .map(|i| format!("{},{},{},{}\n", i.cpu, i.entry_ns, i.duration_ns, i.source))
        .collect();
    std::fs::write(path, text).map_err(|e| e.to_string())
}

#[test]
fn rows_are_written_as_runs_end_and_a_failure_does_not_stop_the_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("r");
    let mut dir = ResultsDir::create(&root).unwrap();
    let mut m = manifest(options("classic,paired"));
    dir.write_manifest(&m).unwrap();
    let mut b = mock(&root);
    b.fail_at = Some(4);
    let seen = Rc::clone(&b.rows_seen_at_start);
    let plan = m.plan.clone();
    let flag = AtomicBool::new(false);
    let s = execute(&mut b, &mut dir, &mut m, &plan, &flag, &write_csv_intervals).unwrap();
    assert!(!s.interrupted);
    assert_eq!(s.recorded as usize, plan.len());
    assert_eq!(s.failed, 1);
    // Run k starts with exactly k rows on disk: each row lands when its run ends.
    assert_eq!(*seen.borrow(), (0..plan.len()).collect::<Vec<_>>());

    let rows = read_runs(&root).unwrap();
    assert_eq!(rows.len(), plan.len());
    let failed: Vec<_> = rows
        .iter()
        .filter(|r| r.status == RunStatus::Failed)
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].run_id, 4);
    assert!(failed[0].error.contains("signal 9") && failed[0].error.contains("oops"));
    for (row, p) in rows.iter().zip(&plan) {
        assert_eq!(row.run_id, p.run_id);
        assert_eq!(row.freq_hz, p.freq_hz);
        assert_eq!(row.kind, p.kind);
        assert_eq!(row.design, p.design);
        if row.status == RunStatus::Ok {
            assert_eq!(row.iterations, 1_000_000 - p.freq_hz * 10);
            // The paired null control opens a sampler that never fires.
            let opened = p.freq_hz > 0 || p.design == Design::Paired;
            assert_eq!(row.event, if opened { "cpu-clock" } else { "" });
            assert_eq!(row.requested_event, "cpu-clock");
            if p.freq_hz > 0 {
                assert!((row.achieved_hz - p.freq_hz as f64).abs() < 1e-6);
            }
            assert!(
                root.join(format!("workload/run-{}.json", p.run_id))
                    .exists()
            );
        }
        assert_eq!(
            root.join(format!("events/run-{}.parquet", p.run_id))
                .exists(),
            row.status == RunStatus::Ok && p.kind == RunKind::Util
        );
        // Mock makes run 1 switch a million times: flagged, not hidden.
        assert_eq!(row.noisy, row.run_id == 1 && row.status == RunStatus::Ok);
    }
    let phases = read_phases(&root).unwrap();
    let paired_ok = rows
        .iter()
        .filter(|r| {
            r.design == Design::Paired && r.kind == RunKind::Loss && r.status == RunStatus::Ok
        })
        .count();
    // 1 s with 100 ms phases: 400 ms settling, then 6 phases -> one group
    // of four per paired run.
    assert_eq!(phases.len(), paired_ok * 4);
    assert!(
        phases
            .iter()
            .all(|p| rows[p.run_id as usize].freq_hz == p.freq_hz)
    );
    for p in &phases {
        assert_eq!((p.group, p.settle_ns), (0, 400_000_000), "{p:?}");
        let expect = if phases
            .iter()
            .find(|q| q.run_id == p.run_id && q.phase == 0)
            .is_some_and(|q| q.sampling)
        {
            "BAAB"
        } else {
            "ABBA"
        };
        assert_eq!(p.order, expect, "{p:?}");
    }
    // The status is the sweep's run step's (results::set_status), not the
    // executor's: the manifest it rewrote keeps the one it was given.
    let back = read_manifest(&root).unwrap();
    assert_eq!(back.status, Status::Running);
    assert!(back.ended_at.is_none());
}

#[test]
fn interruption_leaves_a_resumable_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("r");
    let mut dir = ResultsDir::create(&root).unwrap();
    let mut m = manifest(options("classic"));
    dir.write_manifest(&m).unwrap();
    let flag = std::sync::Arc::new(AtomicBool::new(false));
    let mut b = mock(&root);
    b.interrupt_at = Some(3);
    b.interrupt_flag = Some(std::sync::Arc::clone(&flag));
    let plan = m.plan.clone();
    let s = execute(&mut b, &mut dir, &mut m, &plan, &flag, &write_csv_intervals).unwrap();
    assert!(s.interrupted);
    assert_eq!(s.recorded, 3);
    drop(dir);
    let back = read_manifest(&root).unwrap();
    assert_eq!(back.status, Status::Running);
    let rows = read_runs(&root).unwrap();
    assert_eq!(
        rows.iter().map(|r| r.run_id).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );

    // Resume: only the missing runs, and the result is complete.
    let todo = missing_runs(&back.plan, &rows);
    assert_eq!(todo.len(), plan.len() - 3);
    assert_eq!(todo[0].run_id, 3);
    let mut dir = ResultsDir::open_existing(&root).unwrap();
    let mut m2 = back;
    let mut b2 = mock(&root);
    let started = Rc::clone(&b2.started);
    let flag2 = AtomicBool::new(false);
    let s2 = execute(
        &mut b2,
        &mut dir,
        &mut m2,
        &todo,
        &flag2,
        &write_csv_intervals,
    )
    .unwrap();
    assert!(!s2.interrupted);
    assert_eq!(
        *started.borrow(),
        todo.iter().map(|r| r.run_id).collect::<Vec<_>>()
    );
    let rows = read_runs(&root).unwrap();
    let mut ids: Vec<u32> = rows.iter().map(|r| r.run_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, plan.iter().map(|r| r.run_id).collect::<Vec<_>>());
}

#[test]
fn repeated_failures_stop_the_sweep() {
    struct AlwaysFails;
    impl Backend for AlwaysFails {
        fn quiet_check(&mut self, _cpu: u32, _: &AtomicBool) -> QuietReport {
            QuietReport::default()
        }
        fn run(&mut self, _: &RunSpec<'_>, _: &AtomicBool) -> Result<RunOutcome, RunError> {
            Err(RunError::Failed("perf refused".into()))
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("r");
    let mut dir = ResultsDir::create(&root).unwrap();
    let mut m = manifest(options("classic"));
    let plan = m.plan.clone();
    let flag = AtomicBool::new(false);
    let s = execute(
        &mut AlwaysFails,
        &mut dir,
        &mut m,
        &plan,
        &flag,
        &write_csv_intervals,
    )
    .unwrap();
    assert!(s.interrupted);
    assert_eq!(s.failed, driver::exec::MAX_CONSECUTIVE_FAILURES);
    assert!(s.stop_reason.unwrap().contains("perf refused"));
}

/// The kernel lowers perf_event_max_sample_rate during the third run: the
/// rows carry the sysctl before and after every run, and the manifest (and
/// log) warn about that run only.
#[test]
fn a_kernel_lowered_max_sample_rate_is_recorded_and_warned() {
    struct Lowering {
        inner: Mock,
        reads: u32,
    }
    impl Backend for Lowering {
        fn quiet_check(&mut self, cpu: u32, f: &AtomicBool) -> QuietReport {
            self.inner.quiet_check(cpu, f)
        }
        fn run(&mut self, spec: &RunSpec<'_>, f: &AtomicBool) -> Result<RunOutcome, RunError> {
            self.inner.run(spec, f)
        }
        fn driver_cpu_ns(&mut self) -> u64 {
            0
        }
        // Two reads per run (before, after): the 6th read is after run 2.
        fn perf_limits(&mut self) -> driver::system::settings::PerfLimits {
            self.reads += 1;
            driver::system::settings::PerfLimits {
                max_sample_rate: Some(if self.reads >= 6 { 63_000 } else { 100_000 }),
                cpu_time_max_percent: Some(25),
            }
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("r");
    let mut dir = ResultsDir::create(&root).unwrap();
    let mut m = manifest(options("classic"));
    let plan = m.plan.clone();
    let flag = AtomicBool::new(false);
    let mut b = Lowering {
        inner: mock(&root),
        reads: 0,
    };
    execute(&mut b, &mut dir, &mut m, &plan, &flag, &write_csv_intervals).unwrap();
    let rows = read_runs(&root).unwrap();
    let rates: Vec<(Option<u64>, Option<u64>)> = rows
        .iter()
        .map(|r| {
            (
                r.perf_event_max_sample_rate_before,
                r.perf_event_max_sample_rate_after,
            )
        })
        .collect();
    assert_eq!(rates[0], (Some(100_000), Some(100_000)));
    assert_eq!(rates[2], (Some(100_000), Some(63_000)));
    assert_eq!(rates[3], (Some(63_000), Some(63_000)));
    assert!(
        rows.iter()
            .all(|r| r.perf_cpu_time_max_percent_before == Some(25)
                && r.perf_cpu_time_max_percent_after == Some(25))
    );
    let on_disk = read_manifest(&root).unwrap().warnings;
    let lowered: Vec<&String> = on_disk
        .iter()
        .filter(|w| w.contains("perf_event_max_sample_rate went down"))
        .collect();
    assert_eq!(lowered.len(), 1, "{on_disk:?}");
    let w = lowered[0];
    assert!(
        w.contains(&format!("run {} ", plan[2].run_id)) && w.contains("100000 to 63000"),
        "{w}"
    );
}
