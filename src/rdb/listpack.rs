//! The flat blobs Redis embeds in RDB values: listpacks (7.0+ small hashes, sets, sorted sets and
//! quicklist nodes), ziplists (older RDB files) and intsets (small sets of integers).
//!
//! Readers check every length against the blob, so a corrupt blob is an error, never a panic.

use super::RdbError;
use bytes::Bytes;

/// The canonical integer a string spells (`"12"`, `"-3"`; not `"012"`, `"+1"`, `"-0"`), as
/// Redis's `string2ll` round trip decides which strings may be stored as integers.
pub fn canonical_int(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let value: i64 = std::str::from_utf8(s).ok()?.parse().ok()?;
    (itoa::Buffer::new().format(value).as_bytes() == s).then_some(value)
}

fn int_bytes(value: i64) -> Bytes {
    Bytes::copy_from_slice(itoa::Buffer::new().format(value).as_bytes())
}

/// Builds a listpack the way Redis's `lpAppend` does: strings that are canonical integers are
/// stored as integers in the smallest encoding.
#[derive(Default)]
pub struct ListpackWriter {
    entries: Vec<u8>,
    count: usize,
}

/// Header (total bytes u32, count u16) plus the end byte.
const LISTPACK_OVERHEAD: usize = 7;

impl ListpackWriter {
    /// The size the finished listpack would have.
    pub fn bytes(&self) -> usize {
        self.entries.len() + LISTPACK_OVERHEAD
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn push(&mut self, element: &[u8]) {
        let start = self.entries.len();
        let out = &mut self.entries;
        match canonical_int(element) {
            Some(v @ 0..=127) => out.push(v as u8),
            Some(v @ -4096..=4095) => {
                let bits = (v as u16) & 0x1fff;
                out.extend_from_slice(&[0xc0 | (bits >> 8) as u8, bits as u8]);
            }
            Some(v) if i16::try_from(v).is_ok() => {
                out.push(0xf1);
                out.extend_from_slice(&(v as i16).to_le_bytes());
            }
            Some(v @ -8_388_608..=8_388_607) => {
                out.push(0xf2);
                out.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
            }
            Some(v) if i32::try_from(v).is_ok() => {
                out.push(0xf3);
                out.extend_from_slice(&(v as i32).to_le_bytes());
            }
            Some(v) => {
                out.push(0xf4);
                out.extend_from_slice(&v.to_le_bytes());
            }
            None => {
                let len = element.len();
                if len < 64 {
                    out.push(0x80 | len as u8);
                } else if len < 4096 {
                    out.extend_from_slice(&[0xe0 | (len >> 8) as u8, len as u8]);
                } else {
                    out.push(0xf0);
                    out.extend_from_slice(&(len as u32).to_le_bytes());
                }
                out.extend_from_slice(element);
            }
        }
        let entry_len = self.entries.len() - start;
        push_backlen(&mut self.entries, entry_len);
        self.count += 1;
    }

    pub fn finish(self) -> Vec<u8> {
        let total = self.bytes();
        let mut blob = Vec::with_capacity(total);
        blob.extend_from_slice(&(total as u32).to_le_bytes());
        blob.extend_from_slice(&(self.count.min(u16::MAX as usize) as u16).to_le_bytes());
        blob.extend_from_slice(&self.entries);
        blob.push(0xff);
        blob
    }
}

/// How many bytes the back length of an entry of `len` bytes takes.
fn backlen_size(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

/// The entry length written backwards, 7 bits per byte, so a listpack can be walked from its end.
fn push_backlen(out: &mut Vec<u8>, len: usize) {
    let size = backlen_size(len);
    for i in (0..size).rev() {
        let bits = ((len >> (7 * i)) & 127) as u8;
        out.push(if i + 1 == size { bits } else { bits | 128 });
    }
}

/// A little cursor over a blob whose every read is bounds-checked.
struct Reader<'a> {
    blob: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], RdbError> {
        let end = self.at.checked_add(n).ok_or(RdbError::BadData)?;
        let bytes = self.blob.get(self.at..end).ok_or(RdbError::BadData)?;
        self.at = end;
        Ok(bytes)
    }

    fn byte(&mut self) -> Result<u8, RdbError> {
        Ok(self.take(1)?[0])
    }

