//! Decoding of perf ring buffer records: safe code over byte slices.
//!
//! Layouts are those of `enum perf_event_type` in `<linux/perf_event.h>`.
//! Malformed or truncated input gives a [`DecodeError`], never a panic.
//! A record that wraps around the end of the ring arrives as two slices;
//! [`for_each_record`] copies just that record into a small scratch buffer.

use perf_event_open_sys::bindings as b;

use super::attr::sample as st;

/// PERF_RECORD_LOST.
pub const RECORD_LOST: u32 = b::PERF_RECORD_LOST;
/// PERF_RECORD_THROTTLE.
pub const RECORD_THROTTLE: u32 = b::PERF_RECORD_THROTTLE;
/// PERF_RECORD_UNTHROTTLE.
pub const RECORD_UNTHROTTLE: u32 = b::PERF_RECORD_UNTHROTTLE;
/// PERF_RECORD_SAMPLE.
pub const RECORD_SAMPLE: u32 = b::PERF_RECORD_SAMPLE;
/// PERF_RECORD_LOST_SAMPLES.
pub const RECORD_LOST_SAMPLES: u32 = b::PERF_RECORD_LOST_SAMPLES;

/// PERF_SAMPLE_ADDR (skipped when present).
pub const SAMPLE_ADDR: u64 = b::PERF_SAMPLE_ADDR as u64;

/// The sample_type bits this decoder understands. PERF_SAMPLE_READ and the
/// fields after PERF_SAMPLE_STACK_USER (weight, data_src, ...) are not.
pub const SUPPORTED_SAMPLE_TYPE: u64 = st::IDENTIFIER
    | st::IP
    | st::TID
    | st::TIME
    | SAMPLE_ADDR
    | st::ID
    | st::STREAM_ID
    | st::CPU
    | st::PERIOD
    | st::CALLCHAIN
    | st::RAW
    | st::BRANCH_STACK
    | st::REGS_USER
    | st::STACK_USER;

/// The variable-length fields, which come after the fixed ones in this order.
const TAIL_FIELDS: u64 =
    st::CALLCHAIN | st::RAW | st::BRANCH_STACK | st::REGS_USER | st::STACK_USER;

/// Why a record did not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The record is shorter than its fields.
    #[error("record at byte {offset} is truncated: needs {need} bytes, has {have}")]
    Truncated {
        /// Offset of the record in the input.
        offset: usize,
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// header.size is impossible (< 8 or not a multiple of 8).
    #[error("record at byte {offset} has an impossible size {size}")]
    BadSize {
        /// Offset of the record in the input.
        offset: usize,
        /// The size field.
        size: u16,
    },
    /// A sample carries an id that no opened event has.
    #[error("sample id {id} belongs to no event opened on this ring")]
    UnknownId {
        /// The id.
        id: u64,
    },
    /// A sample_type this decoder cannot parse.
    #[error("sample_type {sample_type:#x} has bits this decoder does not parse ({extra:#x})")]
    Unsupported {
        /// The sample_type.
        sample_type: u64,
        /// The unknown bits.
        extra: u64,
    },
}

impl DecodeError {
    /// [`DecodeError::Truncated`]: the record at `offset` needs `need`
    /// bytes and has `have`.
    pub(crate) fn truncated(offset: usize, need: usize, have: usize) -> DecodeError {
        DecodeError::Truncated { offset, need, have }
    }
}

/// How the records of one ring are laid out: the sample_type of each event
/// (looked up by PERF_SAMPLE_IDENTIFIER when several events share the ring)
/// and whether sample_id_all is set.
#[derive(Debug, Clone)]
pub struct Formats {
    default: u64,
    default_layout: SampleLayout,
    by_id: Vec<(u64, u64, SampleLayout)>,
    sample_id_all: bool,
}

/// Byte offsets of a sample's fixed fields (0 = absent: offset 0 is the
/// header), computed once per sample_type so decoding a sample is one bounds
/// check plus direct reads.
#[derive(Debug, Clone, Copy, Default)]
struct SampleLayout {
    ip: u16,
    tid: u16,
    time: u16,
    id: u16,
    cpu: u16,
    period: u16,
    /// The end of the fixed fields, where the variable ones start.
    fixed_len: u16,
    /// The sample_type's variable-length fields ([`TAIL_FIELDS`]).
    tail: u64,
    /// Registers in a PERF_SAMPLE_REGS_USER dump (popcount of sample_regs_user).
    regs_user: u16,
}

