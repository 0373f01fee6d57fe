//! Tags → keys: values that are also found under other names than their key (an STM entry
//! under its user or server and its channel) declare those names as tags ([`Value::tags`]), and
//! the keyspace keeps this index of them exact on every insert and removal of such a value
//! (writes, DEL, RENAME, expiry, eviction, FLUSHALL), under the key's shard lock. Readers find
//! the keys of a tag without scanning the keyspace. What the tags mean is the value type's
//! business; the store only keeps the sets.
//!
//! [`Value::tags`]: super::value::Value::tags

use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Which kind of name a tag is (e.g. "user" or "channel"); the value types number their kinds
/// below [`TAG_KINDS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TagKind(pub u8);

/// How many kinds of tag the index keeps apart.
pub const TAG_KINDS: usize = 3;

/// A name a value is found under besides its key.
#[derive(Clone, Copy, Debug)]
pub struct Tag<'a> {
    pub kind: TagKind,
    pub id: &'a [u8],
}

/// The tags of one value: at most two.
pub type Tags<'a> = [Option<Tag<'a>>; 2];

type Hasher = ahash::RandomState;
/// An indexed key's name, one copy shared by its owner's and its channel's sets.
type Name = Arc<[u8]>;
type KeySets = HashMap<Box<[u8]>, Keys, Hasher>;

/// The keys under one id. Most users and direct-message channels have one key, held in the slot
/// itself; more get a hash set of their own.
enum Keys {
    One(Name),
    // Boxed: a set inline (64 bytes with its hasher) would make every id's slot pay for it.
    #[allow(clippy::box_collection)]
    Many(Box<HashSet<Name, Hasher>>),
}

impl Keys {
    fn insert(&mut self, name: &Name) {
        match self {
            Keys::One(held) if held == name => {}
            Keys::One(held) => {
                let set = [held.clone(), name.clone()].into_iter().collect();
                *self = Keys::Many(Box::new(set));
            }
            Keys::Many(set) => {
                set.insert(name.clone());
            }
        }
    }

    /// Removes `key`; false when no key is left (the caller drops the set). A set holds two keys
    /// or more: down to one, it goes back to the slot.
    fn remove(&mut self, key: &[u8]) -> bool {
        match self {
            Keys::One(held) => &held[..] != key,
            Keys::Many(set) => {
                set.remove(key);
                if let (1, Some(last)) = (set.len(), set.iter().next()) {
                    *self = Keys::One(last.clone());
                }
                true
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Keys::One(_) => 1,
            Keys::Many(set) => set.len(),
        }
    }

    fn to_vec(&self) -> Vec<Bytes> {
        match self {
            Keys::One(name) => vec![Bytes::copy_from_slice(name)],
            Keys::Many(set) => set.iter().map(|n| Bytes::copy_from_slice(n)).collect(),
        }
    }
}

/// The index. Lock order: a shard lock may be held while taking this one, never the reverse.
#[derive(Default)]
pub struct TagIndex {
    maps: Mutex<[KeySets; TAG_KINDS]>,
}

fn add(sets: &mut KeySets, id: &[u8], name: &Name) {
    match sets.get_mut(id) {
        Some(keys) => keys.insert(name),
        None => {
            sets.insert(id.into(), Keys::One(name.clone()));
        }
    }
}

fn drop_key(sets: &mut KeySets, id: &[u8], key: &[u8]) {
    if let Some(keys) = sets.get_mut(id) {
        if !keys.remove(key) {
            sets.remove(id);
        }
    }
}

impl TagIndex {
    /// Indexes `key` under each of `tags`.
    pub(crate) fn insert(&self, key: &[u8], tags: &Tags) {
        let name: Name = key.into();
        let mut maps = self.maps.lock();
        for tag in tags.iter().flatten() {
            add(&mut maps[usize::from(tag.kind.0)], tag.id, &name);
        }
    }

    /// Removes `key` from under each of `tags`.
    pub(crate) fn remove(&self, key: &[u8], tags: &Tags) {
        let mut maps = self.maps.lock();
        for tag in tags.iter().flatten() {
            drop_key(&mut maps[usize::from(tag.kind.0)], tag.id, key);
        }
    }

    /// The keys tagged `id` of kind `kind`.
    pub fn keys(&self, kind: TagKind, id: &[u8]) -> Vec<Bytes> {
        self.maps.lock()[usize::from(kind.0)]
            .get(id)
            .map(Keys::to_vec)
            .unwrap_or_default()
    }

    /// How many keys carry a tag of kind `kind` (a key counts once per tag).
    pub fn count(&self, kind: TagKind) -> usize {
        self.maps.lock()[usize::from(kind.0)]
            .values()
            .map(Keys::len)
            .sum()
    }

    /// Trades contents with `other` (SWAPDB). Callers hold every shard of both databases, so no
    /// insert or removal can be waiting on either index meanwhile.
    pub(crate) fn swap_with(&self, other: &TagIndex) {
        if std::ptr::eq(self, other) {
            return;
        }
        let mut mine = self.maps.lock();
        let mut theirs = other.maps.lock();
        std::mem::swap(&mut *mine, &mut *theirs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_sets_grow_and_shrink_to_nothing() {
        let mut sets = KeySets::default();
        let id = b"c1";
        let keys: Vec<Name> = (0..20).map(|i| format!("k{i}").as_bytes().into()).collect();
        for key in keys.iter().chain(&keys) {
            add(&mut sets, id, key); // the second round adds nothing new
        }
        let mut held = sets.get(&id[..]).map(Keys::to_vec).unwrap_or_default();
        held.sort();
        let mut want: Vec<Bytes> = keys.iter().map(|k| Bytes::copy_from_slice(k)).collect();
        want.sort();
        assert_eq!(held, want);
        assert!(matches!(sets.get(&id[..]), Some(Keys::Many(_))));
        for key in &keys[1..] {
            drop_key(&mut sets, id, key);
        }
        assert!(
            matches!(sets.get(&id[..]), Some(Keys::One(k)) if *k == keys[0]),
            "the last key goes back to the slot"
        );
        drop_key(&mut sets, id, b"not indexed");
        assert_eq!(sets.get(&id[..]).map(Keys::len), Some(1));
        drop_key(&mut sets, id, &keys[0]);
        assert!(sets.is_empty(), "an id without keys is dropped");
    }
}
