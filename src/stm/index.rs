//! Owner and channel → STM keys, so STM.RECENT and STM.FORGET touch only the keys they need instead
//! of scanning the keyspace. The store updates it on every insert and removal of an STM value
//! (writes, DEL, RENAME, expiry, FLUSHALL), under the key's shard lock, so it is always exact.

use super::{Scope, StmEntry};
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};

type KeySets = HashMap<Bytes, HashSet<Bytes>>;

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
    sets.entry(id.clone()).or_default().insert(key.clone());
}

fn drop_key(sets: &mut KeySets, id: &[u8], key: &[u8]) {
    if let Some(set) = sets.get_mut(id) {
        set.remove(key);
        if set.is_empty() {
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
        sets.get(id)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Number of indexed keys (each STM entry is indexed under its channel exactly once).
    pub fn len(&self) -> usize {
        self.maps.lock().by_channel.values().map(HashSet::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
