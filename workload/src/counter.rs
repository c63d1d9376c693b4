//! The shared-memory counter file: the workload publishes its running loop
//! count and its state there, and a reader (the driver) can hold the start of
//! the loop until it has set up its perf events.
//!
//! # File layout (version 1)
//!
//! A 4096-byte file, mapped `MAP_SHARED` by both sides. Every field is a
//! little-endian `u64`, 8-byte aligned, and is only ever accessed as an
//! `AtomicU64`. Fields on separate 64-byte cache lines, so the reader polling
//! `state` does not disturb the line the loop writes.
//!
//! | offset | field        | written by | meaning |
//! |-------:|--------------|------------|---------|
//! |      0 | `magic`      | workload   | [`MAGIC`] (`b"WLCOUNT1"` as little-endian u64) |
//! |      8 | `version`    | workload   | [`VERSION`] = 1 |
//! |     64 | `iterations` | workload   | loop count so far; Release store at least every ~10 us of loop time, final count before `state` = done |
//! |    128 | `state`      | workload   | 0 init, 1 ready (waiting for go), 2 running, 3 done |
//! |    192 | `go`         | reader     | set to 1 by [`CounterReader::release`] to start the loop (`--wait-go`) |
//! |    256 | `start_ns`   | workload   | CLOCK_MONOTONIC_RAW at loop start (0 before) |
//! |    320 | `end_ns`     | workload   | CLOCK_MONOTONIC_RAW at loop end (0 before) |
//! |    384 | `pid`        | workload   | process id of the workload |
//!
//! The rest of the page is zero and reserved.
//!
//! # Protocol
//!
//! The workload builds the whole file under a temporary name next to `PATH`
//! and renames it onto `PATH` once `magic` is set, so a reader that can open
//! `PATH` always sees an initialised file. A reader should delete a stale
//! `PATH` before starting the workload and poll until [`CounterReader::open`]
//! succeeds (it fails with `NotFound` until the file appears).
//!
//! With `--wait-go`, the workload pins itself, calibrates, sets `state` =
//! ready and spins (with short sleeps, at most 60 s) until `go` != 0. It then
//! sets `start_ns` and `state` = running and starts the timed loop. At the end
//! it stores the final `iterations`, `end_ns`, then `state` = done (Release),
//! so a reader that sees done (Acquire) reads the final count.
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::sys::SharedMap;

/// Identifies a counter file: `b"WLCOUNT1"` read as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"WLCOUNT1");
/// Layout version.
pub const VERSION: u64 = 1;
/// Size of the counter file in bytes.
pub const FILE_LEN: usize = 4096;

/// Byte offsets of the fields.
pub mod offset {
    /// `magic`
    pub const MAGIC: usize = 0;
    /// `version`
    pub const VERSION: usize = 8;
    /// `iterations`
    pub const ITERATIONS: usize = 64;
    /// `state`
    pub const STATE: usize = 128;
    /// `go`
    pub const GO: usize = 192;
    /// `start_ns`
    pub const START_NS: usize = 256;
    /// `end_ns`
    pub const END_NS: usize = 320;
    /// `pid`
    pub const PID: usize = 384;
}

/// Lifecycle of the workload as published in the `state` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum State {
    /// The file exists; the workload is still setting up.
    Init = 0,
    /// Set up (pinned, calibrated) and waiting for `go` (`--wait-go`).
    Ready = 1,
    /// The timed loop is running.
    Running = 2,
    /// The loop has ended; `iterations` holds the final count.
    Done = 3,
}

/// Errors of the writer side.
#[derive(Debug, thiserror::Error)]
pub enum CounterError {
    /// Creating, sizing, mapping or renaming the file failed.
    #[error(
        "cannot create counter file {path} (--counter): {source}; pick a writable path, e.g. under /dev/shm or /tmp"
    )]
    Create {
        /// the `--counter` path
        path: PathBuf,
        /// the underlying error
        source: io::Error,
    },
    /// Nobody set `go` in time.
    #[error(
        "nobody set go in counter file {path} within {waited:?} (--wait-go): the reader must open the file and call CounterReader::release(), or drop --wait-go"
    )]
    GoTimeout {
        /// the `--counter` path
        path: PathBuf,
        /// how long we waited
        waited: Duration,
    },
}

