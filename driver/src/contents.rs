//! What each sample carries (`--sample`): named presets that match what the
//! profilers users run write, and field lists.
//!
//! The handler's cost grows with what it copies: a timestamp is the cheapest
//! record there is, `perf record` writes six fields, `-g` walks the kernel
//! and user frame-pointer chains, `--call-graph dwarf` copies the user
//! registers and a block of user stack. Every preset adds
//! PERF_SAMPLE_IDENTIFIER and PERF_SAMPLE_TIME when absent (the drain needs
//! both) and PERF_SAMPLE_TID in task scope (the sampled task).

use std::fmt;

use serde::{Deserialize, Serialize};

use perf_event_open_sys::bindings as b;

use crate::perf::attr::{Attr, sample as st};

/// `perf record --call-graph dwarf`'s default stack copy: 8 KiB.
pub const DEFAULT_DWARF_STACK_BYTES: u32 = 8192;
/// Largest `sample_stack_user` the kernel accepts: below 65535 and a
/// multiple of 8 (perf_copy_attr returns EINVAL otherwise).
pub const MAX_STACK_USER_BYTES: u32 = 65528;

/// `perf record`'s sample_type for a CPU-wide event with several events in
/// one session: IP, TID, TIME, CPU, PERIOD and IDENTIFIER.
const PERF_DEFAULT: u64 = st::IDENTIFIER | st::IP | st::TID | st::TIME | st::CPU | st::PERIOD;

/// The user registers `perf record --call-graph dwarf` asks for
/// (tools/perf/arch/*/include/perf_regs.h PERF_REGS_MASK): on x86_64 the
/// 24 general registers without the segment registers ds, es, fs, gs.
#[cfg(target_arch = "x86_64")]
pub const DWARF_REGS_USER_MASK: u64 = ((1 << 24) - 1) & !(0xf << 12);
/// On aarch64, x0-x30, sp and pc.
#[cfg(target_arch = "aarch64")]
pub const DWARF_REGS_USER_MASK: u64 = (1 << 33) - 1;
/// Elsewhere: the instruction pointer and stack pointer are not known here,
/// so the dwarf preset copies no registers.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const DWARF_REGS_USER_MASK: u64 = 0;

/// Frames a call chain is assumed to hold when sizing rings (the kernel
/// caps it at `kernel.perf_event_max_stack`, 127 by default; the workloads
/// here hold a few dozen). An underestimate only makes the drain decode
/// during the run.
pub const RING_ESTIMATE_CALLCHAIN_FRAMES: u64 = 32;

/// One `--sample` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum SampleContents {
    /// IDENTIFIER and TIME only: the cheapest record, what the driver wrote
    /// before sample contents were a dimension.
    Time,
    /// What `perf record -e EVENT -C N` writes: IP, TID, TIME, CPU, PERIOD,
    /// IDENTIFIER.
    PerfDefault,
    /// `perf record -g`: perf-default plus the kernel and user frame-pointer
    /// call chain.
    Callchain,
    /// `perf record --call-graph dwarf,SIZE`: perf-default, the kernel call
    /// chain, the user registers and SIZE bytes of user stack.
    Dwarf {
        /// Bytes of user stack copied per sample.
        stack_bytes: u32,
    },
    /// `perf record -b`: perf-default plus the PMU's branch stack (LBR).
    Lbr,
    /// A field list, e.g. `ip+tid+period` (PERF_SAMPLE_* bits; IDENTIFIER
    /// and TIME always added).
    Fields(u64),
}

/// The field names of a field list, in the kernel's record order.
const FIELD_NAMES: [(&str, u64); 6] = [
    ("ip", st::IP),
    ("tid", st::TID),
    ("time", st::TIME),
    ("cpu", st::CPU),
    ("period", st::PERIOD),
    ("callchain", st::CALLCHAIN),
];

/// The presets, for help and error text.
pub const PRESETS: &str = "time, perf-default, callchain, dwarf[:SIZE], lbr, \
     or a field list such as ip+tid+cpu+period (fields: ip, tid, time, cpu, period, callchain)";

/// Why a `--sample` value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentsError {
    /// Neither a preset nor a field list.
    #[error("unknown sample contents '{0}': use {PRESETS}")]
    Unknown(String),
    /// A dwarf stack size the kernel refuses.
    #[error(
        "dwarf stack size '{0}' is refused by the kernel: give a multiple of 8 bytes from 8 to {MAX_STACK_USER_BYTES} (e.g. dwarf:8192; sizes take K/KiB suffixes)"
    )]
    StackSize(String),
}

