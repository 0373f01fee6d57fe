//! The keyspace: each database's keys in [`SHARDS`] shards, each a table behind its own lock
//! ([`shard`]). Callers lock the shards of the keys they touch (ascending shard order, so
//! multi-key commands are atomic and deadlock-free, see [`held`]) and work on a [`Locked`] view;
//! nobody outside this module sees the tables.

pub mod blocking;
pub mod changes;
pub mod encoding;
pub mod eviction;
pub mod expiry;
pub mod field_expiry;
pub mod geohash;
pub mod hash;
mod held;
pub use held::in_order;
pub mod compact;
pub mod digest;
pub mod hyperloglog;
pub mod json;
pub mod lazyfree;
pub mod packed;
pub mod pause;
pub mod ranked;
pub mod scan;
pub mod set;
mod shard;
pub mod stream;
pub mod stream_group;
pub mod stream_node;
pub mod swap;
pub mod tags;
mod timed_packed;
pub mod value;
pub mod zset;

use blocking::Waiters;
use changes::{Change, Observer};
use hashbrown::hash_table::Entry as Slot;
use held::Held;
use parking_lot::RwLock;
use shard::{Hasher, Node, Shard};
use smallvec::SmallVec;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

pub use compact::CompactBytes;
pub use value::Value;

/// Number of shards. More shards make SCAN's per-call work smaller and contention rarer; locking all
/// of them (MULTI/EXEC, FLUSHALL) stays cheap.
const SHARDS: usize = 256;

/// One shard's version counter, alone on its cache line.
#[derive(Default)]
#[repr(align(64))]
struct ShardVersion(AtomicU64);

/// The shard of a key of hash `hash`: bits below the top 7, which the table keeps for its own
/// use (the low bits choose the key's place inside the shard).
fn shard_for(hash: u64) -> usize {
    ((hash << 7) >> (64 - SHARDS.trailing_zeros())) as usize
}

/// A key's hash and the index of its shard among the shards a [`Locked`] view holds.
struct Spot {
    hash: u64,
    slot: usize,
}

/// Bits of [`Entry::stamp`] holding the access clock; one bit above them says the value outgrew
/// its compact encoding ([`encoding`]); the rest hold the version.
const CLOCK_BITS: u32 = 24;
const CLOCK_MASK: u64 = (1 << CLOCK_BITS) - 1;
const OUTGROWN_BIT: u64 = 1 << CLOCK_BITS;
const VERSION_SHIFT: u32 = CLOCK_BITS + 1;

/// A stored value with its expiry, a version that changes on every write (for WATCH) and the time
/// of its last access (for LRU eviction and OBJECT IDLETIME).
#[derive(Debug)]
pub struct Entry {
    pub value: Value,
    /// Unix time in ms at which the key expires; 0 means never. Set through [`Locked::set`] and
    /// [`Locked::set_expiry`], which keep the shard's expiry bound.
    expire_at: u64,
    /// Version (high 39 bits), the outgrown bit and the access clock (low 24 bits) share one
    /// word, so they cost no memory. Versions wrap after 2^39 writes; the clock, in seconds as
    /// Redis's LRU clock, after 194 days.
    stamp: u64,
}

impl Entry {
    /// Unix time in ms at which the key expires; 0 means never.
    pub fn expire_at(&self) -> u64 {
        self.expire_at
    }

    /// Moves a set expiry later, to `at` if that is later (a key without expiry keeps none). Only
    /// ever later, so the shard's expiry bound stays early enough without being told.
    pub fn delay_expiry(&mut self, at: u64) {
        if self.expire_at != 0 {
            self.expire_at = self.expire_at.max(at);
        }
    }

    pub fn is_expired(&self, now: u64) -> bool {
        self.expire_at != 0 && self.expire_at <= now
    }

    /// Changes on every write to the key.
    pub fn version(&self) -> u64 {
        self.stamp >> VERSION_SHIFT
    }

    /// True once the value had more elements than Redis's compact encoding of its type holds:
    /// Redis never converts back, so OBJECT ENCODING keeps naming the large encoding. For a
    /// string: Redis holds it as text, not as an integer (INCRBYFLOAT's result).
    pub fn outgrown(&self) -> bool {
        self.stamp & OUTGROWN_BIT != 0
    }

    /// Sets or clears [`Self::outgrown`]: for a value moved or copied to a new entry (RENAME,
    /// MOVE, COPY keep Redis's encoding), and for a string rewritten in place.
    pub fn set_outgrown(&mut self, on: bool) {
        if on {
            self.stamp |= OUTGROWN_BIT;
        } else {
            self.stamp &= !OUTGROWN_BIT;
        }
    }

    /// Approximate seconds since the key was last read or written (`now` in Unix ms).
    pub fn idle_secs(&self, now: u64) -> u64 {
        clock(now).wrapping_sub(self.stamp) & CLOCK_MASK
    }

    fn touch(&mut self, now: u64) {
        self.stamp = (self.stamp & !CLOCK_MASK) | clock(now);
    }

    fn set_version(&mut self, version: u64) {
        self.stamp = (version << VERSION_SHIFT) | (self.stamp & (CLOCK_MASK | OUTGROWN_BIT));
    }
}

/// The access clock of Unix time `now_ms`: seconds, modulo 2^24.
fn clock(now_ms: u64) -> u64 {
    (now_ms / 1000) & CLOCK_MASK
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    crate::clock::unix_ms()
}

