//! What the store says about its changes, through its one gate, [`Store::noting`]. Two hear it:
//!
//! - The "key changed" record, the one path keyspace notifications and client-side caching
//!   share. Every write the store does (insert, in-place change, removal, expiry, eviction,
//!   flush) and every read miss is noted here, on the thread doing it, but only while someone
//!   listens (notifications on, or a client tracking): otherwise the cost is one relaxed load.
//!   Commands are synchronous, so after a handler returns, dispatch takes what its thread noted
//!   and turns it into events and invalidations (`crate::events`). The active expiry cycle and
//!   the memory meter do the same after each of their ticks.
//! - The store's [`Observer`], told of every write as it happens and of each locked view's end:
//!   the replication stream (which the append-only file reads too) implements it, so the store
//!   feeds replicas without knowing of them. An observer rather than the record above because
//!   the stream needs its entry in place before the shards are unlocked, for its order.
//!
//! [`Store::noting`]: super::Store::noting

use bytes::Bytes;
use std::cell::RefCell;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// What happened to a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A key that did not exist (or had expired) was stored.
    Created,
    /// An existing key was overwritten or changed in place.
    Written,
    /// A live key was deleted by a command.
    Removed,
    /// A key was removed because its time was up (lazily or by the active cycle).
    Expired,
    /// Fields of the hash at the key were removed because their time was up (Redis's
    /// `hexpired`); the observer hears of them by name through [`Observer::fields_removed`].
    FieldsExpired,
    /// A key was evicted to stay under `maxmemory`.
    Evicted,
    /// A read found no key (Redis's `keymiss`; only read-only commands publish it).
    Missed,
    /// Every key of the locked shards went away (FLUSHALL, FLUSHDB); the key is empty.
    Flushed,
    /// A handler named the event itself because it depends on the outcome (RENAME's
    /// `rename_from`, SET's extra `expire`…): `class` is an `events::class` bit.
    Event { class: u32, name: &'static str },
}

/// Hears of the store's writes as they happen (see the module documentation). Called under the
/// locks of the shards written, on the thread that wrote, so an implementation keeps its own
/// per-thread state and must not lock shards itself.
pub trait Observer: Send + Sync {
    /// The flag the observer raises while it wants to hear, read by the store (relaxed) before
    /// each call below: the write path pays one load for an idle observer, not a call. Asked once,
    /// when the observer is attached.
    fn gate(&self) -> Arc<AtomicBool>;

    /// `change` (never [`Change::Missed`]) happened at `key` of database `db`.
    fn changed(&self, db: usize, key: &[u8], change: Change);

    /// A locked view is about to release its shards; `expiry` reads the absolute expiry (Unix ms,
    /// 0: none) of a live key among them.
    fn releasing(&self, expiry: &dyn Fn(&[u8]) -> Option<u64>);

    /// `fields` of the hash at `key` of database `db` were removed because their time was up
    /// (or a command set a time already past): the replicas and the append-only file remove
    /// them too, at once (Redis propagates an HDEL).
    fn fields_removed(&self, db: usize, key: &[u8], fields: &[Bytes]);
}

/// One noted change.
#[derive(Debug, Clone)]
pub struct Noted {
    /// The database the key is in (its index goes into the channel names).
    pub db: usize,
    pub key: Bytes,
    pub change: Change,
}

thread_local! {
    static NOTED: RefCell<Vec<Noted>> = const { RefCell::new(Vec::new()) };
}

/// Notes a change on this thread (callers check that someone listens first).
pub fn note(db: usize, key: &[u8], change: Change) {
    let key = Bytes::copy_from_slice(key);
    NOTED.with(|noted| noted.borrow_mut().push(Noted { db, key, change }));
}

/// Takes back what was noted on this thread at `key` of database `db` as written (also created
/// and removed again: ZADD XX on a missing key) by a command that in the end changed nothing.
pub fn retract_write(db: usize, key: &[u8]) {
    let write = |c: Change| matches!(c, Change::Created | Change::Written | Change::Removed);
    NOTED.with(|noted| {
        noted
            .borrow_mut()
            .retain(|n| !(n.db == db && write(n.change) && n.key == key))
    });
}

/// Takes everything noted on this thread since the last call.
pub fn take() -> Vec<Noted> {
    NOTED.with(|noted| std::mem::take(&mut *noted.borrow_mut()))
}
