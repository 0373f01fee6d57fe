//! Cluster mode: Redis Cluster's protocol on top of a slot map kept in Postgres.
//!
//! - [`key_slot`]: CRC16 and hash tags exactly as Redis computes them.
//! - [`SlotMap`]: one configuration (an epoch, the nodes, the owner of each of the 16384 slots).
//! - [`Cluster`]: this node's identity and the map it currently follows; [`routing`] is the one
//!   check dispatch makes with it.
//! - [`coordinator`]: the Postgres side (registration, heartbeats, following the configuration,
//!   and the admin transactions), [`admin`]: the `stmd cluster …` command line.
//!
//! There is no gossip bus: nodes never talk to each other about the map; they all follow the one
//! configuration row, and admin tools change it in one transaction that bumps the epoch.

pub mod admin;
pub mod coordinator;
pub mod manage;
pub mod membership;
pub mod migrate;
pub mod peers;
pub mod replicas;
pub mod routing;

use parking_lot::RwLock;
use std::path::Path;
use std::sync::Arc;

/// What the cluster's background work (following the map, manual failovers, slot migrations,
/// warming the slots a failover gives this node) reaches of the server beyond replication's
/// part: the Pub/Sub registry (shard channels of slots that leave this node are dropped) and the
/// scope-row sink (muted while this node is a replica). The server's shared state implements it.
pub trait Host: crate::replication::Host {
    fn pubsub(&self) -> &crate::pubsub::PubSub;
    fn scope_rows(&self) -> &crate::scope_rows::PersistHandle;
}

/// Redis Cluster's number of hash slots.
pub const SLOTS: usize = 16384;

/// No owner in [`SlotMap::owners`].
const UNASSIGNED: u16 = u16::MAX;

const CRC16: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_XMODEM);

/// CRC16-XMODEM (polynomial 0x1021, initial 0), the checksum of Redis's `crc16.c`.
pub fn crc16(data: &[u8]) -> u16 {
    CRC16.checksum(data)
}

/// The hash slot of a key, as Redis's `keyHashSlot`: when the key has a `{` followed later by a
/// `}` with at least one byte between them, only those bytes are hashed (the first `{`, then the
/// first `}` after it); otherwise (no tag, or an empty `{}`) the whole key is.
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|&b| b == b'{') {
        Some(open) => match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    crc16(hashed) & (SLOTS as u16 - 1)
}

/// A node as the configuration knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// 40 hex characters, kept in `--dir` so it survives restarts.
    pub id: String,
    pub ip: String,
    pub port: u16,
    /// Milliseconds since the node's last heartbeat, when the map was read.
    pub heartbeat_age_ms: u64,
    /// The primary this node is a replica of ([`replicas`]); None for a primary.
    pub primary: Option<String>,
    /// How far its replication stream had got at its last heartbeat (produced by a primary,
    /// applied by a replica): a failover promotes the replica with the most.
    pub repl_offset: u64,
}

impl NodeInfo {
    pub fn addr(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }
}

/// One cluster configuration: the epoch, the known nodes and the owner of every slot.
#[derive(Clone, Debug)]
pub struct SlotMap {
    pub epoch: u64,
    pub nodes: Vec<NodeInfo>,
    /// Per slot, an index into `nodes`, or [`UNASSIGNED`].
    owners: Vec<u16>,
}

impl Default for SlotMap {
    fn default() -> Self {
        SlotMap {
            epoch: 0,
            nodes: Vec::new(),
            owners: vec![UNASSIGNED; SLOTS],
        }
    }
}

impl SlotMap {
    /// A map from the configuration's ranges `(first, last, node id)`. Ranges naming an unknown
    /// node leave their slots unassigned.
    pub fn new(epoch: u64, nodes: Vec<NodeInfo>, ranges: &[(u16, u16, String)]) -> SlotMap {
        let mut map = SlotMap {
            epoch,
            nodes,
            ..SlotMap::default()
        };
        for (first, last, id) in ranges {
            let Some(index) = map.index_of(id) else {
                continue;
            };
            for slot in *first..=(*last).min(SLOTS as u16 - 1) {
                map.owners[slot as usize] = index as u16;
            }
        }
        map
    }

