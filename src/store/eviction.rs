//! `maxmemory`: before a command that may grow memory runs, keys are evicted per
//! `maxmemory-policy` until the used memory is under the limit, or the command is refused with OOM.
//!
//! Used memory is jemalloc's count of allocated bytes (INFO `used_memory`). Reading it exactly costs
//! about 20 µs (jemalloc merges its per-arena statistics), far too much for every write, so a
//! background meter refreshes a cached figure every [`METER_TICK`] while a limit is set, and in
//! between each write adds what its thread allocated since its last write (jemalloc's per-thread
//! counters: plain loads). A write checks the cached figure (with no limit: one relaxed load);
//! only when it says "over" is the exact figure read and eviction run. Each eviction subtracts
//! exactly what it freed, from the same per-thread counters, so the loop needs no more exact reads.
//! A write evicts for at most [`EVICTION_TIME_BOX`]; if still over the limit it runs anyway (as in
//! Redis, where eviction then continues in the background) and the meter's ticks keep evicting.
//!
//! Sampling is Redis's approximation: pick a random shard and a random position in it, take
//! `maxmemory-samples` consecutive candidates (hash order, so random keys), merge them into a pool
//! of the 16 best seen so far (Redis's eviction pool) and evict the best: the longest idle (LRU)
//! or the soonest to expire (TTL). The random policies evict the first candidate.

use super::{Entry, Store};
use crate::config::values::Policy;
use bytes::Bytes;
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tikv_jemalloc_ctl::thread::ThreadLocal;

/// The exact reply of a refused command.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// How often the cached used-memory figure is refreshed while a limit is set.
pub const METER_TICK: Duration = Duration::from_millis(10);
/// Longest one write (or one meter tick) spends evicting, so a limit lowered far below the data
/// never stalls a client, or the other clients of its thread, for long.
pub const EVICTION_TIME_BOX: Duration = Duration::from_millis(1);

/// How a policy (a configuration value) judges the store's entries.
trait Judge {
    fn eligible(self, entry: &Entry) -> bool;
    fn score_is_constant(self) -> bool;
    fn score(self, entry: &Entry, now: u64) -> u64;
}

impl Judge for Policy {
    /// Whether `entry` may be evicted: the volatile policies evict only keys with an expiry.
    fn eligible(self, entry: &Entry) -> bool {
        entry.expire_at() != 0
            || !matches!(
                self,
                Policy::VolatileLru | Policy::VolatileRandom | Policy::VolatileTtl
            )
    }

    fn score_is_constant(self) -> bool {
        matches!(
            self,
            Policy::NoEviction | Policy::AllKeysRandom | Policy::VolatileRandom
        )
    }

    /// How good an eviction candidate `entry` is: the highest score goes.
    fn score(self, entry: &Entry, now: u64) -> u64 {
        match self {
            Policy::AllKeysLru | Policy::VolatileLru => entry.idle_secs(now),
            Policy::VolatileTtl => u64::MAX - entry.expire_at(),
            Policy::NoEviction | Policy::AllKeysRandom | Policy::VolatileRandom => 0,
        }
    }
}

/// The limit, the policy and the cached used-memory figure.
pub struct MemoryLimit {
    /// Bytes; 0: no limit.
    maxmemory: AtomicU64,
    policy: AtomicU8,
    samples: AtomicU64,
    /// Used memory as last measured (or estimated after evictions).
    used: AtomicU64,
    /// Keys evicted since start (INFO `evicted_keys`).
    pub evicted_keys: AtomicU64,
    /// The store's version when a full search found nothing to evict: until something is written,
    /// searching again would find nothing either.
    nothing_evictable_at: AtomicU64,
    /// The eviction pool, held by one evicting thread at a time (the others then find the figure
    /// under the limit).
    pool: Mutex<Vec<Candidate>>,
}

impl Default for MemoryLimit {
    fn default() -> Self {
        MemoryLimit {
            maxmemory: AtomicU64::new(0),
            policy: AtomicU8::new(0),
            samples: AtomicU64::new(5),
            used: AtomicU64::new(0),
            evicted_keys: AtomicU64::new(0),
            nothing_evictable_at: AtomicU64::new(0),
            pool: Mutex::new(Vec::new()),
        }
    }
}