/// Read side, used by the driver.
pub struct CounterReader {
    map: SharedMap,
}

impl CounterReader {
    /// Maps an existing counter file read/write (read/write because
    /// [`release`](Self::release) writes `go`). Fails with `InvalidData` if the
    /// file is too short or does not carry [`MAGIC`] and [`VERSION`].
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let map = SharedMap::map(&file, FILE_LEN)?;
        let magic = map.field(offset::MAGIC).load(Ordering::Acquire);
        let version = map.field(offset::VERSION).load(Ordering::Acquire);
        let p = path.display();
        let wrong = if magic != MAGIC {
            format!(
                "{p} is not a workload counter file (magic {magic:#018x}, expected {MAGIC:#018x})"
            )
        } else if version != VERSION {
            format!("{p} has counter layout version {version}, this build reads version {VERSION}")
        } else {
            return Ok(Self { map });
        };
        Err(io::Error::new(io::ErrorKind::InvalidData, wrong))
    }

    /// Loop count published so far (Acquire load).
    pub fn iterations(&self) -> u64 {
        self.map.field(offset::ITERATIONS).load(Ordering::Acquire)
    }

    /// Current state (Acquire load). An unknown stored value (a newer
    /// writer) reads as [`State::Init`].
    pub fn state(&self) -> State {
        match self.map.field(offset::STATE).load(Ordering::Acquire) {
            1 => State::Ready,
            2 => State::Running,
            3 => State::Done,
            _ => State::Init,
        }
    }

    /// Sets `go` = 1: a workload started with `--wait-go` starts its loop.
    pub fn release(&self) {
        self.map.field(offset::GO).store(1, Ordering::Release);
    }

    /// CLOCK_MONOTONIC_RAW ns at loop start, 0 before it started.
    pub fn start_ns(&self) -> u64 {
        self.map.field(offset::START_NS).load(Ordering::Acquire)
    }

    /// CLOCK_MONOTONIC_RAW ns at loop end, 0 before it ended.
    pub fn end_ns(&self) -> u64 {
        self.map.field(offset::END_NS).load(Ordering::Acquire)
    }

    /// Process id of the workload that wrote the file.
    pub fn pid(&self) -> u64 {
        self.map.field(offset::PID).load(Ordering::Acquire)
    }
}

/// Write side, owned by the workload.
pub struct CounterWriter {
    map: SharedMap,
    path: PathBuf,
}

