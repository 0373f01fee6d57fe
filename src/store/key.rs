//! A key as the keyspace stores it. Every key pays for its slot in a shard's table, so the slot
//! is kept small: 24 bytes, with keys of up to 22 bytes held inline (no heap block at all) and
//! longer ones in one exact heap block. `Bytes` would take 32 bytes plus a heap block each.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// Longest key held inline.
const INLINE: usize = 22;

#[derive(Clone)]
pub enum Key {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl Key {
    pub fn new(key: &[u8]) -> Key {
        if key.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..key.len()].copy_from_slice(key);
            Key::Inline {
                len: key.len() as u8,
                bytes,
            }
        } else {
            Key::Heap(key.into())
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Key::Inline { len, bytes } => &bytes[..*len as usize],
            Key::Heap(b) => b,
        }
    }
}

impl std::ops::Deref for Key {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Borrow<[u8]> for Key {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// The same hash as the key's bytes, so lookups by `&[u8]` find it.
impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Key {}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", bytes::Bytes::copy_from_slice(self.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_hash_and_compare_as_their_bytes() {
        assert_eq!(std::mem::size_of::<Key>(), 24);
        let hasher = ahash::RandomState::new();
        for len in [0, 1, 21, 22, 23, 100] {
            let bytes: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let key = Key::new(&bytes);
            assert_eq!(key.as_bytes(), &bytes[..]);
            assert_eq!(hasher.hash_one(&key), hasher.hash_one(&bytes[..]));
            assert_eq!(key, Key::new(&bytes));
            assert_eq!(matches!(key, Key::Inline { .. }), len <= INLINE);
        }
    }
}
