//! The replica's side of replication: REPLICAOF, the link to a primary, the full sync and the
//! stream of the primary's writes applied here.
//!
//! One task ([`super::link::run`], started with the server) follows the target REPLICAOF sets; a new target
//! (or NO ONE) drops the link in progress. The link is Redis's: PING, AUTH, REPLCONF, PSYNC; a
//! full sync empties every database and loads the primary's RDB with all of them locked (clients
//! wait for the load rather than see half a keyspace); then each command of the stream runs
//! through the [`super::link::Applier`] the server injects (`commands::dispatch` on a connection
//! state of its own), obeyed as Redis's master client is. A broken link is made again after a
//! second, continuing (`PSYNC replid offset+1`) when the primary still has the history.

use super::Host;
use crate::protocol::Reply;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use tokio::sync::watch;

/// Redis's refusal of a client's write on a read-only replica.
pub const READONLY: &str = "READONLY You can't write against a read only replica.";
/// A stale replica's answer to a command not flagged `stale` (`replica-serve-stale-data no`).
pub const MASTERDOWN: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
/// The same, to a script's `redis.call`.
pub const STALE_IN_SCRIPT: &str = "ERR Can not execute the command on a stale replica";

/// The link's state, as ROLE names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum LinkState {
    /// Waiting to connect (after REPLICAOF, or a second after the link broke).
    Connect = 0,
    Connecting = 1,
    /// PING, AUTH, REPLCONF, PSYNC.
    Handshake = 2,
    /// Receiving and loading the primary's RDB.
    Sync = 3,
    Connected = 4,
}

impl LinkState {
    fn from_u8(v: u8) -> LinkState {
        match v {
            1 => LinkState::Connecting,
            2 => LinkState::Handshake,
            3 => LinkState::Sync,
            4 => LinkState::Connected,
            _ => LinkState::Connect,
        }
    }

    fn name(self) -> &'static str {
        match self {
            LinkState::Connect => "connect",
            LinkState::Connecting => "connecting",
            LinkState::Handshake => "handshake",
            LinkState::Sync => "sync",
            LinkState::Connected => "connected",
        }
    }
}

/// The primary this node follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
}

/// What INFO and ROLE show of the link, changed only by the link of the current generation.
#[derive(Default)]
pub(super) struct Status {
    pub(super) target: Option<Target>,
    /// Monotonic ms at which the link went down (0: it was never up since REPLICAOF).
    pub(super) down_since_ms: u64,
    /// This node holds the data of the target's history: a new link asks to continue it.
    pub(super) history: bool,
    /// The full sync in progress: bytes announced (-1: unknown, diskless) and read so far.
    pub(super) sync_total: i64,
    pub(super) sync_read: u64,
}

/// The link to a primary, when this node follows one.
pub struct Replica {
    /// One relaxed load for dispatch's READONLY check while this node is a primary.
    pub(super) following: AtomicBool,
    /// Bumped by every REPLICAOF that changes the target and by NO ONE: a link of an older
    /// generation stops before its next command and changes no status.
    pub(super) generation: AtomicU64,
    /// The target and its generation, for [`super::link::run`].
    pub(super) target: watch::Sender<Option<(Target, u64)>>,
    pub(super) status: Mutex<Status>,
    pub(super) state: AtomicU8,
    /// Bytes of the stream received (INFO's `slave_read_repl_offset`).
    pub(super) read_offset: AtomicU64,
    /// Monotonic ms of the last bytes from the primary.
    pub(super) last_io_ms: AtomicU64,
}

impl Default for Replica {
    fn default() -> Self {
        Replica {
            following: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            target: watch::Sender::new(None),
            status: Mutex::new(Status::default()),
            state: AtomicU8::new(LinkState::Connect as u8),
            read_offset: AtomicU64::new(0),
            last_io_ms: AtomicU64::new(0),
        }
    }
}

