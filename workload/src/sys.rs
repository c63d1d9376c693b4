//! Every piece of unsafe code in the crate: the shared-memory mapping of the
//! counter file, the TSC instructions, the POSIX stop timer and its signal
//! handler, and the libc clock calls used by `workload clocks`.
//!
//! Each function here is a thin wrapper that checks the return value and hands
//! back plain values; the rest of the crate is safe code.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::ns_from;

// ---------------------------------------------------------------------------
// Shared mapping of the counter file
// ---------------------------------------------------------------------------

/// A `MAP_SHARED`, read/write mapping of the first `len` bytes of a file,
/// viewed as an array of `AtomicU64`. Unmapped on drop.
///
/// The file must not shrink while mapped (touching a page past the end of the
/// file raises SIGBUS); the counter protocol never truncates a mapped file.
pub(crate) struct SharedMap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory shared with other processes; every access
// goes through `AtomicU64` (see `slots`), so sharing or sending the handle
// between threads is as safe as sharing a `&[AtomicU64]`.
unsafe impl Send for SharedMap {}
// SAFETY: as above: only atomic accesses are handed out.
unsafe impl Sync for SharedMap {}

impl SharedMap {
    /// Maps `len` bytes of `file` (opened read/write) shared. `len` must be a
    /// non-zero multiple of 8 and the file at least `len` bytes long.
    pub(crate) fn map(file: &File, len: usize) -> io::Result<Self> {
        if len == 0 || !len.is_multiple_of(8) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("mapping length {len} is not a non-zero multiple of 8"),
            ));
        }
        let file_len = file.metadata()?.len();
        if file_len < len as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("file is {file_len} bytes, shorter than the {len} bytes to map"),
            ));
        }
        // SAFETY: a fresh mapping (addr = NULL lets the kernel choose) of a file
        // descriptor we hold open for the duration of the call; no existing
        // Rust object is aliased.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED,
                file,
                0,
            )?
        };
        let ptr = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| io::Error::other("mmap returned a null pointer"))?;
        Ok(Self { ptr, len })
    }

    /// The mapping as `len / 8` atomics.
    pub(crate) fn slots(&self) -> &[AtomicU64] {
        // SAFETY: `ptr` is page aligned (mmap), hence 8-byte aligned, and
        // points to `len` bytes (a multiple of 8) that stay mapped until
        // `self` is dropped, which the returned borrow cannot outlive.
        // `AtomicU64` has the size and alignment of `u64` on every 64-bit
        // Linux target, and any bit pattern is a valid u64. Other processes
        // touch this memory concurrently, which is exactly what atomics allow.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<AtomicU64>(), self.len / 8) }
    }

    /// The atomic at byte `offset` (a multiple of 8).
    pub(crate) fn field(&self, offset: usize) -> &AtomicU64 {
        &self.slots()[offset / 8]
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly the region returned by mmap in
        // `map`, unmapped once here; no borrow of it outlives `self`.
        let rc = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
        debug_assert!(rc.is_ok(), "munmap of our own mapping failed");
    }
}

// ---------------------------------------------------------------------------
// Time stamp counter (x86_64 only)
// ---------------------------------------------------------------------------

/// `rdtsc`: not ordered with respect to surrounding instructions.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn rdtsc() -> u64 {
    // SAFETY: rdtsc is part of every x86_64 CPU and has no memory effects
    // (CR4.TSD, which would make it fault in user mode, is not set by Linux).
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// `lfence; rdtsc`: waits for earlier instructions to complete first.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn rdtsc_lfence() -> u64 {
    // SAFETY: lfence (SSE2, baseline on x86_64) and rdtsc only order and read
    // the counter; no memory is touched.
    unsafe {
        core::arch::x86_64::_mm_lfence();
        core::arch::x86_64::_rdtsc()
    }
}

/// `mfence; lfence; rdtsc`: also drains earlier stores.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn rdtsc_mfence_lfence() -> u64 {
    // SAFETY: fences and rdtsc (baseline x86_64) have no memory-safety effects.
    unsafe {
        core::arch::x86_64::_mm_mfence();
        core::arch::x86_64::_mm_lfence();
        core::arch::x86_64::_rdtsc()
    }
}

