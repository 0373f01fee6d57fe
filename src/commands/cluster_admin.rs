//! CLUSTER's administration subcommands: ADDSLOTS, ADDSLOTSRANGE, DELSLOTS, DELSLOTSRANGE,
//! FLUSHSLOTS, SETSLOT, MEET, FORGET, REPLICATE, RESET, SAVECONFIG, BUMPEPOCH, SET-CONFIG-EPOCH,
//! COUNT-FAILURE-REPORTS and LINKS, with Redis's argument checks and error texts.
//!
//! stmd has no cluster bus: the configuration is the one in Postgres, and these subcommands
//! change it through the same transaction as `stmd cluster …` ([`crate::cluster::manage`]), so
//! their effect is the cluster's, not only the asked node's view (ADDSLOTS on node A gives the
//! slots to A on every node). A slot never leaves a node that holds keys in it through these
//! subcommands: they refuse, and point to `stmd cluster move-slots`, which moves slots with their
//! keys.

use super::args::{int, is};
use super::{CmdResult, Ctx};
use crate::cluster::{key_slot, manage, Cluster, SlotMap, DISABLED, SLOTS};
use crate::protocol::Reply;
use std::sync::Arc;

/// The cluster of a cluster-mode node, or Redis's "cluster support disabled".
fn configured(ctx: &Ctx) -> Result<Arc<Cluster>, Reply> {
    ctx.shared
        .cluster
        .clone()
        .ok_or_else(|| Reply::error(DISABLED))
}

fn error(text: String) -> Reply {
    Reply::error(text)
}

/// A slot argument as Redis's `getSlotOrReply` reads it.
fn slot_arg(arg: &[u8]) -> Result<u16, Reply> {
    std::str::from_utf8(arg)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .and_then(|n| u16::try_from(n).ok())
        .filter(|&n| usize::from(n) < SLOTS)
        .ok_or_else(|| Reply::error("ERR Invalid or out of range slot"))
}

/// ADDSLOTSRANGE/DELSLOTSRANGE's `start end` pairs as slots, after Redis's checks.
fn range_args(args: &[&[u8]]) -> Result<Vec<u16>, Reply> {
    if args.len() % 2 == 1 {
        return Err(error(format!(
            "ERR wrong number of arguments for 'cluster|{}' command",
            String::from_utf8_lossy(args[1]).to_lowercase()
        )));
    }
    let mut ranges = Vec::new();
    for pair in args[2..].chunks(2) {
        let (start, end) = (slot_arg(pair[0])?, slot_arg(pair[1])?);
        if start > end {
            return Err(error(format!(
                "ERR start slot number {start} is greater than end slot number {end}"
            )));
        }
        ranges.push((start, end));
    }
    Ok(ranges.into_iter().flat_map(|(a, b)| a..=b).collect())
}

/// Redis's `checkSlotAssignmentsOrReply`: each slot free (adding) or assigned (deleting) in the
/// map, and named once.
fn check_assignments(map: &SlotMap, slots: &[u16], adding: bool) -> Result<(), Reply> {
    let mut seen = vec![false; SLOTS];
    for &slot in slots {
        let owned = map.owner(slot).is_some();
        if adding && owned {
            return Err(error(format!("ERR Slot {slot} is already busy")));
        }
        if !adding && !owned {
            return Err(error(format!("ERR Slot {slot} is already unassigned")));
        }
        if std::mem::replace(&mut seen[usize::from(slot)], true) {
            return Err(error(format!("ERR Slot {slot} specified multiple times")));
        }
    }
    Ok(())
}

pub fn addslots(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cluster = &configured(ctx)?;
    let slots = args[2..]
        .iter()
        .map(|a| slot_arg(a))
        .collect::<Result<Vec<_>, _>>()?;
    add(cluster, &slots)
}

pub fn addslotsrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cluster = &configured(ctx)?;
    let slots = range_args(args)?;
    add(cluster, &slots)
}

