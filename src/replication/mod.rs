//! Replication, as Redis's: a primary streams its writes to replicas (`master`), a replica
//! follows a primary (`replica`). Both sides share this node's replication id and offset.

pub mod failover;
pub mod feed;
pub mod link;
pub mod master;
pub mod replica;

use parking_lot::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

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
    /// The history this node's data came from before the current one (INFO's `master_replid2`;
    /// 40 zeros for none): a replica promoted by REPLICAOF NO ONE keeps its primary's id here, so
    /// that the other replicas of that primary may continue from it.
    pub replid2: Mutex<String>,
    /// The first offset that belongs to `replid` rather than `replid2` (INFO's
    /// `second_repl_offset`; -1 for none).
    pub second_offset: AtomicI64,
    /// The stream of this node's writes, which replicas and the append-only file read; the
    /// server makes it the store's observer.
    pub feed: Arc<feed::Feed>,
    /// The primary's side: the attached replicas, what commands propagate.
    pub master: master::Master,
    /// The replica's side: the link to a primary, when this node follows one.
    pub replica: replica::Replica,
    /// FAILOVER in progress, if any.
    pub failover: failover::Failover,
}

impl Default for Replication {
    fn default() -> Self {
        Replication {
            replid: Mutex::new(new_replid()),
            offset: AtomicU64::new(0),
            replid2: Mutex::new("0".repeat(40)),
            second_offset: AtomicI64::new(-1),
            feed: Default::default(),
            master: Default::default(),
            replica: Default::default(),
            failover: Default::default(),
        }
    }
}

/// INFO's `master_repl_offset`: the stream produced here once replicas are fed from it, else the
/// stream applied (a replica, or a primary whose stream has not started: it starts there).
pub fn repl_offset(shared: &crate::server::Shared) -> u64 {
    let feed = &shared.replication.feed;
    if feed.active() && !shared.replication.replica.following() {
        feed.end()
    } else {
        shared.replication.offset()
    }
}

impl Replication {
    pub fn offset(&self) -> u64 {
        self.offset.load(Relaxed)
    }

    /// Starts a new history, as Redis's `shiftReplicationId`: the current id becomes `replid2`,
    /// valid up to this offset, and a new id is drawn (a replica becoming a primary).
    pub fn shift_replid(&self) {
        let mut replid = self.replid.lock();
        let old = std::mem::replace(&mut *replid, new_replid());
        *self.replid2.lock() = old;
        self.second_offset.store(self.offset() as i64 + 1, Relaxed);
    }
}
