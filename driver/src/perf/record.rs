//! Decoding of perf ring buffer records: safe code over byte slices.
//!
//! Layouts are those of `enum perf_event_type` in `<linux/perf_event.h>`.
//! Malformed or truncated input gives a [`DecodeError`], never a panic.
//! A record that wraps around the end of the ring arrives as two slices;
//! [`for_each_record`] copies just that record into a small scratch buffer.

use super::attr::sample as st;

/// PERF_RECORD_LOST.
pub const RECORD_LOST: u32 = 2;
/// PERF_RECORD_THROTTLE.
pub const RECORD_THROTTLE: u32 = 5;
/// PERF_RECORD_UNTHROTTLE.
pub const RECORD_UNTHROTTLE: u32 = 6;
/// PERF_RECORD_SAMPLE.
pub const RECORD_SAMPLE: u32 = 9;
/// PERF_RECORD_LOST_SAMPLES.
pub const RECORD_LOST_SAMPLES: u32 = 13;

/// PERF_SAMPLE_ADDR (skipped when present).
const SAMPLE_ADDR: u64 = 8;

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
    /// The same error with its offset moved by `by` bytes (an offset counted
    /// in the second slice of a wrapped region, made one in the whole).
    fn shifted(self, by: usize) -> DecodeError {
        match self {
            DecodeError::Truncated { offset, need, have } => DecodeError::Truncated {
                offset: offset + by,
                need,
                have,
            },
            DecodeError::BadSize { offset, size } => DecodeError::BadSize {
                offset: offset + by,
                size,
            },
            other => other,
        }
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
            default,
            default_layout: SampleLayout::new(default, 0),
            by_id: events
                .iter()
                .map(|&(id, t)| (id, t, SampleLayout::new(t, 0)))
                .collect(),
            sample_id_all,
        })
    }

    fn lookup(&self, id: u64) -> Result<u64, DecodeError> {
        if self.by_id.is_empty() {
            return Ok(self.default);
        }
        self.by_id
            .iter()
            .find(|e| e.0 == id)
            .map(|e| e.1)
            .ok_or(DecodeError::UnknownId { id })
    }

    #[inline]
    fn layout(&self, id: u64) -> Result<&SampleLayout, DecodeError> {
        if self.by_id.is_empty() {
            return Ok(&self.default_layout);
        }
        self.by_id
            .iter()
            .find(|e| e.0 == id)
            .map(|e| &e.2)
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

/// The sample_id trailer of non-sample records (sample_id_all).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SampleId {
    /// PERF_SAMPLE_TID: pid, tid.
    pub tid: Option<(u32, u32)>,
    /// PERF_SAMPLE_TIME.
    pub time: Option<u64>,
    /// PERF_SAMPLE_ID.
    pub id: Option<u64>,
    /// PERF_SAMPLE_STREAM_ID.
    pub stream_id: Option<u64>,
    /// PERF_SAMPLE_CPU.
    pub cpu: Option<u32>,
    /// PERF_SAMPLE_IDENTIFIER.
    pub identifier: Option<u64>,
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
        /// Trailer.
        sid: SampleId,
    },
    /// PERF_RECORD_LOST_SAMPLES.
    LostSamples {
        /// Samples lost.
        lost: u64,
        /// Trailer.
        sid: SampleId,
    },
    /// PERF_RECORD_THROTTLE.
    Throttle {
        /// Time of throttling.
        time: u64,
        /// Event id.
        id: u64,
        /// Stream id.
        stream_id: u64,
        /// Trailer.
        sid: SampleId,
    },
    /// PERF_RECORD_UNTHROTTLE.
    Unthrottle {
        /// Time of unthrottling.
        time: u64,
        /// Event id.
        id: u64,
        /// Stream id.
        stream_id: u64,
        /// Trailer.
        sid: SampleId,
    },
    /// Any other record type (skipped by its size).
    Other {
        /// header.type.
        kind: u32,
    },
}

#[inline]
fn rd_u64(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_ne_bytes(a))
}

#[inline]
fn rd_u32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    let mut a = [0u8; 4];
    a.copy_from_slice(s);
    Some(u32::from_ne_bytes(a))
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
        DecodeError::Truncated {
            offset: self.base,
            need: self.at + need,
            have: self.b.len(),
        }
    }
    #[inline]
    fn u64(&mut self) -> Result<u64, DecodeError> {
        let v = rd_u64(self.b, self.at).ok_or_else(|| self.trunc(8))?;
        self.at += 8;
        Ok(v)
    }
    #[inline]
    fn pair_u32(&mut self) -> Result<(u32, u32), DecodeError> {
        let a = rd_u32(self.b, self.at).ok_or_else(|| self.trunc(8))?;
        let b = rd_u32(self.b, self.at + 4).ok_or_else(|| self.trunc(8))?;
        self.at += 8;
        Ok((a, b))
    }
}