/// Every database's keyspace plus the bookkeeping shared by all of them (expiry counters, the
/// memory limit). Databases are numbered `0..databases`; each one's keyspace is created on first
/// use, so the empty ones cost one empty slot each.
pub struct Store {
    dbs: Box<[OnceLock<Keyspace>]>,
    /// One hasher for every database: a key lands in the same shard of each, which lets SWAPDB
    /// swap two databases shard by shard.
    hasher: Hasher,
    pub expired_keys: AtomicU64,
    /// Hash fields removed because their time was up (INFO's `expired_subkeys`).
    pub expired_fields: AtomicU64,
    pub expired_stm_entries: AtomicU64,
    /// `maxmemory` and what to evict when it is reached.
    pub memory: eviction::MemoryLimit,
    /// The element counts past which a value has outgrown its compact encoding.
    pub encoding_limits: encoding::Limits,
    /// True while keyspace notifications are on or a client tracks keys: only then are changes
    /// noted (see [`changes`]). Set by `crate::events`.
    pub listening: AtomicBool,
    /// Off after `DEBUG SET-ACTIVE-EXPIRE 0`: only reads expire keys then (lazy expiry).
    pub active_expire: AtomicBool,
    /// CLIENT PAUSE: while set, keys are neither expired nor evicted.
    pub pause: pause::Pause,
    /// Set while this node follows a primary: expired keys are hidden from reads but not
    /// deleted here; the primary's DEL removes them, as on a Redis replica.
    pub replica_keeps_expired: AtomicBool,
    /// Who hears of every write besides keyspace notifications: the replication stream, which
    /// the append-only file reads too ([`changes::Observer`]). Set once, as the server starts;
    /// none in a store of its own (tests, a load before the server exists).
    observer: OnceLock<Attached>,
    /// Blocked clients woken and owed their rerun, in any database: each connection lets them
    /// run before its next command (see [`blocking`]).
    pub handoff: Arc<blocking::Handoff>,
    /// INFO's `expired_stale_perc`: the share of swept keys found expired, smoothed over the
    /// expiry cycle's ticks as Redis smooths it (an `f64`'s bits).
    expired_stale: AtomicU64,
}

/// The store's observer with the flag it raises while it listens (see [`Observer::gate`]).
struct Attached {
    gate: Arc<AtomicBool>,
    observer: Arc<dyn Observer>,
}

/// One database: its sharded keys and what must change with them.
pub struct Keyspace {
    shards: Box<[RwLock<Shard>]>,
    /// The store's hasher: names the shard of a key and its place in that shard's table.
    hasher: Hasher,
    /// Per shard, the last version handed out there. A key always lives in the same shard, so
    /// versions unique per shard are unique per key; and only that shard's lock holder writes its
    /// counter, so two threads writing different shards never share a cache line.
    versions: Box<[ShardVersion]>,
    /// Tag → keys, for values found under other names than their key (see [`tags`]), kept exact
    /// by every insert and removal below.
    pub tags: tags::TagIndex,
    /// Clients blocked in BLPOP/BRPOP/BLMOVE on this database's keys, woken when a list appears
    /// or grows at their key.
    pub waiters: Arc<Waiters>,
    /// Bumped when SWAPDB replaces the contents: WATCH cannot rely on versions across a swap
    /// (each database numbers its own versions).
    pub swaps: AtomicU64,
}

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}

/// Redis's default number of databases.
pub const DEFAULT_DATABASES: usize = 16;

impl Store {
    pub fn new() -> Store {
        Store::with_databases(DEFAULT_DATABASES)
    }

    pub fn with_databases(count: usize) -> Store {
        let store = Store {
            dbs: (0..count.max(1)).map(|_| OnceLock::new()).collect(),
            hasher: Hasher::new(),
            expired_keys: AtomicU64::new(0),
            expired_fields: AtomicU64::new(0),
            expired_stm_entries: AtomicU64::new(0),
            memory: Default::default(),
            encoding_limits: Default::default(),
            listening: AtomicBool::new(false),
            active_expire: true.into(),
            pause: Default::default(),
            replica_keeps_expired: AtomicBool::new(false),
            observer: OnceLock::new(),
            handoff: Default::default(),
            expired_stale: AtomicU64::new(0),
        };
        store.db(0); // the one nearly every client uses
        store
    }

    /// Folds one expiry tick into `expired_stale_perc`: `expired` of the `sampled` keys it swept.
    pub fn note_stale_share(&self, expired: usize, sampled: usize) {
        if sampled == 0 {
            return;
        }
        let current = expired as f64 / sampled as f64;
        let old = f64::from_bits(self.expired_stale.load(Ordering::Relaxed));
        let smoothed = current * 0.05 + old * 0.95;
        self.expired_stale
            .store(smoothed.to_bits(), Ordering::Relaxed);
    }

    /// INFO's `expired_stale_perc`, in percent.
    pub fn expired_stale_percent(&self) -> f64 {
        f64::from_bits(self.expired_stale.load(Ordering::Relaxed)) * 100.0
    }

    /// True while expired keys must stay stored (hidden from reads): during CLIENT PAUSE, and
    /// on a replica, whose primary deletes them. One relaxed load each otherwise.
    #[inline]
    pub fn keeps_expired(&self) -> bool {
        self.replica_keeps_expired.load(Ordering::Relaxed) || self.pause.freezes_keyspace()
    }

    /// Number of databases (valid indexes are below it).
    pub fn databases(&self) -> usize {
        self.dbs.len()
    }

    /// Has `observer` hear of every write from now on (the server, once it has built the
    /// replication stream). Only the first call counts: the store has one observer for its life.
    pub fn observe(&self, observer: Arc<dyn Observer>) {
        let gate = observer.gate();
        let _ = self.observer.set(Attached { gate, observer });
    }