pub fn delslots(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cluster = &configured(ctx)?;
    let slots = args[2..]
        .iter()
        .map(|a| slot_arg(a))
        .collect::<Result<Vec<_>, _>>()?;
    delete(ctx, cluster, &slots)
}

pub fn delslotsrange(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cluster = &configured(ctx)?;
    let slots = range_args(args)?;
    delete(ctx, cluster, &slots)
}

/// ADDSLOTS: the free slots become this node's (they hold no keys anywhere).
fn add(cluster: &Arc<Cluster>, slots: &[u16]) -> CmdResult {
    let map = cluster.map();
    check_assignments(&map, slots, true)?;
    if let Some(primary) = map.primary_of(&cluster.me.id) {
        return Err(error(format!(
            "ERR this node is a replica (of {}): a replica owns no slots; make it a primary first (CLUSTER RESET)",
            primary.id
        )));
    }
    manage::change_slots(cluster, &map, slots, Some(&cluster.me.id), Vec::new()).map_err(error)?;
    Ok(Reply::OK)
}

/// DELSLOTS: the slots become unassigned, for the whole cluster; refused for a slot whose owner
/// holds keys in it.
fn delete(ctx: &mut Ctx, cluster: &Arc<Cluster>, slots: &[u16]) -> CmdResult {
    let map = cluster.map();
    check_assignments(&map, slots, false)?;
    if let Some((slot, owner)) = slot_with_keys(ctx, cluster, &map, slots, None)? {
        return Err(error(format!(
            "ERR Slot {slot} still holds keys on node {owner}: deleting it would lose them; move the slot with its keys (stmd cluster move-slots) first"
        )));
    }
    manage::change_slots(cluster, &map, slots, None, Vec::new()).map_err(error)?;
    Ok(Reply::OK)
}

/// FLUSHSLOTS: this node gives up all its slots; as Redis, only with an empty database.
pub fn flushslots(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let cluster = &configured(ctx)?;
    if ctx.shared.store.db_len(0) > 0 {
        return Err(Reply::error(
            "ERR DB must be empty to perform CLUSTER FLUSHSLOTS.",
        ));
    }
    let map = cluster.map();
    let mine = my_slots(&map, &cluster.me.id);
    manage::change_slots(cluster, &map, &mine, None, Vec::new()).map_err(error)?;
    Ok(Reply::OK)
}

fn my_slots(map: &SlotMap, me: &str) -> Vec<u16> {
    map.ranges_of(me)
        .into_iter()
        .flat_map(|(a, b)| a..=b)
        .collect()
}

/// SETSLOT <slot> NODE <node-id> | STABLE. IMPORTING and MIGRATING are not stmd's way of moving
/// a slot: `stmd cluster move-slots` moves it with its keys.
pub fn setslot(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cluster = &configured(ctx)?;
    let slot = slot_arg(args[2])?;
    let action = args[3];
    if is(action, "STABLE") && args.len() == 4 {
        // No slot is ever left importing or migrating: a move is stmd's own batches.
        return Ok(Reply::OK);
    }
    if (is(action, "IMPORTING") || is(action, "MIGRATING")) && args.len() == 5 {
        return Err(Reply::error(
            "ERR stmd does not move slots by SETSLOT IMPORTING/MIGRATING: `stmd cluster move-slots` moves a slot with its keys",
        ));
    }
    if !(is(action, "NODE") && args.len() == 5) {
        return Err(Reply::error(
            "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP",
        ));
    }
    let id = String::from_utf8_lossy(args[4]).into_owned();
    let map = cluster.map();
    let Some(target) = map.node(&id) else {
        return Err(error(format!("ERR Unknown node {id}")));
    };
    if map.primary_of(&target.id).is_some() {
        return Err(Reply::error("ERR Target node is not a master"));
    }
    if map.owner(slot).is_some_and(|owner| owner.id == target.id) {
        return Ok(Reply::OK);
    }
    if let Some((slot, owner)) = slot_with_keys(ctx, cluster, &map, &[slot], Some(&target.id))? {
        return Err(error(match owner == cluster.me.id {
            true => format!("ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot. (stmd cluster move-slots moves it with its keys)"),
            false => format!("ERR Can't assign hashslot {slot} to a different node while node {owner} still holds keys for this hash slot. (stmd cluster move-slots moves it with its keys)"),
        }));
    }
    let target = target.id.clone();
    manage::change_slots(cluster, &map, &[slot], Some(&target), Vec::new()).map_err(error)?;
    Ok(Reply::OK)
}