impl SampleLayout {
    fn new(sample_type: u64, regs_user_mask: u64) -> SampleLayout {
        let mut l = SampleLayout::default();
        let mut at: u16 = 8;
        let mut take = |bit: u64, slot: Option<&mut u16>| {
            if sample_type & bit != 0 {
                if let Some(slot) = slot {
                    *slot = at;
                }
                at += 8;
            }
        };
        let mut ident = 0u16;
        take(st::IDENTIFIER, Some(&mut ident));
        take(st::IP, Some(&mut l.ip));
        take(st::TID, Some(&mut l.tid));
        take(st::TIME, Some(&mut l.time));
        take(SAMPLE_ADDR, None);
        let mut id = 0u16;
        take(st::ID, Some(&mut id));
        take(st::STREAM_ID, None);
        take(st::CPU, Some(&mut l.cpu));
        take(st::PERIOD, Some(&mut l.period));
        l.id = if ident != 0 { ident } else { id };
        l.fixed_len = at;
        l.tail = sample_type & TAIL_FIELDS;
        l.regs_user = regs_user_mask.count_ones() as u16;
        l
    }
}

impl Formats {
    /// One event (or several with the same sample_type) on the ring.
    pub fn single(sample_type: u64, sample_id_all: bool) -> Result<Formats, DecodeError> {
        check_supported(sample_type)?;
        Ok(Formats {
            default: sample_type,
            default_layout: SampleLayout::new(sample_type, 0),
            by_id: Vec::new(),
            sample_id_all,
        })
    }

    /// The `sample_regs_user` mask of the events whose sample_type has
    /// PERF_SAMPLE_REGS_USER (it sets how many registers a sample carries).
    pub fn with_regs_user(mut self, mask: u64) -> Formats {
        self.default_layout = SampleLayout::new(self.default, mask);
        for e in &mut self.by_id {
            e.2 = SampleLayout::new(e.1, mask);
        }
        self
    }

    /// Several events with different sample_types; every one must include
    /// PERF_SAMPLE_IDENTIFIER so the id can be read before the layout is known.
    pub fn by_id(events: &[(u64, u64)], sample_id_all: bool) -> Result<Formats, DecodeError> {
        let mut default = 0;
        for &(_, sample_type) in events {
            check_supported(sample_type)?;
            if sample_type & st::IDENTIFIER == 0 {
                return Err(DecodeError::Unsupported {
                    sample_type,
                    extra: 0,
                });
            }
            default = sample_type;
        }
        Ok(Formats {
            by_id: events
                .iter()
                .map(|&(id, t)| (id, t, SampleLayout::new(t, 0)))
                .collect(),
            ..Formats::single(default, sample_id_all)?
        })
    }

    /// The sample_type and layout of event `id`.
    #[inline]
    fn lookup(&self, id: u64) -> Result<(u64, &SampleLayout), DecodeError> {
        if self.by_id.is_empty() {
            return Ok((self.default, &self.default_layout));
        }
        self.by_id
            .iter()
            .find(|e| e.0 == id)
            .map(|e| (e.1, &e.2))
            .ok_or(DecodeError::UnknownId { id })
    }

    fn has_identifier(&self) -> bool {
        self.default & st::IDENTIFIER != 0
    }
}

fn check_supported(sample_type: u64) -> Result<(), DecodeError> {
    let extra = sample_type & !SUPPORTED_SAMPLE_TYPE;
    if extra != 0 {
        return Err(DecodeError::Unsupported { sample_type, extra });
    }
    Ok(())
}

/// What a PERF_SAMPLE_STACK_USER field held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StackUser {
    /// Bytes of stack the record carries (`sample_stack_user`, or less when
    /// the kernel shrank it to fit the record's 64 KiB).
    pub size: u64,
    /// Bytes of them that were really stack (`dyn_size`; 0 when size is 0).
    pub dyn_size: u64,
}

/// A PERF_RECORD_SAMPLE. The variable-length fields other than RAW are
/// summarised (how many entries, how many bytes), not kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample<'a> {
    /// PERF_SAMPLE_IDENTIFIER (or PERF_SAMPLE_ID when that is the only id).
    pub id: Option<u64>,
    /// PERF_SAMPLE_IP.
    pub ip: Option<u64>,
    /// PERF_SAMPLE_TID: pid, tid.
    pub tid: Option<(u32, u32)>,
    /// PERF_SAMPLE_TIME.
    pub time: Option<u64>,
    /// PERF_SAMPLE_CPU.
    pub cpu: Option<u32>,
    /// PERF_SAMPLE_PERIOD.
    pub period: Option<u64>,
    /// PERF_SAMPLE_RAW (tracepoint data, without its u32 size).
    pub raw: Option<&'a [u8]>,
    /// PERF_SAMPLE_CALLCHAIN: entries (frames and PERF_CONTEXT_* markers).
    pub callchain: Option<u32>,
    /// PERF_SAMPLE_BRANCH_STACK: branch entries.
    pub branches: Option<u32>,
    /// PERF_SAMPLE_REGS_USER: the abi word (0: no user registers, a kernel
    /// thread).
    pub regs_user_abi: Option<u64>,
    /// PERF_SAMPLE_STACK_USER.
    pub stack_user: Option<StackUser>,
}