impl Replica {
    /// True while this node follows a primary.
    #[inline]
    pub fn following(&self) -> bool {
        self.following.load(Relaxed)
    }

    /// True when clients' writes get [`READONLY`]: following a primary with `replica-read-only`.
    #[inline]
    pub fn refuses_writes(&self, config: &parking_lot::RwLock<crate::config::Config>) -> bool {
        self.following() && config.read().replica_read_only
    }

    /// True when clients get [`MASTERDOWN`] for commands not flagged `stale`: following a primary
    /// whose link is not up (connecting, or syncing) with `replica-serve-stale-data no`.
    #[inline]
    pub fn is_stale(&self, config: &parking_lot::RwLock<crate::config::Config>) -> bool {
        self.following()
            && self.state() != LinkState::Connected
            && !config.read().replica_serve_stale_data
    }

    pub fn state(&self) -> LinkState {
        LinkState::from_u8(self.state.load(Relaxed))
    }

    pub fn target(&self) -> Option<Target> {
        self.status.lock().target.clone()
    }

    pub(super) fn current(&self, generation: u64) -> bool {
        self.generation.load(Relaxed) == generation
    }

    /// Changes the status if `generation` is still the current one.
    pub(super) fn update(&self, generation: u64, change: impl FnOnce(&mut Status)) {
        let mut status = self.status.lock();
        if self.current(generation) {
            change(&mut status);
        }
    }

    pub(super) fn set_state(&self, generation: u64, state: LinkState) {
        let status = self.status.lock();
        if self.current(generation) {
            self.state.store(state as u8, Relaxed);
        }
        drop(status);
    }
}

/// Starts following `target_host:port` (REPLICAOF, or `replicaof` at start-up): the link of any
/// earlier target ends, the data stays until the new primary's full sync replaces it. With
/// `continue_history` (REPLICAOF, FAILOVER's hand-over) the link asks to continue the history
/// this node holds, as Redis's cached master: a primary's own (up to the end of its stream), or
/// the one a replica synced from its previous primary. So a replica moved to its promoted sibling,
/// or a demoted primary, continues with `+CONTINUE` where the new primary's `replid2` allows.
pub fn follow(host: &impl Host, target_host: String, port: u16, continue_history: bool) {
    let replica = &host.replication().replica;
    let target = Target {
        host: target_host,
        port,
    };
    let replication = &host.replication();
    if continue_history && !replica.following() {
        replication.offset.store(super::repl_offset(host), Relaxed);
    }
    let generation = {
        let mut status = replica.status.lock();
        let history = continue_history && (status.history || !replica.following());
        let generation = replica.generation.fetch_add(1, Relaxed) + 1;
        *status = Status {
            target: Some(target.clone()),
            history,
            ..Status::default()
        };
        replica.state.store(LinkState::Connect as u8, Relaxed);
        replica.following.store(true, Relaxed);
        generation
    };
    host.store().replica_keeps_expired.store(true, Relaxed);
    host.config().write().replicaof = format!("{} {}", target.host, target.port);
    tracing::info!(host = %target.host, port = target.port, "REPLICAOF enabled: connecting to the primary");
    replica.target.send_replace(Some((target, generation)));
}

/// REPLICAOF NO ONE: the link ends, the data stays, and this node starts a history of its own
/// (the primary's id is kept as `replid2`).
pub fn stop_following(host: &impl Host) {
    let replica = &host.replication().replica;
    {
        let mut status = replica.status.lock();
        replica.generation.fetch_add(1, Relaxed);
        *status = Status::default();
        replica.state.store(LinkState::Connect as u8, Relaxed);
    }
    // A history to continue: a stream synced from a primary (or this node's own, kept before).
    let synced = host.replication().offset() > 0;
    host.replication().shift_replid();
    // The stream this node produces from now on continues the primary's numbering. After a sync
    // it is kept from this point (before clients may write), as Redis keeps the backlog its
    // replica made: the old primary's other replicas continue here with
    // `PSYNC <replid2> <offset+1>`, and must get every write made since. A node that never
    // synced has no history to continue, and keeps no stream until a replica attaches (Redis:
    // no backlog, ROLE's offset stays put).
    let feed = &host.replication().feed;
    feed.restart_at(host.replication().offset());
    if synced {
        feed.activate();
    }
    replica.following.store(false, Relaxed);
    host.store().replica_keeps_expired.store(false, Relaxed);
    host.config().write().replicaof.clear();
    tracing::info!("MASTER MODE enabled: no longer following a primary");
    replica.target.send_replace(None);
}