/// The lowest of `slots` whose owner in `map` (other than `to`) holds keys in it, with that
/// owner: this node scans its keyspace, the other owners are asked (`CLUSTER PEER … SLOTKEYS`).
/// An owner that cannot be asked refuses the change (its keys might be lost).
fn slot_with_keys(
    ctx: &Ctx,
    cluster: &Arc<Cluster>,
    map: &SlotMap,
    slots: &[u16],
    to: Option<&str>,
) -> Result<Option<(u16, String)>, Reply> {
    let mut by_owner: Vec<(String, String, Vec<bool>)> = Vec::new();
    for &slot in slots {
        let Some(owner) = map.owner(slot).filter(|o| Some(o.id.as_str()) != to) else {
            continue;
        };
        let index = match by_owner.iter().position(|(id, _, _)| *id == owner.id) {
            Some(index) => index,
            None => {
                by_owner.push((owner.id.clone(), owner.addr(), vec![false; SLOTS]));
                by_owner.len() - 1
            }
        };
        by_owner[index].2[usize::from(slot)] = true;
    }
    let mut found: Option<(u16, String)> = None;
    for (id, addr, wanted) in by_owner {
        let lowest = if id == cluster.me.id {
            lowest_slot_with_keys(ctx, &wanted)
        } else {
            let password = ctx.shared.config.read().requirepass.clone();
            let ranges = manage::render_flags(&wanted);
            let request: [&[u8]; 2] = [b"SLOTKEYS", ranges.as_bytes()];
            let answers = crate::cluster::peers::ask_these(
                cluster,
                &password,
                vec![(id.clone(), addr)],
                &request,
            )
            .map_err(|e| {
                error(format!(
                    "{e} (cannot tell whether its slots hold keys: nothing was changed)"
                ))
            })?;
            match answers.first() {
                Some(redis_protocol::resp2::types::OwnedFrame::Integer(n)) => {
                    u16::try_from(*n).ok()
                }
                _ => {
                    return Err(error(format!(
                        "ERR node {id} gave no answer about its keys: nothing was changed"
                    )))
                }
            }
        };
        if let Some(slot) = lowest {
            if found.as_ref().is_none_or(|(s, _)| slot < *s) {
                found = Some((slot, id));
            }
        }
    }
    Ok(found)
}

/// The lowest slot flagged in `wanted` in which this node holds a live key (database 0, the only
/// one in cluster mode): one pass over the keyspace, one shard locked at a time.
pub fn lowest_slot_with_keys(ctx: &Ctx, wanted: &[bool]) -> Option<u16> {
    let store = &ctx.shared.store;
    store.existing(0)?;
    let now = crate::store::now_ms();
    let mut lowest: Option<u16> = None;
    for shard in 0..store.shard_count() {
        let locked = store.lock_shard(0, shard);
        locked.for_each(|key, entry| {
            let slot = key_slot(key);
            if wanted.get(usize::from(slot)).copied().unwrap_or(false)
                && !entry.is_expired(now)
                && lowest.is_none_or(|l| slot < l)
            {
                lowest = Some(slot);
            }
        });
    }
    lowest
}

