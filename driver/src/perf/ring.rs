//! A perf ring buffer: the mapping plus the decoding loop that drains it.

use std::os::fd::BorrowedFd;

use super::error::PerfError;
use super::record::{Formats, Record, for_each_record};
use super::sys::RingMap;

/// Default data size of one ring: 16 MiB (on the development VM a busy moment
/// put 2.8 MB in one 10 ms drain at 100 kHz with four tracepoints).
pub const DEFAULT_RING_DATA_BYTES: usize = 16 << 20;

/// One mmapped ring, with the layout of the records it carries.
#[derive(Debug)]
pub struct Ring {
    map: RingMap,
    cpu: u32,
    formats: Formats,
    scratch: Vec<u8>,
}

impl Ring {
    /// Maps `data_bytes` (a power of two, at least one page) of `fd`'s ring.
    pub fn new(
        fd: BorrowedFd<'_>,
        cpu: u32,
        data_bytes: usize,
        formats: Formats,
    ) -> Result<Ring, PerfError> {
        let page = rustix::param::page_size();
        if !data_bytes.is_power_of_two() || data_bytes < page {
            return Err(PerfError::config(
                "ring_data_bytes",
                data_bytes,
                format!("a power of two of at least one page ({page} bytes), e.g. 16777216"),
            ));
        }
        let map = RingMap::new(fd, data_bytes / page).map_err(|e| {
            let what = match e.raw_os_error() {
                Some(libc::EPERM | libc::ENOMEM) => format!(
                    "{data_bytes} bytes on cpu {cpu}; above /proc/sys/kernel/perf_event_mlock_kb \
                     without root/CAP_IPC_LOCK, or out of memory: use a smaller ring"
                ),
                _ => format!("cpu {cpu}"),
            };
            PerfError::os("mmap of the perf ring buffer", what, e)
        })?;
        Ok(Ring {
            map,
            cpu,
            formats,
            scratch: Vec::with_capacity(256),
        })
    }

    /// Replaces the record layout (after more events were redirected here
    /// with SET_OUTPUT, which needs the ring mapped first).
    pub fn set_formats(&mut self, formats: Formats) {
        self.formats = formats;
    }

    /// The CPU whose events write here.
    pub fn cpu(&self) -> u32 {
        self.cpu
    }

    /// Data size in bytes.
    pub fn size(&self) -> usize {
        self.map.data_size()
    }

    /// Bytes written and not yet drained.
    pub fn pending(&self) -> usize {
        let head = self.map.data_head();
        usize::try_from(head.wrapping_sub(self.map.data_tail())).unwrap_or(usize::MAX)
    }

    /// Decodes every record written so far, calls `f` on each, and frees the
    /// space. Returns the bytes drained. On a malformed record the rest of
    /// the readable region is skipped (and freed) and the error returned.
    pub fn drain<F: FnMut(Record<'_>)>(&mut self, f: F) -> Result<usize, PerfError> {
        let (a, b) = self.map.readable();
        let avail = a.len() + b.len();
        if avail == 0 {
            return Ok(0);
        }
        let res = for_each_record(a, b, &self.formats, &mut self.scratch, f);
        match res {
            Ok(n) => {
                self.map.consume(n);
                Ok(n)
            }
            Err((source, _)) => {
                self.map.consume(avail);
                Err(PerfError::Decode {
                    cpu: self.cpu,
                    source,
                })
            }
        }
    }
}
