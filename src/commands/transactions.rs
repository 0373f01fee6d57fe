//! MULTI/EXEC/DISCARD/WATCH/UNWATCH. EXEC takes the script engine, then each shard its queue
//! reaches, held to its end (two-phase locking: `store::held`), so it is atomic against every
//! other client; WATCH compares entry versions taken at WATCH time.

use super::databases::{HeldLocks, Watched};
use super::{CmdResult, Ctx};
use crate::protocol::Reply;
use crate::store::eviction::OOM;
use bytes::Bytes;
use std::sync::atomic::Ordering;

pub fn multi(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if ctx.conn.multi.is_some() {
        return Err(Reply::error("ERR MULTI calls can not be nested"));
    }
    ctx.conn.multi = Some(Vec::new());
    ctx.conn.multi_failed = false;
    Ok(Reply::OK)
}

/// Queues a checked command inside MULTI (dispatch already validated name, arity and auth).
pub fn queue(ctx: &mut Ctx, args: &[&[u8]]) -> Reply {
    if let Some(queue) = ctx.conn.multi.as_mut() {
        queue.push(args.iter().map(|a| Bytes::copy_from_slice(a)).collect());
        super::client::count_queued(&ctx.conn.info, args);
    }
    Reply::Status("QUEUED".into())
}

pub fn discard(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    if ctx.conn.multi.take().is_none() {
        return Err(Reply::error("ERR DISCARD without MULTI"));
    }
    ctx.conn.multi_failed = false;
    ctx.conn.watched.clear();
    Ok(Reply::OK)
}

pub fn exec(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    let Some(queue) = ctx.conn.multi.take() else {
        return Err(Reply::error("ERR EXEC without MULTI"));
    };
    let watched = std::mem::take(&mut ctx.conn.watched);
    if std::mem::take(&mut ctx.conn.multi_failed) {
        return Err(Reply::error(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    let shared = ctx.shared;
    let grows = |command: &Vec<Bytes>| {
        shared
            .commands
            .lookup(&command[0])
            .is_some_and(|cmd| cmd.has(super::table::DENYOOM))
    };
    if shared.store.memory.is_limited() && queue.iter().any(grows) && !shared.store.make_room() {
        return Err(Reply::Error(
            format!("EXECABORT Transaction discarded because of: {OOM}").into(),
        ));
    }
    let dbs = super::databases::touched_by_exec(ctx, &queue, &watched);
    // Holding the engine, EXEC may take shards as it reaches them (`store::held`): only those
    // its commands touch, not the 256 of each database.
    let engine = shared.scripting.engine_for_exec();
    let mut all = HeldLocks::for_exec(&shared.store, &shared.replication.feed, &dbs, engine);
    if all.any_changed(&watched) {
        return Ok(Reply::NilArray);
    }
    let mut replies = Vec::with_capacity(queue.len());
    for command in &queue {
        let args: Vec<&[u8]> = command.iter().map(|a| &a[..]).collect();
        let reply = match shared.commands.lookup(args[0]) {
            Some(cmd) => {
                let mut inner = Ctx {
                    shared,
                    conn: &mut *ctx.conn,
                    held: Some(&mut all),
                };
                // The ACL check again, as Redis: the user's rules may have changed since queuing.
                match exec_acl_check(&mut inner, cmd, &args) {
                    Some(refused) => refused,
                    None => super::run(&mut inner, cmd, &args),
                }
            }
            None => Reply::error("ERR unknown command"),
        };
        replies.push(reply);
    }
    Ok(Reply::Array(replies))
}

/// EXEC's second ACL check of a queued command: Redis's NOPERM for rules changed after queuing.
fn exec_acl_check(
    ctx: &mut Ctx,
    cmd: &'static super::table::Command,
    args: &[&[u8]],
) -> Option<Reply> {
    let effective = cmd.resolve(args).ok()?;
    let error = super::acl_check(ctx, effective, args, "multi").err()?;
    let reason = if error.contains(" to run the ") {
        "no permission to execute the command or subcommand"
    } else if error.contains("access a key") {
        "no permission to touch the specified keys"
    } else {
        "no permission to access one of the channels used as arguments"
    };
    Some(Reply::Error(
        format!(
            "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}"
        )
        .into(),
    ))
}

pub fn watch(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    if ctx.conn.multi.is_some() {
        return Err(Reply::error("ERR WATCH inside MULTI is not allowed"));
    }
    let keys = &args[1..];
    let db = ctx.conn.db;
    let mut locked = ctx.shared.store.lock(db, keys);
    let swaps = locked.keyspace().swaps.load(Ordering::Relaxed);
    for key in keys {
        let version = locked.version(key);
        ctx.conn.watched.push(Watched {
            db,
            key: Bytes::copy_from_slice(key),
            version,
            swaps,
        });
    }
    Ok(Reply::OK)
}

pub fn unwatch(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.conn.watched.clear();
    Ok(Reply::OK)
}
