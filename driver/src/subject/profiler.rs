//! A real profiler (`--profiler`) as the sampler, its process: it starts before
//! the loop is released (its start-up is not measured), samples while the
//! loop runs on the measured CPU in the gaps design (every interruption of
//! the loop timed, whoever causes it), and is stopped after the loop as a
//! user stops it: SIGINT to its process group, then SIGTERM and SIGKILL
//! after a timeout, its whole tree reaped. Its own cost is read from /proc
//! over the loop's window: CPU time of every thread of its process tree
//! (schedstat, ns), the CPUs they ran on, peak RSS and bytes written.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use procfs::process::Process;
use rustix::process::{Pid, Signal, kill_process_group};

use crate::exec::{RunError, failed};
use crate::results::RunRow;
use crate::system::process::{read_pipe, spawn_unpinned};

/// How long the profiler runs before the loop is released: its start-up
/// (loading BPF programs, opening events, allocating rings) is not
/// measured. bpftrace attaches in well under a second here, perf record in
/// ~0.1 s.
pub(crate) const SETTLE: Duration = Duration::from_secs(1);
/// How long a profiler has to exit after SIGINT (perf record and bpftrace
/// write their output then), and then after SIGTERM.
const STOP_GRACE: [Duration; 2] = [Duration::from_secs(10), Duration::from_secs(3)];

/// The tree's counters at one moment.
#[derive(Debug, Clone, Default)]
struct TreeReading {
    cpu_ns: u64,
    write_bytes: u64,
    peak_rss_kb: u64,
    cpus: BTreeSet<u32>,
}

/// Every process whose ancestry reaches `root` (itself included): one
/// walk of /proc maps parents to children, each process's handle (an open
/// /proc/PID descriptor) dropped as soon as its stat is read, so a host
/// with thousands of processes does not run out of descriptors; only the
/// tree's own are opened again. A process that exits meanwhile is left out.
fn tree_of(root: u32) -> Vec<Process> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    if let Ok(processes) = procfs::process::all_processes() {
        for p in processes.flatten() {
            if let (Ok(pid), Some(ppid)) = (
                u32::try_from(p.pid()),
                p.stat().ok().and_then(|s| u32::try_from(s.ppid).ok()),
            ) {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut pids = vec![root];
    let mut i = 0;
    while i < pids.len() {
        pids.extend(children.get(&pids[i]).into_iter().flatten());
        i += 1;
    }
    pids.iter()
        .filter_map(|&pid| Process::new(i32::try_from(pid).ok()?).ok())
        .collect()
}

/// The counters of `root`'s tree now: schedstat's time on CPU (ns) and
/// stat's `processor` of every thread, the process's io `write_bytes` and
/// status `VmHWM` (kB). What cannot be read (a process or thread that
/// has exited, io without ptrace access) counts nothing.
fn read_tree(root: u32) -> TreeReading {
    let mut r = TreeReading::default();
    for process in tree_of(root) {
        if let Ok(tasks) = process.tasks() {
            for t in tasks.flatten() {
                if let Ok(s) = t.schedstat() {
                    r.cpu_ns += s.sum_exec_runtime;
                }
                // `processor`: the CPU it last ran on.
                if let Some(cpu) = t
                    .stat()
                    .ok()
                    .and_then(|s| s.processor)
                    .and_then(|c| u32::try_from(c).ok())
                {
                    r.cpus.insert(cpu);
                }
            }
        }
        if let Ok(io) = process.io() {
            r.write_bytes += io.write_bytes;
        }
        if let Ok(status) = process.status() {
            r.peak_rss_kb += status.vmhwm.unwrap_or(0);
        }
    }
    r
}

/// eBPF profilers (bpftrace, agents) lock their maps' memory and fail
/// under a small RLIMIT_MEMLOCK (8 MiB by default here: bpftrace 0.17 exits
/// with "Failed to load BPF program"); a user raises it with `ulimit -l`
/// before starting one. The driver raises its own limit to its hard limit
/// (to unlimited when it may), which the profiler inherits, and says so
/// once. Only this process's limit changes, nothing of the host's.
fn raise_memlock_for_children() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let was = getrlimit(Resource::Memlock);
        if was.current.is_none() {
            return;
        }
        // Unlimited, else the hard limit: the first that raises it.
        let unlimited = Rlimit {
            current: None,
            maximum: None,
        };
        let hard = Rlimit {
            current: was.maximum,
            ..was
        };
        let raised = [unlimited, hard]
            .into_iter()
            .find(|r| r.current != was.current && setrlimit(Resource::Memlock, *r).is_ok())
            .map(|r| r.current.map_or("unlimited".to_string(), |m| format!("{} KiB", m / 1024)));
        let from = was.current.unwrap_or(0) / 1024;
        match raised {
            Some(to) => tracing::info!(
                "RLIMIT_MEMLOCK raised from {from} KiB to {to} for the profiler (eBPF profilers lock their maps' memory; `ulimit -l` does the same by hand)"
            ),
            None => tracing::info!(
                "RLIMIT_MEMLOCK stays at {from} KiB (this process may not raise it): an eBPF profiler that fails to load its programs may need `ulimit -l unlimited` before the sweep"
            ),
        }
    });
}