    /// The observer, while it wants to hear: a few instructions and no call otherwise, as this is
    /// on every write and every lock's release.
    #[inline]
    fn listening_observer(&self) -> Option<&dyn Observer> {
        let attached = self.observer.get()?;
        attached
            .gate
            .load(Ordering::Relaxed)
            .then_some(&*attached.observer)
    }

    /// Notes `change` at `key` of database `db` when someone listens, and tells the observer of a
    /// write while it listens: the cost on the write path otherwise is a few loads.
    #[inline]
    pub fn noting(&self, db: usize, key: &[u8], change: Change) {
        if self.listening.load(Ordering::Relaxed) {
            changes::note(db, key, change);
        }
        if !matches!(change, Change::Missed) {
            if let Some(observer) = self.listening_observer() {
                observer.changed(db, key, change);
            }
        }
    }

    /// The keyspace of database `db` (`db` already checked against [`Store::databases`]), created
    /// on first use.
    #[inline]
    pub fn db(&self, db: usize) -> &Keyspace {
        self.dbs[db].get_or_init(|| Keyspace::new(&self.hasher, &self.handoff))
    }

    /// The keyspace of `db` if it was ever used: reads of a never-used database need not create it.
    pub fn existing(&self, db: usize) -> Option<&Keyspace> {
        self.dbs.get(db).and_then(OnceLock::get)
    }

    /// Every database created so far, with its index.
    pub fn existing_dbs(&self) -> impl Iterator<Item = (usize, &Keyspace)> {
        self.dbs
            .iter()
            .enumerate()
            .filter_map(|(i, slot)| slot.get().map(|space| (i, space)))
    }

    pub fn shard_count(&self) -> usize {
        SHARDS
    }

