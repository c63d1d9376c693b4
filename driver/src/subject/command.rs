//! The user's own program as the workload (`driver sweep --command 'CMD
//! ARGS'`): its argv checked before anything runs, and one run of it pinned
//! to the measured CPU, timed from just before the fork to the moment the
//! kernel reports its exit.
//!
//! The loss of a command comes from whole runs (its wall time at F Hz
//! against 0 Hz, hyperfine-style), not from a loop's count: see
//! analysis::subject::command for the estimator.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use procfs::process::{Process, Stat};
use results_format::RunRow;
use workload::clock::monotonic_raw_ns;

use crate::system::process::read_pipe;

/// How much of a failed command's stderr a run records.
pub const STDERR_TAIL_BYTES: usize = 2000;

/// Why a run of the command has no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CommandError {
    /// It could not be started.
    #[error("cannot start {program}: {message}")]
    Spawn {
        /// `argv[0]`.
        program: String,
        /// The OS error.
        message: String,
    },
    /// It exited non-zero or was killed by a signal.
    #[error("the command {status}; its stderr ends: {stderr}")]
    Exit {
        /// "exited with status 1", "was killed by signal 9".
        status: String,
        /// The last [`STDERR_TAIL_BYTES`] of its stderr.
        stderr: String,
    },
    /// It ran longer than its time limit and was killed.
    #[error("the command ran longer than {limit_s:.1} s and was killed (process group)")]
    TimedOut {
        /// The limit, s.
        limit_s: f64,
    },
    /// Ctrl-C/SIGTERM: it was killed.
    #[error("interrupted")]
    Interrupted,
}

/// What the waiter thread sends: the exit, when it was seen, and the
/// process's counters read before it was reaped (`read_usage`).
struct Exited {
    at_ns: u64,
    status: std::io::Result<std::process::ExitStatus>,
    usage: RunRow,
}

/// Runs `argv` once pinned to `cpu` (it and everything it starts inherit
/// the affinity), stdin and stdout on /dev/null, stderr kept for the
/// error. Stops it (its whole process group) on `interrupt` or after
/// `limit`. A sampler switched on before the call and off after it covers
/// the command's whole life. `run_dir`, created here, is named to the
/// command by `PERF_OVERHEAD_RUN_DIR`: the folder for its own files.
/// Returns the run's measured columns: `iterations` 1 (one whole run),
/// `wall_ns` from just before the fork to the exit, `started_at_ns` and
/// `ended_at_ns` (CLOCK_MONOTONIC_RAW), and its CPU time, context
/// switches and run-queue wait (`read_usage`).
pub fn run_pinned(
    argv: &[String],
    cpu: u32,
    limit: Duration,
    interrupt: &AtomicBool,
    run_dir: Option<&Path>,
) -> Result<RunRow, CommandError> {
    let program = argv.first().cloned().unwrap_or_default();
    let mut cmd = Command::new(&program);
    if let Some(d) = run_dir {
        std::fs::create_dir_all(d).map_err(|e| CommandError::Spawn {
            program: program.clone(),
            message: format!("cannot create its folder {}: {e}", d.display()),
        })?;
        cmd.env(results_format::COMMAND_DIR_VAR, d);
    }
    cmd.args(argv.iter().skip(1))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // Its own process group: Ctrl-C reaches the driver only, and a
        // time-out or interruption stops everything the command started.
        .process_group(0);
    let (tx, rx) = mpsc::channel::<Started>();
    let (done_tx, done_rx) = mpsc::channel::<Exited>();
    // The fork happens on a thread pinned to the measured CPU (the driver's
    // own threads keep off it), so the command starts there; that thread
    // then waits for the exit.
    let waiter = std::thread::spawn(move || fork_pinned_and_wait(cmd, cpu, &tx, &done_tx));
    let started = rx
        .recv()
        .unwrap_or_else(|_| Err("spawner thread ended".into()));
    let (pid, started_at_ns, stderr) = match started {
        Ok(v) => v,
        Err(message) => {
            let _ = waiter.join();
            return Err(CommandError::Spawn { program, message });
        }
    };
    let stderr = read_pipe(stderr);
    let (exited, stopped) = wait_or_stop(&done_rx, pid, limit, interrupt);
    let _ = waiter.join();
    let stderr = tail(&stderr.join().unwrap_or_default(), STDERR_TAIL_BYTES);
    if let Some(e) = stopped {
        return Err(e);
    }
    let Some(exited) = exited else {
        return Err(CommandError::Spawn {
            program,
            message: "the waiter thread ended without the exit status".into(),
        });
    };
    let status = exited.status.map_err(|e| CommandError::Spawn {
        program: program.clone(),
        message: e.to_string(),
    })?;
    if !status.success() {
        return Err(CommandError::Exit {
            status: describe_status(status),
            stderr: stderr.trim().to_string(),
        });
    }
    Ok(RunRow {
        iterations: 1,
        wall_ns: exited.at_ns.saturating_sub(started_at_ns),
        started_at_ns,
        ended_at_ns: exited.at_ns,
        ..exited.usage
    })
}

