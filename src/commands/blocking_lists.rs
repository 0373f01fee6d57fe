//! BLPOP, BRPOP, BLMOVE and BRPOPLPUSH. A handler cannot await, so when there is nothing to pop it
//! joins the key queues (`crate::store::blocking`) under the shard lock and sets `conn.block`; the
//! connection loop then waits for a wake-up or the timeout and runs the same command again.
//! Inside MULTI/EXEC these commands never block: an empty result is a nil reply at once.

use super::lists::{move_one, pop_one, End};
use super::typed::list;
use super::{BlockRequest, CmdResult, Ctx};
use crate::protocol::Reply;
use crate::store::blocking::WaitGuard;
use bytes::Bytes;
use std::time::{Duration, Instant};

/// A timeout in seconds (float, 0 = forever), with Redis's error texts. `None` means forever.
pub fn parse_timeout(arg: &[u8]) -> Result<Option<Duration>, Reply> {
    // strtold, as Redis's `getLongDoubleFromObject`: beyond long double's range is refused.
    let secs = super::args::parse_long_double(arg)
        .ok_or_else(|| Reply::error("ERR timeout is not a float or out of range"))?;
    let millis = secs * 1000.0;
    // Redis converts to a 64-bit millisecond count: infinities and huge values wrap negative.
    if secs < 0.0 || !millis.is_finite() || millis >= i64::MAX as f64 {
        return Err(Reply::error("ERR timeout is negative"));
    }
    let millis = millis as u64;
    Ok((millis > 0).then(|| Duration::from_millis(millis)))
}

/// Whether a key holds something to pop, from `found` (the command's typed lookup of it). A rerun
/// after a wake-up (`rerun`) does not fail on a key of another type: as Redis 7.2, it keeps waiting
/// unless some other key can serve it, and then answers that key's error (`wrong`, the first one
/// met), as Redis's re-executed command would. A `MULTI; LPUSH l a; DEL l; SET l x; EXEC` so
/// leaves a BLPOP on `l` waiting for the next push.
pub(super) fn holds<T>(
    found: Result<Option<T>, Reply>,
    rerun: bool,
    wrong: &mut Option<Reply>,
) -> Result<bool, Reply> {
    match found {
        Ok(value) => Ok(value.is_some()),
        Err(error) if rerun => {
            wrong.get_or_insert(error);
            Ok(false)
        }
        Err(error) => Err(error),
    }
}

/// Ends a command's wait (if it was waiting) or starts one, after an attempt found nothing.
/// `guard` is the registration made under the lock by this attempt, if it was the first.
fn block_or_nil(ctx: &mut Ctx, timeout: Option<Duration>, guard: Option<WaitGuard>) -> CmdResult {
    if let Some(guard) = guard {
        ctx.conn.wait = Some(guard);
    }
    ctx.conn.block = Some(BlockRequest {
        deadline: timeout.map(|t| Instant::now() + t),
        timeout_reply: Reply::NilArray,
    });
    Ok(Reply::NilArray)
}

/// BLPOP and BRPOP: key [key ...] timeout.
pub fn bpop(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let end = if args[0][1].eq_ignore_ascii_case(&b'l') {
        End::Left
    } else {
        End::Right
    };
    let keys = &args[1..args.len() - 1];
    let timeout = parse_timeout(args[args.len() - 1])?;
    let in_exec = ctx.in_exec();
    let me = ctx.conn.wait.as_ref().map(|g| g.waiter().clone());
    let waiters = ctx.shared.store.db(ctx.conn.db).waiters.clone();
    let guard = {
        let mut locked = ctx.lock(keys);
        let mut wrong = None;
        for key in keys {
            if !holds(list(&mut locked, key), me.is_some(), &mut wrong)? {
                continue;
            }
            if !in_exec && waiters.someone_ahead(key, me.as_deref()) {
                continue; // first come, first served: an earlier client gets this one
            }
            if let Some(error) = wrong {
                ctx.conn.wait = None;
                return Err(error);
            }
            if let Some(value) = pop_one(&mut locked, key, end)? {
                drop(locked);
                ctx.conn.wait = None;
                return Ok(Reply::Array(vec![Reply::bulk(key), Reply::Bulk(value)]));
            }
        }
        if in_exec {
            return Ok(Reply::NilArray);
        }
        // Join the queues before the lock is released, so no push can slip in between.
        me.is_none()
            .then(|| waiters.register(keys.iter().map(|k| Bytes::copy_from_slice(k)).collect()))
    };
    block_or_nil(ctx, timeout, guard)
}

/// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout, and BRPOPLPUSH source destination
/// timeout.
pub fn blmove(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (from, to, timeout_arg) = if args.len() == 4 {
        (End::Right, End::Left, args[3])
    } else {
        (End::parse(args[3])?, End::parse(args[4])?, args[5])
    };
    let timeout = parse_timeout(timeout_arg)?;
    let (src, dst) = (args[1], args[2]);
    let in_exec = ctx.in_exec();
    let me = ctx.conn.wait.as_ref().map(|g| g.waiter().clone());
    let waiters = ctx.shared.store.db(ctx.conn.db).waiters.clone();
    let guard = {
        let mut locked = ctx.lock(&args[1..3]);
        let exists = holds(list(&mut locked, src), me.is_some(), &mut None)?;
        if exists && (in_exec || !waiters.someone_ahead(src, me.as_deref())) {
            if let Some(value) = move_one(&mut locked, src, dst, from, to)? {
                drop(locked);
                ctx.conn.wait = None;
                return Ok(Reply::Bulk(value));
            }
        }
        if in_exec {
            return Ok(Reply::Nil);
        }
        me.is_none()
            .then(|| waiters.register(vec![Bytes::copy_from_slice(src)]))
    };
    block_or_nil(ctx, timeout, guard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_parse_like_redis() {
        assert_eq!(parse_timeout(b"0"), Ok(None));
        assert_eq!(parse_timeout(b"0.5"), Ok(Some(Duration::from_millis(500))));
        assert_eq!(parse_timeout(b"2"), Ok(Some(Duration::from_secs(2))));
        let negative = Err(Reply::error("ERR timeout is negative"));
        assert_eq!(parse_timeout(b"-1"), negative);
        assert_eq!(parse_timeout(b"inf"), negative);
        assert_eq!(parse_timeout(b"1e300"), negative);
        let bad = Err(Reply::error("ERR timeout is not a float or out of range"));
        assert_eq!(parse_timeout(b"abc"), bad);
        assert_eq!(parse_timeout(b"0.01x"), bad);
        assert_eq!(parse_timeout(b"1e5000"), bad);
        assert_eq!(parse_timeout(b"0x1p-99999"), bad);
        assert_eq!(parse_timeout(b"0x"), bad);
        assert_eq!(
            parse_timeout(b"0x1p-1"),
            Ok(Some(Duration::from_millis(500)))
        );
    }
}