impl SampleContents {
    /// The contents of the default sweep: what `perf record` writes.
    pub const DEFAULT: SampleContents = SampleContents::PerfDefault;

    /// Parses a preset name or a `+`-separated field list.
    pub fn parse(text: &str) -> Result<SampleContents, ContentsError> {
        let t = text.trim();
        match t {
            "time" => return Ok(SampleContents::Time),
            "perf-default" | "default" => return Ok(SampleContents::PerfDefault),
            "callchain" => return Ok(SampleContents::Callchain),
            "dwarf" => {
                return Ok(SampleContents::Dwarf {
                    stack_bytes: DEFAULT_DWARF_STACK_BYTES,
                });
            }
            "lbr" => return Ok(SampleContents::Lbr),
            _ => {}
        }
        if let Some(size) = t
            .strip_prefix("dwarf:")
            .or_else(|| t.strip_prefix("dwarf,"))
        {
            let bytes = parse_bytes(size).ok_or_else(|| ContentsError::StackSize(size.into()))?;
            if bytes == 0 || bytes % 8 != 0 || bytes > u64::from(MAX_STACK_USER_BYTES) {
                return Err(ContentsError::StackSize(size.into()));
            }
            return Ok(SampleContents::Dwarf {
                stack_bytes: bytes as u32,
            });
        }
        let bits = t.split('+').try_fold(0, |bits, field| {
            let (_, bit) = FIELD_NAMES.iter().find(|(n, _)| *n == field.trim())?;
            Some(bits | bit)
        });
        bits.map(SampleContents::Fields)
            .ok_or_else(|| ContentsError::Unknown(t.into()))
    }

    /// The name used in files and on the command line (parses back to self).
    pub fn name(&self) -> String {
        match self {
            SampleContents::Time => "time".into(),
            SampleContents::PerfDefault => "perf-default".into(),
            SampleContents::Callchain => "callchain".into(),
            SampleContents::Dwarf { stack_bytes } => format!("dwarf:{stack_bytes}"),
            SampleContents::Lbr => "lbr".into(),
            SampleContents::Fields(bits) => FIELD_NAMES
                .iter()
                .filter(|(_, b)| bits & b != 0)
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join("+"),
        }
    }

    /// The sampling event's sample_type (`task`: the event follows one task,
    /// whose TID the drain needs).
    pub fn sample_type(&self, task: bool) -> u64 {
        let bits = match self {
            SampleContents::Time => 0,
            SampleContents::PerfDefault => PERF_DEFAULT,
            SampleContents::Callchain => PERF_DEFAULT | st::CALLCHAIN,
            SampleContents::Dwarf { .. } => {
                PERF_DEFAULT | st::CALLCHAIN | st::REGS_USER | st::STACK_USER
            }
            SampleContents::Lbr => PERF_DEFAULT | st::BRANCH_STACK,
            SampleContents::Fields(bits) => *bits,
        };
        let task_bits = if task { st::TID } else { 0 };
        bits | st::IDENTIFIER | st::TIME | task_bits
    }

    /// The `sample_regs_user` mask (non-zero only for dwarf).
    pub fn regs_user_mask(&self) -> u64 {
        match self {
            SampleContents::Dwarf { .. } => DWARF_REGS_USER_MASK,
            _ => 0,
        }
    }

    /// Whether the contents need a hardware PMU (the branch stack).
    pub fn needs_pmu(&self) -> bool {
        matches!(self, SampleContents::Lbr)
    }

    /// Writes the contents' fields of the sampling event's attr: sample_type
    /// and the sizes that go with it, as `perf record` sets them.
    pub fn apply(&self, attr: Attr, task: bool) -> Attr {
        let attr = attr.sample_type(self.sample_type(task));
        match self {
            SampleContents::Dwarf { stack_bytes } => attr
                .sample_regs_user(DWARF_REGS_USER_MASK)
                .sample_stack_user(*stack_bytes)
                .exclude_callchain_user(true),
            SampleContents::Lbr => attr.branch_sample_type(u64::from(
                b::PERF_SAMPLE_BRANCH_ANY
                    | b::PERF_SAMPLE_BRANCH_USER
                    | b::PERF_SAMPLE_BRANCH_KERNEL,
            )),
            _ => attr,
        }
    }

