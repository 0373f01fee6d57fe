//! The shards a [`super::Locked`] view holds. A few shards are held by their guards. A whole
//! database (MULTI/EXEC, a script, FLUSHDB, KEYS) is held by taking each shard's raw exclusive
//! lock: for 256 shards, a guard each (built into a vector, then dropped one by one) cost about
//! twice the instructions, ~8,000 per EXEC or script call.

use super::{Shard, ShardGuard};
use dashmap::RwLock;
use parking_lot::lock_api::RawRwLock as _;
use smallvec::SmallVec;

pub(super) enum Held<'a> {
    /// (shard index, its guard), ascending.
    Few(SmallVec<[(usize, ShardGuard<'a>); 2]>),
    /// Every shard, in order, each locked exclusively by this value until it drops.
    All(&'a [RwLock<Shard>]),
}

impl<'a> Held<'a> {
    /// Locks every shard of `shards` in order, waiting for each.
    pub fn all(shards: &'a [RwLock<Shard>]) -> Self {
        for shard in shards {
            // SAFETY: `raw` only exposes the lock; taking it exclusively and keeping it until
            // `Drop` (which unlocks each shard once) is exactly what a write guard would do.
            unsafe { shard.raw() }.lock_exclusive();
        }
        Held::All(shards)
    }

    /// Locks every shard of `shards` if none is held by anyone, without waiting.
    pub fn try_all(shards: &'a [RwLock<Shard>]) -> Option<Self> {
        for (taken, shard) in shards.iter().enumerate() {
            // SAFETY: as in `all`.
            if !unsafe { shard.raw() }.try_lock_exclusive() {
                for earlier in &shards[..taken] {
                    // SAFETY: this loop locked `earlier` exclusively above and nothing else
                    // refers to it: it is released exactly once, here.
                    unsafe { earlier.raw().unlock_exclusive() };
                }
                return None;
            }
        }
        Some(Held::All(shards))
    }

    /// How many shards are held.
    pub fn len(&self) -> usize {
        match self {
            Held::Few(guards) => guards.len(),
            Held::All(shards) => shards.len(),
        }
    }

    /// Where `shard` (an index into the database's shards) is among the held ones.
    pub fn slot_of(&self, shard: usize) -> Option<usize> {
        match self {
            Held::Few(guards) => guards.iter().position(|(s, _)| *s == shard),
            Held::All(shards) => (shard < shards.len()).then_some(shard),
        }
    }

    /// The shard index of the held shard at `slot`.
    pub fn shard_index(&self, slot: usize) -> usize {
        match self {
            Held::Few(guards) => guards[slot].0,
            Held::All(_) => slot,
        }
    }

    pub fn get(&self, slot: usize) -> &Shard {
        match self {
            Held::Few(guards) => &guards[slot].1,
            // SAFETY: this value holds every shard's exclusive lock (`all`/`try_all`) until it
            // drops, so no one else reads or writes the table; the shared borrow of `self` rules
            // out a `&mut` from `get_mut` for as long as the returned one lives.
            Held::All(shards) => unsafe { &*shards[slot].data_ptr() },
        }
    }

    pub fn get_mut(&mut self, slot: usize) -> &mut Shard {
        match self {
            Held::Few(guards) => &mut guards[slot].1,
            // SAFETY: as in `get`; the exclusive borrow of `self` makes this the only reference
            // to the table for as long as it lives.
            Held::All(shards) => unsafe { &mut *shards[slot].data_ptr() },
        }
    }

    /// Every held shard with its index, ascending.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &Shard)> + use<'_, 'a> {
        (0..self.len()).map(move |slot| (self.shard_index(slot), self.get(slot)))
    }

    /// Calls `f` with every held shard, ascending.
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut Shard)) {
        for slot in 0..self.len() {
            f(self.get_mut(slot));
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Held::All(shards) = self {
            for shard in shards.iter() {
                // SAFETY: `all`/`try_all` locked every shard exclusively for this value, which
                // releases each exactly once, here; no reference from `get`/`get_mut` outlives
                // the value.
                unsafe { shard.raw().unlock_exclusive() };
            }
        }
    }
}