    fn le(&mut self, n: usize) -> Result<u64, RdbError> {
        let bytes = self.take(n)?;
        Ok(bytes
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    /// A little-endian signed integer of `n` bytes.
    fn signed(&mut self, n: usize) -> Result<i64, RdbError> {
        let raw = self.le(n)?;
        let shift = 64 - 8 * n as u32;
        Ok(((raw << shift) as i64) >> shift)
    }
}

/// The elements of a listpack, integers spelled out as Redis replies them.
pub fn read_listpack(blob: &[u8]) -> Result<Vec<Bytes>, RdbError> {
    let mut r = Reader { blob, at: 0 };
    let total = r.le(4)? as usize;
    if total != blob.len() {
        return Err(RdbError::BadData);
    }
    let declared = r.le(2)? as usize;
    let mut elements = Vec::new();
    loop {
        let start = r.at;
        let tag = r.byte()?;
        let element = match tag {
            0xff => break,
            0x00..=0x7f => int_bytes(i64::from(tag)),
            0x80..=0xbf => Bytes::copy_from_slice(r.take(usize::from(tag & 0x3f))?),
            0xc0..=0xdf => {
                let bits = (u16::from(tag & 0x1f) << 8) | u16::from(r.byte()?);
                // 13-bit two's complement.
                int_bytes(((i64::from(bits)) << 51) >> 51)
            }
            0xe0..=0xef => {
                let len = (usize::from(tag & 0x0f) << 8) | usize::from(r.byte()?);
                Bytes::copy_from_slice(r.take(len)?)
            }
            0xf0 => {
                let len = r.le(4)? as usize;
                Bytes::copy_from_slice(r.take(len)?)
            }
            0xf1 => int_bytes(r.signed(2)?),
            0xf2 => int_bytes(r.signed(3)?),
            0xf3 => int_bytes(r.signed(4)?),
            0xf4 => int_bytes(r.signed(8)?),
            _ => return Err(RdbError::BadData),
        };
        let entry_len = r.at - start;
        r.take(backlen_size(entry_len))?;
        elements.push(element);
    }
    if r.at != blob.len() || (declared != u16::MAX as usize && declared != elements.len()) {
        return Err(RdbError::BadData);
    }
    Ok(elements)
}

/// The elements of a ziplist (the listpack's predecessor, still found in older RDB payloads).
pub fn read_ziplist(blob: &[u8]) -> Result<Vec<Bytes>, RdbError> {
    let mut r = Reader { blob, at: 0 };
    let total = r.le(4)? as usize;
    if total != blob.len() {
        return Err(RdbError::BadData);
    }
    let tail = r.le(4)? as usize;
    let declared = r.le(2)? as usize;
    let mut elements = Vec::new();
    let mut last_entry = ZIPLIST_HEADER;
    loop {
        if r.at < blob.len() && blob[r.at] != 0xff {
            last_entry = r.at;
        }
        let prev = r.byte()?;
        if prev == 0xff {
            break;
        }
        if prev == 254 {
            r.take(4)?;
        }
        let tag = r.byte()?;
        let element = match tag {
            0x00..=0x3f => Bytes::copy_from_slice(r.take(usize::from(tag))?),
            0x40..=0x7f => {
                let len = (usize::from(tag & 0x3f) << 8) | usize::from(r.byte()?);
                Bytes::copy_from_slice(r.take(len)?)
            }
            0x80 => {
                let len = u32::from_be_bytes(r.take(4)?.try_into().map_err(|_| RdbError::BadData)?)
                    as usize;
                Bytes::copy_from_slice(r.take(len)?)
            }
            0xc0 => int_bytes(r.signed(2)?),
            0xd0 => int_bytes(r.signed(4)?),
            0xe0 => int_bytes(r.signed(8)?),
            0xf0 => int_bytes(r.signed(3)?),
            0xfe => int_bytes(r.signed(1)?),
            0xf1..=0xfd => int_bytes(i64::from(tag & 0x0f) - 1),
            _ => return Err(RdbError::BadData),
        };
        elements.push(element);
    }
    // Redis checks the header's tail offset even without deep sanitization.
    if r.at != blob.len()
        || tail != last_entry
        || (declared != u16::MAX as usize && declared != elements.len())
    {
        return Err(RdbError::BadData);
    }
    Ok(elements)
}

/// A ziplist's header: total bytes u32, tail offset u32, count u16.
const ZIPLIST_HEADER: usize = 10;

/// The members of an intset: `encoding (2, 4 or 8) u32, count u32, sorted little-endian values`.
pub fn read_intset(blob: &[u8]) -> Result<Vec<i64>, RdbError> {
    let mut r = Reader { blob, at: 0 };
    let width = r.le(4)? as usize;
    let count = r.le(4)? as usize;
    if !matches!(width, 2 | 4 | 8) || count.checked_mul(width) != Some(blob.len() - 8) {
        return Err(RdbError::BadData);
    }
    let values = (0..count)
        .map(|_| r.signed(width))
        .collect::<Result<Vec<_>, _>>()?;
    if values.windows(2).any(|w| w[0] >= w[1]) {
        return Err(RdbError::BadData);
    }
    Ok(values)
}

/// An intset of `values` in the narrowest width that holds them all, as Redis builds one.
pub fn write_intset(mut values: Vec<i64>) -> Vec<u8> {
    values.sort_unstable();
    let width: usize = if values.iter().all(|v| i16::try_from(*v).is_ok()) {
        2
    } else if values.iter().all(|v| i32::try_from(*v).is_ok()) {
        4
    } else {
        8
    };
    let mut blob = Vec::with_capacity(8 + width * values.len());
    blob.extend_from_slice(&(width as u32).to_le_bytes());
    blob.extend_from_slice(&(values.len() as u32).to_le_bytes());
    for v in values {
        blob.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    blob
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_round_trips_every_encoding() {
        let long = "x".repeat(5000);
        let mid = "y".repeat(100);
        let items: Vec<&[u8]> = vec![
            b"a",
            b"",
            b"0",
            b"127",
            b"128",
            b"-1",
            b"-4096",
            b"4095",
            b"-32768",
            b"8388607",
            b"-8388609",
            b"2147483648",
            b"-9223372036854775808",
            b"012",
            b"+1",
            b"-0",
            mid.as_bytes(),
            long.as_bytes(),
        ];
        let mut w = ListpackWriter::default();
        for item in &items {
            w.push(item);
        }
        let blob = w.finish();
        let back = read_listpack(&blob).expect("valid");
        assert_eq!(back.iter().map(|b| &b[..]).collect::<Vec<_>>(), items);
    }

    #[test]
    fn listpack_matches_redis_bytes() {
        // `HSET h f v n 5` on redis-server 7.0.15, then `DUMP h`: type 16, length 0x12, this blob.
        let mut w = ListpackWriter::default();
        for item in [&b"f"[..], b"v", b"n", b"5"] {
            w.push(item);
        }
        assert_eq!(
            w.finish(),
            b"\x12\x00\x00\x00\x04\x00\x81f\x02\x81v\x02\x81n\x02\x05\x01\xff".to_vec()
        );
    }

    #[test]
    fn corrupt_blobs_are_refused() {
        let mut w = ListpackWriter::default();
        w.push(b"hello");
        let blob = w.finish();
        for cut in 0..blob.len() {
            assert!(read_listpack(&blob[..cut]).is_err(), "cut at {cut}");
        }
        assert!(read_intset(b"\x03\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00").is_err());
        assert!(read_ziplist(b"\x0b\x00\x00\x00\x0a\x00\x00\x00\x01\x00").is_err());
    }

    #[test]
    fn intset_round_trips_in_the_narrowest_width() {
        let blob = write_intset(vec![3, -2, 1]);
        assert_eq!(&blob[..4], &2u32.to_le_bytes());
        assert_eq!(read_intset(&blob), Ok(vec![-2, 1, 3]));
        let wide = write_intset(vec![1, 1 << 40]);
        assert_eq!(read_intset(&wide), Ok(vec![1, 1 << 40]));
    }

    #[test]
    fn ziplist_reads_strings_and_every_integer_form() {
        // zlbytes, zltail=20, zllen=4; entries: "ab", int 7 (immediate), int16 300, int8 -5; end.
        let mut z = vec![0, 0, 0, 0, 20, 0, 0, 0, 4, 0];
        z.extend_from_slice(&[0, 0x02, b'a', b'b']);
        z.extend_from_slice(&[4, 0xf8]);
        z.extend_from_slice(&[2, 0xc0, 0x2c, 0x01]);
        z.extend_from_slice(&[4, 0xfe, 0xfb]);
        z.push(0xff);
        let total = z.len() as u32;
        z[..4].copy_from_slice(&total.to_le_bytes());
        let back = read_ziplist(&z).expect("valid");
        assert_eq!(back, vec!["ab", "7", "300", "-5"]);
        z[4] = 16; // a tail offset that is not the last entry's
        assert!(read_ziplist(&z).is_err());
    }
}
