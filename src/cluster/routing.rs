//! The one cluster check dispatch makes (as Redis's `getNodeByQuery`): the slots of a request's
//! keys, found by the command table's key specs, must be one slot, and this node must own it.
//! EXEC checks every queued command together, so a transaction stays within one slot. Commands
//! without keys run on any node. A command on a slot a migration has paused waits
//! ([`super::migrate::SlotGate`]).
//!
//! On a replica, the primary's stream is applied whatever the slot, and a READONLY connection's
//! reads (commands without the `write` flag; EXEC without a queued write) of the primary's slots
//! are served here (Redis's rule); everything else is redirected to the owner.
//!
//! STM commands need nothing special here: their key specs name the CHANNEL argument (or the KEY),
//! and in cluster mode the channel is the hash tag of every key they touch
//! ([`crate::stm::ScopeKey::key`]), so the argument hashes to the keys' slot. That is also what
//! COMMAND GETKEYS answers, so cluster clients route STM commands by themselves.

use super::migrate::Inside;
use super::{key_slot, Cluster, CROSSSLOT};
use crate::spec::command::{Command, CommandNames, ASKING, WRITE};
use crate::spec::keyspec;
use bytes::Bytes;

/// A request as the cluster check sees it: its rows, its arguments and the few facts of its
/// connection that decide where it may run (dispatch gathers them).
pub struct Request<'r> {
    pub cmd: &'static Command,
    /// The subcommand's row for a container, else `cmd`.
    pub effective: &'static Command,
    pub args: &'r [&'r [u8]],
    /// The commands queued since MULTI (None outside MULTI), found under `names`.
    pub queued: Option<&'r [Vec<Bytes>]>,
    pub names: &'r CommandNames,
    /// ASKING came just before this request.
    pub asking: bool,
    /// The link to this node's primary sent it: applied whatever the slot.
    pub from_primary: bool,
    /// It runs inside EXEC or a script, admitted with them (no slot gate of its own).
    pub in_exec: bool,
    /// A READONLY connection, and not an EXEC with a queued write.
    pub readonly_without_writes: bool,
}

/// What dispatch does with a request in cluster mode.
pub enum Admission<'c> {
    /// Run it, inside the slot gate when it has a slot (held until it has run).
    Run(Option<Inside<'c>>),
    /// Its slot is paused by a migration: wait for the pause to end, then dispatch it again.
    Wait,
    /// Redis's error text (MOVED, CROSSSLOT, CLUSTERDOWN).
    Refuse(String),
}

/// Whether this node serves the request now. The gate is entered before the owner is checked,
/// so a migration either waits for this command or this command sees its pause (and, after
/// it, the new owner). Commands inside EXEC or a script were admitted with their EXEC or script.
/// After ASKING, RESTORE and DEL may touch a slot this node does not own: that is how a
/// migration's source copies keys here before the slot's ownership flips. RESTORE-ASKING (the
/// `asking` flag) may always, as RESTORE after ASKING.
pub fn admit<'c>(cluster: &'c Cluster, request: Request<'_>) -> Admission<'c> {
    let effective = request.effective;
    if request.from_primary {
        return Admission::Run(None);
    }
    let slot = match check(&request) {
        Ok(Some(slot)) => slot,
        Ok(None) => return Admission::Run(None),
        Err(error) => return Admission::Refuse(error),
    };
    if effective.has(ASKING) || request.asking && matches!(effective.name, "restore" | "del") {
        return Admission::Run(None);
    }
    let inside = match request.in_exec {
        true => None,
        false => match cluster.gate.enter(slot) {
            Some(inside) => Some(inside),
            None => return Admission::Wait,
        },
    };
    let replica_read = request.readonly_without_writes && !effective.has(WRITE);
    match cluster.serves_for(slot, replica_read) {
        Ok(()) => Admission::Run(inside),
        Err(error) => Admission::Refuse(error),
    }
}

/// The one slot of a request's keys (EXEC: of every queued command), or CROSSSLOT.
fn check(request: &Request<'_>) -> Result<Option<u16>, String> {
    let mut slot = None;
    if request.cmd.name == "exec" {
        // EXEC outside MULTI only answers its own error.
        let Some(queue) = request.queued else {
            return Ok(None);
        };
        for queued in queue {
            let queued: Vec<&[u8]> = queued.iter().map(|a| &a[..]).collect();
            let Some(cmd) = request.names.lookup(queued[0]) else {
                continue;
            };
            merge(&mut slot, slot_of(cmd.effective(&queued), &queued)?)?;
        }
    } else {
        slot = slot_of(request.effective, request.args)?;
    }
    Ok(slot)
}

/// The one slot of a request's keys; None when it has none (or its arguments do not parse: the
/// handler answers that error).
pub fn slot_of(cmd: &Command, args: &[&[u8]]) -> Result<Option<u16>, String> {
    if cmd.keys.is_empty() {
        return Ok(None);
    }
    let mut slot = None;
    for (at, _) in keyspec::keys_for_routing(cmd, args).unwrap_or_default() {
        if let Some(key) = args.get(at) {
            merge(&mut slot, Some(key_slot(key)))?;
        }
    }
    Ok(slot)
}

fn merge(slot: &mut Option<u16>, next: Option<u16>) -> Result<(), String> {
    match (*slot, next) {
        (Some(a), Some(b)) if a != b => Err(CROSSSLOT.to_string()),
        (None, Some(b)) => {
            *slot = Some(b);
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::lookup;

    fn slot(request: &str) -> Result<Option<u16>, String> {
        let args: Vec<&[u8]> = request.split(' ').map(str::as_bytes).collect();
        let cmd = lookup(args[0]).expect("known command");
        slot_of(cmd.effective(&args), &args)
    }

    #[test]
    fn requests_map_to_one_slot_or_crossslot() {
        assert_eq!(slot("get foo"), Ok(Some(12182)));
        assert_eq!(slot("mset {u}a 1 {u}b 2"), Ok(Some(key_slot(b"u"))));
        assert_eq!(slot("mset a 1 b 2"), Err(CROSSSLOT.to_string()));
        assert_eq!(slot("ping"), Ok(None));
        assert_eq!(slot("eval x 0"), Ok(None));
        assert_eq!(slot("eval x 2 a b"), Err(CROSSSLOT.to_string()));
        // STM: the CHANNEL argument routes, and it hashes like every key of the channel.
        assert_eq!(
            slot("stm.summary USER u1 CHANNEL c1 SERVER s1 TEXT hi"),
            Ok(Some(key_slot(b"shortterm:user:u1:{c1}")))
        );
        assert_eq!(slot("stm.forget CHANNEL c1"), Ok(Some(key_slot(b"c1"))));
        assert_eq!(slot("stm.recent USER u1"), Ok(None));
        // Shard channels belong to their slot, though their specs say `not_key`.
        assert_eq!(slot("spublish foo hi"), Ok(Some(12182)));
        assert_eq!(slot("ssubscribe {u}a {u}b"), Ok(Some(key_slot(b"u"))));
        assert_eq!(slot("ssubscribe a b"), Err(CROSSSLOT.to_string()));
        assert_eq!(slot("publish foo hi"), Ok(None));
    }
}