impl MemoryLimit {
    /// Applies the settings (at start and on CONFIG SET) and measures at once, so a lowered limit
    /// takes effect on the next write.
    pub fn configure(&self, config: &crate::config::Config) {
        let policy = config.maxmemory_policy;
        let index = Policy::ALL.iter().position(|p| *p == policy).unwrap_or(0);
        self.policy.store(index as u8, Relaxed);
        self.samples.store(config.maxmemory_samples.max(1), Relaxed);
        // Candidates and "nothing evictable" were judged under the old policy.
        self.pool.lock().clear();
        self.nothing_evictable_at.store(0, Relaxed);
        self.used.store(allocated_bytes(), Relaxed);
        self.maxmemory.store(config.maxmemory, Relaxed);
    }

    pub fn is_limited(&self) -> bool {
        self.maxmemory.load(Relaxed) != 0
    }

    fn policy(&self) -> Policy {
        Policy::ALL[usize::from(self.policy.load(Relaxed)) % Policy::ALL.len()]
    }

    /// Adds what this thread allocated net since its last check to the cached figure, so writes
    /// between two meter ticks are counted. Growth already in an exact reading may be counted
    /// twice: that costs an extra exact reading, never an eviction.
    fn add_thread_growth(&self) {
        if let Some(net) = thread_net_allocated() {
            let grown = SEEN.with(|seen| net.wrapping_sub(seen.replace(net)));
            // Wrapping: a thread that freed more than it allocated lowers the figure.
            self.used.fetch_add(grown, Relaxed);
        }
    }
}

impl Store {
    /// The meter's tick: refreshes the cached figure and, over the limit, goes on evicting what
    /// the writes left (each write evicts for at most [`EVICTION_TIME_BOX`]).
    fn meter_tick(&self) {
        let max = self.memory.maxmemory.load(Relaxed);
        if max == 0 {
            return;
        }
        let used = allocated_bytes();
        self.memory.used.store(used, Relaxed);
        if used > max && self.memory.policy() != Policy::NoEviction {
            self.evict_to(max);
        }
    }

    /// Called before a command that may grow memory: true when it may run. Without a limit this
    /// is one relaxed load; under it, a few loads and one atomic add.
    #[inline]
    pub fn make_room(&self) -> bool {
        let max = self.memory.maxmemory.load(Relaxed);
        if max == 0 {
            return true;
        }
        self.memory.add_thread_growth();
        // CLIENT PAUSE: nothing is evicted meanwhile, and commands are not refused for it.
        self.memory.used.load(Relaxed) <= max || self.pause.freezes_keyspace() || self.evict_to(max)
    }

    /// Measures exactly and evicts until used memory is at most `max`, nothing is evictable, or
    /// [`EVICTION_TIME_BOX`] has passed. False when the command must be refused: over the limit
    /// and nothing (more) to evict. Out of time, the command runs, as in Redis, and the next
    /// writes and meter ticks go on evicting.
    #[cold]
    fn evict_to(&self, max: u64) -> bool {
        let limit = &self.memory;
        let mut pool = limit.pool.lock();
        if limit.used.load(Relaxed) <= max {
            return true; // the thread that held the pool made room meanwhile
        }
        let mut used = allocated_bytes();
        let policy = limit.policy();
        let samples = limit.samples.load(Relaxed);
        let started = Instant::now();
        let mut out_of_time = false;
        let mut evicted = 0u32;
        while used > max && policy != Policy::NoEviction {
            evicted += 1;
            if evicted % 16 == 0 && started.elapsed() > EVICTION_TIME_BOX {
                out_of_time = true;
                break;
            }
            let version = self.writes_so_far();
            if limit.nothing_evictable_at.load(Relaxed) == version {
                break;
            }
            let before = thread_net_allocated();
            if !self.evict_one(policy, samples, &mut pool) {
                limit.nothing_evictable_at.store(version, Relaxed);
                break;
            }
            // Signed: the eviction may also have allocated (a pool slot, a cloned key).
            used = match (before, thread_net_allocated()) {
                (Some(before), Some(after)) => {
                    used.saturating_add_signed(after.wrapping_sub(before) as i64)
                }
                _ => allocated_bytes(),
            };
        }
        // `used` now counts everything this thread did: its growth so far is accounted for.
        SEEN.with(|seen| seen.set(thread_net_allocated().unwrap_or(0)));
        limit.used.store(used, Relaxed);
        used <= max || out_of_time
    }

