//! The packed form of a small hash whose fields have TTLs (Redis's listpackex): one buffer holds
//! every pair with its expiry beside it, so a field's time costs a few bytes of that buffer
//! rather than a slot of a separate array and a second heap block.
//!
//! Layout: `[queued: 8 bytes LE][count: 4 bytes LE][base: varint]` then, per field, the field and the value as
//! packed elements ([`super::packed`]'s length-prefixed strings) and the expiry as a LEB128
//! varint of its distance from `base` (zigzag, plus one: `0` is no expiry). `base` is the first
//! expiry the hash was given, so fields given one time together (HSETEX … FIELDS n) take one
//! byte each for it, and others as many as their distance needs (four for a day). `queued` is the
//! time this hash stands under in its shard's field-expiry queue (0: not queued), kept here so
//! the queue needs no map of its own ([`super::field_expiry`]).

use super::packed::{edit_exact, header_len, read, write_header};

/// The fixed part of the head: the queue time and the count of fields.
const HEAD: usize = 12;
const COUNT_AT: usize = 8;

/// Only the buffer, the count in it: 16 bytes, so the hash's entry stays 24 bytes (this form
/// fits beside the plain packed form's flag, which the enum uses for its tag).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimedPacked {
    buf: Box<[u8]>,
}

/// One field's place in the buffer.
#[derive(Clone, Copy)]
pub struct Spot {
    /// Where its field element starts.
    at: usize,
    /// Where its value element starts.
    value_at: usize,
    /// Where its expiry starts.
    ttl_at: usize,
    /// Where the next field starts.
    end: usize,
}

fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// The varint at `at` and the offset after it. Only this module writes the buffer, so a varint
/// always ends inside it.
fn get_varint(buf: &[u8], mut at: usize) -> (u64, usize) {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let b = buf[at];
        at += 1;
        v |= u64::from(b & 0x7F) << shift;
        if b < 0x80 {
            return (v, at);
        }
        shift += 7;
    }
}

impl TimedPacked {
    /// No fields yet; expiries will be kept as distances from `base` (Unix ms).
    pub fn with_base(base: u64) -> Self {
        let mut buf = vec![0; HEAD];
        put_varint(&mut buf, base);
        TimedPacked {
            buf: buf.into_boxed_slice(),
        }
    }

    /// Where the fields start, and the base.
    fn body(&self) -> (usize, u64) {
        let (base, at) = get_varint(&self.buf, HEAD);
        (at, base)
    }

    /// An expiry (0: none) as stored.
    fn encode(&self, ttl: u64) -> u64 {
        if ttl == 0 {
            return 0;
        }
        // Expiries are below 2^48 (the commands and the loaders refuse larger ones), so the
        // distance and its zigzag form never overflow.
        let distance = ttl.wrapping_sub(self.body().1) as i64;
        (((distance << 1) ^ (distance >> 63)) as u64) + 1
    }

    fn decode(base: u64, stored: u64) -> u64 {
        if stored == 0 {
            return 0;
        }
        let z = stored - 1;
        let distance = ((z >> 1) as i64) ^ -((z & 1) as i64);
        base.wrapping_add(distance as u64)
    }

    pub fn len(&self) -> usize {
        let mut word = [0u8; 4];
        word.copy_from_slice(&self.buf[COUNT_AT..HEAD]);
        u32::from_le_bytes(word) as usize
    }

    fn set_len(&mut self, count: usize) {
        self.buf[COUNT_AT..HEAD].copy_from_slice(&(count as u32).to_le_bytes());
    }

    /// Bytes of the buffer (its heap block, exactly).
    pub fn byte_len(&self) -> usize {
        self.buf.len()
    }

    /// See the module's doc.
    pub fn queued(&self) -> u64 {
        let mut word = [0u8; 8];
        word.copy_from_slice(&self.buf[..COUNT_AT]);
        u64::from_le_bytes(word)
    }

    pub fn set_queued(&mut self, at: u64) {
        self.buf[..COUNT_AT].copy_from_slice(&at.to_le_bytes());
    }

    fn spot_at(&self, at: usize) -> Spot {
        let value_at = read(&self.buf, at).1;
        let ttl_at = read(&self.buf, value_at).1;
        let end = get_varint(&self.buf, ttl_at).1;
        Spot {
            at,
            value_at,
            ttl_at,
            end,
        }
    }