/// MEET <ip> <port> [<bus-port>]: stmd nodes join by registering in Postgres when they start, so
/// MEET only checks the address (Redis's errors) and that a node there is registered.
pub fn meet(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cluster = &configured(ctx)?;
    if args.len() > 5 {
        return Err(Reply::error(
            "ERR wrong number of arguments for 'cluster|meet' command",
        ));
    }
    let text = |a: &[u8]| String::from_utf8_lossy(a).into_owned();
    let (ip, port_text) = (text(args[2]), text(args[3]));
    let port = int(args[3])
        .map_err(|_| error(format!("ERR Invalid TCP base port specified: {port_text}")))?;
    if let Some(bus) = args.get(4) {
        int(bus)
            .map_err(|_| error(format!("ERR Invalid TCP bus port specified: {}", text(bus))))?;
    }
    let address = ip.parse::<std::net::IpAddr>().ok();
    let (Some(address), Ok(port)) = (address, u16::try_from(port)) else {
        return Err(error(format!(
            "ERR Invalid node address specified: {ip}:{port_text}"
        )));
    };
    if port == 0 {
        return Err(error(format!(
            "ERR Invalid node address specified: {ip}:{port_text}"
        )));
    }
    let map = cluster.map();
    let known = map
        .nodes
        .iter()
        .any(|n| n.port == port && n.ip.parse::<std::net::IpAddr>().ok() == Some(address));
    if !known {
        return Err(error(format!(
            "ERR no stmd node at {ip}:{port} is registered in the cluster configuration: stmd nodes join by starting with --cluster-enabled yes and the cluster's --database-url, not by MEET"
        )));
    }
    Ok(Reply::OK)
}

/// FORGET <node-id>: removes the node from the configuration, as `stmd cluster remove-node`; a
/// node that left it within the last minute answers OK (so `redis-cli --cluster del-node`, which
/// asks every node, succeeds).
pub fn forget(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cluster = &configured(ctx)?;
    let id = String::from_utf8_lossy(args[2]).into_owned();
    let map = cluster.map();
    if map.node(&id).is_none() {
        // Already forgotten for every node (another node's FORGET): OK, as Redis answers a
        // FORGET of a node it forgot within the minute.
        if cluster.recently_forgotten(&id) {
            return Ok(Reply::OK);
        }
        return Err(error(format!("ERR Unknown node {id}")));
    }
    if id == cluster.me.id {
        return Err(Reply::error(
            "ERR I tried hard but I can't forget myself...",
        ));
    }
    if map.primary_of(&cluster.me.id).is_some_and(|p| p.id == id) {
        return Err(Reply::error("ERR Can't forget my master!"));
    }
    manage::forget(cluster, &id).map_err(error)?;
    Ok(Reply::OK)
}

/// REPLICATE <node-id>: this node follows the primary, as `stmd cluster replicate <me> --of`.
pub fn replicate(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cluster = &configured(ctx)?;
    let id = String::from_utf8_lossy(args[2]).into_owned();
    let map = cluster.map();
    let Some(primary) = map.node(&id) else {
        return Err(error(format!("ERR Unknown node {id}")));
    };
    if primary.id == cluster.me.id {
        return Err(Reply::error("ERR Can't replicate myself"));
    }
    if map.primary_of(&primary.id).is_some() {
        return Err(Reply::error(
            "ERR I can only replicate a master, not a replica.",
        ));
    }
    let is_replica = map.primary_of(&cluster.me.id).is_some();
    if !is_replica && (!map.ranges_of(&cluster.me.id).is_empty() || ctx.shared.store.db_len(0) > 0)
    {
        return Err(Reply::error(
            "ERR To set a master the node must be empty and without assigned slots.",
        ));
    }
    let me = cluster.me.id.clone();
    manage::change_roles(cluster, |map| {
        let node = map
            .node(&me)
            .ok_or_else(|| "ERR this node is not registered".to_string())?;
        let primary = map
            .node(&id)
            .ok_or_else(|| format!("ERR Unknown node {id}"))?;
        let role = crate::cluster::replicas::replicate(map, node, primary)
            .map_err(|e| format!("ERR {e}"))?;
        Ok(vec![role])
    })
    .map_err(error)?;
    Ok(Reply::OK)
}

