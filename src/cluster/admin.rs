//! `stmd cluster …`: the admin command line. Each subcommand is one transaction on the
//! configuration in Postgres ([`super::coordinator::Coordinator::change`]); the nodes follow it by
//! themselves. Each prints what it did, or exits non-zero with the reason.

use super::coordinator::Coordinator;
use super::{even_ranges, parse_slot_ranges, NodeInfo, SlotMap, SLOTS};
use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Administers a cluster of stmd nodes whose configuration lives in Postgres.
#[derive(Parser, Debug)]
#[command(name = "stmd cluster", bin_name = "stmd cluster")]
pub struct ClusterCli {
    /// The coordinating Postgres (the nodes' --database-url).
    #[arg(long, env = "STMD_DATABASE_URL", hide_env_values = true, global = true)]
    database_url: Option<String>,
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand, Debug)]
enum Action {
    /// Spreads the 16384 slots evenly over the named nodes, or over every registered node.
    Create {
        /// Nodes as ip:port (or node ids), comma-separated; they must have registered (started
        /// with --cluster-enabled yes).
        #[arg(long, value_delimiter = ',')]
        nodes: Vec<String>,
        /// Replicas per primary: the first nodes (count / (replicas + 1)) get the slots, the
        /// others follow them round-robin.
        #[arg(long, default_value_t = 0)]
        replicas: usize,
    },
    /// Makes a node (owning no slots) a replica of a primary: it follows the primary's data and
    /// takes over its slots, with the keys, when the primary fails.
    Replicate {
        /// The node to make a replica: a node id, a unique prefix of one, or ip:port.
        node: String,
        /// Its primary.
        #[arg(long)]
        of: String,
    },
    /// Prints the configuration: epoch, nodes, their heartbeats and slots.
    Status,
    /// Gives slots to a node with their keys: each current owner streams the keys to it and
    /// flips the slots' owner, in short per-batch pauses; waits for the end and prints what moved.
    MoveSlots {
        /// Slots and inclusive ranges, comma-separated: 0-99,200.
        #[arg(long)]
        slots: String,
        /// The new owner: a node id, a unique prefix of one, or ip:port.
        #[arg(long)]
        to: String,
        /// How long to wait for the source nodes to finish, in seconds.
        #[arg(long, default_value_t = 120)]
        timeout: u64,
    },
    /// Removes a node that owns no slots.
    RemoveNode {
        /// A node id, a unique prefix of one, or ip:port.
        node: String,
    },
}

/// Runs `stmd cluster <args>` (`args` after the word `cluster`, program name first).
pub fn main(args: Vec<OsString>) -> ExitCode {
    let cli = ClusterCli::parse_from(args);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: ClusterCli) -> Result<String, String> {
    let url = cli
        .database_url
        .ok_or("--database-url postgres://… is required (or STMD_DATABASE_URL)")?;
    let coordinator = Coordinator::connect(&url).await?;
    let out = match cli.action {
        Action::Create { nodes, replicas } => create(&coordinator, &nodes, replicas).await,
        Action::Replicate { node, of } => replicate(&coordinator, &node, &of).await,
        Action::Status => coordinator
            .load()
            .await
            .map(|map| status(&map))
            .map_err(|e| format!("Postgres: {e}")),
        Action::MoveSlots { slots, to, timeout } => {
            move_slots(&coordinator, &slots, &to, Duration::from_secs(timeout)).await
        }
        Action::RemoveNode { node } => remove_node(&coordinator, &node).await,
    };
    coordinator.close().await;
    out
}

/// The node a name means: a full id, a unique id prefix, or `ip:port`.
fn resolve<'a>(nodes: &'a [NodeInfo], name: &str) -> Result<&'a NodeInfo, String> {
    let matches: Vec<&NodeInfo> = if name.contains(':') {
        nodes.iter().filter(|n| n.addr() == name).collect()
    } else {
        let lower = name.to_ascii_lowercase();
        match nodes.iter().find(|n| n.id == lower) {
            Some(exact) => vec![exact],
            None if lower.len() >= 4 => nodes.iter().filter(|n| n.id.starts_with(&lower)).collect(),
            None => Vec::new(),
        }
    };
    match matches.as_slice() {
        [one] => Ok(*one),
        [] => Err(format!(
            "no registered node '{name}' (start it with --cluster-enabled yes, then see `stmd cluster status`)"
        )),
        _ => Err(format!(
            "'{name}' names {} registered nodes; use a full node id (or remove the stale one)",
            matches.len()
        )),
    }
}

fn slot_count(ranges: &[(u16, u16)]) -> usize {
    ranges.iter().map(|(a, b)| usize::from(b - a) + 1).sum()
}

