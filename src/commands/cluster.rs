//! CLUSTER (SHARDS, SLOTS, NODES, INFO, MYID, MYSHARDID, KEYSLOT, COUNTKEYSINSLOT,
//! GETKEYSINSLOT, HELP), READONLY, READWRITE and ASKING, with Redis 7's reply shapes; the
//! administration subcommands (ADDSLOTS, SETSLOT, FORGET, …) are in `super::cluster_admin`. In
//! single-node mode they answer Redis's `This instance has cluster support disabled`.
//!
//! COUNTKEYSINSLOT and GETKEYSINSLOT scan the keyspace one shard at a time instead of keeping a
//! per-slot index: an index would cost every write of every node (and single-node mode) to serve
//! two admin commands. The slot migration (`crate::cluster::migrate`) scans the same way, once per
//! batch of slots, inside the batch's pause: an index is for when its pauses ask for one.

use super::args::{int, is};
use super::connection::help_reply;
use super::{CmdResult, Ctx};
use crate::cluster::{key_slot, Cluster, NodeInfo, SlotMap, DISABLED, SLOTS};
use crate::protocol::Reply;
use std::sync::atomic::Ordering;

fn cluster_of<'a>(ctx: &'a Ctx) -> Result<&'a Cluster, Reply> {
    ctx.shared
        .cluster
        .as_deref()
        .ok_or_else(|| Reply::error(DISABLED))
}

/// READONLY, READWRITE, ASKING: accepted in cluster mode. READONLY lets a replica serve this
/// connection's reads of its primary's slots (READWRITE ends that; see
/// `crate::cluster::routing`); ASKING lets the next command, when it is RESTORE or DEL, touch a
/// slot this node does not own yet (a slot migration's copy, see `crate::cluster::migrate`).
pub fn accept(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    cluster_of(ctx)?;
    if is(args[0], "ASKING") {
        ctx.conn.asking = true;
    } else {
        ctx.conn.readonly = is(args[0], "READONLY");
    }
    Ok(Reply::OK)
}

pub fn cluster(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    if is(sub, "PEER") {
        return peer(ctx, args);
    }
    let cluster = cluster_of(ctx)?;
    let map = cluster.map();
    if is(sub, "HELP") {
        Ok(help())
    } else if is(sub, "KEYSLOT") {
        Ok(Reply::Int(i64::from(key_slot(args[2]))))
    } else if is(sub, "MYID") {
        Ok(Reply::bulk(&cluster.me.id))
    } else if is(sub, "MYSHARDID") {
        // A shard is a primary and its replicas: its id is the primary's node id.
        let primary = map.primary_of(&cluster.me.id);
        Ok(Reply::bulk(primary.map_or(&cluster.me.id, |p| &p.id)))
    } else if is(sub, "INFO") {
        Ok(Reply::Verbatim(info(cluster, &map)))
    } else if is(sub, "NODES") {
        Ok(Reply::Verbatim(nodes(cluster, &map)))
    } else if is(sub, "REPLICAS") || is(sub, "SLAVES") {
        replicas(ctx, cluster, &map, args[2])
    } else if is(sub, "FAILOVER") {
        failover(ctx, cluster, &map, args)
    } else if is(sub, "SLOTS") {
        Ok(slots(ctx, cluster, &map))
    } else if is(sub, "SHARDS") {
        Ok(shards(ctx, cluster, &map))
    } else if is(sub, "COUNTKEYSINSLOT") {
        let slot = int(args[2])?;
        let slot = u16::try_from(slot)
            .ok()
            .filter(|&s| (s as usize) < SLOTS)
            .ok_or_else(|| Reply::error("ERR Invalid slot"))?;
        let mut count = 0i64;
        scan_slot(ctx, slot, |_| {
            count += 1;
            true
        });
        Ok(Reply::Int(count))
    } else if is(sub, "GETKEYSINSLOT") {
        let (slot, max) = (int(args[2])?, int(args[3])?);
        let invalid = || Reply::error("ERR Invalid slot or number of keys");
        let slot = u16::try_from(slot)
            .ok()
            .filter(|&s| (s as usize) < SLOTS)
            .ok_or_else(invalid)?;
        let max = usize::try_from(max).map_err(|_| invalid())?;
        let mut keys = Vec::new();
        if max > 0 {
            scan_slot(ctx, slot, |key| {
                keys.push(Reply::Bulk(bytes::Bytes::copy_from_slice(key)));
                keys.len() < max
            });
        }
        Ok(Reply::Array(keys))
    } else {
        Err(super::unknown_subcommand(sub, "CLUSTER"))
    }
}

