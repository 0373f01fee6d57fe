//! `maxmemory`: before a command that may grow memory runs, keys are evicted per
//! `maxmemory-policy` until the used memory is under the limit, or the command is refused with OOM.
//!
//! Used memory is jemalloc's count of allocated bytes (INFO `used_memory`). Reading it exactly costs
//! about 20 µs (jemalloc merges its per-arena statistics), far too much for every write, so a
//! background meter refreshes a cached figure every [`METER_TICK`] while a limit is set. A write
//! checks the cached figure (with no limit: one relaxed load); only when it says "over" is the
//! exact figure read and eviction run. Each eviction subtracts exactly what it freed, from this
//! thread's jemalloc counters, so the loop needs no further exact reads.
//!
//! Sampling is Redis's approximation: pick a random shard and a random position in it, take
//! `maxmemory-samples` consecutive candidates (hash order, so random keys) and evict the best one:
//! the longest idle (LRU), the soonest to expire (TTL) or the first (random).

use super::{Entry, Store};
use bytes::Bytes;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// The exact reply of a refused command.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// How often the cached used-memory figure is refreshed while a limit is set.
pub const METER_TICK: Duration = Duration::from_millis(10);

/// What to evict when `maxmemory` is reached (Redis's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    NoEviction,
    AllKeysLru,
    VolatileLru,
    AllKeysRandom,
    VolatileRandom,
    VolatileTtl,
}

impl Policy {
    /// In the order Redis lists them in its error text (it has LFU policies too; we do not).
    const ALL: [Policy; 6] = [
        Policy::VolatileLru,
        Policy::VolatileRandom,
        Policy::VolatileTtl,
        Policy::AllKeysLru,
        Policy::AllKeysRandom,
        Policy::NoEviction,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Policy::NoEviction => "noeviction",
            Policy::AllKeysLru => "allkeys-lru",
            Policy::VolatileLru => "volatile-lru",
            Policy::AllKeysRandom => "allkeys-random",
            Policy::VolatileRandom => "volatile-random",
            Policy::VolatileTtl => "volatile-ttl",
        }
    }

    /// Parses a policy name (case-insensitive), with Redis's CONFIG SET text on failure.
    pub fn parse(text: &str) -> Result<Policy, String> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| {
                let names: Vec<&str> = Policy::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "argument(s) must be one of the following: {}",
                    names.join(", ")
                )
            })
    }

    fn volatile_only(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru | Policy::VolatileRandom | Policy::VolatileTtl
        )
    }

    /// How good an eviction candidate `entry` is: the highest score goes.
    fn score(self, entry: &Entry, now: u64) -> u64 {
        match self {
            Policy::AllKeysLru | Policy::VolatileLru => entry.idle_secs(now),
            Policy::VolatileTtl => u64::MAX - entry.expire_at,
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
    /// One evicting thread at a time; the others then find the figure under the limit.
    evicting: Mutex<()>,
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
            evicting: Mutex::new(()),
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
        self.used.store(crate::metrics::allocated_bytes(), Relaxed);
        self.maxmemory.store(config.maxmemory, Relaxed);
    }

    pub fn is_limited(&self) -> bool {
        self.maxmemory.load(Relaxed) != 0
    }

    fn policy(&self) -> Policy {
        Policy::ALL[usize::from(self.policy.load(Relaxed)) % Policy::ALL.len()]
    }

    /// Refreshes the cached figure (the meter's tick); nothing to do without a limit.
    fn measure(&self) {
        if self.is_limited() {
            self.used.store(crate::metrics::allocated_bytes(), Relaxed);
        }
    }
}

impl Store {
    /// Called before a command that may grow memory: true when it may run. Without a limit, or
    /// under it, this is one or two relaxed loads.
    #[inline]
    pub fn make_room(&self) -> bool {
        let max = self.memory.maxmemory.load(Relaxed);
        max == 0 || self.memory.used.load(Relaxed) <= max || self.evict_to(max)
    }

    /// Measures exactly and evicts until used memory is at most `max` or nothing is evictable.
    #[cold]
    fn evict_to(&self, max: u64) -> bool {
        let limit = &self.memory;
        let _one_at_a_time = limit.evicting.lock();
        let mut used = crate::metrics::allocated_bytes();
        let policy = limit.policy();
        let samples = limit.samples.load(Relaxed);
        let freed = FreedBytes::new();
        while used > max && policy != Policy::NoEviction {
            let version = self.next_version.load(Relaxed);
            if limit.nothing_evictable_at.load(Relaxed) == version {
                break;
            }
            let before = freed.so_far();
            if !self.evict_one(policy, samples) {
                limit.nothing_evictable_at.store(version, Relaxed);
                break;
            }
            used = match freed.since(before) {
                Some(bytes) => used.saturating_sub(bytes),
                None => crate::metrics::allocated_bytes(),
            };
        }
        limit.used.store(used, Relaxed);
        used <= max
    }

