//! The shards a [`super::Locked`] view holds, each by its raw exclusive lock (no guard objects:
//! for a whole database, a guard each built into a vector cost about twice the instructions).
//!
//! Two ways of locking, and why they cannot deadlock:
//! - **In order** (a command's keys, a whole database, several databases): shards (then
//!   databases) ascending. Only the first is waited for; the others are tried, and when one is
//!   taken everything is released, that one is waited for, and the round starts again.
//! - **As needed** (a script or an EXEC, [`Held::as_needed`]): shards in the order they are
//!   reached, each waited for, all kept to the end (two-phase locking, so the whole is atomic).
//!   Only the holder of the script engine locks this way (EXEC takes the engine for this), so
//!   there is at most one such locker, and every in-order locker waits for it holding nothing.
//!   Taking only the shards touched (mostly one to a few of 256) instead of the whole database
//!   saves ~500 atomic operations per script call or EXEC, the largest cost of a short script
//!   once Lua ran it, and about half of a short EXEC's.

use super::{Shard, SHARDS};
use parking_lot::lock_api::RawRwLock as _;
use parking_lot::RwLock;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub(super) struct Held<'a> {
    shards: &'a [RwLock<Shard>],
    set: Set,
}

enum Set {
    /// These shard indexes, ascending; a slot is a position in the list.
    Few(SmallVec<[usize; 2]>),
    /// Every shard; a slot is a shard index.
    All,
    /// Bit `i % 64` of word `i / 64`: shard `i` is held. More are taken as they are reached; a
    /// slot is a shard index.
    AsNeeded([AtomicU64; SHARDS / 64]),
}

/// The raw lock of `shard`.
fn raw(shard: &RwLock<Shard>) -> &parking_lot::RawRwLock {
    // SAFETY: `raw` only exposes the lock. Every lock taken through it here is recorded in a
    // `Held` and released exactly once by its `Drop` (or by the round that took it, before it
    // returns); the data is reached only through a `Held` that holds the lock.
    unsafe { shard.raw() }
}

/// Locks `shards[i]` for each `i` of `indexes` (ascending, no repeats): the first waited for
/// when `wait_first`, every other only tried. `Err(i)`: shard `i` was held by someone; nothing is
/// held then.
fn try_round(
    shards: &[RwLock<Shard>],
    indexes: impl Iterator<Item = usize> + Clone,
    wait_first: bool,
) -> Result<(), usize> {
    for (n, i) in indexes.clone().enumerate() {
        let lock = raw(&shards[i]);
        if n == 0 && wait_first {
            lock.lock_exclusive();
        } else if !lock.try_lock_exclusive() {
            release(shards, indexes.take(n));
            return Err(i);
        }
    }
    Ok(())
}

/// Releases the locks of `shards[i]`, `i` in `indexes`, which the caller took.
fn release(shards: &[RwLock<Shard>], indexes: impl Iterator<Item = usize>) {
    for i in indexes {
        // SAFETY: the caller locked each of these exclusively and releases it once, here.
        unsafe { raw(&shards[i]).unlock_exclusive() };
    }
}

/// Locks `indexes` of `shards` in order, backing off from a held one (see the module
/// documentation), however long it takes.
fn lock_in_order(shards: &[RwLock<Shard>], indexes: impl Iterator<Item = usize> + Clone) {
    while let Err(taken) = try_round(shards, indexes.clone(), true) {
        wait_for(&shards[taken]);
    }
}

/// Waits until `shard` is free, holding nothing (the back-off of an in-order locker).
fn wait_for(shard: &RwLock<Shard>) {
    let lock = raw(shard);
    lock.lock_exclusive();
    // SAFETY: locked on the line above, by this thread, for nothing else.
    unsafe { lock.unlock_exclusive() };
}

impl<'a> Held<'a> {
    /// Locks the shards `indexes` (ascending, no repeats) in order.
    pub fn few(shards: &'a [RwLock<Shard>], indexes: SmallVec<[usize; 2]>) -> Self {
        lock_in_order(shards, indexes.iter().copied());
        Held {
            shards,
            set: Set::Few(indexes),
        }
    }

    /// Locks the shards `indexes` (ascending, no repeats) if none is held, without waiting.
    pub fn try_few(shards: &'a [RwLock<Shard>], indexes: SmallVec<[usize; 2]>) -> Option<Self> {
        try_round(shards, indexes.iter().copied(), false).ok()?;
        Some(Held {
            shards,
            set: Set::Few(indexes),
        })
    }

    /// Locks one shard (nothing else is held, so nothing to back off from).
    pub fn one(shards: &'a [RwLock<Shard>], index: usize) -> Self {
        raw(&shards[index]).lock_exclusive();
        Held {
            shards,
            set: Set::Few(smallvec::smallvec![index]),
        }
    }

    /// Locks one shard if it is free, without waiting.
    pub fn try_one(shards: &'a [RwLock<Shard>], index: usize) -> Option<Self> {
        raw(&shards[index]).try_lock_exclusive().then(|| Held {
            shards,
            set: Set::Few(smallvec::smallvec![index]),
        })
    }

    /// Locks every shard, in order.
    pub fn all(shards: &'a [RwLock<Shard>]) -> Self {
        lock_in_order(shards, 0..shards.len());
        Held {
            shards,
            set: Set::All,
        }
    }

    /// Locks the whole database if no shard of it is held by anyone, without waiting.
    pub fn all_if_free(shards: &'a [RwLock<Shard>]) -> Option<Self> {
        try_round(shards, 0..shards.len(), false).ok()?;
        Some(Held {
            shards,
            set: Set::All,
        })
    }