/// `CLUSTER PEER <node-id> <request …>`: stmd's node-to-node form (not a Redis command), sent by
/// [`crate::cluster::peers`]. It must name the node it is sent to, so a client cannot use it by
/// mistake for the owner-wide command. It answers from this node only and never asks further
/// (no forwarding loops):
/// - `STM.RECENT <2|3> <STM.RECENT's arguments>`: this node's entries (see `stm::recent_peer`);
/// - `STM.CONTEXT <STM.CONTEXT's arguments>`: this node's other-channel blocks (see
///   `stm_context::context_peer`);
/// - `FT.SEARCH <2|3> <FT.SEARCH's arguments>`: this node's results (see
///   `search_gather::search_peer`);
/// - `STM.FORGET USER <user>`: deletes this node's entries of the user, answers the count;
/// - `PUBLISH <channel> <message>`: delivers to this node's subscribers, answers their count;
/// - `SLOTKEYS <slots as 0-99,200>`: the lowest of the slots in which this node holds a key, or
///   -1 (CLUSTER DELSLOTS and SETSLOT check that a slot leaving its owner holds no keys).
fn peer(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let addressed = cluster_of(ctx)?.me.id.as_bytes() == args[2];
    if !addressed {
        return Err(Reply::error(
            "ERR CLUSTER PEER is stmd's node-to-node form and must name the node it is sent to",
        ));
    }
    let request = &args[3..];
    let op = request[0];
    if is(op, "STM.RECENT") && request.len() >= 2 {
        super::stm::recent_peer(ctx, request)
    } else if is(op, "STM.CONTEXT") {
        super::stm_context::context_peer(ctx, request)
    } else if is(op, "FT.SEARCH") && request.len() >= 2 {
        super::search_gather::search_peer(ctx, request)
    } else if is(op, "STM.FORGET") && request.len() == 3 && is(request[1], "USER") {
        super::stm::forget_local(ctx, request)
    } else if is(op, "SLOTKEYS") && request.len() == 2 {
        let ranges = crate::cluster::parse_slot_ranges(&String::from_utf8_lossy(request[1]))
            .map_err(|e| Reply::error(format!("ERR {e}")))?;
        let mut wanted = vec![false; SLOTS];
        for (first, last) in ranges {
            for slot in first..=last {
                wanted[usize::from(slot)] = true;
            }
        }
        let lowest = super::cluster_admin::lowest_slot_with_keys(ctx, &wanted);
        Ok(Reply::Int(lowest.map_or(-1, i64::from)))
    } else if is(op, "PUBLISH") && request.len() == 3 {
        Ok(Reply::Int(
            ctx.shared.pubsub.publish(request[1], request[2]) as i64,
        ))
    } else {
        Err(Reply::error(super::err::SYNTAX))
    }
}

/// Calls `found` with each live key of `slot` in database 0 (the only one in cluster mode), one
/// shard locked at a time, until it returns false.
fn scan_slot(ctx: &Ctx, slot: u16, mut found: impl FnMut(&[u8]) -> bool) {
    let store = &ctx.shared.store;
    if store.existing(0).is_none() {
        return;
    }
    let now = crate::store::now_ms();
    for shard in 0..store.shard_count() {
        let locked = store.lock_shard(0, shard);
        let mut more = true;
        locked.for_each(|key, entry| {
            if more && !entry.is_expired(now) && key_slot(key) == slot {
                more = found(key);
            }
        });
        if !more {
            return;
        }
    }
}