    fn spots(&self) -> impl Iterator<Item = Spot> + '_ {
        let mut at = self.body().0;
        std::iter::from_fn(move || {
            if at >= self.buf.len() {
                return None;
            }
            let spot = self.spot_at(at);
            at = spot.end;
            Some(spot)
        })
    }

    /// The place of `field`.
    pub fn find(&self, field: &[u8]) -> Option<Spot> {
        let mut at = self.body().0;
        while at < self.buf.len() {
            let (f, value_at) = read(&self.buf, at);
            let ttl_at = read(&self.buf, value_at).1;
            if f == field {
                return Some(self.spot_at(at));
            }
            at = get_varint(&self.buf, ttl_at).1;
        }
        None
    }

    /// The field, value and expiry (0: none) at a spot.
    pub fn at(&self, spot: Spot) -> (&[u8], &[u8], u64) {
        (
            read(&self.buf, spot.at).0,
            read(&self.buf, spot.value_at).0,
            Self::decode(self.body().1, get_varint(&self.buf, spot.ttl_at).0),
        )
    }

    /// Every field with its value and expiry, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8], u64)> + '_ {
        self.spots().map(|s| self.at(s))
    }

    /// The triples at these positions (`0..len`, repeats allowed), walking the buffer once.
    pub fn at_positions(&self, positions: &[usize]) -> Vec<(&[u8], &[u8])> {
        let spots: Vec<Spot> = self.spots().collect();
        positions
            .iter()
            .filter_map(|&i| spots.get(i))
            .map(|&s| {
                let (f, v, _) = self.at(s);
                (f, v)
            })
            .collect()
    }

    /// Appends a field (new to the hash) with its value and expiry.
    pub fn push(&mut self, field: &[u8], value: &[u8], ttl: u64) {
        let ttl = self.encode(ttl);
        let needed = header_len(field.len())
            + field.len()
            + header_len(value.len())
            + value.len()
            + varint_len(ttl);
        edit_exact(&mut self.buf, |buf| {
            buf.reserve_exact(needed);
            write_header(buf, field.len());
            buf.extend_from_slice(field);
            write_header(buf, value.len());
            buf.extend_from_slice(value);
            put_varint(buf, ttl);
        });
        self.set_len(self.len() + 1);
    }

    /// Replaces the value at a spot, keeping the field's expiry.
    pub fn set_value(&mut self, spot: Spot, value: &[u8]) {
        let mut encoded = Vec::with_capacity(header_len(value.len()) + value.len());
        write_header(&mut encoded, value.len());
        encoded.extend_from_slice(value);
        self.replace(spot.value_at..spot.ttl_at, encoded);
    }

    /// Sets the expiry at a spot (0: none).
    pub fn set_ttl(&mut self, spot: Spot, ttl: u64) {
        let ttl = self.encode(ttl);
        let mut encoded = Vec::with_capacity(varint_len(ttl));
        put_varint(&mut encoded, ttl);
        self.replace(spot.ttl_at..spot.end, encoded);
    }

    fn replace(&mut self, range: std::ops::Range<usize>, encoded: Vec<u8>) {
        if encoded.len() == range.len() {
            self.buf[range].copy_from_slice(&encoded);
        } else {
            edit_exact(&mut self.buf, |buf| {
                buf.splice(range, encoded);
            });
        }
    }

    /// Removes the field at a spot the way `IndexMap::swap_remove` does: the last field takes
    /// its place, so the hash's two forms keep one order.
    pub fn swap_remove(&mut self, spot: Spot) {
        let last = self.spots().last().map_or(spot.at, |s| s.at);
        edit_exact(&mut self.buf, |buf| {
            if last == spot.at {
                buf.truncate(spot.at);
            } else {
                let moved = buf[last..].to_vec();
                buf.truncate(last);
                buf.splice(spot.at..spot.end, moved);
            }
        });
        self.set_len(self.len() - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triples_round_trip_through_edits() {
        let mut t = TimedPacked::with_base(1_700_000_000_000);
        t.push(b"a", b"1", 0);
        t.push(b"b", &[b'x'; 300], (1 << 46) - 1);
        t.push(b"", b"", 1 << 48);
        t.set_queued(1_800_000_000_000);
        assert_eq!(t.queued(), 1_800_000_000_000);
        let all: Vec<_> = t.iter().collect();
        assert_eq!(
            all,
            vec![
                (&b"a"[..], &b"1"[..], 0),
                (&b"b"[..], &[b'x'; 300][..], (1 << 46) - 1),
                (&b""[..], &b""[..], 1 << 48)
            ]
        );
        let a = t.find(b"a").expect("there");
        t.set_ttl(a, 1_700_000_000_000);
        let a = t.find(b"a").expect("there");
        t.set_value(a, b"longer value");
        assert_eq!(
            t.at(t.find(b"a").expect("there")),
            (&b"a"[..], &b"longer value"[..], 1_700_000_000_000)
        );
        t.swap_remove(t.find(b"a").expect("there"));
        let fields: Vec<_> = t.iter().map(|(f, _, _)| f.to_vec()).collect();
        assert_eq!(
            fields,
            vec![b"".to_vec(), b"b".to_vec()],
            "the last moved first"
        );
        assert_eq!(t.len(), 2);
        assert_eq!(t.queued(), 1_800_000_000_000, "the head is untouched");
        t.swap_remove(t.find(b"b").expect("there"));
        t.swap_remove(t.find(b"").expect("there"));
        assert_eq!(
            t.byte_len(),
            HEAD + 6,
            "the head: the queue time and the base"
        );
        assert!(t.find(b"").is_none());
    }
}
