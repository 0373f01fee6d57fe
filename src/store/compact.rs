//! A byte string in 24 bytes, the form of every string value. Every key's node holds its value
//! (see `shard`), so the value is kept small: strings of up to 22 bytes are held inline (no heap
//! block at all, as Redis's embstr), longer ones in one heap block. `Bytes` would take 32 bytes
//! plus a heap block each.
//!
//! A new string's heap block is exact. A string value that grows (APPEND, SETRANGE, SETBIT) keeps spare
//! room as Redis's `sdsMakeRoomFor` does, doubling up to 1 MB and then 1 MB at a time, so that
//! appending to a string costs amortised O(1) per byte rather than a copy of the whole string.

use bytes::Bytes;

/// Longest string held inline.
const INLINE: usize = 22;

/// Past this size a growing string gains this much room at a time instead of doubling.
const GREEDY_LIMIT: usize = 1024 * 1024;

/// The `len` of a heap string that fills its whole buffer because its length needs more than
/// 32 bits.
const WHOLE_BUFFER: u32 = u32::MAX;

#[derive(Clone)]
pub enum CompactBytes {
    Inline {
        len: u8,
        bytes: [u8; INLINE],
    },
    /// `len` bytes at the start of `buf`; the rest of `buf` is spare room (zeroed). A string of
    /// 4 GB or more (possible once `proto-max-bulk-len` is raised) has no room: `len` is then
    /// [`WHOLE_BUFFER`] and the string is all of `buf`.
    Heap {
        len: u32,
        buf: Box<[u8]>,
    },
}

impl Default for CompactBytes {
    fn default() -> Self {
        CompactBytes::Inline {
            len: 0,
            bytes: [0; INLINE],
        }
    }
}

impl CompactBytes {
    pub fn new(bytes: &[u8]) -> CompactBytes {
        if bytes.len() <= INLINE {
            let mut inline = [0u8; INLINE];
            inline[..bytes.len()].copy_from_slice(bytes);
            CompactBytes::Inline {
                len: bytes.len() as u8,
                bytes: inline,
            }
        } else {
            CompactBytes::Heap {
                len: heap_len(bytes.len()),
                buf: bytes.into(),
            }
        }
    }

    /// Takes `bytes` without copying when it is too long to be inline (cut to its length).
    pub fn from_vec(bytes: Vec<u8>) -> CompactBytes {
        if bytes.len() <= INLINE {
            CompactBytes::new(&bytes)
        } else {
            CompactBytes::Heap {
                len: heap_len(bytes.len()),
                buf: bytes.into_boxed_slice(),
            }
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            CompactBytes::Inline { len, bytes } => &bytes[..*len as usize],
            CompactBytes::Heap { len, buf } if *len == WHOLE_BUFFER => buf,
            CompactBytes::Heap { len, buf } => &buf[..*len as usize],
        }
    }

    /// A copy to hand out (a reply, a value read outside the lock).
    pub fn to_bytes(&self) -> Bytes {
        Bytes::copy_from_slice(self.as_bytes())
    }

    /// The bytes as a `Vec`, without copying when they are on the heap (the spare room dropped).
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            CompactBytes::Inline { len, bytes } => bytes[..len as usize].to_vec(),
            CompactBytes::Heap { len, buf } => {
                let mut bytes = buf.into_vec();
                if len != WHOLE_BUFFER {
                    bytes.truncate(len as usize);
                }
                bytes
            }
        }
    }

    /// Bytes of heap this string holds (its spare room included).
    pub fn heap_bytes(&self) -> usize {
        match self {
            CompactBytes::Inline { .. } => 0,
            CompactBytes::Heap { buf, .. } => buf.len(),
        }
    }

    /// The string grown to at least `min_len` bytes (zero-padded), for writing in place: the
    /// whole string, as long as it now is.
    pub fn grown_to(&mut self, min_len: usize) -> &mut [u8] {
        let old = self.len();
        let len = old.max(min_len);
        let fits = match self {
            CompactBytes::Inline { .. } => len <= INLINE,
            CompactBytes::Heap { buf, .. } if len >= WHOLE_BUFFER as usize => len == buf.len(),
            CompactBytes::Heap { buf, .. } => len <= buf.len(),
        };
        if !fits {
            let mut grown = std::mem::take(self).into_vec();
            let room = if len >= WHOLE_BUFFER as usize {
                len
            } else if len < GREEDY_LIMIT {
                len * 2
            } else {
                len + GREEDY_LIMIT
            };
            grown.resize(room, 0);
            *self = CompactBytes::Heap {
                len: heap_len(old),
                buf: grown.into_boxed_slice(),
            };
        }
        match self {
            CompactBytes::Inline { len: stored, bytes } => {
                bytes[old..len].fill(0);
                *stored = len as u8;
                &mut bytes[..len]
            }
            CompactBytes::Heap { len: stored, buf } => {
                buf[old..len].fill(0);
                *stored = heap_len(len);
                &mut buf[..len]
            }
        }
    }

    /// Appends `tail` (APPEND), growing the room as [`Self::grown_to`] does.
    pub fn extend_from_slice(&mut self, tail: &[u8]) {
        let start = self.len();
        self.grown_to(start + tail.len())[start..].copy_from_slice(tail);
    }
}

