//! Child processes the driver starts (the workload, a profiler, a user's
//! command): spawned free of the driver's own CPU pinning, their pipes
//! read on threads of their own.

use std::io::Read;
use std::process::{Child, Command};

/// Spawns `cmd` from a thread allowed on every CPU: the driver's own
/// threads keep off the measured CPU, but the child inherits the affinity
/// of the thread that forks it and must be free to pin itself there.
pub(crate) fn spawn_unpinned(cmd: &mut Command, online: &[u32]) -> std::io::Result<Child> {
    std::thread::scope(|s| {
        s.spawn(|| {
            if let Err(e) = pin_to(online.iter().copied()) {
                tracing::warn!("cannot widen the spawner's CPU set: {e}");
            }
            cmd.spawn()
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("spawner thread panicked")))
    })
}

/// Pins the calling thread to `cpus`.
pub(crate) fn pin_to(cpus: impl IntoIterator<Item = u32>) -> rustix::io::Result<()> {
    let mut set = rustix::thread::CpuSet::new();
    for c in cpus {
        set.set(usize::try_from(c).unwrap_or(0));
    }
    rustix::thread::sched_setaffinity(None, &set)
}

/// Reads a child's pipe to its end on a thread of its own (bytes that are
/// not UTF-8 read as U+FFFD).
pub(crate) fn read_pipe<R: Read + Send + 'static>(
    pipe: Option<R>,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}