/// What the spawner thread sends once the command is forked: its pid, the
/// clock just before the fork, and its stderr; or why it could not start.
type Started = Result<(u32, u64, Option<std::process::ChildStderr>), String>;

/// The spawner thread: pins itself to `cpu`, forks the command (which
/// inherits the pin), waits for its exit without reaping it, reads its
/// counters from /proc, then reaps it.
fn fork_pinned_and_wait(
    mut cmd: Command,
    cpu: u32,
    started: &mpsc::Sender<Started>,
    done: &mpsc::Sender<Exited>,
) {
    if let Err(e) = crate::system::process::pin_to([cpu]) {
        let _ = started.send(Err(format!("cannot pin to CPU {cpu}: {e}")));
        return;
    }
    let started_at_ns = monotonic_raw_ns();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = started.send(Err(e.to_string()));
            return;
        }
    };
    let pid = child.id();
    let _ = started.send(Ok((pid, started_at_ns, child.stderr.take())));
    // Wait without reaping, so /proc/<pid> still holds its counters.
    let rpid = rustix::process::Pid::from_child(&child);
    let _ = rustix::process::waitid(
        rustix::process::WaitId::Pid(rpid),
        rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT,
    );
    let at_ns = monotonic_raw_ns();
    let usage = read_usage(pid);
    let status = child.wait();
    let _ = done.send(Exited {
        at_ns,
        status,
        usage,
    });
}

/// Waits for the exit; on `interrupt` or past `limit`, kills the command's
/// process group (once) and keeps waiting for the exit it causes.
fn wait_or_stop(
    done: &mpsc::Receiver<Exited>,
    pid: u32,
    limit: Duration,
    interrupt: &AtomicBool,
) -> (Option<Exited>, Option<CommandError>) {
    let t0 = std::time::Instant::now();
    let mut stopped: Option<CommandError> = None;
    loop {
        match done.recv_timeout(Duration::from_millis(50)) {
            Ok(e) => return (Some(e), stopped),
            Err(mpsc::RecvTimeoutError::Disconnected) => return (None, stopped),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if stopped.is_some() {
            continue;
        }
        if interrupt.load(Ordering::SeqCst) {
            stopped = Some(CommandError::Interrupted);
        } else if t0.elapsed() > limit {
            stopped = Some(CommandError::TimedOut {
                limit_s: limit.as_secs_f64(),
            });
        }
        if stopped.is_some() {
            super::profiler::signal_group(pid, rustix::process::Signal::KILL);
        }
    }
}

/// Runs the command `n` times, unmeasured, as the measured runs will run
/// it (pinned, no sampler): the first failure stops it. Returns each run's
/// wall time, ns.
pub fn warm_up(
    argv: &[String],
    cpu: u32,
    n: u32,
    interrupt: &AtomicBool,
) -> Result<Vec<u64>, CommandError> {
    let mut walls = Vec::new();
    for i in 0..n {
        // A warm-up run's own files go to a folder removed after it.
        let dir = tempfile::tempdir().map_err(|e| CommandError::Spawn {
            program: argv.first().cloned().unwrap_or_default(),
            message: format!("cannot create a temporary folder for its warm-up run: {e}"),
        })?;
        let r = run_pinned(argv, cpu, WARMUP_LIMIT, interrupt, Some(dir.path()))?;
        tracing::info!(
            "warm-up run {}/{n} of the command: {:.3} s",
            i + 1,
            r.wall_ns as f64 * 1e-9
        );
        walls.push(r.wall_ns);
    }
    Ok(walls)
}

/// The longest a warm-up run may take.
pub const WARMUP_LIMIT: Duration = Duration::from_secs(600);

/// The longest a measured run may take before it is killed and recorded
/// as failed: ten times the expected run, at least a minute.
pub fn run_limit(expected_run_ns: u64) -> Duration {
    Duration::from_nanos(expected_run_ns.saturating_mul(10)).max(Duration::from_secs(60))
}

fn describe_status(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => status.to_string(),
    }
}

/// The last `max` bytes of `text` (at a character boundary), with `...`
/// before it when cut.
pub fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("...{}", &text[start..])
}

/// A zombie's CPU times (`user_ns`, `sys_ns`: the command and the
/// children it waited for, clock-tick resolution), its main process's
/// context switches (`nvcsw`, `nivcsw`) and run-queue wait (`wait_ns`,
/// None without schedstat; its children's is not counted); zeros when
/// unreadable.
fn read_usage(pid: u32) -> RunRow {
    let mut u = RunRow::default();
    let Some(process) = i32::try_from(pid).ok().and_then(|p| Process::new(p).ok()) else {
        return u;
    };
    let tick_ns = 1_000_000_000 / rustix::param::clock_ticks_per_second().max(1);
    if let Ok(stat) = process.stat() {
        let (user, sys) = cpu_ticks(&stat);
        u.user_ns = user.saturating_mul(tick_ns);
        u.sys_ns = sys.saturating_mul(tick_ns);
    }
    // schedstat: (on CPU, run-queue wait, timeslices), ns.
    u.wait_ns = process.schedstat().ok().map(|s| s.run_delay);
    if let Ok(status) = process.status() {
        u.nvcsw = status.voluntary_ctxt_switches.unwrap_or(0);
        u.nivcsw = status.nonvoluntary_ctxt_switches.unwrap_or(0);
    }
    u
}