/// A running profiler, its process group killed and reaped if dropped.
pub(crate) struct Profiler {
    child: Option<Child>,
    stderr: Option<std::thread::JoinHandle<String>>,
    start: Option<TreeReading>,
    /// What its command line was, for messages.
    shown: String,
}

/// How a profiler ended.
#[derive(Debug)]
pub(crate) struct Stopped {
    /// Its exit status.
    pub status: ExitStatus,
    /// The signal that stopped it (SIGINT unless it ignored that).
    pub by: &'static str,
    /// What it wrote on stderr.
    pub stderr: String,
}

impl Stopped {
    /// It stopped on SIGINT, exiting 0 or by that signal (perf record
    /// re-raises it after writing its data).
    pub(crate) fn clean(&self) -> bool {
        use std::os::unix::process::ExitStatusExt;
        self.by == "SIGINT" && (self.status.success() || self.status.signal() == Some(libc::SIGINT))
    }
}

impl Profiler {
    /// Starts `argv` in its own process group, from a thread allowed on
    /// every CPU (`online`), stdout discarded and stderr kept.
    pub(crate) fn start(argv: &[String], online: &[u32]) -> Result<Self, RunError> {
        let shown = shell_words::join(argv);
        raise_memlock_for_children();
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = spawn_unpinned(&mut cmd, online)
            .map_err(|e| failed(format!("cannot start the profiler `{shown}`: {e}")))?;
        let stderr = read_pipe(child.stderr.take());
        Ok(Profiler {
            child: Some(child),
            stderr: Some(stderr),
            start: None,
            shown,
        })
    }

    /// The profiler of `template` at `freq_hz` on `cpu` started (as
    /// [`Profiler::start`]) and settled for [`SETTLE`]: ready for its
    /// window. The loop's runs and the command's start it so.
    pub(crate) fn start_settled(
        template: &str,
        freq_hz: u64,
        cpu: u32,
        online: &[u32],
        interrupt: &std::sync::atomic::AtomicBool,
    ) -> Result<Self, RunError> {
        let argv = crate::config::profiler_argv(template, freq_hz, cpu)
            .map_err(|e| failed(format!("the profiler's command: {e}")))?;
        let mut p = Self::start(&argv, online)?;
        p.settle(SETTLE, interrupt)?;
        Ok(p)
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Its stderr, once it has exited.
    fn take_stderr(&mut self) -> String {
        self.stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }

    /// A failed run when it has exited already (it must run until stopped).
    pub(crate) fn check_alive(&mut self, when: &str) -> Result<(), RunError> {
        let exited = self
            .child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten());
        match exited {
            None => Ok(()),
            Some(status) => {
                let err = self.take_stderr();
                Err(failed(format!(
                    "the profiler `{}` exited {when} ({status}): {}",
                    self.shown,
                    last_lines(&err)
                )))
            }
        }
    }

    /// Lets it start for `settle`, then checks that it still runs.
    pub(crate) fn settle(
        &mut self,
        settle: Duration,
        interrupt: &AtomicBool,
    ) -> Result<(), RunError> {
        let until = Instant::now() + settle;
        while Instant::now() < until {
            if interrupt.load(Ordering::SeqCst) {
                return Err(RunError::Interrupted);
            }
            self.check_alive("during its start-up")?;
            std::thread::sleep(Duration::from_millis(20));
        }
        self.check_alive("during its start-up")
    }

    /// Marks the start of the measured window.
    pub(crate) fn window_starts(&mut self) {
        self.start = Some(read_tree(self.pid()));
    }

    /// Its cost since [`Profiler::window_starts`], into a run's
    /// `profiler_*` columns: its tree's CPU time, the CPUs its threads last
    /// ran on, its peak resident memory (the sum of its processes' VmHWM)
    /// and the bytes it wrote (/proc/PID/io write_bytes).
    pub(crate) fn window_ends(&self, row: &mut RunRow) {
        let end = read_tree(self.pid());
        let start = self.start.clone().unwrap_or_default();
        row.profiler_cpu_ns = Some(end.cpu_ns.saturating_sub(start.cpu_ns));
        let cpus: Vec<String> = end.cpus.iter().map(u32::to_string).collect();
        row.profiler_cpus = cpus.join(";");
        row.profiler_peak_rss_kb = Some(end.peak_rss_kb);
        row.profiler_write_bytes = Some(end.write_bytes.saturating_sub(start.write_bytes));
    }

    /// Stops it as a user would: SIGINT to its group, then SIGTERM and
    /// SIGKILL after [`STOP_GRACE`]; reaps it, then kills what is left of
    /// its group.
    pub(crate) fn stop(self) -> Stopped {
        self.stop_within(STOP_GRACE)
    }

    /// [`Profiler::stop`] after run `run_id`, with a warning when it did
    /// not stop on SIGINT or exited non-zero.
    pub(crate) fn stop_after_run(self, run_id: u32) {
        let stopped = self.stop();
        if !stopped.clean() {
            tracing::warn!(
                "run {run_id}: the profiler needed {} to stop and exited {}: {}",
                stopped.by,
                stopped.status,
                last_lines(&stopped.stderr)
            );
        }
    }

