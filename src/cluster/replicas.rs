//! Cluster replicas: a node may follow a primary (`stmd_cluster_nodes.primary_id`). It owns no
//! slots; it replicates its primary with the REPLICAOF machinery ([`crate::replication`]), and
//! serves reads of its primary's slots to READONLY connections ([`super::Cluster::serves_for`]).
//! When its primary dies, the failover transaction gives the primary's slots to the live replica
//! with the largest replication offset ([`plan_failover`]), which stops following and keeps its
//! keys; the dead primary and its other replicas become replicas of the promoted node.
//!
//! The relation lives only in the configuration: every node reads its own role from the map it
//! follows and [`apply_role`] makes the replication link match it.

use super::coordinator::Owners;
use super::Host;
use super::{Cluster, NodeInfo, SlotMap};

/// Role changes written with a configuration: `(node, Some(primary))` makes the node a replica
/// of `primary`, `(node, None)` a primary.
pub type Roles = Vec<(String, Option<String>)>;

/// A node as the failover transaction sees it.
#[derive(Clone, Debug)]
pub struct Member {
    pub id: String,
    pub primary: Option<String>,
    /// Heartbeat within the node timeout, by the database's clock.
    pub live: bool,
    /// Replication offset of its last heartbeat.
    pub offset: u64,
}

/// What a failover changes.
#[derive(Debug, Default)]
pub struct Plan {
    /// The dead nodes that owned slots.
    pub dead: Vec<String>,
    /// How many slots each node received.
    pub given: Vec<(String, usize)>,
    /// (dead primary, its promoted replica).
    pub promoted: Vec<(String, String)>,
    pub roles: Roles,
}

/// The nodes of `map` as the failover sees them: live when their heartbeat (by the database's
/// clock) is within `timeout_ms`.
pub fn members(map: &SlotMap, timeout_ms: u64) -> Vec<Member> {
    map.nodes
        .iter()
        .map(|n| Member {
            id: n.id.clone(),
            primary: n.primary.clone(),
            live: n.heartbeat_age_ms <= timeout_ms,
            offset: n.repl_offset,
        })
        .collect()
}

/// The replica to promote in place of the dead primary `dead`: its live replica with the largest
/// replication offset (the most of the primary's writes), the smallest id on a tie.
pub fn choose_replica<'m>(dead: &str, members: &'m [Member]) -> Option<&'m Member> {
    members
        .iter()
        .filter(|m| m.live && m.primary.as_deref() == Some(dead))
        .max_by(|a, b| a.offset.cmp(&b.offset).then_with(|| b.id.cmp(&a.id)))
}

/// Failover's new owners and roles. Each dead node owning slots with a live replica gives them all
/// to that replica ([`choose_replica`]), which becomes a primary; the dead node and its other
/// replicas become replicas of it (the dead node, when it comes back, syncs from it in full, as in
/// Redis). The slots of dead nodes without a live replica are spread over the live primaries as
/// before replicas ([`super::take_over`]): their plain keys are lost. Nothing changes (an empty
/// `given`) when no dead node owns slots.
pub fn plan_failover(members: &[Member], owners: &mut Owners) -> Plan {
    let mut plan = Plan::default();
    for member in members.iter().filter(|m| !m.live) {
        if owners
            .iter()
            .any(|o| o.as_deref() == Some(member.id.as_str()))
        {
            plan.dead.push(member.id.clone());
        }
    }
    if plan.dead.is_empty() {
        return plan;
    }
    let mut spread = Vec::new();
    for dead in &plan.dead {
        let Some(heir) = choose_replica(dead, members) else {
            spread.push(dead.clone());
            continue;
        };
        let mut count = 0;
        for owner in owners.iter_mut() {
            if owner.as_deref() == Some(dead.as_str()) {
                *owner = Some(heir.id.clone());
                count += 1;
            }
        }
        plan.given.push((heir.id.clone(), count));
        plan.promoted.push((dead.clone(), heir.id.clone()));
        plan.roles.push((heir.id.clone(), None));
        plan.roles.push((dead.clone(), Some(heir.id.clone())));
        for sibling in members
            .iter()
            .filter(|m| m.primary.as_deref() == Some(dead.as_str()) && m.id != heir.id)
        {
            plan.roles.push((sibling.id.clone(), Some(heir.id.clone())));
        }
    }
    if !spread.is_empty() {
        let role_of = |m: &Member| {
            plan.roles
                .iter()
                .rev()
                .find(|(id, _)| *id == m.id)
                .map_or(m.primary.clone(), |(_, primary)| primary.clone())
        };
        let live_primaries: Vec<String> = members
            .iter()
            .filter(|m| m.live && role_of(m).is_none())
            .map(|m| m.id.clone())
            .collect();
        plan.given
            .extend(super::take_over(owners, &spread, &live_primaries));
    }
    plan
}