/// `rdtscp`: waits for earlier instructions; also returns IA32_TSC_AUX (the
/// CPU number Linux stores there). Only call when [`has_rdtscp`] is true.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn rdtscp() -> (u64, u32) {
    let mut aux = 0u32;
    // SAFETY: callers check `has_rdtscp()` (cpuid 0x80000001 EDX bit 27)
    // first; the intrinsic writes only to the local `aux`.
    let tsc = unsafe { core::arch::x86_64::__rdtscp(&mut aux) };
    (tsc, aux)
}

/// cpuid leaf/subleaf as (eax, ebx, ecx, edx).
#[cfg(target_arch = "x86_64")]
pub(crate) fn cpuid(leaf: u32) -> (u32, u32, u32, u32) {
    // cpuid exists on every x86_64 CPU; the intrinsic is a safe fn.
    let r = core::arch::x86_64::__cpuid_count(leaf, 0);
    (r.eax, r.ebx, r.ecx, r.edx)
}

/// Whether the CPU implements rdtscp (cpuid 0x80000001 EDX bit 27).
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_rdtscp() -> bool {
    let (max_ext, ..) = cpuid(0x8000_0000);
    max_ext >= 0x8000_0001 && (cpuid(0x8000_0001).3 >> 27) & 1 == 1
}

// ---------------------------------------------------------------------------
// Stop timer: a POSIX timer delivering SIGALRM to the loop thread
// ---------------------------------------------------------------------------

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::Relaxed);
}

/// The flag the stop timer's signal handler sets.
pub(crate) fn stop_flag() -> &'static AtomicBool {
    &STOP
}

/// A one-shot `timer_create(CLOCK_MONOTONIC)` timer that sends SIGALRM to the
/// calling thread (SIGEV_THREAD_ID), whose handler sets [`stop_flag`]. The
/// kernel expires it from an hrtimer, so no helper thread exists that could
/// inherit the loop's CPU pinning. Deleted on drop.
pub(crate) struct StopTimer {
    id: libc::timer_t,
}

impl StopTimer {
    /// Clears the stop flag, installs the handler and arms the timer to fire
    /// once after `after`.
    pub(crate) fn arm(after: Duration) -> io::Result<Self> {
        STOP.store(false, Ordering::Relaxed);

        // SAFETY: zeroed sigaction is a valid "empty" value; we fill in the
        // handler (a plain extern "C" fn that only does an atomic store) and
        // an emptied mask before passing it to the kernel.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGALRM, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }

        // SAFETY: sigset_t is initialised by sigemptyset before use; the calls
        // only change this thread's signal mask.
        let rc = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGALRM);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }

        let tid = rustix::thread::gettid().as_raw_nonzero().get();
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: the sigevent is zero-initialised then filled; `id` is a
        // valid out-pointer. SIGEV_THREAD_ID targets this thread, which exists
        // for as long as the timer (the timer is deleted on drop).
        let rc = unsafe {
            let mut sev: libc::sigevent = std::mem::zeroed();
            sev.sigev_notify = libc::SIGEV_THREAD_ID;
            sev.sigev_signo = libc::SIGALRM;
            sev.sigev_notify_thread_id = tid;
            libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut id)
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let timer = Self { id };

        let its = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: timespec_from(after),
        };
        // SAFETY: `timer.id` was created above and not yet deleted; `its` is a
        // valid itimerspec; old_value may be NULL.
        let rc = unsafe { libc::timer_settime(timer.id, 0, &its, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(timer)
    }
}

impl Drop for StopTimer {
    fn drop(&mut self) {
        // SAFETY: `id` came from timer_create and is deleted exactly once.
        unsafe {
            libc::timer_delete(self.id);
        }
    }
}