/// A PERF_RECORD_THROTTLE or PERF_RECORD_UNTHROTTLE (one layout). Its
/// sample_id trailer, like every non-sample record's, is checked (its
/// event known, its length in the record) but not kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThrottleRecord {
    /// Time of the throttling or unthrottling.
    pub time: u64,
    /// Event id.
    pub id: u64,
    /// Stream id.
    pub stream_id: u64,
}

/// One decoded record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// PERF_RECORD_SAMPLE.
    Sample(Sample<'a>),
    /// PERF_RECORD_LOST: the kernel dropped `lost` records of event `id`.
    Lost {
        /// Event id.
        id: u64,
        /// Records lost.
        lost: u64,
    },
    /// PERF_RECORD_LOST_SAMPLES.
    LostSamples {
        /// Samples lost.
        lost: u64,
    },
    /// PERF_RECORD_THROTTLE.
    Throttle(ThrottleRecord),
    /// PERF_RECORD_UNTHROTTLE.
    Unthrottle(ThrottleRecord),
    /// Any other record type (skipped by its size).
    Other {
        /// header.type.
        kind: u32,
    },
}

#[inline]
fn rd_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

#[inline]
fn rd_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// The two u32 of a u64 word as they lie in memory (pid and tid, cpu and
/// its reserved half).
#[inline]
fn u32_pair(w: u64) -> (u32, u32) {
    let [a, b, c, d, e, f, g, h] = w.to_ne_bytes();
    (
        u32::from_ne_bytes([a, b, c, d]),
        u32::from_ne_bytes([e, f, g, h]),
    )
}

/// Reads fields in order, failing with Truncated at the record's offset.
struct Cur<'a> {
    b: &'a [u8],
    at: usize,
    base: usize,
}

impl<'a> Cur<'a> {
    #[inline]
    fn trunc(&self, need: usize) -> DecodeError {
        DecodeError::truncated(self.base, self.at + need, self.b.len())
    }
    #[inline]
    fn u64(&mut self) -> Result<u64, DecodeError> {
        let v = rd_u64(self.b, self.at).ok_or_else(|| self.trunc(8))?;
        self.at += 8;
        Ok(v)
    }
}

/// Decodes one complete record (`rec.len()` == header.size). `base` is its
/// offset in the input, for error messages.
pub fn parse_record<'a>(
    rec: &'a [u8],
    formats: &Formats,
    base: usize,
) -> Result<Record<'a>, DecodeError> {
    let kind = rd_u32(rec, 0).ok_or(DecodeError::truncated(base, 8, rec.len()))?;
    let mut c = Cur {
        b: rec,
        at: 8,
        base,
    };
    match kind {
        RECORD_SAMPLE => parse_sample(rec, formats, base).map(Record::Sample),
        RECORD_LOST => {
            let id = c.u64()?;
            let lost = c.u64()?;
            check_sample_id(rec, c.at, formats, base)?;
            Ok(Record::Lost { id, lost })
        }
        RECORD_LOST_SAMPLES => {
            let lost = c.u64()?;
            check_sample_id(rec, c.at, formats, base)?;
            Ok(Record::LostSamples { lost })
        }
        RECORD_THROTTLE | RECORD_UNTHROTTLE => {
            let (time, id, stream_id) = (c.u64()?, c.u64()?, c.u64()?);
            check_sample_id(rec, c.at, formats, base)?;
            let t = ThrottleRecord {
                time,
                id,
                stream_id,
            };
            Ok(if kind == RECORD_THROTTLE {
                Record::Throttle(t)
            } else {
                Record::Unthrottle(t)
            })
        }
        kind => Ok(Record::Other { kind }),
    }
}

/// The fields of the sample_id trailer of non-sample records
/// (sample_id_all), one word each.
const TRAILER: u64 = st::TID | st::TIME | st::ID | st::STREAM_ID | st::CPU | st::IDENTIFIER;

