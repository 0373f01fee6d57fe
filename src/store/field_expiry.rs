//! Hash-field expiration (Redis 7.4): the keyspace's side of the TTLs a hash keeps per field
//! ([`super::hash`] holds them).
//!
//! A field is removed when its time is up in two ways, as in Redis: when a command reaches it
//! ([`Locked::expire_fields`], called by the hash commands before they look), and by the active
//! expiry cycle ([`Locked::remove_expired_fields`]), which finds the hashes due through each
//! shard's [`FieldQueue`] without looking at any other key. Either way the `hexpired` event is
//! noted, the replicas and the append-only file get an HDEL of the fields, and a hash left empty
//! is deleted (`del`). A replica removes nothing itself: it hides the fields (the hash reads with
//! the command's time) until its primary's HDEL.

use super::changes::Change;
use super::shard::Shard;
use super::{Locked, Spot, Value};
use bytes::Bytes;
use std::collections::BTreeSet;

/// The hashes of one shard with field TTLs, each as (time, key hash) under a time no later than
/// its earliest field expiry: 16 bytes an entry and no copy of the key. A hash records the time
/// it stands under ([`super::hash::Hash::queued`]), which stands in for a map from keys to
/// entries: a hash is queued once, moved when its earliest expiry comes before its time, and
/// its entry goes with it when the key leaves the keyspace ([`FieldQueue::forget`]). An entry
/// whose hash is gone all the same (a key left by a path that does not tell the queue) matches
/// no hash when its time comes and is dropped then.
#[derive(Default)]
pub(super) struct FieldQueue {
    due: BTreeSet<(u64, u64)>,
}

impl FieldQueue {
    /// No hash of the shard has a field expiring before this (`u64::MAX`: none is queued).
    pub fn bound(&self) -> u64 {
        self.due.first().map_or(u64::MAX, |(at, _)| *at)
    }

    /// `value`, the value of the key whose hash is `hash`, leaves the keyspace.
    pub fn forget(&mut self, hash: u64, value: &Value) {
        if let Value::Hash(h) = value {
            let queued = h.queued();
            if queued != 0 {
                self.due.remove(&(queued, hash));
            }
        }
    }

    pub fn clear(&mut self) {
        *self = FieldQueue::default();
    }
}

/// Queues the hash at `key` (of key hash `hash`) in `shard` under `at` (Unix ms, not 0) unless
/// it stands under a time no later already.
pub(super) fn queue_hash(shard: &mut Shard, hash: u64, key: &[u8], at: u64) {
    let Some(mut found) = shard.occupied(hash, key) else {
        return;
    };
    let Value::Hash(h) = &mut found.get_mut().entry_mut().value else {
        return;
    };
    let queued = h.queued();
    if (queued != 0 && queued <= at) || !h.set_queued(at) {
        return;
    }
    if queued != 0 {
        shard.fields.due.remove(&(queued, hash));
    }
    shard.fields.due.insert((at, hash));
}

/// The name of the next hash whose time has come at `now`, taken off the queue (it is no
/// longer queued: the caller queues it again under its next expiry).
fn pop_due(shard: &mut Shard, now: u64) -> Option<Box<[u8]>> {
    while shard.fields.bound() <= now {
        let (at, hash) = shard.fields.due.pop_first()?;
        let found = shard.find_mut(
            hash,
            |node| matches!(&node.entry().value, Value::Hash(h) if h.queued() == at),
        );
        if let Some(node) = found {
            let name = Box::from(node.name());
            if let Value::Hash(h) = &mut node.entry_mut().value {
                h.set_queued(0);
            }
            return Some(name);
        }
    }
    None
}