fn timespec_from(d: Duration) -> libc::timespec {
    let tv_sec = libc::time_t::try_from(d.as_secs()).unwrap_or(libc::time_t::MAX);
    // subsec_nanos < 1e9 fits every c_long (even a 32-bit one).
    let mut tv_nsec = d.subsec_nanos() as libc::c_long;
    if tv_sec == 0 && tv_nsec == 0 {
        // An all-zero it_value disarms the timer; fire as soon as possible.
        tv_nsec = 1;
    }
    libc::timespec { tv_sec, tv_nsec }
}

// ---------------------------------------------------------------------------
// Clocks through libc (the ways ordinary programs read them)
// ---------------------------------------------------------------------------

/// `clock_gettime(clock)` through glibc (vDSO where the clock has one).
#[inline(always)]
pub(crate) fn clock_gettime_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer for the duration of the call.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| ns_from(ts.tv_sec, ts.tv_nsec))
}

/// `clock_getres(clock)` in ns.
pub(crate) fn clock_getres_ns(clock: libc::clockid_t) -> Option<u64> {
    let id = rustix::time::ClockId::try_from(clock).ok()?;
    let ts = rustix::time::clock_getres(id);
    Some(ns_from(ts.tv_sec, ts.tv_nsec))
}

/// `clock_gettime(clock)` through the raw system call, bypassing the vDSO.
#[inline(always)]
pub(crate) fn clock_gettime_syscall_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: SYS_clock_gettime takes (clockid_t, struct timespec *); `ts` is
    // a valid out-pointer of the kernel's timespec layout on 64-bit Linux.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clock_gettime,
            clock,
            &mut ts as *mut libc::timespec,
        )
    };
    (rc == 0).then(|| ns_from(ts.tv_sec, ts.tv_nsec))
}

/// `gettimeofday` in ns (microsecond resolution).
#[inline(always)]
pub(crate) fn gettimeofday_ns() -> Option<u64> {
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: `tv` is a valid out-pointer; the timezone argument may be NULL.
    let rc = unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
    (rc == 0).then(|| tv_ns(tv))
}

fn tv_ns(t: libc::timeval) -> u64 {
    ns_from(t.tv_sec, t.tv_usec.wrapping_mul(1000))
}

/// Resource usage of the whole process (`getrusage(RUSAGE_SELF)`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub user_ns: u64,
    pub sys_ns: u64,
    pub nvcsw: u64,
    pub nivcsw: u64,
    pub minflt: u64,
}

/// MemAvailable of /proc/meminfo, bytes.
pub(crate) fn mem_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// `getrusage(RUSAGE_SELF)`.
#[inline(always)]
pub(crate) fn getrusage_self() -> Option<Usage> {
    // SAFETY: zeroed rusage is a valid value; `ru` is a valid out-pointer.
    let (rc, ru) = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        let rc = libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        (rc, ru)
    };
    (rc == 0).then(|| Usage {
        user_ns: tv_ns(ru.ru_utime),
        sys_ns: tv_ns(ru.ru_stime),
        nvcsw: ru.ru_nvcsw as u64,
        nivcsw: ru.ru_nivcsw as u64,
        minflt: ru.ru_minflt as u64,
    })
}

/// `times()`: user + system CPU time of the process in clock ticks
/// (`rustix::param::clock_ticks_per_second`).
#[inline(always)]
pub(crate) fn times_ticks() -> Option<u64> {
    // SAFETY: zeroed tms is valid; `t` is a valid out-pointer.
    let (rc, t) = unsafe {
        let mut t: libc::tms = std::mem::zeroed();
        let rc = libc::times(&mut t);
        (rc, t)
    };
    (rc != -1).then(|| (t.tms_utime as u64).wrapping_add(t.tms_stime as u64))
}

// The libc crate does not bind ISO C clock() on Linux.
unsafe extern "C" {
    fn clock() -> libc::clock_t;
}

/// ISO C `clock()`: process CPU time in units of 1/CLOCKS_PER_SEC (1 us on
/// glibc, which POSIX requires to be 1e6).
#[inline(always)]
pub(crate) fn clock_cpu() -> Option<u64> {
    // SAFETY: clock() (ISO C, in glibc) has no arguments and no
    // preconditions; the declaration below matches glibc's prototype.
    let c = unsafe { clock() };
    u64::try_from(c).ok()
}