/// Writes `roles` inside the configuration transaction `tx`.
pub async fn write_roles(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    roles: &Roles,
) -> Result<(), sqlx::Error> {
    for (node, primary) in roles {
        sqlx::query("UPDATE stmd_cluster_nodes SET primary_id = $2 WHERE node_id = $1")
            .bind(node)
            .bind(primary)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// `stmd cluster replicate <node> --of <primary>`'s checks: the role change, or why not.
pub fn replicate(
    map: &SlotMap,
    node: &NodeInfo,
    primary: &NodeInfo,
) -> Result<(String, Option<String>), String> {
    if node.id == primary.id {
        return Err(format!("node {} cannot replicate itself", node.id));
    }
    let owned: usize = map
        .ranges_of(&node.id)
        .iter()
        .map(|(a, b)| usize::from(b - a) + 1)
        .sum();
    if owned > 0 {
        return Err(format!(
            "node {} owns {owned} slots: a replica owns none; move them to other nodes first (stmd cluster move-slots)",
            node.id
        ));
    }
    let followers = map.replicas_of(&node.id).len();
    if followers > 0 {
        return Err(format!(
            "node {} is the primary of {followers} replicas: give them another primary (or remove them) first",
            node.id
        ));
    }
    if let Some(above) = primary.primary.as_deref() {
        return Err(format!(
            "node {} is itself a replica (of {above}): name a primary",
            primary.id
        ));
    }
    Ok((node.id.clone(), Some(primary.id.clone())))
}

/// `create --replicas n`: the first `len / (n + 1)` nodes are primaries (they get the slots), the
/// others replicas of them, round-robin, as `redis-cli --cluster create --cluster-replicas n`.
pub fn split(count: usize, replicas: usize) -> Result<(usize, Vec<(usize, usize)>), String> {
    let primaries = count / (replicas + 1);
    if primaries == 0 {
        return Err(format!(
            "{count} nodes cannot have {replicas} replicas per primary: that takes at least {} nodes",
            replicas + 1
        ));
    }
    let pairs = (primaries..count)
        .enumerate()
        .map(|(i, node)| (node, i % primaries))
        .collect();
    Ok((primaries, pairs))
}

/// Whether `new` makes `me`, a replica in `old`, a primary (a failover promoted it).
pub fn promoted(old: &SlotMap, new: &SlotMap, me: &str) -> bool {
    old.primary_of(me).is_some() && new.primary_of(me).is_none()
}

/// This node's replication offset for its heartbeat (INFO's `master_repl_offset`).
pub fn offset(host: &impl Host) -> u64 {
    crate::replication::repl_offset(host)
}

/// Makes this node's replication match its role in `map`: a replica follows its primary's
/// address (a full sync, then the stream; a new primary is followed anew) and sends no scope rows;
/// a primary stops following (keeping its keys, as REPLICAOF NO ONE) and writes its rows.
pub fn apply_role(cluster: &Cluster, host: &impl Host, map: &SlotMap) {
    let replica = &host.replication().replica;
    match map.primary_of(&cluster.me.id) {
        Some(primary) => {
            host.scope_rows().mute(true);
            let current = replica
                .target()
                .is_some_and(|t| t.host == primary.ip && t.port == primary.port);
            if !current {
                tracing::warn!(primary = %primary.id, addr = %primary.addr(), "cluster: this node is a replica; following its primary");
                crate::replication::replica::follow(host, primary.ip.clone(), primary.port, false);
            }
        }
        None => {
            if replica.following() {
                tracing::warn!(
                    "cluster: this node is a primary now; no longer following (its keys are kept)"
                );
                crate::replication::replica::stop_following(host);
            }
            host.scope_rows().mute(false);
        }
    }
}

/// CLUSTER FAILOVER's modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Manual {
    /// The primary pauses its clients' writes, this replica catches up with its offset, then the
    /// map swaps their roles: nothing acknowledged is lost.
    Coordinated,
    /// The map swaps the roles at once (what the replica had not received is lost).
    Force,
    /// As FORCE: there is no vote to skip, the map in Postgres is the authority.
    Takeover,
}

/// CLUSTER FAILOVER's request to the configuration follower, which runs it in a task of its own
/// (it needs Postgres, and heartbeats must go on meanwhile).
#[derive(Default)]
pub struct ManualRequest {
    mode: parking_lot::Mutex<Option<Manual>>,
    pub wake: tokio::sync::Notify,
    /// A manual failover is running.
    pub running: std::sync::atomic::AtomicBool,
}

impl ManualRequest {
    pub fn request(&self, mode: Manual) {
        *self.mode.lock() = Some(mode);
        self.wake.notify_one();
    }

    pub fn take(&self) -> Option<Manual> {
        self.mode.lock().take()
    }
}

/// Starts the manual failover CLUSTER FAILOVER asked for, unless one is running.
pub fn start_manual(
    cluster: &std::sync::Arc<Cluster>,
    coordinator: &super::coordinator::Coordinator,
    host: &std::sync::Arc<impl Host>,
) {
    let Some(mode) = cluster.manual.take() else {
        return;
    };
    if !cluster
        .manual
        .running
        .swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        tokio::spawn(manual_failover(
            cluster.clone(),
            coordinator.clone(),
            host.clone(),
            mode,
        ));
    }
}