fn help() -> Reply {
    help_reply(&[
        "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "COUNTKEYSINSLOT <slot>",
        "    Return the number of keys in <slot>.",
        "GETKEYSINSLOT <slot> <count>",
        "    Return key names stored by current node in a slot.",
        "INFO",
        "    Return information about the cluster.",
        "KEYSLOT <key>",
        "    Return the hash slot for <key>.",
        "MYID",
        "    Return the node id.",
        "MYSHARDID",
        "    Return the node's shard id.",
        "NODES",
        "    Return cluster configuration seen by node. Output format:",
        "    <id> <ip:port@bus-port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
        "REPLICAS <node-id>",
        "    Return <node-id> replicas.",
        "SLOTS",
        "    Return information about slots range mappings. Each range is made of:",
        "    start, end, master and replicas IP addresses, ports and ids",
        "SHARDS",
        "    Return information about slot range mappings and the nodes associated with them.",
        "ADDSLOTS <slot> [<slot> ...]",
        "    Assign slots to current node.",
        "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
        "    Assign slots which are between <start-slot> and <end-slot> to current node.",
        "BUMPEPOCH",
        "    Advance the cluster config epoch.",
        "COUNT-FAILURE-REPORTS <node-id>",
        "    Return number of failure reports for <node-id>.",
        "DELSLOTS <slot> [<slot> ...]",
        "    Delete slots information from current node.",
        "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
        "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
        "FAILOVER [FORCE|TAKEOVER]",
        "    Promote current replica node to being a master.",
        "FORGET <node-id>",
        "    Remove a node from the cluster.",
        "FLUSHSLOTS",
        "    Delete current node own slots information.",
        "MEET <ip> <port> [<bus-port>]",
        "    Connect nodes into a working cluster.",
        "REPLICATE <node-id>",
        "    Configure current node as replica to <node-id>.",
        "RESET [HARD|SOFT]",
        "    Reset current node (default: soft).",
        "SET-CONFIG-EPOCH <epoch>",
        "    Set config epoch of current node.",
        "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
        "    Set slot state.",
        "SAVECONFIG",
        "    Force saving cluster configuration on disk.",
        "LINKS",
        "    Return information about all network links between this node and its peers.",
        "    Output format is an array where each array element is a map containing attributes of a link",
        "HELP",
        "    Print this help.",
    ])
}

/// A node is failing once its heartbeat is older than the node timeout.
fn failing(cluster: &Cluster, node: &NodeInfo) -> bool {
    node.id != cluster.me.id && node.heartbeat_age_ms > cluster.node_timeout_ms
}