    /// A map of `nodes` with the owners of a configuration being changed (epoch 0).
    pub fn from_owners(nodes: Vec<NodeInfo>, owners: &[Option<String>]) -> SlotMap {
        let mut map = SlotMap {
            nodes,
            ..SlotMap::default()
        };
        for (slot, owner) in owners.iter().enumerate().take(SLOTS) {
            if let Some(index) = owner.as_deref().and_then(|id| map.index_of(id)) {
                map.owners[slot] = index as u16;
            }
        }
        map
    }

    fn index_of(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == id)
    }

    /// The node owning `slot`, if any.
    pub fn owner(&self, slot: u16) -> Option<&NodeInfo> {
        match self.owners.get(slot as usize) {
            Some(&index) if index != UNASSIGNED => self.nodes.get(index as usize),
            _ => None,
        }
    }

    /// The node with this id.
    pub fn node(&self, id: &str) -> Option<&NodeInfo> {
        self.index_of(id).map(|i| &self.nodes[i])
    }

    /// The contiguous slot ranges `node_id` owns, ascending.
    pub fn ranges_of(&self, node_id: &str) -> Vec<(u16, u16)> {
        let Some(index) = self.index_of(node_id) else {
            return Vec::new();
        };
        ranges_where(&self.owners, |owner| owner == index as u16)
    }

    /// Every assigned range with its owner, ascending by slot.
    pub fn assigned_ranges(&self) -> Vec<(u16, u16, &NodeInfo)> {
        let mut out = Vec::new();
        let mut slot = 0usize;
        while slot < SLOTS {
            let owner = self.owners[slot];
            let start = slot;
            while slot < SLOTS && self.owners[slot] == owner {
                slot += 1;
            }
            if owner != UNASSIGNED {
                if let Some(node) = self.nodes.get(owner as usize) {
                    out.push((start as u16, (slot - 1) as u16, node));
                }
            }
        }
        out
    }

    /// How many slots have an owner.
    pub fn assigned(&self) -> usize {
        self.owners.iter().filter(|&&o| o != UNASSIGNED).count()
    }

    /// The replicas of `primary`, in the map's (address) order.
    pub fn replicas_of(&self, primary: &str) -> Vec<&NodeInfo> {
        self.nodes
            .iter()
            .filter(|n| n.primary.as_deref() == Some(primary))
            .collect()
    }

    /// The primary `id` follows, when it is a replica of a node in the map.
    pub fn primary_of(&self, id: &str) -> Option<&NodeInfo> {
        self.node(id)
            .and_then(|n| n.primary.as_deref())
            .and_then(|p| self.node(p))
            .filter(|p| p.id != id)
    }

    /// Nodes that own at least one slot (CLUSTER INFO's `cluster_size`).
    pub fn serving_nodes(&self) -> usize {
        let mut seen = vec![false; self.nodes.len()];
        for &owner in &self.owners {
            if let Some(flag) = seen.get_mut(owner as usize) {
                *flag = true;
            }
        }
        seen.into_iter().filter(|&s| s).count()
    }
}

/// Ranges of consecutive slots whose owner satisfies `wanted`.
fn ranges_where(owners: &[u16], wanted: impl Fn(u16) -> bool) -> Vec<(u16, u16)> {
    let mut out: Vec<(u16, u16)> = Vec::new();
    for (slot, &owner) in owners.iter().enumerate() {
        if !wanted(owner) {
            continue;
        }
        match out.last_mut() {
            Some((_, last)) if *last as usize + 1 == slot => *last = slot as u16,
            _ => out.push((slot as u16, slot as u16)),
        }
    }
    out
}

