//! What one iteration of the loop does (`--kind`): the article's counting
//! loop, the same counting deep in a call stack, or a dependent pointer
//! chase over a working set. Every kind counts iterations exactly, so its
//! loss compares sampling on and off; a profiler's samples then have real
//! frames to walk (`stack`) and an interrupt's cache and TLB pollution
//! shows as lost work (`memory`).

use std::fmt;
use std::hint::black_box;

/// Adds one to `count` `n` times through `black_box`; returns the new count.
#[inline(never)]
pub fn count_chunk(count: u64, n: u64) -> u64 {
    let mut c = count;
    for _ in 0..n {
        c = black_box(c.wrapping_add(1));
    }
    c
}

/// Runs `n` iterations of one kind of work.
pub trait Work {
    /// Does `n` iterations and returns `count + n` (the count goes through
    /// the work so the compiler cannot drop it).
    fn chunk(&mut self, count: u64, n: u64) -> u64;
}

/// The article's loop: one increment through `black_box` per iteration.
#[derive(Debug, Clone, Copy, Default)]
pub struct Loop;

impl Work for Loop {
    #[inline(always)]
    fn chunk(&mut self, count: u64, n: u64) -> u64 {
        count_chunk(count, n)
    }
}

/// The counting loop run `depth` frames down a call stack (frame pointers
/// kept by the build), so a sample's call chain or stack copy walks `depth`
/// real frames.
#[derive(Debug, Clone, Copy)]
pub struct Stack {
    /// Frames between the chunk loop and the counting.
    pub depth: u32,
}

/// One frame: recurses, then passes the result through `black_box` so the
/// call is not in tail position and every frame stays on the stack.
#[inline(never)]
fn descend(depth: u32, count: u64, n: u64) -> u64 {
    if depth == 0 {
        return count_chunk(count, n);
    }
    black_box(descend(black_box(depth - 1), count, n))
}

impl Work for Stack {
    #[inline(always)]
    fn chunk(&mut self, count: u64, n: u64) -> u64 {
        descend(self.depth, count, n)
    }
}

/// A dependent pointer chase over `working_set` bytes: one 64-byte line per
/// hop, in a random cyclic order (Sattolo's shuffle) so neither the
/// prefetcher nor the compiler can run ahead. An iteration is one hop.
#[derive(Debug, Clone)]
pub struct Memory {
    /// next[i * 8] = the line after line i (as an index into `next`).
    next: Vec<u64>,
    at: usize,
}

/// Bytes per line of the chase.
pub const LINE_BYTES: u64 = 64;
const WORDS_PER_LINE: usize = (LINE_BYTES / 8) as usize;

impl Memory {
    /// Builds the chase over `working_set` bytes (rounded down to whole
    /// lines, at least two), its order from `seed`. Every page is written
    /// here, before the timed loop.
    pub fn new(working_set: u64, seed: u64) -> Memory {
        let lines = usize::try_from(working_set / LINE_BYTES)
            .unwrap_or(usize::MAX / WORDS_PER_LINE)
            .max(2);
        let mut order: Vec<usize> = (0..lines).collect();
        // Sattolo: one cycle through every line.
        let mut x = seed | 1;
        for i in (1..lines).rev() {
            // xorshift64*
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
            let j = usize::try_from(r % i as u64).unwrap_or(0);
            order.swap(i, j);
        }
        let mut next = vec![0u64; lines * WORDS_PER_LINE];
        for i in 0..lines {
            let to = order[i];
            next[i * WORDS_PER_LINE] = (to * WORDS_PER_LINE) as u64;
        }
        Memory { next, at: 0 }
    }

    /// Lines in the chase.
    pub fn lines(&self) -> usize {
        self.next.len() / WORDS_PER_LINE
    }
}

impl Work for Memory {
    #[inline(always)]
    fn chunk(&mut self, count: u64, n: u64) -> u64 {
        let mut at = self.at;
        for _ in 0..n {
            // In bounds by construction: every stored index is a line start.
            at = self.next.get(at).copied().unwrap_or(0) as usize;
        }
        self.at = black_box(at);
        count.wrapping_add(n)
    }
}

/// The kinds, as given on the command line.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub enum WorkKind {
    /// `loop`.
    #[default]
    Loop,
    /// `stack:DEPTH`.
    Stack {
        /// Frames.
        depth: u32,
    },
    /// `memory:SIZE`.
    Memory {
        /// Working set, bytes.
        working_set: u64,
    },
    /// `command`: the user's own program (`driver sweep --command`) in
    /// place of a built-in loop. The driver runs it; the workload binary
    /// refuses it.
    Command,
}

/// Default depth of `stack`: the depth of a typical server request's stack.
pub const DEFAULT_STACK_DEPTH: u32 = 32;
/// Deepest `stack` allowed (each frame is a few dozen bytes of an 8 MiB
/// main-thread stack; the kernel's call chains stop at 127 frames anyway).
pub const MAX_STACK_DEPTH: u32 = 4096;