    /// Locks the shard of one key of database `db`.
    #[inline]
    pub fn lock_one(&self, db: usize, key: &[u8]) -> Locked<'_> {
        let space = self.db(db);
        let held = Held::one(&space.shards, space.shard_of(key));
        Locked::new(self, db, space, held)
    }

    /// Locks the shards of all `keys` of database `db`, in ascending shard order.
    pub fn lock<K: AsRef<[u8]>>(&self, db: usize, keys: &[K]) -> Locked<'_> {
        let space = self.db(db);
        let mut shards: SmallVec<[usize; 2]> =
            keys.iter().map(|k| space.shard_of(k.as_ref())).collect();
        shards.sort_unstable();
        shards.dedup();
        Locked::new(self, db, space, Held::few(&space.shards, shards))
    }

    /// Locks the shards of all `keys` of database `db` if none is held by anyone, without waiting.
    pub fn try_lock<K: AsRef<[u8]>>(&self, db: usize, keys: &[K]) -> Option<Locked<'_>> {
        let space = self.db(db);
        let mut shards: SmallVec<[usize; 2]> =
            keys.iter().map(|k| space.shard_of(k.as_ref())).collect();
        shards.sort_unstable();
        shards.dedup();
        let held = Held::try_few(&space.shards, shards)?;
        Some(Locked::new(self, db, space, held))
    }

    /// Locks every shard of database `db`, in order: for FLUSHDB and whole-database reads.
    pub fn lock_all(&self, db: usize) -> Locked<'_> {
        let space = self.db(db);
        Locked::new(self, db, space, Held::all(&space.shards))
    }

    /// Locks every shard of database `db` if none is held by anyone else, without waiting.
    pub fn try_lock_all(&self, db: usize) -> Option<Locked<'_>> {
        let space = self.db(db);
        let held = Held::all_if_free(&space.shards)?;
        Some(Locked::new(self, db, space, held))
    }

    /// Locks each database of `dbs` (ascending, no repeats) whole, backing off as
    /// [`held::in_order`] says (FLUSHALL).
    pub fn lock_dbs(&self, dbs: &[usize]) -> SmallVec<[Locked<'_>; 2]> {
        held::in_order(
            dbs.len(),
            |n| self.lock_all(dbs[n]),
            |n| self.try_lock_all(dbs[n]),
        )
    }

    /// A view of database `db` that locks each shard as it is first reached and keeps it: only
    /// for the holder of the script engine, a script or an EXEC (see [`held`]'s documentation).
    pub fn lock_as_needed(&self, db: usize) -> Locked<'_> {
        let space = self.db(db);
        Locked::new(self, db, space, Held::as_needed(&space.shards))
    }

    /// Locks one shard of database `db` by index if no one holds it, without waiting (the
    /// active expiry cycle, which runs on a tokio worker and must not wait behind a script or an
    /// EXEC that holds the whole database: it skips the shard until its next pass).
    pub fn try_lock_shard(&self, db: usize, shard: usize) -> Option<Locked<'_>> {
        let space = self.db(db);
        let held = Held::try_one(&space.shards, shard)?;
        Some(Locked::new(self, db, space, held))
    }

    /// Locks one shard of database `db` by index (SCAN, KEYS, the active expiry cycle).
    pub fn lock_shard(&self, db: usize, shard: usize) -> Locked<'_> {
        let space = self.db(db);
        Locked::new(self, db, space, Held::one(&space.shards, shard))
    }

    /// Number of keys in every database, including expired ones not reclaimed yet.
    pub fn len(&self) -> usize {
        self.existing_dbs().map(|(_, space)| space.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of keys of database `db`, including expired ones not reclaimed yet (as DBSIZE).
    pub fn db_len(&self, db: usize) -> usize {
        self.existing(db).map_or(0, Keyspace::len)
    }

    /// Grows with every write anywhere (the sum of the shard versions). Only for cold paths: it
    /// reads every shard's counter.
    pub(crate) fn writes_so_far(&self) -> u64 {
        self.existing_dbs()
            .flat_map(|(_, space)| space.versions.iter())
            .map(|v| v.0.load(Ordering::Relaxed))
            .sum()
    }
}

impl Keyspace {
    fn new(hasher: &Hasher, handoff: &Arc<blocking::Handoff>) -> Keyspace {
        Keyspace {
            shards: (0..SHARDS)
                .map(|_| RwLock::new(Shard::new(hasher.clone())))
                .collect(),
            hasher: hasher.clone(),
            versions: (0..SHARDS).map(|_| ShardVersion::default()).collect(),
            tags: Default::default(),
            waiters: Arc::new(Waiters::new(handoff.clone())),
            swaps: AtomicU64::new(0),
        }
    }

    pub fn shard_of(&self, key: &[u8]) -> usize {
        shard_for(self.hasher.hash_one(key))
    }

    /// Number of keys, including expired ones not reclaimed yet (as Redis's DBSIZE).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read().len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of keys with an expiry set, their average time to live in ms, and the number of
    /// hashes with field TTLs (INFO keyspace's `expires`, `avg_ttl`, `subexpiry`).
    pub fn expiry_stats(&self, now: u64) -> (usize, u64, usize) {
        let (mut count, mut total, mut timed) = (0usize, 0u128, 0usize);
        for shard in self.shards.iter() {
            for node in shard.read().iter() {
                if matches!(&node.entry().value, Value::Hash(h) if h.has_ttls()) {
                    timed += 1;
                }
                let at = node.entry().expire_at;
                if at != 0 {
                    count += 1;
                    total += u128::from(at.saturating_sub(now));
                }
            }
        }
        let avg = if count == 0 {
            0
        } else {
            (total / count as u128) as u64
        };
        (count, avg, timed)
    }

    /// The next version of `shard`. Callers hold that shard's write lock, so a plain load and
    /// store cannot lose an update.
    fn bump_version(&self, shard: usize) -> u64 {
        let counter = &self.versions[shard].0;
        let next = counter.load(Ordering::Relaxed) + 1;
        counter.store(next, Ordering::Relaxed);
        next
    }

    /// Bookkeeping for a value leaving the keyspace (deleted, overwritten, expired, flushed).
    fn on_remove(&self, key: &[u8], value: &Value) {
        let tags = value.tags();
        if tags.iter().any(Option::is_some) {
            self.tags.remove(key, &tags);
        }
        // XREADGROUP readers blocked on a stream that goes answer at once (NOGROUP or WRONGTYPE),
        // as in Redis 7.2; XREAD readers wait on.
        if let Value::Stream(_) = value {
            self.waiters.signal(key);
        }
    }

    /// Bookkeeping for a value removed because its time was up.
    fn count_expired(&self, store: &Store, db: usize, key: &[u8], value: &Value) {
        store.noting(db, key, Change::Expired);
        self.on_remove(key, value);
        store.expired_keys.fetch_add(1, Ordering::Relaxed);
        if matches!(value, Value::Stm(_)) {
            store.expired_stm_entries.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Bookkeeping for a value entering the keyspace.
    fn on_insert(&self, key: &[u8], value: &Value) {
        let tags = value.tags();
        if tags.iter().any(Option::is_some) {
            self.tags.insert(key, &tags);
        }
        match value {
            // A list, sorted set or stream created by any command (LPUSH, ZADD, XADD, RENAME, MOVE,
            // …) may serve a blocked client; for a stream the first is woken and passes the turn
            // on (see `Waiters::wake_next`).
            Value::List(_) | Value::ZSet(_) | Value::Stream(_) => self.waiters.signal(key),
            _ => {}
        }
    }
}

/// Write access to the keys of some locked shards. Expired keys are removed lazily as they are met.
pub struct Locked<'a> {
    store: &'a Store,
    space: &'a Keyspace,
    db: usize,
    held: Held<'a>,
    /// The command's clock: one reading per lock, as Redis caches the time per command.
    pub now: u64,
    /// Whether reads refresh a key's access clock: off for a client in CLIENT NO-TOUCH mode.
    pub touch: bool,
}

impl Drop for Locked<'_> {
    /// The observer takes a command's writes while its shards are still locked, so the
    /// replication stream has writes to one key in the order they were applied.
    fn drop(&mut self) {
        if let Some(observer) = self.store.listening_observer() {
            observer.releasing(&|key| self.expiry_of(key));
        }
    }
}

impl<'a> Locked<'a> {
    /// The absolute expiry (Unix ms, 0: none) of the live key `key` if its shard is held here;
    /// a pure read: nothing is noted, touched or removed.
    pub fn expiry_of(&self, key: &[u8]) -> Option<u64> {
        let hash = self.space.hasher.hash_one(key);
        let slot = self.held.slot_of(shard_for(hash))?;
        self.held
            .get(slot)
            .find(hash, key)
            .map(|node| node.entry())
            .filter(|e| !e.is_expired(self.now))
            .map(|e| e.expire_at)
    }

    /// The thresholds of the compact forms, as configured now.
    pub fn limits(&self) -> &'a encoding::Limits {
        &self.store.encoding_limits
    }

    fn new(store: &'a Store, db: usize, space: &'a Keyspace, held: Held<'a>) -> Self {
        Locked {
            store,
            space,
            db,
            held,
            now: crate::clock::command_time_ms(),
            touch: true,
        }
    }

    pub fn store(&self) -> &'a Store {
        self.store
    }

    /// The database these shards belong to.
    pub fn keyspace(&self) -> &'a Keyspace {
        self.space
    }

    /// The index of that database.
    pub fn db(&self) -> usize {
        self.db
    }

    /// Hashes `key` once and finds its shard's guard: every lookup below reuses the hash.
    fn spot(&self, key: &[u8]) -> Spot {
        let hash = self.space.hasher.hash_one(key);
        // A handler that touches a key it did not lock is a bug in that handler, not bad input.
        let slot = self
            .held
            .slot_of(shard_for(hash))
            .expect("key's shard was not locked by its command");
        Spot { hash, slot }
    }

    /// The entry at `key` as it is: no expiry check, no access or version recorded (for tests
    /// that set up an entry's state by hand).
    #[cfg(test)]
    pub(crate) fn raw_entry_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let spot = self.spot(key);
        let found = self.shard_at(&spot).occupied(spot.hash, key)?;
        Some(found.into_mut().entry_mut())
    }

    fn shard_at(&mut self, spot: &Spot) -> &mut Shard {
        self.held.get_mut(spot.slot)
    }

    /// The live entry at `key` and the shard it lives in; an expired one is removed on the way
    /// (one probe either way).
    fn live_entry(&mut self, key: &[u8]) -> Option<(usize, &mut Entry)> {
        let spot = self.spot(key);
        self.live_entry_at(spot, key)
    }

    /// [`Locked::live_entry`] with the key's spot already computed.
    fn live_entry_at(&mut self, spot: Spot, key: &[u8]) -> Option<(usize, &mut Entry)> {
        let (store, space, db, now) = (self.store, self.space, self.db, self.now);
        let shard = self.held.shard_index(spot.slot);
        // CLIENT PAUSE keeps expired keys until it ends; a replica until its primary's DEL.
        let keep = store.keeps_expired();
        match self
            .shard_at(&spot)
            .live(spot.hash, key, |n| n.entry().is_expired(now), keep)?
        {
            Ok(node) => Some((shard, node.entry_mut())),
            Err(expired) => {
                if let Some(node) = expired {
                    space.count_expired(store, db, node.name(), &node.entry().value);
                }
                None
            }
        }
    }

    /// The live entry at `key` (a read: its access clock moves).
    pub fn get(&mut self, key: &[u8]) -> Option<&Entry> {
        let (store, db, now, touch) = (self.store, self.db, self.now, self.touch);
        match self.live_entry(key) {
            Some((_, e)) => {
                if touch {
                    e.touch(now);
                }
                Some(&*e)
            }
            None => {
                store.noting(db, key, Change::Missed);
                None
            }
        }
    }

    /// Reports the value at `key` in its large encoding from now on, as Redis's in-place
    /// conversions that change no content do (SORT turns a sorted set into a skiplist): not a
    /// write, so the version stays (WATCH sees nothing).
    pub fn mark_outgrown(&mut self, key: &[u8]) {
        if let Some((_, e)) = self.live_entry(key) {
            e.set_outgrown(true);
        }
    }

    /// The live entry at `key`, for a write: its version changes, so WATCH sees the write.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let spot = self.spot(key);
        self.get_mut_at(spot, key)
    }

    /// The live entry at `key` for a write that may turn out to change nothing: no version, no
    /// note, no access. A caller that did change it then calls [`Locked::get_mut`], so WATCH,
    /// tracking and the change count see the write only when there was one (Redis's BITFIELD
    /// skips `signalModifiedKey` and `dirty` when no field changed).
    pub fn get_mut_unversioned(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let spot = self.spot(key);
        self.live_entry_at(spot, key).map(|(_, e)| e)
    }

    /// Counts `n` writes more to `key`'s shard than the one that changed it, for a command Redis
    /// counts as several changes (BITFIELD adds one per field it changed to `dirty`): INFO's
    /// `rdb_changes_since_last_save` and the `save` rules see them.
    pub fn count_more_writes(&mut self, key: &[u8], n: u64) {
        let spot = self.spot(key);
        let shard = self.held.shard_index(spot.slot);
        for _ in 0..n {
            self.space.bump_version(shard);
        }
    }

    /// [`Locked::get_mut`] with the key's spot already computed.
    fn get_mut_at(&mut self, spot: Spot, key: &[u8]) -> Option<&mut Entry> {
        let (store, space, db, now) = (self.store, self.space, self.db, self.now);
        let touch = self.touch;
        self.live_entry_at(spot, key).map(|(shard, e)| {
            e.set_version(space.bump_version(shard));
            // Judged on the value as the previous write left it, before this one changes it.
            if !e.outgrown() && store.encoding_limits.outgrown(&e.value) {
                e.stamp |= OUTGROWN_BIT;
            }
            if touch {
                e.touch(now);
            }
            store.noting(db, key, Change::Written);
            e
        })
    }

    /// The live entry at `key` through a shared borrow (no lazy removal, no access recorded), so a
    /// command can hold several entries at once (SINTER and friends).
    pub fn peek(&self, key: &[u8]) -> Option<&Entry> {
        let spot = self.spot(key);
        let found = self
            .held
            .get(spot.slot)
            .find(spot.hash, key)
            .map(Node::entry)
            .filter(|e| !e.is_expired(self.now));
        if found.is_none() {
            self.store.noting(self.db, key, Change::Missed);
        }
        found
    }

    pub fn contains(&mut self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// True when `key` is stored, live or expired (a load's duplicate check).
    pub fn contains_stored(&mut self, key: &[u8]) -> bool {
        let spot = self.spot(key);
        self.shard_at(&spot).occupied(spot.hash, key).is_some()
    }

    /// Version of the live entry, or `None` when the key does not exist (for WATCH, which does
    /// not count as an access).
    pub fn version(&mut self, key: &[u8]) -> Option<u64> {
        self.get_untouched(key).map(Entry::version)
    }

    /// The live entry at `key` without refreshing its access clock: TYPE, EXISTS, TTL and WATCH
    /// look at a key without using it (Redis's `LOOKUP_NOTOUCH`).
    pub fn get_untouched(&mut self, key: &[u8]) -> Option<&Entry> {
        let (store, db) = (self.store, self.db);
        match self.live_entry(key) {
            Some((_, e)) => Some(&*e),
            None => {
                store.noting(db, key, Change::Missed);
                None
            }
        }
    }

    /// Stores `value` at `key`, replacing whatever was there; returns the old live entry. One hash
    /// and one probe: an existing key keeps its stored name, a new one is copied in.
    pub fn set(&mut self, key: &[u8], value: Value, expire_at: u64) -> Option<Entry> {
        let (store, space, db, now) = (self.store, self.space, self.db, self.now);
        let spot = self.spot(key);
        let mut entry = Entry {
            value,
            expire_at,
            stamp: 0,
        };
        entry.set_version(space.bump_version(self.held.shard_index(spot.slot)));
        entry.touch(now);
        let shard = self.shard_at(&spot);
        shard.note_expiry(expire_at);
        // A hash with field TTLs arriving whole (RESTORE, RENAME, MOVE, COPY, a load) is queued
        // afresh under its own key below: the queue time it carries is its old key's.
        let field_expiry = match &mut entry.value {
            Value::Hash(h) => {
                h.set_queued(0);
                h.earliest_ttl()
            }
            _ => None,
        };
        let replaced = match shard.slot(spot.hash, key) {
            Slot::Occupied(mut found) => {
                let node = found.get_mut();
                let old = std::mem::replace(node.entry_mut(), entry);
                let k = node.name();
                let live = !old.is_expired(now);
                if live {
                    space.on_remove(k, &old.value);
                } else {
                    space.count_expired(store, db, k, &old.value);
                }
                space.on_insert(k, &node.entry().value);
                store.noting(
                    db,
                    k,
                    if live {
                        Change::Written
                    } else {
                        Change::Created
                    },
                );
                Some((live, old))
            }
            Slot::Vacant(vacant) => {
                space.on_insert(key, &entry.value);
                store.noting(db, key, Change::Created);
                vacant.insert(Node::new(key, entry));
                None
            }
        };
        let shard = self.shard_at(&spot);
        if let Some((_, old)) = &replaced {
            shard.fields.forget(spot.hash, &old.value);
        }
        if let Some(at) = field_expiry {
            field_expiry::queue_hash(shard, spot.hash, key, at);
        }
        replaced.and_then(|(live, old)| live.then_some(old))
    }

    /// Sets the expiry of the live entry at `key` (Unix ms, 0: none), a write as with
    /// [`Locked::get_mut`]; returns the expiry it had, or None when there is no such key.
    pub fn set_expiry(&mut self, key: &[u8], at: u64) -> Option<u64> {
        let spot = self.spot(key);
        // Lowered first, whether or not the key is there: a bound only has to be early enough.
        self.shard_at(&spot).note_expiry(at);
        let entry = self.get_mut_at(spot, key)?;
        Some(std::mem::replace(&mut entry.expire_at, at))
    }

    /// Makes the live entry at `key` look last read `secs` seconds ago (RESTORE … IDLETIME),
    /// without counting as a write. The clock wraps as Redis's 24-bit LRU clock does.
    pub fn set_idle_secs(&mut self, key: &[u8], secs: u64) {
        let now = self.now;
        if let Some((_, entry)) = self.live_entry(key) {
            entry.stamp =
                (entry.stamp & !CLOCK_MASK) | (clock(now).wrapping_sub(secs) & CLOCK_MASK);
        }
    }

    /// Removes the live entry at `key`.
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        self.remove_as(key, Change::Removed)
    }

    /// Removes the live entry at `key` to make room (noted as an eviction, not a deletion).
    pub fn evict(&mut self, key: &[u8]) -> Option<Entry> {
        self.remove_as(key, Change::Evicted)
    }

    /// Names the event of a change whose name depends on the outcome (RENAME's `rename_from`,
    /// SET's extra `expire`…). A command that names one names all of its write events.
    pub fn notify(&self, class: u32, name: &'static str, key: &[u8]) {
        self.store
            .noting(self.db, key, Change::Event { class, name });
    }

    /// Says that this command changed nothing at `key` after all (SREM of a non-member, ZADD XX
    /// on missing members…): the write it noted is taken back, so neither its event is published
    /// nor the key invalidated for tracking clients, as in Redis.
    pub fn unchanged(&self, key: &[u8]) {
        if self
            .store
            .listening
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            changes::retract_write(self.db, key);
        }
    }

    fn remove_as(&mut self, key: &[u8], change: Change) -> Option<Entry> {
        let (store, space, db, now) = (self.store, self.space, self.db, self.now);
        let spot = self.spot(key);
        let node = self.shard_at(&spot).remove(spot.hash, key)?;
        if node.entry().is_expired(now) {
            space.count_expired(store, db, node.name(), &node.entry().value);
            return None;
        }
        space.on_remove(node.name(), &node.entry().value);
        store.noting(db, node.name(), change);
        Some(node.into_entry())
    }

    /// Keys held in the locked shards, including expired ones not reclaimed yet (as DBSIZE).
    pub fn stored_keys(&self) -> usize {
        self.held.iter().map(|(_, shard)| shard.len()).sum()
    }

    /// Calls `f` with every live key and entry of the locked shards (expired ones are skipped).
    pub fn for_each(&self, mut f: impl FnMut(&[u8], &Entry)) {
        self.for_each_stored(|name, entry| {
            if !entry.is_expired(self.now) {
                f(name, entry);
            }
        });
    }

    /// Calls `f` with every key and entry stored in the locked shards, expired ones not reclaimed
    /// yet included (DEBUG DIGEST, which sees the dataset as Redis's does).
    pub fn for_each_stored(&self, mut f: impl FnMut(&[u8], &Entry)) {
        for (_, shard) in self.held.iter() {
            for node in shard.iter() {
                f(node.name(), node.entry());
            }
        }
    }

    /// The live entries among `keys`, each with its key as stored.
    pub fn entries_of<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<(&[u8], &Entry)> {
        keys.iter()
            .filter_map(|key| {
                let key = key.as_ref();
                let hash = self.space.hasher.hash_one(key);
                let slot = self.held.slot_of(shard_for(hash))?;
                let node = self.held.get(slot).find(hash, key)?;
                (!node.entry().is_expired(self.now)).then(|| (node.name(), node.entry()))
            })
            .collect()
    }

    /// Like [`Locked::for_each`], for one of the locked shards only.
    pub fn for_each_in_shard(&self, shard: usize, mut f: impl FnMut(&[u8], &Entry)) {
        if let Some(slot) = self.held.slot_of(shard) {
            for node in self.held.get(slot).iter() {
                if !node.entry().is_expired(self.now) {
                    f(node.name(), node.entry());
                }
            }
        }
    }

    /// Calls `f` with every live value of one of the locked shards, to change how a value is held
    /// without changing what it holds (the idle STM pass compresses messages): no version, no
    /// keyspace note, no access time, as no client can tell the difference.
    pub fn for_each_value_in_shard_mut(&mut self, shard: usize, mut f: impl FnMut(&mut Value)) {
        let now = self.now;
        if let Some(slot) = self.held.slot_of(shard) {
            for node in self.held.get_mut(slot).iter_mut() {
                if !node.entry().is_expired(now) {
                    f(&mut node.entry_mut().value);
                }
            }
        }
    }

    /// Removes every key of the locked shards, and gives back their tables' memory as Redis's
    /// FLUSHALL does (a drained table keeps its capacity otherwise).
    pub fn clear(&mut self) {
        self.clear_with(drop);
    }

    /// [`Locked::clear`] for FLUSHALL/FLUSHDB ASYNC: the keys are gone at once, their memory is
    /// freed on the lazyfree thread (one object per key in INFO, as Redis counts a database).
    pub fn clear_lazily(&mut self) {
        let mut removed = Vec::new();
        self.clear_with(|node| removed.push(node));
        if !removed.is_empty() {
            let keys = removed.len() as u64;
            lazyfree::free_later(removed, keys);
        }
    }

    fn clear_with(&mut self, mut removed: impl FnMut(shard::Node)) {
        self.store.noting(self.db, b"", Change::Flushed);
        let space = self.space;
        self.held.for_each_mut(|shard| {
            for node in shard.drain() {
                space.on_remove(node.name(), &node.entry().value);
                removed(node);
            }
        });
    }

    /// No key of the locked shards expires before this (Unix ms; `u64::MAX`: none has an
    /// expiry). The expiry cycle sweeps a shard only once it has passed.
    pub fn expiry_bound(&self) -> u64 {
        self.held
            .iter()
            .map(|(_, shard)| shard.expiry_bound())
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Removes the expired keys of the locked shards whose expiry bound has passed (no other
    /// shard holds one) and says how many; their bounds are then exact. Nothing is removed while
    /// CLIENT PAUSE freezes the keyspace.
    pub fn remove_expired(&mut self) -> usize {
        let (store, space, db, now) = (self.store, self.space, self.db, self.now);
        if store.keeps_expired() {
            return 0;
        }
        let mut removed = 0;
        self.held.for_each_mut(|shard| {
            if shard.expiry_bound() <= now {
                removed += shard.remove_expired(now, |node| {
                    space.count_expired(store, db, node.name(), &node.entry().value);
                });
            }
        });
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(v: &str) -> Value {
        Value::Str(v.into())
    }

    #[test]
    fn keyspace_slots_stay_small() {
        // Every key pays for an Entry in its node (see `shard`), whatever its type: large values
        // are boxed so a string key does not pay for a hash's index map, and the access clock
        // shares a word with the version. The sizes reached, exactly, so that a regression
        // fails here.
        use std::mem::size_of;
        // Strings: 24 bytes, up to 22 bytes inline (a `Bytes` took 32 and a heap block).
        assert_eq!(size_of::<CompactBytes>(), 24);
        // The small forms of hashes, sets and sorted sets are held in the entry itself (one
        // exact buffer and a count), no larger than a string; a list's deque is boxed.
        assert_eq!(size_of::<value::Hash>(), 24);
        assert_eq!(size_of::<value::Set>(), 24);
        assert_eq!(size_of::<zset::ZSet>(), 24);
        assert_eq!(size_of::<Value>(), 32);
        assert_eq!(size_of::<Entry>(), 48);
        assert_eq!(
            size_of::<Node>(),
            8,
            "a table slot is a pointer to the key's node"
        );
    }

    #[test]
    fn set_get_remove() {
        let store = Store::new();
        let mut l = store.lock_one(0, b"a");
        assert!(l.set(b"a", string("1"), 0).is_none());
        assert!(matches!(l.get(b"a").map(|e| &e.value), Some(Value::Str(v)) if v == "1"));
        assert!(l.set(b"a", string("2"), 0).is_some());
        assert!(l.remove(b"a").is_some());
        assert!(l.get(b"a").is_none());
    }

    #[test]
    fn expired_keys_are_gone_on_access_and_reclaimed_by_the_sweep() {
        let store = Store::new();
        {
            let mut l = store.lock(0, &[b"x", b"y"]);
            let past = l.now - 1;
            l.set(b"x", string("1"), past);
            l.set(b"y", string("1"), past);
            assert!(l.get(b"x").is_none());
        }
        assert_eq!(store.len(), 1, "y is still held until reclaimed");
        let mut all = store.lock_all(0);
        assert!(all.expiry_bound() <= all.now);
        assert_eq!(all.remove_expired(), 1);
        assert_eq!(all.expiry_bound(), u64::MAX, "no key with an expiry left");
        drop(all);
        assert_eq!(store.len(), 0);
        assert_eq!(store.expired_keys.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn versions_change_on_every_write() {
        let store = Store::new();
        let mut l = store.lock_one(0, b"k");
        l.set(b"k", string("1"), 0);
        let v1 = l.version(b"k");
        let _ = l.get_mut(b"k");
        assert_ne!(v1, l.version(b"k"));
        l.remove(b"k");
        assert_eq!(l.version(b"k"), None);
    }

    #[test]
    fn multi_key_lock_orders_and_dedups_shards() {
        let store = Store::new();
        let keys: Vec<Vec<u8>> = (0..50).map(|i| format!("key{i}").into_bytes()).collect();
        let mut l = store.lock(0, &keys);
        for k in &keys {
            l.set(k, string("v"), 0);
        }
        drop(l);
        assert_eq!(store.len(), 50);
    }

    /// Two keys of `store`'s database 0 in different shards, the lower shard's first.
    fn keys_in_two_shards(store: &Store) -> (Vec<u8>, Vec<u8>) {
        let space = store.db(0);
        let first = b"key0".to_vec();
        let other = (1..)
            .map(|i| format!("key{i}").into_bytes())
            .find(|k| space.shard_of(k) != space.shard_of(&first))
            .expect("256 shards");
        if space.shard_of(&first) < space.shard_of(&other) {
            (first, other)
        } else {
            (other, first)
        }
    }

    /// Aborts the test process if `f` has not returned within 20 s (a deadlock would hang it).
    fn within_20s(f: impl FnOnce()) {
        let (done, finished) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            if finished
                .recv_timeout(std::time::Duration::from_secs(20))
                .is_err()
            {
                eprintln!("deadlock: the test did not finish in 20 s");
                std::process::abort();
            }
        });
        f();
        let _ = done.send(());
    }

    #[test]
    fn a_script_view_locks_shards_as_reached_and_releases_them() {
        let store = Store::new();
        let (low, high) = keys_in_two_shards(&store);
        let shards = &store.db(0).shards;
        let (lo, hi) = (store.db(0).shard_of(&low), store.db(0).shard_of(&high));
        let mut view = store.lock_as_needed(0);
        assert!(!shards[lo].is_locked() && !shards[hi].is_locked());
        view.set(&high, string("1"), 0);
        assert!(shards[hi].is_locked() && !shards[lo].is_locked());
        assert_eq!(
            view.stored_keys(),
            1,
            "a whole-database count takes every shard"
        );
        assert!(shards.iter().all(|s| s.is_locked()));
        drop(view);
        assert!(shards.iter().all(|s| !s.is_locked()));
        assert!(store.lock_one(0, &high).peek(&high).is_some());
    }

    /// A script reaches shards in any order; a multi-key command locking in order must not wait
    /// holding a shard the script will reach next (it backs off), or the two would deadlock.
    #[test]
    fn in_order_lockers_back_off_from_a_script_view() {
        let store = Store::new();
        let (low, high) = keys_in_two_shards(&store);
        within_20s(|| {
            std::thread::scope(|scope| {
                let mut script = store.lock_as_needed(0);
                script.set(&high, string("script"), 0);
                let command = scope.spawn(|| {
                    let mut both = store.lock(0, &[&low, &high]);
                    match both.get(&high).map(|e| &e.value) {
                        Some(Value::Str(s)) => Some(s.to_bytes()),
                        _ => None,
                    }
                });
                // Long enough for the command to take `low` and find `high` held.
                std::thread::sleep(std::time::Duration::from_millis(100));
                script.set(&low, string("script"), 0);
                drop(script);
                let seen = command.join().expect("the command ran");
                assert_eq!(
                    seen.as_deref(),
                    Some(&b"script"[..]),
                    "it ran after the script"
                );
            });
            within_whole_databases(&store, &low, &high);
        });
    }

    /// The same for a whole-database locker (EXEC, FLUSHDB) and a multi-database one.
    fn within_whole_databases(store: &Store, low: &[u8], high: &[u8]) {
        for several in [false, true] {
            std::thread::scope(|scope| {
                let mut script = store.lock_as_needed(0);
                script.set(high, string("again"), 0);
                let command = scope.spawn(move || {
                    let views = if several {
                        store.lock_dbs(&[0, 1]).into_iter().next()
                    } else {
                        Some(store.lock_all(0))
                    };
                    views.map(|v| v.stored_keys())
                });
                std::thread::sleep(std::time::Duration::from_millis(100));
                script.set(low, string("again"), 0);
                drop(script);
                assert_eq!(command.join().expect("the command ran"), Some(2));
            });
        }
    }
}
