//! The state every connection shares, one per server: the store, the configuration and each
//! subsystem's own state. The handlers reach it through `Ctx`; server.rs (above) builds it and
//! gives the lower layers what they need of it through their `Host` traits.

use crate::clients::ClientRegistry;
use crate::config::Config;
use crate::metrics::Stats;
use crate::stm::StmState;
use crate::store::Store;
use parking_lot::RwLock;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// Everything the connections share. One per server.
pub struct Shared {
    pub store: Arc<Store>,
    pub config: RwLock<Config>,
    pub stats: Stats,
    pub clients: ClientRegistry,
    pub stm: StmState,
    /// Command names after `--rename-command`.
    pub commands: crate::commands::table::CommandNames,
    /// Channel and pattern subscriptions of every connection.
    pub pubsub: crate::pubsub::PubSub,
    pub started: Instant,
    /// 40 hex characters, new every start, as Redis's `run_id`.
    pub run_id: String,
    pub local_addr: SocketAddr,
    /// The plain TCP port served (INFO's `tcp_port`, the port a replica gives its primary);
    /// CONFIG SET port moves it.
    pub tcp_port: std::sync::atomic::AtomicU16,
    /// The plain listener CONFIG SET port made (None inside: `port 0`, stop listening), taken by
    /// the accept loop when `listener_changed` wakes it.
    pub new_listener: parking_lot::Mutex<Option<Option<TcpListener>>>,
    pub listener_changed: Notify,
    /// Commands slower than `slowlog-log-slower-than`.
    pub slowlog: crate::slowlog::SlowLog,
    /// Connections in MONITOR mode.
    pub monitors: crate::monitor::Monitors,
    /// Per-command counts and latencies for the metrics endpoint.
    pub command_stats: crate::metrics::CommandStats,
    /// LATENCY's events over `latency-monitor-threshold`.
    pub latency: crate::latency::LatencyMonitor,
    /// Memory at start-up and the peak seen, for INFO memory and MEMORY STATS.
    pub memory_marks: crate::metrics::MemoryMarks,
    /// Woken by the SHUTDOWN command.
    pub shutdown_requested: Notify,
    /// The shutdown under way skips the wait for lagging replicas (SHUTDOWN NOW, a signal whose
    /// setting has `now`).
    pub shutdown_now: std::sync::atomic::AtomicBool,
    /// Keyspace notifications and client-side caching.
    pub events: crate::events::Events,
    /// The FT.* search indexes.
    pub search: crate::search::Registry,
    /// The Lua engine and script cache (EVAL, SCRIPT).
    pub scripting: crate::scripting::Scripting,
    /// Users, their permissions and the ACL log.
    pub acl: crate::acl::Acl,
    /// Cluster mode: this node and the slot map it follows. None in single-node mode, where
    /// routing costs dispatch one branch.
    pub cluster: Option<Arc<crate::cluster::Cluster>>,
    /// RDB snapshots: SAVE, BGSAVE, the `save` rules, LASTSAVE.
    pub snapshots: crate::snapshot::Snapshots,
    /// Replication: this node's id and offset, its replicas, or its primary.
    pub replication: crate::replication::Replication,
    /// The append-only file (`appendonly`).
    pub aof: crate::aof::Aof,
    /// The TLS configurations in force (the listener's, the replica's link's).
    pub tls: crate::tls::Tls,
    /// The process supervisor told when the server is ready and when it stops (`supervised`).
    pub supervisor: crate::supervise::Supervisor,
}
