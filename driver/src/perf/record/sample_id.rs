//! The sample_id trailer of non-sample records (sample_id_all): which
//! fields it holds, read from the end of the record.

use super::{Cur, DecodeError, Formats, SampleId, rd_u64, st, u32_pair};

/// The fields of the sample_id trailer, one word each, in record order.
const TRAILER: [u64; 6] = [
    st::TID,
    st::TIME,
    st::ID,
    st::STREAM_ID,
    st::CPU,
    st::IDENTIFIER,
];

/// The sample_id trailer size for a sample_type.
pub(super) fn trailer_len(sample_type: u64) -> usize {
    TRAILER
        .iter()
        .filter(|&&bit| sample_type & bit != 0)
        .count()
        * 8
}

pub(super) fn parse_sample_id(
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
        let id = rd_u64(rec, len.wrapping_sub(8)).ok_or(DecodeError::truncated(base, 8, len))?;
        formats.lookup(id)?.0
    } else {
        formats.default
    };
    let tl = trailer_len(sample_type);
    let start = rec
        .len()
        .checked_sub(tl)
        .filter(|&s| s >= body_end)
        .ok_or(DecodeError::truncated(base, body_end + tl, rec.len()))?;
    let mut c = Cur {
        b: rec,
        at: start,
        base,
    };
    let mut words = [None; TRAILER.len()];
    for (word, bit) in words.iter_mut().zip(TRAILER) {
        if sample_type & bit != 0 {
            *word = Some(c.u64()?);
        }
    }
    let [tid, time, id, stream_id, cpu, identifier] = words;
    let sid = SampleId {
        tid: tid.map(u32_pair),
        time,
        id,
        stream_id,
        cpu: cpu.map(|w| u32_pair(w).0),
        identifier,
    };
    Ok((sid, start))
}
