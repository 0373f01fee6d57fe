//! Replication, as Redis's: a primary streams its writes to replicas (`master`), a replica
//! follows a primary (`replica`). Both sides share this node's replication id and offset.

pub mod failover;
pub mod feed;
pub mod link;
pub mod master;
pub mod replica;

use parking_lot::Mutex;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// What replication reaches of the server beyond what the append-only file does (the store, the
/// configuration, snapshots, the script engine, the log and replication's own state): the client
/// list (the primary's link is a client), the counters it adds to, the TLS and cluster settings
/// and the addresses a link uses. The server's shared state implements it, so this module never
/// sees the server; the primary's commands run through the [`link::Applier`] the server injects.
pub trait Host: crate::aof::Host {
    fn clients(&self) -> &crate::clients::ClientRegistry;
    fn stats(&self) -> &crate::metrics::Stats;
    fn tls(&self) -> &crate::tls::Tls;
    /// This node's cluster, in cluster mode.
    fn cluster(&self) -> Option<&crate::cluster::Cluster>;
    /// The address the server was started on: a link's own address when its socket has none.
    fn local_addr(&self) -> SocketAddr;
    /// The plain TCP port served (the port a replica gives its primary).
    fn tcp_port(&self) -> u16;
    /// Publishes the keyspace notifications noted outside any command (a full sync's flush and
    /// load), as the expiry cycle does after each tick.
    fn after_background_work(&self);
}

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
pub fn repl_offset(host: &impl Host) -> u64 {
    let feed = &host.replication().feed;
    let replication = host.replication();
    if feed.active() && !replication.replica.following() {
        feed.end()
    } else {
        replication.offset()
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