/// Parses a slot list as the admin tool takes it: `0-99,200,300-301` (inclusive ranges).
pub fn parse_slot_ranges(text: &str) -> Result<Vec<(u16, u16)>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim) {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let parse = |s: &str| -> Result<u16, String> {
            s.parse::<u16>()
                .ok()
                .filter(|&n| (n as usize) < SLOTS)
                .ok_or_else(|| format!("invalid slot '{s}' (slots are 0 to {})", SLOTS - 1))
        };
        let (first, last) = (parse(first)?, parse(last)?);
        if first > last {
            return Err(format!(
                "invalid slot range '{part}': the start is after the end"
            ));
        }
        out.push((first, last));
    }
    Ok(out)
}

/// Splits all slots over `count` nodes as `redis-cli --cluster create` does (0-5460,
/// 5461-10922, 10923-16383 for three).
pub fn even_ranges(count: usize) -> Vec<(u16, u16)> {
    let per_node = SLOTS as f64 / count as f64;
    let mut out = Vec::with_capacity(count);
    let (mut first, mut cursor) = (0usize, 0.0f64);
    for i in 0..count {
        let mut last = (cursor + per_node - 1.0).round() as usize;
        if last >= SLOTS || i == count - 1 {
            last = SLOTS - 1;
        }
        out.push((first as u16, last as u16));
        first = last + 1;
        cursor += per_node;
    }
    out
}

/// Failover's reassignment: the slots owned by `dead` nodes go to the `live` ones, evenly and in
/// contiguous runs (the first `n % live` nodes get one more), in `live`'s order. Returns how many
/// slots each live node received (nodes receiving none are left out); empty when no dead node
/// owns a slot or no node is live.
pub fn take_over(
    owners: &mut [Option<String>],
    dead: &[String],
    live: &[String],
) -> Vec<(String, usize)> {
    let orphans: Vec<usize> = owners
        .iter()
        .enumerate()
        .filter(|(_, owner)| owner.as_ref().is_some_and(|id| dead.contains(id)))
        .map(|(slot, _)| slot)
        .collect();
    if orphans.is_empty() || live.is_empty() {
        return Vec::new();
    }
    let (each, extra) = (orphans.len() / live.len(), orphans.len() % live.len());
    let mut given = Vec::new();
    let mut next = orphans.iter();
    for (i, id) in live.iter().enumerate() {
        let count = each + usize::from(i < extra);
        for &slot in next.by_ref().take(count) {
            owners[slot] = Some(id.clone());
        }
        if count > 0 {
            given.push((id.clone(), count));
        }
    }
    given
}

/// The slots this node gains from `old` to `new` whose previous owner failed: a failover between
/// the two epochs declared it dead (`failed`, as recorded by the failover transaction), or it is
/// dead or gone in `new` (heartbeat older than `timeout_ms`). The record matters when a dead node
/// restarts before this node reads the new map: its fresh heartbeat would make the takeover look
/// like a plain move, and the summaries of its slots would not be warmed.
pub fn taken_over(
    old: &SlotMap,
    new: &SlotMap,
    me: &str,
    timeout_ms: u64,
    failed: &[String],
) -> Vec<u16> {
    (0..SLOTS as u16)
        .filter(|&slot| {
            new.owner(slot).is_some_and(|n| n.id == me)
                && old.owner(slot).is_some_and(|previous| {
                    previous.id != me
                        && (failed.contains(&previous.id)
                            || new
                                .node(&previous.id)
                                .is_none_or(|n| n.heartbeat_age_ms > timeout_ms))
                })
        })
        .collect()
}

/// Whether `new` gives this node a slot that another node owned in `old`.
pub fn gains_from_others(old: &SlotMap, new: &SlotMap, me: &str) -> bool {
    (0..SLOTS as u16).any(|slot| {
        new.owner(slot).is_some_and(|n| n.id == me)
            && old.owner(slot).is_some_and(|previous| previous.id != me)
    })
}

