//! ZMPOP, BZMPOP, BZPOPMIN, BZPOPMAX, LMPOP and BLMPOP. The blocking forms use the blocked-client
//! machinery of BLPOP (`crate::store::blocking`): a client that finds nothing joins the key queues under
//! the shard lock and the connection loop runs the command again when woken (by ZADD, LPUSH, a new
//! key…), first come, first served. Inside MULTI/EXEC and scripts they never block: an empty
//! result is a nil reply at once.

use super::args::{int, is};
use super::blocking_lists::{holds, parse_timeout};
use super::lists::{pop_one, End};
use super::typed::{list, remove_if_empty, zset, zset_mut};
use super::{err, BlockRequest, CmdResult, Ctx};
use crate::events::class;
use crate::protocol::Reply;
use crate::store::Locked;
use bytes::Bytes;
use std::time::{Duration, Instant};

/// Serves the first of `keys` that `exists` finds (in key order) with `pop`; otherwise answers
/// `nil` (`blocking` None), or blocks for `blocking`'s timeout (None inside it = forever).
fn serve(
    ctx: &mut Ctx,
    keys: &[&[u8]],
    blocking: Option<Option<Duration>>,
    exists: impl Fn(&mut Locked<'_>, &[u8]) -> Result<bool, Reply>,
    mut pop: impl FnMut(&mut Locked<'_>, &[u8]) -> Result<Reply, Reply>,
) -> CmdResult {
    let in_exec = ctx.in_exec();
    let me = ctx.conn.wait.as_ref().map(|g| g.waiter().clone());
    let waiters = ctx.shared.store.db(ctx.conn.db).waiters.clone();
    let guard = {
        let mut locked = ctx.lock(keys);
        let mut wrong = None;
        for key in keys {
            if !holds(
                exists(&mut locked, key).map(|e| e.then_some(())),
                me.is_some(),
                &mut wrong,
            )? {
                continue;
            }
            if blocking.is_some() && !in_exec && waiters.someone_ahead(key, me.as_deref()) {
                continue; // first come, first served: an earlier client gets this one
            }
            if let Some(error) = wrong {
                ctx.conn.wait = None;
                return Err(error);
            }
            let reply = pop(&mut locked, key)?;
            drop(locked);
            ctx.conn.wait = None;
            return Ok(reply);
        }
        if blocking.is_none() || in_exec {
            return Ok(Reply::NilArray);
        }
        // Join the queues before the lock is released, so no write can slip in between.
        me.is_none()
            .then(|| waiters.register(keys.iter().map(|k| Bytes::copy_from_slice(k)).collect()))
    };
    if let Some(guard) = guard {
        ctx.conn.wait = Some(guard);
    }
    let timeout = blocking.flatten();
    ctx.conn.block = Some(BlockRequest {
        deadline: timeout.map(|t| Instant::now() + t),
        timeout_reply: Reply::NilArray,
    });
    Ok(Reply::NilArray)
}

fn zset_exists(locked: &mut Locked<'_>, key: &[u8]) -> Result<bool, Reply> {
    Ok(zset(locked, key)?.is_some())
}

fn list_exists(locked: &mut Locked<'_>, key: &[u8]) -> Result<bool, Reply> {
    Ok(list(locked, key)?.is_some())
}

/// Pops up to `count` members from one end of the sorted set at `key`, naming the events (the
/// caller's command may pop either end) and deleting the key when it empties.
fn zpop_some(locked: &mut Locked<'_>, key: &[u8], max: bool, count: usize) -> Vec<(Bytes, f64)> {
    let mut popped = Vec::new();
    if let Ok(Some(z)) = zset_mut(locked, key) {
        for _ in 0..count.min(z.len()) {
            popped.extend(if max { z.pop_max() } else { z.pop_min() });
        }
    }
    if !popped.is_empty() {
        locked.notify(class::ZSET, if max { "zpopmax" } else { "zpopmin" }, key);
    }
    remove_if_empty(locked, key);
    if locked.peek(key).is_none() {
        locked.notify(class::GENERIC, "del", key);
    }
    popped
}

/// BZPOPMIN and BZPOPMAX key [key ...] timeout: `[key, member, score]`.
pub fn bzpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let max = is(args[0], "bzpopmax");
    let keys = &args[1..args.len() - 1];
    let timeout = parse_timeout(args[args.len() - 1])?;
    serve(ctx, keys, Some(timeout), zset_exists, |locked, key| {
        let popped = zpop_some(locked, key, max, 1);
        let mut reply = vec![Reply::bulk(key)];
        for (m, s) in popped {
            reply.push(Reply::Bulk(m));
            reply.push(Reply::Double(s));
        }
        Ok(Reply::Array(reply))
    })
}

/// The shared arguments of the MPOP family: `numkeys key [key ...] <where> [COUNT count]` from
/// `at`, with Redis's errors. `where_words` are the two accepted words (first = false).
fn mpop_args<'a>(
    args: &[&'a [u8]],
    at: usize,
    where_words: (&str, &str),
) -> Result<(Vec<&'a [u8]>, bool, usize), Reply> {
    let numkeys = int(args[at])
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| Reply::error("ERR numkeys should be greater than 0"))?;
    let where_at = (at as u64 + 1).saturating_add(numkeys as u64);
    if where_at >= args.len() as u64 {
        return Err(Reply::error(err::SYNTAX));
    }
    let where_at = where_at as usize;
    let second = if is(args[where_at], where_words.0) {
        false
    } else if is(args[where_at], where_words.1) {
        true
    } else {
        return Err(Reply::error(err::SYNTAX));
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < args.len() {
        if count.is_none() && is(args[j], "COUNT") && j + 1 < args.len() {
            let n = int(args[j + 1])
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| Reply::error("ERR count should be greater than 0"))?;
            count = Some(n as usize);
            j += 2;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
    }
    Ok((args[at + 1..where_at].to_vec(), second, count.unwrap_or(1)))
}

fn zmpop_generic(ctx: &mut Ctx, args: &[&[u8]], blocking: bool) -> CmdResult {
    let at = if blocking { 2 } else { 1 };
    let (keys, max, count) = mpop_args(args, at, ("MIN", "MAX"))?;
    let timeout = if blocking {
        Some(parse_timeout(args[1])?)
    } else {
        None
    };
    serve(ctx, &keys, timeout, zset_exists, |locked, key| {
        let popped = zpop_some(locked, key, max, count);
        let pairs = popped
            .into_iter()
            .map(|(m, s)| Reply::Array(vec![Reply::Bulk(m), Reply::Double(s)]))
            .collect();
        Ok(Reply::Array(vec![Reply::bulk(key), Reply::Array(pairs)]))
    })
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count].
pub fn zmpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zmpop_generic(ctx, args, false)
}

/// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count].
pub fn bzmpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    zmpop_generic(ctx, args, true)
}

fn lmpop_generic(ctx: &mut Ctx, args: &[&[u8]], blocking: bool) -> CmdResult {
    let at = if blocking { 2 } else { 1 };
    let (keys, right, count) = mpop_args(args, at, ("LEFT", "RIGHT"))?;
    let timeout = if blocking {
        Some(parse_timeout(args[1])?)
    } else {
        None
    };
    let end = if right { End::Right } else { End::Left };
    serve(ctx, &keys, timeout, list_exists, |locked, key| {
        let mut popped = Vec::new();
        for _ in 0..count {
            match pop_one(locked, key, end)? {
                Some(v) => popped.push(Reply::Bulk(v)),
                None => break,
            }
        }
        locked.notify(class::LIST, if right { "rpop" } else { "lpop" }, key);
        if locked.peek(key).is_none() {
            locked.notify(class::GENERIC, "del", key);
        }
        Ok(Reply::Array(vec![Reply::bulk(key), Reply::Array(popped)]))
    })
}

/// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count].
pub fn lmpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    lmpop_generic(ctx, args, false)
}

/// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count].
pub fn blmpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    lmpop_generic(ctx, args, true)
}
