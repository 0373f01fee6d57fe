//! Owner and channel → STM keys, so STM.RECENT and STM.FORGET touch only the keys they need instead
//! of scanning the keyspace. The store updates it on every insert and removal of an STM value
//! (writes, DEL, RENAME, expiry, FLUSHALL), under the key's shard lock, so it is always exact.

use super::{Scope, StmEntry};
use bytes::Bytes;
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::collections::{HashMap, HashSet};

type Hasher = ahash::RandomState;
type KeySets = HashMap<Bytes, Keys, Hasher>;

/// Past this many keys under one id, a hash set replaces the list.
const FEW: usize = 8;

/// The keys under one id. Most users and direct-message channels have one key, so the usual
/// case is one inline slot with no allocation of its own; a busy channel gets a hash set.
enum Keys {
    Few(SmallVec<[Bytes; 1]>),
    Many(HashSet<Bytes, Hasher>),
}

impl Default for Keys {
    fn default() -> Self {
        Keys::Few(SmallVec::new())
    }
}

impl Keys {
    fn insert(&mut self, key: &Bytes) {
        match self {
            Keys::Few(list) if list.iter().any(|k| k == key) => {}
            Keys::Few(list) if list.len() < FEW => list.push(key.clone()),
            Keys::Few(list) => {
                let mut set: HashSet<Bytes, Hasher> = list.drain(..).collect();
                set.insert(key.clone());
                *self = Keys::Many(set);
            }
            Keys::Many(set) => {
                set.insert(key.clone());
            }
        }
    }

    fn remove(&mut self, key: &[u8]) {
        match self {
            Keys::Few(list) => list.retain(|k| k != key),
            Keys::Many(set) => {
                set.remove(key);
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Keys::Few(list) => list.len(),
            Keys::Many(set) => set.len(),
        }
    }

    fn to_vec(&self) -> Vec<Bytes> {
        match self {
            Keys::Few(list) => list.to_vec(),
            Keys::Many(set) => set.iter().cloned().collect(),
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

fn add(sets: &mut KeySets, id: &Bytes, key: &Bytes) {
    match sets.get_mut(id) {
        Some(keys) => keys.insert(key),
        None => {
            let mut keys = Keys::default();
            keys.insert(key);
            sets.insert(id.clone(), keys);
        }
    }
}

fn drop_key(sets: &mut KeySets, id: &[u8], key: &[u8]) {
    if let Some(keys) = sets.get_mut(id) {
        keys.remove(key);
        if keys.len() == 0 {
            sets.remove(id);
        }
    }
}

impl StmIndex {
    pub(crate) fn insert(&self, key: &Bytes, entry: &StmEntry) {
        let mut maps = self.maps.lock();
        match (entry.scope, &entry.user, &entry.server) {
            (Scope::User, Some(user), _) => add(&mut maps.by_user, user, key),
            (Scope::Server, _, Some(server)) => add(&mut maps.by_server, server, key),
            _ => {}
        }
        add(&mut maps.by_channel, &entry.channel, key);
    }

    pub(crate) fn remove(&self, key: &[u8], entry: &StmEntry) {
        let mut maps = self.maps.lock();
        match (entry.scope, &entry.user, &entry.server) {
            (Scope::User, Some(user), _) => drop_key(&mut maps.by_user, user, key),
            (Scope::Server, _, Some(server)) => drop_key(&mut maps.by_server, server, key),
            _ => {}
        }
        drop_key(&mut maps.by_channel, &entry.channel, key);
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
    fn key_lists_grow_into_sets_and_shrink_to_nothing() {
        let mut sets = KeySets::default();
        let id = Bytes::from_static(b"c1");
        let keys: Vec<Bytes> = (0..2 * FEW).map(|i| Bytes::from(format!("k{i}"))).collect();
        for key in keys.iter().chain(&keys) {
            add(&mut sets, &id, key); // the second round adds nothing new
        }
        let mut held = sets.get(&id[..]).map(Keys::to_vec).unwrap_or_default();
        held.sort();
        let mut want = keys.clone();
        want.sort();
        assert_eq!(held, want);
        assert!(matches!(sets.get(&id[..]), Some(Keys::Many(_))));
        for key in &keys {
            drop_key(&mut sets, &id, key);
        }
        assert!(sets.is_empty(), "an id without keys is dropped");
        add(&mut sets, &id, &keys[0]);
        assert!(matches!(sets.get(&id[..]), Some(Keys::Few(list)) if list.len() == 1));
    }
}
