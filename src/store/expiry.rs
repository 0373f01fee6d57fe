//! The active expiry cycle: reclaims the memory of expired keys nobody reads again.
//!
//! Redis samples keys with a TTL; our shards have no cheap random sampling, so instead the cycle
//! sweeps a slice of the shards every tick, visiting the whole keyspace about once a second. Each
//! shard is locked only for its own sweep, so commands wait at most one shard's worth of work.
//! A shard found without any key that has an expiry is skipped until a write touches it (its
//! version moves), so an idle server holding keys without TTLs does no work here at all.

use super::Store;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// How often the cycle runs.
pub const TICK: Duration = Duration::from_millis(100);
/// Ticks for one full pass over all shards.
const TICKS_PER_PASS: usize = 10;

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
    let mut quiet = Quiet::default();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            _ = interval.tick() => {}
        }
        next_shard = sweep(&store, next_shard, &mut quiet);
        after_tick();
    }
}

/// The shards (database, shard) whose last sweep found no key with an expiry, with the
/// [`super::Locked::write_mark`] they had then.
#[derive(Default)]
pub struct Quiet(HashMap<(usize, usize), (u64, u64)>);

/// Sweeps one tick's slice of shards, in every database, starting at `start`; returns where the
/// next tick starts.
pub fn sweep(store: &Store, start: usize, quiet: &mut Quiet) -> usize {
    if !store
        .active_expire
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        return start;
    }
    let shards = store.shard_count();
    let per_tick = shards.div_ceil(TICKS_PER_PASS);
    let (mut sampled, mut expired) = (0, 0);
    for (db, _) in store.existing_dbs() {
        for i in 0..per_tick {
            let shard = (start + i) % shards;
            let Some(mut locked) = store.try_lock_shard(db, shard) else {
                continue;
            };
            let mark = locked.write_mark();
            if quiet.0.get(&(db, shard)) == Some(&mark) {
                continue;
            }
            sampled += locked.stored_keys();
            let swept = locked.remove_expired();
            expired += swept.removed;
            if swept.expiring_left == Some(0) {
                quiet.0.insert((db, shard), mark);
            } else {
                quiet.0.remove(&(db, shard));
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
    fn full_pass(store: &Store, quiet: &mut Quiet) {
        let mut at = 0;
        for _ in 0..TICKS_PER_PASS {
            at = sweep(store, at, quiet);
        }
    }

    fn write(store: &Store, key: &[u8], expire_in_ms: Option<i64>) {
        let mut l = store.lock_one(0, key);
        let at = expire_in_ms.map_or(0, |ms| l.now.saturating_add_signed(ms));
        l.set(key, Value::Str("v".into()), at);
    }

    #[test]
    fn shards_without_expiring_keys_are_skipped_until_written() {
        let store = Store::new();
        for i in 0..2000 {
            write(&store, format!("k{i}").as_bytes(), None);
        }
        let mut quiet = Quiet::default();
        full_pass(&store, &mut quiet);
        assert_eq!(
            quiet.0.len(),
            store.shard_count(),
            "no shard holds an expiring key"
        );

        // An already expired key written into a quiet shard: the write moves the shard's
        // version, so the next pass sweeps it and reclaims the key.
        write(&store, b"gone", Some(-1));
        let gone = store.db(0).shard_of(b"gone");
        full_pass(&store, &mut quiet);
        assert_eq!(store.expired_keys.load(Relaxed), 1);
        assert_eq!(store.len(), 2000);
        assert!(
            quiet.0.contains_key(&(0, gone)),
            "quiet again once reclaimed"
        );

        // A key that expires later keeps its shard swept on every pass.
        write(&store, b"later", Some(3_600_000));
        let later = store.db(0).shard_of(b"later");
        full_pass(&store, &mut quiet);
        full_pass(&store, &mut quiet);
        assert!(!quiet.0.contains_key(&(0, later)));
        assert_eq!(quiet.0.len(), store.shard_count() - 1);
        assert_eq!(store.len(), 2001);
    }
}