    /// Evicts one key: a random one for the random policies; otherwise the best of the pool
    /// after adding the samples of a random shard. False when no shard has a candidate.
    fn evict_one(&self, policy: Policy, samples: u64, pool: &mut Vec<Candidate>) -> bool {
        let shards = self.shard_count();
        let first = rand::random::<u64>() as usize % shards;
        let random = policy.score_is_constant();
        // Every database's shard `i` in turn, so eviction reaches keys in all of them.
        let dbs: SmallVec<[usize; 16]> = self.existing_dbs().map(|(db, _)| db).collect();
        for (i, &db) in (0..shards).flat_map(|i| dbs.iter().map(move |db| (i, db))) {
            let locked = self.lock_shard(db, (first + i) % shards);
            let wanted = if random { 1 } else { samples };
            let sampled = sample(locked.held.get(0), db, policy, wanted, locked.now);
            drop(locked);
            merge(pool, sampled);
            while let Some(best) = pool.pop() {
                let mut locked = self.lock_one(best.db, &best.key);
                let now = locked.now;
                // A key read (or given a later expiry) since it was sampled is no longer the best.
                let still_best = locked
                    .peek(&best.key)
                    .is_some_and(|e| policy.eligible(e) && policy.score(e, now) >= best.score);
                if !still_best {
                    continue;
                }
                let evicted = locked.evict(&best.key);
                drop(locked);
                if evicted.is_some() {
                    self.memory.evicted_keys.fetch_add(1, Relaxed);
                }
                // `evicted` is dropped here, outside the shard lock.
                return true;
            }
        }
        false
    }
}

/// A key that may be evicted, with its score when sampled (the highest goes first).
struct Candidate {
    score: u64,
    db: usize,
    key: Bytes,
}

/// Most candidates kept between evictions, as Redis's eviction pool.
const POOL_SIZE: usize = 16;

/// Up to `samples` eligible keys of `shard`, consecutive from a random position (hash order, so
/// random keys).
fn sample(
    shard: &super::Shard,
    db: usize,
    policy: Policy,
    samples: u64,
    now: u64,
) -> Vec<Candidate> {
    if shard.is_empty() {
        return Vec::new();
    }
    let start = rand::random::<u64>() as usize % shard.len();
    shard
        .iter()
        .skip(start)
        .chain(shard.iter().take(start))
        .filter(|node| policy.eligible(node.entry()))
        .take(usize::try_from(samples).unwrap_or(usize::MAX))
        .map(|node| Candidate {
            score: policy.score(node.entry(), now),
            db,
            key: Bytes::copy_from_slice(node.name()),
        })
        .collect()
}

/// Adds `sampled` to `pool` (no key twice), which stays sorted by score, best last, and keeps
/// its [`POOL_SIZE`] best.
fn merge(pool: &mut Vec<Candidate>, sampled: Vec<Candidate>) {
    for candidate in sampled {
        if !pool
            .iter()
            .any(|c| c.key == candidate.key && c.db == candidate.db)
        {
            pool.push(candidate);
        }
    }
    pool.sort_by_key(|c| c.score);
    let excess = pool.len().saturating_sub(POOL_SIZE);
    pool.drain(..excess);
}

thread_local! {
    /// jemalloc's counters of the bytes this thread allocated and freed (read through pointers:
    /// a plain memory load each).
    static COUNTERS: Option<(ThreadLocal<u64>, ThreadLocal<u64>)> =
        tikv_jemalloc_ctl::thread::allocatedp::read()
            .and_then(|a| Ok((a, tikv_jemalloc_ctl::thread::deallocatedp::read()?)))
            .ok();
    /// This thread's net allocation when it last added its growth to [`MemoryLimit::used`].
    static SEEN: Cell<u64> = const { Cell::new(0) };
}