/// The kinds there are, as a fix to offer.
pub const KINDS_HELP: &str = "use loop, stack[:DEPTH] (e.g. stack:32) or memory:SIZE (e.g. memory:32K, memory:8M, memory:1G)";

/// Why a kind is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KindError {
    /// Not a kind.
    #[error("unknown workload kind '{0}': {KINDS_HELP}")]
    Unknown(String),
    /// A bad depth or size.
    #[error("workload kind '{0}': {1}")]
    Bad(String, String),
}

impl WorkKind {
    /// Parses `loop`, `stack`, `stack:N`, `memory:SIZE` (K, M, G suffixes,
    /// powers of 1024) and `command` (the name recorded for the user's own
    /// program).
    pub fn parse(text: &str) -> Result<WorkKind, KindError> {
        let t = text.trim();
        let bad = |why: String| KindError::Bad(t.into(), why);
        match t.split_once(':') {
            None if t == "loop" => Ok(WorkKind::Loop),
            None if t == "command" => Ok(WorkKind::Command),
            None if t == "stack" => Ok(WorkKind::Stack {
                depth: DEFAULT_STACK_DEPTH,
            }),
            Some(("stack", depth)) => depth
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|&d| d <= MAX_STACK_DEPTH)
                .map(|depth| WorkKind::Stack { depth })
                .ok_or_else(|| bad(format!("depth must be 0 to {MAX_STACK_DEPTH}"))),
            Some(("memory", size)) => parse_size(size)
                .filter(|&b| b >= 2 * LINE_BYTES)
                .map(|working_set| WorkKind::Memory { working_set })
                .ok_or_else(|| {
                    bad(
                        "give a working set of at least 128 bytes, e.g. memory:32K, memory:8M"
                            .into(),
                    )
                }),
            _ => Err(KindError::Unknown(t.into())),
        }
    }

    /// The name used in files (parses back to self).
    pub fn name(&self) -> String {
        match self {
            WorkKind::Loop => "loop".into(),
            WorkKind::Stack { depth } => format!("stack:{depth}"),
            WorkKind::Memory { working_set } => format!("memory:{}", fmt_size(*working_set)),
            WorkKind::Command => "command".into(),
        }
    }
}

impl TryFrom<String> for WorkKind {
    type Error = KindError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        WorkKind::parse(&s)
    }
}

impl From<WorkKind> for String {
    fn from(k: WorkKind) -> String {
        k.name()
    }
}

impl fmt::Display for WorkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// "4096", "32K", "8M", "1G", "8MiB".
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let s = s
        .strip_suffix("iB")
        .or_else(|| s.strip_suffix('B'))
        .unwrap_or(s);
    let (num, mult) = match s.char_indices().last() {
        Some((i, 'K' | 'k')) => (&s[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&s[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

/// The shortest exact form: 32K, 8M, 1G, else bytes.
pub fn fmt_size(b: u64) -> String {
    for (unit, shift) in [("G", 30), ("M", 20), ("K", 10)] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    b.to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_name_round_trip() {
        for t in [
            "loop",
            "stack:0",
            "stack:64",
            "memory:32K",
            "memory:8M",
            "memory:1G",
            "memory:1000",
        ] {
            let k = WorkKind::parse(t).unwrap();
            assert_eq!(k.name(), t);
            assert_eq!(WorkKind::parse(&k.name()).unwrap(), k);
        }
        assert_eq!(
            WorkKind::parse("stack").unwrap(),
            WorkKind::Stack { depth: 32 }
        );
        assert_eq!(
            WorkKind::parse("memory:8MiB").unwrap(),
            WorkKind::Memory {
                working_set: 8 << 20
            }
        );
        for bad in [
            "stak",
            "stack:-1",
            "stack:99999",
            "memory",
            "memory:64",
            "memory:lots",
        ] {
            let e = WorkKind::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad) || e.contains("unknown"), "{bad}: {e}");
        }
    }

    #[test]
    fn every_kind_counts_exactly() {
        let mut kinds: Vec<Box<dyn Work>> = vec![
            Box::new(Loop),
            Box::new(Stack { depth: 40 }),
            Box::new(Memory::new(1 << 16, 7)),
        ];
        for w in &mut kinds {
            assert_eq!(w.chunk(5, 1000), 1005);
            assert_eq!(w.chunk(0, 0), 0);
        }
    }

    #[test]
    fn the_chase_visits_every_line_once_per_cycle() {
        let mut m = Memory::new(64 * 1000, 3);
        assert_eq!(m.lines(), 1000);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            assert!(seen.insert(m.at));
            m.chunk(0, 1);
        }
        assert_eq!(m.at, 0, "one cycle of all lines");
    }
}