/// The `len` a heap string of `len` bytes stores: [`WHOLE_BUFFER`] past 32 bits (its buffer is
/// then exactly that long).
fn heap_len(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(WHOLE_BUFFER)
}

impl std::ops::Deref for CompactBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for CompactBytes {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl From<&[u8]> for CompactBytes {
    fn from(bytes: &[u8]) -> Self {
        CompactBytes::new(bytes)
    }
}

impl From<&str> for CompactBytes {
    fn from(text: &str) -> Self {
        CompactBytes::new(text.as_bytes())
    }
}

impl From<Vec<u8>> for CompactBytes {
    fn from(bytes: Vec<u8>) -> Self {
        CompactBytes::from_vec(bytes)
    }
}

impl From<String> for CompactBytes {
    fn from(text: String) -> Self {
        CompactBytes::from_vec(text.into_bytes())
    }
}

impl PartialEq for CompactBytes {
    fn eq(&self, other: &CompactBytes) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for CompactBytes {}

impl PartialEq<[u8]> for CompactBytes {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_bytes() == other
    }
}

impl PartialEq<str> for CompactBytes {
    fn eq(&self, other: &str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<&str> for CompactBytes {
    fn eq(&self, other: &&str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl std::fmt::Debug for CompactBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", Bytes::copy_from_slice(self.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_compare_as_their_bytes() {
        assert_eq!(std::mem::size_of::<CompactBytes>(), 24);
        for len in [0, 1, 21, 22, 23, 100] {
            let bytes: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let key = CompactBytes::new(&bytes);
            assert_eq!(key.as_bytes(), &bytes[..]);
            assert_eq!(key, CompactBytes::new(&bytes));
            assert_eq!(key, CompactBytes::from_vec(bytes.clone()));
            assert_eq!(key.clone().into_vec(), bytes);
            assert_eq!(matches!(key, CompactBytes::Inline { .. }), len <= INLINE);
        }
    }

    #[test]
    fn growing_keeps_the_bytes_zero_pads_and_leaves_room() {
        let mut s = CompactBytes::new(b"abc");
        s.extend_from_slice(b"def");
        assert_eq!(s, "abcdef");
        assert!(matches!(s, CompactBytes::Inline { .. }));
        s.grown_to(4)[0] = b'A';
        assert_eq!(
            s, "Abcdef",
            "growing to less than the length changes nothing"
        );
        s.grown_to(8);
        assert_eq!(s.as_bytes(), b"Abcdef\0\0");
        s.extend_from_slice(&[b'x'; 30]);
        assert_eq!(s.len(), 38);
        assert_eq!(&s[..8], b"Abcdef\0\0");
        assert!(s[8..].iter().all(|&b| b == b'x'));
        assert_eq!(s.heap_bytes(), 76, "room doubles under 1 MB");
        // Appends within the room do not reallocate.
        let before = s.as_bytes().as_ptr();
        s.extend_from_slice(&[b'y'; 30]);
        assert_eq!(s.as_bytes().as_ptr(), before);
        assert_eq!(s.len(), 68);
        assert_eq!(s.clone().into_vec().len(), 68);
        let mut big = CompactBytes::new(&vec![1u8; GREEDY_LIMIT]);
        big.extend_from_slice(b"z");
        assert_eq!(
            big.heap_bytes(),
            2 * GREEDY_LIMIT + 1,
            "past 1 MB the room grows by 1 MB"
        );
        assert_eq!(big.len(), GREEDY_LIMIT + 1);
    }

    #[test]
    fn a_string_of_4_gb_or_more_is_its_whole_buffer() {
        // Zeroed pages are not touched, so this costs address space, not memory.
        for len in [
            WHOLE_BUFFER as usize - 1,
            WHOLE_BUFFER as usize,
            WHOLE_BUFFER as usize + 5,
        ] {
            let s = CompactBytes::from_vec(vec![0u8; len]);
            assert_eq!(s.len(), len);
            assert_eq!(s.heap_bytes(), len);
            assert_eq!(s.into_vec().len(), len);
        }
    }
}
