//! Clients blocked in BLPOP, BRPOP, BLMOVE, XREAD and XREADGROUP, queued per key in arrival order.
//!
//! Handlers cannot await, so a blocking command that finds nothing registers a [`WaitGuard`] while
//! it still holds the key's shard lock, and asks the connection loop to wait (see
//! [`crate::commands::BlockRequest`]). The loop sleeps on the waiter's `Notify` and then runs the
//! command again, which pops under the lock like any other command. So an element is only ever
//! removed by a live connection running a normal pop: nothing is handed over in flight, and nothing
//! can be lost or delivered twice.
//!
//! Order and wake-ups:
//! - a push (anything that creates or grows a list) wakes the *first* waiter of that key;
//! - a waiter pops from a key only when no waiter is ahead of it on that key, and a new blocking
//!   command does not pop from a key that already has waiters (it queues behind them), so clients
//!   are served first come, first served, as in Redis;
//! - a waiter leaving the queue (served, timed out, disconnected) wakes the next waiter of each of
//!   its keys, which retries: if elements are left it is served, otherwise it waits again. Spurious
//!   wake-ups cost one retry; a missed one would strand an element, so we err towards waking.
//!
//! Served between commands, as Redis serves blocked clients right after the command, transaction
//! or script that fed them (before any client's next command): a waiter parked in its connection
//! loop that is woken counts as *owed* in the store's [`Handoff`] until its rerun is over (served
//! or waiting again). Every connection checks [`Handoff::pending`] before each command (one relaxed
//! load; zero when nobody is blocked) and, when something is owed, lets the woken clients run
//! first. So `LPUSH l x` pipelined with `RPOP l` lets a client blocked on `l` have `x`, and a push
//! of two elements serves two waiters (the first one leaving wakes the next, still owed). Only a
//! waiter that is parked, ready to rerun at once, is owed: one that is writing its own output or
//! waiting for a script to end is not, so nobody can stall the others by not reading.
//!
//! Lock order: the registry mutex is taken while a shard lock may be held, never the other way.

use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// The blocked clients woken and not yet done with their rerun, across every database.
#[derive(Debug, Default)]
pub struct Handoff {
    owed: AtomicUsize,
    settled: Notify,
}

impl Handoff {
    /// True when some woken client has yet to run its command again: the caller should let it
    /// run ([`Handoff::settled`]) before its own next command.
    pub fn pending(&self) -> bool {
        self.owed.load(Ordering::Relaxed) != 0
    }

    /// Resolves once no woken client is owed its rerun.
    pub async fn settled(&self) {
        loop {
            let settled = self.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            if self.owed.load(Ordering::Acquire) == 0 {
                return;
            }
            settled.await;
        }
    }

    fn paid(&self) {
        if self.owed.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.settled.notify_waiters();
        }
    }
}

/// A waiter's state towards the [`Handoff`].
const IDLE: u8 = 0;
/// In its connection loop, ready to rerun as soon as it is woken.
const PARKED: u8 = 1;
/// Woken while parked: counted in [`Handoff`] until its rerun is over.
const OWED: u8 = 2;

/// One blocked client.
#[derive(Debug)]
pub struct Waiter {
    id: u64,
    notify: Notify,
    state: AtomicU8,
    handoff: Arc<Handoff>,
}

impl Waiter {
    /// Resolves when a push (or the waiter ahead leaving) suggests a retry.
    pub async fn woken(&self) {
        self.notify.notified().await;
    }

    /// The connection loop is ready to rerun the command the moment it is woken: a wake-up from
    /// now on holds other commands back until [`Waiter::settle`].
    pub fn park(&self) {
        let _ = self
            .state
            .compare_exchange(IDLE, PARKED, Ordering::AcqRel, Ordering::Acquire);
    }

    /// The rerun is over (or the loop is about to await something else): nobody waits for this
    /// client any longer.
    pub fn settle(&self) {
        if self.state.swap(IDLE, Ordering::AcqRel) == OWED {
            self.handoff.paid();
        }
    }

    fn wake(&self) {
        self.notify.notify_one();
        // Counted before the state says so: a `settle` racing this one then never takes the
        // count below zero (which would lose the notification of reaching it).
        self.handoff.owed.fetch_add(1, Ordering::AcqRel);
        if self
            .state
            .compare_exchange(PARKED, OWED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            self.handoff.paid();
        }
    }
}

/// Per-key FIFO queues of blocked clients.
#[derive(Debug, Default)]
pub struct Waiters {
    queues: Mutex<HashMap<Bytes, VecDeque<Arc<Waiter>>>>,
    /// Number of keys with waiters: lets every push skip the mutex when nobody is blocked.
    keys_waited: AtomicUsize,
    next_id: AtomicU64,
    /// Shared by every database of a store, so one check covers them all.
    handoff: Arc<Handoff>,
}

impl Waiters {
    /// A registry whose wake-ups are counted in `handoff`.
    pub fn new(handoff: Arc<Handoff>) -> Waiters {
        Waiters {
            handoff,
            ..Default::default()
        }
    }

    /// Wakes the first client waiting on `key`, if any. Called by every write that adds list
    /// elements, under the key's shard lock.
    pub fn signal(&self, key: &[u8]) {
        if self.keys_waited.load(Ordering::Acquire) == 0 {
            return;
        }
        if let Some(first) = self.queues.lock().get(key).and_then(|q| q.front()) {
            first.wake();
        }
    }