/// How long a coordinated failover waits for this replica to reach its primary's offset (Redis's
/// manual failover timeout), and how long the primary's writes stay paused at most.
const CATCH_UP: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs a manual failover of this replica (CLUSTER FAILOVER). Coordinated: pauses the primary's
/// client writes (`CLIENT PAUSE … WRITE` over a node-to-node connection), reads its offset
/// (`ROLE`), waits until this node has applied as much, then swaps the roles in one configuration
/// transaction, waits (at most 2 s) for the old primary to follow it and lets its writes go (they
/// are redirected here by then). FORCE and TAKEOVER swap at once. Failures are logged (the command
/// answered `+OK` when it started, as Redis's does).
pub async fn manual_failover(
    cluster: std::sync::Arc<Cluster>,
    coordinator: super::coordinator::Coordinator,
    host: std::sync::Arc<impl Host>,
    mode: Manual,
) {
    use std::sync::atomic::Ordering::Relaxed;
    let map = cluster.map();
    let Some(primary) = map.primary_of(&cluster.me.id).cloned() else {
        cluster.manual.running.store(false, Relaxed);
        return;
    };
    let password = host.config().read().requirepass.clone();
    let mut paused = None;
    if mode == Manual::Coordinated {
        match catch_up(&*host, &primary, &password).await {
            Ok(link) => paused = Some(link),
            Err(why) => {
                tracing::warn!(primary = %primary.id, %why, "manual failover aborted");
                cluster.manual.running.store(false, Relaxed);
                return;
            }
        }
    }
    let me = cluster.me.id.clone();
    let swapped = coordinator
        .change_roles(|nodes, owners, roles| {
            let map = SlotMap::from_owners(nodes.to_vec(), owners);
            if map.primary_of(&me).map(|p| &p.id) != Some(&primary.id) {
                return Err(
                    "this node is no longer a replica of the primary it caught up with".into(),
                );
            }
            for owner in owners.iter_mut() {
                if owner.as_deref() == Some(primary.id.as_str()) {
                    *owner = Some(me.clone());
                }
            }
            roles.push((me.clone(), None));
            for node in map.replicas_of(&primary.id) {
                if node.id != me {
                    roles.push((node.id.clone(), Some(me.clone())));
                }
            }
            roles.push((primary.id.clone(), Some(me.clone())));
            Ok(String::new())
        })
        .await;
    match &swapped {
        Ok((old, new, _)) => tracing::warn!(
            old_primary = %primary.id, ?mode, epoch_before = old, epoch = new,
            "manual failover: this replica is the primary of the shard now"
        ),
        Err(why) => tracing::warn!(primary = %primary.id, %why, "manual failover failed"),
    }
    if let Some(mut link) = paused {
        if let Ok((_, new, _)) = swapped {
            // The old primary's paused writes must meet the new map (and be redirected here),
            // not run there: wait for it to follow the new epoch before letting them go.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
            while std::time::Instant::now() < deadline {
                match request(&mut link, &[b"CLUSTER", b"INFO"]).await {
                    Ok(text) if epoch_of(&text) >= Some(new) => break,
                    Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
                    Err(_) => break,
                }
            }
        }
        let _ = request(&mut link, &[b"CLIENT", b"UNPAUSE"]).await;
    }
    cluster.manual.running.store(false, Relaxed);
}