/// Checks a non-sample record's sample_id trailer (sample_id_all): the
/// event its PERF_SAMPLE_IDENTIFIER (the record's last word) names is
/// known, and the trailer fits after the record's body, which ends at
/// `body_end`. Nothing reads its fields, so they are not decoded.
fn check_sample_id(
    rec: &[u8],
    body_end: usize,
    formats: &Formats,
    base: usize,
) -> Result<(), DecodeError> {
    if !formats.sample_id_all {
        return Ok(());
    }
    let len = rec.len();
    let sample_type = if formats.has_identifier() && !formats.by_id.is_empty() {
        let id = rd_u64(rec, len.wrapping_sub(8)).ok_or(DecodeError::truncated(base, 8, len))?;
        formats.lookup(id)?.0
    } else {
        formats.default
    };
    let trailer = (sample_type & TRAILER).count_ones() as usize * 8;
    match len.checked_sub(trailer) {
        Some(start) if start >= body_end => Ok(()),
        _ => Err(DecodeError::truncated(base, body_end + trailer, len)),
    }
}

#[inline]
fn parse_sample<'a>(
    rec: &'a [u8],
    formats: &Formats,
    base: usize,
) -> Result<Sample<'a>, DecodeError> {
    let layout = if formats.has_identifier() {
        let id = rd_u64(rec, 8).ok_or(DecodeError::truncated(base, 16, rec.len()))?;
        formats.lookup(id)?.1
    } else {
        &formats.default_layout
    };
    let fixed = usize::from(layout.fixed_len);
    if rec.len() < fixed {
        return Err(DecodeError::truncated(base, fixed, rec.len()));
    }
    // In bounds: every offset below is < fixed_len <= rec.len().
    let u64_at = |off: u16| (off != 0).then(|| rd_u64(rec, usize::from(off))).flatten();
    let mut s = Sample {
        id: u64_at(layout.id),
        ip: u64_at(layout.ip),
        tid: u64_at(layout.tid).map(u32_pair),
        time: u64_at(layout.time),
        cpu: u64_at(layout.cpu).map(|w| u32_pair(w).0),
        period: u64_at(layout.period),
        ..Sample::default()
    };
    if layout.tail != 0 {
        parse_tail(rec, layout, base, &mut s)?;
    }
    Ok(s)
}

/// The variable-length fields of a sample, in the kernel's order
/// (perf_output_sample): callchain, raw, branch stack, user registers, user
/// stack.
fn parse_tail<'a>(
    rec: &'a [u8],
    layout: &SampleLayout,
    base: usize,
    s: &mut Sample<'a>,
) -> Result<(), DecodeError> {
    let mut c = Cur {
        b: rec,
        at: usize::from(layout.fixed_len),
        base,
    };
    // Skips `n` u64 words, or fails as truncated.
    let skip = |c: &mut Cur<'_>, n: u64| -> Result<(), DecodeError> {
        let bytes = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(8))
            .unwrap_or(usize::MAX);
        match c.at.checked_add(bytes).filter(|&end| end <= c.b.len()) {
            Some(end) => {
                c.at = end;
                Ok(())
            }
            None => Err(DecodeError::truncated(
                base,
                c.at.saturating_add(bytes),
                c.b.len(),
            )),
        }
    };
    if layout.tail & st::CALLCHAIN != 0 {
        let nr = c.u64()?;
        skip(&mut c, nr)?;
        s.callchain = Some(u32::try_from(nr).unwrap_or(u32::MAX));
    }
    if layout.tail & st::RAW != 0 {
        let o = c.at;
        let size = rd_u32(rec, o).ok_or_else(|| c.trunc(4))? as usize;
        let data = rec.get(o + 4..o + 4 + size).ok_or(DecodeError::truncated(
            base,
            o + 4 + size,
            rec.len(),
        ))?;
        s.raw = Some(data);
        // The kernel pads size + data to a multiple of 8.
        c.at = (o + 4 + size).next_multiple_of(8);
    }
    if layout.tail & st::BRANCH_STACK != 0 {
        // No PERF_SAMPLE_BRANCH_HW_INDEX: nr, then nr entries of 3 words.
        let nr = c.u64()?;
        skip(&mut c, nr.saturating_mul(3))?;
        s.branches = Some(u32::try_from(nr).unwrap_or(u32::MAX));
    }
    if layout.tail & st::REGS_USER != 0 {
        let abi = c.u64()?;
        if abi != 0 {
            skip(&mut c, u64::from(layout.regs_user))?;
        }
        s.regs_user_abi = Some(abi);
    }
    if layout.tail & st::STACK_USER != 0 {
        let size = c.u64()?;
        let dyn_size = if size == 0 {
            0
        } else {
            skip(&mut c, size.div_ceil(8))?;
            c.u64()?
        };
        s.stack_user = Some(StackUser { size, dyn_size });
    }
    Ok(())
}

mod framing;

pub use framing::*;
