//! Owner and channel → STM keys, so STM.RECENT and STM.FORGET touch only the keys they need instead
//! of scanning the keyspace. The store updates it on every insert and removal of an STM value
//! (writes, DEL, RENAME, expiry, FLUSHALL), under the key's shard lock, so it is always exact.

use super::{Scope, StmEntry};
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

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

#[derive(Default)]
struct Maps {
    /// user id → that user's user-scope keys.
    by_user: KeySets,
    /// server id → that server's server-scope keys.
    by_server: KeySets,
    /// channel id → every key of that channel, both scopes.
    by_channel: KeySets,
}

/// The index. Lock order: a shard lock may be held while taking this one, never the reverse.
#[derive(Default)]
pub struct StmIndex {
    maps: Mutex<Maps>,
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

impl StmIndex {
    pub(crate) fn insert(&self, key: &[u8], entry: &StmEntry) {
        let name: Name = key.into();
        let mut maps = self.maps.lock();
        match (entry.scope, entry.user(), entry.server()) {
            (Scope::User, Some(user), _) => add(&mut maps.by_user, user, &name),
            (Scope::Server, _, Some(server)) => add(&mut maps.by_server, server, &name),
            _ => {}
        }
        add(&mut maps.by_channel, entry.channel(), &name);
    }

    pub(crate) fn remove(&self, key: &[u8], entry: &StmEntry) {
        let mut maps = self.maps.lock();
        match (entry.scope, entry.user(), entry.server()) {
            (Scope::User, Some(user), _) => drop_key(&mut maps.by_user, user, key),
            (Scope::Server, _, Some(server)) => drop_key(&mut maps.by_server, server, key),
            _ => {}
        }
        drop_key(&mut maps.by_channel, entry.channel(), key);
    }

    /// Keys of the user-scope entries of `user`.
    pub fn user_keys(&self, user: &[u8]) -> Vec<Bytes> {
        Self::keys_of(&self.maps.lock().by_user, user)
    }

    /// Keys of the server-scope entries of `server`.
    pub fn server_keys(&self, server: &[u8]) -> Vec<Bytes> {
        Self::keys_of(&self.maps.lock().by_server, server)
    }

    /// Keys of every entry of `channel`.
    pub fn channel_keys(&self, channel: &[u8]) -> Vec<Bytes> {
        Self::keys_of(&self.maps.lock().by_channel, channel)
    }

    fn keys_of(sets: &KeySets, id: &[u8]) -> Vec<Bytes> {
        sets.get(id).map(Keys::to_vec).unwrap_or_default()
    }

    /// Trades contents with `other` (SWAPDB). Callers hold every shard of both databases, so no
    /// insert or removal can be waiting on either index meanwhile.
    pub(crate) fn swap_with(&self, other: &StmIndex) {
        if std::ptr::eq(self, other) {
            return;
        }
        let mut mine = self.maps.lock();
        let mut theirs = other.maps.lock();
        std::mem::swap(&mut *mine, &mut *theirs);
    }

    /// Number of indexed keys (each STM entry is indexed under its channel exactly once).
    pub fn len(&self) -> usize {
        self.maps.lock().by_channel.values().map(Keys::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