/// RESET [HARD|SOFT]: a primary gives up its slots (only without keys, as Redis), a replica stops
/// following and empties its keyspace (as Redis). Both kinds do the same: stmd keeps its node id
/// (its identity in the configuration) and the configuration's one epoch.
pub fn reset(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cluster = &configured(ctx)?;
    match args.len() {
        2 => {}
        3 if is(args[2], "HARD") || is(args[2], "SOFT") => {}
        3 => return Err(Reply::error(super::err::SYNTAX)),
        _ => {
            return Err(error(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLUSTER HELP.",
                String::from_utf8_lossy(args[1])
            )))
        }
    }
    let map = cluster.map();
    let replica = map.primary_of(&cluster.me.id).is_some();
    if !replica && ctx.shared.store.db_len(0) > 0 {
        return Err(Reply::error(
            "ERR CLUSTER RESET can't be called with master nodes containing keys",
        ));
    }
    let mine = my_slots(&map, &cluster.me.id);
    let roles = match replica {
        true => vec![(cluster.me.id.clone(), None)],
        false => Vec::new(),
    };
    if mine.is_empty() && roles.is_empty() {
        return Ok(Reply::OK);
    }
    manage::change_slots(cluster, &map, &mine, None, roles).map_err(error)?;
    if replica && ctx.shared.store.existing(0).is_some() {
        ctx.lock_all().clear();
    }
    Ok(Reply::OK)
}

/// BUMPEPOCH: stmd's nodes share the configuration's one epoch, always the greatest, so the
/// answer is `STILL <epoch>`, except on a fresh configuration (epoch 0), which is bumped.
pub fn bumpepoch(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let cluster = &configured(ctx)?;
    let map = cluster.map();
    if map.epoch > 0 {
        return Ok(Reply::Status(format!("STILL {}", map.epoch).into()));
    }
    let epoch = manage::change_slots(cluster, &map, &[], None, Vec::new()).map_err(error)?;
    Ok(Reply::Status(format!("BUMPED {epoch}").into()))
}

/// SET-CONFIG-EPOCH <epoch>: Redis's checks, then a refusal: the epoch is the configuration's,
/// bumped by each change, never set by hand.
pub fn set_config_epoch(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cluster = &configured(ctx)?;
    let epoch = int(args[2])?;
    if epoch < 0 {
        return Err(error(format!(
            "ERR Invalid config epoch specified: {epoch}"
        )));
    }
    let map = cluster.map();
    if map.nodes.len() > 1 {
        return Err(Reply::error(
            "ERR The user can assign a config epoch only when the node does not know any other node.",
        ));
    }
    if map.epoch != 0 {
        return Err(Reply::error("ERR Node config epoch is already non-zero"));
    }
    Err(Reply::error(
        "ERR stmd's config epoch is the cluster configuration's, bumped by each change: it cannot be set",
    ))
}

/// COUNT-FAILURE-REPORTS <node-id>: every node reads the same heartbeats (by the database's
/// clock), so a node whose heartbeat is older than the node timeout is seen failing by every
/// other live node; as in Redis, the reports counted are the other primaries' (not this node's
/// own view, not replicas'); 0 for a live node.
pub fn count_failure_reports(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let cluster = &configured(ctx)?;
    let id = String::from_utf8_lossy(args[2]).into_owned();
    let map = cluster.map();
    let Some(node) = map.node(&id) else {
        return Err(error(format!("ERR Unknown node {id}")));
    };
    let timeout = cluster.node_timeout_ms;
    let failing =
        |n: &crate::cluster::NodeInfo| n.id != cluster.me.id && n.heartbeat_age_ms > timeout;
    if !failing(node) {
        return Ok(Reply::Int(0));
    }
    let reporters = map
        .nodes
        .iter()
        .filter(|n| n.id != node.id && n.id != cluster.me.id && n.primary.is_none() && !failing(n))
        .count();
    Ok(Reply::Int(reporters as i64))
}

/// SAVECONFIG: the configuration is in the database, saved by every change.
pub fn saveconfig(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    configured(ctx)?;
    Ok(Reply::OK)
}

/// LINKS: stmd has no cluster bus, so no links.
pub fn links(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    configured(ctx)?;
    Ok(Reply::Array(Vec::new()))
}