    /// Wakes the client queued right after `me` on `key`: a stream wake-up goes down the queue
    /// one client at a time, so XREADGROUP readers of one group are served first come, first
    /// served (each retry, served or not, passes the turn on).
    pub fn wake_next(&self, key: &[u8], me: &Waiter) {
        if self.keys_waited.load(Ordering::Acquire) == 0 {
            return;
        }
        let queues = self.queues.lock();
        let Some(queue) = queues.get(key) else {
            return;
        };
        if let Some(at) = queue.iter().position(|w| w.id == me.id) {
            if let Some(next) = queue.get(at + 1) {
                next.wake();
            }
        }
    }

    /// True when some client other than `me` is queued on `key` ahead of `me` (any client, when
    /// `me` is not queued there). Call under the key's shard lock.
    pub fn someone_ahead(&self, key: &[u8], me: Option<&Waiter>) -> bool {
        if self.keys_waited.load(Ordering::Acquire) == 0 {
            return false;
        }
        let queues = self.queues.lock();
        match queues.get(key).and_then(|q| q.front()) {
            None => false,
            Some(first) => me.is_none_or(|me| first.id != me.id),
        }
    }

    /// Queues a new waiter at the back of each of `keys`. Call under the keys' shard locks, right
    /// after finding them empty, so no push can slip in between.
    pub fn register(self: &Arc<Self>, keys: Vec<Bytes>) -> WaitGuard {
        let waiter = Arc::new(Waiter {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            notify: Notify::new(),
            state: AtomicU8::new(IDLE),
            handoff: self.handoff.clone(),
        });
        let mut queues = self.queues.lock();
        for key in &keys {
            let queue = queues.entry(key.clone()).or_insert_with(|| {
                self.keys_waited.fetch_add(1, Ordering::AcqRel);
                VecDeque::new()
            });
            if !queue.iter().any(|w| w.id == waiter.id) {
                queue.push_back(waiter.clone());
            }
        }
        WaitGuard {
            waiters: self.clone(),
            waiter,
            keys,
        }
    }

    fn unregister(&self, waiter: &Waiter, keys: &[Bytes]) {
        let mut queues = self.queues.lock();
        for key in keys {
            let Some(queue) = queues.get_mut(key) else {
                continue;
            };
            let at = queue.iter().position(|w| w.id == waiter.id);
            queue.retain(|w| w.id != waiter.id);
            if queue.is_empty() {
                queues.remove(key);
                self.keys_waited.fetch_sub(1, Ordering::AcqRel);
            } else if let Some(next) = at.and_then(|i| queue.get(i)) {
                // The one that followed gets the turn (a stream wake-up travels down the queue;
                // for lists a follower that is not first just waits again).
                next.wake();
            }
        }
    }

    /// Wakes every client blocked on a key `moved` matches (the keys of slots handed to another
    /// node): each runs its command again and is redirected.
    pub fn wake_all_where(&self, moved: impl Fn(&[u8]) -> bool) {
        if self.keys_waited.load(Ordering::Acquire) == 0 {
            return;
        }
        for (key, queue) in self.queues.lock().iter() {
            if moved(key) {
                for waiter in queue {
                    waiter.wake();
                }
            }
        }
    }

    /// The keys some client is blocked on (SWAPDB wakes those that now hold a list).
    pub fn waited_keys(&self) -> Vec<Bytes> {
        if self.keys_waited.load(Ordering::Acquire) == 0 {
            return Vec::new();
        }
        self.queues.lock().keys().cloned().collect()
    }

    /// Number of clients blocked on any key (INFO's `blocked_clients`).
    pub fn blocked_clients(&self) -> usize {
        let queues = self.queues.lock();
        let mut ids: Vec<u64> = queues.values().flatten().map(|w| w.id).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    }
}

/// A client's place in the queues of its keys; dropping it leaves them and wakes the next waiter.
#[derive(Debug)]
pub struct WaitGuard {
    waiters: Arc<Waiters>,
    waiter: Arc<Waiter>,
    keys: Vec<Bytes>,
}

impl WaitGuard {
    pub fn waiter(&self) -> &Arc<Waiter> {
        &self.waiter
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        self.waiters.unregister(&self.waiter, &self.keys);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[tokio::test]
    async fn first_waiter_is_woken_and_leaving_passes_the_turn_on() {
        let waiters = Arc::new(Waiters::default());
        let first = waiters.register(vec![key("k")]);
        let second = waiters.register(vec![key("k"), key("other")]);
        assert!(waiters.someone_ahead(b"k", Some(second.waiter())));
        assert!(!waiters.someone_ahead(b"k", Some(first.waiter())));
        assert!(waiters.someone_ahead(b"k", None));
        assert!(!waiters.someone_ahead(b"other", Some(second.waiter())));
        waiters.signal(b"k");
        first.waiter().woken().await; // the permit was stored for the first waiter
        drop(first);
        second.waiter().woken().await; // leaving woke the next one
        assert_eq!(waiters.blocked_clients(), 1);
        drop(second);
        assert_eq!(waiters.blocked_clients(), 0);
        assert_eq!(waiters.keys_waited.load(Ordering::Relaxed), 0);
        assert!(!waiters.someone_ahead(b"k", None));
    }
}
