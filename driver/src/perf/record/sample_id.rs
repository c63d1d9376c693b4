//! The sample_id trailer of non-sample records (sample_id_all): which
//! fields it holds, read from the end of the record.

use super::{Cur, DecodeError, Formats, SampleId, rd_u64, st};

/// The sample_id trailer size for a sample_type.
pub(super) fn trailer_len(sample_type: u64) -> usize {
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