/// The sample_id trailer size for a sample_type.
fn trailer_len(sample_type: u64) -> usize {
    [
        st::TID,
        st::TIME,
        st::ID,
        st::STREAM_ID,
        st::CPU,
        st::IDENTIFIER,
    ]
    .iter()
    .filter(|&&bit| sample_type & bit != 0)
    .count()
        * 8
}

fn parse_sample_id(
    rec: &[u8],
    body_end: usize,
    formats: &Formats,
    base: usize,
) -> Result<(SampleId, usize), DecodeError> {
    if !formats.sample_id_all {
        return Ok((SampleId::default(), rec.len()));
    }
    let sample_type = if formats.has_identifier() && !formats.by_id.is_empty() {
        let len = rec.len();
        let id = rd_u64(rec, len.wrapping_sub(8)).ok_or(DecodeError::Truncated {
            offset: base,
            need: 8,
            have: len,
        })?;
        formats.lookup(id)?
    } else {
        formats.default
    };
    let tl = trailer_len(sample_type);
    let start =
        rec.len()
            .checked_sub(tl)
            .filter(|&s| s >= body_end)
            .ok_or(DecodeError::Truncated {
                offset: base,
                need: body_end + tl,
                have: rec.len(),
            })?;
    let mut c = Cur {
        b: rec,
        at: start,
        base,
    };
    let mut sid = SampleId::default();
    if sample_type & st::TID != 0 {
        sid.tid = Some(c.pair_u32()?);
    }
    if sample_type & st::TIME != 0 {
        sid.time = Some(c.u64()?);
    }
    if sample_type & st::ID != 0 {
        sid.id = Some(c.u64()?);
    }
    if sample_type & st::STREAM_ID != 0 {
        sid.stream_id = Some(c.u64()?);
    }
    if sample_type & st::CPU != 0 {
        sid.cpu = Some(c.pair_u32()?.0);
    }
    if sample_type & st::IDENTIFIER != 0 {
        sid.identifier = Some(c.u64()?);
    }
    Ok((sid, start))
}

/// Decodes one complete record (`rec.len()` == header.size). `base` is its
/// offset in the input, for error messages.
pub fn parse_record<'a>(
    rec: &'a [u8],
    formats: &Formats,
    base: usize,
) -> Result<Record<'a>, DecodeError> {
    let kind = rd_u32(rec, 0).ok_or(DecodeError::Truncated {
        offset: base,
        need: 8,
        have: rec.len(),
    })?;
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
            let (sid, _) = parse_sample_id(rec, c.at, formats, base)?;
            Ok(Record::Lost { id, lost, sid })
        }
        RECORD_LOST_SAMPLES => {
            let lost = c.u64()?;
            let (sid, _) = parse_sample_id(rec, c.at, formats, base)?;
            Ok(Record::LostSamples { lost, sid })
        }
        RECORD_THROTTLE | RECORD_UNTHROTTLE => {
            let time = c.u64()?;
            let id = c.u64()?;
            let stream_id = c.u64()?;
            let (sid, _) = parse_sample_id(rec, c.at, formats, base)?;
            Ok(if kind == RECORD_THROTTLE {
                Record::Throttle {
                    time,
                    id,
                    stream_id,
                    sid,
                }
            } else {
                Record::Unthrottle {
                    time,
                    id,
                    stream_id,
                    sid,
                }
            })
        }
        kind => Ok(Record::Other { kind }),
    }
}

