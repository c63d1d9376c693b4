//! Splitting a ring's bytes into whole records: sizes validated, a record
//! that wraps around the end of the ring copied into scratch.

use super::{
    DecodeError, Formats, RECORD_SAMPLE, Record, parse_record, parse_sample, rd_u32, rd_u64,
};

/// header.size of the record at `at` (its header word `hdr`), validated.
#[inline]
fn record_size(hdr: u64, at: usize) -> Result<usize, DecodeError> {
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
        let r = rd_u64(self.buf, at)
            .ok_or(DecodeError::truncated(at, 8, self.buf.len() - at))
            .and_then(|hdr| record_size(hdr, at))
            .and_then(|size| {
                let rec = self.buf.get(at..at + size).ok_or(DecodeError::truncated(
                    at,
                    size,
                    self.buf.len() - at,
                ))?;
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
    let mut at = 0;
    while at < total {
        // The rest of the slice the record starts in, and what follows it.
        let (head, next) = match a.get(at..).filter(|h| !h.is_empty()) {
            Some(h) => (h, b),
            None => (&b[at - a.len()..], &[][..]),
        };
        let left = total - at;
        if left < 8 {
            return Err((DecodeError::truncated(at, 8, left), at));
        }
        // A header that straddles the two slices is put together.
        let hdr = rd_u64(head, 0).unwrap_or_else(|| {
            let mut hdr = [0u8; 8];
            hdr[..head.len()].copy_from_slice(head);
            hdr[head.len()..].copy_from_slice(&next[..8 - head.len()]);
            u64::from_ne_bytes(hdr)
        });
        let size = record_size(hdr, at).map_err(|e| (e, at))?;
        if size > left {
            return Err((DecodeError::truncated(at, size, left), at));
        }
        // A record that straddles the two slices is copied into scratch.
        let rec = match head.get(..size) {
            Some(rec) => rec,
            None => {
                scratch.clear();
                scratch.extend_from_slice(head);
                scratch.extend_from_slice(&next[..size - head.len()]);
                &scratch[..]
            }
        };
        f(rec, at).map_err(|e| (e, at))?;
        at += size;
    }
    Ok(at)
}