    /// Estimated bytes of one sample record, for ring sizing.
    pub fn est_record_bytes(&self, task: bool) -> u64 {
        let st_bits = self.sample_type(task);
        // The header and one word per fixed field (perf-default's are all).
        let mut bytes = 8 + 8 * u64::from((st_bits & PERF_DEFAULT).count_ones());
        if st_bits & st::CALLCHAIN != 0 {
            bytes += 8 + 8 * RING_ESTIMATE_CALLCHAIN_FRAMES;
        }
        if st_bits & st::BRANCH_STACK != 0 {
            // 32 LBR entries of 24 bytes, the most current PMUs keep.
            bytes += 8 + 32 * 24;
        }
        if st_bits & st::REGS_USER != 0 {
            bytes += 8 + 8 * u64::from(self.regs_user_mask().count_ones());
        }
        if let SampleContents::Dwarf { stack_bytes } = self {
            bytes += 16 + u64::from(*stack_bytes);
        }
        bytes
    }
}

/// "8192", "8K", "8KiB", "64k".
fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = if let Some(n) = s
        .strip_suffix("KiB")
        .or_else(|| s.strip_suffix('K'))
        .or_else(|| s.strip_suffix('k'))
    {
        (n, 1024)
    } else {
        (s, 1)
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

impl fmt::Display for SampleContents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl TryFrom<String> for SampleContents {
    type Error = ContentsError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        SampleContents::parse(&s)
    }
}

impl From<SampleContents> for String {
    fn from(c: SampleContents) -> String {
        c.name()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn presets_parse_and_name_round_trip() {
        for text in [
            "time",
            "perf-default",
            "callchain",
            "dwarf:8192",
            "dwarf:65528",
            "lbr",
            "ip+tid+period",
            "callchain+cpu",
        ] {
            let c = SampleContents::parse(text).unwrap();
            assert_eq!(SampleContents::parse(&c.name()).unwrap(), c, "{text}");
        }
        assert_eq!(
            SampleContents::parse("dwarf").unwrap(),
            SampleContents::Dwarf { stack_bytes: 8192 }
        );
        assert_eq!(
            SampleContents::parse("dwarf:16K").unwrap(),
            SampleContents::Dwarf { stack_bytes: 16384 }
        );
        // Field lists are named in record order whatever order they came in.
        assert_eq!(
            SampleContents::parse("period+ip").unwrap().name(),
            "ip+period"
        );
    }

    #[test]
    fn perf_default_is_what_perf_record_writes() {
        let t = SampleContents::PerfDefault.sample_type(false);
        assert_eq!(
            t,
            st::IP | st::TID | st::TIME | st::CPU | st::PERIOD | st::IDENTIFIER
        );
        assert_eq!(
            SampleContents::Time.sample_type(false),
            st::IDENTIFIER | st::TIME
        );
        assert_eq!(
            SampleContents::Time.sample_type(true),
            st::IDENTIFIER | st::TIME | st::TID
        );
    }

    #[test]
    fn bad_values_say_what_is_accepted() {
        let e = SampleContents::parse("stackz").unwrap_err().to_string();
        assert!(e.contains("'stackz'") && e.contains("perf-default"), "{e}");
        for bad in ["dwarf:100", "dwarf:0", "dwarf:65536", "dwarf:big"] {
            let e = SampleContents::parse(bad).unwrap_err().to_string();
            assert!(
                e.contains("65528") && e.contains("multiple of 8"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn record_estimates_grow_with_the_contents() {
        let t = SampleContents::Time.est_record_bytes(false);
        let d = SampleContents::PerfDefault.est_record_bytes(false);
        let g = SampleContents::Callchain.est_record_bytes(false);
        let w = SampleContents::Dwarf { stack_bytes: 8192 }.est_record_bytes(false);
        assert_eq!(t, 24);
        assert_eq!(d, 56);
        assert!(t < d && d < g && g < w && w > 8192, "{t} {d} {g} {w}");
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn dwarf_copies_perf_records_twenty_registers() {
        assert_eq!(DWARF_REGS_USER_MASK.count_ones(), 20);
        assert_eq!(DWARF_REGS_USER_MASK, 0xff0fff);
    }
}
