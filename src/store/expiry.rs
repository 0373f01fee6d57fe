//! The active expiry cycle: reclaims the memory of expired keys nobody reads again.
//!
//! Redis samples keys with a TTL; our shards have no cheap random sampling, so instead the cycle
//! looks at a slice of the shards every tick, each shard about once a second. Each shard keeps a
//! bound on its earliest expiry (lowered by every write of an expiry, exact after a sweep); only a
//! shard whose bound has passed is swept, locked for its own sweep alone, so commands wait at most
//! one shard's worth of work. Keys without a TTL, or whose TTLs are hours away (a conversation's
//! 12 h), cost nothing here until one is due.

use super::Store;
use std::sync::Arc;
use std::time::Duration;

/// How often the cycle runs.
pub const TICK: Duration = Duration::from_millis(100);
/// Ticks for one full pass over all shards.
const TICKS_PER_PASS: usize = 10;
/// Hashes whose expired fields one tick removes at most, in all (each costs a walk of its
/// fields): the rest wait for the next tick, as Redis bounds its field expiry per cycle.
const HASHES_PER_TICK: usize = 1000;

/// Runs until the store is dropped by everyone else or `shutdown` resolves. `after_tick`
/// publishes the `expired` events and invalidations of each tick.
pub async fn run(
    store: Arc<Store>,
    after_tick: impl Fn(),
    shutdown: impl std::future::Future<Output = ()>,
) {
    let mut interval = tokio::time::interval(TICK);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut next_shard = 0;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            _ = interval.tick() => {}
        }
        next_shard = sweep(&store, next_shard);
        after_tick();
    }
}

/// Sweeps one tick's slice of shards, in every database, starting at `start`; returns where the
/// next tick starts.
pub fn sweep(store: &Store, start: usize) -> usize {
    if !store
        .active_expire
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        return start;
    }
    let shards = store.shard_count();
    let per_tick = shards.div_ceil(TICKS_PER_PASS);
    let (mut sampled, mut expired) = (0, 0);
    let mut hashes = HASHES_PER_TICK;
    for (db, _) in store.existing_dbs() {
        for i in 0..per_tick {
            let shard = (start + i) % shards;
            let Some(mut locked) = store.try_lock_shard(db, shard) else {
                continue;
            };
            if hashes > 0 && locked.field_expiry_bound() <= locked.now {
                locked.remove_expired_fields(&mut hashes);
            }
            let bound = locked.expiry_bound();
            if bound == u64::MAX {
                continue; // no key with an expiry: not part of `expired_stale_perc`
            }
            sampled += locked.stored_keys();
            if bound <= locked.now {
                expired += locked.remove_expired();
            }
        }
    }
    store.note_stale_share(expired, sampled);
    (start + per_tick) % shards
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Value;
    use std::sync::atomic::Ordering::Relaxed;

    /// One pass's ticks from shard 0: every shard at least once.
    fn full_pass(store: &Store) {
        let mut at = 0;
        for _ in 0..TICKS_PER_PASS {
            at = sweep(store, at);
        }
    }

    fn write(store: &Store, key: &[u8], expire_in_ms: Option<i64>) {
        let mut l = store.lock_one(0, key);
        let at = expire_in_ms.map_or(0, |ms| l.now.saturating_add_signed(ms));
        l.set(key, Value::Str("v".into()), at);
    }

    /// The shards whose expiry bound has passed.
    fn due(store: &Store) -> Vec<usize> {
        (0..store.shard_count())
            .filter(|&shard| {
                let locked = store.try_lock_shard(0, shard).expect("not held");
                locked.expiry_bound() <= locked.now
            })
            .collect()
    }

    /// Hash fields expire in the cycle with no command reaching them: the expired ones go, the
    /// hash stays queued for its next TTL, and goes once its last field has.
    #[test]
    fn the_cycle_removes_expired_hash_fields_then_the_hash() {
        use crate::store::value::Hash;
        let store = Store::new();
        let limit = crate::store::encoding::Limits::default().hash();
        {
            let mut l = store.lock_one(0, b"h");
            let mut hash = Hash::default();
            for f in [&b"a"[..], b"b", b"c"] {
                hash.insert(f, b"v", limit);
            }
            hash.set_ttl(b"a", l.now - 1);
            hash.set_ttl(b"b", l.now + 60_000);
            l.set(b"h", Value::Hash(hash), 0);
        }
        full_pass(&store);
        assert_eq!(store.expired_fields.load(Relaxed), 1);
        let fields_left = |store: &Store| {
            let mut l = store.lock_one(0, b"h");
            match l.get(b"h").map(|e| &e.value) {
                Some(Value::Hash(h)) => h.len(),
                _ => 0,
            }
        };
        assert_eq!(fields_left(&store), 2);
        {
            let mut l = store.lock_one(0, b"h");
            let due = l.now - 1;
            if let Some(Value::Hash(h)) = l.get_mut(b"h").map(|e| &mut e.value) {
                h.set_ttl(b"b", due);
                h.set_ttl(b"c", due);
            }
            l.note_field_expiry(b"h", due);
        }
        full_pass(&store);
        assert_eq!(store.expired_fields.load(Relaxed), 3);
        assert_eq!(store.len(), 0, "the hash went with its last field");
        assert_eq!(store.expired_keys.load(Relaxed), 0, "not a key expiry");
    }

    #[test]
    fn only_shards_with_a_passed_expiry_are_swept() {
        let store = Store::new();
        for i in 0..2000 {
            write(&store, format!("k{i}").as_bytes(), None);
        }
        write(&store, b"later", Some(3_600_000));
        assert!(due(&store).is_empty(), "no key has expired");

        // An already expired key: its shard is due, and one pass reclaims it.
        write(&store, b"gone", Some(-1));
        assert_eq!(due(&store), vec![store.db(0).shard_of(b"gone")]);
        full_pass(&store);
        assert_eq!(store.expired_keys.load(Relaxed), 1);
        assert_eq!(store.len(), 2001);
        assert!(due(&store).is_empty(), "the bound is exact after a sweep");

        // An expiry moved into the past by a write (EXPIRE, GETEX…) is due at once.
        store
            .lock_one(0, b"later")
            .set_expiry(b"later", 1)
            .expect("later is there");
        assert_eq!(due(&store), vec![store.db(0).shard_of(b"later")]);
        full_pass(&store);
        assert_eq!(store.expired_keys.load(Relaxed), 2);
        assert_eq!(store.len(), 2000);
        assert!(due(&store).is_empty());
    }
}
