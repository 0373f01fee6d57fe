//! The one cluster check dispatch makes (as Redis's `getNodeByQuery`): the slots of a request's
//! keys, found by the command table's key specs, must be one slot, and this node must own it.
//! EXEC checks every queued command together, so a transaction stays within one slot. Commands
//! without keys run on any node.
//!
//! STM commands need nothing special here: their key specs name the CHANNEL argument (or the KEY),
//! and in cluster mode the channel is the hash tag of every key they touch
//! ([`crate::stm::ScopeKey::key`]), so the argument hashes to the keys' slot. That is also what
//! COMMAND GETKEYS answers, so cluster clients route STM commands by themselves.

use super::{key_slot, Cluster, CROSSSLOT};
use crate::commands::keyspec;
use crate::commands::table::Command;
use crate::commands::Ctx;

/// Ok when this node serves the request; otherwise Redis's error text (MOVED, CROSSSLOT,
/// CLUSTERDOWN).
pub fn check(
    ctx: &Ctx<'_, '_>,
    cluster: &Cluster,
    cmd: &'static Command,
    effective: &'static Command,
    args: &[&[u8]],
) -> Result<(), String> {
    let mut slot = None;
    if cmd.name == "exec" {
        // EXEC outside MULTI only answers its own error.
        let Some(queue) = ctx.conn.multi.as_ref() else {
            return Ok(());
        };
        for queued in queue {
            let queued: Vec<&[u8]> = queued.iter().map(|a| &a[..]).collect();
            let Some(cmd) = ctx.shared.commands.lookup(queued[0]) else {
                continue;
            };
            merge(&mut slot, slot_of(cmd.effective(&queued), &queued)?)?;
        }
    } else {
        slot = slot_of(effective, args)?;
    }
    match slot {
        Some(slot) => cluster.serves(slot),
        None => Ok(()),
    }
}

/// The one slot of a request's keys; None when it has none (or its arguments do not parse: the
/// handler answers that error).
pub fn slot_of(cmd: &Command, args: &[&[u8]]) -> Result<Option<u16>, String> {
    if cmd.keys.is_empty() {
        return Ok(None);
    }
    let mut slot = None;
    for (at, _) in keyspec::keys_with_flags(cmd, args).unwrap_or_default() {
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
    use crate::commands::table::lookup;

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
    }
}