/// The coordinated part: the primary's writes paused, this node caught up with its offset. The
/// link is returned to unpause it.
async fn catch_up(
    host: &impl Host,
    primary: &NodeInfo,
    password: &str,
) -> Result<super::peers::Link, String> {
    let bounded =
        |what: &'static str| move |_| format!("the primary did not answer {what} in time");
    let mut link = tokio::time::timeout(
        CATCH_UP,
        super::peers::Link::connect(primary.addr(), password),
    )
    .await
    .map_err(bounded("the connection"))?
    .map_err(|e| format!("cannot reach the primary: {e}"))?;
    let pause_ms = (CATCH_UP.as_millis() + 2000).to_string();
    tokio::time::timeout(
        CATCH_UP,
        request(
            &mut link,
            &[b"CLIENT", b"PAUSE", pause_ms.as_bytes(), b"WRITE"],
        ),
    )
    .await
    .map_err(bounded("CLIENT PAUSE"))??;
    let role = tokio::time::timeout(CATCH_UP, request(&mut link, &[b"INFO", b"replication"]))
        .await
        .map_err(bounded("INFO"))??;
    let target: u64 = role
        .lines()
        .find_map(|l| l.trim().strip_prefix("master_repl_offset:"))
        .and_then(|v| v.parse().ok())
        .ok_or("the primary's INFO has no master_repl_offset")?;
    let started = std::time::Instant::now();
    while host.replication().offset() < target {
        if started.elapsed() > CATCH_UP {
            let _ = request(&mut link, &[b"CLIENT", b"UNPAUSE"]).await;
            return Err(format!(
                "this replica did not reach the primary's offset {target} within {} ms (at {})",
                CATCH_UP.as_millis(),
                host.replication().offset()
            ));
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    Ok(link)
}

/// One request on a node-to-node link: its reply as text, or the error.
async fn request(link: &mut super::peers::Link, args: &[&[u8]]) -> Result<String, String> {
    let mut bytes = Vec::new();
    super::peers::encode(&mut bytes, args);
    link.send(&bytes).await.map_err(|e| e.to_string())?;
    use redis_protocol::resp2::types::OwnedFrame;
    match link.reply().await.map_err(|e| e.to_string())? {
        OwnedFrame::Error(e) => Err(e.to_string()),
        OwnedFrame::SimpleString(s) | OwnedFrame::BulkString(s) => {
            Ok(String::from_utf8_lossy(&s).into_owned())
        }
        _ => Ok(String::new()),
    }
}

/// `cluster_current_epoch` of a CLUSTER INFO text.
fn epoch_of(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("cluster_current_epoch:"))
        .and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::SLOTS;

    fn member(id: char, primary: Option<char>, live: bool, offset: u64) -> Member {
        Member {
            id: id.to_string().repeat(40),
            primary: primary.map(|p| p.to_string().repeat(40)),
            live,
            offset,
        }
    }

    fn id(c: char) -> String {
        c.to_string().repeat(40)
    }

    #[test]
    fn the_live_replica_with_the_largest_offset_is_chosen() {
        let members = [
            member('a', None, false, 900),
            member('b', Some('a'), true, 500),
            member('c', Some('a'), true, 700),
            member('d', Some('a'), false, 800),
            member('e', Some('x'), true, 999),
        ];
        assert_eq!(
            choose_replica(&id('a'), &members).map(|m| m.id.clone()),
            Some(id('c'))
        );
        // A tie goes to the smaller id.
        let tie = [
            member('c', Some('a'), true, 5),
            member('b', Some('a'), true, 5),
        ];
        assert_eq!(
            choose_replica(&id('a'), &tie).map(|m| m.id.clone()),
            Some(id('b'))
        );
        assert!(choose_replica(&id('x'), &[member('e', Some('x'), false, 1)]).is_none());
    }

    #[test]
    fn a_failover_promotes_a_replica_or_spreads_the_slots() {
        // a (slots 0-99, replicas c live and d dead), b (100-199, no replica), e a live primary.
        let members = [
            member('a', None, false, 10),
            member('b', None, false, 10),
            member('c', Some('a'), true, 9),
            member('d', Some('a'), false, 10),
            member('e', None, true, 0),
        ];
        let mut owners: Owners = vec![None; SLOTS];
        owners[..100].fill(Some(id('a')));
        owners[100..200].fill(Some(id('b')));
        let plan = plan_failover(&members, &mut owners);
        assert_eq!(plan.dead, [id('a'), id('b')]);
        assert_eq!(plan.promoted, [(id('a'), id('c'))]);
        assert_eq!(plan.given, [(id('c'), 100), (id('c'), 50), (id('e'), 50)]);
        assert!(owners[..100]
            .iter()
            .all(|o| o.as_deref() == Some(id('c').as_str())));
        assert_eq!(
            plan.roles,
            [
                (id('c'), None),
                (id('a'), Some(id('c'))),
                (id('d'), Some(id('c'))),
            ]
        );
        // Nothing left on a dead node: nothing to do.
        assert!(plan_failover(&members, &mut owners).given.is_empty());
    }

    #[test]
    fn create_splits_primaries_and_replicas_round_robin() {
        assert_eq!(split(6, 1), Ok((3, vec![(3, 0), (4, 1), (5, 2)])));
        assert_eq!(split(4, 1), Ok((2, vec![(2, 0), (3, 1)])));
        assert_eq!(split(5, 1), Ok((2, vec![(2, 0), (3, 1), (4, 0)])));
        assert_eq!(split(3, 0), Ok((3, vec![])));
        assert!(split(1, 1).is_err());
    }

    #[test]
    fn replicate_refuses_slot_owners_primaries_with_replicas_and_replicas_as_primary() {
        let node = |c: char, primary: Option<char>| NodeInfo {
            id: id(c),
            ip: "127.0.0.2".into(),
            port: 7000,
            heartbeat_age_ms: 0,
            primary: primary.map(id),
            repl_offset: 0,
        };
        let nodes = vec![
            node('a', None),
            node('b', None),
            node('c', Some('a')),
            node('d', None),
        ];
        let map = SlotMap::new(1, nodes.clone(), &[(0, 16383, id('a'))]);
        assert_eq!(
            replicate(&map, &nodes[1], &nodes[0]),
            Ok((id('b'), Some(id('a'))))
        );
        assert!(
            replicate(&map, &nodes[0], &nodes[1]).is_err_and(|e| e.contains("owns 16384 slots"))
        );
        assert!(
            replicate(&map, &nodes[1], &nodes[2]).is_err_and(|e| e.contains("itself a replica"))
        );
        assert!(replicate(&map, &nodes[1], &nodes[1]).is_err());
        let map = SlotMap::new(1, nodes.clone(), &[]);
        assert!(replicate(&map, &nodes[0], &nodes[3]).is_err_and(|e| e.contains("primary of 1")));
        assert!(promoted(
            &map,
            &SlotMap::new(2, vec![node('a', None), node('c', None)], &[]),
            &id('c')
        ));
    }
}
