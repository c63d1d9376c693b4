//! An encoder of records, for the tests and the decode benchmark: the inverse
//! of the decoder, byte for byte in the kernel's layout.

use driver::perf::attr::sample as st;
use driver::perf::record::{
    RECORD_LOST, RECORD_LOST_SAMPLES, RECORD_SAMPLE, RECORD_THROTTLE, RECORD_UNTHROTTLE, Record,
    SAMPLE_ADDR, Sample, ThrottleRecord,
};

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

/// The sample_id trailer for `sample_type` of event `id` (its ID and
/// IDENTIFIER words; the other fields, which the decoder skips, are
/// filled with a marker).
pub fn sample_id(sample_type: u64, id: u64) -> Vec<u8> {
    let words = [
        (st::TID, 0xa1),
        (st::TIME, 0xa2),
        (st::ID, id),
        (st::STREAM_ID, 0xa4),
        (st::CPU, 0xa5),
        (st::IDENTIFIER, id),
    ];
    let mut v = Vec::new();
    for (bit, word) in words {
        if sample_type & bit != 0 {
            v.extend_from_slice(&u64::to_ne_bytes(word));
        }
    }
    v
}

/// Any record; non-sample records get the trailer of event `trailer_id`
/// when given (sample_id_all).
pub fn record(sample_type: u64, trailer_id: Option<u64>, r: &Record<'_>) -> Vec<u8> {
    let trailer = || match trailer_id {
        Some(id) => sample_id(sample_type, id),
        None => Vec::new(),
    };
    let w = |v: &mut Vec<u8>, x: u64| v.extend_from_slice(&x.to_ne_bytes());
    match r {
        Record::Sample(s) => sample(sample_type, s),
        Record::Lost { id, lost } => {
            let mut v = header(RECORD_LOST, 0);
            w(&mut v, *id);
            w(&mut v, *lost);
            v.extend(trailer());
            finish(v)
        }
        Record::LostSamples { lost } => {
            let mut v = header(RECORD_LOST_SAMPLES, 0);
            w(&mut v, *lost);
            v.extend(trailer());
            finish(v)
        }
        Record::Throttle(ThrottleRecord {
            time,
            id,
            stream_id,
        })
        | Record::Unthrottle(ThrottleRecord {
            time,
            id,
            stream_id,
        }) => {
            let kind = if matches!(r, Record::Throttle(_)) {
                RECORD_THROTTLE
            } else {
                RECORD_UNTHROTTLE
            };
            let mut v = header(kind, 0);
            w(&mut v, *time);
            w(&mut v, *id);
            w(&mut v, *stream_id);
            v.extend(trailer());
            finish(v)
        }
        Record::Other { kind } => finish(header(*kind, 0)),
    }
}