/// The node-id file in `--dir`.
pub const NODE_ID_FILE: &str = "stmd-node-id";

/// This node's id: read from `dir`, or made (40 random hex characters) and written there on the
/// first start, so a restarted node keeps its slots.
pub fn load_or_create_node_id(dir: &Path) -> Result<String, String> {
    let path = dir.join(NODE_ID_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let id = text.trim().to_string();
            if id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
                Ok(id.to_ascii_lowercase())
            } else {
                Err(format!(
                    "{} does not hold a node id (40 hex characters); remove it to get a new id",
                    path.display()
                ))
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let id: String = (0..40)
                .map(|_| char::from(b"0123456789abcdef"[rand::random::<usize>() % 16]))
                .collect();
            std::fs::write(&path, format!("{id}\n"))
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            Ok(id)
        }
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Cluster-wide counters shown in INFO's `# Cluster` section.
#[derive(Default)]
pub struct ClusterStats {
    /// MOVED redirections answered.
    pub moved: std::sync::atomic::AtomicU64,
    /// Configurations loaded from Postgres with a new epoch.
    pub epochs_followed: std::sync::atomic::AtomicU64,
    /// Slots this node received from failed nodes (their plain keys were lost).
    pub slots_taken_over: std::sync::atomic::AtomicU64,
    /// Failover transactions this node committed.
    pub failovers: std::sync::atomic::AtomicU64,
    /// STM entries warmed from the scope rows of slots taken over.
    pub takeover_rows_warmed: std::sync::atomic::AtomicU64,
    /// Stale local keys dropped from slots taken over (copies this node held while not owning).
    pub takeover_stale_keys_dropped: std::sync::atomic::AtomicU64,
    /// Slot migrations this node carried out as the source, and those that failed.
    pub migrations_done: std::sync::atomic::AtomicU64,
    pub migrations_failed: std::sync::atomic::AtomicU64,
    /// Slots and keys this node handed to other nodes.
    pub slots_migrated_out: std::sync::atomic::AtomicU64,
    pub keys_migrated_out: std::sync::atomic::AtomicU64,
    /// The pause of the last migration batch, and the longest one, in microseconds.
    pub migration_pause_last_us: std::sync::atomic::AtomicU64,
    pub migration_pause_max_us: std::sync::atomic::AtomicU64,
}

/// This node in cluster mode: who it is and the configuration it follows.
pub struct Cluster {
    pub me: NodeInfo,
    /// `--cluster-node-timeout` in ms: a node silent for longer is shown as failing.
    pub node_timeout_ms: u64,
    map: RwLock<Arc<SlotMap>>,
    pub stats: ClusterStats,
    /// Pauses the slots being handed over ([`migrate`]).
    pub gate: migrate::SlotGate,
    /// Connections to the other nodes (owner-wide STM, PUBLISH forwarding).
    pub peers: peers::Peers,
    /// CLUSTER FAILOVER's request to the configuration follower.
    pub manual: replicas::ManualRequest,
    /// The coordinator, once joined: CLUSTER's administration subcommands ([`manage`]) change the
    /// configuration through it.
    pub coordinator: std::sync::OnceLock<coordinator::Coordinator>,
    /// The nodes that left the configuration this node follows, and when it saw them go: CLUSTER
    /// FORGET of one of them answers OK for [`FORGOTTEN_FOR`], as Redis's does for a node it
    /// forgot (`redis-cli --cluster del-node` sends FORGET to every node, and the first one
    /// already removes the node for all).
    forgotten: parking_lot::Mutex<Vec<(String, std::time::Instant)>>,
}

/// How long a node that left the configuration is remembered as forgotten (Redis's blacklist TTL).
pub const FORGOTTEN_FOR: std::time::Duration = std::time::Duration::from_secs(60);

impl Cluster {
    pub fn new(me: NodeInfo, node_timeout_ms: u64) -> Cluster {
        Cluster {
            me,
            node_timeout_ms,
            map: RwLock::new(Arc::new(SlotMap::default())),
            stats: ClusterStats::default(),
            gate: migrate::SlotGate::default(),
            peers: peers::Peers::default(),
            manual: replicas::ManualRequest::default(),
            coordinator: std::sync::OnceLock::new(),
            forgotten: parking_lot::Mutex::new(Vec::new()),
        }
    }

    /// The configuration in force (a cheap clone of an `Arc`).
    pub fn map(&self) -> Arc<SlotMap> {
        self.map.read().clone()
    }

    /// Installs a configuration read from the coordinator; an older epoch than the one in force
    /// is ignored (a slow poll must not undo a notification's newer map).
    pub fn install(&self, map: SlotMap) -> bool {
        let mut current = self.map.write();
        if map.epoch < current.epoch {
            return false;
        }
        let newer = map.epoch > current.epoch;
        if newer {
            let mut forgotten = self.forgotten.lock();
            forgotten.retain(|(_, at)| at.elapsed() < FORGOTTEN_FOR);
            for gone in current.nodes.iter().filter(|n| map.node(&n.id).is_none()) {
                forgotten.push((gone.id.clone(), std::time::Instant::now()));
            }
        }
        *current = Arc::new(map);
        if newer {
            self.stats
                .epochs_followed
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        newer
    }

    /// Installs a configuration ([`Cluster::install`]) and lets go of what this node no longer
    /// serves: the subscribers of shard channels whose slot left it are unsubscribed (they get
    /// `sunsubscribe`), as Redis does when a slot is deleted from a node.
    pub fn follow(&self, map: SlotMap, pubsub: &crate::pubsub::PubSub) -> bool {
        let newer = self.install(map);
        if newer {
            pubsub.drop_shard_channels(|channel| self.owns(key_slot(channel)));
        }
        newer
    }

    /// Whether `id` left the configuration this node follows within [`FORGOTTEN_FOR`].
    pub fn recently_forgotten(&self, id: &str) -> bool {
        self.forgotten
            .lock()
            .iter()
            .any(|(gone, at)| gone == id && at.elapsed() < FORGOTTEN_FOR)
    }

    /// Whether this node owns `slot` in the configuration in force.
    pub fn owns(&self, slot: u16) -> bool {
        self.map
            .read()
            .owner(slot)
            .is_some_and(|node| node.id == self.me.id)
    }

    /// Whether this node serves `slot`: Ok, or Redis's redirection or CLUSTERDOWN error text.
    pub fn serves(&self, slot: u16) -> Result<(), String> {
        self.serves_for(slot, false)
    }

    /// [`Cluster::serves`], where `replica_read` (a read on a READONLY connection) is also served
    /// by a replica of the slot's owner, as Redis's replicas serve them.
    pub fn serves_for(&self, slot: u16, replica_read: bool) -> Result<(), String> {
        let map = self.map.read();
        match map.owner(slot) {
            Some(node) if node.id == self.me.id => Ok(()),
            Some(node)
                if replica_read
                    && map
                        .primary_of(&self.me.id)
                        .is_some_and(|primary| primary.id == node.id) =>
            {
                Ok(())
            }
            Some(node) => {
                self.stats
                    .moved
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Err(format!("MOVED {slot} {}", node.addr()))
            }
            None => Err(CLUSTERDOWN_UNBOUND.to_string()),
        }
    }
}

/// Checks a cluster node's configuration and makes its identity, before anything starts:
/// `--cluster-enabled yes` needs a Postgres `--database-url` (the slot map lives there) and an
/// address clients can reach. Also switches STM keys to the cluster format.
pub fn prepare(
    config: &crate::config::Config,
    local_addr: std::net::SocketAddr,
) -> Result<Arc<Cluster>, String> {
    let postgres = config
        .database_url
        .as_deref()
        .is_some_and(|url| url.starts_with("postgres://") || url.starts_with("postgresql://"));
    if !postgres || config.no_database {
        return Err(
            "--cluster-enabled yes needs --database-url postgres://…: the cluster's slot map lives in Postgres"
                .into(),
        );
    }
    let ip = match config
        .cluster_announce_ip
        .as_deref()
        .filter(|ip| !ip.is_empty())
    {
        Some(ip) => ip.to_string(),
        None if local_addr.ip().is_unspecified() => {
            return Err(format!(
                "--bind {} is not an address clients can be sent to: set --cluster-announce-ip",
                config.bind
            ))
        }
        None => local_addr.ip().to_string(),
    };
    let port = match config.cluster_announce_port {
        0 => local_addr.port(),
        port => port,
    };
    let id = load_or_create_node_id(&config.dir)?;
    crate::stm::use_cluster_keys();
    Ok(Arc::new(Cluster::new(
        NodeInfo {
            id,
            ip,
            port,
            heartbeat_age_ms: 0,
            primary: None,
            repl_offset: 0,
        },
        config.cluster_node_timeout,
    )))
}

/// Redis's texts.
pub const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
pub const CLUSTERDOWN_UNBOUND: &str = "CLUSTERDOWN Hash slot not served";
pub const DISABLED: &str = "ERR This instance has cluster support disabled";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis() {
        // Checked against redis-server 7.0 (`CLUSTER KEYSLOT`, cluster-enabled yes).
        for (key, slot) in [
            ("foo", 12182),
            ("bar", 5061),
            ("hello", 866),
            ("123456789", 12739),
            ("", 0),
            ("{user1000}.following", 3443),
            ("{user1000}.followers", 3443),
            ("foo{}{bar}", 8363),
            ("foo{{bar}}zap", 4015),
            ("foo{bar}{zap}", 5061),
            ("{}", 15257),
            ("a{b", 13340),
            ("shortterm:user:u1:{c1}:2", 14347),
            ("c1", 14347),
        ] {
            assert_eq!(key_slot(key.as_bytes()), slot, "{key}");
        }
        // The check value of CRC16-XMODEM.
        assert_eq!(crc16(b"123456789"), 0x31c3);
    }

    #[test]
    fn slot_ranges_parse_and_refuse() {
        assert_eq!(
            parse_slot_ranges("0-99,200").expect("parses"),
            [(0, 99), (200, 200)]
        );
        assert!(parse_slot_ranges("16384").is_err());
        assert!(parse_slot_ranges("5-1").is_err());
        assert!(parse_slot_ranges("a").is_err());
        assert!(parse_slot_ranges("").is_err());
    }

    #[test]
    fn even_ranges_follow_redis_cli() {
        assert_eq!(even_ranges(3), [(0, 5460), (5461, 10922), (10923, 16383)]);
        assert_eq!(even_ranges(1), [(0, 16383)]);
        let four = even_ranges(4);
        assert_eq!(four.first().map(|r| r.0), Some(0));
        assert_eq!(four.last().map(|r| r.1), Some(16383));
        assert!(four.windows(2).all(|w| w[0].1 + 1 == w[1].0));
    }

    fn node(id: &str, port: u16) -> NodeInfo {
        NodeInfo {
            id: id.repeat(40),
            ip: "127.0.0.2".into(),
            port,
            heartbeat_age_ms: 0,
            primary: None,
            repl_offset: 0,
        }
    }

    #[test]
    fn the_map_answers_owners_ranges_and_redirections() {
        let (a, b) = (node("a", 7001), node("b", 7002));
        let map = SlotMap::new(
            3,
            vec![a.clone(), b.clone()],
            &[
                (0, 99, a.id.clone()),
                (100, 199, b.id.clone()),
                (250, 250, a.id.clone()),
            ],
        );
        assert_eq!(map.ranges_of(&a.id), [(0, 99), (250, 250)]);
        assert_eq!(map.assigned(), 201);
        assert_eq!(map.serving_nodes(), 2);
        assert_eq!(map.assigned_ranges().len(), 3);
        let cluster = Cluster::new(a.clone(), 15000);
        assert!(cluster.install(map));
        assert_eq!(cluster.serves(5), Ok(()));
        assert_eq!(cluster.serves(150), Err("MOVED 150 127.0.0.2:7002".into()));
        assert_eq!(cluster.serves(300), Err(CLUSTERDOWN_UNBOUND.into()));
        assert!(
            !cluster.install(SlotMap::new(2, vec![], &[])),
            "an older epoch is not installed"
        );
        assert_eq!(cluster.map().epoch, 3);
    }

    #[test]
    fn failover_spreads_a_dead_nodes_slots_evenly_over_the_live() {
        let (a, b, c) = ("a".repeat(40), "b".repeat(40), "c".repeat(40));
        let mut owners: Vec<Option<String>> = vec![None; SLOTS];
        for (i, (first, last)) in even_ranges(3).into_iter().enumerate() {
            let id = [&a, &b, &c][i];
            for slot in first..=last {
                owners[slot as usize] = Some(id.clone());
            }
        }
        let given = take_over(
            &mut owners,
            std::slice::from_ref(&b),
            &[a.clone(), c.clone()],
        );
        assert_eq!(given, [(a.clone(), 2731), (c.clone(), 2731)]);
        assert!(owners.iter().all(|o| o.as_ref() != Some(&b)));
        assert!(owners.iter().all(Option::is_some), "every slot still owned");
        assert_eq!(owners[5461].as_deref(), Some(a.as_str()));
        assert_eq!(owners[10922].as_deref(), Some(c.as_str()));
        assert_eq!(
            owners[0].as_deref(),
            Some(a.as_str()),
            "live nodes keep theirs"
        );
        // Again: nothing left on a dead node, nothing to do (the second racer's view).
        assert!(take_over(
            &mut owners,
            std::slice::from_ref(&b),
            &[a.clone(), c.clone()]
        )
        .is_empty());
        // No live node: nothing is reassigned.
        assert!(take_over(&mut owners, std::slice::from_ref(&a), &[]).is_empty());
    }

    #[test]
    fn gains_from_a_failed_node_are_told_from_moves() {
        let (mut a, b) = (node("a", 7001), node("b", 7002));
        let old = SlotMap::new(
            1,
            vec![a.clone(), b.clone()],
            &[(0, 9, a.id.clone()), (10, 19, b.id.clone())],
        );
        let ranges = [(0, 19, a.id.clone())];
        let moved = SlotMap::new(2, vec![a.clone(), b.clone()], &ranges);
        assert!(
            taken_over(&old, &moved, &a.id, 1000, &[]).is_empty(),
            "b is alive"
        );
        assert!(gains_from_others(&old, &moved, &a.id));
        assert!(!gains_from_others(&old, &moved, &b.id));
        // b restarted (a fresh heartbeat) after a failover declared it dead: still a takeover.
        assert_eq!(
            taken_over(&old, &moved, &a.id, 1000, std::slice::from_ref(&b.id)),
            (10..20).collect::<Vec<u16>>()
        );
        let mut dead_b = b.clone();
        dead_b.heartbeat_age_ms = 5000;
        let failed = SlotMap::new(2, vec![a.clone(), dead_b], &ranges);
        assert_eq!(
            taken_over(&old, &failed, &a.id, 1000, &[]),
            (10..20).collect::<Vec<u16>>()
        );
        a.heartbeat_age_ms = 0;
        assert!(taken_over(&old, &failed, &b.id, 1000, &[]).is_empty());
    }

    #[test]
    fn the_node_id_survives_a_restart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let id = load_or_create_node_id(dir.path()).expect("created");
        assert_eq!(id.len(), 40);
        assert_eq!(load_or_create_node_id(dir.path()).expect("read"), id);
        std::fs::write(dir.path().join(NODE_ID_FILE), "nonsense").expect("write");
        assert!(load_or_create_node_id(dir.path()).is_err());
    }
}
