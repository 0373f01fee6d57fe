//! The idle pass: compresses the message block of every conversation nobody has written for
//! `stm-compress-after` seconds, where a capture would have replaced it anyway had the
//! conversation gone on. Captures never compress (their cost stays what it was); a read of a
//! compressed entry decompresses a copy and leaves the entry as it is.
//!
//! Like the active expiry cycle it walks a slice of the shards every tick, each shard about once
//! a second, but compression takes milliseconds a block, so it never compresses under a lock:
//! it clones the idle blocks of one shard (a reference count each) under the lock, compresses
//! them with the lock released, then locks the shard again only to swap each compressed block in
//! where the entry still holds the one it was made from. It runs on its own thread at the lowest
//! CPU priority, so a backlog (a restart's worth of conversations) takes idle CPU only.
//!
//! The user and server entries of a capture share one block (often in different shards), and
//! must end up sharing one compressed block: a compressed block whose original still has other
//! holders is kept in `pending` until the shards holding them are walked, and they get the same
//! compressed block instead of a second compression.

use super::{Snapshot, StmStats};
use crate::store::{Store, Value};
use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// How often the pass runs a slice.
pub const TICK: Duration = Duration::from_millis(100);
/// Ticks for one walk over all shards.
const TICKS_PER_PASS: usize = 10;

/// Where the pass is, and the compressed blocks other entries may still need.
#[derive(Default)]
pub struct IdlePass {
    next_shard: usize,
    /// Block id of an original → (the original, kept so its id is not reused; its compression).
    pending: HashMap<usize, (Snapshot, Snapshot)>,
    /// Blocks Brotli could not make smaller (random or already compressed text), by id, time and
    /// size, each with the walk that last saw it: not tried again every walk. A new block at a
    /// freed one's address with the same time and size is all but impossible, and would only stay
    /// plain.
    incompressible: HashMap<(usize, u64, usize), u64>,
    /// Full walks over the shards so far.
    walks: u64,
}

impl IdlePass {
    /// Walks one tick's slice of shards in every database, compressing the blocks idle for
    /// `after_ms` (0: compress nothing).
    pub fn tick(&mut self, store: &Store, stats: &StmStats, after_ms: u64) {
        if after_ms == 0 {
            self.pending.clear();
            return;
        }
        let shards = store.shard_count();
        let dbs: Vec<usize> = store.existing_dbs().map(|(db, _)| db).collect();
        for _ in 0..shards.div_ceil(TICKS_PER_PASS) {
            for &db in &dbs {
                self.compress_shard(store, stats, db, self.next_shard, after_ms);
            }
            self.next_shard = (self.next_shard + 1) % shards;
            if self.next_shard == 0 {
                // A block not seen for a whole walk is gone.
                let walks = self.walks;
                self.incompressible.retain(|_, seen| *seen >= walks);
                self.walks += 1;
            }
        }
        // An original nobody else holds any more needs no lookup: its last holder was swapped,
        // overwritten or deleted.
        self.pending
            .retain(|_, (original, _)| original.holders() > 1);
    }

    /// Walks every shard once (tests, DEBUG): all the blocks idle for `after_ms` are compressed.
    pub fn full_pass(&mut self, store: &Store, stats: &StmStats, after_ms: u64) {
        for _ in 0..TICKS_PER_PASS {
            self.tick(store, stats, after_ms);
        }
    }

    fn compress_shard(
        &mut self,
        store: &Store,
        stats: &StmStats,
        db: usize,
        shard: usize,
        after_ms: u64,
    ) {
        // Under the lock: the idle plain blocks, each once.
        let mut idle: Vec<Snapshot> = Vec::new();
        {
            let Some(locked) = store.try_lock_shard(db, shard) else {
                return; // busy (a script, EXEC): its next walk
            };
            let now = locked.now;
            locked.for_each_in_shard(shard, |_, entry| {
                if let Value::Stm(stm) = &entry.value {
                    let block = stm.block();
                    if now.saturating_sub(block.ts()) >= after_ms
                        && block.worth_compressing()
                        && !idle.iter().any(|b| b.same_block(block))
                    {
                        idle.push(block.clone());
                    }
                }
            });
        }
        if idle.is_empty() {
            return;
        }
        // Without it: compress each, or take the compression another shard's entry got.
        let mut swaps: Vec<(Snapshot, Snapshot, bool)> = Vec::with_capacity(idle.len());
        for block in idle {
            match self.pending.get(&block.block_id()) {
                Some((original, compressed)) if original.same_block(&block) => {
                    let compressed = compressed.clone();
                    swaps.push((block, compressed, false));
                }
                _ => {
                    let known = (block.block_id(), block.ts(), block.block_len());
                    if let Some(seen) = self.incompressible.get_mut(&known) {
                        *seen = self.walks;
                    } else if let Some(compressed) = block.compressed() {
                        swaps.push((block, compressed, true));
                    } else {
                        self.incompressible.insert(known, self.walks);
                    }
                }
            }
        }
        // Under the lock again: swap where the entry still holds the original.
        let mut used = vec![false; swaps.len()];
        {
            let mut locked = store.lock_shard(db, shard);
            locked.for_each_value_in_shard_mut(shard, |value| {
                if let Value::Stm(stm) = value {
                    for (i, (from, to, _)) in swaps.iter().enumerate() {
                        if stm.replace_block(from, to) {
                            used[i] = true;
                            break;
                        }
                    }
                }
            });
        }
        for ((from, to, new), used) in swaps.into_iter().zip(used) {
            if used && new {
                stats.compressions.fetch_add(1, Relaxed);
                stats
                    .compressed_bytes_in
                    .fetch_add(from.block_len() as u64, Relaxed);
                stats
                    .compressed_bytes_out
                    .fetch_add(to.block_len() as u64, Relaxed);
            }
            // Held elsewhere still (the other scope's entry, another persona's).
            if used && new && from.holders() > 1 {
                self.pending.insert(from.block_id(), (from, to));
            }
        }
    }
}