impl Locked<'_> {
    /// Registers that the hash at `key` has a field expiring at `at` (Unix ms; 0: nothing to do),
    /// for the active expiry cycle. Called by every command that sets a field TTL.
    pub fn note_field_expiry(&mut self, key: &[u8], at: u64) {
        if at != 0 {
            let spot = self.spot(key);
            queue_hash(self.shard_at(&spot), spot.hash, key, at);
        }
    }

    /// No hash field of the locked shards expires before this (Unix ms; `u64::MAX`: none). For
    /// the expiry cycle's one-shard locks: a script's view would lock every shard to answer.
    pub fn field_expiry_bound(&self) -> u64 {
        self.held
            .iter()
            .map(|(_, shard)| shard.fields.bound())
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Removes those of `fields` (every field when None) of the hash at `key` whose time is up,
    /// as a command reaching them does; returns how many. A hash left empty is deleted. Nothing
    /// is removed on a replica or during CLIENT PAUSE (the fields are hidden instead), nor from
    /// a key of another type.
    pub fn expire_fields(&mut self, key: &[u8], fields: Option<&[&[u8]]>) -> usize {
        // The shard's queue says whether any of its hashes has a field due: for a hash without
        // TTLs (nearly all) this is the whole cost, without hashing the key under a command's
        // own one-shard lock.
        let slot = match self.held.single() {
            Some(slot) => slot,
            None => self.spot(key).slot,
        };
        if self.held.get(slot).fields.bound() > self.now {
            return 0;
        }
        let spot = self.spot(key);
        self.expire_fields_at(spot, key, fields)
    }

    /// [`Locked::expire_fields`] without the look at the queue (the cycle has taken the key
    /// off it already).
    fn expire_fields_at(&mut self, spot: Spot, key: &[u8], fields: Option<&[&[u8]]>) -> usize {
        let (store, space, db, now) = (self.store, self.space, self.db, self.now);
        if store.keeps_expired() {
            return 0;
        }
        let Some((shard, entry)) = self.live_entry_at(spot, key) else {
            return 0;
        };
        let Value::Hash(hash) = &mut entry.value else {
            return 0;
        };
        if !hash.has_ttls() {
            return 0;
        }
        let candidates = match fields {
            None => hash.expired_fields(now),
            Some(fields) => fields
                .iter()
                .filter(|f| hash.ttl(f).is_some_and(|at| at != 0 && at <= now))
                .map(|f| Bytes::copy_from_slice(f))
                .collect(),
        };
        let gone: Vec<Bytes> = candidates.into_iter().filter(|f| hash.remove(f)).collect();
        if gone.is_empty() {
            return 0;
        }
        let empty = hash.is_empty();
        // A change WATCH sees, as Redis signals the key modified.
        entry.set_version(space.bump_version(shard));
        store.noting(db, key, Change::FieldsExpired);
        self.propagate_field_removal(key, &gone);
        store
            .expired_fields
            .fetch_add(gone.len() as u64, std::sync::atomic::Ordering::Relaxed);
        if empty {
            self.remove(key);
        }
        gone.len()
    }

    /// Sends an HDEL of `fields` of the hash at `key` to the replicas and the append-only file
    /// at once: fields that expired, or that a command deleted by setting a past time.
    pub fn propagate_field_removal(&self, key: &[u8], fields: &[Bytes]) {
        if let Some(observer) = self.store.listening_observer() {
            observer.fields_removed(self.db, key, fields);
        }
    }

    /// The active expiry cycle's part for hash fields: removes the expired fields of the hashes
    /// due in the locked shards, at most `budget` hashes (taken off it); returns how many fields
    /// went. A hash with TTLs left is queued again under its next one.
    pub fn remove_expired_fields(&mut self, budget: &mut usize) -> usize {
        let now = self.now;
        if self.store.keeps_expired() {
            return 0;
        }
        let mut due = Vec::new();
        let limit = *budget;
        self.held.for_each_mut(|shard| {
            while due.len() < limit {
                match pop_due(shard, now) {
                    Some(key) => due.push(key),
                    None => break,
                }
            }
        });
        *budget -= due.len();
        let mut removed = 0;
        for key in due {
            let spot = self.spot(&key);
            removed += self.expire_fields_at(spot, &key, None);
            let next = self.peek_stored_hash_ttl(&key);
            if let Some(at) = next {
                self.note_field_expiry(&key, at);
            }
        }
        removed
    }

    /// The earliest field expiry of the hash stored at `key`, live or not, touching nothing.
    fn peek_stored_hash_ttl(&self, key: &[u8]) -> Option<u64> {
        let spot = self.spot(key);
        match &self.held.get(spot.slot).find(spot.hash, key)?.entry().value {
            Value::Hash(h) => h.earliest_ttl(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::value::Hash;
    use crate::store::Store;

    fn queued(store: &Store) -> usize {
        (0..store.shard_count())
            .map(|s| {
                let l = store.try_lock_shard(0, s).expect("not held");
                l.held
                    .iter()
                    .map(|(_, shard)| shard.fields.due.len())
                    .sum::<usize>()
            })
            .sum()
    }

    /// A hash stands in its shard's queue once: lowering its earliest expiry moves its entry,
    /// and neither taking its TTLs away and giving new ones nor deleting and recreating it
    /// leaves an entry per change behind.
    #[test]
    fn a_hash_stands_in_the_queue_once() {
        let store = Store::new();
        let limit = crate::store::encoding::Limits::default().hash();
        let far = 4_000_000_000_000;
        for round in 0..60u64 {
            {
                let mut l = store.lock_one(0, b"h");
                if l.get(b"h").is_none() {
                    let mut hash = Hash::default();
                    hash.insert(b"a", b"v", limit);
                    l.set(b"h", Value::Hash(hash), 0);
                }
                let at = far - round;
                if let Some(Value::Hash(h)) = l.get_mut(b"h").map(|e| &mut e.value) {
                    h.set_ttl(b"a", at);
                }
                l.note_field_expiry(b"h", at);
                assert_eq!(l.field_expiry_bound(), at, "moved to the earlier time");
            }
            assert_eq!(queued(&store), 1, "round {round}");
            let mut l = store.lock_one(0, b"h");
            match round % 3 {
                0 => {
                    if let Some(Value::Hash(h)) = l.get_mut(b"h").map(|e| &mut e.value) {
                        h.set_ttl(b"a", 0);
                    }
                }
                1 => {
                    l.remove(b"h");
                }
                _ => {}
            }
        }
        assert_eq!(queued(&store), 1);
        let mut l = store.lock_one(0, b"h");
        l.remove(b"h");
        drop(l);
        assert_eq!(queued(&store), 0, "the entry left with the key");
    }
}