#[inline]
fn parse_sample<'a>(
    rec: &'a [u8],
    formats: &Formats,
    base: usize,
) -> Result<Sample<'a>, DecodeError> {
    let layout = if formats.has_identifier() {
        let id = rd_u64(rec, 8).ok_or(DecodeError::Truncated {
            offset: base,
            need: 16,
            have: rec.len(),
        })?;
        formats.layout(id)?
    } else {
        &formats.default_layout
    };
    let fixed = usize::from(layout.fixed_len);
    if rec.len() < fixed {
        return Err(DecodeError::Truncated {
            offset: base,
            need: fixed,
            have: rec.len(),
        });
    }
    // In bounds: every offset below is < fixed_len <= rec.len().
    let u64_at = |off: u16| (off != 0).then(|| rd_u64(rec, usize::from(off))).flatten();
    let u32_at = |off: u16| (off != 0).then(|| rd_u32(rec, usize::from(off))).flatten();
    let mut s = Sample {
        id: u64_at(layout.id),
        ip: u64_at(layout.ip),
        tid: None,
        time: u64_at(layout.time),
        cpu: u32_at(layout.cpu),
        period: u64_at(layout.period),
        ..Sample::default()
    };
    if layout.tid != 0 {
        let o = usize::from(layout.tid);
        s.tid = rd_u32(rec, o).zip(rd_u32(rec, o + 4));
    }
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
            None => Err(DecodeError::Truncated {
                offset: base,
                need: c.at.saturating_add(bytes),
                have: c.b.len(),
            }),
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
        let data = rec.get(o + 4..o + 4 + size).ok_or(DecodeError::Truncated {
            offset: base,
            need: o + 4 + size,
            have: rec.len(),
        })?;
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

/// header.size of the record at `at`, validated.
#[inline]
fn record_size(b: &[u8], at: usize) -> Result<usize, DecodeError> {
    let hdr = rd_u64(b, at).ok_or(DecodeError::Truncated {
        offset: at,
        need: 8,
        have: b.len().saturating_sub(at),
    })?;
    let size = (hdr >> 48) as u16;
    if size < 8 || !size.is_multiple_of(8) {
        return Err(DecodeError::BadSize { offset: at, size });
    }
    Ok(usize::from(size))
}

/// Iterates the records of one contiguous byte slice; stops after the first
/// error.
#[derive(Debug)]
pub struct RecordIter<'a, 'f> {
    buf: &'a [u8],
    at: usize,
    formats: &'f Formats,
    failed: bool,
}

impl<'a, 'f> RecordIter<'a, 'f> {
    /// Records of `buf`, laid out as `formats` says.
    pub fn new(buf: &'a [u8], formats: &'f Formats) -> Self {
        RecordIter {
            buf,
            at: 0,
            formats,
            failed: false,
        }
    }
}

impl<'a> Iterator for RecordIter<'a, '_> {
    type Item = Result<Record<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.at >= self.buf.len() {
            return None;
        }
        let at = self.at;
        let r = record_size(self.buf, at).and_then(|size| {
            let rec = self.buf.get(at..at + size).ok_or(DecodeError::Truncated {
                offset: at,
                need: size,
                have: self.buf.len() - at,
            })?;
            self.at = at + size;
            parse_record(rec, self.formats, at)
        });
        if r.is_err() {
            self.failed = true;
        }
        Some(r)
    }
}

/// Decodes every complete record of the concatenation `a ++ b` (the two
/// slices of a ring region that wraps), calling `f` on each. A record that
/// straddles the two slices is copied into `scratch`. Returns the bytes
/// consumed (always whole records); on error, the error and the bytes
/// consumed before the bad record.
pub fn for_each_record<F>(
    a: &[u8],
    b: &[u8],
    formats: &Formats,
    scratch: &mut Vec<u8>,
    mut f: F,
) -> Result<usize, (DecodeError, usize)>
where
    F: FnMut(Record<'_>),
{
    // Samples (the bulk of any ring) skip the generic match of parse_record.
    for_each_record_bytes(a, b, scratch, |rec, at| {
        if record_kind(rec) == RECORD_SAMPLE {
            f(Record::Sample(parse_sample(rec, formats, at)?));
        } else {
            f(parse_record(rec, formats, at)?);
        }
        Ok(())
    })
}

/// The header type of a complete record (`rec.len() >= 8`, as given by
/// [`for_each_record_bytes`]).
#[inline]
pub fn record_kind(rec: &[u8]) -> u32 {
    rd_u32(rec, 0).unwrap_or(0)
}

/// Decodes a PERF_RECORD_SAMPLE (the fast path of the drain thread, which
/// checks [`record_kind`] first and skips building a [`Record`]).
#[inline]
pub fn parse_sample_record<'a>(
    rec: &'a [u8],
    formats: &Formats,
    base: usize,
) -> Result<Sample<'a>, DecodeError> {
    parse_sample(rec, formats, base)
}