/// Runs the pass every [`TICK`] on the calling thread, lowered to the least CPU priority, until
/// `stopped` says so. `after_ms` reads `stm-compress-after` (in ms) at each tick.
pub fn run(
    store: &Store,
    stats: &StmStats,
    after_ms: impl Fn() -> u64,
    stopped: impl Fn() -> bool,
) {
    // SAFETY: setpriority takes plain integers and reads or writes no memory of ours; on Linux,
    // `who` 0 with PRIO_PROCESS is the calling thread only. A failure leaves the priority as it
    // was, which is harmless.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
    }
    let mut pass = IdlePass::default();
    while !stopped() {
        std::thread::sleep(TICK);
        pass.tick(store, stats, after_ms());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stm::{Ids, Role, ScopeKey, StmEntry};
    use bytes::Bytes;

    fn text(i: usize) -> String {
        format!("message {i}: the meeting moved to Thursday because half of the team is away; ")
            .repeat(4)
    }

    /// The user and server entries of one capture, in the store as a capture leaves them.
    fn capture(store: &Store, user: &str, ts: u64) -> Snapshot {
        let user = Bytes::copy_from_slice(user.as_bytes());
        let (server, channel) = (Bytes::from_static(b"s1"), Bytes::from_static(b"c1"));
        let texts: Vec<String> = (0..6).map(text).collect();
        let ids = Ids {
            user: Some(&user),
            server: Some(&server),
            channel: &channel,
            parent: None,
        };
        let snapshot = Snapshot::new(
            ids,
            texts.iter().map(|t| (Role::User, None, t.as_str())),
            ts,
        );
        for scope in ScopeKey::for_turn(&user, Some(&server), &channel, None) {
            let mut entry = StmEntry::new(&scope, ts);
            entry.set_snapshot(&snapshot);
            let key = scope.key();
            store
                .lock_one(0, &key)
                .set(&key, Value::Stm(Box::new(entry)), 0);
        }
        snapshot
    }

    fn block(store: &Store, key: &[u8]) -> Snapshot {
        match store.lock_one(0, key).get(key).map(|e| &e.value) {
            Some(Value::Stm(entry)) => entry.block().clone(),
            _ => panic!("no entry"),
        }
    }

    #[test]
    fn both_entries_of_a_capture_share_one_compressed_block() {
        let store = Store::new();
        let stats = StmStats::default();
        let now = crate::store::now_ms();
        let old = capture(&store, "u1", now - 60_000);
        let (user, server) = (&b"shortterm:user:u1:c1"[..], &b"shortterm:server:s1:c1"[..]);
        assert!(store.db(0).shard_of(user) != store.db(0).shard_of(server));
        let mut pass = IdlePass::default();
        pass.full_pass(&store, &stats, 3_600_000);
        assert!(block(&store, user).same_block(&old), "not idle an hour");
        pass.full_pass(&store, &stats, 30_000);
        let (a, b) = (block(&store, user), block(&store, server));
        assert!(
            a.is_compressed() && a.same_block(&b),
            "one compressed block for both"
        );
        assert_eq!(a, old);
        assert_eq!(stats.compressions.load(Relaxed), 1);
        assert_eq!(
            stats.compressed_bytes_in.load(Relaxed),
            old.block_len() as u64
        );
        assert_eq!(
            stats.compressed_bytes_out.load(Relaxed),
            a.block_len() as u64
        );
        drop(old);
        pass.tick(&store, &stats, 30_000);
        assert!(pass.pending.is_empty(), "nothing left to share");

        // A fresh capture stays plain; a pass with 0 compresses nothing.
        let fresh = capture(&store, "u2", now);
        pass.full_pass(&store, &stats, 30_000);
        pass.full_pass(&store, &stats, 0);
        assert!(block(&store, b"shortterm:user:u2:c1").same_block(&fresh));
        assert_eq!(stats.compressions.load(Relaxed), 1);
    }

    #[test]
    fn a_block_that_does_not_shrink_stays_plain_and_is_not_tried_again() {
        let store = Store::new();
        let stats = StmStats::default();
        // A short xorshift stream as text: Brotli's code tables cost more than they save.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: String = (0..220)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'!' + (x % 94) as u8)
            })
            .collect();
        let scope = ScopeKey::parse(b"shortterm:user:u9:c9").expect("a key");
        let mut entry = StmEntry::new(&scope, 1);
        let ids = Ids {
            user: Some(b"u9"),
            server: None,
            channel: b"c9",
            parent: None,
        };
        let snapshot = Snapshot::new(ids, [(Role::User, None, noise.as_str())], 1);
        assert!(snapshot.worth_compressing() && snapshot.compressed().is_none());
        entry.set_snapshot(&snapshot);
        let key = scope.key();
        store
            .lock_one(0, &key)
            .set(&key, Value::Stm(Box::new(entry)), 0);
        let mut pass = IdlePass::default();
        pass.full_pass(&store, &stats, 1);
        assert!(block(&store, &key).same_block(&snapshot));
        assert_eq!(pass.incompressible.len(), 1);
        pass.full_pass(&store, &stats, 1);
        assert_eq!(pass.incompressible.len(), 1, "remembered while it lives");
        store.lock_one(0, &key).remove(&key);
        drop(snapshot);
        pass.full_pass(&store, &stats, 1);
        pass.full_pass(&store, &stats, 1);
        assert!(pass.incompressible.is_empty(), "forgotten once gone");
        assert_eq!(stats.compressions.load(Relaxed), 0);
    }
}