impl CounterWriter {
    /// Creates (replacing) the counter file at `path`: writes it fully under a
    /// temporary name in the same directory, then renames it onto `path`.
    /// State is [`State::Init`].
    pub fn create(path: &Path) -> Result<Self, CounterError> {
        let err = |source| CounterError::Create {
            path: path.to_path_buf(),
            source,
        };
        let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
        tmp_name.push(format!(".tmp.{}", std::process::id()));
        let tmp = path.with_file_name(tmp_name);
        let file: File = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(err)?;
        let setup = || -> io::Result<SharedMap> {
            file.set_len(FILE_LEN as u64)?;
            let map = SharedMap::map(&file, FILE_LEN)?;
            map.field(offset::VERSION).store(VERSION, Ordering::Relaxed);
            map.field(offset::ITERATIONS).store(0, Ordering::Relaxed);
            map.field(offset::STATE)
                .store(State::Init as u64, Ordering::Relaxed);
            map.field(offset::GO).store(0, Ordering::Relaxed);
            map.field(offset::PID)
                .store(u64::from(std::process::id()), Ordering::Relaxed);
            map.field(offset::MAGIC).store(MAGIC, Ordering::Release);
            // Published by rename once mapped and set up; kept by hand so
            // that the measured binary needs no temp-file crate at run time.
            std::fs::rename(&tmp, path)?;
            Ok(map)
        };
        match setup() {
            Ok(map) => Ok(Self {
                map,
                path: path.to_path_buf(),
            }),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(err(e))
            }
        }
    }

    /// The `iterations` field, for the loop to store its local count into
    /// (plain Release stores, never a read-modify-write).
    pub fn iterations_slot(&self) -> &AtomicU64 {
        self.map.field(offset::ITERATIONS)
    }

    /// Publishes `state` (Release).
    pub fn set_state(&self, state: State) {
        self.map
            .field(offset::STATE)
            .store(state as u64, Ordering::Release);
    }

    /// Publishes the loop start time (CLOCK_MONOTONIC_RAW ns).
    pub fn set_start_ns(&self, ns: u64) {
        self.map
            .field(offset::START_NS)
            .store(ns, Ordering::Release);
    }

    /// Publishes the loop end time (CLOCK_MONOTONIC_RAW ns).
    pub fn set_end_ns(&self, ns: u64) {
        self.map.field(offset::END_NS).store(ns, Ordering::Release);
    }

    /// Whether a reader has set `go`.
    pub fn go(&self) -> bool {
        self.map.field(offset::GO).load(Ordering::Acquire) != 0
    }

    /// Sets state = ready and waits until a reader sets `go`, polling with
    /// short sleeps; fails after `timeout`. Returns how long it waited.
    pub fn wait_go(&self, timeout: Duration) -> Result<Duration, CounterError> {
        self.set_state(State::Ready);
        let started = Instant::now();
        loop {
            if self.go() {
                return Ok(started.elapsed());
            }
            let waited = started.elapsed();
            if waited >= timeout {
                return Err(CounterError::GoTimeout {
                    path: self.path.clone(),
                    waited,
                });
            }
            // 50 us keeps the reaction fast without burning the CPU.
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn writer_and_reader_share_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c");
        let w = CounterWriter::create(&path).unwrap();
        let r = CounterReader::open(&path).unwrap();
        assert_eq!(r.state(), State::Init);
        assert_eq!(r.iterations(), 0);
        assert_eq!(r.pid(), u64::from(std::process::id()));
        w.iterations_slot().store(42, Ordering::Release);
        w.set_state(State::Running);
        w.set_start_ns(7);
        assert_eq!(r.iterations(), 42);
        assert_eq!(r.state(), State::Running);
        assert_eq!(r.start_ns(), 7);
        assert!(!w.go());
        r.release();
        assert!(w.go());
        assert!(w.wait_go(Duration::from_millis(1)).unwrap() < Duration::from_secs(1));
        assert_eq!(r.state(), State::Ready);
        // no temporary file left behind
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("c")]);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), FILE_LEN as u64);
    }

    #[test]
    fn wait_go_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c");
        let w = CounterWriter::create(&path).unwrap();
        let e = w.wait_go(Duration::from_millis(5)).unwrap_err();
        assert!(e.to_string().contains("release"), "{e}");
    }

    #[test]
    fn reader_rejects_foreign_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("junk");
        std::fs::write(&path, vec![1u8; FILE_LEN]).unwrap();
        let e = CounterReader::open(&path).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        std::fs::write(&path, b"short").unwrap();
        assert!(CounterReader::open(&path).is_err());
        assert_eq!(
            CounterReader::open(&dir.path().join("missing"))
                .err()
                .unwrap()
                .kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn state_roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counter");
        let w = CounterWriter::create(&path).unwrap();
        let r = CounterReader::open(&path).unwrap();
        for s in [State::Init, State::Ready, State::Running, State::Done] {
            w.set_state(s);
            assert_eq!(r.state(), s);
        }
        w.map.field(offset::STATE).store(4, Ordering::Release);
        assert_eq!(r.state(), State::Init);
    }
}