/// (utime + cutime, stime + cstime) in clock ticks, the children's times
/// being those of the children it waited for.
fn cpu_ticks(stat: &Stat) -> (u64, u64) {
    let waited = |t: i64| u64::try_from(t).unwrap_or(0);
    (
        stat.utime.saturating_add(waited(stat.cutime)),
        stat.stime.saturating_add(waited(stat.cstime)),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_add_the_waited_for_children() {
        use procfs::FromRead;
        // pid (comm with ") (" in it) state ppid ... utime stime cutime
        // cstime ... (a zombie's line, 52 fields, as Linux 6.x writes it).
        let line = "42 (a) (b) Z 1 42 42 0 -1 4194560 100 0 0 0 7 3 5 2 20 0 1 0 99 0 0 \
                    18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 9";
        let stat = Stat::from_read(line.as_bytes()).unwrap();
        assert_eq!(cpu_ticks(&stat), (12, 5));
        assert!(Stat::from_read("garbage".as_bytes()).is_err());
    }

    #[test]
    fn expected_run_and_limit_follow_the_longest_warm_up() {
        use crate::config::expected_run_ns;
        assert_eq!(expected_run_ns(&[300_000_000, 500_000_000]), 1_000_000_000);
        assert_eq!(expected_run_ns(&[1_000]), 100_000_000);
        assert_eq!(run_limit(1_000_000_000), Duration::from_secs(60));
        assert_eq!(run_limit(20_000_000_000), Duration::from_secs(200));
    }

    #[test]
    fn tail_keeps_the_end_at_a_char_boundary() {
        assert_eq!(tail("short", 10), "short");
        assert_eq!(tail("abcdef", 3), "...def");
        assert_eq!(tail("aé€", 4), "...€");
    }

    #[test]
    fn runs_pinned_times_it_and_reports_failures_with_stderr() {
        let never = AtomicBool::new(false);
        let argv: Vec<String> = [
            "sh",
            "-c",
            "grep Cpus_allowed_list /proc/self/status >&2; exit 3",
        ]
        .map(String::from)
        .to_vec();
        let e = run_pinned(&argv, 0, Duration::from_secs(30), &never, None).unwrap_err();
        match e {
            CommandError::Exit { status, stderr } => {
                assert_eq!(status, "exited with status 3");
                // Pinned: the only CPU it may run on is 0.
                assert!(stderr.ends_with("Cpus_allowed_list:\t0"), "{stderr:?}");
            }
            other => panic!("{other:?}"),
        }
        let ok = run_pinned(
            &["sleep".to_string(), "0.2".to_string()],
            0,
            Duration::from_secs(30),
            &never,
            None,
        )
        .unwrap();
        assert!((200_000_000..1_000_000_000).contains(&ok.wall_ns), "{ok:?}");
        assert_eq!(ok.wall_ns, ok.ended_at_ns - ok.started_at_ns);
        // Its counters are read from the zombie's /proc files: sleeping
        // is a voluntary switch, and schedstat is there when this
        // process's is.
        assert!(ok.nvcsw >= 1, "{ok:?}");
        let schedstat = std::path::Path::new("/proc/self/schedstat").exists();
        assert_eq!(ok.wait_ns.is_some(), schedstat, "{ok:?}");
        // A child's CPU time counts once the shell has waited for it.
        let busy = "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'";
        let spun = run_pinned(
            &["sh".to_string(), "-c".to_string(), busy.to_string()],
            0,
            Duration::from_secs(30),
            &never,
            None,
        )
        .unwrap();
        assert!(spun.user_ns + spun.sys_ns >= 50_000_000, "{spun:?}");
        let missing = run_pinned(
            &["/nonexistent/prog".to_string()],
            0,
            Duration::from_secs(30),
            &never,
            None,
        )
        .unwrap_err();
        assert!(matches!(missing, CommandError::Spawn { .. }), "{missing:?}");
    }

    #[test]
    fn a_command_over_its_limit_is_killed_with_its_children() {
        let never = AtomicBool::new(false);
        let t = std::time::Instant::now();
        let e = run_pinned(
            &[
                "sh".to_string(),
                "-c".to_string(),
                "sleep 30; sleep 30".to_string(),
            ],
            0,
            Duration::from_millis(300),
            &never,
            None,
        )
        .unwrap_err();
        assert!(matches!(e, CommandError::TimedOut { .. }), "{e:?}");
        // The stderr pipe closed, so the grandchild (sleep) was killed too.
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    }
}
