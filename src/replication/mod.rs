//! Replication, as Redis's: a primary streams its writes to replicas (`master`), a replica
//! follows a primary (`replica`). Both sides share this node's replication id and offset.

pub mod feed;
pub mod master;
pub mod replica;

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A new replication id: 40 hex characters, as Redis's.
pub fn new_replid() -> String {
    (0..40)
        .map(|_| char::from(b"0123456789abcdef"[rand::random::<usize>() % 16]))
        .collect()
}

/// This node's place in a replication history: its id and how many bytes of the stream it has
/// produced (a primary) or applied (a replica).
pub struct Replication {
    /// The history this node's data belongs to; a replica takes its primary's.
    pub replid: Mutex<String>,
    /// Bytes of the replication stream produced (primary) or applied (replica) so far.
    pub offset: AtomicU64,
    /// The primary's side: the backlog, the attached replicas, what commands propagate.
    pub master: master::Master,
    /// The replica's side: the link to a primary, when this node follows one.
    pub replica: replica::Replica,
}

impl Default for Replication {
    fn default() -> Self {
        Replication {
            replid: Mutex::new(new_replid()),
            offset: AtomicU64::new(0),
            master: Default::default(),
            replica: Default::default(),
        }
    }
}

/// After a write command ran: if it wrote and its own lock did not already put it in the stream
/// (it ran under EXEC's or a script's locks, or wrote no key), it goes in now.
pub fn propagate_after(ctx: &mut crate::commands::Ctx<'_, '_>) {
    if feed::uncommitted() {
        let db = ctx.conn.db;
        let store = &ctx.shared.store;
        let feed_of = &store.feed;
        match ctx.held_view(db) {
            Some(view) => feed::commit(feed_of, |key| view.expiry_of(key)),
            None => feed::commit(feed_of, |key| store.lock_one(db, key).expiry_of(key)),
        }
    }
    feed::disarm();
}

impl Replication {
    pub fn offset(&self) -> u64 {
        self.offset.load(Relaxed)
    }
}
