//! What CLUSTER's administration subcommands (ADDSLOTS, DELSLOTS, SETSLOT, FLUSHSLOTS, RESET,
//! REPLICATE, FORGET, BUMPEPOCH; see `crate::commands::cluster_admin`) do to the configuration:
//! each is one [`Coordinator::change_roles`] transaction, as `stmd cluster …` makes, so the change
//! is the cluster's (every node follows it), not only the view of the node that was asked.
//!
//! A command checks its request against the map this node follows (Redis's errors, and the keys a
//! slot would leave behind), then [`change_slots`] makes the change only if the slots it moves
//! still have the owners the checks saw; otherwise it answers that the configuration changed
//! meanwhile. The command answers once this node follows the new epoch, so the client's next
//! CLUSTER SLOTS (here) shows its change.

use super::coordinator::Coordinator;
use super::replicas::Roles;
use super::{Cluster, SlotMap, SLOTS};
use std::future::Future;
use std::time::{Duration, Instant};

/// How long a command waits for this node to follow the configuration it changed (the NOTIFY
/// normally arrives within milliseconds; the follower's poll is the fallback after 1 s).
const FOLLOW_WAIT: Duration = Duration::from_secs(3);

/// Runs `future` to its end for a command handler: on the server's multi-threaded runtime, off
/// the tokio worker (other connections' tasks move to another thread meanwhile).
pub fn block_on<F: Future>(future: F) -> Result<F::Output, String> {
    let handle = match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            handle
        }
        _ => return Err("ERR cluster administration needs the server's runtime".into()),
    };
    Ok(crate::worker::off_worker(|| handle.block_on(future)))
}

/// The coordinator this node joined through.
pub fn coordinator(cluster: &Cluster) -> Result<&Coordinator, String> {
    cluster
        .coordinator
        .get()
        .ok_or_else(|| "ERR this node has not joined the cluster configuration yet".to_string())
}

/// An error of the coordinator as a Redis error line.
fn err(text: String) -> String {
    match text.starts_with("ERR ") {
        true => text,
        false => format!("ERR {text}"),
    }
}

/// Gives `slots` to `to` (None: leaves them unassigned) and applies `roles`, in one
/// configuration transaction, provided each slot's owner is still the one of `planned` (the map
/// the command checked) and `to` is still a registered primary. Waits until this node follows
/// the new configuration; returns its epoch.
pub fn change_slots(
    cluster: &Cluster,
    planned: &SlotMap,
    slots: &[u16],
    to: Option<&str>,
    roles: Roles,
) -> Result<u64, String> {
    let coordinator = coordinator(cluster)?;
    let expected: Vec<Option<String>> = slots
        .iter()
        .map(|&slot| planned.owner(slot).map(|n| n.id.clone()))
        .collect();
    let change = coordinator.change_roles(|nodes, owners, new_roles| {
        if let Some(id) = to {
            match nodes.iter().find(|n| n.id == id) {
                None => return Err(format!("ERR Unknown node {id}")),
                Some(node) if node.primary.is_some() => {
                    return Err("ERR Target node is not a master".into())
                }
                Some(_) => {}
            }
        }
        for (&slot, expected) in slots.iter().zip(&expected) {
            let owner = &mut owners[usize::from(slot)];
            if owner != expected {
                return Err(format!(
                    "ERR the owner of slot {slot} changed meanwhile (the cluster configuration moved on); try again"
                ));
            }
            *owner = to.map(str::to_string);
        }
        new_roles.extend(roles);
        Ok(String::new())
    });
    let (_, new_epoch, _) = block_on(change)?.map_err(err)?;
    wait_followed(cluster, new_epoch)?;
    Ok(new_epoch)
}

/// A change of roles only (REPLICATE): `edit` sees the configuration inside the transaction.
pub fn change_roles(
    cluster: &Cluster,
    edit: impl FnOnce(&SlotMap) -> Result<Roles, String>,
) -> Result<u64, String> {
    let coordinator = coordinator(cluster)?;
    let change = coordinator.change_roles(|nodes, owners, roles| {
        let map = SlotMap::from_owners(nodes.to_vec(), owners);
        roles.extend(edit(&map)?);
        Ok(String::new())
    });
    let (_, new_epoch, _) = block_on(change)?.map_err(err)?;
    wait_followed(cluster, new_epoch)?;
    Ok(new_epoch)
}

/// Removes a node from the configuration as `stmd cluster remove-node` does (refused while it
/// owns slots or has replicas); waits until this node follows.
pub fn forget(cluster: &Cluster, id: &str) -> Result<(), String> {
    let coordinator = coordinator(cluster)?;
    let map = cluster.map();
    let node = map
        .node(id)
        .ok_or_else(|| format!("ERR Unknown node {id}"))?
        .clone();
    match block_on(super::admin::remove_checked(coordinator, &map, &node))? {
        Ok((_, new_epoch)) => wait_followed(cluster, new_epoch),
        // Another node's FORGET removed it after this node's map was read: forgotten, as asked.
        Err(e) if e.starts_with("no registered node") => Ok(()),
        Err(e) => Err(err(e)),
    }
}

/// Waits (bounded) until this node follows configuration `epoch` or a later one; the change is
/// committed either way, so a slow follower only delays the answer.
fn wait_followed(cluster: &Cluster, epoch: u64) -> Result<(), String> {
    let deadline = Instant::now() + FOLLOW_WAIT;
    block_on(async {
        while cluster.map().epoch < epoch && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
}

/// The slots in `slots` (a per-slot flag) as `0-99,200`, the form of `CLUSTER PEER … SLOTKEYS`.
pub fn render_flags(slots: &[bool]) -> String {
    let list: Vec<u16> = (0..SLOTS as u16)
        .filter(|&s| slots.get(usize::from(s)).copied().unwrap_or(false))
        .collect();
    super::admin::render_ranges(&super::admin::to_ranges(&list))
}