    /// Holds nothing yet; each shard is locked when first reached (a script's or an EXEC's view:
    /// see the module documentation for why only the engine's holder may lock this way).
    pub fn as_needed(shards: &'a [RwLock<Shard>]) -> Self {
        debug_assert_eq!(shards.len(), SHARDS);
        Held {
            shards,
            set: Set::AsNeeded(Default::default()),
        }
    }

    /// Makes sure `shard` is held (only ever needed for [`Set::AsNeeded`]): tried first, then
    /// waited for off the tokio worker (its holder is a command in flight).
    #[inline(never)]
    fn reach(&self, shard: usize) {
        let Set::AsNeeded(taken) = &self.set else {
            return;
        };
        let (word, bit) = (&taken[shard / 64], 1u64 << (shard % 64));
        let bits = word.load(Relaxed);
        if bits & bit == 0 {
            let lock = raw(&self.shards[shard]);
            if !lock.try_lock_exclusive() {
                crate::worker::off_worker(|| lock.lock_exclusive());
            }
            word.store(bits | bit, Relaxed);
        }
    }

    /// Makes sure every shard is held (a whole-database command in a script or EXEC).
    fn reach_all(&self) {
        if matches!(self.set, Set::AsNeeded(_)) {
            (0..self.shards.len()).for_each(|shard| self.reach(shard));
        }
    }

    /// A slot of `Few` or `All` is held by construction (out of range panics on indexing); one of
    /// `AsNeeded` only once reached (every slot handed out by `slot_of` or `len` is).
    #[inline]
    fn check_held(&self, shard: usize) {
        if let Set::AsNeeded(taken) = &self.set {
            let reached = taken[shard / 64].load(Relaxed) & (1 << (shard % 64)) != 0;
            assert!(reached, "shard {shard} used without its lock");
        }
    }

    /// How many shards are held (a script's view takes them all first).
    pub fn len(&self) -> usize {
        match &self.set {
            Set::Few(indexes) => indexes.len(),
            Set::All => self.shards.len(),
            Set::AsNeeded(_) => {
                self.reach_all();
                self.shards.len()
            }
        }
    }

    /// The slot of the one shard held, when exactly one is (a single-key command's own lock).
    #[inline]
    pub fn single(&self) -> Option<usize> {
        match &self.set {
            Set::Few(indexes) if indexes.len() == 1 => Some(0),
            _ => None,
        }
    }

    /// Where `shard` (an index into the database's shards) is among the held ones; a script's
    /// view locks it now if it had not yet.
    #[inline]
    pub fn slot_of(&self, shard: usize) -> Option<usize> {
        match &self.set {
            Set::Few(indexes) => indexes.iter().position(|&s| s == shard),
            Set::All => (shard < self.shards.len()).then_some(shard),
            Set::AsNeeded(_) => {
                self.reach(shard);
                Some(shard)
            }
        }
    }

    /// The shard index of the held shard at `slot`.
    #[inline]
    pub fn shard_index(&self, slot: usize) -> usize {
        match &self.set {
            Set::Few(indexes) => indexes[slot],
            Set::All | Set::AsNeeded(_) => slot,
        }
    }

    #[inline]
    pub fn get(&self, slot: usize) -> &Shard {
        let shard = self.shard_index(slot);
        self.check_held(shard);
        // SAFETY: this value holds the shard's exclusive lock (`check_held`) until it drops, so
        // no one else reads or writes the table; the shared borrow of `self` rules out a `&mut`
        // from `get_mut` for as long as the returned one lives.
        unsafe { &*self.shards[shard].data_ptr() }
    }

    #[inline]
    pub fn get_mut(&mut self, slot: usize) -> &mut Shard {
        let shard = self.shard_index(slot);
        self.check_held(shard);
        // SAFETY: as in `get`; the exclusive borrow of `self` makes this the only reference to
        // the table for as long as it lives.
        unsafe { &mut *self.shards[shard].data_ptr() }
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
        match &self.set {
            // Locked for this value by its constructor; no reference from `get`/`get_mut`
            // outlives the value.
            Set::Few(indexes) => release(self.shards, indexes.iter().copied()),
            Set::All => release(self.shards, 0..self.shards.len()),
            Set::AsNeeded(taken) => {
                for (w, word) in taken.iter().enumerate() {
                    let mut bits = word.load(Relaxed);
                    while bits != 0 {
                        let shard = w * 64 + bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        // SAFETY: `reach` locked it for this value, recorded in `taken`.
                        unsafe { raw(&self.shards[shard]).unlock_exclusive() };
                    }
                }
            }
        }
    }
}

/// Locks several databases' views in order (ascending database indexes), each with `lock`; a
/// database after the first is only tried (`try_lock`), and on failure everything is released
/// and that database is waited for (`lock`, then released) before the next round. For
/// multi-database commands (FLUSHALL, MOVE, SWAPDB), which must not wait holding a database
/// while a script or an EXEC holds part of the next.
pub fn in_order<T>(
    count: usize,
    mut lock: impl FnMut(usize) -> T,
    mut try_lock: impl FnMut(usize) -> Option<T>,
) -> SmallVec<[T; 2]> {
    'round: loop {
        let mut held = SmallVec::new();
        for n in 0..count {
            if n == 0 {
                held.push(lock(0));
            } else if let Some(view) = try_lock(n) {
                held.push(view);
            } else {
                drop(held);
                drop(lock(n));
                continue 'round;
            }
        }
        return held;
    }
}