    /// Evicts one key chosen per `policy` from a random shard (the next non-empty one when it
    /// has no candidate); false when no shard has one.
    fn evict_one(&self, policy: Policy, samples: u64) -> bool {
        let shards = self.shard_count();
        let first = rand::random::<u64>() as usize % shards;
        for i in 0..shards {
            let mut locked = self.lock_shard((first + i) % shards);
            let Some(key) = best_candidate(&locked.guards[0].1, policy, samples, locked.now) else {
                continue;
            };
            let evicted = locked.remove(&key);
            drop(locked);
            if evicted.is_some() {
                self.memory.evicted_keys.fetch_add(1, Relaxed);
            }
            // `evicted` is dropped here, outside the shard lock.
            return true;
        }
        false
    }
}

/// The best of up to `samples` candidates taken from a random position of `shard` on.
fn best_candidate(shard: &super::Shard, policy: Policy, samples: u64, now: u64) -> Option<Bytes> {
    if shard.is_empty() {
        return None;
    }
    let start = rand::random::<u64>() as usize % shard.len();
    shard
        .iter()
        .skip(start)
        .chain(shard.iter().take(start))
        .map(|(k, v)| (k, v.get()))
        .filter(|(_, e)| !policy.volatile_only() || e.expire_at != 0)
        .take(usize::try_from(samples).unwrap_or(usize::MAX))
        .max_by_key(|(_, e)| policy.score(e, now))
        .map(|(k, _)| k.clone())
}

/// Net bytes this thread freed, from jemalloc's per-thread counters (exact and cheap).
struct FreedBytes(
    Option<(
        tikv_jemalloc_ctl::thread::ThreadLocal<u64>,
        tikv_jemalloc_ctl::thread::ThreadLocal<u64>,
    )>,
);

impl FreedBytes {
    fn new() -> FreedBytes {
        let counters = tikv_jemalloc_ctl::thread::allocatedp::read()
            .and_then(|a| Ok((a, tikv_jemalloc_ctl::thread::deallocatedp::read()?)));
        FreedBytes(counters.ok())
    }

    fn so_far(&self) -> Option<u64> {
        self.0.map(|(a, d)| d.get().wrapping_sub(a.get()))
    }

    /// Bytes freed since `before` (a [`FreedBytes::so_far`] reading); None when unavailable.
    fn since(&self, before: Option<u64>) -> Option<u64> {
        let (now, before) = (self.so_far()?, before?);
        Some((now.wrapping_sub(before) as i64).max(0) as u64)
    }
}

/// Refreshes the used-memory figure every [`METER_TICK`] until `shutdown` resolves.
pub async fn run_meter(store: Arc<Store>, shutdown: impl std::future::Future<Output = ()>) {
    let mut interval = tokio::time::interval(METER_TICK);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            _ = interval.tick() => store.memory.measure(),
        }
    }
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
        let mut l = store.lock_all();
        let now = l.now;
        for i in 0..200u64 {
            let key = format!("k{i}");
            let expire = if i % 2 == 0 { 0 } else { now + 1_000_000 + i };
            l.set(key.as_bytes(), Value::Str(Bytes::from_static(b"v")), expire);
        }
        for (shard, guard) in &l.guards {
            let Some(key) = best_candidate(guard, Policy::VolatileTtl, 1000, now) else {
                continue;
            };
            let soonest = guard
                .values()
                .map(|e| e.get().expire_at)
                .filter(|&t| t != 0)
                .min();
            let picked = guard.get(&key).map(|e| e.get().expire_at);
            assert_eq!(picked, soonest, "shard {shard}");
        }
    }

    #[test]
    fn lru_picks_the_longest_idle_and_a_read_makes_a_key_young() {
        let store = Store::new();
        let mut l = store.lock_all();
        let now = l.now;
        for i in 0..200u64 {
            let key = format!("k{i}");
            l.set(key.as_bytes(), Value::Str(Bytes::from_static(b"v")), 0);
            // Ageing by hand: key i was last touched i seconds ago.
            if let Some(e) = l.shard_mut(key.as_bytes()).get_mut(key.as_bytes()) {
                e.get_mut().touch(now - i * 1000);
            }
        }
        assert_eq!(l.peek(b"k150").map(|e| e.idle_secs(now)), Some(150));
        assert_eq!(
            l.get(b"k150").map(|e| e.idle_secs(now)),
            Some(0),
            "a read touches"
        );
        for (shard, guard) in &l.guards {
            let Some(key) = best_candidate(guard, Policy::AllKeysLru, 1000, now) else {
                continue;
            };
            let oldest = guard.values().map(|e| e.get().idle_secs(now)).max();
            let picked = guard.get(&key).map(|e| e.get().idle_secs(now));
            assert_eq!(picked, oldest, "shard {shard}");
        }
    }
}