/// INFO replication's fields of a replica, from `role` to `replica_announced` (empty while this
/// node is a primary), as Redis 7.2 prints them.
pub fn info_fields(host: &impl Host) -> Vec<(&'static str, String)> {
    let replica = &host.replication().replica;
    let status = replica.status.lock();
    let Some(target) = status.target.clone() else {
        return Vec::new();
    };
    let state = replica.state();
    let now = crate::clock::monotonic_ms();
    let up = state == LinkState::Connected;
    let last_io = if up {
        (now.saturating_sub(replica.last_io_ms.load(Relaxed)) / 1000) as i64
    } else {
        -1
    };
    let offset = host.replication().offset();
    let read_offset = if up {
        replica.read_offset.load(Relaxed).max(offset)
    } else {
        offset
    };
    let mut fields = vec![
        ("role", "slave".to_string()),
        ("master_host", target.host.clone()),
        ("master_port", target.port.to_string()),
        (
            "master_link_status",
            if up { "up" } else { "down" }.to_string(),
        ),
        ("master_last_io_seconds_ago", last_io.to_string()),
        (
            "master_sync_in_progress",
            u8::from(state == LinkState::Sync).to_string(),
        ),
        ("slave_read_repl_offset", read_offset.to_string()),
        ("slave_repl_offset", offset.to_string()),
    ];
    if state == LinkState::Sync {
        let (total, read) = (status.sync_total, status.sync_read as i64);
        let left = if total < 0 { -1 } else { total - read };
        let perc = if total > 0 {
            read as f64 * 100.0 / total as f64
        } else {
            0.0
        };
        fields.extend([
            ("master_sync_total_bytes", total.to_string()),
            ("master_sync_read_bytes", read.to_string()),
            ("master_sync_left_bytes", left.to_string()),
            ("master_sync_perc", format!("{perc:.2}")),
            (
                "master_sync_last_io_seconds_ago",
                (now.saturating_sub(replica.last_io_ms.load(Relaxed)) / 1000).to_string(),
            ),
        ]);
    }
    if !up {
        let down = crate::clock::secs_since(status.down_since_ms, now);
        fields.push(("master_link_down_since_seconds", down.to_string()));
    }
    let config = host.config().read();
    fields.extend([
        ("slave_priority", config.replica_priority.to_string()),
        (
            "slave_read_only",
            u8::from(config.replica_read_only).to_string(),
        ),
        (
            "replica_announced",
            u8::from(config.replica_announced).to_string(),
        ),
    ]);
    drop(config);
    fields
}

/// ROLE of a replica: `slave`, the primary's host and port, the link's state and the offset
/// applied (-1 while the link is not up), as Redis. None while this node is a primary.
pub fn role(host: &impl Host) -> Option<Reply> {
    let target = host.replication().replica.target()?;
    let state = host.replication().replica.state();
    let offset = if state == LinkState::Connected {
        host.replication().offset() as i64
    } else {
        -1
    };
    Some(Reply::Array(vec![
        Reply::bulk_str("slave"),
        Reply::Bulk(target.host.into()),
        Reply::Int(i64::from(target.port)),
        Reply::bulk_str(state.name()),
        Reply::Int(offset),
    ]))
}