pub(super) fn render_ranges(ranges: &[(u16, u16)]) -> String {
    if ranges.is_empty() {
        return "-".into();
    }
    ranges
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

async fn create(
    coordinator: &Coordinator,
    named: &[String],
    replicas: usize,
) -> Result<String, String> {
    let (old, new, said) = coordinator
        .change_roles(|nodes, owners, roles| {
            if let Some(taken) = owners.iter().position(Option::is_some) {
                return Err(format!(
                    "the cluster already has a configuration (slot {taken} is assigned); use move-slots"
                ));
            }
            let chosen: Vec<&NodeInfo> = if named.is_empty() {
                nodes.iter().filter(|n| n.primary.is_none() || replicas > 0).collect()
            } else {
                named
                    .iter()
                    .map(|name| resolve(nodes, name.trim()))
                    .collect::<Result<_, _>>()?
            };
            if chosen.is_empty() {
                return Err(
                    "no registered nodes: start the nodes with --cluster-enabled yes first".into(),
                );
            }
            let mut ids: Vec<&str> = chosen.iter().map(|n| n.id.as_str()).collect();
            ids.sort_unstable();
            ids.dedup();
            if ids.len() != chosen.len() {
                return Err("a node is named twice".into());
            }
            let (primaries, pairs) = super::replicas::split(chosen.len(), replicas)?;
            let (chosen, followers) = chosen.split_at(primaries);
            if let Some(replica) = chosen.iter().find(|n| n.primary.is_some()) {
                return Err(format!(
                    "node {} is a replica: it cannot own slots (name it after the primaries with --replicas, or make it a primary again)",
                    replica.id
                ));
            }
            let mut lines = Vec::new();
            for (node, (first, last)) in chosen.iter().zip(even_ranges(chosen.len())) {
                for owner in &mut owners[first as usize..=last as usize] {
                    *owner = Some(node.id.clone());
                }
                lines.push(format!(
                    "  {} {} slots {first}-{last} ({})",
                    node.id,
                    node.addr(),
                    usize::from(last - first) + 1
                ));
            }
            for node in chosen {
                if node.primary.is_some() {
                    roles.push((node.id.clone(), None));
                }
            }
            for (replica, primary) in pairs {
                let (replica, primary) = (followers[replica - primaries], chosen[primary]);
                roles.push((replica.id.clone(), Some(primary.id.clone())));
                lines.push(format!(
                    "  {} {} replica of {}",
                    replica.id,
                    replica.addr(),
                    primary.id
                ));
            }
            Ok(lines.join("\n"))
        })
        .await?;
    Ok(format!(
        "created the cluster: epoch {old} -> {new}, {SLOTS} slots over the nodes:\n{said}"
    ))
}

/// `move-slots`: one migration request per current owner of the slots (carried out by that
/// node, see [`super::migrate`]); unassigned slots are given at once (they hold no keys).
async fn move_slots(
    coordinator: &Coordinator,
    slots: &str,
    to: &str,
    timeout: Duration,
) -> Result<String, String> {
    let ranges = parse_slot_ranges(slots)?;
    let map = coordinator
        .load()
        .await
        .map_err(|e| format!("Postgres: {e}"))?;
    let target = resolve(&map.nodes, to)?.clone();
    if let Some(primary) = &target.primary {
        return Err(format!(
            "node {} is a replica (of {primary}): replicas own no slots; make it a primary first",
            target.id
        ));
    }
    let mut by_source: Vec<(String, Vec<u16>)> = Vec::new();
    let mut unassigned = Vec::new();
    let mut already = 0usize;
    for &(first, last) in &ranges {
        for slot in first..=last {
            match map.owner(slot) {
                Some(owner) if owner.id == target.id => already += 1,
                Some(owner) => match by_source.iter_mut().find(|(id, _)| *id == owner.id) {
                    Some((_, list)) => list.push(slot),
                    None => by_source.push((owner.id.clone(), vec![slot])),
                },
                None => unassigned.push(slot),
            }
        }
    }
    let mut lines = Vec::new();
    if already > 0 {
        lines.push(format!("{already} slots already belong to {}", target.id));
    }
    if !unassigned.is_empty() {
        let (old, new, said) = coordinator
            .change(|_, owners| {
                let mut given = 0usize;
                for &slot in &unassigned {
                    let owner = &mut owners[usize::from(slot)];
                    if owner.is_none() {
                        *owner = Some(target.id.clone());
                        given += 1;
                    }
                }
                Ok(format!(
                    "{given} unassigned slots (no keys) now belong to {} {}",
                    target.id,
                    target.addr()
                ))
            })
            .await?;
        lines.push(format!("{said}; epoch {old} -> {new}"));
    }
    let mut requests = Vec::new();
    for (source, mut list) in by_source {
        list.sort_unstable();
        list.dedup();
        let text = render_ranges(&to_ranges(&list));
        let id = coordinator
            .request_migration(&source, &target.id, &text)
            .await?;
        requests.push((id, source));
    }
    let deadline = Instant::now() + timeout;
    let mut failed = false;
    for (id, source) in requests {
        let (state, result) = loop {
            let (state, result) = coordinator.migration_state(id).await?;
            if state == "done" || state == "failed" {
                break (state, result);
            }
            if Instant::now() > deadline {
                let why = format!(
                    "the source node {source} did not take the request within {} s (is it running?); nothing was moved",
                    timeout.as_secs()
                );
                if coordinator.withdraw_migration(id, &why).await? {
                    break ("failed".to_string(), why);
                }
                break (
                    "failed".to_string(),
                    format!("still running on the source node {source} after {} s; see `stmd cluster status` and its log", timeout.as_secs()),
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        failed |= state != "done";
        lines.push(format!("from {source}: {result}"));
    }
    if lines.is_empty() {
        lines.push("nothing to move".into());
    }
    match failed {
        false => Ok(lines.join("\n")),
        true => Err(lines.join("\n")),
    }
}

/// Ascending slots as inclusive ranges.
pub(super) fn to_ranges(slots: &[u16]) -> Vec<(u16, u16)> {
    let mut out: Vec<(u16, u16)> = Vec::new();
    for &slot in slots {
        match out.last_mut() {
            Some((_, last)) if *last + 1 == slot => *last = slot,
            _ => out.push((slot, slot)),
        }
    }
    out
}

async fn remove_node(coordinator: &Coordinator, name: &str) -> Result<String, String> {
    let map = coordinator
        .load()
        .await
        .map_err(|e| format!("Postgres: {e}"))?;
    let node = resolve(&map.nodes, name)?.clone();
    let (old, new) = remove_checked(coordinator, &map, &node).await?;
    Ok(format!(
        "removed node {} {}; epoch {old} -> {new}",
        node.id,
        node.addr()
    ))
}

/// Removes `node` from the configuration (`remove-node`, CLUSTER FORGET): refused while it is the
/// primary of replicas, or (in the transaction) while it owns slots. Returns (old, new) epoch.
pub(super) async fn remove_checked(
    coordinator: &Coordinator,
    map: &SlotMap,
    node: &NodeInfo,
) -> Result<(u64, u64), String> {
    let followers = map.replicas_of(&node.id).len();
    if followers > 0 {
        return Err(format!(
            "node {} is the primary of {followers} replicas: give them another primary (stmd cluster replicate) or remove them first",
            node.id
        ));
    }
    coordinator.remove_node(&node.id).await
}

/// `replicate <node> --of <primary>`: one configuration transaction (the epoch bumped, the nodes
/// notified); the node starts following at its next read of the configuration.
async fn replicate(coordinator: &Coordinator, name: &str, of: &str) -> Result<String, String> {
    let (old, new, said) = coordinator
        .change_roles(|nodes, owners, roles| {
            let map = SlotMap::from_owners(nodes.to_vec(), owners);
            let node = resolve(nodes, name)?;
            let primary = resolve(nodes, of)?;
            roles.push(super::replicas::replicate(&map, node, primary)?);
            Ok(format!(
                "node {} {} is now a replica of {} {}",
                node.id,
                node.addr(),
                primary.id,
                primary.addr()
            ))
        })
        .await?;
    Ok(format!("{said}; epoch {old} -> {new}"))
}

/// `stmd cluster status`: the configuration as a table people read.
pub fn status(map: &SlotMap) -> String {
    let assigned = map.assigned();
    let mut out = vec![format!(
        "epoch {}, {assigned}/{SLOTS} slots assigned ({}), {} nodes",
        map.epoch,
        if assigned == SLOTS {
            "ok"
        } else {
            "incomplete"
        },
        map.nodes.len()
    )];
    for node in &map.nodes {
        let ranges = map.ranges_of(&node.id);
        let role = match &node.primary {
            Some(primary) => format!("replica of {primary}, offset {}", node.repl_offset),
            None => format!("{} slots: {}", slot_count(&ranges), render_ranges(&ranges)),
        };
        out.push(format!(
            "  {} {} heartbeat {:.1}s ago, {role}",
            node.id,
            node.addr(),
            node.heartbeat_age_ms as f64 / 1000.0,
        ));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_named_by_id_prefix_or_address() {
        let nodes = vec![
            NodeInfo {
                id: "ab".repeat(20),
                ip: "127.0.0.2".into(),
                port: 7501,
                heartbeat_age_ms: 0,
                primary: None,
                repl_offset: 0,
            },
            NodeInfo {
                id: "cd".repeat(20),
                ip: "127.0.0.3".into(),
                port: 7501,
                heartbeat_age_ms: 0,
                primary: None,
                repl_offset: 0,
            },
        ];
        assert_eq!(resolve(&nodes, "127.0.0.3:7501").map(|n| n.port), Ok(7501));
        assert_eq!(
            resolve(&nodes, "abab").map(|n| n.ip.as_str()),
            Ok("127.0.0.2")
        );
        assert!(resolve(&nodes, "ab").is_err(), "too short a prefix");
        assert!(resolve(&nodes, "127.0.0.4:1").is_err());
        assert_eq!(render_ranges(&[(0, 99), (200, 200)]), "0-99,200");
        assert_eq!(to_ranges(&[0, 1, 2, 5, 7, 8]), [(0, 2), (5, 5), (7, 8)]);
    }
}
