//! SCAN over the sharded keyspace. A cursor is `shard << 56 | position`, where a key's position is
//! a hash of its name fixed for the life of the process. Each call returns the keys of one shard in
//! position order from the cursor on, so a key that exists for the whole scan is always returned,
//! whatever else is written meanwhile, and the cursor needs no server-side state.

use super::Locked;
use bytes::Bytes;
use std::sync::LazyLock;

const POSITION_BITS: u32 = 56;
const POSITION_MASK: u64 = (1 << POSITION_BITS) - 1;

static POSITION_HASHER: LazyLock<ahash::RandomState> = LazyLock::new(ahash::RandomState::new);

/// The position of `key` inside its shard's scan order.
pub fn position(key: &[u8]) -> u64 {
    POSITION_HASHER.hash_one(key) & POSITION_MASK
}

/// (shard, position) from a client's cursor. Out-of-range shards end the scan.
pub fn split_cursor(cursor: u64) -> (usize, u64) {
    ((cursor >> POSITION_BITS) as usize, cursor & POSITION_MASK)
}

pub fn join_cursor(shard: usize, position: u64) -> u64 {
    ((shard as u64) << POSITION_BITS) | position
}

/// What one shard gave: keys with their type names, and where to resume inside the shard (None:
/// the shard is done).
pub struct ShardBatch {
    pub keys: Vec<(Bytes, &'static str)>,
    pub resume_at: Option<u64>,
}

/// Up to `count` live keys of `shard` at or after `from` (more when several share the last position).
pub fn scan_shard(locked: &Locked, shard: usize, from: u64, count: usize) -> ShardBatch {
    let mut candidates: Vec<(u64, Bytes, &'static str)> = Vec::new();
    locked.for_each_in_shard(shard, |key, entry| {
        let pos = position(key);
        if pos >= from {
            candidates.push((pos, Bytes::copy_from_slice(key), entry.value.type_name()));
        }
    });
    if candidates.len() > count {
        candidates.select_nth_unstable_by_key(count, |c| c.0);
        let cut = candidates[count].0;
        // Keep every key at the cut position too, so resuming from it repeats none and skips none.
        let (mut taken, rest): (Vec<_>, Vec<_>) = candidates.into_iter().partition(|c| c.0 < cut);
        let mut at_cut: Vec<_> = rest.iter().filter(|c| c.0 == cut).cloned().collect();
        let resume = rest.iter().filter(|c| c.0 > cut).map(|c| c.0).min();
        taken.append(&mut at_cut);
        return ShardBatch {
            keys: taken.into_iter().map(|(_, k, t)| (k, t)).collect(),
            resume_at: resume,
        };
    }
    ShardBatch {
        keys: candidates.into_iter().map(|(_, k, t)| (k, t)).collect(),
        resume_at: None,
    }
}