/// Splits the concatenation `a ++ b` into whole records (validated sizes)
/// and calls `f(record_bytes, offset)` on each; a record that straddles the
/// two slices is copied into `scratch`. Returns the bytes consumed; on
/// error (from the framing or from `f`), the error and the bytes consumed
/// before the bad record.
pub fn for_each_record_bytes<F>(
    a: &[u8],
    b: &[u8],
    scratch: &mut Vec<u8>,
    mut f: F,
) -> Result<usize, (DecodeError, usize)>
where
    F: FnMut(&[u8], usize) -> Result<(), DecodeError>,
{
    let total = a.len() + b.len();
    let mut at = 0usize;
    // Records wholly inside `a`.
    while at < a.len() {
        if a.len() - at < 8 {
            break;
        }
        let size = record_size(a, at).map_err(|e| (e, at))?;
        if at + size > a.len() {
            break;
        }
        f(&a[at..at + size], at).map_err(|e| (e, at))?;
        at += size;
    }
    // At most one record straddles the boundary.
    if at < a.len() {
        let mut hdr = [0u8; 8];
        let head_a = a.len() - at;
        if total - at < 8 {
            return Err((
                DecodeError::Truncated {
                    offset: at,
                    need: 8,
                    have: total - at,
                },
                at,
            ));
        }
        hdr[..head_a.min(8)].copy_from_slice(&a[at..at + head_a.min(8)]);
        if head_a < 8 {
            hdr[head_a..].copy_from_slice(&b[..8 - head_a]);
        }
        let size = record_size(&hdr, 0).map_err(|e| (e.shifted(at), at))?;
        if at + size > total {
            return Err((
                DecodeError::Truncated {
                    offset: at,
                    need: size,
                    have: total - at,
                },
                at,
            ));
        }
        scratch.clear();
        scratch.extend_from_slice(&a[at..]);
        scratch.extend_from_slice(&b[..size - head_a]);
        f(scratch, at).map_err(|e| (e, at))?;
        at += size;
    }
    // Records wholly inside `b`.
    let off = a.len();
    while at < total {
        let bat = at - off;
        // record_size counts from the start of `b`; errors name the offset
        // in the whole region, like those of `a`.
        let size = record_size(b, bat).map_err(|e| (e.shifted(off), at))?;
        let rec = b.get(bat..bat + size).ok_or((
            DecodeError::Truncated {
                offset: at,
                need: size,
                have: total - at,
            },
            at,
        ))?;
        f(rec, at).map_err(|e| (e, at))?;
        at += size;
    }
    Ok(at)
}

/// An encoder of records, for tests, fixtures and benchmarks.
pub mod encode {
    use super::*;

    fn header(kind: u32, size: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(size);
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(&0u16.to_ne_bytes());
        v.extend_from_slice(&(size as u16).to_ne_bytes());
        v
    }

    fn put_pair(v: &mut Vec<u8>, a: u32, b: u32) {
        v.extend_from_slice(&a.to_ne_bytes());
        v.extend_from_slice(&b.to_ne_bytes());
    }

    fn finish(mut v: Vec<u8>) -> Vec<u8> {
        while !v.len().is_multiple_of(8) {
            v.push(0);
        }
        let size = v.len() as u16;
        v[6..8].copy_from_slice(&size.to_ne_bytes());
        v
    }

    /// A PERF_RECORD_SAMPLE with the fields `sample_type` names (absent
    /// values are written as 0; ADDR/STREAM_ID as 0; callchain, branch and
    /// register entries as made-up words, the stack as 0xab bytes).
    pub fn sample(sample_type: u64, s: &Sample<'_>) -> Vec<u8> {
        sample_with_regs(sample_type, 0, s)
    }