    /// [`Profiler::stop`] with the given grace after SIGINT and SIGTERM.
    fn stop_within(mut self, grace: [Duration; 2]) -> Stopped {
        let mut child = self.child.take();
        let pid = child.as_ref().map_or(0, Child::id);
        let mut by = "SIGINT";
        let mut status = None;
        for (sig, name, grace) in [
            (Signal::INT, "SIGINT", grace[0]),
            (Signal::TERM, "SIGTERM", grace[1]),
            (Signal::KILL, "SIGKILL", Duration::from_secs(5)),
        ] {
            signal_group(pid, sig);
            by = name;
            let until = Instant::now() + grace;
            while Instant::now() < until {
                if let Some(s) = child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                    status = Some(s);
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            if status.is_some() {
                break;
            }
        }
        let status = status
            .or_else(|| child.as_mut().and_then(|c| c.wait().ok()))
            .unwrap_or_else(|| std::os::unix::process::ExitStatusExt::from_raw(0));
        // Whatever it started and left behind in its group.
        signal_group(pid, Signal::KILL);
        Stopped {
            status,
            by,
            stderr: self.take_stderr(),
        }
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            signal_group(c.id(), Signal::KILL);
            let _ = c.wait();
        }
    }
}

/// `sig` to the process group led by `pid` (a profiler's, or a command's:
/// what it started goes too); nothing for pid 0.
pub(crate) fn signal_group(pid: u32, sig: Signal) {
    if let Some(g) = Pid::from_raw(i32::try_from(pid).unwrap_or(0)) {
        let _ = kill_process_group(g, sig);
    }
}

/// A failed run with `e` as its message.
/// The last few lines of a profiler's stderr, for a message.
pub(crate) fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(5)..];
    if tail.is_empty() {
        "(nothing on stderr)".to_string()
    } else {
        tail.join(" | ")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_profiler_is_stopped_by_sigint_and_its_cost_read() {
        let argv: Vec<String> = [
            "sh",
            "-c",
            "trap 'echo bye >&2; exit 0' INT; while :; do :; done",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // As the sweep does before it starts a profiler: a SIGINT handler
        // of our own, so the child gets SIGINT's default disposition at
        // exec. Without it a test binary started in the background by a
        // non-interactive shell (which ignores SIGINT there) passes the
        // ignored SIGINT on, and a shell cannot trap a signal ignored on
        // entry: SIGTERM stopped it (seen in the busy-host test runs).
        let _ = crate::system::signals::interrupt_flag();
        let mut p = Profiler::start(&argv, &[0]).unwrap();
        let flag = AtomicBool::new(false);
        p.settle(Duration::from_millis(200), &flag).unwrap();
        p.window_starts();
        std::thread::sleep(Duration::from_millis(300));
        let mut u = RunRow::default();
        p.window_ends(&mut u);
        // A busy shell loop: most of the 300 ms on some CPU.
        assert!(u.profiler_cpu_ns > Some(50_000_000), "{u:?}");
        assert!(
            !u.profiler_cpus.is_empty() && u.profiler_peak_rss_kb > Some(0),
            "{u:?}"
        );
        let s = p.stop();
        assert_eq!(s.by, "SIGINT");
        assert!(s.status.success(), "{s:?}");
        assert!(s.stderr.contains("bye"), "{s:?}");
    }

    #[test]
    fn the_tree_holds_children_and_grandchildren() {
        // sh, its subshell, and the subshell's sleep (`; :` keeps the
        // subshell from exec'ing it).
        let mut sh = Command::new("sh")
            .args(["-c", "(sleep 5; :) & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let root = sh.id();
        let t = Instant::now();
        let pids = || -> Vec<u32> { tree_of(root).iter().map(|p| p.pid() as u32).collect() };
        let mut tree = pids();
        while tree.len() < 3 && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
            tree = pids();
        }
        let _ = kill_process_group(Pid::from_child(&sh), Signal::KILL);
        let _ = sh.wait();
        assert_eq!(tree.len(), 3, "{tree:?}");
        assert_eq!(tree[0], root);
    }

    #[test]
    fn a_profiler_that_ignores_sigint_is_terminated() {
        let argv: Vec<String> = ["sh", "-c", "trap '' INT; sleep 60"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let p = Profiler::start(&argv, &[0]).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let grace = Duration::from_millis(300);
        let t = Instant::now();
        let s = p.stop_within([grace, grace]);
        assert_eq!(s.by, "SIGTERM", "{s:?}");
        assert!(t.elapsed() >= grace);
    }

    #[test]
    fn a_profiler_that_exits_early_fails_with_its_stderr() {
        let argv: Vec<String> = ["sh", "-c", "echo 'no such event' >&2; exit 3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut p = Profiler::start(&argv, &[0]).unwrap();
        let e = p
            .settle(Duration::from_millis(300), &AtomicBool::new(false))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("during its start-up") && e.contains("no such event"),
            "{e}"
        );
    }
}
