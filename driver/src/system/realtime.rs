//! The paired design's phase controller at a real-time priority while it
//! switches the sampler: sampling at 100 kHz in system scope floods the CPU
//! the controller runs on too, and at its normal priority it then lost the
//! CPU for up to 13 s (a 2026-11-25 evening sweep on the development VM). The
//! policy is the calling thread's own (nothing on the host changes), and
//! the guard puts the thread back as it found it when dropped: at the end
//! of the phases, on an error, on Ctrl-C; a killed driver's thread dies
//! with it.

use crate::perf::sys::{set_thread_policy, thread_policy};

/// The controller's SCHED_FIFO priority: above every normal task, below
/// the kernel's own real-time threads (threaded interrupts run at 50,
/// migration and watchdogs at 99), so that nothing of the kernel waits for
/// it. It sleeps between boundaries, and the kernel's real-time throttle
/// (`sched_rt_runtime_us`, 95 % by default) bounds it anyway.
pub const CONTROLLER_PRIORITY: i32 = 10;

/// The calling thread at SCHED_FIFO [`CONTROLLER_PRIORITY`] until dropped.
#[derive(Debug)]
pub struct RealtimeGuard {
    before: (i32, i32),
}

impl RealtimeGuard {
    /// Raises the calling thread; Err (with the reason) where the policy
    /// cannot be read or set (no CAP_SYS_NICE, an RLIMIT_RTPRIO of 0): the
    /// caller logs it and goes on at the normal priority.
    pub fn raise() -> std::io::Result<Self> {
        let before = thread_policy()?;
        set_thread_policy(libc::SCHED_FIFO, CONTROLLER_PRIORITY)?;
        Ok(RealtimeGuard { before })
    }
}

impl Drop for RealtimeGuard {
    fn drop(&mut self) {
        if let Err(e) = set_thread_policy(self.before.0, self.before.1) {
            tracing::warn!("cannot put the phase controller back to its policy: {e}");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// As root (the real-kernel tests' condition) the thread is raised
    /// and put back exactly; elsewhere raising fails with EPERM and
    /// nothing changes.
    #[test]
    fn the_guard_raises_this_thread_and_puts_it_back() {
        std::thread::spawn(|| {
            let before = thread_policy().unwrap();
            match RealtimeGuard::raise() {
                Ok(g) => {
                    assert_eq!(
                        thread_policy().unwrap(),
                        (libc::SCHED_FIFO, CONTROLLER_PRIORITY)
                    );
                    drop(g);
                }
                Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}"),
            }
            assert_eq!(thread_policy().unwrap(), before);
        })
        .join()
        .unwrap();
    }
}