    /// [`sample`] with `regs_user` registers in a REGS_USER dump whose abi is
    /// non-zero.
    pub fn sample_with_regs(sample_type: u64, regs_user: u32, s: &Sample<'_>) -> Vec<u8> {
        let mut v = header(RECORD_SAMPLE, 0);
        let w = |v: &mut Vec<u8>, x: u64| v.extend_from_slice(&x.to_ne_bytes());
        if sample_type & st::IDENTIFIER != 0 {
            w(&mut v, s.id.unwrap_or(0));
        }
        if sample_type & st::IP != 0 {
            w(&mut v, s.ip.unwrap_or(0));
        }
        if sample_type & st::TID != 0 {
            let (p, t) = s.tid.unwrap_or((0, 0));
            put_pair(&mut v, p, t);
        }
        if sample_type & st::TIME != 0 {
            w(&mut v, s.time.unwrap_or(0));
        }
        if sample_type & SAMPLE_ADDR != 0 {
            w(&mut v, 0);
        }
        if sample_type & st::ID != 0 {
            w(&mut v, s.id.unwrap_or(0));
        }
        if sample_type & st::STREAM_ID != 0 {
            w(&mut v, 0);
        }
        if sample_type & st::CPU != 0 {
            put_pair(&mut v, s.cpu.unwrap_or(0), 0);
        }
        if sample_type & st::PERIOD != 0 {
            w(&mut v, s.period.unwrap_or(0));
        }
        if sample_type & st::CALLCHAIN != 0 {
            let nr = s.callchain.unwrap_or(0);
            w(&mut v, u64::from(nr));
            for i in 0..nr {
                w(&mut v, 0xffff_ffff_8100_0000 + u64::from(i));
            }
        }
        if sample_type & st::RAW != 0 {
            let raw = s.raw.unwrap_or(&[]);
            v.extend_from_slice(&(raw.len() as u32).to_ne_bytes());
            v.extend_from_slice(raw);
            while !v.len().is_multiple_of(8) {
                v.push(0);
            }
        }
        if sample_type & st::BRANCH_STACK != 0 {
            let nr = s.branches.unwrap_or(0);
            w(&mut v, u64::from(nr));
            for i in 0..u64::from(nr) * 3 {
                w(&mut v, i);
            }
        }
        if sample_type & st::REGS_USER != 0 {
            let abi = s.regs_user_abi.unwrap_or(0);
            w(&mut v, abi);
            if abi != 0 {
                for i in 0..regs_user {
                    w(&mut v, u64::from(i));
                }
            }
        }
        if sample_type & st::STACK_USER != 0 {
            let su = s.stack_user.unwrap_or_default();
            w(&mut v, su.size);
            if su.size != 0 {
                v.resize(v.len() + su.size.next_multiple_of(8) as usize, 0xab);
                w(&mut v, su.dyn_size);
            }
        }
        finish(v)
    }

    /// The sample_id trailer for `sample_type`.
    pub fn sample_id(sample_type: u64, sid: &SampleId) -> Vec<u8> {
        let mut v = Vec::new();
        let w = |v: &mut Vec<u8>, x: u64| v.extend_from_slice(&x.to_ne_bytes());
        if sample_type & st::TID != 0 {
            let (p, t) = sid.tid.unwrap_or((0, 0));
            put_pair(&mut v, p, t);
        }
        if sample_type & st::TIME != 0 {
            w(&mut v, sid.time.unwrap_or(0));
        }
        if sample_type & st::ID != 0 {
            w(&mut v, sid.id.unwrap_or(0));
        }
        if sample_type & st::STREAM_ID != 0 {
            w(&mut v, sid.stream_id.unwrap_or(0));
        }
        if sample_type & st::CPU != 0 {
            put_pair(&mut v, sid.cpu.unwrap_or(0), 0);
        }
        if sample_type & st::IDENTIFIER != 0 {
            w(&mut v, sid.identifier.unwrap_or(0));
        }
        v
    }

    /// Any record; non-sample records get a trailer when `sample_id_all`.
    pub fn record(sample_type: u64, sample_id_all: bool, r: &Record<'_>) -> Vec<u8> {
        let trailer = |sid: &SampleId| {
            if sample_id_all {
                sample_id(sample_type, sid)
            } else {
                Vec::new()
            }
        };
        let w = |v: &mut Vec<u8>, x: u64| v.extend_from_slice(&x.to_ne_bytes());
        match r {
            Record::Sample(s) => sample(sample_type, s),
            Record::Lost { id, lost, sid } => {
                let mut v = header(RECORD_LOST, 0);
                w(&mut v, *id);
                w(&mut v, *lost);
                v.extend(trailer(sid));
                finish(v)
            }
            Record::LostSamples { lost, sid } => {
                let mut v = header(RECORD_LOST_SAMPLES, 0);
                w(&mut v, *lost);
                v.extend(trailer(sid));
                finish(v)
            }
            Record::Throttle {
                time,
                id,
                stream_id,
                sid,
            }
            | Record::Unthrottle {
                time,
                id,
                stream_id,
                sid,
            } => {
                let kind = if matches!(r, Record::Throttle { .. }) {
                    RECORD_THROTTLE
                } else {
                    RECORD_UNTHROTTLE
                };
                let mut v = header(kind, 0);
                w(&mut v, *time);
                w(&mut v, *id);
                w(&mut v, *stream_id);
                v.extend(trailer(sid));
                finish(v)
            }
            Record::Other { kind } => finish(header(*kind, 0)),
        }
    }
}