/// Bytes this thread allocated minus bytes it freed, since it started (wrapping).
fn thread_net_allocated() -> Option<u64> {
    COUNTERS.with(|c| c.map(|(allocated, freed)| allocated.get().wrapping_sub(freed.get())))
}

/// Refreshes the used-memory figure every [`METER_TICK`] until `shutdown` resolves.
/// `after_tick` publishes the `evicted` events and invalidations of each tick.
pub async fn run_meter(
    store: Arc<Store>,
    after_tick: impl Fn(),
    shutdown: impl std::future::Future<Output = ()>,
) {
    let mut interval = tokio::time::interval(METER_TICK);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            _ = interval.tick() => {
                store.meter_tick();
                after_tick();
            }
        }
    }
}

/// Bytes currently allocated by the process (jemalloc's `stats.allocated`), 0 if unavailable.
/// The store owns it: eviction is its main reader (the meter), and the store sits below metrics.
pub fn allocated_bytes() -> u64 {
    // The statistics are a snapshot refreshed by advancing the epoch.
    if tikv_jemalloc_ctl::epoch::advance().is_err() {
        return 0;
    }
    tikv_jemalloc_ctl::stats::allocated::read().map_or(0, |n| n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Value;

    #[test]
    fn policy_names_round_trip_and_bad_ones_get_redis_text() {
        for p in Policy::ALL {
            assert_eq!(Policy::parse(&p.name().to_uppercase()), Ok(p));
        }
        assert_eq!(
            Policy::parse("allkeys-lfu"),
            Err(
                "argument(s) must be one of the following: volatile-lru, volatile-random, \
                 volatile-ttl, allkeys-lru, allkeys-random, noeviction"
                    .into()
            )
        );
    }

    #[test]
    fn volatile_policies_pick_only_keys_with_a_ttl_and_ttl_picks_the_soonest() {
        let store = Store::new();
        let mut l = store.lock_all(0);
        let now = l.now;
        for i in 0..200u64 {
            let key = format!("k{i}");
            let expire = if i % 2 == 0 { 0 } else { now + 1_000_000 + i };
            l.set(key.as_bytes(), Value::Str("v".into()), expire);
        }
        for (shard, guard) in l.held.iter() {
            let mut pool = Vec::new();
            merge(&mut pool, sample(guard, 0, Policy::VolatileTtl, 1000, now));
            let Some(key) = pool.pop().map(|c| c.key) else {
                continue;
            };
            let soonest = guard
                .iter()
                .map(|n| n.entry().expire_at())
                .filter(|&t| t != 0)
                .min();
            let picked = l.peek(&key).map(|e| e.expire_at());
            assert_eq!(picked, soonest, "shard {shard}");
        }
    }

    #[test]
    fn lru_picks_the_longest_idle_and_a_read_makes_a_key_young() {
        let store = Store::new();
        let mut l = store.lock_all(0);
        let now = l.now;
        for i in 0..200u64 {
            let key = format!("k{i}");
            l.set(key.as_bytes(), Value::Str("v".into()), 0);
            // Ageing by hand: key i was last touched i seconds ago.
            if let Some(e) = l.raw_entry_mut(key.as_bytes()) {
                e.touch(now - i * 1000);
            }
        }
        assert_eq!(l.peek(b"k150").map(|e| e.idle_secs(now)), Some(150));
        assert_eq!(
            l.get(b"k150").map(|e| e.idle_secs(now)),
            Some(0),
            "a read touches"
        );
        for (shard, guard) in l.held.iter() {
            let mut pool = Vec::new();
            merge(&mut pool, sample(guard, 0, Policy::AllKeysLru, 1000, now));
            let Some(key) = pool.pop().map(|c| c.key) else {
                continue;
            };
            let oldest = guard.iter().map(|n| n.entry().idle_secs(now)).max();
            let picked = l.peek(&key).map(|e| e.idle_secs(now));
            assert_eq!(picked, oldest, "shard {shard}");
        }
    }
}
