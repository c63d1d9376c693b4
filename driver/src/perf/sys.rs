//! The only unsafe code of the driver: the perf_event_open syscall, its
//! ioctls, the ring buffer mmap and its head/tail atomics, mount(2), and
//! the calling thread's scheduling policy (sched_setscheduler(2)).
//!
//! Every unsafe block is tiny and wraps its result at once (fds become
//! `OwnedFd`, the mapping becomes a [`RingMap`] that unmaps on drop).
#![allow(unsafe_code)]

use std::ffi::{CStr, c_void};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use perf_event_open_sys as pes;
use pes::bindings::{perf_event_attr, perf_event_mmap_page};

/// perf_event_open(2). The fd is close-on-exec (`PERF_FLAG_FD_CLOEXEC`).
pub fn perf_event_open(
    attr: &mut perf_event_attr,
    pid: i32,
    cpu: i32,
    group: Option<BorrowedFd<'_>>,
) -> io::Result<OwnedFd> {
    let group_fd = group.map_or(-1, |fd| fd.as_raw_fd());
    let flags = libc::c_ulong::from(pes::bindings::PERF_FLAG_FD_CLOEXEC);
    // SAFETY: `attr` is a valid, initialised perf_event_attr that lives for
    // the call (the kernel reads `attr.size` bytes of it and may write `size`
    // back on E2BIG); the other arguments are plain integers.
    let fd = unsafe { pes::perf_event_open(attr, pid, cpu, group_fd, flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this fd to us; nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// PERF_EVENT_IOC_ENABLE.
pub fn enable(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: a valid perf fd; the argument is an integer flag (0 = this event only).
    check(unsafe { pes::ioctls::ENABLE(fd.as_raw_fd(), 0) })
}

/// PERF_EVENT_IOC_DISABLE.
pub fn disable(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: a valid perf fd; the argument is an integer flag.
    check(unsafe { pes::ioctls::DISABLE(fd.as_raw_fd(), 0) })
}

/// PERF_EVENT_IOC_ID: the event id carried by PERF_SAMPLE_IDENTIFIER.
pub fn id(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut id: u64 = 0;
    // SAFETY: the kernel writes one u64 through the pointer, which points to
    // a live local.
    check(unsafe { pes::ioctls::ID(fd.as_raw_fd(), &mut id) })?;
    Ok(id)
}

/// PERF_EVENT_IOC_SET_OUTPUT: send `fd`'s records to `target`'s ring
/// (same CPU and same clockid, else EINVAL).
pub fn set_output(fd: BorrowedFd<'_>, target: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: both are valid perf fds; the argument is an fd number.
    check(unsafe { pes::ioctls::SET_OUTPUT(fd.as_raw_fd(), target.as_raw_fd()) })
}

/// PERF_EVENT_IOC_SET_FILTER on a tracepoint.
pub fn set_filter(fd: BorrowedFd<'_>, filter: &CStr) -> io::Result<()> {
    // SAFETY: the kernel only reads the NUL-terminated string (it copies it
    // with strndup_user); the pointer is valid for the call.
    check(unsafe { pes::ioctls::SET_FILTER(fd.as_raw_fd(), filter.as_ptr().cast_mut()) })
}

/// read(2) of an event's counts (layout given by its read_format) into `buf`;
/// returns the number of u64 words read.
pub fn read_counts(fd: BorrowedFd<'_>, buf: &mut [u64]) -> io::Result<usize> {
    let mut bytes = vec![0u8; buf.len() * 8];
    let n = rustix::io::read(fd, &mut bytes)?;
    for (word, chunk) in buf.iter_mut().zip(bytes[..n].chunks_exact(8)) {
        *word = u64::from_ne_bytes(chunk.try_into().unwrap_or_default());
    }
    Ok(n / 8)
}

/// mount(2) of tracefs: `mount -t tracefs nodev <target>`.
pub fn mount_tracefs(target: &CStr) -> io::Result<()> {
    // SAFETY: all pointers are NUL-terminated strings valid for the call; the
    // data pointer may be null for tracefs.
    let rc = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null::<c_void>(),
        )
    };
    check(rc)
}

/// The calling thread's scheduling policy and priority
/// (sched_getscheduler(2), sched_getparam(2)).
pub fn thread_policy() -> io::Result<(i32, i32)> {
    // SAFETY: pid 0 is the calling thread; no pointer is passed.
    let policy = unsafe { libc::sched_getscheduler(0) };
    if policy < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param the kernel writes for the call.
    check(unsafe { libc::sched_getparam(0, &mut param) })?;
    Ok((policy, param.sched_priority))
}

/// Sets the calling thread's scheduling policy and priority
/// (sched_setscheduler(2) on pid 0: this thread only).
pub fn set_thread_policy(policy: i32, priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 is the calling thread; `param` is valid for the call.
    check(unsafe { libc::sched_setscheduler(0, policy, &param) })
}

/// A perf ring buffer mapping: one control page followed by 2^n data pages.
#[derive(Debug)]
pub struct RingMap {
    base: NonNull<u8>,
    len: usize,
    data_offset: usize,
    data_size: usize,
}

// SAFETY: the mapping is plain shared memory owned by this value; moving it to
// another thread (the drain thread) is fine, and all accesses to the parts the
// kernel writes concurrently go through atomics (head) or are limited to the
// region [tail, head) that the kernel does not touch until tail moves.
unsafe impl Send for RingMap {}

impl RingMap {
    /// mmap(2) of `1 + data_pages` pages of a perf fd; `data_pages` must be a
    /// power of two. Geometry (data_offset, data_size) is read from the control
    /// page when the kernel fills it in, else derived from the page size.
    pub fn new(fd: BorrowedFd<'_>, data_pages: usize) -> io::Result<RingMap> {
        if !data_pages.is_power_of_two() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let page = rustix::param::page_size();
        let len = (1 + data_pages) * page;
        // SAFETY: a fresh shared mapping of a perf fd (the kernel picks the
        // address); nothing else aliases it. Read/write: we write data_tail.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED,
                fd,
                0,
            )
        }?;
        let base =
            NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        let page_ptr = base.as_ptr().cast::<perf_event_mmap_page>();
        // SAFETY: the control page is mapped and at least one page long; these
        // two fields are written once by the kernel at mmap time (before the
        // mmap call returned) and never change afterwards.
        let (off, size) = unsafe {
            (
                std::ptr::addr_of!((*page_ptr).data_offset).read_volatile(),
                std::ptr::addr_of!((*page_ptr).data_size).read_volatile(),
            )
        };
        let mut map = RingMap {
            base,
            len,
            data_offset: page,
            data_size: data_pages * page,
        };
        // Kernels before 4.1 leave these zero: keep the page-size geometry then.
        if off != 0 && size != 0 {
            let (off, size) = (off as usize, size as usize);
            if off.checked_add(size).is_none_or(|end| end > len) || !size.is_power_of_two() {
                return Err(io::Error::other(format!(
                    "ring geometry from the control page is out of bounds: data_offset {off}, \
                     data_size {size}, mapping {len} bytes"
                )));
            }
            map.data_offset = off;
            map.data_size = size;
        }
        Ok(map)
    }

    /// Size of the data area in bytes (a power of two).
    pub fn data_size(&self) -> usize {
        self.data_size
    }

    /// data_head or data_tail of the control page, as an atomic.
    fn word(&self, tail: bool) -> &AtomicU64 {
        let page = self.base.as_ptr().cast::<perf_event_mmap_page>();
        // SAFETY: the control page is mapped for the life of `self`, and
        // addr_of_mut! only computes the field's address without creating a
        // reference. data_head and data_tail are aligned u64 (offsets 1024
        // and 1032 in a page-aligned mapping); the kernel only ever accesses
        // them with single aligned loads and stores, so an atomic view of
        // them is sound.
        unsafe {
            AtomicU64::from_ptr(if tail {
                std::ptr::addr_of_mut!((*page).data_tail)
            } else {
                std::ptr::addr_of_mut!((*page).data_head)
            })
        }
    }

    /// data_head, loaded with Acquire. Pairs with the kernel's store of
    /// data_head in perf_output_put_handle() (smp_wmb(); then WRITE_ONCE of
    /// data_head): every record byte before head is visible after this load.
    pub fn data_head(&self) -> u64 {
        self.word(false).load(Ordering::Acquire)
    }

    /// data_tail, our own last store (Relaxed: only we write it; the kernel
    /// only reads it).
    pub fn data_tail(&self) -> u64 {
        self.word(true).load(Ordering::Relaxed)
    }

    /// Frees the first `bytes` of the region [`RingMap::readable`] returns
    /// (at most all of it) for the kernel to write again: data_tail moves
    /// forward only, and never past data_head. The store is Release; it
    /// pairs with the kernel's READ_ONCE of data_tail followed by smp_mb()
    /// in perf_output_begin(): our reads of the records before the new tail
    /// complete before the kernel may overwrite them.
    ///
    /// Takes `&mut self` because it hands bytes back to the kernel: no slice
    /// from [`RingMap::readable`] may be alive then, and the borrow checker
    /// enforces it:
    ///
    /// ```compile_fail
    /// fn drain(map: &mut driver::perf::sys::RingMap) -> usize {
    ///     let (a, _) = map.readable();
    ///     map.consume(a.len()); // error: `a` still borrows the ring
    ///     a.len()
    /// }
    /// ```
    ///
    /// The same with the slices used up first compiles:
    ///
    /// ```
    /// fn drain(map: &mut driver::perf::sys::RingMap) -> usize {
    ///     let (a, _) = map.readable();
    ///     let n = a.len();
    ///     map.consume(n);
    ///     n
    /// }
    /// ```
    pub fn consume(&mut self, bytes: usize) {
        let tail = self.data_tail();
        let avail = self.data_head().wrapping_sub(tail);
        let bytes = u64::try_from(bytes).unwrap_or(u64::MAX).min(avail);
        self.word(true)
            .store(tail.wrapping_add(bytes), Ordering::Release);
    }

    /// The bytes written and not yet freed, [data_tail, data_head), as one
    /// or two slices (two when the region wraps around the end of the data
    /// area). Both ends are loaded here, not taken from the caller, so the
    /// slices never reach bytes the kernel may still be writing.
    pub fn readable(&self) -> (&[u8], &[u8]) {
        let tail = self.data_tail();
        // Loaded after tail: head - tail never exceeds data_size, as the
        // kernel does not write past tail + data_size and `consume` never
        // moves tail past head.
        let head = self.data_head();
        let size = self.data_size;
        let avail = (head.wrapping_sub(tail) as usize).min(size);
        let start = (tail as usize) & (size - 1);
        let first = avail.min(size - start);
        // SAFETY: the data area [data_offset, data_offset + data_size) is
        // mapped for the life of `self` (checked in `new`). The kernel does not
        // write the bytes in [tail, head) until data_tail moves past them,
        // and that takes `&mut self` (consume), which the borrow checker
        // refuses while these slices, borrowed from `&self`, are alive; the
        // Acquire load of head made their contents visible.
        unsafe {
            let data = self.base.as_ptr().add(self.data_offset);
            (
                std::slice::from_raw_parts(data.add(start), first),
                std::slice::from_raw_parts(data, avail - first),
            )
        }
    }
}

impl Drop for RingMap {
    fn drop(&mut self) {
        // SAFETY: base/len are exactly the mapping created in `new`, and no
        // slice into it outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.len) };
    }
}