fn info(cluster: &Cluster, map: &SlotMap) -> String {
    let assigned = map.assigned();
    let failing_slots: usize = map
        .nodes
        .iter()
        .filter(|n| failing(cluster, n))
        .map(|n| {
            map.ranges_of(&n.id)
                .iter()
                .map(|(a, b)| usize::from(b - a) + 1)
                .sum::<usize>()
        })
        .sum();
    let lines = [
        (
            "cluster_state",
            if assigned == SLOTS { "ok" } else { "fail" }.to_string(),
        ),
        ("cluster_slots_assigned", assigned.to_string()),
        ("cluster_slots_ok", (assigned - failing_slots).to_string()),
        ("cluster_slots_pfail", failing_slots.to_string()),
        ("cluster_slots_fail", "0".to_string()),
        ("cluster_known_nodes", map.nodes.len().to_string()),
        ("cluster_size", map.serving_nodes().to_string()),
        ("cluster_current_epoch", map.epoch.to_string()),
        ("cluster_my_epoch", map.epoch.to_string()),
        ("cluster_stats_messages_sent", "0".to_string()),
        ("cluster_stats_messages_received", "0".to_string()),
        ("total_cluster_links_buffer_limit_exceeded", "0".to_string()),
    ];
    let mut out = String::new();
    for (name, value) in lines {
        out.push_str(name);
        out.push(':');
        out.push_str(&value);
        out.push_str("\r\n");
    }
    out
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// CLUSTER NODES: one line per node, in the format `redis-cli --cluster check` parses. There is
/// no cluster bus, so the bus port is 0 and the link is "connected" while the heartbeats come.
fn nodes(cluster: &Cluster, map: &SlotMap) -> String {
    let now = unix_ms();
    map.nodes
        .iter()
        .map(|node| node_line(map, node, &cluster.me.id, cluster.node_timeout_ms, now))
        .collect()
}

/// One CLUSTER NODES line (with its newline): `<id> <ip:port@0> <flags> <primary id or -> 0
/// <pong ms> <epoch> <link> <slots…>`. Flags as Redis orders them: `myself`, `master` or `slave`,
/// `fail?` for a node whose heartbeat is older than the node timeout.
pub fn node_line(map: &SlotMap, node: &NodeInfo, me: &str, timeout_ms: u64, now: u64) -> String {
    let mine = node.id == me;
    let down = !mine && node.heartbeat_age_ms > timeout_ms;
    let primary = map.primary_of(&node.id);
    let mut flags = Vec::with_capacity(3);
    if mine {
        flags.push("myself");
    }
    flags.push(if primary.is_some() { "slave" } else { "master" });
    if down {
        flags.push("fail?");
    }
    let pong = if mine {
        0
    } else {
        now.saturating_sub(node.heartbeat_age_ms)
    };
    let mut line = format!(
        "{} {}:{}@0 {} {} 0 {pong} {} {}",
        node.id,
        node.ip,
        node.port,
        flags.join(","),
        primary.map_or("-", |p| p.id.as_str()),
        map.epoch,
        if down { "disconnected" } else { "connected" }
    );
    for (a, b) in map.ranges_of(&node.id) {
        if a == b {
            line.push_str(&format!(" {a}"));
        } else {
            line.push_str(&format!(" {a}-{b}"));
        }
    }
    line.push('\n');
    line
}

/// CLUSTER REPLICAS|SLAVES <node-id>: the NODES lines of the node's replicas, as Redis.
fn replicas(_ctx: &Ctx, cluster: &Cluster, map: &SlotMap, id: &[u8]) -> CmdResult {
    let id = String::from_utf8_lossy(id);
    let Some(node) = map.node(&id) else {
        return Err(Reply::error(format!("ERR Unknown node {id}")));
    };
    if map.primary_of(&node.id).is_some() {
        return Err(Reply::error("ERR The specified node is not a master"));
    }
    let now = unix_ms();
    Ok(Reply::Array(
        map.replicas_of(&node.id)
            .into_iter()
            .map(|r| {
                Reply::bulk(node_line(
                    map,
                    r,
                    &cluster.me.id,
                    cluster.node_timeout_ms,
                    now,
                ))
            })
            .collect(),
    ))
}

/// CLUSTER FAILOVER [FORCE|TAKEOVER] on a replica: a manual failover, carried out by the
/// configuration follower ([`crate::cluster::replicas::manual_failover`]); `+OK` once started,
/// as in Redis.
fn failover(_ctx: &Ctx, cluster: &Cluster, map: &SlotMap, args: &[&[u8]]) -> CmdResult {
    use crate::cluster::replicas::Manual;
    let mode = match args.get(2) {
        None => Manual::Coordinated,
        Some(option) if args.len() == 3 && is(option, "FORCE") => Manual::Force,
        Some(option) if args.len() == 3 && is(option, "TAKEOVER") => Manual::Takeover,
        Some(_) => return Err(Reply::error(super::err::SYNTAX)),
    };
    let Some(primary) = map.primary_of(&cluster.me.id) else {
        return Err(Reply::error(
            "ERR You should send CLUSTER FAILOVER to a replica",
        ));
    };
    if mode == Manual::Coordinated && primary.heartbeat_age_ms > cluster.node_timeout_ms {
        return Err(Reply::error(
            "ERR Master is down or failed, please use CLUSTER FAILOVER FORCE",
        ));
    }
    cluster.manual.request(mode);
    Ok(Reply::OK)
}

/// One node's entry in CLUSTER SLOTS: ip, port, id, and the (empty) map of other endpoints.
fn slot_node(node: &NodeInfo) -> Reply {
    Reply::Array(vec![
        Reply::bulk(&node.ip),
        Reply::Int(i64::from(node.port)),
        Reply::bulk(&node.id),
        Reply::Map(Vec::new()),
    ])
}

/// CLUSTER SLOTS: each range with its owner, then the owner's replicas that are not failing
/// (Redis leaves failed replicas out).
fn slots(_ctx: &Ctx, cluster: &Cluster, map: &SlotMap) -> Reply {
    Reply::Array(
        map.assigned_ranges()
            .into_iter()
            .map(|(first, last, node)| {
                let mut entry = vec![
                    Reply::Int(i64::from(first)),
                    Reply::Int(i64::from(last)),
                    slot_node(node),
                ];
                entry.extend(
                    map.replicas_of(&node.id)
                        .into_iter()
                        .filter(|r| !failing(cluster, r))
                        .map(slot_node),
                );
                Reply::Array(entry)
            })
            .collect(),
    )
}

/// CLUSTER SHARDS: one shard per primary (owning slots or not), its node entries the primary's
/// then its replicas'. A node's `replication-offset` is this node's own for itself, else the one
/// of its last heartbeat; `health` is `fail` for a failing node, `loading` for a replica that has
/// no data yet (offset 0, as Redis), else `online`.
fn shards(ctx: &Ctx, cluster: &Cluster, map: &SlotMap) -> Reply {
    let own_offset = crate::replication::repl_offset(ctx.shared);
    let details = |node: &NodeInfo, replica: bool| {
        let offset = match node.id == cluster.me.id {
            true => own_offset,
            false => node.repl_offset,
        };
        let health = if failing(cluster, node) {
            "fail"
        } else if replica && offset == 0 {
            "loading"
        } else {
            "online"
        };
        Reply::Map(vec![
            (Reply::bulk_str("id"), Reply::bulk(&node.id)),
            (Reply::bulk_str("port"), Reply::Int(i64::from(node.port))),
            (Reply::bulk_str("ip"), Reply::bulk(&node.ip)),
            (Reply::bulk_str("endpoint"), Reply::bulk(&node.ip)),
            (
                Reply::bulk_str("role"),
                Reply::bulk_str(if replica { "replica" } else { "master" }),
            ),
            (
                Reply::bulk_str("replication-offset"),
                Reply::Int(i64::try_from(offset).unwrap_or(i64::MAX)),
            ),
            (Reply::bulk_str("health"), Reply::bulk_str(health)),
        ])
    };
    Reply::Array(
        map.nodes
            .iter()
            .filter(|node| map.primary_of(&node.id).is_none())
            .map(|node| {
                let slots = map
                    .ranges_of(&node.id)
                    .into_iter()
                    .flat_map(|(a, b)| [Reply::Int(i64::from(a)), Reply::Int(i64::from(b))])
                    .collect();
                let mut members = vec![details(node, false)];
                members.extend(
                    map.replicas_of(&node.id)
                        .into_iter()
                        .map(|r| details(r, true)),
                );
                Reply::Map(vec![
                    (Reply::bulk_str("slots"), Reply::Array(slots)),
                    (Reply::bulk_str("nodes"), Reply::Array(members)),
                ])
            })
            .collect(),
    )
}

/// The lines of INFO's `# Cluster` section.
pub fn info_lines(ctx: &Ctx, line: &mut dyn FnMut(&str, String)) {
    let Some(cluster) = ctx.shared.cluster.as_deref() else {
        line("cluster_enabled", "0".into());
        return;
    };
    let map = cluster.map();
    line("cluster_enabled", "1".into());
    line("cluster_current_epoch", map.epoch.to_string());
    let mine: usize = map
        .ranges_of(&cluster.me.id)
        .iter()
        .map(|(a, b)| usize::from(b - a) + 1)
        .sum();
    line("cluster_my_slots", mine.to_string());
    line(
        "cluster_moved_redirections",
        cluster.stats.moved.load(Ordering::Relaxed).to_string(),
    );
    for (name, counter) in [
        ("cluster_slots_taken_over", &cluster.stats.slots_taken_over),
        ("cluster_failovers_performed", &cluster.stats.failovers),
        (
            "cluster_takeover_summaries_warmed",
            &cluster.stats.takeover_rows_warmed,
        ),
        (
            "cluster_takeover_stale_keys_dropped",
            &cluster.stats.takeover_stale_keys_dropped,
        ),
        ("cluster_migrations_done", &cluster.stats.migrations_done),
        (
            "cluster_migrations_failed",
            &cluster.stats.migrations_failed,
        ),
        (
            "cluster_slots_migrated_out",
            &cluster.stats.slots_migrated_out,
        ),
        (
            "cluster_keys_migrated_out",
            &cluster.stats.keys_migrated_out,
        ),
    ] {
        line(name, counter.load(Ordering::Relaxed).to_string());
    }
    for (name, counter) in [
        (
            "cluster_migration_pause_last_ms",
            &cluster.stats.migration_pause_last_us,
        ),
        (
            "cluster_migration_pause_max_ms",
            &cluster.stats.migration_pause_max_us,
        ),
    ] {
        let us = counter.load(Ordering::Relaxed);
        line(name, format!("{}.{:03}", us / 1000, us % 1000));
    }
    line(
        "cluster_epochs_followed",
        cluster
            .stats
            .epochs_followed
            .load(Ordering::Relaxed)
            .to_string(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(c: char, port: u16, primary: Option<char>, age: u64) -> NodeInfo {
        NodeInfo {
            id: c.to_string().repeat(40),
            ip: "127.0.0.2".into(),
            port,
            heartbeat_age_ms: age,
            primary: primary.map(|p| p.to_string().repeat(40)),
            repl_offset: 0,
        }
    }

    #[test]
    fn nodes_lines_show_replicas_as_redis() {
        let (a, b, c) = (
            node('a', 7001, None, 0),
            node('b', 7002, Some('a'), 100),
            node('c', 7003, Some('a'), 9000),
        );
        let map = SlotMap::new(
            4,
            vec![a.clone(), b.clone(), c.clone()],
            &[(0, 99, a.id.clone()), (200, 200, a.id.clone())],
        );
        let now = 1_000_000;
        assert_eq!(
            node_line(&map, &a, &a.id, 2000, now),
            format!(
                "{} 127.0.0.2:7001@0 myself,master - 0 0 4 connected 0-99 200\n",
                a.id
            )
        );
        assert_eq!(
            node_line(&map, &b, &a.id, 2000, now),
            format!(
                "{} 127.0.0.2:7002@0 slave {} 0 999900 4 connected\n",
                b.id, a.id
            )
        );
        assert_eq!(
            node_line(&map, &b, &b.id, 2000, now),
            format!(
                "{} 127.0.0.2:7002@0 myself,slave {} 0 0 4 connected\n",
                b.id, a.id
            )
        );
        assert_eq!(
            node_line(&map, &c, &a.id, 2000, now),
            format!(
                "{} 127.0.0.2:7003@0 slave,fail? {} 0 991000 4 disconnected\n",
                c.id, a.id
            )
        );
    }
}
