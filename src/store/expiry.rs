//! The active expiry cycle: reclaims the memory of expired keys nobody reads again.
//!
//! Redis samples keys with a TTL; our shards have no cheap random sampling, so instead the cycle
//! sweeps a slice of the shards every tick, visiting the whole keyspace about once a second. Each
//! shard is locked only for its own sweep, so commands wait at most one shard's worth of work.

use super::Store;
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

/// Sweeps one tick's slice of shards, in every database, starting at `start`; returns where the next tick starts.
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
    for (db, _) in store.existing_dbs() {
        for i in 0..per_tick {
            let shard = (start + i) % shards;
            let Some(mut locked) = store.try_lock_shard(db, shard) else {
                continue;
            };
            sampled += locked.stored_keys();
            expired += locked.remove_expired();
        }
    }
    store.note_stale_share(expired, sampled);
    (start + per_tick) % shards
}
