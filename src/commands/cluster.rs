//! CLUSTER (SHARDS, SLOTS, NODES, INFO, MYID, MYSHARDID, KEYSLOT, COUNTKEYSINSLOT,
//! GETKEYSINSLOT, HELP), READONLY, READWRITE and ASKING, with Redis 7's reply shapes. In
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
    } else if is(sub, "MYID") || is(sub, "MYSHARDID") {
        // Every node is a primary of its own shard (no replicas yet): the shard id is the node id.
        Ok(Reply::bulk(&cluster.me.id))
    } else if is(sub, "INFO") {
        Ok(Reply::Verbatim(info(cluster, &map)))
    } else if is(sub, "NODES") {
        Ok(Reply::Verbatim(nodes(cluster, &map)))
    } else if is(sub, "SLOTS") {
        Ok(slots(&map))
    } else if is(sub, "SHARDS") {
        Ok(shards(cluster, &map))
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
/// - `STM.FORGET USER <user>`: deletes this node's entries of the user, answers the count;
/// - `PUBLISH <channel> <message>`: delivers to this node's subscribers, answers their count.
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
    } else if is(op, "STM.FORGET") && request.len() == 3 && is(request[1], "USER") {
        super::stm::forget_local(ctx, request)
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
        "SHARDS",
        "    Return information about slot range mappings and the nodes associated with them.",
        "SLOTS",
        "    Return information about slots range mappings. Each range is made of:",
        "    start, end, master and replicas IP addresses, ports and ids",
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

/// CLUSTER NODES: one line per node, in the format `redis-cli --cluster check` parses. There is
/// no cluster bus, so the bus port is 0 and the link is "connected" while the heartbeats come.
fn nodes(cluster: &Cluster, map: &SlotMap) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let mut out = String::new();
    for node in &map.nodes {
        let me = node.id == cluster.me.id;
        let down = failing(cluster, node);
        let flags = match (me, down) {
            (true, _) => "myself,master",
            (false, true) => "master,fail?",
            (false, false) => "master",
        };
        let pong = if me {
            0
        } else {
            now.saturating_sub(node.heartbeat_age_ms)
        };
        out.push_str(&format!(
            "{} {}:{}@0 {flags} - 0 {pong} {} {}",
            node.id,
            node.ip,
            node.port,
            map.epoch,
            if down { "disconnected" } else { "connected" }
        ));
        for (a, b) in map.ranges_of(&node.id) {
            if a == b {
                out.push_str(&format!(" {a}"));
            } else {
                out.push_str(&format!(" {a}-{b}"));
            }
        }
        out.push('\n');
    }
    out
}

fn slots(map: &SlotMap) -> Reply {
    Reply::Array(
        map.assigned_ranges()
            .into_iter()
            .map(|(first, last, node)| {
                Reply::Array(vec![
                    Reply::Int(i64::from(first)),
                    Reply::Int(i64::from(last)),
                    Reply::Array(vec![
                        Reply::bulk(&node.ip),
                        Reply::Int(i64::from(node.port)),
                        Reply::bulk(&node.id),
                        Reply::Map(Vec::new()),
                    ]),
                ])
            })
            .collect(),
    )
}

fn shards(cluster: &Cluster, map: &SlotMap) -> Reply {
    Reply::Array(
        map.nodes
            .iter()
            .map(|node| {
                let slots = map
                    .ranges_of(&node.id)
                    .into_iter()
                    .flat_map(|(a, b)| [Reply::Int(i64::from(a)), Reply::Int(i64::from(b))])
                    .collect();
                let health = if failing(cluster, node) {
                    "fail"
                } else {
                    "online"
                };
                let details = Reply::Map(vec![
                    (Reply::bulk_str("id"), Reply::bulk(&node.id)),
                    (Reply::bulk_str("port"), Reply::Int(i64::from(node.port))),
                    (Reply::bulk_str("ip"), Reply::bulk(&node.ip)),
                    (Reply::bulk_str("endpoint"), Reply::bulk(&node.ip)),
                    (Reply::bulk_str("role"), Reply::bulk_str("master")),
                    (Reply::bulk_str("replication-offset"), Reply::Int(0)),
                    (Reply::bulk_str("health"), Reply::bulk_str(health)),
                ]);
                Reply::Map(vec![
                    (Reply::bulk_str("slots"), Reply::Array(slots)),
                    (Reply::bulk_str("nodes"), Reply::Array(vec![details])),
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
